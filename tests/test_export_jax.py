"""numax.export and jax.export read each other's serialized `Exported`: jax's blobs run in numax (eagerly, in
jit, vmap and grad through jax's exported VJP, in a process without jax), numax's run in jax (in jax.jit and
jax.grad), compared with the other side's results; the FlatBuffers codec alone, checked against the
`flatbuffers` package; clear errors for what numax does not read and for corrupt blobs."""

import collections
import struct

import flatbuffers
import hypothesis.strategies as st
import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from harness import run_in_fresh_process
from hypothesis import given
from jax import export as jax_export
from jax._src.export import serialization_generated as jax_schema

import numax
import numax.numpy as jnp
from numax import export
from numax.export import _flatbuffer as fb


def _rng_args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32), "mask": rng.random(3) > 0.5,
              "count": np.array([1, 4, 2], np.int32)}
    return x, params, np.float32(7.0)


def _mixed_jax(x, params, unused):
    """Dicts and None in the results, bool and int32 arguments, a bfloat16 result; `unused` is dropped by jax."""
    masked = jjnp.where(params["mask"], x, 0.0)
    return {"y": masked @ params["w"], "none": None}, (params["count"] * 2).astype(jjnp.bfloat16), masked.sum()


def _mixed_numax(x, params, unused):
    masked = jnp.where(params["mask"], x, 0.0)
    return {"y": masked @ params["w"], "none": None}, (params["count"] * 2).astype(jnp.bfloat16), masked.sum()


def _loss_jax(w, x):
    return jjnp.tanh(x @ w).sum() + (w * w).sum()


def _loss_numax(w, x):
    return jnp.tanh(x @ w).sum() + (w * w).sum()


def _scalar_jax(s, n):
    return s * s + n


def _scalar_numax(s, n):
    return s * s + n


_SCALAR_ARGS = (np.float32(1.5), np.float32(-2.0))


def _assert_trees_close(got, want, rtol=1e-5):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for got_leaf, want_leaf in zip(got_leaves, want_leaves):
        assert np.asarray(got_leaf).dtype == np.asarray(want_leaf).dtype
        np.testing.assert_allclose(np.asarray(got_leaf, np.float64), np.asarray(want_leaf, np.float64),
                                   rtol=rtol, atol=1e-6)


@pytest.fixture(scope="module")
def jax_blobs():
    """jax.export's serializations of the three functions (the loss with its VJP)."""
    x, params, unused = _rng_args()
    return {"mixed": jax_export.export(jax.jit(_mixed_jax))(x, params, unused).serialize(),
            "loss": jax_export.export(jax.jit(_loss_jax))(params["w"], x).serialize(vjp_order=1),
            "scalar": jax_export.export(jax.jit(_scalar_jax))(*_SCALAR_ARGS).serialize()}


@pytest.fixture(scope="module")
def numax_exports():
    x, params, unused = _rng_args()
    return {"mixed": export.export(numax.jit(_mixed_numax))(x, params, unused),
            "loss": export.export(numax.jit(_loss_numax))(params["w"], x),
            "scalar": export.export(numax.jit(_scalar_numax))(*_SCALAR_ARGS)}


# --- jax -> numax ----------------------------------------------------------------------------------------

def test_jax_blob_describes_the_function(jax_blobs):
    exported = export.deserialize(jax_blobs["mixed"])
    x, params, unused = _rng_args()
    assert exported.fun_name == "_mixed_jax" and exported.platforms == ("cpu",)
    assert exported.in_tree == numax.tree_structure(((x, params, unused), {}))
    assert [(a.shape, a.dtype) for a in exported.in_avals] == [
        ((2, 3), np.float32), ((3,), np.int32), ((3,), np.bool_), ((3, 2), np.float32), ((), np.float32)]
    assert [a.dtype for a in exported.out_avals] == [np.float32, np.dtype(ml_dtypes.bfloat16), np.float32]
    assert exported.module_kept_var_idx == (0, 1, 2, 3)  # jax dropped `unused`
    assert exported.calling_convention_version == 10 and exported.nr_devices == 1


