"""Eager per-op cost: numax against jax, side by side in one process (issue 31).

Each row is one eager op path on small arrays (host cost dominates): a Python-scalar operand, two arrays,
broadcasting, mixed dtypes, reductions, indexing, `.at[]` updates, a unary ufunc, array creation. Each op is
timed with `block_until_ready` on its result, numax and jax alternately in rotating order, after a warm-up;
the table gives the microseconds per op, the minimum over many rounds (`--median`: their median; the minimum is
the steadier on a shared machine) and the ratio numax / jax (below 1: numax is faster). `rows()` returns the
table for bench/scaling.py.

    python bench/eager_ops.py [--quick] [--median] [--only NAME_SUBSTRING]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def _cases(lib, np_):
    """{row name: zero-argument op} for one library (`lib` is numax or jax, `np_` its numpy module)."""
    rng = np.random.default_rng(0)
    host = rng.normal(size=16).astype(np.float32)
    x, y = np_.asarray(host), np_.asarray(host[::-1].copy())
    m = np_.asarray(rng.normal(size=(4, 16)).astype(np.float32))
    i = np_.asarray(np.arange(16, dtype=np.int32))
    h = np_.asarray(host.astype(np.float16))
    idx = np_.asarray(np.array([0, 3, 5, 7], np.int32))
    return {
        "x * 1.0001 + 0.1 (2 ops)": lambda: x * 1.0001 + 0.1,
        "x * 2.0": lambda: x * 2.0,
        "2.0 - x": lambda: 2.0 - x,
        "x / 3": lambda: x / 3,
        "x > 0.5": lambda: x > 0.5,
        "x ** 2": lambda: x ** 2,
        "x // 2.0": lambda: x // 2.0,
        "x % 2.0": lambda: x % 2.0,
        "i + 1 (int32)": lambda: i + 1,
        "x + np.float32(1)": lambda: x + np.float32(1),
        "x + y": lambda: x + y,
        "x * y": lambda: x * y,
        "m + x (broadcast)": lambda: m + x,
        "x + i (f32 + i32)": lambda: x + i,
        "x + h (f32 + f16)": lambda: x + h,
        "np_.maximum(x, 0.0)": lambda: np_.maximum(x, 0.0),
        "np_.where(x > 0, x, 0.0)": lambda: np_.where(x > 0, x, 0.0),
        "np_.sin(x)": lambda: np_.sin(x),
        "-x": lambda: -x,
        "np_.abs(x)": lambda: np_.abs(x),
        "x.sum()": lambda: x.sum(),
        "np_.mean(m, axis=0)": lambda: np_.mean(m, axis=0),
        "m.max(axis=1)": lambda: m.max(axis=1),
        "x.var()": lambda: x.var(),
        "np_.argmax(x)": lambda: np_.argmax(x),
        "np_.clip(x, 0.0, 1.0)": lambda: np_.clip(x, 0.0, 1.0),
        "x ** 2.5": lambda: x ** 2.5,
        "i & 1": lambda: i & 1,
        "np_.exp(i)": lambda: np_.exp(i),
        "x[3]": lambda: x[3],
        "x[1:5]": lambda: x[1:5],
        "m[1]": lambda: m[1],
        "x[idx]": lambda: x[idx],
        "x.at[3].set(0.0)": lambda: x.at[3].set(0.0),
        "x.at[idx].add(1.0)": lambda: x.at[idx].add(1.0),
        "x.astype(float16)": lambda: x.astype(np.float16),
        "x.reshape(4, 4)": lambda: x.reshape(4, 4),
        "np_.asarray(host)": lambda: np_.asarray(host),
        "np_.zeros(16)": lambda: np_.zeros(16),
        "np_.arange(16)": lambda: np_.arange(16),
    }


def _ready(value):
    return value.block_until_ready()


def _time(fn, inner):
    start = time.perf_counter()
    for _ in range(inner):
        _ready(fn())
    return (time.perf_counter() - start) / inner * 1e6


def rows(repeats=41, inner=100, only=None, statistic=min):
    """[(name, numax us/op, jax us/op, ratio)]: `statistic` (min or statistics.median) of `repeats` interleaved
    rounds of `inner` ops each."""
    numax_cases, jax_cases = _cases(numax, xnp), _cases(jax, jnp)
    table = []
    for name in numax_cases:
        if only and only not in name:
            continue
        pair = [numax_cases[name], jax_cases[name]]
        for fn in pair:  # warm-up: compile, fill every cache
            for _ in range(20):
                _ready(fn())
        samples = ([], [])
        for round_ in range(repeats):
            for side in ((0, 1) if round_ % 2 else (1, 0)):
                samples[side].append(_time(pair[side], inner))
        numax_us, jax_us = statistic(samples[0]), statistic(samples[1])
        table.append((name.replace("np_", "jnp"), numax_us, jax_us, numax_us / jax_us))
    return table


def format_table(table):
    lines = [f"{'eager op (float32[16], m: float32[4,16])':44s} {'numax us':>9s} {'jax us':>8s} {'ratio':>6s}"]
    lines += [f"{name:44s} {mine:9.2f} {theirs:8.2f} {ratio:6.2f}" for name, mine, theirs, ratio in table]
    ratios = [row[3] for row in table]
    geomean = float(np.exp(np.mean(np.log(ratios))))
    lines.append(f"{'geometric mean of ratios':44s} {'':9s} {'':8s} {geomean:6.2f}   (max {max(ratios):.2f})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a rough table)")
    parser.add_argument("--median", action="store_true", help="the median of the rounds instead of their minimum")
    parser.add_argument("--only", help="rows whose name contains this")
    args = parser.parse_args()
    repeats, inner = (7, 100) if args.quick else (41, 100)
    print(f"jax {jax.__version__}, numax {numax.__version__}, {jax.devices()[0].platform}")
    print(format_table(rows(repeats, inner, args.only, statistics.median if args.median else min)))


if __name__ == "__main__":
    main()
