"""`numax.Array`: an immutable array living in a device buffer, tagged with its aval.

The raw jaxlib buffer never reaches users (jax, when imported by a user, patches jaxlib's array
class). Values are read back lazily, once, and cached; operators and methods are attached by
`numax.numpy`, which defines their semantics for arrays and tracers alike.
"""

import enum

import numpy as np

from ..core import array_type, dtypes
from ..core import avals as avals_module
from ..core.avals import ShapedArray
from ..core.sharding import SingleDeviceSharding
from . import xla

try:  # the native extension's base type answers waits and readback in C (lowering/_native_dispatch.c)
    from ._native_dispatch import ArrayBase as _ArrayBase
except ImportError:  # built without a C compiler

    class _ArrayBase:
        """Without the extension: the Python methods answer."""

        __slots__ = ()

        def block_until_ready(self):
            return self._python_block_until_ready()

        def __array__(self, dtype=None, copy=None):
            return self._python_array(dtype, copy)


class Shard:
    """One device's block of an array, as jax's `Shard`: `device`, `index` (slices into the global array),
    `replica_id` (which copy of that block: 0 for the first device holding it) and `data` (the block as a
    single-device array; None on a device of another process)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


class Array(_ArrayBase):
    """An array on a device. Operations on it run at once (eagerly) or are traced under transforms.

    `block_until_ready()` and `__array__()` come from the base: in C, a plain Array's live, ready buffer and its
    first CPU readback are answered there, and every other case by `_python_block_until_ready` and
    `_python_array` below, which say what the C methods do.

    `committed` is jax's: an array placed on its device by the user (`device_put(x, device)`), or computed from
    one, is committed to it; operations on committed arrays run where they lie, and arrays committed to
    different devices cannot meet. Others (`_committed` False, or unset: made by the native path) may move."""

    __slots__ = ("_buffer", "aval", "_backend", "_device", "_host_value", "_ready", "_committed", "__weakref__")
    __array_priority__ = 100

    def __init__(self, aval: ShapedArray, buffer, backend, device=None, committed=False):
        self.aval = aval
        self._buffer = buffer
        self._backend = backend
        self._device = xla.buffer_device(buffer) if device is None else device  # what dispatch checks per call
        self._host_value = None
        self._ready = False  # a wait has returned: the value is computed (buffers never become unready again)
        self._committed = committed

    # --- attributes ---
    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def nbytes(self):
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def itemsize(self):
        return self.aval.dtype.itemsize

    def devices(self):
        return {self._device}

    @property
    def device(self):
        return self._device

    @property
    def sharding(self):
        """Where the array lies: a SingleDeviceSharding of its device."""
        return SingleDeviceSharding(self._device)

    @property
    def platform(self):
        return self._backend.platform

    @property
    def committed(self):
        return is_committed(self)

    def _device_assignment(self):
        """The devices holding the array, in its sharding's order."""
        return (self._device,)

    @property
    def is_fully_replicated(self):
        return True

    @property
    def is_fully_addressable(self):
        return xla.is_addressable(self._device)

    @property
    def addressable_shards(self):
        """The one shard of a single-device array: the whole array on its device."""
        self._check_alive()
        return [Shard(self._device, (slice(None),) * self.ndim, 0, self)]

    @property
    def global_shards(self):
        return self.addressable_shards

    def addressable_data(self, index):
        """The block on the `index`-th addressable device: the array itself (it has one device)."""
        self._check_alive()
        return self

    # --- life cycle ---
    def _python_block_until_ready(self):
        buffer = self._buffer
        if buffer.is_deleted():  # (asked here: the call is on every step's path)
            self._check_alive()
        if not self._ready:
            # raises the program's error, if it failed: then not marked ready
            xla.wait(buffer, self._backend.polls_waits)
            self._ready = True
        return self

    def is_ready(self):
        self._check_alive()  # (jaxlib's is_ready() crashes the process on a deleted buffer)
        return self._buffer.is_ready()

    def is_deleted(self):
        return xla.is_deleted(self._buffer)

    def delete(self):
        # A DLPack readback is copied at once, so no DLPack view can be alive here (trap 3); a buffer-protocol
        # view holds the runtime's external reference instead, which keeps the memory alive.
        xla.delete(self._buffer)
        self._host_value = None

    def _check_alive(self):
        if xla.is_deleted(self._buffer):  # (jax's words; donation deletes an argument too)
            shape = ",".join(map(str, self.shape))
            raise RuntimeError(f"Array has been deleted with shape={self.dtype.name}[{shape}].")

    def copy_to_host_async(self):
        """Starts the copy to the host, so that a later read does not wait for it."""
        self._check_alive()
        if self._host_value is None:
            xla.copy_to_host_async(self._buffer, self._backend)

    # --- host values ---
    def _value(self) -> np.ndarray:
        """The host value (read once, then cached read-only)."""
        if self._host_value is None:
            try:
                host = read_to_host(self)
            except Exception:
                # Deletion is looked for only when the read fails: it costs as much as a small read.
                self._check_alive()
                raise
            host.setflags(write=False)  # cheaper than `host.flags.writeable = False`
            self._host_value = host
        return self._host_value

    def _python_array(self, dtype=None, copy=None):
        value = self._value()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def tolist(self):
        return self._value().tolist()

    def item(self, *args):
        return self._value().item(*args)

    def __bool__(self):
        if self.aval.size != 1:
            raise ValueError(
                f"The truth value of an array with {self.aval.size} elements is ambiguous. Use a.any() or a.all()"
            )
        return bool(self._value())

    def __int__(self):
        return int(self._value())

    def __float__(self):
        return float(self._value())

    def __complex__(self):
        return complex(self._value())

    def __index__(self):
        if not dtypes.is_integer(self.aval.dtype) and self.aval.dtype != dtypes.bool_:
            raise TypeError(f"only integer arrays can be used as an index, got {self.aval.dtype}")
        return int(self._value())

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __hash__(self):
        raise TypeError("unhashable type: numax.Array")

    def __format__(self, spec):
        if self.aval.ndim == 0:
            return format(self._value()[()], spec)
        return format(str(self), spec)

    def __repr__(self):
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        prefix = "Array("
        body = np.array2string(self._value(), separator=", ", prefix=prefix)
        weak = ", weak_type=True" if self.aval.weak_type else ""
        shape = f", shape={self.shape}" if self.aval.size == 0 else ""  # "[]" alone does not say the shape
        return f"{prefix}{body}{shape}, dtype={self.dtype.name}{weak})"

    def __str__(self):
        return str(self._value())

    def __reduce__(self):
        return (_rebuild, (self._value(), self.aval.weak_type))

    # --- devices and DLPack ---
    def to_device(self, device, /, *, stream=None):
        """This array on `device` (itself when it lives there already, or when `device` is None)."""
        if stream is not None:
            raise NotImplementedError("stream argument of array.to_device()")
        return transfer(self, device)

    def __dlpack_device__(self):
        if self._backend.platform == "cpu":
            return DLDeviceType.kDLCPU, 0
        return DLDeviceType.kDLCUDA, self._device.local_hardware_id

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array's values, on its own device or on `dl_device` (the CPU, or a
        GPU of the same backend). The capsule never holds numax's own device buffer: deleting or
        donating a buffer that a consumer still holds aborts the process. CPU arrays export their host
        value (read once, then shared), GPU arrays a private copy made on the device."""
        own_device = self.__dlpack_device__()
        target = own_device if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
        if target == (DLDeviceType.kDLCPU, 0):
            if stream is not None:
                raise BufferError(f"a DLPack export to the CPU takes stream=None, got stream={stream!r}")
            if copy is False and own_device != target:
                raise BufferError("exporting a GPU array to the CPU needs a copy, but copy=False")
            return _host_capsule(self._value(), max_version, copy)
        if target[0] != DLDeviceType.kDLCUDA or self._backend.platform == "cpu":
            raise BufferError(f"numax cannot export an array on {self.device} to the DLPack device {dl_device}")
        if copy is False:
            raise BufferError("numax exports GPU arrays as a private copy (a consumer holding numax's own "
                              "buffer crashes the process once the array is deleted); pass copy=None or True")
        self._check_alive()
        device = _device_with_hardware_id(self._backend, target[1])
        buffer = xla.copy_to_device(self._buffer, self.shape, self.dtype, self._backend, device)
        return xla.dlpack_capsule(buffer, stream)


array_type.Array.register(Array)  # numax.Array: what users check values against


class DLDeviceType(enum.IntEnum):
    """DLPack's device types that numax arrays live on."""

    kDLCPU = 1
    kDLCUDA = 2