def test_jax_blob_runs_in_numax_eagerly_in_jit_and_vmap(jax_blobs):
    exported = export.deserialize(jax_blobs["mixed"])
    args = _rng_args()
    want = _mixed_jax(*args)
    _assert_trees_close(exported.call(*args), want)
    _assert_trees_close(numax.jit(exported.call)(*args), want)
    x, params, unused = args
    xs = np.stack([x, 2 * x, -x])
    batched = numax.vmap(lambda x: exported.call(x, params, unused)[0]["y"])(xs)
    want_batched = jax.vmap(lambda x: _mixed_jax(x, params, unused)[0]["y"])(xs)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(want_batched), rtol=1e-5, atol=1e-6)
    scalar = export.deserialize(jax_blobs["scalar"])
    _assert_trees_close(scalar.call(*_SCALAR_ARGS), _scalar_jax(*_SCALAR_ARGS))


def test_numax_grad_through_jax_exported_vjp(jax_blobs):
    exported = export.deserialize(jax_blobs["loss"])
    x, params, _ = _rng_args()
    w = params["w"]
    assert [a.shape for a in exported.vjp().in_avals] == [(3, 2), (2, 3), ()]  # primals, then the cotangent
    np.testing.assert_allclose(float(exported.call(w, x)), float(_loss_jax(w, x)), rtol=1e-5)
    want = jax.grad(_loss_jax, argnums=(0, 1))(w, x)
    _assert_trees_close(numax.grad(exported.call, argnums=(0, 1))(w, x), want, rtol=1e-4)
    _assert_trees_close(numax.jit(numax.grad(exported.call))(w, x), want[0], rtol=1e-4)


def test_jax_blob_rewritten_in_numax_format_keeps_the_dropped_argument(jax_blobs):
    exported = export.deserialize(export.deserialize(jax_blobs["mixed"]).serialize())
    assert exported.module_kept_var_idx == (0, 1, 2, 3)
    _assert_trees_close(exported.call(*_rng_args()), _mixed_jax(*_rng_args()))


