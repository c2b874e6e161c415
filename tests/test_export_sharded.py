"""Exporting sharded functions, numax against jax on 8 CPU devices: the public-behaviour cases of jax's
export_test.py that shard (nr_devices, in/out_shardings_jax, calls on other devices and meshes, jax's errors for
another device count, VJPs and serialization round trips of sharded exports), and export of a library function
not wrapped in jit (export.md)."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh as JAbstractMesh
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNamedSharding
from jax.sharding import PartitionSpec as JP

import numax
import numax.numpy as jnp
from numax import export
from numax.sharding import AbstractMesh, Mesh, NamedSharding
from numax.sharding import PartitionSpec as P

NUM_DEVICES = 8


@pytest.fixture(autouse=True, scope="module")
def _eight_devices():
    assert len(numax.devices()) == NUM_DEVICES and len(jax.devices()) == NUM_DEVICES  # set in conftest.py


def _meshes(device_ids, shape, names):
    """The same mesh for numax and for jax: (numax Mesh, jax Mesh)."""
    return (Mesh(np.array([numax.devices()[i] for i in device_ids], dtype=object).reshape(shape), names),
            JMesh(np.array([jax.devices()[i] for i in device_ids]).reshape(shape), names))


def _layout(array):
    """Where each block of an array lies: [(device id, index)], for numax's and jax's arrays alike."""
    return [(shard.device.id, shard.index) for shard in array.addressable_shards]


def _same_result(numax_result, jax_result):
    np.testing.assert_allclose(np.asarray(numax_result), np.asarray(jax_result), rtol=1e-6)
    assert _layout(numax_result) == _layout(jax_result)


def _recorded(shardings):
    """Recorded shardings, comparable across numax and jax: (axis sizes, axis names, spec entries) or None."""
    return [None if s is None else (tuple(s.mesh.axis_sizes), tuple(s.mesh.axis_names), tuple(s.spec))
            for s in shardings]


def _export_both(make_jit, *args):
    """(numax Exported, jax Exported) of `make_jit(jit, jnp, NamedSharding, P, mesh index)` for `args`."""
    numax_fun = make_jit(numax.jit, jnp, NamedSharding, P, 0)
    jax_fun = make_jit(jax.jit, jjnp, JNamedSharding, JP, 1)
    return export.export(numax_fun)(*args), jax.export.export(jax_fun)(*args)


def test_with_sharding():
    """jax's test_with_sharding: in_shardings and out_shardings on 2 devices, called on the reversed devices."""
    meshes = _meshes([0, 1], (2,), ("x",))
    a = np.arange(16 * 4, dtype=np.float32).reshape((16, 4))

    def make(jit, _, named, spec, k):
        return jit(lambda b: b * 2., in_shardings=(named(meshes[k], spec("x", None)),),
                   out_shardings=named(meshes[k], spec(None, "x")))

    exp, jexp = _export_both(make, a)
    assert exp.nr_devices == jexp.nr_devices == 2
    assert _recorded(exp.in_shardings_jax(meshes[0])) == _recorded(jexp.in_shardings_jax(meshes[1]))
    assert _recorded(exp.out_shardings_jax(meshes[0])) == _recorded(jexp.out_shardings_jax(meshes[1]))
    run = _meshes([1, 0], (2,), ("y",))
    result = exp.call(numax.device_put(a, NamedSharding(run[0], P())))
    _same_result(result, jexp.call(jax.device_put(a, JNamedSharding(run[1], JP()))))
    np.testing.assert_allclose(np.asarray(result), a * 2.)
    message = "Function .* was exported for 2 devices and is called in a context with 1 devices"
    with pytest.raises(ValueError, match=message):
        jexp.call(a)
    with pytest.raises(ValueError, match=message):
        exp.call(a)
    one = _meshes([0], (1,), ("x",))
    with pytest.raises(ValueError, match=message):
        jax.jit(jexp.call, in_shardings=(JNamedSharding(one[1], JP("x", None)),))(a)
    with pytest.raises(ValueError, match=message):
        numax.jit(exp.call, in_shardings=(NamedSharding(one[0], P("x", None)),))(a)


