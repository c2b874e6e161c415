"""Where the time of a large numax.triton_call goes on a GPU: the same 64M-float add as a Triton kernel, as XLA's
own add (numax and jax), each jitted, per call with a wait for the device (median of 50).

    python3 bench/triton_overhead_probe.py
"""

import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from dispatch import median_time  # noqa: E402
from triton_kernels import add_kernel  # noqa: E402

import numax  # noqa: E402
import numax.triton as nt  # noqa: E402


def median_us(fn, count=50):
    fn()  # warm
    return median_time(fn, count)


n = 64 << 20
x_host, y_host = np.ones(n, np.float32), np.ones(n, np.float32)
x, y = numax.device_put(x_host), numax.device_put(y_host)
jx, jy = jax.device_put(x_host), jax.device_put(y_host)
triton_add = numax.jit(lambda a, b: nt.triton_call(a, b, n, kernel=add_kernel, grid=(nt.cdiv(n, 1024),),
                                                    out_shape=numax.ShapeDtypeStruct(a.shape, a.dtype), BLOCK=1024))
xla_add, jax_add = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
print(f"numax triton_call add: {median_us(lambda: triton_add(x, y).block_until_ready()):.1f} us")
print(f"numax XLA add:         {median_us(lambda: xla_add(x, y).block_until_ready()):.1f} us")
print(f"jax XLA add:           {median_us(lambda: jax_add(jx, jy).block_until_ready()):.1f} us")
print(triton_add.lower(x, y).as_text()[-1200:])
