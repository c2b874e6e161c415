# Code cells of jax-ml/jax docs/notebooks/Common_Gotchas_in_JAX.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=32 tags=[]
import numpy as np
from jax import jit
from jax import lax
from jax import random
import jax
import jax.numpy as jnp

# %% line=54 tags=[]
def impure_print_side_effect(x):
  print("Executing function")  # This is a side-effect
  return x

# The side-effects appear during the first run
print ("First call: ", jit(impure_print_side_effect)(4.))

# Subsequent runs with parameters of same type and shape may not show the side-effect
# This is because JAX now invokes a cached compilation of the function
print ("Second call: ", jit(impure_print_side_effect)(5.))

# JAX re-runs the Python function when the type or shape of the argument changes
print ("Third call, different type: ", jit(impure_print_side_effect)(jnp.array([5.])))

# %% line=73 tags=[]
g = 0.
def impure_uses_globals(x):
  return x + g

# JAX captures the value of the global during the first run
print ("First call: ", jit(impure_uses_globals)(4.))
g = 10.  # Update the global

# Subsequent runs may silently use the cached value of the globals
print ("Second call: ", jit(impure_uses_globals)(5.))

# JAX re-runs the Python function when the type or shape of the argument changes
# This will end up reading the latest value of the global
print ("Third call, different type: ", jit(impure_uses_globals)(jnp.array([4.])))

# %% line=93 tags=[]
g = 0.
def impure_saves_global(x):
  global g
  g = x
  return x

# JAX runs once the transformed function with special Traced values for arguments
print ("First call: ", jit(impure_saves_global)(4.))
print ("Saved global: ", g)  # Saved global has an internal JAX value

# %% line=112 tags=[]
def pure_uses_internal_state(x):
  state = dict(even=0, odd=0)
  for i in range(10):
    state['even' if i % 2 == 0 else 'odd'] += x
  return state['even'] + state['odd']

print(jit(pure_uses_internal_state)(5.))

# %% line=129 tags=[]
import jax.numpy as jnp
from jax import make_jaxpr

# lax.fori_loop
array = jnp.arange(10)
print(lax.fori_loop(0, 10, lambda i,x: x+array[i], 0)) # expected result 45
iterator = iter(range(10))
print(lax.fori_loop(0, 10, lambda i,x: x+next(iterator), 0)) # unexpected result 0

# lax.scan
def func11(arr, extra):
    ones = jnp.ones(arr.shape)
    def body(carry, aelems):
        ae1, ae2 = aelems
        return (carry + ae1 * ae2 + extra, carry)
    return lax.scan(body, 0., (arr, ones))
make_jaxpr(func11)(jnp.arange(16), 5.)
# make_jaxpr(func11)(iter(range(16)), 5.) # throws error

# lax.cond
array_operand = jnp.array([0.])
lax.cond(True, lambda x: x+1, lambda x: x-1, array_operand)
iter_operand = iter(range(10))
# lax.cond(True, lambda x: next(x)+1, lambda x: next(x)-1, iter_operand) # throws error

# %% line=167 tags=[]
numpy_array = np.zeros((3,3), dtype=np.float32)
print("original array:")
print(numpy_array)

# In place, mutating update
numpy_array[1, :] = 1.0
print("updated array:")
print(numpy_array)

# %% line=185 tags=[]
%xmode Minimal

# %% line=193 tags=["raises-exception"]
jax_array = jnp.zeros((3,3), dtype=jnp.float32)

# In place update of JAX's array will yield an error!
jax_array[1, :] = 1.0

# %% line=203 tags=[]
jax_array = jnp.array([10, 20])
jax_array_new = jax_array
jax_array_new += 10
print(jax_array_new)  # `jax_array_new` is rebound to a new value [20, 30], but...
print(jax_array)      # the original value is unmodified as [10, 20] !

numpy_array = np.array([10, 20])
numpy_array_new = numpy_array
numpy_array_new += 10
print(numpy_array_new)  # `numpy_array_new is numpy_array`, and it was updated
print(numpy_array)      # in-place, so both are [20, 30] !

# %% line=242 tags=[]
jax_array = jnp.zeros((3,3), dtype=jnp.float32)
updated_array = jax_array.at[1, :].set(1.0)
print("updated array:\n", updated_array)

# %% line=255 tags=[]
print("original array unchanged:\n", jax_array)

# %% line=274 tags=[]
print("original array:")
jax_array = jnp.ones((5, 6))
print(jax_array)

new_jax_array = jax_array.at[::2, 3:].add(7.)
print("new array post-addition:")
print(new_jax_array)

# %% line=296 tags=[]
import jax.numpy as jnp
from jax import jit

class CustomClass:
  def __init__(self, x: jnp.ndarray, mul: bool):
    self.x = x
    self.mul = mul

  @jit  # <---- How to do this correctly?
  def calc(self, y):
    if self.mul:
      return self.x * y
    return y

