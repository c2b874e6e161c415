# Code cells of jax-ml/jax docs/control-flow.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=27 tags=[]
from jax import grad, jit
import jax.numpy as jnp

# %% line=36 tags=[]
@jit
def f(x):
  for i in range(3):
    x = 2 * x
  return x

print(f(3))

# %% line=53 tags=[]
@jit
def g(x):
  y = 0.
  for i in range(x.shape[0]):
    y = y + x[i]
  return y

print(g(jnp.array([1., 2., 3.])))

# %% line=72 tags=["raises-exception"]
@jit
def f(x):
  if x < 3:
    return 3. * x ** 2
  else:
    return -4 * x

# This will fail!
f(2)

# %% line=88 tags=["raises-exception"]
@jit
def g(x):
  return (x > 0) and (x < 3)

# This will fail!
g(2)

# %% line=114 tags=[]
def f(x):
  if x < 3:
    return 3. * x ** 2
  else:
    return -4 * x

f = jit(f, static_argnames='x')

print(f(2.))

# %% line=133 tags=[]
def f(x, n):
  y = 0.
  for i in range(n):
    y = y + x[i]
  return y

f = jit(f, static_argnames='n')

f(jnp.array([2., 3., 4.]), 2)

# %% line=158 tags=[]
def example_fun(length, val):
  return jnp.ones((length,)) * val
# un-jit'd works fine
print(example_fun(5, 4))

# %% line=169 tags=["raises-exception"]
bad_example_jit = jit(example_fun)
# this will fail:
bad_example_jit(10, 4)

# %% line=178 tags=[]
# static_argnames tells JAX to recompile on changes at these argument positions:
good_example_jit = jit(example_fun, static_argnames='length')
# first compile
print(good_example_jit(10, 4))
# recompiles
print(good_example_jit(5, 4))

# %% line=196 tags=[]
@jit
def f(x):
  print(x)
  y = 2 * x
  print(y)
  return y
f(2)

# %% line=223 tags=[]
def cond(pred, true_fun, false_fun, operand):
  if pred:
    return true_fun(operand)
  else:
    return false_fun(operand)

# %% line=233 tags=[]
from jax import lax

operand = jnp.array([0.])
lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
# --> array([1.], dtype=float32)
lax.cond(False, lambda x: x+1, lambda x: x-1, operand)
# --> array([-1.], dtype=float32)

# %% line=279 tags=[]
init_val = 0
cond_fun = lambda x: x < 10
body_fun = lambda x: x+1
lax.while_loop(cond_fun, body_fun, init_val)
# --> array(10, dtype=int32)

# %% line=302 tags=[]
init_val = 0
start = 0
stop = 10
body_fun = lambda i,x: x+i
lax.fori_loop(start, stop, body_fun, init_val)
# --> array(45, dtype=int32)

# %% line=346 tags=[]
def python_check_positive_even(x):
  is_even = x % 2 == 0
  # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
  return is_even and (x > 0)

@jit
def jax_check_positive_even(x):
  is_even = x % 2 == 0
  # `logical_and` does not short circuit, so `x > 0` is always evaluated.
  return jnp.logical_and(is_even, x > 0)

print(python_check_positive_even(24))
print(jax_check_positive_even(24))

# %% line=364 tags=[]
x = jnp.array([-1, 2, 5])
print(jax_check_positive_even(x))

# %% line=372 tags=["raises-exception"]
print(python_check_positive_even(x))

# %% line=385 tags=[]
def f(x):
  if x < 3:
    return 3. * x ** 2
  else:
    return -4 * x

print(grad(f)(2.))  # ok!
print(grad(f)(4.))  # ok!
