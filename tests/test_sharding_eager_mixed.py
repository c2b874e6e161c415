"""Eager operations on arrays of every mix of shardings, devices and committedness, against jax (issue 29).

Each pair of placements on a 2x4 mesh of the forced CPU devices (replicated, split over one axis or both, a
single-device committed array, an uncommitted array) meets in a binary op, allclose,
a reduction and a matmul, eagerly, in numax and in jax: the same values, the same output layout and
committedness, or the same error type where jax refuses (committed arrays on different devices). The crash the
issue reports (XLA rejecting a mislaid argument, then the process dying) runs in a subprocess, so that a
regression fails a test instead of killing pytest.
"""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as mnp
from numax.sharding import Mesh, NamedSharding, P

js = jax.sharding
JP = js.PartitionSpec

MESH = Mesh(np.array(numax.devices()).reshape(2, 4), ("x", "y"))
JMESH = js.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))

SPECS = {"replicated": (), "x": ("x",), "y": ("y",), "x_y": ("x", "y"), "none_y": (None, "y"),
         "xy": (("x", "y"),)}
PLACEMENTS = [*SPECS, "committed_0", "uncommitted"]  # (committed_5: a second device, for the error tests)


def _place(lib, name, value):
    """`value` placed as `name` says, by numax or jax."""
    if name in SPECS:
        if lib is numax:
            return numax.device_put(value, NamedSharding(MESH, P(*SPECS[name])))
        return jax.device_put(value, js.NamedSharding(JMESH, JP(*SPECS[name])))
    if name == "uncommitted":
        return (mnp if lib is numax else jnp).asarray(value)
    return lib.device_put(value, lib.devices()[int(name.split("_")[1])])


OPS = {
    "multiply": lambda np_, a, b: a * b,
    "allclose": lambda np_, a, b: np_.allclose(a, b + 1e-7),
    "sum": lambda np_, a, b: np_.sum(a - b, axis=0),
    "matmul": lambda np_, a, b: a @ b,
}


def _outcome(lib, np_, op, first, second, x, y):
    """(value, layout, committed) of `op` on the placed operands, or the type of the error it raises."""
    try:
        out = OPS[op](np_, _place(lib, first, x), _place(lib, second, y))
        return np.asarray(out), _layout(out.sharding, out.shape), out.committed
    except Exception as error:  # noqa: BLE001 (the error type is what is compared)
        return type(error)


def _builtin_base(error_type):
    """The first Python exception type among an error type's bases (jax's own types derive from them)."""
    return next(base for base in error_type.__mro__ if base.__module__ == "builtins")


def _layout(sharding, shape):
    """{device id: ((start, stop) per dimension)}: which block each device holds, whatever the sharding's class."""
    def bounds(index):
        return tuple(slice(s.start, s.stop).indices(n)[:2] for s, n in zip(index, shape))

    return {device.id: bounds(index) for device, index in sharding.devices_indices_map(tuple(shape)).items()}


@pytest.mark.parametrize("op", OPS)
def test_eager_ops_on_every_pair_of_placements_match_jax(op):
    _compare(op, [(first, second) for first in PLACEMENTS for second in PLACEMENTS])


def test_single_device_arrays_meet_as_in_jax():
    """An uncommitted array goes where a committed one lies; two committed to different devices cannot meet."""
    names = ["committed_0", "committed_5", "uncommitted"]
    _compare("multiply", [(first, second) for first in names for second in names])


def _compare(op, pairs):
    x = np.arange(64, dtype=np.float32).reshape(8, 8) / 7
    y = (np.arange(64, dtype=np.float32).reshape(8, 8).T - 20) / 9
    failures = []
    for first, second in pairs:
        theirs = _outcome(jax, jnp, op, first, second, x, y)
        ours = _outcome(numax, mnp, op, first, second, x, y)
        if isinstance(theirs, type):
            if not (isinstance(ours, type) and issubclass(ours, _builtin_base(theirs))):
                failures.append((first, second, f"jax raises {theirs.__name__}, numax gives {ours}"))
            continue
        if isinstance(ours, type):
            failures.append((first, second, f"numax raises {ours.__name__}"))
            continue
        if not np.allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5):
            failures.append((first, second, "values differ"))
        if ours[1] != theirs[1]:
            failures.append((first, second, f"layouts differ: {ours[1]} vs jax {theirs[1]}"))
        if ours[2] != theirs[2]:
            failures.append((first, second, f"committed {ours[2]}, jax {theirs[2]}"))
    assert not failures, "\n".join(map(str, failures))


def test_committed_arrays_on_different_devices_are_jax_value_errors():
    x = np.ones((8, 8), np.float32)
    for lib, np_ in ((numax, mnp), (jax, jnp)):
        with pytest.raises(ValueError, match="incompatible devices"):
            _place(lib, "committed_0", x) + _place(lib, "x", x)
        with pytest.raises(ValueError, match="incompatible devices"):
            np_.allclose(_place(lib, "committed_0", x), _place(lib, "committed_5", x))


