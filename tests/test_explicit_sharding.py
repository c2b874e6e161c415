"""Explicit-sharding API of JAX's parallelism page, against jax on the 8 forced CPU devices (issue 29).

Abstract meshes (`AbstractMesh`, `get_abstract_mesh`, `use_abstract_mesh`), PartitionSpec's `unreduced` /
`reduced` keywords, the `out_sharding=` keyword of samplers and products, `auto_axes` / `explicit_axes`, and
committedness through jit: a committed argument's device is part of jit's cache key, and jit's outputs are
committed when an argument was (the Python path and the native one).
"""

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as mnp
from numax.sharding import AbstractMesh, AxisType, P


@pytest.fixture
def meshes():
    """The same (4, 2) Explicit mesh set in numax and in jax for the test."""
    mesh, jmesh = numax.make_mesh((4, 2), ("X", "Y")), jax.make_mesh((4, 2), ("X", "Y"))
    with numax.set_mesh(mesh), jax.set_mesh(jmesh):
        yield mesh, jmesh


def _spec_of(lib, x):
    """The spec of `x`'s type, without trailing None entries (equivalent layouts: numax keeps an array's own
    spec where it already has the layout asked for)."""
    spec = list(lib.typeof(x).sharding.spec)
    while spec and spec[-1] is None:
        spec.pop()
    return tuple(spec)


def test_abstract_mesh_matches_jax():
    jmesh = jax.sharding.AbstractMesh((8,), ("A",), (jax.sharding.AxisType.Explicit,))
    mesh = AbstractMesh((8,), ("A",), (AxisType.Explicit,))
    assert (mesh.axis_sizes, mesh.axis_names, mesh.size, dict(mesh.shape), mesh.empty) == (
        jmesh.axis_sizes, jmesh.axis_names, jmesh.size, dict(jmesh.shape), jmesh.empty)
    assert repr(mesh) == repr(jmesh) and mesh == AbstractMesh((8,), ("A",), (AxisType.Explicit,))
    assert repr(AbstractMesh((8,), ("A",))) == repr(jax.sharding.AbstractMesh((8,), ("A",)))
    assert repr(numax.sharding.get_abstract_mesh()) == repr(jax.sharding.get_abstract_mesh())  # no mesh: empty


def test_get_abstract_mesh_follows_the_mesh_in_context(meshes):
    mesh, jmesh = meshes
    ours, theirs = numax.sharding.get_abstract_mesh(), jax.sharding.get_abstract_mesh()
    assert (ours.axis_sizes, ours.axis_names, ours.axis_types) == (
        theirs.axis_sizes, theirs.axis_names, tuple(AxisType[t.name] for t in theirs.axis_types))
    assert mesh.abstract_mesh == ours


def test_use_abstract_mesh_reshards_inside_jit(meshes):
    def f(lib, sharding):
        def body(x):
            with sharding.use_abstract_mesh(sharding.AbstractMesh((8,), ("A",), (sharding.AxisType.Explicit,))):
                return lib.reshard(x, lib.P("A", None)) * 2
        return lib.jit(body)

    x = np.arange(32.0).reshape(8, 4)
    ours = f(numax, numax.sharding)(numax.device_put(x, P("X", "Y")))
    theirs = f(jax, jax.sharding)(jax.device_put(x, jax.P("X", "Y")))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert [s.data.shape for s in ours.addressable_shards] == [s.data.shape for s in theirs.addressable_shards]


def test_partition_spec_keywords_match_jax():
    for args, kwargs in [(("X", None), {"unreduced": {"Y"}}), (("X",), {"unreduced": {"Y"}}),
                         ((), {"reduced": frozenset({"Z"})}), ((("a", "b"),), {})]:
        ours, theirs = P(*args, **kwargs), jax.P(*args, **kwargs)
        assert repr(ours) == repr(theirs)
        assert pickle.loads(pickle.dumps(ours)) == ours
    assert P("X", unreduced={"Y"}) != P("X") and P("X", unreduced={"Y"}) == P("X", unreduced=frozenset({"Y"}))
    for lib in (numax.sharding, jax.sharding):
        with pytest.raises(ValueError, match="overlap"):
            lib.PartitionSpec("X", unreduced={"X"})
        with pytest.raises(TypeError, match="frozenset"):
            lib.PartitionSpec("X", unreduced="Y")


