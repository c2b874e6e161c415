"""Host cost as programs grow: trace, lower, StableHLO text and first call of N unrolled transformer blocks,
numax against jax in one process, with the fitted growth exponents; then the eager per-op costs.

The program is N pre-norm transformer blocks (layer norm, multi-head attention with a softmax, layer norm, a
GELU MLP, residuals; d_model 256) unrolled in Python, written once in jax-style code and run by both
libraries, forward (the loss) and `value_and_grad` of it. For each N and library, with a fresh function each
time (no trace or compile cache of either library can answer), it times
- trace: `jit(f).trace(*args)` (the program, jax's jaxpr),
- lower: `.lower()` of that (jax builds its MLIR module here; numax only records what to lower),
- text: `.as_text()` (numax writes its StableHLO here; jax prints its module),
- lower+text: the two together, which compare like with like (one library lowers in `.lower()`, the other in
  `.as_text()`),
- call: the first call of another fresh `jit(f)`: trace + lower + compile + run, to the result being ready.
Libraries alternate within each repeat; the minimum over repeats is kept (fewer repeats for large N). The
exponent of a phase is the slope of log(time) against log(N) over N >= 16; as fixed costs flatten it, the time
each block adds from N = 64 on is shown too. First calls are timed up to
`--call-max-n` blocks (16): XLA's compile, the same for both libraries' modules, dominates them and grows
faster than linearly (on a 2-core CPU, grad: 4 blocks ~5 s, 8 ~15 s, 16 ~80 s, 32 over 9 minutes).

    python bench/scaling.py [--quick] [--max-n N] [--modes fwd,grad] [--call-max-n N] [--json PATH] [--plot PATH.svg]
"""

import argparse
import gc
import json
import os
import platform
import sys
import time

import numpy as np

SIZES = {"batch": 2, "seq": 16, "d_model": 256, "heads": 4, "d_mlp": 1024}
ALL_N = (1, 2, 4, 8, 16, 32, 64, 96, 128)
PHASES = ("trace", "lower", "text", "lower+text", "total", "call")  # total = trace + lower + text
LIBRARIES = ("numax", "jax")


def load(library):
    """(the library, its numpy, its nn) for "numax" or "jax"."""
    if library == "jax":
        import jax
        import jax.nn
        import jax.numpy
        return jax, jax.numpy, jax.nn
    import numax
    import numax.nn
    import numax.numpy
    return numax, numax.numpy, numax.nn


def model(lib, xnp, nn, grad):
    """A fresh loss (or value_and_grad of it) over the blocks it is given, unrolled: a new function object each
    call."""
    heads = SIZES["heads"]

    def layer_norm(x, scale, bias):
        centered = x - xnp.mean(x, axis=-1, keepdims=True)
        return centered / xnp.sqrt(xnp.var(x, axis=-1, keepdims=True) + 1e-5) * scale + bias

    def attention(p, x):
        batch, seq, _ = x.shape
        # (batch, heads, seq, head size) each
        q, k, v = (xnp.moveaxis(xnp.reshape(x @ p[name], (batch, seq, heads, -1)), 2, 1) for name in ("wq", "wk", "wv"))
        weights = nn.softmax(q @ xnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=-1)
        return xnp.reshape(xnp.moveaxis(weights @ v, 1, 2), x.shape) @ p["wo"]

    def block(p, x):
        x = x + attention(p, layer_norm(x, p["ln1_scale"], p["ln1_bias"]))
        hidden = nn.gelu(layer_norm(x, p["ln2_scale"], p["ln2_bias"]) @ p["w1"] + p["b1"])
        return x + hidden @ p["w2"] + p["b2"]

    def loss(params, x):
        for p in params:
            x = block(p, x)
        return xnp.mean(x ** 2)

    return lib.value_and_grad(loss) if grad else loss


def inputs(layers):
    """Parameters (a list of per-block dicts) and a batch, as numpy arrays."""
    rng = np.random.default_rng(0)
    d, m = SIZES["d_model"], SIZES["d_mlp"]

    def normal(*shape):
        return (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32)

    def block():
        return {"wq": normal(d, d), "wk": normal(d, d), "wv": normal(d, d), "wo": normal(d, d),
                "ln1_scale": np.ones(d, np.float32), "ln1_bias": np.zeros(d, np.float32),
                "ln2_scale": np.ones(d, np.float32), "ln2_bias": np.zeros(d, np.float32),
                "w1": normal(d, m), "b1": np.zeros(m, np.float32), "w2": normal(m, d), "b2": np.zeros(d, np.float32)}

    params = [block() for _ in range(layers)]
    return params, rng.normal(size=(SIZES["batch"], SIZES["seq"], d)).astype(np.float32)


def measure(library, grad, args, call):
    """{phase: seconds} of one fresh function of the blocks in `args`."""
    lib, xnp, nn = load(library)
    gc.collect()
    start = time.perf_counter()
    traced = lib.jit(model(lib, xnp, nn, grad)).trace(*args)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    text = lowered.as_text()
    done = time.perf_counter()
    times = {"trace": traced_at - start, "lower": lowered_at - traced_at, "text": done - lowered_at,
             "lower+text": done - traced_at, "total": done - start}
    del traced, lowered, text
    if call:
        function = lib.jit(model(lib, xnp, nn, grad))
        gc.collect()
        start = time.perf_counter()
        lib.block_until_ready(function(*args))
        times["call"] = time.perf_counter() - start
    return times


def repeats(layers, quick):
    if layers <= 8:
        return 2 if quick else 5
    if layers <= 32:
        return 2 if quick else 3
    return 1 if quick or layers > 64 else 2


