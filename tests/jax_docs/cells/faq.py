# Code cells of jax-ml/jax docs/faq.rst at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=61 tags=[]
from jax import jit

# %% line=62 tags=[]
import jax.numpy as jnp

# %% line=63 tags=[]
def f(x):
  return jnp.log(jnp.sqrt(x))

# %% line=65 tags=[]
x = jnp.pi

# %% line=66 tags=[]
print(f(x))

# %% line=69 tags=[]
print(jit(f)(x))

# %% line=85 tags=[]
def f(x):
  return jnp.log(jnp.exp(x))

# %% line=87 tags=[]
x = 100.0

# %% line=88 tags=[]
print(f(x))

# %% line=91 tags=[]
print(jit(f)(x))
