"""numax.export: export, serialize, deserialize and call (eagerly, under jit, vmap and grad), in a fresh
process that never defines the function, from an artifact committed in format version 1, and bad blobs."""

import pathlib
import struct
import zlib

import hypothesis.strategies as st
import numpy as np
import pytest
from harness import run_in_fresh_process
from hypothesis import given

import numax
import numax.numpy as jnp
from numax import export

V1_ARTIFACT = pathlib.Path(__file__).parent / "data" / "export_v1.bin"
V2_ARTIFACT = pathlib.Path(__file__).parent / "data" / "export_v2.bin"  # shape-polymorphic, for cpu and cuda


def _layer(x, params):
    """The function of the committed artifact: a dense layer with tanh, and the sum of its outputs."""
    y = jnp.tanh(x @ params["w"] + params["b"])
    return y, y.sum()


def _layer_reference(x, params):
    y = np.tanh(x @ params["w"] + params["b"])
    return y, y.sum()


def _layer_args():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": rng.standard_normal(2).astype(np.float32)}
    return x, params


def _layer_grad_reference(x, params):
    """d(sum of tanh(x @ w + b)) / dx, by hand."""
    y = np.tanh(x @ params["w"] + params["b"])
    return (1 - y**2) @ params["w"].T


@pytest.fixture(scope="module")
def layer_blob():
    x, params = _layer_args()
    return export.export(numax.jit(_layer))(x, params).serialize(vjp_order=1)


def _check_layer(exported, x, params):
    got_y, got_sum = exported.call(x, params)
    want_y, want_sum = _layer_reference(x, params)
    np.testing.assert_allclose(np.asarray(got_y), want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(got_sum), want_sum, rtol=1e-5, atol=1e-5)


def test_exported_describes_the_function():
    x, params = _layer_args()
    exported = export.export(numax.jit(_layer))(numax.ShapeDtypeStruct(x.shape, x.dtype), params)
    assert exported.fun_name == "_layer"
    assert exported.platforms == ("cpu",)
    assert [a.shape for a in exported.in_avals] == [(4, 3), (2,), (3, 2)]  # dict leaves in key order
    assert [a.shape for a in exported.out_avals] == [(4, 2), ()]
    assert exported.in_tree == numax.tree_structure(((x, params), {}))
    assert exported.out_tree == numax.tree_structure((0, 0))
    assert "func.func public @main" in exported.mlir_module()


def test_round_trip_eager_jit_vmap_grad(layer_blob):
    x, params = _layer_args()
    exported = export.deserialize(layer_blob)
    _check_layer(exported, x, params)
    under_jit = numax.jit(lambda x, p: exported.call(x, p)[0] * 2)(x, params)
    np.testing.assert_allclose(np.asarray(under_jit), 2 * _layer_reference(x, params)[0], rtol=1e-5, atol=1e-6)
    xs = np.stack([x, -x, 2 * x])
    batched = numax.vmap(lambda x: exported.call(x, params)[0])(xs)
    np.testing.assert_allclose(np.asarray(batched), np.stack([_layer_reference(v, params)[0] for v in xs]),
                               rtol=1e-5, atol=1e-6)
    grad = numax.grad(lambda x: exported.call(x, params)[1])(x)
    np.testing.assert_allclose(np.asarray(grad), _layer_grad_reference(x, params), rtol=1e-4, atol=1e-5)
    jit_grad = numax.jit(numax.grad(lambda x: exported.call(x, params)[1]))(x)
    np.testing.assert_allclose(np.asarray(jit_grad), np.asarray(grad), rtol=1e-6)


_unary = {"sin": (jnp.sin, np.sin), "square": (lambda x: x * x, lambda x: x * x), "cumsum": (jnp.cumsum, np.cumsum)}


@given(shape=st.lists(st.integers(1, 4), max_size=3), dtype=st.sampled_from([np.float32, np.int32]),
       name=st.sampled_from(sorted(_unary)))
def test_round_trip_shapes_and_dtypes(shape, dtype, name):
    numax_fn, numpy_fn = _unary[name]
    if dtype == np.int32 and name == "sin":
        numpy_fn = lambda x: np.sin(x).astype(np.float32)  # noqa: E731  (ints promote to float32 in numax)
    x = (np.arange(int(np.prod(shape))).reshape(shape) - 2).astype(dtype)
    exported = export.deserialize(export.export(numax.jit(numax_fn))(x).serialize())
    got = exported.call(x)
    assert got.dtype == exported.out_avals[0].dtype
    np.testing.assert_allclose(np.asarray(got), numpy_fn(x).reshape(np.shape(got)), rtol=1e-6, atol=1e-6)


