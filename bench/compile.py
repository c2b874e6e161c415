"""Compile-lifecycle benchmark: the first call of a transformer-block train step, cold and from a warm
persistent compilation cache, numax against jax.

The step is one pre-norm transformer block (layer norm, multi-head self-attention, layer norm, a GELU MLP,
residuals) with a mean-square loss, `value_and_grad` and an SGD update, jitted. Each measurement runs in a
fresh subprocess, so no in-memory cache helps: "cold" starts from an empty cache directory, "warm" from the
directory a cold run just filled. Timed: the first call, i.e. trace + lower + compile (or load) + run, up to
the result being ready; imports and input creation are not timed. Both libraries use their own cache
directory with `jax_persistent_cache_min_compile_time_secs=0` (every executable is written). Medians over
rounds, numax and jax alternating so that machine noise hits them alike.

    python bench/compile.py [--rounds N]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = {"batch": 8, "seq": 64, "d_model": 128, "heads": 4, "d_mlp": 512}


def train_step_factory(lib, xnp):
    """The jitted train step, written once for either library (`lib` is numax or jax, `xnp` its numpy)."""
    heads = SIZES["heads"]

    def layer_norm(x, scale, bias):
        mean = xnp.mean(x, axis=-1, keepdims=True)
        variance = xnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) / xnp.sqrt(variance + 1e-5) * scale + bias

    def attention(p, x):
        batch, seq, d_model = x.shape
        def split(t):
            return xnp.transpose(xnp.reshape(t, (batch, seq, heads, d_model // heads)), (0, 2, 1, 3))
        q, k, v = (split(x @ p[name]) for name in ("wq", "wk", "wv"))
        scores = q @ xnp.swapaxes(k, -1, -2) / xnp.sqrt(float(d_model // heads))
        scores = scores - xnp.max(scores, axis=-1, keepdims=True)
        weights = xnp.exp(scores)
        weights = weights / xnp.sum(weights, axis=-1, keepdims=True)
        mixed = xnp.reshape(xnp.transpose(weights @ v, (0, 2, 1, 3)), (batch, seq, d_model))
        return mixed @ p["wo"]

    def block(p, x):
        x = x + attention(p, layer_norm(x, p["ln1_scale"], p["ln1_bias"]))
        hidden = layer_norm(x, p["ln2_scale"], p["ln2_bias"]) @ p["w1"] + p["b1"]
        hidden = 0.5 * hidden * (1 + xnp.tanh(0.7978845608 * (hidden + 0.044715 * hidden ** 3)))
        return x + hidden @ p["w2"] + p["b2"]

    def loss(p, x, target):
        return xnp.mean((block(p, x) - target) ** 2)

    def step(p, x, target):
        value, grads = lib.value_and_grad(loss)(p, x, target)
        return value, {name: p[name] - 0.01 * grads[name] for name in p}

    return lib.jit(step)


def inputs():
    """Parameters and a batch as numpy arrays (passed to the jitted step directly: no eager op runs)."""
    import numpy as np
    rng = np.random.default_rng(0)
    d, m = SIZES["d_model"], SIZES["d_mlp"]
    def normal(*shape):
        return (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32)
    params = {"wq": normal(d, d), "wk": normal(d, d), "wv": normal(d, d), "wo": normal(d, d),
              "ln1_scale": np.ones(d, np.float32), "ln1_bias": np.zeros(d, np.float32),
              "ln2_scale": np.ones(d, np.float32), "ln2_bias": np.zeros(d, np.float32),
              "w1": normal(d, m), "b1": np.zeros(m, np.float32), "w2": normal(m, d), "b2": np.zeros(d, np.float32)}
    shape = (SIZES["batch"], SIZES["seq"], d)
    return params, rng.normal(size=shape).astype(np.float32), rng.normal(size=shape).astype(np.float32)


def worker(library, cache_dir):
    """In a fresh process: set up the cache, time the step's first call, print a JSON line."""
    if library == "jax":
        import jax
        import jax.numpy as xnp
        lib = jax
    else:
        import numax as lib
        import numax.numpy as xnp
    lib.config.update("jax_compilation_cache_dir", cache_dir)
    lib.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    lib.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    params, x, target = inputs()
    step = train_step_factory(lib, xnp)
    start = time.perf_counter()
    value, new_params = step(params, x, target)
    lib.block_until_ready((value, new_params))
    seconds = time.perf_counter() - start
    report = {"seconds": seconds, "loss": float(value)}
    if library == "numax":
        from numax.lowering import compile_cache
        report["cache_hits"] = compile_cache.statistics.hits
    print(json.dumps(report))


def first_call(library, cache_dir):
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, __file__, "--worker", library, "--cache", cache_dir],
                            capture_output=True, text=True, env=environment, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", choices=("numax", "jax"))
    parser.add_argument("--cache")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.cache)
        return
    times = {(library, state): [] for library in ("numax", "jax") for state in ("cold", "warm")}
    losses = {}
    for _ in range(args.rounds):
        for library in ("numax", "jax"):
            with tempfile.TemporaryDirectory(prefix=f"compile-bench-{library}-") as cache_dir:
                cold = first_call(library, cache_dir)
                warm = first_call(library, cache_dir)
            if library == "numax" and not warm["cache_hits"]:
                raise SystemExit("numax's warm run loaded nothing from the cache")
            times[library, "cold"].append(cold["seconds"])
            times[library, "warm"].append(warm["seconds"])
            losses[library] = warm["loss"]
    print(f"transformer-block train step {SIZES}, first call, median of {args.rounds} rounds "
          f"(fresh process each); Python {platform.python_version()}, {platform.machine()}")
    print(f"loss: numax {losses['numax']:.6f}, jax {losses['jax']:.6f}")
    print("| first call | numax | jax | numax / jax |")
    print("| --- | --- | --- | --- |")
    for state, label in (("cold", "cold (empty cache)"), ("warm", "warm persistent cache")):
        ours, theirs = (statistics.median(times[library, state]) for library in ("numax", "jax"))
        print(f"| {label} | {1e3 * ours:.1f} ms | {1e3 * theirs:.1f} ms | {ours / theirs:.2f}x |")
    for library in ("numax", "jax"):
        cold, warm = (statistics.median(times[library, state]) for state in ("cold", "warm"))
        print(f"{library}: warm cache saves {100 * (1 - warm / cold):.0f}% of the cold first call")


if __name__ == "__main__":
    main()
