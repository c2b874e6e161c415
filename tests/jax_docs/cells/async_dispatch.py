# Code cells of jax-ml/jax docs/async_dispatch.rst at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=9 tags=[]
import numpy as np

# %% line=10 tags=[]
import jax.numpy as jnp

# %% line=11 tags=[]
from jax import random

# %% line=12 tags=[]
x = random.uniform(random.key(0), (1000, 1000))

# %% line=15 tags=[]
jnp.dot(x, x) + 3.  # doctest: +SKIP

# %% line=51 tags=[]
%time jnp.dot(x, x)  # doctest: +SKIP

# %% line=77 tags=[]
%time np.asarray(jnp.dot(x, x))  # doctest: +SKIP

# %% line=94 tags=[]
%time jnp.dot(x, x).block_until_ready()  # doctest: +SKIP
