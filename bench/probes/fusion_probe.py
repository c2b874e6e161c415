"""Where the time of a generated fusion kernel goes, on one GPU (issue 14's diagnosis; needs torch for CUDA events).

For the 64M-element chain of bench/fusion.py (a) and the row softmax (b): the generated kernel launched by
Triton's own launcher on torch tensors (device time by CUDA events, triton.testing.do_bench) over a sweep of
block sizes and warps, and in its CPU math form (tl.exp/tl.log, approximate on the GPU) beside the libdevice one;
then the same kernel inside numax's XLA program, and XLA's own code, by wall clock of back-to-back calls.

    python3 bench/probes/fusion_probe.py
"""

import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from fusion import chain  # noqa: E402
from numax.lowering import fusion_codegen  # noqa: E402
from numax.transforms import fusion  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def wall_us(fn, calls=50):
    numax.block_until_ready(fn())
    start = time.perf_counter()
    for _ in range(calls):
        out = fn()
    numax.block_until_ready(out)
    return (time.perf_counter() - start) / calls * 1e6


def kernel_of(fn, *args, platform):
    closed = numax.make_jaxpr(fn)(*args)
    _, kernels = fusion.fuse_with_kernels(closed.closed if hasattr(closed, "closed") else closed, platform)
    return kernels


def probe_chain(n):
    rng = np.random.default_rng(0)
    x_host, y_host = (rng.normal(size=n).astype(np.float32) for _ in range(2))
    tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()
    out = torch.empty_like(tx)
    floor = triton.testing.do_bench(lambda: tx.clone()) * 1e3 * 1.5
    print(f"## chain, {n} float32: copy floor (3 arrays) {floor:.1f} us")
    for platform in ("gpu", "cpu"):
        (kernel,) = kernel_of(chain(xnp), x_host, y_host, platform=platform)
        jit_fn = fusion_codegen.load_kernel(kernel.name, kernel.source)
        for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (8192, 16)):
            def launch():
                jit_fn[(triton.cdiv(n, block),)](tx, ty, n, out, BLOCK=block, num_warps=warps)

            us = triton.testing.do_bench(launch) * 1e3
            print(f"| {platform} math | BLOCK {block} warps {warps} | {us:.1f} us | {floor / us:.0%} |")
    x, y = numax.device_put(x_host), numax.device_put(y_host)
    fused, plain = numax.jit(chain(xnp), fusion="triton"), numax.jit(chain(xnp))
    for name, fn in (("numax fused program", lambda: fused(x, y)), ("numax XLA program", lambda: plain(x, y))):
        us = wall_us(fn)
        print(f"| {name} | wall clock | {us:.1f} us | {floor / us:.0%} |")


def probe_softmax(rows, length):
    rng = np.random.default_rng(0)
    x_host = rng.normal(size=(rows, length)).astype(np.float32)
    tx = torch.from_numpy(x_host).cuda()
    out = torch.empty_like(tx)
    floor = triton.testing.do_bench(lambda: tx.clone()) * 1e3
    print(f"## softmax {rows}x{length}: copy floor {floor:.1f} us; torch.softmax "
          f"{triton.testing.do_bench(lambda: torch.softmax(tx, -1)) * 1e3:.1f} us")
    (kernel,) = kernel_of(lambda v: numax.nn.softmax(v, axis=-1), x_host, platform="gpu")
    print(kernel.source)
    jit_fn = fusion_codegen.load_kernel(kernel.name, kernel.source)
    block = triton.next_power_of_2(length)
    for warps in (4, 8, 16, 32):
        for stages in (1, 2, 3):
            def launch():
                jit_fn[(rows,)](tx, length, rows, out, BLOCK=block, ROWS=1, num_warps=warps, num_stages=stages)

            us = triton.testing.do_bench(launch) * 1e3
            print(f"| warps {warps} stages {stages} | {us:.1f} us | {floor / us:.0%} |")
    x = numax.device_put(x_host)
    fused = numax.jit(lambda v: numax.nn.softmax(v, axis=-1), fusion="triton")
    plain = numax.jit(lambda v: numax.nn.softmax(v, axis=-1))
    for name, fn in (("numax fused program", lambda: fused(x)), ("numax XLA program", lambda: plain(x))):
        us = wall_us(fn)
        print(f"| {name} | wall clock | {us:.1f} us | {floor / us:.0%} |")


if __name__ == "__main__":
    probe_chain(64 << 20)
    probe_softmax(8192, 8192)
