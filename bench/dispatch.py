"""Dispatch benchmark: numax against jax, side by side in one process.

Measures (medians of many calls): the per-call cost of a tiny jitted function and of one taking a
pytree of 17 arrays, an eager `x + y`,
and the first call (trace + compile) and steady state of a jitted MLP forward pass. Prints ratios
numax / jax (below 1 means numax is faster).

    python bench/dispatch.py [--quick]
"""

import argparse
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


def interleaved(pairs, repeats, inner):
    """Times several (name, fn) alternately so that machine noise hits them alike."""
    samples = {name: [] for name, _ in pairs}
    for _ in range(repeats):
        for name, fn in pairs:
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


def eager_add(repeats, inner):
    xa, xb = xnp.ones(3), xnp.ones(3)
    ja, jb = jnp.ones(3), jnp.ones(3)
    (xa + xb).block_until_ready()
    (ja + jb).block_until_ready()
    return interleaved([("numax", lambda: xa + xb), ("jax", lambda: ja + jb)], repeats, inner)


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


def report(title, numax_value, jax_value, unit, target):
    ratio = numax_value / jax_value
    print(f"| {title} | {numax_value:.1f} {unit} | {jax_value:.1f} {unit} | {ratio:.2f}x | {target} |")
    return ratio


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    repeats, inner, first_repeats = (15, 200, 3) if args.quick else (41, 1000, 7)
    print(f"# numax {numax.__version__} vs jax {jax.__version__} on {numax.default_backend()} "
          f"({platform.processor() or platform.machine()}, Python {sys.version.split()[0]})")
    print("| measurement | numax | jax | numax / jax | target |")
    print("| --- | --- | --- | --- | --- |")
    tiny = tiny_jit(repeats, inner)
    report("tiny jit call, 3-element add", tiny["numax"], tiny["jax"], "us", "<= 2x")
    many = many_argument_jit(repeats, inner)
    report("jit call with 17 array arguments (a pytree)", many["numax"], many["jax"], "us", "<= 2x")
    eager = eager_add(repeats, inner)
    report("eager `x + y`, 3 elements", eager["numax"], eager["jax"], "us", "<= 1x")
    first, steady = mlp(repeats, first_repeats)
    report("MLP forward, first call (trace + compile)", first["numax"], first["jax"], "ms", "<= 1.5x")
    report("MLP forward, steady state (128x256 -> 3x512 -> 10)", steady["numax"], steady["jax"], "us", "<= 1.1x")


if __name__ == "__main__":
    main()
