"""vmap benchmark: per-example gradients of an MLP loss for a batch of 256, three ways, in one process:
numax `jit(vmap(grad(loss), in_axes=(None, 0, 0)))`, a Python loop of numax's jitted per-example grads,
and jax's `jit(vmap(grad(...)))`. Prints times and the ratios numax/jax and loop/numax.

    python bench/vmap.py [--quick]
"""

import argparse
import os
import platform
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


def make_loss(np_):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_.tanh(h @ w + b)
        w, b = params[-1]
        return np_.sum((h @ w + b - y) ** 2)

    return loss


def setup(rng, batch=256, sizes=(64, 128, 128, 10)):
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    y = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    return params, x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    repeats = 5 if args.quick else 21
    print(f"# numax {numax.__version__} vs jax {jax.__version__} on {numax.default_backend()} "
          f"({platform.processor() or platform.machine()}, Python {sys.version.split()[0]})")
    print("| measurement | numax | reference | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    for sizes in ((16, 32, 32, 4), (64, 128, 128, 10)):
        compare(sizes, repeats)


def compare(sizes, repeats):
    params, x, y = setup(np.random.default_rng(0), sizes=sizes)
    name = "-".join(map(str, sizes))
    n_params = [(xnp.asarray(w), xnp.asarray(b)) for w, b in params]
    j_params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
    nx, ny, jx, jy = xnp.asarray(x), xnp.asarray(y), jnp.asarray(x), jnp.asarray(y)

    numax_vmapped = numax.jit(numax.vmap(numax.grad(make_loss(xnp)), in_axes=(None, 0, 0)))
    jax_vmapped = jax.jit(jax.vmap(jax.grad(make_loss(jnp)), in_axes=(None, 0, 0)))
    numax_single = numax.jit(numax.grad(make_loss(xnp)))

    def numax_loop():
        grads = [numax_single(n_params, nx[i], ny[i]) for i in range(x.shape[0])]
        return numax.tree.map(lambda *g: xnp.stack(g), *grads)

    ours, theirs, looped = numax_vmapped(n_params, nx, ny), jax_vmapped(j_params, jx, jy), numax_loop()
    for a, b, c in zip(numax.tree.leaves(ours), jax.tree.leaves(theirs), numax.tree.leaves(looped)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=2e-4, atol=2e-5)

    times = interleaved([
        ("numax vmap", lambda: numax.block_until_ready(numax_vmapped(n_params, nx, ny))),
        ("jax vmap", lambda: jax.block_until_ready(jax_vmapped(j_params, jx, jy))),
    ], repeats, 10)
    start = time.perf_counter()
    for _ in range(max(2, repeats // 4)):
        numax.block_until_ready(numax_loop())
    loop_us = (time.perf_counter() - start) / max(2, repeats // 4) * 1e6
    report(f"per-example grads, batch 256, MLP {name}: numax vmap vs jax vmap", times["numax vmap"],
           times["jax vmap"], "us", "<= 1.1x")
    ratio = loop_us / times["numax vmap"]
    print(f"| MLP {name}: Python loop of numax jit(grad) vs numax vmap | {loop_us:.1f} us | "
          f"{times['numax vmap']:.1f} us | {ratio:.1f}x faster with vmap | >= 20x |")


if __name__ == "__main__":
    main()
