"""Where the host time of a one-device data-parallel step goes (numax vs jax), with cProfile.

    JAX_PLATFORMS=cuda python3 bench/probes/gpu_parallel_profile.py   (or on the CPU)
"""

import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import parallel  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def runner(lib, np_, kind, params, x, y):
    step_pmap, plain = parallel.make_steps(lib, np_)
    if kind == "pmap":
        placed = lib.pmap(lambda *values: values, axis_name="devices")(parallel.replicated(params, 1), x[None], y[None])
        return parallel.Runner(step_pmap, *placed)
    mesh = lib.make_mesh((1,), ("data",))
    rep = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec())
    split = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("data"))
    step = lib.jit(plain, in_shardings=(rep, split, split), out_shardings=(rep, rep))
    return parallel.Runner(step, lib.tree.map(lambda a: lib.device_put(a, rep), params), lib.device_put(x, split),
                           lib.device_put(y, split))


def per_step(run, block, steps=2000):
    run.steps(20, block)
    start = time.perf_counter()
    run.steps(steps, block)
    return (time.perf_counter() - start) / steps * 1e6


params, x, y = parallel.setup(np.random.default_rng(0), 1024, 512, 3, 128)
for kind in ("sharded jit", "pmap"):
    ours, theirs = runner(numax, xnp, kind, params, x, y), runner(jax, jnp, kind, params, x, y)
    print(f"{kind}: numax {per_step(ours, numax.block_until_ready):.1f} us/step, "
          f"jax {per_step(theirs, jax.block_until_ready):.1f} us/step")
    profile = cProfile.Profile()
    profile.enable()
    ours.steps(2000, numax.block_until_ready)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)
