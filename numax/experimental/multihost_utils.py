"""`numax.experimental.multihost_utils`: jax's helpers for programs run by several processes (barriers,
gathering and broadcasting host values, checking that processes agree, and converting between host-local
and global arrays).

Everything here is built on numax's public sharded jit: a host value becomes a global array with one
slab per process (mesh axes `processes` x `local_devices`), and a jit whose output is replicated does the
communication. In one process each function reduces to its local meaning without touching a device,
as jax's do.
"""

import zlib

import numpy as np

import numax
from numax import Array
from numax.core import dtypes, pytree
from numax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]


def _process_mesh():
    """Every device, one row per process (rows in process order, as `numax.devices()` lists them)."""
    devices = np.array(numax.devices(), dtype=object).reshape(numax.process_count(), numax.local_device_count())
    return Mesh(devices, ("processes", "local_devices"))


def _stacked_over_processes(host_value):
    """The global array whose row p is process p's `host_value` (whose leading axis is already 1 here)."""
    return numax.make_array_from_process_local_data(NamedSharding(_process_mesh(), PartitionSpec("processes")),
                                                    host_value)


def _replicated(array):
    return NamedSharding(array.sharding.mesh, PartitionSpec()) if isinstance(array.sharding, NamedSharding) else \
        NamedSharding(Mesh(np.array(array.sharding._device_assignment, dtype=object), ("all",)), PartitionSpec())


# Module-level so that the jit below traces and compiles once per signature, not on every call.
def _identity(x):
    return x


def _sum_over_processes(x):
    return numax.numpy.sum(x, axis=0, dtype=x.dtype)


def _first_local_block(array):
    return np.asarray(array.addressable_data(0))


def broadcast_one_to_all(in_tree, is_source=None):
    """Every leaf of `in_tree` as the source process has it (process 0 unless `is_source` says who is),
    as numpy arrays. Leaves must have the same shape and dtype in every process."""
    if numax.process_count() == 1:
        return pytree.tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = numax.process_index() == 0

    def contribution(x):
        x = np.asarray(x)
        # Only the source contributes: the others add zeros, so the sum over processes is the source's value.
        return _stacked_over_processes((x if is_source else np.zeros_like(x))[np.newaxis])

    stacked = pytree.tree_map(contribution, in_tree)
    leaves = pytree.tree_leaves(stacked)
    summed = numax.jit(_sum_over_processes, out_shardings=_replicated(leaves[0]) if leaves else None)
    return pytree.tree_map(lambda x: _first_local_block(summed(x)), stacked)


def _allgather_leaf(x, tiled):
    if isinstance(x, Array) and not x.is_fully_addressable:
        if not tiled:
            raise ValueError("Gathering global non-fully-addressable arrays only supports tiled=True")
        return _first_local_block(numax.jit(_identity, out_shardings=_replicated(x))(x))
    host = np.asarray(x)
    if numax.process_count() == 1:
        return host if tiled else host[np.newaxis]
    if host.ndim == 0 or not tiled:
        host = host[np.newaxis]
    stacked = _stacked_over_processes(host)
    return _first_local_block(numax.jit(_identity, out_shardings=_replicated(stacked))(stacked))


def process_allgather(in_tree, tiled=False):
    """Every process's value of each leaf of `in_tree`, as numpy arrays: stacked along a new leading axis
    (`tiled=False`) or concatenated along axis 0 (`tiled=True`; a scalar is stacked). A global array that
    is not fully addressable is gathered whole, which only `tiled=True` allows."""
    return pytree.tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def sync_global_devices(name):
    """A barrier across all processes; they must pass the same `name` (an AssertionError otherwise)."""
    assert_equal(np.uint32(zlib.crc32(name.encode())), f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree, fail_message=""):
    """Raises an AssertionError (with `fail_message`) unless every process has the same `in_tree` values."""
    def repeated(x):
        if isinstance(x, Array) and not x.is_fully_addressable:
            return _first_local_block(x)
        x = np.atleast_1d(np.asarray(x))
        return np.concatenate([x] * numax.process_count())

    gathered = process_allgather(in_tree, tiled=True)
    expected = pytree.tree_map(repeated, in_tree)
    if not all(pytree.tree_leaves(pytree.tree_map(lambda a, b: bool(np.all(np.equal(a, b))), expected, gathered))):
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def reached_preemption_sync_point(step_id):
    """Whether every process reached the step at which to save a checkpoint after a preemption notice. numax
    has no preemption service: without `numax.distributed`, False (as jax); in a multi-process run, a
    RuntimeError as jax's when its preemption service is off."""
    del step_id
    if not numax.distributed.is_initialized():
        return False
    raise RuntimeError("Preemption sync manager has not been initialized. numax has no preemption service "
                       "(jax's 'jax_enable_preemption_service').")


