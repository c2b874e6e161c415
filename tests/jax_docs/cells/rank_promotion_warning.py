# Code cells of jax-ml/jax docs/rank_promotion_warning.rst at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=12 tags=[]
from jax import numpy as jnp

# %% line=13 tags=[]
x = jnp.arange(12).reshape(4, 3)

# %% line=14 tags=[]
y = jnp.array([0, 1, 0])

# %% line=15 tags=[]
x + y

# %% line=35 tags=[]
with jax.numpy_rank_promotion("warn"):
  z = x + y

# %% line=43 tags=[]
import jax
jax.config.update("jax_numpy_rank_promotion", "warn")
