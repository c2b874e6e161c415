"""Where a single call + wait of bench/fusion.py's cases spends its time (issue 14's per-call gap; needs torch, whose
profiler records the host's ranges and every CUDA kernel of the process, XLA's included, on one clock).

Each side runs CALLS calls, each waited for at once, inside `record_function` ranges "call" and "wait". Per side,
medians over the calls: the call's host time, the lag from the call's start to its first kernel, the kernels' span,
the wake-up (last kernel's end to the wait's return) and the total; then, for one call, every host event of the
CUDA runtime and driver (launches, allocations, event records, synchronizations) at its offset from the call's
start. numax's waits are tried three ways: numax.block_until_ready (polls, then blocks), the runtime's blocking
wait alone, and polling alone. Finally the same variants are timed without the profiler.

    python3 bench/fusion_call_timeline_probe.py [--cases ace] [--quick]
"""

import os
import statistics
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from dispatch import median_time  # noqa: E402
from fusion import probe_sides  # noqa: E402
from torch.autograd import DeviceType  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

import numax  # noqa: E402

CALLS = 20


def numax_wait_variants(call):
    def blocking(out):
        for leaf in numax.tree_util.tree_leaves(out):
            leaf._buffer.block_until_ready()

    def polling(out):
        for leaf in numax.tree_util.tree_leaves(out):
            while not leaf._buffer.is_ready():
                pass
            leaf._buffer.block_until_ready()

    return {"blocking wait": (call, blocking), "polling wait": (call, polling)}


def profiled(call, wait):
    for _ in range(3):
        wait(call())
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
        for _ in range(CALLS):
            with record_function("call"):
                out = call()
            with record_function("wait"):
                wait(out)
            del out
    events = [(e.name, e.time_range.start, e.time_range.end, e.device_type) for e in trace.events()]
    return sorted(events, key=lambda e: e[1])


def breakdown(name, events, show_host_events):
    calls = [e for e in events if e[0] == "call" and e[3] == DeviceType.CPU]
    waits = [e for e in events if e[0] == "wait" and e[3] == DeviceType.CPU]
    kernels = [e for e in events if e[3] == DeviceType.CUDA]
    rows = []
    for i, (call, wait) in enumerate(zip(calls, waits)):
        mine = [k for k in kernels if call[1] <= k[1] <= wait[2]]
        if not mine:
            continue
        rows.append((call[2] - call[1], mine[0][1] - call[1], mine[-1][2] - mine[0][1], wait[2] - mine[-1][2],
                     wait[2] - call[1], len(mine)))
        if show_host_events and i == CALLS // 2:
            print(f"    one call of {name}: host events (offset from the call's start, duration), kernels")
            for event in events:
                if call[1] <= event[1] <= wait[2] and event[0] not in ("call", "wait"):
                    where = "GPU " if event[3] == DeviceType.CUDA else "host"
                    print(f"      {where} {event[1] - call[1]:8.1f} us  {event[2] - event[1]:7.1f} us  {event[0][:90]}")
    if not rows:
        print(f"{name:22s} no kernels seen")
        return
    med = [statistics.median(column) for column in zip(*rows)]
    print(f"{name:22s} call {med[0]:6.1f}  to first kernel {med[1]:6.1f}  kernels {med[2]:7.1f}  "
          f"wake-up {med[3]:6.1f}  total {med[4]:7.1f} us  ({med[5]:.0f} kernels)")


def unprofiled(call, wait, repeats=5):
    for _ in range(3):
        wait(call())
    return median_time(lambda: wait(call()), repeats, CALLS)


def main():
    for _, found in probe_sides("ace"):
        call_xla = found["numax (XLA)"][0]
        found.update({f"numax (XLA), {k}": v for k, v in numax_wait_variants(call_xla).items()})
        for name, (call, wait) in found.items():
            breakdown(name, profiled(call, wait), show_host_events=name in ("numax (XLA)", "torch.compile"))
        print("  without the profiler, call + wait:")
        for name, (call, wait) in found.items():
            print(f"    {name:26s} {unprofiled(call, wait):7.1f} us")
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
