"""pmap, sharded jit and shard_map over the one GPU of a lent machine, checked against jax on the same GPU.

Every case runs in numax and in jax and must agree (values and, for arrays, the devices holding them); the
script prints one line per case and exits non-zero if any disagrees.

    JAX_PLATFORMS=cuda python3 bench/gpu_parallel.py
"""

import sys
import traceback

import jax
import jax.numpy as jnp
import numpy as np

import numax
import numax.numpy as mnp
from numax import lax

js = jax.sharding
failures = []


def check(name, ours, theirs, rtol=1e-5, atol=1e-5):
    try:
        ours_leaves, theirs_leaves = numax.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
        assert len(ours_leaves) == len(theirs_leaves)
        for a, b in zip(ours_leaves, theirs_leaves):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
            if hasattr(a, "sharding"):
                assert {d.platform for d in a.sharding.device_set} == {numax.default_backend()}, a.sharding
        print(f"PASS {name}")
    except Exception:
        failures.append(name)
        print(f"FAIL {name}\n{traceback.format_exc()}")


def run(name, make):
    try:
        ours, theirs = make()
    except Exception:
        failures.append(name)
        print(f"FAIL {name}\n{traceback.format_exc()}")
        return
    check(name, ours, theirs)


print("numax:", numax.default_backend(), numax.devices(), "| jax:", jax.default_backend(), jax.devices())
x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(1, 3, 4)


def collectives(L, m):
    return lambda v: (L.psum(v, "i") * m.sin(v) + L.all_gather(v, "i").sum(0) + L.pmean(v, "i")
                      + L.ppermute(v, "i", [(0, 0)]) + L.axis_index("i"))


run("pmap collectives", lambda: (numax.pmap(collectives(lax, mnp), "i")(x),
                                 jax.pmap(collectives(jax.lax, jnp), "i")(x)))
run("grad of pmap", lambda: (
    numax.grad(lambda v: numax.pmap(collectives(lax, mnp), "i")(v).sum())(x),
    jax.grad(lambda v: jax.pmap(collectives(jax.lax, jnp), "i")(v).sum())(x)))
run("jit of pmap", lambda: (numax.jit(numax.pmap(collectives(lax, mnp), "i"))(x),
                            jax.jit(jax.pmap(collectives(jax.lax, jnp), "i"))(x)))

mesh = numax.make_mesh((1,), ("data",), axis_types=(numax.sharding.AxisType.Auto,))
jmesh = jax.make_mesh((1,), ("data",), axis_types=(js.AxisType.Auto,))
P, JP = numax.sharding.PartitionSpec, js.PartitionSpec
w = np.linspace(-0.5, 0.5, 4 * 3, dtype=np.float32).reshape(4, 3)
batch = np.linspace(-1, 1, 8 * 4, dtype=np.float32).reshape(8, 4)


def loss(m, L, sharding):
    return lambda w, b: m.mean(m.tanh(L.with_sharding_constraint(b, sharding) @ w) ** 2)


ours_step = numax.jit(numax.value_and_grad(loss(mnp, lax, numax.sharding.NamedSharding(mesh, P("data")))),
                      in_shardings=(numax.sharding.NamedSharding(mesh, P()),
                                    numax.sharding.NamedSharding(mesh, P("data"))))
their_step = jax.jit(jax.value_and_grad(loss(jnp, jax.lax, js.NamedSharding(jmesh, JP("data")))),
                     in_shardings=(js.NamedSharding(jmesh, JP()), js.NamedSharding(jmesh, JP("data"))))
run("sharded jit value_and_grad", lambda: (ours_step(w, batch), their_step(w, batch)))
run("device_put to a NamedSharding, eager op", lambda: (
    numax.device_put(batch, numax.sharding.NamedSharding(mesh, P("data"))) * 2,
    jax.device_put(batch, js.NamedSharding(jmesh, JP("data"))) * 2))
if hasattr(numax, "shard_map"):
    def body(L):
        return lambda b: L.psum(b.sum(0), "data")

    run("shard_map psum", lambda: (
        numax.jit(numax.shard_map(body(lax), mesh=mesh, in_specs=P("data"), out_specs=P()))(batch),
        jax.jit(jax.shard_map(body(jax.lax), mesh=jmesh, in_specs=JP("data"), out_specs=JP()))(batch)))

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