def _host_capsule(host: np.ndarray, max_version, copy):
    try:
        return host.__dlpack__(max_version=max_version, copy=copy)
    except BufferError:
        if copy is False or host.flags.writeable:
            raise
        # The cached host value is read-only, which consumers of DLPack before 1.0 cannot be told:
        # they get a private copy instead.
        return host.copy().__dlpack__(max_version=max_version)


def _device_with_hardware_id(backend, local_hardware_id):
    for device in backend.devices:
        if device.local_hardware_id == local_hardware_id:
            return device
    raise BufferError(f"no {backend.platform} device has the local hardware id {local_hardware_id}")


def is_committed(array) -> bool:
    """Whether an array is committed to its device(s) (see Array). An array laid out over devices always is;
    one made by the native path has no `_committed` set, and counts as not committed."""
    try:
        return array._committed
    except AttributeError:
        return False


def transfer(array: Array, device) -> Array:
    """`array` on `device`: itself when it lives there already (or `device` is None), else a copy committed
    to `device` (as jax's `to_device`)."""
    if device is None or device == array._device:
        return array
    array._check_alive()
    backend = xla.backend_of_device(device)
    if backend is not array._backend:
        moved = put(array._value(), device, backend, array.aval.weak_type)
        moved._committed = True
        return moved
    buffer = xla.copy_to_device(array._buffer, array.shape, array.dtype, backend, device)
    return Array(array.aval, buffer, backend, device, committed=True)


