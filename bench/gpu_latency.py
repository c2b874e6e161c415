"""Per-call latency on one GPU (issue 16): a call waited for with block_until_ready, numax against jax and torch,
in one process.

Cases: a 1024-element add (the dispatch floor), the MLP train step of bench/dispatch.py (batch 32, 64 -> 128 ->
10; 6 inputs, 5 outputs), the same step 1024 wide (batch 1024, 1024 -> 1024 -> 1024), and bench/fusion.py's case
(e), layernorm + linear + GELU + residual in float16 (32x512x512). Sides: numax; numax waited for by polling
is_ready() instead of blocking; jax.jit; torch eager; torch.compile; torch.compile(mode="reduce-overhead") (CUDA
graphs). Two numbers per side: "dispatch", the time until the call returns, and "call + wait". Medians of
rounds timed in a rotating order. Run it under different XLA_FLAGS (command buffers) to compare.

    python3 bench/gpu_latency.py [--quick] [--json PATH]
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from dispatch import make_train_step, rotated, train_step_setup  # noqa: E402
from fusion import cases as fusion_cases  # noqa: E402
from fusion import torch_function  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def polled(value):
    """Waits for every array in `value` by polling is_ready()."""
    for leaf in numax.tree_util.tree_leaves(value):
        while not leaf.is_ready():
            pass


def torch_train_step(prepare=lambda loss: loss, learning_rate=1e-2):
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        return ((torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()

    prepared = prepare(loss)

    def step(params, x, y):
        leaves = [p.detach().requires_grad_() for pair in params for p in pair]
        value = prepared([leaves[:2], leaves[2:]], x, y)
        grads = torch.autograd.grad(value, leaves)
        return value.detach(), [p.detach() - learning_rate * g for p, g in zip(leaves, grads)]

    return step


def train_step_sides(batch, sizes):
    host_params, host_x, host_y = train_step_setup(np.random.default_rng(0), batch, sizes)
    numax_step = numax.jit(make_train_step(xnp, numax.value_and_grad))
    jax_step = jax.jit(make_train_step(jnp, jax.value_and_grad))
    numax_args = ([(xnp.asarray(w), xnp.asarray(b)) for w, b in host_params], xnp.asarray(host_x),
                  xnp.asarray(host_y))
    jax_args = ([(jnp.asarray(w), jnp.asarray(b)) for w, b in host_params], jnp.asarray(host_x), jnp.asarray(host_y))
    cuda = lambda v: torch.from_numpy(np.asarray(v, np.float32)).cuda()  # noqa: E731 (numpy 2 made w float64)
    torch_args = ([(cuda(w), cuda(b)) for w, b in host_params], cuda(host_x), cuda(host_y))
    return {"numax": (lambda: numax_step(*numax_args), numax.block_until_ready),
            "numax, polled": (lambda: numax_step(*numax_args), polled),
            "jax": (lambda: jax_step(*jax_args), jax.block_until_ready),
            "torch eager": (lambda: torch_train_step()(*torch_args), synchronize),
            "torch.compile": (_bound(torch_train_step(torch.compile), torch_args), synchronize),
            "torch.compile reduce-overhead": (
                _bound(torch_train_step(lambda f: torch.compile(f, mode="reduce-overhead")), torch_args),
                synchronize)}


def _bound(fn, args):
    return lambda: fn(*args)


def synchronize(value):
    torch.cuda.synchronize()


def add_sides():
    host = np.linspace(-1, 1, 1024, dtype=np.float32)
    numax_add, jax_add = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
    x, j, t = numax.device_put(host), jax.device_put(host), torch.from_numpy(host).cuda()
    torch_add = torch.compile(lambda a, b: a + b)
    graphed = torch.compile(lambda a, b: a + b, mode="reduce-overhead")
    return {"numax": (lambda: numax_add(x, x), numax.block_until_ready),
            "numax, polled": (lambda: numax_add(x, x), polled),
            "jax": (lambda: jax_add(j, j), jax.block_until_ready),
            "torch eager": (lambda: t + t, synchronize),
            "torch.compile": (lambda: torch_add(t, t), synchronize),
            "torch.compile reduce-overhead": (lambda: graphed(t, t), synchronize)}


def layernorm_linear_sides():
    (case,) = [c for c in fusion_cases(quick=False) if c.key == "e"]
    inputs = case.make_inputs(np.random.default_rng(0))
    numax_fn, jax_fn = numax.jit(case.numax_fn), jax.jit(case.jax_fn)
    numax_args = [numax.device_put(v) for v in inputs]
    jax_args = [jax.device_put(v) for v in inputs]
    torch_args = [torch.from_numpy(v).cuda() for v in inputs]
    eager = torch_function(case.torch_fn)
    compiled = torch.compile(torch_function(case.torch_fn))
    graphed = torch.compile(torch_function(case.torch_fn), mode="reduce-overhead")
    return {"numax": (lambda: numax_fn(*numax_args), numax.block_until_ready),
            "numax, polled": (lambda: numax_fn(*numax_args), polled),
            "jax": (lambda: jax_fn(*jax_args), jax.block_until_ready),
            "torch eager": (lambda: eager(*torch_args), synchronize),
            "torch.compile": (lambda: compiled(*torch_args), synchronize),
            "torch.compile reduce-overhead": (lambda: graphed(*torch_args), synchronize)}


def measure(sides, repeats, inner):
    """{side: (dispatch us, call + wait us)}: medians over `repeats` rounds of `inner` calls, in rotating order."""
    for call, wait in sides.values():
        for _ in range(3):  # compile, and torch's graphs recorded (reduce-overhead records on its third call)
            wait(call())
    dispatch = {name: [] for name in sides}
    waited = {name: [] for name in sides}
    items = list(sides.items())
    for round_ in range(repeats):
        for name, (call, wait) in rotated(items, round_):
            spent = 0.0
            for _ in range(inner):
                start = time.perf_counter()
                out = call()
                spent += time.perf_counter() - start
                wait(out)
            dispatch[name].append(spent / inner * 1e6)
            start = time.perf_counter()
            for _ in range(inner):
                wait(call())
            waited[name].append((time.perf_counter() - start) / inner * 1e6)
    return {name: (statistics.median(dispatch[name]), statistics.median(waited[name])) for name in sides}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    repeats, inner = (5, 10) if args.quick else (15, 40)
    flags = os.environ.get("XLA_FLAGS", "")
    print(f"# per-call latency on {torch.cuda.get_device_name()}, jax {jax.__version__}, torch {torch.__version__}, "
          f"XLA_FLAGS={flags!r}")
    results = {}
    for title, make in (("1024-element add", add_sides),
                        ("MLP train step, batch 32, 64 -> 128 -> 10", lambda: train_step_sides(32, (64, 128, 10))),
                        ("MLP train step, batch 1024, 1024 -> 1024 -> 1024",
                         lambda: train_step_sides(1024, (1024, 1024, 1024))),
                        ("(e) layernorm + linear + GELU + residual f16 32x512x512", layernorm_linear_sides)):
        measured = measure(make(), repeats, inner)
        results[title] = measured
        print(f"\n## {title}\n| side | dispatch | call + wait | / jax |\n| --- | --- | --- | --- |")
        for name, (dispatched, waited) in measured.items():
            print(f"| {name} | {dispatched:.1f} us | {waited:.1f} us | {waited / measured['jax'][1]:.2f}x |")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(dict(xla_flags=flags, results=results), file, indent=1)


if __name__ == "__main__":
    main()
