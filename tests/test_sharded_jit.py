"""Sharded jit on 8 forced CPU devices (tests/conftest.py sets XLA_FLAGS), against jax run the same way:
device_put to a NamedSharding, jit with in_shardings/out_shardings, the layouts XLA chooses, sharding
constraints, eager ops on sharded arrays, autodiff and vmap through them, and arrays built from blocks.

Layouts are compared device by device (matched by id: numax's devices come from its own client) through
`devices_indices_map`; values against jax or numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.lowering import sharded
from numax.lowering.sharded_array import ShardedArray

import numax
import numax.numpy as mnp
from numax import lax
from numax.sharding import NamedSharding, P

js = jax.sharding
JP = js.PartitionSpec


def _meshes(shape, names):
    return (numax.make_mesh(shape, names, axis_types=(numax.sharding.AxisType.Auto,) * len(shape)),
            jax.make_mesh(shape, names, axis_types=(js.AxisType.Auto,) * len(shape)))


MESH, JMESH = _meshes((4, 2), ("x", "y"))
LINE, JLINE = _meshes((8,), ("data",))


def _layout(sharding, shape):
    """{device id: ((start, stop) per dimension)} of a numax or jax sharding."""
    def bounds(index):
        return tuple(slice(s.start, s.stop).indices(n)[:2] for s, n in zip(index, shape))

    return {device.id: bounds(index) for device, index in sharding.devices_indices_map(tuple(shape)).items()}


def _same(ours, theirs, rtol=1e-5, atol=1e-6):
    """Same values and, for arrays, the same layout over the devices."""
    ours_leaves, theirs_leaves = numax.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
        assert _layout(a.sharding, a.shape) == _layout(b.sharding, b.shape), (a.sharding, b.sharding)


SPECS = [(), ("x",), ("x", "y"), (None, "y"), (("x", "y"),), (("y", "x"), None), ("y", "x")]


@pytest.mark.parametrize("entries", SPECS, ids=str)
def test_device_put_places_the_blocks_jax_does(entries):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    ours = numax.device_put(x, NamedSharding(MESH, P(*entries)))
    theirs = jax.device_put(x, js.NamedSharding(JMESH, JP(*entries)))
    assert isinstance(ours, ShardedArray) and ours.sharding == NamedSharding(MESH, P(*entries))
    _same(ours, theirs)
    for shard in ours.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
    replicas = sorted((s.index, s.replica_id) for s in ours.addressable_shards)
    assert replicas == sorted((s.index, s.replica_id) for s in theirs.addressable_shards)


def _mlp(np_):
    def step(w, x):
        return np_.tanh(x @ w).sum(axis=1), np_.sin(w) * 2

    return step


@pytest.mark.parametrize("x_spec,w_spec", [(("x",), ()), (("x", "y"), ("y",)), ((), (None, "x")),
                                           ((("x", "y"),), ())], ids=str)
def test_jit_in_shardings_match_jax(x_spec, w_spec):
    x = np.linspace(-1, 1, 8 * 16, dtype=np.float32).reshape(8, 16)
    w = np.linspace(-2, 2, 16 * 8, dtype=np.float32).reshape(16, 8)
    ours = numax.jit(_mlp(mnp), in_shardings=(NamedSharding(MESH, P(*w_spec)), NamedSharding(MESH, P(*x_spec))))(w, x)
    theirs = jax.jit(_mlp(jnp), in_shardings=(js.NamedSharding(JMESH, JP(*w_spec)),
                                              js.NamedSharding(JMESH, JP(*x_spec))))(w, x)
    _same(ours, theirs)


@pytest.mark.parametrize("out_spec", [(), ("x",), (None, ("y", "x"))], ids=str)
def test_jit_out_shardings_are_the_ones_asked_for(out_spec):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    f = numax.jit(lambda a: mnp.cos(a) + 1, out_shardings=NamedSharding(MESH, P(*out_spec)))
    out = f(x)
    assert out.sharding == NamedSharding(MESH, P(*out_spec))
    theirs = jax.jit(lambda a: jnp.cos(a) + 1, out_shardings=js.NamedSharding(JMESH, JP(*out_spec)))(x)
    _same(out, theirs)


def test_committed_arguments_keep_their_layout_and_feed_back_without_the_host(monkeypatch):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    ours = numax.device_put(x, NamedSharding(MESH, P("x", "y")))
    theirs = jax.device_put(x, js.NamedSharding(JMESH, JP("x", "y")))
    f = numax.jit(lambda a: a * 2 + mnp.sum(a, axis=0))
    g = jax.jit(lambda a: a * 2 + jnp.sum(a, axis=0))
    first, jfirst = f(ours), g(theirs)
    _same(first, jfirst)
    placed = []
    original = sharded.block_buffers
    monkeypatch.setattr(sharded, "block_buffers", lambda *a: placed.append(1) or original(*a))
    second = f(first)  # the first call's blocks go straight back in
    assert placed == [] and second.sharding == first.sharding
    _same(second, g(jfirst))


def test_reductions_and_matmuls_get_the_layouts_xla_chooses_like_jax():
    x = np.linspace(0, 1, 8 * 6, dtype=np.float32).reshape(8, 6)
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    ours_x = numax.device_put(x, NamedSharding(MESH, P("x")))
    theirs_x = jax.device_put(x, js.NamedSharding(JMESH, JP("x")))

    def f(np_):
        return lambda a, b: (a @ b, np_.max(a, axis=1), a.T, np_.sum(a))

    _same(numax.jit(f(mnp))(ours_x, w), jax.jit(f(jnp))(theirs_x, w))


def test_eager_operations_on_sharded_arrays_stay_sharded_like_jax():
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    ours = numax.device_put(x, NamedSharding(MESH, P("x", "y")))
    theirs = jax.device_put(x, js.NamedSharding(JMESH, JP("x", "y")))
    _same(ours * 2 + 1, theirs * 2 + 1)
    _same(mnp.exp(ours / 32), jnp.exp(theirs / 32))
    _same(ours + ours, theirs + theirs)


def test_sharding_constraints_inside_jit_match_jax():
    x = np.linspace(-3, 3, 8 * 8, dtype=np.float32).reshape(8, 8)

    def f(L, np_, sharding):
        return lambda a: L.with_sharding_constraint(np_.tanh(a) * 3, sharding) @ a

    ours = numax.jit(f(lax, mnp, NamedSharding(MESH, P(None, ("x", "y")))))(x)
    theirs = jax.jit(f(jax.lax, jnp, js.NamedSharding(JMESH, JP(None, ("x", "y")))))(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    text = numax.jit(f(lax, mnp, NamedSharding(MESH, P(None, ("x", "y"))))).lower(x).as_text()
    assert 'sdy.sharding_constraint' in text and '{"x", "y"}' in text and 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in text


def test_constraints_under_set_mesh_take_partition_specs():
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    with numax.set_mesh(MESH):
        out = numax.jit(lambda a: lax.with_sharding_constraint(a + 1, P("x")))(x)
        assert out.sharding == NamedSharding(MESH, P("x"))
        np.testing.assert_array_equal(np.asarray(out), x + 1)
        resharded = numax.reshard(out, P(None, "y"))
        assert resharded.sharding == NamedSharding(MESH, P(None, "y"))
    assert numax.sharding.get_mesh() is None
    with pytest.raises(ValueError, match="no mesh is set"):
        lax.with_sharding_constraint(x, P("x"))


def test_grad_through_sharded_jit_matches_jax_and_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4, 3)).astype(np.float32) / 2

    def loss(np_, L, batch, replicated):
        def f(w, x):
            h = np_.tanh(L.with_sharding_constraint(x, batch) @ w)
            return np_.mean(h ** 2)

        return f

    f = numax.jit(loss(mnp, lax, NamedSharding(LINE, P("data")), None),
                  in_shardings=(NamedSharding(LINE, P()), NamedSharding(LINE, P("data"))))
    jf = jax.jit(loss(jnp, jax.lax, js.NamedSharding(JLINE, JP("data")), None))
    ours, theirs = numax.grad(f)(w, x), jax.grad(jf)(w, x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)
    direction = rng.normal(size=w.shape)
    eps = 1e-2
    w64 = w.astype(np.float64)

    def ref(v):
        return np.mean(np.tanh(x.astype(np.float64) @ v) ** 2)

    numeric = (ref(w64 + eps * direction) - ref(w64 - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(np.asarray(ours) * direction)), numeric, rtol=1e-3)
    value, grads = numax.jit(numax.value_and_grad(f))(w, x)
    np.testing.assert_allclose(float(value), float(jf(w, x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grads), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_vmap_of_a_constraint_leaves_the_batch_dimension_unsplit():
    x = np.arange(3 * 8, dtype=np.float32).reshape(3, 8)

    def f(L, sharding):
        return lambda r: L.with_sharding_constraint(r * 2, sharding)

    ours = numax.jit(numax.vmap(f(lax, NamedSharding(LINE, P("data")))))(x)
    theirs = jax.jit(jax.vmap(f(jax.lax, js.NamedSharding(JLINE, JP("data")))))(x)
    _same(ours, theirs)


def test_arrays_from_blocks_match_jax():
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    sharding, jsharding = NamedSharding(MESH, P("x")), js.NamedSharding(JMESH, JP("x"))
    asked = []
    ours = numax.make_array_from_callback(x.shape, sharding, lambda index: asked.append(index) or x[index])
    _same(ours, jax.make_array_from_callback(x.shape, jsharding, lambda index: x[index]))
    assert len(asked) == 4  # each block once, though two devices hold it
    rebuilt = numax.make_array_from_single_device_arrays(x.shape, sharding, [s.data for s in ours.addressable_shards])
    _same(rebuilt, ours)
    with pytest.raises(ValueError):
        numax.make_array_from_single_device_arrays(x.shape, sharding, [s.data for s in ours.addressable_shards][:3])


def test_single_device_arrays_report_their_sharding_like_jax():
    ours, theirs = mnp.ones(3), jnp.ones(3)
    assert type(ours.sharding).__name__ == type(theirs.sharding).__name__ == "SingleDeviceSharding"
    assert next(iter(ours.sharding.device_set)).id == next(iter(theirs.sharding.device_set)).id


def test_errors_match_jax_types():
    x = np.ones((6, 4), np.float32)
    for lib, sharding in ((numax, NamedSharding(MESH, P("x"))), (jax, js.NamedSharding(JMESH, JP("x")))):
        with pytest.raises(ValueError):  # 6 rows do not split over 4 devices
            lib.device_put(x, sharding)
    half, jhalf = (numax.sharding.Mesh(np.array(numax.devices()[:4]), ("z",)),
                   js.Mesh(np.array(jax.devices()[:4]), ("z",)))
    a = np.ones((8, 4), np.float32)
    for lib, s1, s2 in ((numax, NamedSharding(MESH, P("x")), NamedSharding(half, P("z"))),
                        (jax, js.NamedSharding(JMESH, JP("x")), js.NamedSharding(jhalf, JP("z")))):
        with pytest.raises(ValueError, match="incompatible devices"):
            lib.jit(lambda u, v: u + v, in_shardings=(s1, s2))(a, a)


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([((8,), ("a",)), ((2, 4), ("a", "b")), ((4, 2), ("a", "b")), ((2, 2, 2), ("a", "b", "c"))]),
       st.integers(0, 2), st.integers(1, 3), st.booleans())
def test_layouts_of_random_specs_round_trip(mesh_shape_names, dim_choice, scale, transpose_output):
    shape_of_mesh, names = mesh_shape_names
    mesh = numax.make_mesh(shape_of_mesh, names)
    axes = list(names)
    entries = [tuple(axes[: (dim_choice % len(axes)) + 1]), None]
    spec = P(*entries)
    blocks = int(np.prod([dict(zip(names, shape_of_mesh))[a] for a in entries[0]]))
    x = np.arange(blocks * scale * 3, dtype=np.float32).reshape(blocks * scale, 3)
    placed = numax.device_put(x, NamedSharding(mesh, spec))
    np.testing.assert_array_equal(np.asarray(placed), x)
    out = numax.jit(lambda a: a.T if transpose_output else a * 1)(placed)
    np.testing.assert_array_equal(np.asarray(out), x.T if transpose_output else x)
    for shard in out.addressable_shards:  # whatever layout XLA picked, each block is where the sharding says
        np.testing.assert_array_equal(np.asarray(shard.data), (x.T if transpose_output else x)[shard.index])


@pytest.mark.parametrize("entries", [("x", "y"), (None, "y"), (("x", "y"),), ()], ids=str)
def test_typeof_shows_explicit_axes_like_jax(entries):
    mesh, jmesh = numax.make_mesh((4, 2), ("x", "y")), jax.make_mesh((4, 2), ("x", "y"))  # Explicit by default
    x = np.ones((8, 4), np.float32)
    ours = numax.typeof(numax.device_put(x, NamedSharding(mesh, P(*entries))))
    theirs = jax.typeof(jax.device_put(x, js.NamedSharding(jmesh, JP(*entries))))
    assert str(ours) == str(theirs).replace("float32", "f32")
    ours_spec = tuple(ours.sharding.spec) + (None,) * (2 - len(ours.sharding.spec))
    theirs_spec = tuple(theirs.sharding.spec) + (None,) * (2 - len(theirs.sharding.spec))
    assert ours_spec == theirs_spec
    auto = numax.typeof(numax.device_put(x, NamedSharding(MESH, P(*entries))))  # Auto axes: not in the type
    assert type(auto) is numax.core.avals.ShapedArray and str(auto) == "f32[8,4]"


def test_constraints_over_explicit_axes_are_refused_like_jax_and_reshard_takes_them():
    mesh, jmesh = numax.make_mesh((8,), ("e",)), jax.make_mesh((8,), ("e",))  # Explicit by default
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    for lib, sharding in ((lax, NamedSharding(mesh, P("e"))), (jax.lax, js.NamedSharding(jmesh, JP("e")))):
        with pytest.raises(ValueError):
            lib.with_sharding_constraint(x, sharding)
    with pytest.raises(ValueError, match="reshard"):
        lax.with_sharding_constraint(x, NamedSharding(mesh, P("e")))
    _same(numax.reshard(x, NamedSharding(mesh, P("e"))), jax.reshard(x, js.NamedSharding(jmesh, JP("e"))))


def test_jit_shardings_over_explicit_meshes_match_jax():
    mesh, jmesh = numax.make_mesh((4, 2), ("x", "y")), jax.make_mesh((4, 2), ("x", "y"))  # Explicit by default
    x = np.linspace(-1, 1, 8 * 4, dtype=np.float32).reshape(8, 4)
    ours = numax.jit(lambda a: mnp.sin(a) * 2, in_shardings=NamedSharding(mesh, P("x")),
                     out_shardings=NamedSharding(mesh, P("x", "y")))(x)
    theirs = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=js.NamedSharding(jmesh, JP("x")),
                     out_shardings=js.NamedSharding(jmesh, JP("x", "y")))(x)
    _same(ours, theirs)


def test_a_jit_called_with_host_values_then_sharded_ones_recompiles_and_says_why(capsys):
    f = numax.jit(lambda a: a * 2)
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    with _log_compiles():
        f(x)
        out = f(numax.device_put(x, NamedSharding(MESH, P("x"))))
    np.testing.assert_array_equal(np.asarray(out), x * 2)
    assert out.sharding == NamedSharding(MESH, P("x"))
    assert "laid out by NamedSharding" in capsys.readouterr().err


class _log_compiles:
    """numax.config's jax_log_compiles on for a block."""

    def __enter__(self):
        numax.config.update("jax_log_compiles", True)

    def __exit__(self, *exc):
        numax.config.update("jax_log_compiles", False)
