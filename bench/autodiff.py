"""Autodiff benchmark: a training step `jit(value_and_grad(loss))` + SGD update, numax against jax, side
by side in one process, for an MLP and a small transformer block.

Measures the first call of a fresh jitted step (trace + differentiate + compile) and the steady-state
step time (medians of interleaved rounds). Prints ratios numax / jax (below 1 means numax is faster).

    python bench/autodiff.py [--quick]
"""

import argparse
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from dispatch import interleaved, report  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

LIBRARIES = {
    "numax": dict(np=xnp, nn=numax.nn, jit=numax.jit, value_and_grad=numax.value_and_grad, tree_map=numax.tree.map),
    "jax": dict(np=jnp, nn=jax.nn, jit=jax.jit, value_and_grad=jax.value_and_grad, tree_map=jax.tree.map),
}


# --- models, written once against either library ----------------------------------------------------------
def mlp_loss(lib, params, x, labels):
    np_, nn = lib["np"], lib["nn"]
    for w, b in params[:-1]:
        x = np_.tanh(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return -np_.mean(np_.sum(nn.log_softmax(logits) * labels, axis=-1))


def mlp_setup(rng, batch=128, sizes=(256, 512, 512, 10)):
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    labels = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return params, (x, labels)


def layer_norm(np_, x, scale, bias):
    mean = np_.mean(x, axis=-1, keepdims=True)
    var = np_.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np_.sqrt(var + 1e-5) * scale + bias


def transformer_loss(lib, params, x, target, heads=4):
    np_, nn = lib["np"], lib["nn"]
    seq, width = x.shape[-2], x.shape[-1]
    h = layer_norm(np_, x, params["ln1_scale"], params["ln1_bias"])
    q, k, v = (np_.reshape(h @ params[name], (-1, seq, heads, width // heads)) for name in ("wq", "wk", "wv"))
    scores = np_.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(width // heads)
    causal = np_.tril(np_.ones((seq, seq), dtype=bool))
    scores = np_.where(causal, scores, -1e9)
    attended = np_.einsum("bhqk,bkhd->bqhd", nn.softmax(scores, axis=-1), v)
    x = x + np_.reshape(attended, x.shape) @ params["wo"]
    h = layer_norm(np_, x, params["ln2_scale"], params["ln2_bias"])
    x = x + nn.gelu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return np_.mean((x - target) ** 2)


def transformer_setup(rng, batch=8, seq=64, width=128, hidden=512):
    def dense(m, n):
        return rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m)

    params = dict(wq=dense(width, width), wk=dense(width, width), wv=dense(width, width), wo=dense(width, width),
                  w1=dense(width, hidden), b1=np.zeros(hidden, np.float32), w2=dense(hidden, width),
                  b2=np.zeros(width, np.float32), ln1_scale=np.ones(width, np.float32),
                  ln1_bias=np.zeros(width, np.float32), ln2_scale=np.ones(width, np.float32),
                  ln2_bias=np.zeros(width, np.float32))
    x = rng.normal(size=(batch, seq, width)).astype(np.float32)
    target = rng.normal(size=(batch, seq, width)).astype(np.float32)
    return params, (x, target)


def make_step(lib, loss):
    def step(params, data):
        value, grads = lib["value_and_grad"](lambda p: loss(lib, p, *data))(params)
        return lib["tree_map"](lambda p, g: p - 0.01 * g, params, grads), value

    return lib["jit"](step)


def bench_model(name, setup, loss, repeats, first_repeats):
    host_params, host_data = setup(np.random.default_rng(0))
    arrays = {"numax": xnp.asarray, "jax": jnp.asarray}
    params = {lib: jax.tree.map(arrays[lib], host_params) for lib in LIBRARIES}
    data = {lib: tuple(arrays[lib](d) for d in host_data) for lib in LIBRARIES}

    first = {lib: [] for lib in LIBRARIES}
    for _ in range(first_repeats):
        for lib in LIBRARIES:
            step = make_step(LIBRARIES[lib], loss)  # a fresh function: trace, differentiation, compile timed
            start = time.perf_counter()
            jax.block_until_ready(step(params[lib], data[lib])) if lib == "jax" else numax.block_until_ready(
                step(params[lib], data[lib]))
            first[lib].append((time.perf_counter() - start) * 1e3)

    steps = {lib: make_step(LIBRARIES[lib], loss) for lib in LIBRARIES}
    (new_numax, loss_numax), (new_jax, loss_jax) = (steps[lib](params[lib], data[lib]) for lib in LIBRARIES)
    np.testing.assert_allclose(float(loss_numax), float(loss_jax), rtol=1e-4)
    for a, b in zip(jax.tree.leaves(numax.tree.map(np.asarray, new_numax)), jax.tree.leaves(new_jax)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-4)
    steady = interleaved([
        ("numax", lambda: numax.block_until_ready(steps["numax"](params["numax"], data["numax"]))),
        ("jax", lambda: jax.block_until_ready(steps["jax"](params["jax"], data["jax"]))),
    ], repeats, 5)
    compile_ms = {lib: statistics.median(values) for lib, values in first.items()}
    report(f"{name}: first call (trace + grad + compile)", compile_ms["numax"], compile_ms["jax"], "ms", "<= 1.5x")
    report(f"{name}: training step, steady state", steady["numax"], steady["jax"], "us", "<= 1.1x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    repeats, first_repeats = (7, 2) if args.quick else (31, 5)
    print(f"# numax {numax.__version__} vs jax {jax.__version__} on {numax.default_backend()} "
          f"({platform.processor() or platform.machine()}, Python {sys.version.split()[0]})")
    print("| measurement | numax | jax | numax / jax | target |")
    print("| --- | --- | --- | --- | --- |")
    bench_model("MLP 128x256 -> 2x512 -> 10, softmax cross-entropy", mlp_setup, mlp_loss, repeats, first_repeats)
    bench_model("transformer block (8x64x128, 4 heads, MLP 512)", transformer_setup, transformer_loss, repeats,
                first_repeats)


if __name__ == "__main__":
    main()