def _rebuild(value, weak_type=False):
    return put(value, weak_type=weak_type)


avals_module.aval_of_type[Array] = lambda array: array.aval


_canonical_avals = {}


def canonical_aval(aval):
    """One aval object per (shape, dtype, weak_type) for the arrays numax makes (transfers and program
    outputs): cache keys built from arguments' avals then match the stored keys by identity, which skips
    a Python `__eq__` per argument on every call (a step fed its previous outputs, for example)."""
    if type(aval) is not ShapedArray:
        return aval
    if len(_canonical_avals) > 65536:  # shapes that never repeat: start over rather than grow
        _canonical_avals.clear()
    return _canonical_avals.setdefault(aval, aval)


# How values get read back: plain DLPack for the dtypes it knows on the CPU, a device-side bitcast
# to an unsigned type for bfloat16 (DLPack has none), jaxlib's host copy for other platforms.
bitcast_readback = None  # set by dispatch: (Array) -> Array of uint16


def read_to_host(array: Array) -> np.ndarray:
    if array.aval.dtype == dtypes.bfloat16:
        return np.asarray(bitcast_readback(array)._value()).view(dtypes.bfloat16)
    if array._backend.platform == "cpu":
        return xla.to_numpy(array._buffer)
    return xla.to_numpy_via_host_copy(array._buffer)


def put(value, device=None, backend=None, weak_type=False) -> Array:
    """A host value (numpy array or scalar) copied to a device as a numax.Array."""
    value = np.asarray(value)
    dtype = dtypes.canonicalize_dtype(value.dtype)
    if value.dtype != dtype:
        value = value.astype(dtype)
    if device is None:
        backend, device = xla.default_placement() if backend is None else (backend, backend.default_device)
    elif backend is None:
        backend = xla.backend_of_device(device)
    if dtype == dtypes.bfloat16:
        host = np.ascontiguousarray(value)
    else:
        host = value
    buffer = xla.device_put(host, backend, device)
    array = Array(canonical_aval(ShapedArray(value.shape, dtype, weak_type)), buffer, backend)
    return array