def test_the_same_devices_in_another_order_are_refused_as_in_jax():
    x = np.ones((8, 8), np.float32)
    reversed_mesh = Mesh(np.array(numax.devices()[::-1]).reshape(2, 4), ("x", "y"))
    jreversed_mesh = js.Mesh(np.array(jax.devices()[::-1]).reshape(2, 4), ("x", "y"))
    for a, b in ((_place(numax, "x", x), numax.device_put(x, NamedSharding(reversed_mesh, P("x")))),
                 (_place(jax, "x", x), jax.device_put(x, js.NamedSharding(jreversed_mesh, JP("x"))))):
        with pytest.raises(ValueError, match="incompatible devices"):
            a * b


CRASH_SCENARIOS = textwrap.dedent("""
    import numpy as np
    import numax
    import numax.numpy as mnp
    from numax.core.sharding import TiledSharding
    from numax.sharding import NamedSharding, P

    x = np.arange(784 * 128, dtype=np.float32).reshape(784, 128)
    # 1. An array laid out by a sharding no PartitionSpec gives (one XLA may pick for a gradient) meets an
    #    unsharded one: XLA takes the first argument as it chooses, and numax lays it out so.
    order = [1, 0, 3, 2, 5, 4, 7, 6]
    a = numax.device_put(x, TiledSharding(numax.devices(), (8, 1), [(k, 0) for k in order]))
    assert bool(mnp.allclose(a, mnp.asarray(x))) and bool(mnp.allclose(mnp.asarray(x), a))
    np.testing.assert_array_equal(np.asarray(a - mnp.ones_like(a)), x - 1)

    # 2. The shard_map tutorial's FSDP + TP gradient against the reference gradient (smaller layers).
    from functools import partial
    mesh = numax.make_mesh((4, 2), ("batch", "feats"))
    numax.set_mesh(mesh)
    key = numax.random.key(0)
    sizes = [64, 32, 32, 8]
    keys = numax.random.split(key, len(sizes) + 1)
    params = [(numax.random.normal(k, (m, n)) / np.sqrt(m), numax.random.normal(k, (n,)))
              for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
    batch = (numax.random.normal(keys[-2], (16, sizes[0])), numax.random.normal(keys[-1], (16, sizes[-1])))

    def loss(params, batch):
        inputs, targets = batch
        for W, b in params:
            outputs = mnp.dot(inputs, W) + b
            inputs = numax.nn.relu(outputs)
        return mnp.mean(mnp.sum((outputs - targets) ** 2, axis=-1))

    @numax.shard_map(in_specs=(P(("feats", "batch")), P("batch", "feats")), out_specs=P())
    def loss_fsdp_tp(local_params, local_batch):
        inputs, targets = local_batch
        for W_frag, b_frag in local_params:
            W = numax.lax.all_gather(W_frag, "batch", tiled=True)
            b = numax.lax.all_gather(b_frag, "batch", tiled=True)
            block = mnp.dot(inputs, W)
            outputs = numax.lax.psum_scatter(block, "feats", scatter_dimension=1, tiled=True) + b
            inputs = numax.nn.relu(outputs)
        sq_err = numax.lax.psum(mnp.sum((outputs - targets) ** 2, axis=-1), "feats")
        return numax.lax.pmean(mnp.mean(sq_err), "batch")

    sharded_batch = numax.device_put(batch, NamedSharding(mesh, P("batch", "feats")))
    sharded_params = numax.device_put(params, NamedSharding(mesh, P(("feats", "batch"))))
    reference = numax.jit(numax.grad(loss))(params, batch)
    gradient = numax.jit(numax.grad(loss_fsdp_tp))(sharded_params, sharded_batch)
    for ours, expected in zip(numax.tree_leaves(gradient), numax.tree_leaves(reference)):
        assert bool(mnp.allclose(ours, expected, atol=1e-2, rtol=1e-2))  # sharded meets unsharded, eagerly
        assert bool(mnp.allclose(expected, ours, atol=1e-2, rtol=1e-2))

    # 3. Runtime errors before a multi-device program runs are Python errors, never a crash.
    s = numax.device_put(x, NamedSharding(mesh, P("batch")))
    doubled = s * 2
    doubled.addressable_data(0).delete()  # one block of the array deleted under it
    for attempt in (lambda: doubled + 1, lambda: numax.jit(lambda v: v * 3)(doubled), lambda: doubled.is_ready()):
        try:
            attempt()
        except RuntimeError:
            pass
        else:
            raise AssertionError("a program ran on a deleted block")
    single = mnp.ones(4)
    single.delete()
    try:
        numax.device_put(single, numax.devices()[3])
    except RuntimeError:
        pass
    else:
        raise AssertionError("a deleted array was copied")
    print("survived")
""")


def test_the_reported_crash_scenarios_run_in_a_subprocess_without_crashing():
    # This process's XLA_FLAGS (tests/conftest.py's: eight host devices, and the cheaper CPU code generation every
    # other test compiles under), so that the scenarios' programs compile as fast as the suite's.
    environment = dict(os.environ, JAX_PLATFORMS="cpu")
    environment.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    done = subprocess.run([sys.executable, "-c", CRASH_SCENARIOS], capture_output=True, text=True, timeout=300,
                          env=environment)
    assert done.returncode == 0 and "survived" in done.stdout, (done.returncode, done.stderr[-3000:])
