# Code cells of jax-ml/jax docs/tracing.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=21 tags=[]
from jax import jit
import jax.numpy as jnp
import numpy as np

@jit
def f(x, y):
  print("Running f():")
  print(f"  x = {x}")
  print(f"  y = {y}")
  result = jnp.dot(x + 1, y + 1)
  print(f"  result = {result}")
  return result

x = np.random.randn(3, 4)
y = np.random.randn(4)
f(x, y)

# %% line=55 tags=[]
x2 = np.random.randn(3, 4)
y2 = np.random.randn(4)
f(x2, y2)

# %% line=65 tags=[]
from jax import make_jaxpr

def f(x, y):
  return jnp.dot(x + 1, y + 1)

make_jaxpr(f)(x, y)

# %% line=79 tags=["raises-exception"]
@jit
def f(x, neg):
  return -x if neg else x

f(1, True)

# %% line=91 tags=[]
from functools import partial

@jit(static_argnums=(1,))
def f(x, neg):
  return -x if neg else x

f(1, True)

# %% line=104 tags=[]
f(1, False)

# %% line=118 tags=["raises-exception"]
import jax.numpy as jnp
from jax import jit

@jit
def f(x):
  return x.reshape(jnp.array(x.shape).prod())

x = jnp.ones((2, 3))
f(x)

# %% line=135 tags=[]
@jit
def f(x):
  print(f"x = {x}")
  print(f"x.shape = {x.shape}")
  print(f"jnp.array(x.shape).prod() = {jnp.array(x.shape).prod()}")
  # comment this out to avoid the error:
  # return x.reshape(jnp.array(x.shape).prod())

f(x)

# %% line=157 tags=[]
from jax import jit
import jax.numpy as jnp
import numpy as np

@jit
def f(x):
  return x.reshape((np.prod(x.shape),))

f(x)

# %% line=224 tags=[]
def divide(x, y):
  return x / y if y >= 1. else 0.