def test_input_shardings_unused_args():
    """in_shardings_jax on a mesh of other devices places the arguments where the call runs."""
    meshes = _meshes([0, 1], (2,), ("x",))
    a = np.arange(16 * 4, dtype=np.float32).reshape((16, 4))

    def make(jit, numpy, named, spec, k):
        return jit(lambda x, y: numpy.sin(x), in_shardings=(named(meshes[k], spec("x", None)), None),
                   out_shardings=named(meshes[k], spec("x", None)))

    exp, jexp = _export_both(make, a, a)
    run = _meshes([1, 0], (2,), ("x",))
    shardings, jshardings = exp.in_shardings_jax(run[0]), jexp.in_shardings_jax(run[1])
    assert _recorded(shardings) == _recorded(jshardings) and shardings[1] is None
    result = exp.call(numax.device_put(a, shardings[0]), numax.device_put(a, shardings[1]))
    jresult = jexp.call(jax.device_put(a, jshardings[0]), jax.device_put(a, jshardings[1]))
    _same_result(result, jresult)
    assert [shard.device for shard in result.addressable_shards] == list(run[0].devices.flat)


def test_in_shardings_jax_needs_the_export_mesh_shape():
    meshes = _meshes(range(4), (4,), ("a",))
    x = np.arange(8, dtype=np.int32)

    def make(jit, _, named, spec, k):
        return jit(lambda x: x * 2, in_shardings=named(meshes[k], spec("a")))

    exp, jexp = _export_both(make, x)
    for mesh, exported in ((meshes[0].abstract_mesh, exp), (meshes[1].abstract_mesh, jexp)):
        (sharding,) = exported.in_shardings_jax(mesh)  # an abstract mesh: the recorded sharding itself
        assert sharding.mesh == mesh and tuple(sharding.spec) == ("a",)
    assert exp.out_shardings_jax(meshes[0]) == jexp.out_shardings_jax(meshes[1]) == (None,)
    other = _meshes(range(4), (4,), ("b",))
    for mesh, exported in ((other[0], exp), (other[1], jexp)):
        with pytest.raises(ValueError, match="does not match the mesh used for export"):
            exported.in_shardings_jax(mesh)
    bigger = _meshes(range(8), (8,), ("a",))
    for mesh, exported in ((bigger[0], exp), (bigger[1], jexp)):
        with pytest.raises(ValueError, match="does not match the mesh used for export"):
            exported.in_shardings_jax(mesh)


def test_call_on_the_reversed_devices_of_the_export_mesh():
    """export.md's example: exported over 8 devices, called on them in reverse order."""
    meshes = _meshes(range(8), (8,), ("a",))
    x = np.arange(32, dtype=np.int32)

    def make(jit, _, named, spec, k):
        return jit(lambda x: x.T, in_shardings=named(meshes[k], spec("a")))

    exp, jexp = _export_both(make, x)
    calling = _meshes(range(7, -1, -1), (8,), ("a",))
    result = exp.call(numax.device_put(x, exp.in_shardings_jax(calling[0])[0]))
    _same_result(result, jexp.call(jax.device_put(x, jexp.in_shardings_jax(calling[1])[0])))
    with pytest.raises(ValueError, match="was exported for 8 devices and is called in a context with 1 devices"):
        exp.call(jnp.arange(32))


def test_call_on_another_mesh_of_the_same_size():
    """Called with an argument laid out over a 2x2 mesh of other devices, the export's 4-device sharding applies
    to those devices, in their order."""
    meshes = _meshes(range(4), (4,), ("a",))
    x = np.arange(32, dtype=np.int32)

    def make(jit, _, named, spec, k):
        return jit(lambda x: x * 3, in_shardings=named(meshes[k], spec("a")))

    exp, jexp = _export_both(make, x)
    other = _meshes(range(2, 6), (2, 2), ("b", "c"))
    result = exp.call(numax.device_put(x, NamedSharding(other[0], P("b"))))
    _same_result(result, jexp.call(jax.device_put(x, JNamedSharding(other[1], JP("b")))))


def test_call_single_device_export_with_different_no_of_devices():
    a = np.arange(NUM_DEVICES * 10, dtype=np.float32).reshape((NUM_DEVICES, 10))
    exp, jexp = _export_both(lambda jit, numpy, *_: jit(lambda x: numpy.sum(x ** 2, axis=0)), a)
    assert exp.nr_devices == jexp.nr_devices == 1
    run = _meshes(range(8), (8,), ("i",))
    result = exp.call(numax.device_put(a, NamedSharding(run[0], P("i"))))
    np.testing.assert_allclose(np.asarray(result), np.asarray(jexp.call(jax.device_put(a, JNamedSharding(
        run[1], JP("i"))))), rtol=1e-6)


@pytest.mark.parametrize("devices, where", [(1, "in_shardings"), (2, "in_shardings"), (1, "constraint"),
                                            (2, "constraint")])