def test_named_sharding_at_the_top_level(meshes):
    mesh, _ = meshes
    assert numax.NamedSharding is numax.sharding.NamedSharding
    with pytest.raises(ValueError, match="not found in mesh"):
        numax.NamedSharding(mesh, P("X", unreduced={"Q"}))


def test_out_sharding_of_samplers_and_products(meshes):
    ours = numax.random.normal(numax.random.key(0), (8, 4), out_sharding=P("X", "Y"))
    theirs = jax.random.normal(jax.random.key(0), (8, 4), out_sharding=jax.P("X", "Y"))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    assert _spec_of(numax, ours) == _spec_of(jax, theirs)
    np.testing.assert_allclose(np.asarray(ours.sum(0)), np.asarray(theirs.sum(0)), rtol=1e-5)
    a, b = np.arange(32.0).reshape(8, 4), np.arange(64.0).reshape(4, 16)
    x, y = numax.device_put(a, P(None, "X")), numax.device_put(b, P("X", None))
    jx, jy = jax.device_put(a, jax.P(None, "X")), jax.device_put(b, jax.P("X", None))
    for ours, theirs in [(mnp.dot(x, y, out_sharding=P("X", None)), jnp.dot(jx, jy, out_sharding=jax.P("X", None))),
                         (mnp.matmul(x, y, out_sharding=P("X", None)),
                          jnp.matmul(jx, jy, out_sharding=jax.P("X", None))),
                         (mnp.einsum("ij,jk->ik", x, y, out_sharding=P("X", None)),
                          jnp.einsum("ij,jk->ik", jx, jy, out_sharding=jax.P("X", None))),
                         (mnp.tensordot(x, y, 1, out_sharding=P("X", None)),
                          jnp.tensordot(jx, jy, 1, out_sharding=jax.P("X", None)))]:
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        assert _spec_of(numax, ours) == _spec_of(jax, theirs) == ("X",)
    inside = numax.jit(lambda k: numax.random.uniform(k, (8,), out_sharding=P("X")))(numax.random.key(1))
    np.testing.assert_array_equal(np.asarray(inside), np.asarray(
        jax.jit(lambda k: jax.random.uniform(k, (8,), out_sharding=jax.P("X")))(jax.random.key(1))))
    assert inside.sharding.spec == P("X")


def test_auto_axes_and_explicit_axes(meshes):
    seen = {}

    def add(x, y):
        seen["auto"] = numax.sharding.get_abstract_mesh().axis_types
        return x + y

    x = numax.device_put(np.arange(16).reshape(4, 4), P("X", None))
    y = numax.device_put(np.arange(16).reshape(4, 4), P(None, "X"))
    jx = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", None))
    jy = jax.device_put(np.arange(16).reshape(4, 4), jax.P(None, "X"))
    result = numax.sharding.auto_axes(add)(x, y, out_sharding=P("X", None))
    theirs = jax.sharding.auto_axes(lambda x, y: x + y)(jx, jy, out_sharding=jax.P("X", None))
    np.testing.assert_array_equal(np.asarray(result), np.asarray(theirs))
    assert seen["auto"] == (AxisType.Auto, AxisType.Auto)
    assert _spec_of(numax, result) == _spec_of(jax, theirs) and numax.sharding.get_abstract_mesh().axis_types == (
        AxisType.Explicit, AxisType.Explicit)
    for lib, arg in ((numax, x), (jax, jx)):
        with pytest.raises(TypeError, match="out_sharding"):
            lib.sharding.auto_axes(lambda v: v)(arg)

    auto = numax.make_mesh((4, 2), ("X", "Y"), (AxisType.Auto,) * 2)
    jauto = jax.make_mesh((4, 2), ("X", "Y"), (jax.sharding.AxisType.Auto,) * 2)
    with numax.set_mesh(auto), jax.set_mesh(jauto):
        def g(lib):
            def body(v):
                seen[lib.__name__] = lib.sharding.get_abstract_mesh().axis_types
                return v * 2
            return lib.jit(lambda a: lib.sharding.explicit_axes(body)(lib.numpy.sin(a), in_sharding=lib.P("X", "Y")))

        ours = g(numax)(numax.device_put(np.arange(16.0).reshape(4, 4), P("X", "Y")))
        theirs = g(jax)(jax.device_put(np.arange(16.0).reshape(4, 4), jax.P("X", "Y")))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
        assert [t.name for t in seen["numax"]] == [t.name for t in seen["jax"]] == ["Explicit", "Explicit"]