def test_fresh_process_runs_a_blob_without_the_function(layer_blob, tmp_path):
    blob_path = tmp_path / "layer.bin"
    blob_path.write_bytes(layer_blob)
    x, params = _layer_args()
    np.savez(tmp_path / "args.npz", x=x, **params)
    script = (
        "import json, sys, numpy as np\n"
        "from numax import export\n"
        f"exported = export.deserialize(open({str(blob_path)!r}, 'rb').read())\n"
        f"args = np.load({str(tmp_path / 'args.npz')!r})\n"
        "y, total = exported.call(args['x'], {'w': args['w'], 'b': args['b']})\n"
        "print(json.dumps({'y': np.asarray(y).tolist(), 'jax_imported': 'jax' in sys.modules,\n"
        "                  'fun_name': exported.fun_name}))\n"
    )
    result = run_in_fresh_process(script)
    assert result["fun_name"] == "_layer" and not result["jax_imported"]
    np.testing.assert_allclose(np.array(result["y"]), _layer_reference(x, params)[0], rtol=1e-5, atol=1e-6)


def test_committed_v1_artifact_still_loads_and_runs():
    blob = V1_ARTIFACT.read_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] == 1  # the file keeps format version 1
    exported = export.deserialize(blob)
    x, params = _layer_args()
    _check_layer(exported, x, params)
    grad = numax.grad(lambda x: exported.call(x, params)[1])(x)
    np.testing.assert_allclose(np.asarray(grad), _layer_grad_reference(x, params), rtol=1e-4, atol=1e-5)


def _with_header(blob, version=None, checksum_of=None):
    magic, old_version, metadata_size, checksum = struct.unpack_from("<8sIII", blob)
    payload = checksum_of if checksum_of is not None else blob[20:]
    return struct.pack("<8sIII", magic, version or old_version, metadata_size, zlib.crc32(payload)) + payload


@pytest.mark.parametrize("damage, message", [
    (lambda blob: b"NOTNUMAX" + blob[8:], "magic"),
    (lambda blob: blob[:12], "magic"),
    (lambda blob: _with_header(blob, version=export.SERIALIZATION_VERSION + 1),
     f"version {export.SERIALIZATION_VERSION + 1} is newer"),
    (lambda blob: blob[:-7], "truncated"),
    (lambda blob: blob[:-3] + bytes(3), "checksum"),
    (lambda blob: _with_header(blob, checksum_of=blob[20:-40] + b"\x00" * 40), "portable artifact"),
])
def test_bad_blobs_are_refused(layer_blob, damage, message):
    with pytest.raises(ValueError, match=message):
        export.deserialize(damage(layer_blob))


def test_user_errors():
    x, params = _layer_args()
    with pytest.raises(ValueError, match="must be the result of `jit`"):  # jax's errors
        export.export(_layer)
    exported = export.deserialize(export.export(numax.jit(_layer))(x, params).serialize())
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[0\]"):
        exported.call(x[:2], params)
    with pytest.raises(ValueError, match="must have the same pytree structure"):
        exported.call(x, [params["b"], params["w"]])
    with pytest.raises(ValueError, match="No VJP is available"):
        numax.grad(lambda x: exported.call(x, params)[1])(x)
    for_cuda = export.export(numax.jit(jnp.sin), platforms="cuda")(x)
    with pytest.raises(ValueError, match="exported for platforms"):
        for_cuda.call(x)
    with pytest.raises(ValueError, match="distinct"):
        export.export(numax.jit(jnp.sin), platforms=("cpu", "cpu"))


def _v2_export():
    """The committed version 2 artifact's export: the layer for any batch size, for the CPU and CUDA."""
    x, params = _layer_args()
    batch = numax.ShapeDtypeStruct(export.symbolic_shape(f"b, {x.shape[1]}"), x.dtype)
    return export.export(numax.jit(_layer), platforms=("cpu", "cuda"))(batch, params)


def test_committed_v2_artifact_still_loads_and_runs():
    blob = V2_ARTIFACT.read_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] == 2
    exported = export.deserialize(blob)
    assert exported.platforms == ("cpu", "cuda") and str(exported.in_avals[0].shape[0]) == "b"
    _, params = _layer_args()
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)
        _check_layer(exported, x, params)
        grad = numax.grad(lambda x: exported.call(x, params)[1])(x)
        np.testing.assert_allclose(np.asarray(grad), _layer_grad_reference(x, params), rtol=1e-4, atol=1e-5)


if __name__ == "__main__":  # writes the committed artifacts (only when the format version changes: a new file)
    x, params = _layer_args()
    if not V1_ARTIFACT.exists():
        V1_ARTIFACT.write_bytes(export.export(numax.jit(_layer))(x, params).serialize(vjp_order=1))
    if not V2_ARTIFACT.exists():
        V2_ARTIFACT.write_bytes(_v2_export().serialize(vjp_order=1))
