"""Which options of the CUDA PJRT client lower per-call latency (issue 16)? Each variant runs in its own process:
numax's GPU client made with extra create options (the TFRT GPU client, other allocators), then the call + wait
latency of a 1024-element add and of the small MLP train step of bench/dispatch.py, and the time to queue 100 calls
back to back. The results are checked against numpy in every variant.

    python3 bench/gpu_client_probe.py [--json PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VARIANTS = {
    "default": {},
    "tfrt_gpu_client": {"use_tfrt_gpu_client": True},  # as numax_gpu_client="tfrt" makes it
    "platform_allocator": {"allocator": "platform"},
    "bfc_allocator": {"allocator": "bfc"},
}


def child(extra):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    from jaxlib import xla_client as xc

    original = xc.make_c_api_client

    def with_extra(name, options=None, *rest):  # numax's client, made with the variant's options
        return original(name, {**(options or {}), **extra}, *rest)

    xc.make_c_api_client = with_extra
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from dispatch import make_train_step, train_step_setup

    import numax
    import numax.numpy as xnp

    assert numax.devices()[0].platform == "gpu", numax.devices()
    add = numax.jit(lambda a, b: a + b)
    a = xnp.asarray(np.arange(1024, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(add(a, a)), 2 * np.arange(1024, dtype=np.float32))
    host_params, host_x, host_y = train_step_setup(np.random.default_rng(0), 32, (64, 128, 10))
    step = numax.jit(make_train_step(xnp, numax.value_and_grad))
    args = ([(xnp.asarray(w), xnp.asarray(b)) for w, b in host_params], xnp.asarray(host_x), xnp.asarray(host_y))
    loss, _ = step(*args)
    assert np.isfinite(float(loss))

    def latency(fn, n=400):
        times = []
        for _ in range(n):
            start = time.perf_counter()
            numax.block_until_ready(fn())
            times.append(time.perf_counter() - start)
        return statistics.median(times[n // 4:]) * 1e6

    def queued(fn, n=100, rounds=15):
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            out = [fn() for _ in range(n)]
            numax.block_until_ready(out)
            times.append((time.perf_counter() - start) / n)
        return statistics.median(times) * 1e6

    def blocking_add():  # waited for by the runtime's blocking wait alone (no polling)
        out = add(a, a)
        out._buffer.block_until_ready()
        return out

    def spinning_add():  # waited for by polling alone
        out = add(a, a)
        while not out._buffer.is_ready():
            pass
        return out

    def dispatch_only(fn, n=400):
        times, outs = [], []
        for _ in range(n):
            start = time.perf_counter()
            outs.append(fn())
            times.append(time.perf_counter() - start)
            numax.block_until_ready(outs[-1])
        return statistics.median(times[n // 4:]) * 1e6

    result = {"add call+wait us": latency(lambda: add(a, a)), "step call+wait us": latency(lambda: step(*args)),
              "add back-to-back us": queued(lambda: add(a, a)), "step back-to-back us": queued(lambda: step(*args)),
              "add dispatch us": dispatch_only(lambda: add(a, a)),
              "add call+blocking wait us": latency(blocking_add), "add call+spin wait us": latency(spinning_add)}
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--child")
    options = parser.parse_args()
    if options.child is not None:
        return child(json.loads(options.child))
    results = {}
    for name, extra in VARIANTS.items():
        run = subprocess.run([sys.executable, __file__, "--child", json.dumps(extra)], capture_output=True,
                             text=True, timeout=300)
        lines = run.stdout.strip().splitlines()
        try:
            results[name] = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            results[name] = {"error": (run.stderr or run.stdout)[-600:]}
        print(name, results[name], flush=True)
    if options.json:
        with open(options.json, "w") as file:
            json.dump(results, file, indent=1)


if __name__ == "__main__":
    main()
