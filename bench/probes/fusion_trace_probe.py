"""Where the device time of bench/fusion.py's back-to-back runs goes, kernel by kernel (issue 14's diagnosis; needs
torch, whose profiler records every CUDA kernel of the process through CUPTI, XLA's included).

For each chosen case, each side (numax with fusion, numax on XLA only, jax.jit, torch.compile, the copy floor)
runs CALLS times back to back under torch's profiler. Printed per side: the wall time per call, the device time
per call (first kernel start to last kernel end, over the calls), the busy time per call (the sum of kernel
durations) and the idle time between kernels; then the distinct kernels with their mean durations.

    python3 bench/probes/fusion_trace_probe.py [--cases ce] [--quick]
"""

import argparse
import collections
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

import numpy as np  # noqa: E402
import torch  # noqa: E402
from fusion import back_to_back, cases, sides  # noqa: E402
from torch.autograd import DeviceType  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

CALLS = 40


def kernel_events(call, wait):
    """(wall us per call, [(name, start us, end us)] of the CUDA kernels and copies) of CALLS back-to-back calls."""
    back_to_back(call, wait, 3)  # warm
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        start = time.perf_counter()
        back_to_back(call, wait, CALLS)
        wall = (time.perf_counter() - start) / CALLS * 1e6
    events = [(e.name, e.time_range.start, e.time_range.end) for e in trace.events()
              if e.device_type == DeviceType.CUDA]
    return wall, sorted(events, key=lambda e: e[1])


def summary(name, wall, events):
    if not events:
        print(f"{name:16s} wall {wall:7.1f} us/call, no device events recorded")
        return
    span = (events[-1][2] - events[0][1]) / CALLS
    busy = sum(end - start for _, start, end in events) / CALLS
    print(f"{name:16s} wall {wall:7.1f} us/call  device span {span:7.1f}  busy {busy:7.1f}  idle {span - busy:6.1f}"
          f"  ({len(events) / CALLS:.1f} device events per call)")
    durations = collections.defaultdict(list)
    for kernel, start, end in events:
        durations[kernel].append(end - start)
    for kernel, times in sorted(durations.items(), key=lambda item: -sum(item[1])):
        print(f"    {np.mean(times):8.1f} us x {len(times) / CALLS:4.1f}/call  {kernel[:100]}")


def chosen_cases(default_keys):
    """(case, sides) of each case named on the command line (`--cases`, else `default_keys`; `--quick` for the
    small sizes), its title printed first; the sides are bench/fusion.py's but torch eager."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=default_keys)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for case in cases(args.quick):
        if case.key in args.cases:
            print(f"\n## ({case.key}) {case.title}")
            found = sides(case, case.make_inputs(rng))
            found.pop("torch eager", None)
            yield case, found


def main():
    for _, found in chosen_cases("ce"):
        for name, (call, wait) in found.items():
            summary(name, *kernel_events(call, wait))
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