# %% line=315 tags=["raises-exception"]
c = CustomClass(2, True)
c.calc(3)

# %% line=329 tags=[]
class CustomClass:
  def __init__(self, x: jnp.ndarray, mul: bool):
    self.x = x
    self.mul = mul

  def calc(self, y):
    return _calc(self.mul, self.x, y)

@jit(static_argnums=0)
def _calc(mul, x, y):
  if mul:
    return x * y
  return y

# %% line=347 tags=[]
c = CustomClass(2, True)
print(c.calc(3))

# %% line=360 tags=[]
class CustomClass:
  def __init__(self, x: jnp.ndarray, mul: bool):
    self.x = x
    self.mul = mul

  # WARNING: this example is broken, as we'll see below. Don't copy & paste!
  @jit(static_argnums=0)
  def calc(self, y):
    if self.mul:
      return self.x * y
    return y

# %% line=376 tags=[]
c = CustomClass(2, True)
print(c.calc(3))

# %% line=383 tags=[]
c.mul = False
print(c.calc(3))  # Should print 3

# %% line=392 tags=[]
class CustomClass:
  def __init__(self, x: jnp.ndarray, mul: bool):
    self.x = x
    self.mul = mul

  @jit(static_argnums=0)
  def calc(self, y):
    if self.mul:
      return self.x * y
    return y

  def __hash__(self):
    return hash((self.x, self.mul))

  def __eq__(self, other):
    return (isinstance(other, CustomClass) and
            (self.x, self.mul) == (other.x, other.mul))

# %% line=426 tags=[]
class CustomClass:
  def __init__(self, x: jnp.ndarray, mul: bool):
    self.x = x
    self.mul = mul

  @jit
  def calc(self, y):
    if self.mul:
      return self.x * y
    return y

  def _tree_flatten(self):
    children = (self.x,)  # arrays / dynamic values
    aux_data = {'mul': self.mul}  # static values
    return (children, aux_data)

  @classmethod
  def _tree_unflatten(cls, aux_data, children):
    return cls(*children, **aux_data)

from jax import tree_util
tree_util.register_pytree_node(CustomClass,
                               CustomClass._tree_flatten,
                               CustomClass._tree_unflatten)

# %% line=455 tags=[]
c = CustomClass(2, True)
print(c.calc(3))

# %% line=460 tags=[]
c.mul = False  # mutation is detected
print(c.calc(3))

# %% line=465 tags=[]
c = CustomClass(jnp.array(2), True)  # non-hashable x is supported
print(c.calc(3))

# %% line=483 tags=["raises-exception"]
np.arange(10)[11]

# %% line=494 tags=[]
jnp.arange(10)[11]

# %% line=505 tags=[]
jnp.arange(10.0).at[11].get()

# %% line=512 tags=[]
jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan)

# %% line=531 tags=[]
np.sum([1, 2, 3])

# %% line=543 tags=["raises-exception"]
jnp.sum([1, 2, 3])

# %% line=556 tags=[]
def permissive_sum(x):
  return jnp.sum(jnp.array(x))

x = list(range(10))
permissive_sum(x)

# %% line=571 tags=[]
make_jaxpr(permissive_sum)(x)

# %% line=584 tags=[]
jnp.sum(jnp.array(x))

# %% line=612 tags=[]
def nansum(x):
  mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
  x_without_nans = x[mask]
  return x_without_nans.sum()

# %% line=626 tags=[]
x = jnp.array([1, 2, jnp.nan, 3, 4])
print(nansum(x))

# %% line=639 tags=["raises-exception"]
jax.jit(nansum)(x)

# %% line=652 tags=[]
@jax.jit
def nansum_2(x):
  mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
  return jnp.where(mask, x, 0).sum()

print(nansum_2(x))

# %% line=680 tags=[]
x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
x.dtype

# %% line=696 tags=[]
# again, this only works on startup!
import jax
jax.config.update("jax_enable_x64", True)

# %% line=704 tags=[]
import jax
jax.config.config_with_absl()

# %% line=711 tags=[]
import jax
if __name__ == '__main__':
  # calls jax.config.config_with_absl() *and* runs absl parsing
  jax.config.parse_flags_with_absl()

# %% line=722 tags=[]
import jax
import jax.numpy as jnp
from jax import random

jax.config.update("jax_enable_x64", True)
x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
x.dtype # --> dtype('float64')

# %% line=748 tags=[]
np.arange(254.0, 258.0).astype('uint8')

# %% line=751 tags=[]
jnp.arange(254.0, 258.0).astype('uint8')

# %% line=760 tags=[]
import jax.numpy as jnp

# %% line=761 tags=[]
subnormal = jnp.float32(1E-45)

# %% line=762 tags=[]
subnormal  # subnormals are representable

# %% line=764 tags=[]
subnormal + 0  # but are flushed to zero within operations
