# Code cells of jax-ml/jax docs/debugging/flags.md at jax-v0.10.2 (990e6a0b84138346e6a38785412f36356e0e5dc3), quoted unchanged as test data.
# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.

# %% line=45 tags=[]
import jax
import jax.numpy as jnp
import traceback
jax.config.update("jax_debug_nans", True)

def f(x):
  w = 3 * jnp.square(x)
  return jnp.log(-w)

# The stack trace is very long so only print a couple lines.
try:
  f(5.)
except FloatingPointError as e:
  print(traceback.format_exc(limit=2))

# %% line=65 tags=["raises-exception"]
jax.jit(f)(5.)

# %% line=74 tags=[]
with jax.debug_nans(False):
  print(jax.jit(f)(5.))

# %% line=111 tags=[]
import jax
jax.config.update("jax_disable_jit", True)

def f(x):
  y = jnp.log(x)
  if jnp.isnan(y):
    breakpoint()
  return y
jax.jit(f)(-2.)  # ==> Enters PDB breakpoint!
