"""`numax.experimental.multihost_utils` against `jax.experimental.multihost_utils`.

In one process (the suite's 8 forced CPU devices) every function is called on the same inputs under both
libraries and the results compared: kinds, values, shapes, dtypes, shard layouts and exception types. The
two-process behaviour runs in tests/multiprocess_worker.py's `multihost_utils` scenario: each process
checks itself against numpy and the parent reads the reports.
"""

import json

import jax
import jax.experimental.multihost_utils as jmu
import numpy as np
import pytest
from test_multiprocess import DEADLINE, _read, _workers  # the two-process harness (worker files, bounded waits)

import numax
from numax.experimental import multihost_utils as mu
from numax.sharding import Mesh, NamedSharding, PartitionSpec

TREE = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": [np.int32(7), np.array([True, False])],
        "c": 2.5}


def _assert_same_numpy_tree(ours, theirs):
    ours_leaves, ours_def = jax.tree.flatten(ours)
    theirs_leaves, theirs_def = jax.tree.flatten(theirs)
    assert ours_def == theirs_def
    for a, b in zip(ours_leaves, theirs_leaves):
        assert type(a) is type(b) is np.ndarray
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("tiled", [False, True])
def test_process_allgather_matches_jax(tiled):
    _assert_same_numpy_tree(mu.process_allgather(TREE, tiled=tiled), jmu.process_allgather(TREE, tiled=tiled))
    data = np.arange(16, dtype=np.float32).reshape(8, 2)
    ours = numax.device_put(data, NamedSharding(Mesh(np.array(numax.devices()), ("x",)), PartitionSpec("x")))
    theirs = jax.device_put(data, jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()), ("x",)),
                                                              jax.sharding.PartitionSpec("x")))
    _assert_same_numpy_tree(mu.process_allgather(ours, tiled), jmu.process_allgather(theirs, tiled))


@pytest.mark.parametrize("is_source", [None, True, False])
def test_broadcast_one_to_all_matches_jax(is_source):
    _assert_same_numpy_tree(mu.broadcast_one_to_all(TREE, is_source), jmu.broadcast_one_to_all(TREE, is_source))


def test_assert_equal_sync_and_preemption_point_match_jax():
    assert mu.assert_equal(TREE, "differs") is jmu.assert_equal(TREE, "differs") is None
    assert mu.sync_global_devices("step") is jmu.sync_global_devices("step") is None
    assert mu.reached_preemption_sync_point(3) is jmu.reached_preemption_sync_point(3) is False


def _meshes():
    grid = (4, 2)
    return (Mesh(np.array(numax.devices()).reshape(grid), ("x", "y")),
            jax.sharding.Mesh(np.array(jax.devices()).reshape(grid), ("x", "y")))


def _assert_same_global_array(ours, theirs):
    assert isinstance(ours, numax.Array) and isinstance(theirs, jax.Array)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert tuple(ours.sharding.spec) == tuple(theirs.sharding.spec)
    expected = {shard.device.id: shard.index for shard in theirs.addressable_shards}
    assert {shard.device.id: shard.index for shard in ours.addressable_shards} == expected


SPECS = [("x", "y"), ("y",), (None, ("x", "y")), ()]


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_host_local_to_global_and_back_match_jax(spec):
    mesh, jax_mesh = _meshes()
    data = np.arange(8 * 16, dtype=np.float64).reshape(8, 16)  # float64: canonicalized to float32 by both
    tree = {"w": data, "n": [data.astype(np.int32)]}
    ours = mu.host_local_array_to_global_array(tree, mesh, PartitionSpec(*spec))
    theirs = jmu.host_local_array_to_global_array(tree, jax_mesh, jax.sharding.PartitionSpec(*spec))
    for key in ("w", "n"):
        _assert_same_global_array(*(jax.tree.leaves(t[key])[0] for t in (ours, theirs)))
    # In one process every array is host-local already: both hand it back as it is.
    back = mu.global_array_to_host_local_array(ours, mesh, PartitionSpec(*spec))
    assert back["w"] is ours["w"] and back["n"][0] is ours["n"][0]
    # A host value (as AD may pass) becomes an array over the mesh.
    _assert_same_global_array(mu.global_array_to_host_local_array(data, mesh, PartitionSpec(*spec)),
                              jmu.global_array_to_host_local_array(data, jax_mesh, jax.sharding.PartitionSpec(*spec)))


def test_pspecs_as_a_tree_prefix_and_bad_pspecs_match_jax():
    mesh, jax_mesh = _meshes()
    data = np.ones((8, 4), np.float32)
    ours = mu.host_local_array_to_global_array((data, {"u": data, "v": data}), mesh,
                                               (PartitionSpec("x"), PartitionSpec(None, "y")))
    theirs = jmu.host_local_array_to_global_array((data, {"u": data, "v": data}), jax_mesh,
                                                  (jax.sharding.PartitionSpec("x"),
                                                   jax.sharding.PartitionSpec(None, "y")))
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        _assert_same_global_array(a, b)
    for function, jax_function in ((mu.host_local_array_to_global_array, jmu.host_local_array_to_global_array),
                                   (mu.global_array_to_host_local_array, jmu.global_array_to_host_local_array)):
        with pytest.raises(ValueError) as jax_error:
            jax_function(data, jax_mesh, None)
        with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs argument"):
            function(data, mesh, None)
        assert "`None` is not a valid input to the pspecs argument" in str(jax_error.value)
        with pytest.raises(ValueError):
            jax_function((data, data), jax_mesh, (jax.sharding.PartitionSpec(),) * 3)
        with pytest.raises(ValueError):
            function((data, data), mesh, (PartitionSpec(),) * 3)


def test_two_processes_gather_broadcast_and_convert_arrays(tmp_path):
    with _workers("multihost_utils", tmp_path) as processes:
        for process in processes:
            process.wait(timeout=DEADLINE)
    for index, process in enumerate(processes):
        output = _read(tmp_path, index, "out")
        assert process.returncode == 0, f"worker {index} failed:\n{output}\n{_read(tmp_path, index, 'err')[-3000:]}"
        reports = [json.loads(line[len("REPORT "):]) for line in output.splitlines() if line.startswith("REPORT ")]
        assert [report["process_id"] for report in reports] == [index], output
        assert reports[0]["failures"] == [], f"worker {index}: " + "\n".join(reports[0]["failures"])
