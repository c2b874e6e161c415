"""Dispatch benchmark: numax against jax, side by side in one process (issue 16: host overhead).

Measures (medians of interleaved rounds of many calls): the per-call cost of a tiny jitted function
and of one taking a pytree of 17 arrays; the single-call latency (call + `block_until_ready`) of a
jitted MLP training step (value_and_grad + SGD update: 6 inputs, 5 outputs); eager `x + y`,
`sin(x)` and a small `x @ y`; `block_until_ready` on an array that is ready; readback
(`np.asarray`) of a fresh small and a fresh 16 MB result; and the first call (trace + compile) and steady state of a
jitted MLP forward pass. Prints ratios numax / jax (below 1 means numax is faster).

    python bench/dispatch.py [--quick] [--json PATH]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def median_time(fn, repeats, inner=1):
    """Median wall time of `inner` calls of fn, over `repeats` rounds, per call, in microseconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples) * 1e6


def rotated(items, round_):
    """`items` starting at position `round_` (mod their number): no side is always timed first, right after the
    last side of the round before (on the GPU, the first in each round was 5-10 us slower per call)."""
    shift = round_ % len(items)
    return items[shift:] + items[:shift]


def interleaved(pairs, repeats, inner):
    """Times several (name, fn) alternately, in a rotating order, so that machine noise hits them alike:
    {name: median microseconds per call}."""
    samples = {name: [] for name, _ in pairs}
    for round_ in range(repeats):
        for name, fn in rotated(pairs, round_):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def tiny_jit(repeats, inner):
    add_numax = numax.jit(lambda a, b: a + b)
    add_jax = jax.jit(lambda a, b: a + b)
    xa, xb = xnp.ones(3), xnp.ones(3)
    ja, jb = jnp.ones(3), jnp.ones(3)
    add_numax(xa, xb).block_until_ready()
    add_jax(ja, jb).block_until_ready()
    return interleaved([("numax", lambda: add_numax(xa, xb)), ("jax", lambda: add_jax(ja, jb))], repeats, inner)


def many_argument_jit(repeats, inner, pairs=8):
    """A jitted call taking a list of `pairs` (w, b) tuples and x: 17 small arrays, the per-argument cost."""
    def chain(params, x):
        for w, b in params:
            x = x * w + b
        return x

    numax_chain, jax_chain = numax.jit(chain), jax.jit(chain)
    xs = [(xnp.ones(3), xnp.ones(3)) for _ in range(pairs)], xnp.ones(3)
    js = [(jnp.ones(3), jnp.ones(3)) for _ in range(pairs)], jnp.ones(3)
    numax_chain(*xs).block_until_ready()
    jax_chain(*js).block_until_ready()
    return interleaved([("numax", lambda: numax_chain(*xs)), ("jax", lambda: jax_chain(*js))], repeats, inner)