def test_call_with_different_no_of_devices(devices, where):
    """jax's test_call_with_different_no_of_devices_{in_shardings,sharding_constraint}_{success,error}: an
    export for one device runs on 8, one for 2 devices is refused there."""
    meshes = _meshes(range(devices), (devices,), ("i",))
    a = np.arange(NUM_DEVICES * 10, dtype=np.float32).reshape((NUM_DEVICES, 10))

    def make(jit, numpy, named, spec, k):
        sharding = named(meshes[k], spec("i"))
        if where == "in_shardings":
            return jit(lambda x: numpy.sum(x ** 2, axis=0), in_shardings=sharding)
        constrain = numax.lax.with_sharding_constraint if k == 0 else jax.lax.with_sharding_constraint
        return jit(lambda x: numpy.sum(constrain(x, sharding) ** 2, axis=0))

    exp, jexp = _export_both(make, a)
    assert exp.nr_devices == jexp.nr_devices == devices
    run = _meshes(range(8), (8,), ("i",))
    arg, jarg = numax.device_put(a, NamedSharding(run[0], P("i"))), jax.device_put(a, JNamedSharding(run[1], JP("i")))
    if devices == 1:
        np.testing.assert_allclose(np.asarray(exp.call(arg)), np.asarray(jexp.call(jarg)), rtol=1e-6)
        return
    message = "Function .* was exported for 2 devices and is called in a context with 8 devices"
    with pytest.raises(ValueError, match=message):
        jexp.call(jarg)
    with pytest.raises(ValueError, match=message):
        exp.call(arg)


def _sharded_sin_exports():
    """(numax's export, jax's export, its argument, the meshes) of `sin(x.T)` split over two devices, in and
    out."""
    meshes = _meshes([0, 1], (2,), ("d",))
    x = np.arange(200, dtype=np.float32).reshape((10, 20)) / 100

    def make(jit, numpy, named, spec, k):
        return jit(lambda x: numpy.sin(x.T), in_shardings=named(meshes[k], spec(None, "d")),
                   out_shardings=named(meshes[k], spec("d", None)))

    return (*_export_both(make, x), x, meshes)


def test_grad_with_sharding_and_serialization():
    """A sharded export serialized with its VJPs (numax's format, version 4) keeps its device count and
    shardings, and its first and second order gradients run on the mesh, as jax's do."""
    exp, jexp, x, meshes = _sharded_sin_exports()
    exp = export.deserialize(exp.serialize(vjp_order=2))
    jexp = jax.export.deserialize(jexp.serialize(vjp_order=2))
    assert exp.nr_devices == exp.vjp().nr_devices == exp.vjp().vjp().nr_devices == 2
    assert _recorded(exp.in_shardings_jax(meshes[0])) == _recorded(jexp.in_shardings_jax(meshes[1]))
    assert _recorded(exp.out_shardings_jax(meshes[0])) == _recorded(jexp.out_shardings_jax(meshes[1]))
    assert _recorded(exp.vjp()._out_named_shardings) == _recorded(exp._in_named_shardings)
    arg = numax.device_put(x, exp.in_shardings_jax(meshes[0])[0])
    jarg = jax.device_put(x, jexp.in_shardings_jax(meshes[1])[0])
    _same_result(exp.call(arg), jexp.call(jarg))

    def loss(call):
        return lambda x: (call(x) ** 2).sum()

    np.testing.assert_allclose(np.asarray(numax.grad(loss(exp.call))(arg)),
                               np.asarray(jax.grad(loss(jexp.call))(jarg)), rtol=1e-5)
    hvp = numax.grad(lambda x: numax.grad(loss(exp.call))(x).sum())(arg)
    jhvp = jax.grad(lambda x: jax.grad(loss(jexp.call))(x).sum())(jarg)
    np.testing.assert_allclose(np.asarray(hvp), np.asarray(jhvp), rtol=1e-4, atol=1e-5)


def test_sharded_export_called_under_jit():
    meshes = _meshes(range(4), (4,), ("a",))
    x = np.arange(16, dtype=np.float32)

    def make(jit, numpy, named, spec, k):
        return jit(lambda x: numpy.cos(x) * 2, in_shardings=named(meshes[k], spec("a")))

    exp, jexp = _export_both(make, x)
    result = numax.jit(lambda x: exp.call(x) + 1)(numax.device_put(x, NamedSharding(meshes[0], P("a"))))
    jresult = jax.jit(lambda x: jexp.call(x) + 1)(jax.device_put(x, JNamedSharding(meshes[1], JP("a"))))
    _same_result(result, jresult)


