"""`ShardedArray`: a numax.Array whose value lies in blocks on several devices.

Its `sharding` (a `numax.core.sharding.Sharding`: a pmap's output sharding, a NamedSharding over a mesh)
says which block of the global array each device holds; each addressable device holds its block as one
single-device buffer (devices that hold the same block hold copies). The blocks stay where they are until
read; a program that takes the array with the same layout uses them as they are.
"""

import numpy as np

from ..core import avals as avals_module
from ..core import caches
from ..core.avals import ShapedArray
from ..core.sharding import has_partial_sums
from . import xla
from .array import Array, Shard


class ShardedArray(Array):
    """An array laid out over devices by a `Sharding` (see the module docstring).

    It holds its blocks as one raw multi-device array (`_whole`, as a program returns it and the next one
    takes it), as single-device buffers (`_parts`), or both: each is made from the other when first needed."""

    __slots__ = ("_parts", "_whole", "_whole_layout", "_sharding", "_indices")  # (and Array's `_committed`)

    def __init__(self, aval: ShapedArray, shards, backend, sharding, whole=None, whole_layout=None):
        self.aval = aval
        self._buffer = None
        self._backend = backend
        self._device = None
        self._host_value = None
        self._parts = None if shards is None else list(shards)  # per addressable device, in the sharding's order
        self._whole = whole
        self._whole_layout = whole_layout  # (HLO sharding, devices) of `_whole`
        self._sharding = sharding
        self._indices = None
        self._committed = True  # laid out by a sharding someone asked for, or by a program over its devices

    @property
    def _shards(self):
        if self._parts is None:
            self._parts = list(xla.split(self._whole))
        return self._parts

    def whole(self, hlo_sharding, devices):
        """The blocks as one raw array over `devices` laid out by `hlo_sharding` (as a program takes them; the
        caller made sure that this array's sharding places the same blocks on the same devices)."""
        layout = self._whole_layout
        if layout is None or layout[1] != devices or (layout[0] is not hlo_sharding and layout[0] != hlo_sharding):
            self._check_alive()
            by_device = dict(zip((device for device, _ in self._addressable_indices()), self._shards))
            # jaxlib takes the blocks unchecked, and a program run on a mislaid one crashes the process: each block
            # goes in at its device's place in `devices`, and must lie on that device.
            placed = [device for device in devices if device in by_device]
            if len(placed) != len(by_device) or any(xla.buffer_device(by_device[d]) is not d for d in placed):
                raise ValueError(f"the blocks of an array laid out by {self._sharding} do not fit the layout "
                                 f"{hlo_sharding} over devices {[d.id for d in devices]} (a numax bug)")
            shards = [by_device[device] for device in placed]
            self._whole = xla.assemble(self.aval.shape, self.aval.dtype, devices, hlo_sharding, shards)
            self._whole_layout = (hlo_sharding, devices)
        return self._whole

    # --- layout ---
    @property
    def sharding(self):
        return self._sharding

    @property
    def device(self):
        return self._sharding

    @property
    def shard_shape(self):
        return self._sharding.shard_shape(self.aval.shape)

    def _addressable_indices(self):
        """(device, index into the global array) per shard, in the order of `_shards`."""
        if self._indices is None:
            blocks = _block_sharding(self._sharding)
            self._indices = list(blocks.addressable_devices_indices_map(self.aval.shape).items())
        return self._indices

    def has_layout(self, sharding):
        """Whether the blocks are laid out as a program taking `sharding` expects them (deleted or not: running
        a program on a deleted array fails, and says so)."""
        mine = self._sharding
        return mine is sharding or mine == sharding or _same_layout(mine, sharding, self.aval.ndim)

    def devices(self):
        return set(self._sharding.device_set)

    def _device_assignment(self):
        return self._sharding._device_assignment

    @property
    def is_fully_replicated(self):
        return self._sharding.is_fully_replicated

    @property
    def is_fully_addressable(self):
        return self._sharding.is_fully_addressable

    def _shard_array(self, position):
        return Array(ShapedArray(self.shard_shape, self.aval.dtype, self.aval.weak_type), self._shards[position],
                     self._backend, self._addressable_indices()[position][0], committed=True)

    @property
    def addressable_shards(self):
        self._check_alive()
        replica_ids = _replica_ids(self._sharding, self.aval.shape)
        return [Shard(device, index, replica_ids[device], self._shard_array(k))
                for k, (device, index) in enumerate(self._addressable_indices())]

    @property
    def global_shards(self):
        """Every device's shard, this process's or not (`data` None on another process's device)."""
        self._check_alive()
        if self.is_fully_addressable:
            return self.addressable_shards
        replica_ids = _replica_ids(self._sharding, self.aval.shape)
        mine = {device: k for k, (device, _) in enumerate(self._addressable_indices())}
        return [Shard(device, index, replica_ids[device], self._shard_array(mine[device]) if device in mine else None)
                for device, index in self._sharding.devices_indices_map(self.aval.shape).items()]

    def addressable_data(self, index):
        """The block on the `index`-th addressable device, as a single-device array (of a fully replicated array,
        the first device's whatever `index`, as in jax)."""
        self._check_alive()
        return self._shard_array(0 if self._sharding.is_fully_replicated else index)

    # --- life cycle ---
    def _buffers(self):
        """Every raw array holding the blocks (deleting or waiting on one of them alone is not enough)."""
        return ([self._whole] if self._whole is not None else []) + (self._parts or [])

    def block_until_ready(self):
        xla.block_until_ready(self._buffers(), self._backend.polls_waits)
        return self

    def is_ready(self):
        self._check_alive()  # (jaxlib's is_ready() crashes the process on a deleted buffer)
        return all(buffer.is_ready() for buffer in self._buffers())

    def is_deleted(self):
        return any(xla.is_deleted(buffer) for buffer in self._buffers())

    def _check_alive(self):
        if self.is_deleted():
            raise RuntimeError("this array was deleted (donated to a pmapped function, or deleted explicitly)")

    def delete(self):
        for buffer in self._buffers():
            xla.delete(buffer)
        self._host_value = None

    def copy_to_host_async(self):
        self._check_alive()
        if self._host_value is None:
            for shard in self._shards:
                xla.copy_to_host_async(shard, self._backend)

    def __repr__(self):
        if has_partial_sums(self._sharding) and not self.is_deleted():  # (no value to show, as in jax)
            return f"Array(shape={self.shape}, dtype={self.dtype.name}, sharding={self._sharding})"
        return super().__repr__()

    def __str__(self):
        return repr(self) if has_partial_sums(self._sharding) and not self.is_deleted() else super().__str__()

    def _value(self) -> np.ndarray:
        if self._host_value is None:
            self._check_alive()
            if has_partial_sums(self._sharding):  # (its value is a sum over devices: reading one copy is wrong)
                raise NotImplementedError(f"reading the value of an array laid out as partial sums "
                                          f"({self._sharding.spec}) is not possible: reduce it first")
            if not self._sharding.is_fully_addressable and not self._sharding.is_fully_replicated:
                raise RuntimeError("reading the value of an array that spans devices of other processes is not "
                                   "possible: read its addressable_shards, or gather it first")
            value = np.empty(self.aval.shape, self.aval.dtype)
            filled = set()
            for k, (_, index) in enumerate(self._addressable_indices()):
                key = tuple((s.start, s.stop) for s in index)
                if key not in filled:
                    filled.add(key)
                    value[index] = self._shard_array(k)._value()
            value.flags.writeable = False
            self._host_value = value
        return self._host_value

    def to_device(self, device, /, *, stream=None):
        if stream is not None:
            raise NotImplementedError("stream argument of array.to_device()")
        from .array import put

        moved = put(self._value(), device, weak_type=self.aval.weak_type)
        moved._committed = True  # (as jax's to_device)
        return moved

    def __reduce__(self):
        from .array import _rebuild

        return (_rebuild, (self._value(), self.aval.weak_type))


def _block_sharding(sharding):
    """The sharding that says where each block of `sharding` lies: itself, or for partial sums the same split
    without them (a device's partial sum covers the block the split gives it)."""
    return sharding.without_partial_sums() if has_partial_sums(sharding) else sharding


def _replica_ids(sharding, shape):
    """Device -> which copy of its block it holds (the devices holding one block numbered in the sharding's order)."""
    seen, ids = {}, {}
    for device, index in _block_sharding(sharding).devices_indices_map(shape).items():
        key = tuple((piece.start, piece.stop) for piece in index)
        ids[device] = seen.get(key, 0)
        seen[key] = ids[device] + 1
    return ids


@caches.lru(1024)
def _same_layout(sharding, other, ndim):
    """Whether two shardings place the same blocks on the same devices, in the same order."""
    return sharding._device_assignment == other._device_assignment and sharding.is_equivalent_to(other, ndim)


avals_module.aval_of_type[ShardedArray] = lambda array: array.aval
