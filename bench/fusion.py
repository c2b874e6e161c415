"""Automatic Triton fusion against XLA, jax and torch on one GPU (issue 14). First slice: (a) a 64M-element
float32 chain of 8 elementwise operations. Each side's result is checked against numpy first; times are
medians of interleaved repeats (each call waits for the device), also as a fraction of the copy-bandwidth
floor (bytes read and written at the bandwidth a device-to-device copy reaches).

    python3 bench/fusion.py [--quick]
"""

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from dispatch import interleaved  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def chain(np_):
    """Eight elementwise operations: one read of x and y, one write."""
    def f(x, y):
        z = x * 1.5 + y
        z = np_.tanh(z) * 0.5
        z = np_.exp(-z * z) - 0.25
        return np_.maximum(z, y * 0.1)

    return f


def sides(x_host, y_host):
    found = {}
    x, y = numax.device_put(x_host), numax.device_put(y_host)
    fused, plain = numax.jit(chain(xnp), fusion="triton"), numax.jit(chain(xnp))
    found["numax (fusion)"] = lambda: fused(x, y).block_until_ready()
    found["numax (XLA)"] = lambda: plain(x, y).block_until_ready()
    try:
        import jax
        import jax.numpy as jnp

        jx, jy = jax.device_put(x_host), jax.device_put(y_host)
        jf = jax.jit(chain(jnp))
        found["jax.jit"] = lambda: jf(jx, jy).block_until_ready()
    except ImportError:
        pass
    try:
        import torch

        tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()
        compiled = torch.compile(chain(torch))
        eager = chain(torch)

        def synced(fn):
            def run():
                out = fn(tx, ty)
                torch.cuda.synchronize()
                return out

            return run

        found["torch.compile"] = synced(compiled)
        found["torch eager"] = synced(eager)

        def copy():
            tx.clone()
            torch.cuda.synchronize()

        found["copy (floor)"] = copy
    except ImportError:
        pass
    return found


def host(value):
    return value.cpu().numpy() if hasattr(value, "cpu") and not isinstance(value, numax.Array) else np.asarray(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=64 << 20)
    args = parser.parse_args()
    repeats, inner = (5, 5) if args.quick else (15, 20)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=args.size).astype(np.float32), rng.normal(size=args.size).astype(np.float32)
    expected = chain(np)(x.astype(np.float64), y.astype(np.float64))
    found = sides(x, y)
    compile_start = time.perf_counter()
    out = found["numax (fusion)"]()
    print(f"numax fusion: first call (trace, generate, compile) {time.perf_counter() - compile_start:.2f} s")
    for name, run in found.items():
        if name != "copy (floor)":
            np.testing.assert_allclose(host(run()), expected, rtol=2e-5, atol=2e-6, err_msg=name)
    del out
    times = interleaved(list(found.items()), repeats, inner)
    floor = times.get("copy (floor)")
    # The copy moves 2 bytes per element-byte (read + write); the chain reads two arrays and writes one.
    floor_chain = floor * 3 / 2 if floor else None
    print(f"# {args.size} float32 elements, on {numax.devices()[0].device_kind}")
    print("| side | time | fraction of the floor |")
    print("| --- | --- | --- |")
    for name, value in times.items():
        if name == "copy (floor)":
            continue
        fraction = f"{floor_chain / value:.0%}" if floor_chain else "-"
        print(f"| {name} | {value:.1f} us | {fraction} |")
    if floor_chain:
        print(f"| floor (copy bandwidth, 3 arrays) | {floor_chain:.1f} us | 100% |")


if __name__ == "__main__":
    main()
