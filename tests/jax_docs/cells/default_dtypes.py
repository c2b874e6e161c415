# Code cells of jax-ml/jax docs/default_dtypes.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=30 tags=[]
import jax.numpy as jnp

# %% line=32 tags=[]
jnp.arange(5)

# %% line=35 tags=[]
jnp.zeros(5)

# %% line=38 tags=[]
jnp.ones(5, dtype=int)

# %% line=57 tags=[]
import jax
import jax.numpy as jnp

jax.config.update('jax_enable_x64', True)

print(repr(jnp.arange(5)))
print(repr(jnp.zeros(5)))
print(repr(jnp.ones(5, dtype=int)))