def interleaved_on_fresh(pairs, repeats, inner):
    """Like `interleaved`, for (name, make, use) triples: each round first makes `inner` fresh inputs with
    make() (untimed), then times use(input) on each of them."""
    samples = {name: [] for name, _, _ in pairs}
    for round_ in range(repeats):
        for name, make, use in rotated(pairs, round_):
            inputs = [make() for _ in range(inner)]
            start = time.perf_counter()
            for value in inputs:
                use(value)
            samples[name].append((time.perf_counter() - start) / inner * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def eager_ops(repeats, inner):
    """Eager `x + y` and `sin(x)` of 3 elements and an 8x8 `x @ y`: {op: {side: us}}."""
    host = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    xa, xb, xm = xnp.ones(3), xnp.ones(3), xnp.asarray(host)
    ja, jb, jm = jnp.ones(3), jnp.ones(3), jnp.asarray(host)
    cases = {
        "x + y": (lambda: xa + xb, lambda: ja + jb),
        "sin(x)": (lambda: xnp.sin(xa), lambda: jnp.sin(ja)),
        "x @ y (8x8)": (lambda: xm @ xm, lambda: jm @ jm),
    }
    results = {}
    for op, (numax_op, jax_op) in cases.items():
        numax_op().block_until_ready()
        jax_op().block_until_ready()
        results[op] = interleaved([("numax", numax_op), ("jax", jax_op)], repeats, inner)
    return results


def block_until_ready_of_ready(repeats, inner):
    """Waiting again for an array already waited for: {side: us}."""
    xa, ja = xnp.ones(3).block_until_ready(), jnp.ones(3).block_until_ready()
    return interleaved([("numax", xa.block_until_ready), ("jax", ja.block_until_ready)], repeats, inner)


def first_wait_of_ready(repeats, inner):
    """The first block_until_ready of a fresh result that is already computed (seen by polling is_ready)."""
    add_numax = numax.jit(lambda a, b: a + b)
    add_jax = jax.jit(lambda a, b: a + b)
    xa, ja = xnp.ones(3), jnp.ones(3)

    def computed(array):
        while not array.is_ready():
            pass
        return array

    return interleaved_on_fresh([("numax", lambda: computed(add_numax(xa, xa)), lambda a: a.block_until_ready()),
                                 ("jax", lambda: computed(add_jax(ja, ja)), lambda a: a.block_until_ready())],
                                repeats, inner)


def readback(repeats, inner, size=3):
    """`np.asarray` of a fresh (computed, ready, never read) float32 result of `size` elements."""
    add_numax = numax.jit(lambda a, b: a + b)
    add_jax = jax.jit(lambda a, b: a + b)
    xa, ja = xnp.ones(size), jnp.ones(size)
    np.testing.assert_array_equal(np.asarray(add_numax(xa, xa)), np.asarray(add_jax(ja, ja)))
    return interleaved_on_fresh([("numax", lambda: add_numax(xa, xa).block_until_ready(), np.asarray),
                                 ("jax", lambda: add_jax(ja, ja).block_until_ready(), np.asarray)],
                                repeats, inner)


def train_step_setup(rng, batch, sizes):
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    y = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    return params, x, y


def make_train_step(np_module, value_and_grad, learning_rate=1e-2):
    """An MLP step written once for both libraries: (params, x, y) -> (loss, new params)."""
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        hidden = np_module.tanh(x @ w1 + b1)
        return np_module.mean((hidden @ w2 + b2 - y) ** 2)

    def step(params, x, y):
        value, grads = value_and_grad(loss)(params, x, y)
        return value, [(w - learning_rate * gw, b - learning_rate * gb) for (w, b), (gw, gb) in zip(params, grads)]

    return step


def train_step_latency(repeats, inner, batch=32, sizes=(64, 128, 10)):
    """One call of a jitted MLP training step (6 inputs: 2 layers' weights and biases, x, y; 5 outputs: the
    loss and the new parameters) waited for with `block_until_ready`: the latency of a step."""
    host_params, host_x, host_y = train_step_setup(np.random.default_rng(0), batch, sizes)
    numax_step = numax.jit(make_train_step(xnp, numax.value_and_grad))
    jax_step = jax.jit(make_train_step(jnp, jax.value_and_grad))
    numax_args = ([(xnp.asarray(w), xnp.asarray(b)) for w, b in host_params], xnp.asarray(host_x),
                  xnp.asarray(host_y))
    jax_args = ([(jnp.asarray(w), jnp.asarray(b)) for w, b in host_params], jnp.asarray(host_x),
                jnp.asarray(host_y))
    numax_loss, numax_params = numax_step(*numax_args)
    jax_loss, jax_params = jax_step(*jax_args)
    np.testing.assert_allclose(np.asarray(numax_loss), np.asarray(jax_loss), rtol=1e-5)
    for numax_leaf, jax_leaf in zip(numax.tree.leaves(numax_params), jax.tree.leaves(jax_params)):
        np.testing.assert_allclose(np.asarray(numax_leaf), np.asarray(jax_leaf), rtol=1e-5, atol=1e-6)

    def numax_call():
        loss, params = numax_step(*numax_args)
        numax.block_until_ready((loss, params))

    def jax_call():
        loss, params = jax_step(*jax_args)
        jax.block_until_ready((loss, params))

    return interleaved([("numax", numax_call), ("jax", jax_call)], repeats, inner)


def mlp_params(rng, sizes):
    return [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]


def make_forward(np_module):
    def forward(params, x):
        for w, b in params[:-1]:
            x = np_module.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    return forward


def mlp(repeats, first_call_repeats):
    rng = np.random.default_rng(0)
    sizes = [256, 512, 512, 512, 10]
    host_params = mlp_params(rng, sizes)
    host_x = rng.normal(size=(128, sizes[0])).astype(np.float32)
    numax_params = [(xnp.asarray(w), xnp.asarray(b)) for w, b in host_params]
    jax_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in host_params]
    numax_x, jax_x = xnp.asarray(host_x), jnp.asarray(host_x)

    first = {"numax": [], "jax": []}
    for _ in range(first_call_repeats):
        # A new function object each time: nothing is cached, trace and compile are both timed.
        for name, jit, params, x, np_module in (("numax", numax.jit, numax_params, numax_x, xnp),
                                                 ("jax", jax.jit, jax_params, jax_x, jnp)):
            forward = jit(make_forward(np_module))
            start = time.perf_counter()
            forward(params, x).block_until_ready()
            first[name].append((time.perf_counter() - start) * 1e3)
    numax_forward = numax.jit(make_forward(xnp))
    jax_forward = jax.jit(make_forward(jnp))
    np.testing.assert_allclose(np.asarray(numax_forward(numax_params, numax_x)),
                               np.asarray(jax_forward(jax_params, jax_x)), rtol=2e-4, atol=2e-4)
    steady = interleaved([("numax", lambda: numax_forward(numax_params, numax_x).block_until_ready()),
                          ("jax", lambda: jax_forward(jax_params, jax_x).block_until_ready())], repeats, 20)
    return {name: statistics.median(values) for name, values in first.items()}, steady