def exponent(ns, seconds):
    """The slope of log(seconds) against log(N) over N >= 16 (None with fewer than two such points)."""
    points = [(n, s) for n, s in zip(ns, seconds) if n >= 16 and s is not None and s > 0]
    if len(points) < 2:
        return None
    return float(np.polyfit(np.log([n for n, _ in points]), np.log([s for _, s in points]), 1)[0])


def run(ns, modes, call_max_n, quick):
    """results[mode][library][phase] = [seconds per N] (None where not measured)."""
    params, x = inputs(max(ns))
    results = {mode: {library: {phase: [] for phase in PHASES} for library in LIBRARIES} for mode in modes}
    for library in LIBRARIES:  # warm up: imports, first-use caches of either library
        measure(library, True, (params[:1], x), call_max_n > 0)
    for layers in ns:
        for mode in modes:
            best = {library: {} for library in LIBRARIES}
            for rep in range(repeats(layers, quick)):
                order = LIBRARIES if rep % 2 == 0 else LIBRARIES[::-1]
                # XLA's compile dominates a first call: made twice per N, once from 8 blocks on
                call = layers <= call_max_n and (rep == 0 or (rep == 1 and layers < 8))
                for library in order:  # (only the blocks used: jax's jit would drop unused arguments, numax's not)
                    times = measure(library, mode == "grad", (params[:layers], x), call)
                    for phase, seconds in times.items():
                        best[library][phase] = min(best[library].get(phase, np.inf), seconds)
            for library in LIBRARIES:
                for phase in PHASES:
                    results[mode][library][phase].append(best[library].get(phase))
            row = "  ".join(f"{phase} {1e3 * best['numax'][phase]:.0f}/{1e3 * best['jax'][phase]:.0f} ms"
                            for phase in PHASES if phase in best["numax"])
            print(f"N={layers:3d} {mode:4s} numax/jax: {row}", file=sys.stderr, flush=True)
    return results


def report(ns, results):
    """Markdown tables: per mode, each N's times and ratios, then the exponents."""
    lines = []
    for mode, by_library in results.items():
        phases = [phase for phase in PHASES if any(s is not None for s in by_library["numax"][phase])]
        lines.append(f"\n### {mode}: numax ms / jax ms (numax / jax)\n")
        lines.append("| N | " + " | ".join(phases) + " |")
        lines.append("| --- |" + " --- |" * len(phases))
        for i, layers in enumerate(ns):
            cells = []
            for phase in phases:
                ours, theirs = by_library["numax"][phase][i], by_library["jax"][phase][i]
                cells.append("-" if ours is None else f"{1e3 * ours:.1f} / {1e3 * theirs:.1f} ({ours / theirs:.2f}x)")
            lines.append(f"| {layers} | " + " | ".join(cells) + " |")
        cells = []
        for phase in phases:
            ours, theirs = (exponent(ns, by_library[library][phase]) for library in LIBRARIES)
            cells.append("-" if ours is None else f"{ours:.2f} / {theirs:.2f}")
        lines.append("| exponent (N >= 16) | " + " | ".join(cells) + " |")
        if 64 in ns and ns[-1] > 64:  # what each block beyond 64 adds: the growth, free of fixed costs
            i, j, cells = ns.index(64), len(ns) - 1, []
            for phase in phases:
                ours, theirs = ((by_library[library][phase][j] - by_library[library][phase][i]) / (ns[j] - ns[i])
                                if by_library[library][phase][j] is not None else None for library in LIBRARIES)
                cells.append("-" if ours is None else f"{1e3 * ours:.2f} / {1e3 * theirs:.2f} ({ours / theirs:.2f}x)")
            lines.append(f"| ms per block, N 64 -> {ns[-1]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(ns, results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 5), squeeze=False)
    colors = dict(zip(PHASES, ("tab:blue", "tab:orange", "tab:green", "tab:olive", "tab:red", "tab:purple")))
    for ax, (mode, by_library) in zip(axes[0], results.items()):
        for phase in PHASES:
            for library, style in zip(LIBRARIES, ("-", "--")):
                points = [(n, s) for n, s in zip(ns, by_library[library][phase]) if s is not None]
                if not points:
                    continue
                ax.plot(*zip(*points), style, marker="o", markersize=3, color=colors[phase], label=f"{library} {phase}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("unrolled transformer blocks N")
        ax.set_ylabel("seconds")
        ax.set_title(f"{mode} (solid numax, dashed jax)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)


def eager_table():
    """The eager per-op table of bench/eager_ops.py, when that benchmark is present."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        from eager_ops import format_table, rows
    except ImportError:
        return None
    return format_table(rows())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N up to 32, fewer repeats")
    parser.add_argument("--max-n", type=int)
    parser.add_argument("--modes", default="fwd,grad")
    parser.add_argument("--call-max-n", type=int, default=16,
                        help="time first calls up to this N (0: none); XLA's compile of them takes minutes beyond")
    parser.add_argument("--no-eager", action="store_true", help="skip the eager per-op table")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    args = parser.parse_args()
    ns = [n for n in ALL_N if n <= (args.max_n or (32 if args.quick else max(ALL_N)))]
    modes = args.modes.split(",")
    results = run(ns, modes, args.call_max_n, args.quick)
    import jax

    print(f"{args.max_n or max(ns)} transformer blocks max, {SIZES}; jax {jax.__version__}; "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores")
    print(report(ns, results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": SIZES, "n": ns, "results": results,
                       "exponents": {mode: {library: {phase: exponent(ns, seconds) for phase, seconds in phases.items()}
                                            for library, phases in by_library.items()}
                                     for mode, by_library in results.items()}}, f, indent=1)
    if args.plot:
        plot(ns, results, args.plot)
    if not args.no_eager:
        table = eager_table()
        if table is not None:
            print("\n### eager per-op costs (bench/eager_ops.py)\n")
            print(table)


if __name__ == "__main__":
    main()
