"""What does each generated kernel cost the host per call (issue 32, session 22's open question)?

On an H200 a GPT-2 "small" training step ran at 1.17 ms under XLA and 1.63 ms with 54 fused kernels, though the
tuner had timed every one of those kernels faster than XLA's code for its region: a step that small is bound by the
host, and jaxlib's typed-FFI Triton handler rebuilds its kernel call from a proto on every launch. This probe
measures the host's share directly: programs of K stages, each an elementwise region then a matrix product (so that
every region is a kernel of its own), on arrays small enough that the device finishes long before the host issues
the next call. Back to back, the time per call is the host's; its slope in K, fused against XLA's, is the cost per
kernel launch. Then the same programs timed by the autotuner's harness (`RegionTuner.time`), to compare with the
jit call; with `--legacy` (GPU, torch), the fused program also with its kernels as the plugin's legacy
`triton_kernel_call` custom call (api_version 2: a cache of kernels keyed by the call's bytes, no proto rebuilt per
launch), run on raw buffers beside the FFI form run the same way.

    python3 bench/probes/fusion_launch_cost_probe.py [--stages 1,4,16,64] [--size 64] [--legacy]
"""

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/probes: fusion_route_probe (--legacy)

import numpy as np  # noqa: E402
from numax.lowering import xla  # noqa: E402
from numax.transforms import fusion_tuning  # noqa: E402

import numax  # noqa: E402
import numax.numpy as mnp  # noqa: E402


def staged(stages):
    def f(x, w):
        for _ in range(stages):
            x = mnp.tanh(x * 1.5 + 0.5) * 0.9  # a region: one kernel with fusion="triton"
            x = x @ w  # XLA's, between regions
        return x

    return f


def back_to_back_us(call, args, seconds=0.2, wait=numax.block_until_ready):
    """Microseconds per call, calls issued back to back, the last one waited for (the best of 5 rounds)."""
    wait(call(*args))
    best = float("inf")
    for _ in range(5):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 5:
            out = call(*args)
            count += 1
        wait(out)
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stages", default="1,4,16,64")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--legacy", action="store_true", help="also the legacy custom-call target (GPU, torch)")
    args = parser.parse_args()
    numax.config.update("numax_fusion_autotune", "never")  # every region a kernel: the launches are the question
    rng = np.random.default_rng(0)
    x = numax.device_put(rng.standard_normal((args.size, args.size), dtype=np.float32))
    w = numax.device_put((rng.standard_normal((args.size, args.size)) / args.size).astype(np.float32))
    backend, device = xla.default_placement()
    tuner = fusion_tuning.RegionTuner(backend, device or backend.default_device)
    print(f"# {numax.devices()[0]}: stages of (elementwise region, matmul) on {args.size}x{args.size} float32")
    routes = "| FFI raw | legacy raw " if args.legacy else ""
    print(f"| stages | kernels | XLA us/call | fused us/call | fused - XLA per stage | harness XLA | harness fused "
          f"{routes}|")
    print("| --- " * (7 + 2 * args.legacy) + "|")
    for stages in map(int, args.stages.split(",")):
        f = staged(stages)
        plain, fused = numax.jit(f), numax.jit(f, fusion="triton")
        kernels = len(fused.lower(x, w).triton_kernels())
        xla_us, fused_us = back_to_back_us(plain, (x, w)), back_to_back_us(fused, (x, w))
        harness = []
        for jitted in (plain, fused):
            program = jitted.lower(x, w).closed.program
            harness.append(tuner.time(program.equations, program.invars, program.outvars,
                                      tuner.random_buffers(program.invars), copies=1))
        raw = ""
        if args.legacy:
            raw = "".join(f"| {us:.1f} " for us in raw_routes_us(fused.lower(x, w).as_text(), kernels, x, w))
        print(f"| {stages} | {kernels} | {xla_us:.1f} | {fused_us:.1f} | {(fused_us - xla_us) / stages:.2f} "
              f"| {harness[0]:.1f} | {harness[1]:.1f} {raw}|", flush=True)


def raw_routes_us(fused_text, kernels, x, w):
    """Back-to-back us per call of the fused program on raw buffers: as compiled (typed FFI), and with its kernels
    as the legacy custom call."""
    from fusion_route_probe import legacy_form, raw_side

    times = []
    for text in (fused_text, legacy_form(fused_text, kernels)):
        call, wait = raw_side(text, [x._buffer, w._buffer], x.shape, np.float32)
        times.append(back_to_back_us(lambda *_: call(), (), wait=wait))
    return times


if __name__ == "__main__":
    main()
