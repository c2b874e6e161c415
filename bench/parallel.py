"""Data-parallel training benchmark: one SGD step of an MLP (3 layers, width 512 by default) over all devices,
numax against jax in one process, two ways:

- pmap: the batch reshaped to (devices, per-device batch, features), each device computes its gradients and
  `lax.pmean` averages them; parameters are replicated (a leading device axis) and stay on the devices.
- sharded jit: parameters replicated over a 1-D mesh axis `data`, the batch split along it
  (`in_shardings`/`out_shardings`); XLA's partitioner inserts the gradient all-reduce.

Each step's parameters feed the next call. Both libraries' losses and parameters are checked equal once, then
steps are timed interleaved (median over repeats of `--steps` steps, each repeat ending in block_until_ready).
On the CPU the script forces 8 host devices unless XLA_FLAGS is set; `--devices 1` runs one device (a GPU).

    python bench/parallel.py [--devices N] [--width W] [--layers L] [--features F] [--batch B] [--steps S]
                             [--repeats R] [--quick]
"""

import argparse
import os
import platform
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
# Two clients (numax's and jax's) each run collectives over 8 forced devices on few cores: XLA's CPU
# thread pool must be large enough for a queued step to start before the previous one ends (issue 12's trap).
os.environ.setdefault("PJRT_NPROC", "32")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from dispatch import interleaved, report  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

LEARNING_RATE = 1e-2


def make_steps(lib, np_):
    """The pmap step and the plain step (for sharded jit) of one library (numax or jax)."""

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_.tanh(h @ w + b)
        w, b = params[-1]
        return np_.mean((h @ w + b - y) ** 2)

    def sgd(params, grads):
        return lib.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)

    def pmap_step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        grads = lib.lax.pmean(grads, "devices")
        return sgd(params, grads), lib.lax.pmean(value, "devices")

    def plain_step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        return sgd(params, grads), value

    return lib.pmap(pmap_step, axis_name="devices"), plain_step


def setup(rng, batch, width, layers, features):
    sizes = [features] + [width] * (layers - 1) + [features]
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(batch, features)).astype(np.float32)
    y = rng.normal(size=(batch, features)).astype(np.float32)
    return params, x, y


def replicated(params, devices):
    """Each parameter stacked `devices` times along a new leading axis (pmap's replicated parameters)."""
    return [(np.broadcast_to(w, (devices,) + w.shape), np.broadcast_to(b, (devices,) + b.shape)) for w, b in params]


def check_same(numax_out, jax_out, what):
    """The same loss and parameters after one step: the two sides do the same work."""
    for a, b in zip(numax.tree.leaves(numax_out), jax.tree.leaves(jax_out)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5, err_msg=what)


class Runner:
    """Keeps one library's parameters on its devices and advances them by one step per call."""

    def __init__(self, step, params, x, y):
        self.step, self.params, self.x, self.y = step, params, x, y

    def __call__(self):
        self.params, self.loss = self.step(self.params, self.x, self.y)

    def steps(self, count, block_until_ready):
        for _ in range(count):
            self()
        block_until_ready(self.params)


def compare_pmap(params, x, y, devices, args):
    per_device = x.shape[0] // devices
    xs, ys = x.reshape(devices, per_device, -1), y.reshape(devices, per_device, -1)
    stacked = replicated(params, devices)
    runners = []
    for lib, np_ in ((numax, xnp), (jax, jnp)):
        step, _ = make_steps(lib, np_)
        # An identity pmap places each device's block where the step's pmap expects it.
        placed = lib.pmap(lambda *values: values, axis_name="devices")(stacked, xs, ys)
        runners.append(Runner(step, *placed))
    ours, theirs = runners
    ours(), theirs()
    check_same((ours.params, ours.loss), (theirs.params, theirs.loss), "pmap step")
    return time_pair(ours, theirs, args)


def compare_sharded_jit(params, x, y, devices, args):
    def shardings(lib):
        mesh = lib.make_mesh((devices,), ("data",))
        rep = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec())
        split = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("data"))
        return rep, split

    runners = []
    for lib, np_ in ((numax, xnp), (jax, jnp)):
        rep, split = shardings(lib)
        _, plain = make_steps(lib, np_)
        step = lib.jit(plain, in_shardings=(rep, split, split), out_shardings=(rep, rep))
        placed = lib.tree.map(lambda a, s=rep: lib.device_put(a, s), params)
        runners.append(Runner(step, placed, lib.device_put(x, split), lib.device_put(y, split)))
    ours, theirs = runners
    ours(), theirs()
    check_same((ours.params, ours.loss), (theirs.params, theirs.loss), "sharded jit step")
    return time_pair(ours, theirs, args)


def time_pair(ours, theirs, args):
    warmup = 3
    ours.steps(warmup, numax.block_until_ready)
    theirs.steps(warmup, jax.block_until_ready)
    times = interleaved([
        ("numax", lambda: ours.steps(args.steps, numax.block_until_ready)),
        ("jax", lambda: theirs.steps(args.steps, jax.block_until_ready)),
    ], args.repeats, 1)
    return {side: value / args.steps for side, value in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=None, help="devices to use (default: all)")
    parser.add_argument("--width", type=int, default=512, help="hidden width")
    parser.add_argument("--layers", type=int, default=3, help="dense layers")
    parser.add_argument("--features", type=int, default=128, help="input and output features")
    parser.add_argument("--batch", type=int, default=8 * 128, help="global batch (split over the devices)")
    parser.add_argument("--steps", type=int, default=20, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=15, help="timed repeats (the median is reported)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 repeats of 5 steps")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats = 5, 3
    devices = args.devices or len(numax.devices())
    if devices > min(len(numax.devices()), len(jax.devices())):
        sys.exit(f"{devices} devices asked for, {len(numax.devices())} available; on the CPU set "
                 f"XLA_FLAGS=--xla_force_host_platform_device_count={devices}")
    if args.batch % devices:
        sys.exit(f"--batch {args.batch} does not split over {devices} devices")
    params, x, y = setup(np.random.default_rng(0), args.batch, args.width, args.layers, args.features)
    print(f"# numax {numax.__version__} vs jax {jax.__version__} on {devices} {numax.default_backend()} device(s) "
          f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{sys.version.split()[0]}); MLP {args.features} -> {args.layers - 1}x{args.width} -> {args.features}, "
          f"batch {args.batch}, {args.steps} steps x {args.repeats} repeats")
    print("| measurement | numax | jax | numax / jax | target |")
    print("| --- | --- | --- | --- | --- |")
    for name, compare in (("pmap + pmean", compare_pmap), ("sharded jit", compare_sharded_jit)):
        times = compare(params, x, y, devices, args)
        report(f"SGD step, {name}, {devices} devices", times["numax"], times["jax"], "us", "<= 1x")


if __name__ == "__main__":
    main()
