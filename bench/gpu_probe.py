"""Probes numax's GPU runtime on a CUDA machine: backend start-up, transfers, readback, callbacks.

    python3 bench/gpu_probe.py
"""

import time

import numpy as np

start = time.perf_counter()
from numax.lowering import xla  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

print(f"import numax: {(time.perf_counter() - start) * 1e3:.0f} ms")
start = time.perf_counter()
backend = xla.default_backend()
print(f"backend {backend.platform} in {(time.perf_counter() - start) * 1e3:.0f} ms: {backend.devices}")
x = xnp.arange(12.0).reshape(3, 4)
print("x on", x.device, "->", np.asarray(x).sum())
y = xnp.sin(x) @ x.T
print("matmul ok:", np.allclose(np.asarray(y), np.sin(np.arange(12.0).reshape(3, 4)) @ np.arange(12.0).reshape(3, 4).T,
                                atol=1e-4))
for dtype in (xnp.bfloat16, xnp.float16, xnp.complex64, xnp.bool_, xnp.int8):
    value = xnp.ones(3, dtype=dtype)
    print(dtype.name if hasattr(dtype, "name") else dtype, np.asarray(value))
f = numax.jit(lambda a: xnp.tanh(a).sum())
print("jit:", float(f(x)))