def test_export_of_a_library_function_not_wrapped_in_jit():
    """export.md: `export.export(jnp.cos)(1.)` (jax's jnp functions are jitted); a Python function is not."""
    exp, jexp = export.export(jnp.cos)(1.), jax.export.export(jjnp.cos)(1.)
    assert exp.calling_convention_version == jexp.calling_convention_version
    assert exp.nr_devices == jexp.nr_devices == 1
    np.testing.assert_allclose(np.asarray(exp.call(1.)), np.asarray(jexp.call(1.)), rtol=1e-6)
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        jax.export.export(lambda x: jjnp.cos(x))
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        export.export(lambda x: jnp.cos(x))


@pytest.mark.parametrize("writer", ["jax", "numax"])
def test_sharded_exports_cross_jax_serialization(writer):
    """A sharded export serialized in jax.export's format by one library runs in the other with its device count
    and shardings, on other devices, and differentiates through the serialized VJP."""
    exp, jexp, x, meshes = _sharded_sin_exports()
    if writer == "jax":
        exp = export.deserialize(jexp.serialize(vjp_order=1))
    else:
        jexp = jax.export.deserialize(exp.serialize(vjp_order=1, format="jax"))
    assert exp.nr_devices == jexp.nr_devices == exp.vjp().nr_devices == jexp.vjp().nr_devices == 2
    run = _meshes([3, 2], (2,), ("d",))
    assert _recorded(exp.in_shardings_jax(run[0])) == _recorded(jexp.in_shardings_jax(run[1]))
    assert _recorded(exp.out_shardings_jax(run[0])) == _recorded(jexp.out_shardings_jax(run[1]))
    arg = numax.device_put(x, exp.in_shardings_jax(run[0])[0])
    jarg = jax.device_put(x, jexp.in_shardings_jax(run[1])[0])
    _same_result(exp.call(arg), jexp.call(jarg))
    np.testing.assert_allclose(np.asarray(numax.grad(lambda x: exp.call(x).sum())(arg)),
                               np.asarray(jax.grad(lambda x: jexp.call(x).sum())(jarg)), rtol=1e-5)


def test_shard_map_collective_permute():
    """jax's test_shard_map_collective_permute: a shard_map with ppermute, exported over 2 devices and
    serialized, runs only in a program over 2 devices, and lays out its result as jax's does."""
    meshes = _meshes([0, 1], (2,), ("x",))
    a = np.arange(4 * 4, dtype=np.float32).reshape((4, 4))

    def make(jit, _, named, spec, k):
        lax, shard_map = (numax.lax, numax.shard_map) if k == 0 else (jax.lax, jax.shard_map)

        def body(b):
            size = lax.axis_size("x")
            return lax.ppermute(b, "x", perm=[(j, (j + 1) % size) for j in range(size)])

        sharding = named(meshes[k], spec("x", None))
        return jit(shard_map(body, mesh=meshes[k], in_specs=(spec("x", None),), out_specs=spec("x", None)),
                   in_shardings=sharding, out_shardings=sharding)

    exp, jexp = _export_both(make, a)
    exp = export.deserialize(exp.serialize())
    with pytest.raises(ValueError, match="was exported for 2 devices and is called in a context with 1 devices"):
        exp.call(a)
    result = exp.call(numax.device_put(a, NamedSharding(meshes[0], P())))
    _same_result(result, jexp.call(jax.device_put(a, JNamedSharding(meshes[1], JP()))))
    np.testing.assert_array_equal(np.asarray(result), np.concatenate([a[2:], a[:2]]))


def test_call_with_different_no_of_devices_pmap():
    a = np.arange(100, dtype=np.float32).reshape((1, 100))
    exp, jexp = _export_both(lambda jit, numpy, *_: jit(lambda x: numpy.sum(x ** 2, axis=0)), a)
    assert exp.nr_devices == jexp.nr_devices == 1
    b = np.arange(NUM_DEVICES * 100, dtype=np.float32).reshape((-1, 1, 100))
    np.testing.assert_allclose(np.asarray(numax.pmap(exp.call)(b)), np.asarray(jax.pmap(jexp.call)(b)), rtol=1e-6)


