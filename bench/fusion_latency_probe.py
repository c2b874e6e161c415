"""Why a call that waits for its result takes longer than the same call back to back (issue 14's diagnosis).

For one elementwise program at several sizes, numax (XLA and fused) and jax: the time to dispatch a call, the
time of a call that waits for its result, and the time per call of 50 calls back to back; torch's copy beside
them. Run under different allocator settings by the environment (XLA_PYTHON_CLIENT_PREALLOCATE,
XLA_PYTHON_CLIENT_ALLOCATOR).

    python3 bench/fusion_latency_probe.py
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from fusion import chain  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def measure(call, block, repeats=30):
    block(call())
    dispatch, synced = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        middle = time.perf_counter()
        block(out)
        end = time.perf_counter()
        dispatch.append(middle - start)
        synced.append(end - start)
        del out
    start = time.perf_counter()
    outs = [call() for _ in range(50)]
    block(outs[-1])
    back_to_back = (time.perf_counter() - start) / 50
    del outs
    # the output kept alive across calls (no free between them)
    kept, held = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        new = call()
        block(new)
        kept.append(time.perf_counter() - start)
        held = new  # noqa: F841
    return [statistics.median(dispatch) * 1e6, statistics.median(synced) * 1e6, back_to_back * 1e6,
            statistics.median(kept) * 1e6]


def spin(out):
    """Waits by polling readiness instead of blocking in the runtime."""
    for leaf in numax.tree_util.tree_leaves(out) if isinstance(out, numax.Array) else [out]:
        while not leaf.is_ready():
            pass


def main():
    only = sys.argv[1:] or None
    print(f"PREALLOCATE={os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE')} "
          f"ALLOCATOR={os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR')}")
    print("| size | side | dispatch | call + wait | back to back | call + wait, output kept |")
    rng = np.random.default_rng(0)
    for size in (64 << 20, 1024):
        x_host, y_host = (rng.normal(size=size).astype(np.float32) for _ in range(2))
        x, y = numax.device_put(x_host), numax.device_put(y_host)
        jx, jy = jax.device_put(x_host), jax.device_put(y_host)
        sides = {"numax XLA": (numax.jit(chain(xnp)), (x, y), numax.block_until_ready),
                 "numax XLA, polled": (numax.jit(chain(xnp)), (x, y), spin),
                 "jax, polled": (jax.jit(chain(jnp)), (jx, jy), spin),
                 "numax fused": (numax.jit(chain(xnp), fusion="triton"), (x, y), numax.block_until_ready),
                 "jax": (jax.jit(chain(jnp)), (jx, jy), jax.block_until_ready)}
        try:
            import torch

            tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()
            sides["torch.compile"] = (torch.compile(chain(torch)), (tx, ty), lambda out: torch.cuda.synchronize())
        except ImportError:
            pass
        for name, (fn, args, block) in sides.items():
            if only and name not in only:
                continue
            row = measure(lambda: fn(*args), block)
            print(f"| {size} | {name} | " + " | ".join(f"{v:.1f} us" for v in row) + " |")


if __name__ == "__main__":
    main()