# --- host-local <-> global arrays ---------------------------------------------------------------------
def _pspecs_per_leaf(pspecs, inputs):
    """One spec per leaf of `inputs`: `pspecs` is one PartitionSpec or a tree prefix of `inputs` of them."""
    return pytree.broadcast_prefix_leaves(pspecs, inputs, is_leaf=lambda s: s is None or isinstance(s, PartitionSpec))


def _checked_pspec(pspec):
    if pspec is None:
        raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                         "numax.sharding.PartitionSpec() if you wanted to replicate your input.")
    return pspec


def _local_mesh(mesh):
    """The sub-mesh of this process's devices, which must form a block of `mesh` (a contiguous mesh)."""
    here = numax.process_index()
    mine = np.vectorize(lambda d: d.process_index == here, otypes=[bool])(mesh.devices)
    where = np.nonzero(mine)
    block = tuple(slice(int(axis.min()), int(axis.max()) + 1) for axis in where) if mine.any() else ()
    if not block or not mine[block].all():
        raise ValueError(f"the global mesh must be contiguous: this process's devices must form a block of it, "
                         f"which they do not in {mesh}")
    return Mesh(mesh.devices[block], mesh.axis_names, mesh.axis_types)


def _mesh_axes(entry):
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def _rescaled_shape(shape, pspec, numerator, denominator):
    """`shape` with each dimension the spec splits over mesh axes scaled by numerator / denominator sizes."""
    out = list(shape)
    for dim, entry in enumerate(pspec):
        for axis in _mesh_axes(entry):
            out[dim] = out[dim] * numerator.shape[axis] // denominator.shape[axis]
    return tuple(out)


def _host_value(x):
    x = x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)
    if x.dtype == dtypes.float0:
        x = np.zeros(x.shape, bool)
    return x


def _local_to_global(x, mesh, pspec):
    _checked_pspec(pspec)
    if isinstance(x, Array) and not x.is_fully_addressable:
        return x  # already global
    x = _host_value(x)
    local_mesh = _local_mesh(mesh)
    global_shape = _rescaled_shape(x.shape, pspec, mesh, local_mesh)
    return numax.make_array_from_process_local_data(NamedSharding(mesh, pspec), np.asarray(x), global_shape)


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """Global arrays over `global_mesh` laid out by `pspecs` (a PartitionSpec or a tree prefix of
    `local_inputs` of them), from each process's host-local values: along a dimension the spec splits over
    mesh axes that span processes, a process's value is its slab of the global array; along the others it
    is the whole dimension (and must then be the same in every process). The mesh must be contiguous: each
    process's devices form a block of it. Global arrays among the inputs pass through unchanged."""
    leaves, treedef = pytree.tree_flatten(local_inputs)
    specs = _pspecs_per_leaf(pspecs, local_inputs)
    return treedef.unflatten([_local_to_global(x, global_mesh, spec) for x, spec in zip(leaves, specs)])


def _global_to_local(x, mesh, pspec):
    _checked_pspec(pspec)
    if isinstance(x, Array) and x.is_fully_addressable:
        return x  # already host-local
    x = _host_value(x)
    local_mesh = _local_mesh(mesh)
    global_sharding = NamedSharding(mesh, pspec)
    if not isinstance(x, Array):  # a host value holding the whole global array: place this process's blocks
        host = np.asarray(x)
        x = numax.make_array_from_callback(host.shape, global_sharding, lambda index: host[index])
    if not x.sharding.is_equivalent_to(global_sharding, x.ndim):
        x = numax.device_put(x, global_sharding)
    local_shape = _rescaled_shape(x.shape, pspec, local_mesh, mesh)
    blocks = {shard.device: shard.data for shard in x.addressable_shards}
    return numax.make_array_from_single_device_arrays(local_shape, NamedSharding(local_mesh, pspec),
                                                      [blocks[d] for d in local_mesh.devices.flat])


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """The inverse of `host_local_array_to_global_array`: each process's part of global arrays laid out over
    `global_mesh` by `pspecs`, as arrays over its own devices. Host-local arrays pass through unchanged."""
    leaves, treedef = pytree.tree_flatten(global_inputs)
    specs = _pspecs_per_leaf(pspecs, global_inputs)
    return treedef.unflatten([_global_to_local(x, global_mesh, spec) for x, spec in zip(leaves, specs)])