def test_multi_platform_and_sharding():
    """A sharded export for the CPU and CUDA (one module dispatching on the platform), serialized, runs on
    other CPU devices."""
    meshes = _meshes([0, 1], (2,), ("x",))
    a = np.arange(16 * 4, dtype=np.float32).reshape((16, 4))
    exp = export.export(numax.jit(lambda b: b * 2., in_shardings=(NamedSharding(meshes[0], P("x", None)),),
                                  out_shardings=NamedSharding(meshes[0], P(None, "x"))), platforms=("cpu", "cuda"))(a)
    exp = export.deserialize(exp.serialize(vjp_order=1))
    assert exp.platforms == ("cpu", "cuda") and exp.nr_devices == 2
    run = _meshes([4, 5], (2,), ("x",))
    result = exp.call(numax.device_put(a, NamedSharding(run[0], P())))
    jfun = jax.jit(lambda b: b * 2., in_shardings=(JNamedSharding(meshes[1], JP("x", None)),),
                   out_shardings=JNamedSharding(meshes[1], JP(None, "x")))
    jexp = jax.export.export(jfun, platforms=("cpu", "cuda"))(a)
    _same_result(result, jexp.call(jax.device_put(a, JNamedSharding(run[1], JP()))))


def test_grad_sharding_different_mesh():
    """jax's test_grad_sharding_different_mesh: exports over a mesh and over its reversed devices serialize
    with their VJPs, and their gradients agree."""
    mesh, mesh_rev = (Mesh(np.array(devices, dtype=object), "i") for devices in (numax.devices(),
                                                                                 numax.devices()[::-1]))
    sharding, sharding_rev = NamedSharding(mesh, P(("i",))), NamedSharding(mesh_rev, P(("i",)))

    def f(x):
        return jnp.sum(x * 2.)

    placed = numax.device_put(jnp.ones(NUM_DEVICES), sharding)
    placed_rev = numax.device_put(jnp.ones(NUM_DEVICES), sharding_rev)
    exp = export.export(numax.jit(f, in_shardings=sharding))(placed)
    exp_rev = export.export(numax.jit(f, in_shardings=sharding_rev))(jnp.ones(NUM_DEVICES))
    exp, exp_rev = (export.deserialize(e.serialize(vjp_order=1)) for e in (exp, exp_rev))
    grad, grad_rev = numax.grad(exp_rev.call)(placed_rev), numax.grad(exp.call)(placed)
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(grad_rev))
    np.testing.assert_array_equal(np.asarray(grad), np.full(NUM_DEVICES, 2., np.float32))


def test_basic_single_device_sharding():
    x = np.arange(16, dtype=np.float32).reshape(4, -1)
    device, jdevice = numax.devices()[0], jax.devices()[0]
    fun = numax.jit(lambda x: x * 2., in_shardings=numax.sharding.SingleDeviceSharding(device),
                    out_shardings=numax.sharding.SingleDeviceSharding(device))
    jfun = jax.jit(lambda x: x * 2., in_shardings=jax.sharding.SingleDeviceSharding(jdevice),
                   out_shardings=jax.sharding.SingleDeviceSharding(jdevice))
    exp, jexp = export.export(fun)(x), jax.export.export(jfun)(x)
    assert exp.nr_devices == jexp.nr_devices == 1
    assert _recorded(exp._in_named_shardings) == _recorded(jexp._in_named_shardings)
    exp = export.deserialize(exp.serialize())
    np.testing.assert_array_equal(np.asarray(exp.call(x)), np.asarray(jexp.call(x)))
# export.md's cells 348-387: an export for an AbstractMesh's shape, and one for a concrete mesh, called on a
# concrete mesh and on a 2x2 mesh of other devices.


@pytest.mark.parametrize("abstract", [True, False])
def test_export_for_shape_dtype_structs_with_shardings(abstract):
    meshes = _meshes(range(4), (4,), ("a",))
    export_meshes = (AbstractMesh((4,), ("a",)), JAbstractMesh((4,), ("a",))) if abstract else meshes
    struct = numax.ShapeDtypeStruct((32,), np.int32, sharding=NamedSharding(export_meshes[0], P("a")))
    jstruct = jax.ShapeDtypeStruct((32,), np.int32, sharding=JNamedSharding(export_meshes[1], JP("a")))
    exp, jexp = export.export(numax.jit(lambda x: x.T))(struct), jax.export.export(jax.jit(lambda x: x.T))(jstruct)
    assert exp.nr_devices == jexp.nr_devices == 4
    assert _recorded(exp.in_shardings_jax(export_meshes[0])) == _recorded(jexp.in_shardings_jax(export_meshes[1]))
    x = np.arange(32, dtype=np.int32)
    _same_result(exp.call(numax.device_put(x, NamedSharding(meshes[0], P("a")))),
                 jexp.call(jax.device_put(x, JNamedSharding(meshes[1], JP("a")))))
    other = _meshes(range(2, 6), (2, 2), ("b", "c"))
    _same_result(exp.call(numax.device_put(x, NamedSharding(other[0], P("b")))),
                 jexp.call(jax.device_put(x, JNamedSharding(other[1], JP("b")))))