@pytest.mark.parametrize("native", [True, False])
def test_jit_keys_committed_devices_and_commits_outputs(native):
    with numax.config.option("numax_native_dispatch", native):
        f, jf = numax.jit(lambda a, b: (a + b, a * b)), jax.jit(lambda a, b: (a + b, a * b))
        x, jx = mnp.arange(3.0), jnp.arange(3.0)
        on3, jon3 = numax.device_put(x, numax.devices()[3]), jax.device_put(jx, jax.devices()[3])
        for _ in range(2):  # the second round answers from the cache (in C when `native`)
            for ours, theirs in [(f(x, x), jf(jx, jx)), (f(on3, on3), jf(jon3, jon3)), (f(x, on3), jf(jx, jon3))]:
                assert [(o.devices(), o.committed) for o in ours] == [
                    ({numax.devices()[t.devices().pop().id]}, t.committed) for t in theirs]
        unary, junary = mnp.sin(on3), jnp.sin(jon3)  # the eager fast path
        assert unary.committed == junary.committed and mnp.sin(x).committed == jnp.sin(jx).committed



def test_type_sharding_of_unsplit_values_matches_jax(meshes):
    traced = []

    def seen_in_jit(lib, value):
        lib.jit(lambda v: traced.append(lib.typeof(v + 0).sharding) or v)(value)
        return traced.pop()

    for ours, theirs in [(mnp.arange(3.0), jnp.arange(3.0)), (mnp.ones((2, 3)), jnp.ones((2, 3)))]:
        for sharding, jsharding in [(numax.typeof(ours).sharding, jax.typeof(theirs).sharding),
                                    (seen_in_jit(numax, ours), seen_in_jit(jax, theirs))]:
            assert tuple(sharding.spec) == tuple(jsharding.spec)
            assert (sharding.mesh.axis_sizes, sharding.mesh.axis_names) == (
                jsharding.mesh.axis_sizes, jsharding.mesh.axis_names)
    # inside auto_axes the mesh's axes are Auto: the type of an argument splits nothing (the array still is)
    x, jx = numax.device_put(mnp.arange(8.0), P("X")), jax.device_put(jnp.arange(8.0), jax.P("X"))
    specs = {}

    def check(lib):
        def body(v):
            specs[lib.__name__] = (tuple(v.sharding.spec), tuple(lib.typeof(v).sharding.spec))
            return v
        return body

    numax.sharding.auto_axes(check(numax))(x, out_sharding=P("X"))
    jax.sharding.auto_axes(check(jax))(jx, out_sharding=jax.P("X"))
    assert specs["numax"] == specs["jax"]


def test_jit_in_shardings_of_one_device():
    device, jdevice = numax.devices()[2], jax.devices()[2]
    for kind in ("in_shardings", "out_shardings"):
        ours = numax.jit(lambda v: v * 2, **{kind: numax.sharding.SingleDeviceSharding(device)})(mnp.arange(4.0))
        theirs = jax.jit(lambda v: v * 2, **{kind: jax.sharding.SingleDeviceSharding(jdevice)})(jnp.arange(4.0))
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        assert ({d.id for d in ours.devices()}, ours.committed) == ({d.id for d in theirs.devices()}, theirs.committed)


@pytest.mark.parametrize("specs", [(("X", None), (None, "X")), (("X", None), ("Y", None)), (("X", None), ("X",)),
                                   (("X", None), ()), ((None, "Y"), (None, "Y"))])
def test_eager_operands_split_over_explicit_axes_are_typed_as_in_jax(meshes, specs):
    """jax's ShardingTypeError where operands' Explicit splits do not combine (same message), the result's split
    where they do; eagerly, and in a jit of the one operation."""
    host = np.arange(16).reshape(4, 4)
    outcomes = []
    for lib in (numax, jax):
        a, b = (lib.device_put(host, lib.P(*spec)) for spec in specs)
        for run in (lambda u, v: u + v, lib.jit(lambda u, v: u < v)):
            try:
                outcomes.append(("ok", _spec_of(lib, run(a, b))))
            except Exception as error:  # noqa: BLE001  (the class and message are compared)
                outcomes.append((type(error).__name__, str(error)))
    assert outcomes[:2] == outcomes[2:]
