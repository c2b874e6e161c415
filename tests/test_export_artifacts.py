"""Committed export blobs of numax's format versions (tests/data/export_v<N>.bin, written by
tests/data/make_export_artifacts.py with the numax of that version) still deserialize and run, so that a
format change that breaks older blobs is caught. (Versions 1 and 2 are checked in tests/test_export.py.)"""

import collections
import importlib.util
import pathlib
import struct

import numpy as np

import numax
from numax import export
from numax.sharding import Mesh

DATA = pathlib.Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_export_artifacts", DATA / "make_export_artifacts.py")
artifacts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(artifacts)


def _ordered_layer_reference(x, params):
    y = np.tanh(x @ params["w"] + params["b"])
    return y, y.sum()


def test_committed_v3_artifact_still_loads_and_runs():
    blob = (DATA / "export_v3.bin").read_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] == 3  # the file keeps format version 3
    exported = export.deserialize(blob)
    x, params = artifacts.ordered_layer_args()
    out = exported.call(x, params)
    assert type(out) is collections.OrderedDict and list(out) == ["y", "total"]  # version 3's custom nodes
    y_ref, total_ref = _ordered_layer_reference(x, params)
    np.testing.assert_allclose(np.asarray(out["y"]), y_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out["total"]), total_ref, rtol=1e-5, atol=1e-5)
    grad = numax.grad(lambda x: exported.call(x, params)["total"])(x)  # the blob holds one order of VJP
    expected = (1 - y_ref ** 2) @ params["w"].T  # d(sum tanh(x @ w + b))/dx
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-4, atol=1e-5)


def test_committed_v4_artifact_still_loads_and_runs_sharded():
    blob = (DATA / "export_v4.bin").read_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] == 4
    exported = export.deserialize(blob)
    assert exported.nr_devices == 2 and exported.vjp().nr_devices == 2  # version 4's shardings
    mesh = Mesh(np.array(numax.devices()[2:4][::-1], dtype=object), ("d",))  # other devices, same shape
    x_sharding, w_sharding = exported.in_shardings_jax(mesh)
    assert tuple(x_sharding.spec) == ("d", None) and tuple(w_sharding.spec) == ()
    assert tuple(exported.out_shardings_jax(mesh)[0].spec) == (None, "d")
    x, w = artifacts.sharded_layer_args()
    x_placed, w_placed = numax.device_put(x, x_sharding), numax.device_put(w, w_sharding)
    y = exported.call(x_placed, w_placed)
    np.testing.assert_allclose(np.asarray(y), np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    assert {shard.device for shard in y.addressable_shards} == set(mesh.devices.flat)
    grad = numax.grad(lambda x: exported.call(x, w_placed).sum())(x_placed)
    np.testing.assert_allclose(np.asarray(grad), (1 - np.tanh(x @ w) ** 2) @ w.T, rtol=1e-4, atol=1e-5)
