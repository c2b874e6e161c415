# Code cells of jax-ml/jax docs/type_promotion.rst at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=182 tags=[]
x = jnp.arange(5, dtype='int8')

# %% line=183 tags=[]
2 * x

# %% line=193 tags=[]
jnp.int32(2) * x

# %% line=203 tags=[]
jnp.asarray(2)

# %% line=211 tags=[]
jnp.asarray(2, dtype='int32')

# %% line=226 tags=[]
x = jnp.float32(1)

# %% line=227 tags=[]
y = jnp.int32(1)

# %% line=228 tags=["raises-exception"]
with jax.numpy_dtype_promotion('strict'):
  z = x + y  # doctest: +SKIP


# %% line=241 tags=[]
with jax.numpy_dtype_promotion('strict'):
  z = x + 1

# %% line=243 tags=[]
print(z)
