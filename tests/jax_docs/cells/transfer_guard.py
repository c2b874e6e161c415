# Code cells of jax-ml/jax docs/transfer_guard.rst at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=54 tags=[]
jax.config.update("jax_transfer_guard", "allow")  # This is default.

# %% line=56 tags=[]
x = jnp.array(1)

# %% line=57 tags=[]
y = jnp.array(2)

# %% line=58 tags=[]
z = jnp.array(3)

# %% line=60 tags=[]
print("x", x)  # All transfers are allowed.

# %% line=62 tags=[]
with jax.transfer_guard("disallow"):
  print("x", x)  # x has already been fetched into the host.
  print("y", jax.device_get(y))  # Explicit transfers are allowed.
  try:
    print("z", z)  # Implicit transfers are disallowed.
    assert False, "This line is expected to be unreachable."
  except:
    print("z could not be fetched")  # doctest: +SKIP
