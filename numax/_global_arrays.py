"""Building an array laid out over devices from its blocks: `make_array_from_callback`,
`make_array_from_single_device_arrays` and `make_array_from_process_local_data` (JAX's names and semantics)."""

import numpy as np

from numax.core import dtypes
from numax.core.avals import ShapedArray
from numax.core.sharding import Sharding
from numax.lowering import xla
from numax.lowering.array import Array, put
from numax.lowering.sharded_array import ShardedArray


def _checked_sharding(sharding, what):
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{what} takes a numax.sharding.Sharding, got {sharding!r}")
    return sharding


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """The array of global `shape` laid out by `sharding`, each addressable device's block given by
    `data_callback(index)` (index: a tuple of slices into the global array). Devices that hold the same block
    ask for it once."""
    shape = tuple(int(d) for d in shape)
    sharding = _checked_sharding(sharding, "make_array_from_callback")
    indices = sharding.addressable_devices_indices_map(shape)
    block_shape = sharding.shard_shape(shape)
    blocks, fetched = [], {}
    for index in indices.values():
        key = tuple((s.start, s.stop) for s in index)
        if key not in fetched:
            data = data_callback(index)
            data = np.asarray(data) if not isinstance(data, Array) else data
            fetched[key] = data
        blocks.append(fetched[key])
    first = blocks[0] if blocks else np.zeros((), dtype or dtypes.default_float_dtype())
    dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else first.dtype)
    for block in fetched.values():
        if tuple(block.shape) != block_shape:
            raise ValueError(f"make_array_from_callback: the callback returned a block of shape {tuple(block.shape)}, "
                             f"but {sharding} gives blocks of shape {block_shape} for global shape {shape}")
    singles = [put(np.asarray(block, dtype), device) for block, device in zip(blocks, indices)]
    return _assemble(shape, dtype, sharding, singles)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """The array of global `shape` laid out by `sharding` from one single-device array per addressable device
    (each that device's block; matched to the devices by where they lie)."""
    shape = tuple(int(d) for d in shape)
    sharding = _checked_sharding(sharding, "make_array_from_single_device_arrays")
    indices = sharding.addressable_devices_indices_map(shape)
    arrays = list(arrays)
    if len(arrays) != len(indices):
        raise ValueError(f"make_array_from_single_device_arrays needs one array per addressable device of {sharding} "
                         f"({len(indices)}), got {len(arrays)}")
    by_device = {}
    for array in arrays:
        if not isinstance(array, Array) or isinstance(array, ShardedArray):
            raise TypeError(f"make_array_from_single_device_arrays takes single-device numax arrays, got {array!r}")
        by_device[array.device] = array
    missing = [device for device in indices if device not in by_device]
    if missing:
        raise ValueError(f"make_array_from_single_device_arrays: no array lies on device(s) {missing}, which "
                         f"{sharding} places blocks on")
    block_shape = sharding.shard_shape(shape)
    singles = [by_device[device] for device in indices]
    for array in singles:
        if array.shape != block_shape:
            raise ValueError(f"make_array_from_single_device_arrays: an array of shape {array.shape} was given, but "
                             f"{sharding} gives blocks of shape {block_shape} for global shape {shape}")
    dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else singles[0].dtype)
    if any(array.dtype != dtype for array in singles):
        raise ValueError(f"make_array_from_single_device_arrays: the arrays' dtypes "
                         f"{sorted({str(a.dtype) for a in singles})} differ from {dtype}")
    return _assemble(shape, dtype, sharding, singles)


def _assemble(shape, dtype, sharding, singles):
    backend = xla.backend_of_device(next(iter(sharding.device_set)))
    return ShardedArray(ShapedArray(shape, dtype), [array._buffer for array in singles], backend, sharding)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global array laid out by `sharding` from the data this process has (each leaf of `local_data`, with
    `sharding` and `global_shape` one for all leaves or a tree prefix of it), as in JAX: along a dimension
    the sharding splits across processes, the local data is this process's consecutive share of it (its
    devices' blocks, in order); along the others it is the whole dimension. `global_shape` defaults to the
    one where every process holds an equal share. In one process this places the array as it is."""
    from numax._runtime import _per_leaf
    from numax.core import pytree
    from numax.lowering.process_local import array_from_process_local_data

    leaves, treedef = pytree.tree_flatten(local_data)
    shardings = [_checked_sharding(s, "make_array_from_process_local_data") for s in _per_leaf(
        sharding, local_data, treedef, "sharding", lambda s: isinstance(s, Sharding))]
    shapes = _per_leaf(global_shape, local_data, treedef, "global_shape",
                       lambda s: s is None or (isinstance(s, tuple) and all(isinstance(n, int) for n in s)))
    return treedef.unflatten([array_from_process_local_data(*args) for args in zip(shardings, leaves, shapes)])
