"""Probe: jax's and numax's gradients of scipy.linalg.cholesky of a non-symmetric matrix, on the CPU and the
GPU (does jax read only one triangle on both?). Run on the device machine: python3 bench/gpu_cholesky_probe.py"""
import inspect

import jax
import jax._src.scipy.linalg as jsl_src
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax._src.lax import linalg as jl

import numax
import numax.numpy as xnp
import numax.scipy.linalg as xsl

rng = np.random.default_rng(0)
a = rng.uniform(-0.3, 0.3, (3, 3)).astype(np.float32)
jfn = lambda m: jnp.sum(jnp.sin(jsl.cholesky(m + 3 * jnp.eye(3))))
xfn = lambda m: xnp.sum(xnp.sin(xsl.cholesky(m + 3 * xnp.eye(3))))
print("jax", jax.__version__)
for platform in ("cpu", "gpu"):
    try:
        device = jax.devices(platform)[0]
    except RuntimeError:
        continue
    with jax.default_device(device):
        print(platform, "jax forward\n", np.asarray(jsl.cholesky(jnp.asarray(a) + 3 * jnp.eye(3))))
        print(platform, "jax grad\n", np.asarray(jax.grad(jfn)(jnp.asarray(a))))
print("numax", numax.default_backend(), "forward\n", np.asarray(xsl.cholesky(xnp.asarray(a) + 3 * xnp.eye(3))))
print("numax grad\n", np.asarray(numax.grad(xfn)(a)))
for name in ("_cholesky_jvp_rule", "cholesky"):
    if hasattr(jl, name):
        print(inspect.getsource(getattr(jl, name)))
print(inspect.getsource(jsl.cholesky))
print(inspect.getsource(jsl_src._cholesky))