def report(title, numax_value, jax_value, unit, target, rows=None):
    """Prints one table row; appends it to `rows` (for --json) when given."""
    ratio = numax_value / jax_value
    print(f"| {title} | {numax_value:.1f} {unit} | {jax_value:.1f} {unit} | {ratio:.2f}x | {target} |")
    if rows is not None:
        rows.append(dict(measurement=title, numax=numax_value, jax=jax_value, unit=unit, ratio=ratio, target=target))
    return ratio


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows (and the set-up) to PATH as JSON")
    args = parser.parse_args()
    repeats, inner, first_repeats = (15, 200, 3) if args.quick else (41, 1000, 7)
    setup = dict(numax=numax.__version__, jax=jax.__version__, backend=numax.default_backend(),
                 processor=platform.processor() or platform.machine(), python=sys.version.split()[0],
                 quick=args.quick)
    print(f"# numax {setup['numax']} vs jax {setup['jax']} on {setup['backend']} ({setup['processor']}, "
          f"Python {setup['python']})")
    print("| measurement | numax | jax | numax / jax | target |")
    print("| --- | --- | --- | --- | --- |")
    rows = []
    tiny = tiny_jit(repeats, inner)
    report("tiny jit call, 3-element add", tiny["numax"], tiny["jax"], "us", "<= 1x", rows)
    many = many_argument_jit(repeats, inner)
    report("jit call with 17 array arguments (a pytree)", many["numax"], many["jax"], "us", "<= 1x", rows)
    step = train_step_latency(repeats, max(inner // 5, 20))
    report("MLP train step call + block_until_ready (6 in, 5 out)", step["numax"], step["jax"], "us", "<= 1x",
           rows)
    for op, times in eager_ops(repeats, inner).items():
        report(f"eager `{op}`", times["numax"], times["jax"], "us", "<= 1x", rows)
    ready = block_until_ready_of_ready(repeats, inner)
    report("block_until_ready of a ready array, again", ready["numax"], ready["jax"], "us", "<= 1x", rows)
    first_wait = first_wait_of_ready(repeats, max(inner // 5, 20))
    report("block_until_ready of a fresh, computed result", first_wait["numax"], first_wait["jax"], "us", "<= 1x",
           rows)
    read = readback(repeats, max(inner // 5, 20))
    report("np.asarray of a fresh 3-element result", read["numax"], read["jax"], "us", "<= 1x", rows)
    read = readback(repeats, 5, size=1 << 22)
    report("np.asarray of a fresh 4M-element float32 result (16 MB)", read["numax"], read["jax"], "us", "<= 1x",
           rows)
    first, steady = mlp(repeats, first_repeats)
    report("MLP forward, first call (trace + compile)", first["numax"], first["jax"], "ms", "<= 1.5x", rows)
    report("MLP forward, steady state (128x256 -> 3x512 -> 10)", steady["numax"], steady["jax"], "us", "<= 1.1x",
           rows)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(dict(setup=setup, rows=rows), file, indent=1)


if __name__ == "__main__":
    main()
