"""Where numax's per-call time goes on one GPU (issue 16): a jitted 1024-element add, timed whole and in parts
(jaxlib's execute alone on numax's executable, on jax's executable for the same function, the wait), and a
cProfile of numax's calls.

    python3 bench/probes/gpu_dispatch_breakdown.py
"""

import cProfile
import os
import pstats
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

import jax  # noqa: E402
import numpy as np  # noqa: E402
from dispatch import median_time  # noqa: E402
from numax.lowering import xla  # noqa: E402

import numax  # noqa: E402


def main():
    host = np.linspace(-1, 1, 1024, dtype=np.float32)
    add = numax.jit(lambda a, b: a + b)
    x = numax.device_put(host)
    add(x, x).block_until_ready()
    executable = next(iter(add.cache.entries.values())).executable
    jadd = jax.jit(lambda a, b: a + b)
    jx = jax.device_put(host)
    jadd(jx, jx).block_until_ready()
    jcompiled = jadd.lower(jx, jx).compile()._executable.xla_executable
    rows = {
        "numax call (dispatch only)": lambda: add(x, x),
        "jax call (dispatch only)": lambda: jadd(jx, jx),
    }
    buffers = [x._buffer, x._buffer]
    rows["xla.execute on numax's executable"] = lambda: xla.execute(executable.compiled, buffers, executable.handlers)
    rows["execute_sharded only, numax's executable"] = lambda: executable.compiled.execute_sharded(buffers)
    rows["execute_sharded only, jax's executable"] = lambda: jcompiled.execute_sharded([jx, jx])
    for name, fn in rows.items():
        fn()
        print(f"| {name} | {median_time(fn, 15, 200):.1f} us |")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        add(x, x)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
