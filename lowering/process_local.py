"""Global arrays from each process's share of the data (`numax.make_array_from_process_local_data`).

In a multi-process run a global array's blocks lie on every process's devices, and each process holds,
places and reads only its own (a ShardedArray over the global sharding whose shards are the addressable
ones). This module builds such arrays from the data a process has: along a dimension the sharding
splits across processes, the local data is this process's slab of it (its blocks, in order); along any
other dimension it is the whole dimension. It works the same in one process, where everything is local.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.sharding import pmap_sharding
from . import xla
from .sharded_array import ShardedArray


def _distinct_block_starts(sharding, global_shape):
    """Per dimension, the sorted distinct starts of the blocks this process's devices hold."""
    starts = [set() for _ in global_shape]
    for index in sharding.addressable_devices_indices_map(global_shape).values():
        for dim, piece in enumerate(index):
            starts[dim].add(piece.start or 0)
    return [sorted(found) for found in starts]


def inferred_global_shape(sharding, local_shape):
    """The global shape when every process holds the same number of blocks along each dimension: a
    dimension split into B blocks of which this process holds L grows by B / L."""
    probe = (sharding.num_devices,) * len(local_shape)  # every dimension splits evenly into any block count
    block_shape = sharding.shard_shape(probe)
    held = _distinct_block_starts(sharding, probe)
    return tuple(size * (probe[dim] // block_shape[dim]) // len(held[dim]) for dim, size in enumerate(local_shape))


def array_from_process_local_data(sharding, local_data, global_shape=None) -> ShardedArray:
    """One global array laid out by `sharding`, from this process's `local_data` (see the module docstring)."""
    local = np.asarray(local_data)
    dtype = dtypes.canonicalize_dtype(local.dtype)
    if local.dtype != dtype:
        local = local.astype(dtype)
    if global_shape is None:
        global_shape = inferred_global_shape(sharding, local.shape)
    global_shape = tuple(int(size) for size in global_shape)
    if len(global_shape) != local.ndim:
        raise ValueError(f"global_shape {global_shape} and the local data's shape {local.shape} differ in rank")
    block_shape = sharding.shard_shape(global_shape)
    starts = _distinct_block_starts(sharding, global_shape)
    whole = []
    for dim, (size, global_size) in enumerate(zip(local.shape, global_shape)):
        whole.append(size == global_size)
        held = block_shape[dim] * len(starts[dim])
        if size not in (global_size, held):
            raise ValueError(f"Invalid host data, each dimension should match either global or process shape. In "
                             f"dimension {dim}, the process data has {size} elements. Process addresses {held} "
                             f"elements and global_shape={global_shape}.")
    devices = [d for d in sharding._device_assignment if xla.is_addressable(d)]
    indices = sharding.addressable_devices_indices_map(global_shape)
    backend = xla.backend_of_device(devices[0])
    buffers = []
    for device in devices:
        # A block's place in the local data: where it lies in the global array along whole dimensions,
        # its rank among this process's blocks along the others.
        local_index = tuple(piece if whole[dim] else slice(
            starts[dim].index(piece.start or 0) * block_shape[dim],
            (starts[dim].index(piece.start or 0) + 1) * block_shape[dim]) for dim, piece in enumerate(indices[device]))
        buffers.append(xla.device_put(np.ascontiguousarray(local[local_index]), backend, device))
    return ShardedArray(ShapedArray(global_shape, dtype), buffers, backend, sharding)


# --- pmap across processes (as JAX's pmap converts its arguments and results) --------------------------
def pmap_global_argument(value, devices, axis, axis_name):
    """The global array a multi-process pmap over `devices` takes, from this process's argument: mapped at
    `axis` (its slab of the global array) or not (None: the same value in every process). A process-local
    pmap output laid out as this pmap takes it keeps its blocks where they are."""
    sharding = pmap_sharding(devices, axis, axis_name)
    local_devices = [d for d in devices if xla.is_addressable(d)]
    if type(value) is ShardedArray and value.has_layout(pmap_sharding(local_devices, axis, axis_name)):
        return _relabelled(value, len(devices), axis, sharding)
    return array_from_process_local_data(sharding, value)


def _relabelled(value, size, axis, sharding):
    """The same blocks as a `size`-device array (mapped at `axis`) laid out by `sharding`."""
    shape = list(value.shape)
    if axis is not None:
        shape[axis] = size
    return ShardedArray(ShapedArray(tuple(shape), value.dtype, value.weak_type), value._shards, value._backend,
                        sharding)


def pmap_local_result(value: ShardedArray, devices, axis, axis_name):
    """This process's part of the output of a multi-process pmap over `devices`: its blocks, over its own
    devices, mapped at `axis` (None: the whole value)."""
    local_devices = [d for d in devices if xla.is_addressable(d)]
    return _relabelled(value, len(local_devices), axis, pmap_sharding(local_devices, axis, axis_name))
