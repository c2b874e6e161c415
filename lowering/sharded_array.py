"""`ShardedArray`: a numax.Array whose value lies in blocks on several devices (a pmap's output).

Each device holds one single-device buffer, the block of the global array that the sharding gives it:
split along one dimension (`sharded_dim`, into blocks of equal size, in the order of `devices`) or the
whole array on every device (`sharded_dim` None: replicated). The blocks stay where they are until read;
a pmap given such an array with the same layout uses the blocks as they are. Elsewhere (eager operations,
single-device jit) the array is read to the host and placed as any host value.
"""

import numpy as np

from ..core import avals as avals_module
from ..core.avals import ShapedArray
from . import xla
from .array import Array


class Shard:
    """One device's block of a ShardedArray: `device`, `index` (slices into the global array), `data`."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


class ShardedArray(Array):
    """An array split over devices (or replicated on them); see the module docstring."""

    __slots__ = ("_shards", "_devices", "_sharded_dim", "_axis_name")

    def __init__(self, aval: ShapedArray, shards, backend, devices, sharded_dim, axis_name=None):
        self.aval = aval
        self._buffer = None
        self._backend = backend
        self._device = None
        self._host_value = None
        self._shards = list(shards)
        self._devices = tuple(devices)
        self._sharded_dim = sharded_dim
        self._axis_name = axis_name  # the mesh axis the blocks are numbered by (a pmap's axis name)

    # --- layout ---
    @property
    def shard_shape(self):
        shape = list(self.aval.shape)
        if self._sharded_dim is not None:
            shape[self._sharded_dim] //= len(self._devices)
        return tuple(shape)

    def _index(self, position):
        index = [slice(None)] * self.aval.ndim
        if self._sharded_dim is not None:
            size = self.shard_shape[self._sharded_dim]
            index[self._sharded_dim] = slice(position * size, (position + 1) * size)
        return tuple(index)

    def has_layout(self, devices, sharded_dim):
        """Whether the blocks are laid out as a program over `devices` split along `sharded_dim` takes them."""
        return self._devices == tuple(devices) and self._sharded_dim == sharded_dim and not self.is_deleted()

    def devices(self):
        return set(self._devices)

    @property
    def device(self):
        return self.sharding

    @property
    def sharding(self):
        """The NamedSharding over a one-axis mesh of the devices that jax's pmap outputs carry."""
        from numax.sharding import pmap_sharding  # the public layer describes shardings; see its module

        return pmap_sharding(self._devices, self._sharded_dim, self._axis_name)

    @property
    def is_fully_replicated(self):
        return self._sharded_dim is None or len(self._devices) == 1

    def _shard_array(self, position):
        return Array(ShapedArray(self.shard_shape, self.aval.dtype, self.aval.weak_type), self._shards[position],
                     self._backend, self._devices[position])

    @property
    def addressable_shards(self):
        return [Shard(device, self._index(k), 0, self._shard_array(k)) for k, device in enumerate(self._devices)]

    def addressable_data(self, index):
        """The block on the `index`-th device, as a single-device array."""
        return self._shard_array(index)

    # --- life cycle ---
    def block_until_ready(self):
        xla.block_until_ready(self._shards)
        return self

    def is_ready(self):
        return all(shard.is_ready() for shard in self._shards)

    def is_deleted(self):
        return any(xla.is_deleted(shard) for shard in self._shards)

    def _check_alive(self):
        if self.is_deleted():
            raise RuntimeError("this array was deleted (donated to a pmapped function, or deleted explicitly)")

    def delete(self):
        for shard in self._shards:
            xla.delete(shard)
        self._host_value = None

    def copy_to_host_async(self):
        self._check_alive()
        if self._host_value is None:
            for shard in self._shards:
                xla.copy_to_host_async(shard)

    def _value(self) -> np.ndarray:
        if self._host_value is None:
            self._check_alive()
            if self._sharded_dim is None:
                value = self._shard_array(0)._value()
            else:
                value = np.concatenate([self._shard_array(k)._value() for k in range(len(self._shards))],
                                       axis=self._sharded_dim)
            self._host_value = np.array(value)
            self._host_value.flags.writeable = False
        return self._host_value

    def to_device(self, device, /, *, stream=None):
        if stream is not None:
            raise NotImplementedError("stream argument of array.to_device()")
        from .array import put

        return put(self._value(), device, weak_type=self.aval.weak_type)

    def __reduce__(self):
        from .array import _rebuild

        return (_rebuild, (self._value(), self.aval.weak_type))


avals_module.aval_of_type[ShardedArray] = lambda array: array.aval