def test_fresh_process_runs_a_jax_blob_without_jax(jax_blobs, tmp_path):
    blob_path = tmp_path / "mixed.bin"
    blob_path.write_bytes(jax_blobs["mixed"])
    x, params, unused = _rng_args()
    script = (
        "import json, sys, numpy as np\n"
        "from numax import export\n"
        f"exported = export.deserialize(open({str(blob_path)!r}, 'rb').read())\n"
        "rng = np.random.default_rng(3)\n"
        "x = rng.standard_normal((2, 3)).astype(np.float32)\n"
        "params = {'w': rng.standard_normal((3, 2)).astype(np.float32), 'mask': rng.random(3) > 0.5,\n"
        "          'count': np.array([1, 4, 2], np.int32)}\n"
        "out, doubled, total = exported.call(x, params, np.float32(7.0))\n"
        "print(json.dumps({'y': np.asarray(out['y']).tolist(), 'doubled': np.asarray(doubled, float).tolist(),\n"
        "                  'jax_imported': 'jax' in sys.modules}))\n"
    )
    result = run_in_fresh_process(script)
    assert not result["jax_imported"]
    want, doubled, _ = _mixed_jax(x, params, unused)
    np.testing.assert_allclose(np.array(result["y"]), np.asarray(want["y"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.array(result["doubled"]), np.asarray(doubled, float))


# --- numax -> jax ----------------------------------------------------------------------------------------

def test_numax_blob_runs_in_jax_jit(numax_exports):
    for name, args in (("mixed", _rng_args()), ("scalar", _SCALAR_ARGS)):
        exported = numax_exports[name]
        in_jax = jax_export.deserialize(bytearray(exported.serialize(format="jax")))
        assert in_jax.fun_name == exported.fun_name and in_jax.platforms == ("cpu",)
        assert in_jax.in_tree == jax.tree_util.tree_structure((args, {}))
        _assert_trees_close(jax.jit(in_jax.call)(*args), exported.call(*args))


def test_jax_grad_through_numax_exported_vjp(numax_exports):
    exported = numax_exports["loss"]
    in_jax = jax_export.deserialize(bytearray(exported.serialize(vjp_order=1, format="jax")))
    assert in_jax.has_vjp() and not in_jax.vjp().has_vjp()
    x, params, _ = _rng_args()
    w = params["w"]
    want = numax.grad(exported.call, argnums=(0, 1))(w, x)
    _assert_trees_close(jax.jit(jax.grad(in_jax.call, argnums=(0, 1)))(w, x), want, rtol=1e-4)


def test_numax_reads_its_own_jax_format(numax_exports):
    exported = numax_exports["loss"]
    again = export.deserialize(exported.serialize(vjp_order=1, format="jax"))
    x, params, _ = _rng_args()
    _assert_trees_close(numax.grad(again.call)(params["w"], x), numax.grad(exported.call)(params["w"], x))
    with pytest.raises(ValueError, match="unknown format"):
        exported.serialize(format="tf")


# --- what numax does not read, and corrupt blobs ---------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])
jax_export.register_namedtuple_serialization(Point, serialized_name="test_export_jax.Point")


def test_unsupported_jax_exports_are_refused_clearly():
    x = np.ones((4, 3), np.float32)
    custom = jax_export.export(jax.jit(lambda p: p.x + p.y))(Point(x, x)).serialize()
    with pytest.raises(ValueError, match="unregistered type `test_export_jax.Point`"):  # jax's error
        export.deserialize(custom)  # (sharded jax exports are read: tests/test_export_sharded.py)


def _spd_cholesky(np_module, linalg):
    def f(a):
        return linalg.cholesky(a @ a.T + 4 * np_module.eye(a.shape[0], dtype=a.dtype)) * 2
    return f


def test_multi_platform_exports_run_both_ways():
    # Cholesky lowers to LAPACK on the CPU and cuSOLVER on CUDA, so each module's platform dispatch is real.
    a = np.random.default_rng(3).normal(size=(4, 4)).astype(np.float32)
    expected = np.linalg.cholesky(a.astype(np.float64) @ a.T + 4 * np.eye(4)) * 2
    from_jax = export.deserialize(
        jax_export.export(jax.jit(_spd_cholesky(jjnp, jjnp.linalg)), platforms=("cuda", "cpu"))(a).serialize())
    assert from_jax.platforms == ("cuda", "cpu") and from_jax.uses_global_constants
    np.testing.assert_allclose(from_jax.call(a), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(numax.jit(from_jax.call)(a), expected, rtol=1e-5, atol=1e-5)
    ours = export.export(numax.jit(_spd_cholesky(jnp, jnp.linalg)), platforms=("cuda", "cpu"))(a)
    in_jax = jax_export.deserialize(ours.serialize(format="jax"))
    assert in_jax.platforms == ("cuda", "cpu") and in_jax.uses_global_constants
    np.testing.assert_allclose(jax.jit(in_jax.call)(a), expected, rtol=1e-5, atol=1e-5)


def _mlp(np_module):
    def f(x, w):
        h = np_module.tanh(x @ w)
        return h, (h * h).mean()
    return f


def test_shape_polymorphic_exports_run_both_ways():
    rng = np.random.default_rng(5)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    from_jax = export.deserialize(jax_export.export(jax.jit(_mlp(jjnp)))(
        jax.ShapeDtypeStruct(jax_export.symbolic_shape("b, 3"), np.float32), w).serialize())
    assert str(from_jax.in_avals[0].shape[0]) == "b"
    ours = export.export(numax.jit(_mlp(jnp)))(
        numax.ShapeDtypeStruct(export.symbolic_shape("b, 3"), np.float32), w)
    in_jax = jax_export.deserialize(export.deserialize(ours.serialize()).serialize(format="jax"))  # via numax's
    assert str(in_jax.in_avals[0].shape[0]) == "b"
    for batch in (1, 6):
        x = rng.normal(size=(batch, 3)).astype(np.float32)
        h = np.tanh(x.astype(np.float64) @ w)
        for got in (from_jax.call(x, w), numax.jit(from_jax.call)(x, w), jax.jit(in_jax.call)(x, w)):
            np.testing.assert_allclose(got[0], h, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got[1], (h * h).mean(), rtol=1e-5)


def _minimal_exported(version):
    """A hand-built jax Exported table with only a version, a name and a module."""
    builder = fb.Builder()
    name, module = builder.string("f"), builder.byte_vector(b"\x01\x02")
    return builder.finish(builder.table([(0, "H", version, 0), (14, "H", 10, 0)], [(1, name), (13, module)]))


@pytest.mark.parametrize("damage, error, message", [
    (lambda blob: b"", ValueError, "neither a numax export .* nor a jax.export"),
    (lambda blob: bytes(range(256)) * 3, ValueError, "neither a numax export .* nor a jax.export"),
    (lambda blob: blob[:len(blob) // 3], ValueError, "jax.export"),
    (lambda blob: _minimal_exported(12), ValueError, "version 12 is not one numax reads"),
    (lambda blob: _minimal_exported(3), ValueError, "corrupt jax.export serialization: it has no in_tree"),
])
def test_corrupt_jax_blobs_are_refused(jax_blobs, damage, error, message):
    with pytest.raises(error, match=message):
        export.deserialize(damage(jax_blobs["mixed"]))


# --- the FlatBuffers codec alone -------------------------------------------------------------------------

def _build_sample(builder, name, numbers, payload, flag, ratio):
    """A table with every kind of field the codec writes: scalars, strings, vectors and nested tables."""
    child = builder.table([(0, "b", -3, 0)], [(1, builder.string("child"))])
    strings = builder.offset_vector([builder.string(s) for s in (name, "", "x")])
    references = [(2, builder.string(name)), (3, builder.scalar_vector("u4", numbers)),
                  (4, builder.byte_vector(payload)), (5, builder.offset_vector([child, child])), (6, strings),
                  (7, child), (8, builder.scalar_vector("f8", [ratio]))]
    return builder.table([(0, "?", flag, False), (1, "d", ratio, 0.0), (9, "h", -7, 0)], references)


@given(name=st.text(max_size=8), numbers=st.lists(st.integers(0, 2**32 - 1), max_size=5),
       payload=st.binary(max_size=9), flag=st.booleans(), ratio=st.floats(allow_nan=False))
def test_flatbuffer_round_trip(name, numbers, payload, flag, ratio):
    builder = fb.Builder()
    table = fb.root_table(builder.finish(_build_sample(builder, name, numbers, payload, flag, ratio)))
    assert table.scalar(0, "?", False) == flag and table.has(0) == flag  # a default value is left out
    assert table.scalar(1, "d", 0.0) == ratio and table.has(1) == (ratio != 0.0)
    assert table.scalar(9, "h") == -7 and table.scalar(10, "I", 42) == 42  # a slot past the vtable: default
    assert table.string(2) == name and table.scalar_vector(3, "u4").tolist() == numbers
    assert table.byte_vector(4) == payload and table.strings(6) == [name, "", "x"]
    assert table.scalar_vector(8, "f8").tolist() == [ratio]
    for child in [*table.tables(5), table.table(7)]:
        assert child.scalar(0, "b") == -3 and child.string(1) == "child"
    assert table.table(11) is None and table.string(12) is None and table.tables(13) == []


def test_flatbuffer_reads_what_the_flatbuffers_package_builds():
    builder = flatbuffers.Builder(0)
    dims = [builder.CreateString(d) for d in ("4", "17")]
    jax_schema.AbstractValueStartShapeVector(builder, len(dims))
    for d in reversed(dims):
        builder.PrependUOffsetTRelative(d)
    shape = builder.EndVector()
    jax_schema.AbstractValueStart(builder)
    jax_schema.AbstractValueAddShape(builder, shape)
    jax_schema.AbstractValueAddDtype(builder, jax_schema.DType.bf16)
    jax_schema.AbstractValueAddMemorySpace(builder, jax_schema.MemorySpace.Device)
    builder.Finish(jax_schema.AbstractValueEnd(builder))
    table = fb.root_table(builder.Output())
    assert table.strings(1) == ["4", "17"] and not table.has(0)
    assert (table.scalar(2, "b"), table.scalar(3, "b")) == (jax_schema.DType.bf16, jax_schema.MemorySpace.Device)


def test_flatbuffers_package_reads_what_the_codec_builds():
    builder = fb.Builder()
    child = builder.table([(0, "b", jax_schema.PyTreeDefKind.leaf, 0)])
    names = builder.offset_vector([builder.string("a"), builder.string("bc")])
    root = builder.table([(0, "b", jax_schema.PyTreeDefKind.dict, 0)],
                         [(1, builder.offset_vector([child, child])), (2, names),
                          (4, builder.byte_vector(b"\x00\xffaux"))])
    tree = jax_schema.PyTreeDef.GetRootAs(builder.finish(root))
    assert tree.Kind() == jax_schema.PyTreeDefKind.dict and tree.ChildrenLength() == 2
    assert [tree.ChildrenNames(i) for i in range(2)] == [b"a", b"bc"]
    assert tree.Children(1).Kind() == jax_schema.PyTreeDefKind.leaf
    assert tree.CustomAuxdataAsNumpy().tobytes() == b"\x00\xffaux"


def test_flatbuffer_reader_refuses_out_of_bounds_offsets():
    builder = fb.Builder()
    buffer = builder.finish(builder.table([], [(0, builder.string("hello"))]))
    with pytest.raises(fb.FlatBufferError, match="outside"):
        fb.root_table(struct.pack("<I", 1000) + buffer[4:])
    with pytest.raises(fb.FlatBufferError, match="overruns"):
        fb.root_table(buffer[:-4]).string(0)
