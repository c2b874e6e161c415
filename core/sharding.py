"""Meshes, partition specs and shardings: how an array's blocks are laid out over devices (JAX's `jax.sharding`).

Pure description: a `Mesh` names the axes of an array of devices, a `PartitionSpec` says which mesh axes split
each array dimension, and a `Sharding` answers where each block of a global array lives
(`devices_indices_map`, `shard_shape`). Nothing here runs, compiles or transfers: the only jaxlib objects
touched are the devices themselves, whose attributes (id, platform, memories, process index) are read. The
runtime (sharded execution, pmap outputs) builds on these objects; the text drawing of a layout lives in
`numax._sharding_text`; `make_mesh`, which asks the runtime for its devices, is in the public `numax.sharding`.
"""

import collections
import enum
import math
import threading
from collections.abc import Sequence

import numpy as np

__all__ = [
    "AxisType", "PartitionSpec", "P", "Mesh", "Sharding", "SingleDeviceSharding", "NamedSharding",
    "pmap_sharding", "DuplicateSpecError", "IndivisibleError",
]


class DuplicateSpecError(Exception):
    """A partition spec uses one mesh axis for more than one array dimension (JAX's type: not a ValueError)."""


class IndivisibleError(ValueError):
    """An array dimension does not split evenly into the blocks its sharding asks for."""


class AxisType(enum.Enum):
    """How a mesh axis is handled: by the compiler (Auto), in the types (Explicit), or by the user (Manual)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class _Unconstrained:
    """The `P.UNCONSTRAINED` marker: the compiler may choose how this dimension is split."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return "_UNCONSTRAINED"  # pickles as the module-level singleton


_UNCONSTRAINED = _Unconstrained()


def _canonical_entry(entry):
    """One dimension's entry as JAX stores it: a list becomes a tuple, a 1-tuple its axis, an empty one None."""
    if isinstance(entry, list | tuple):
        entry = tuple(entry)
        if len(entry) == 0:
            return None
        return entry[0] if len(entry) == 1 else entry
    return entry


def _entry_axes(entry):
    """The mesh axes (major to minor) that one entry of a spec splits its dimension over."""
    if entry is None or entry is _UNCONSTRAINED:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


class PartitionSpec:
    """Which mesh axes split each dimension of an array: `P('x', None)`, `P(('x', 'y'))`, `P()`.

    Each entry is None (not split), a mesh axis name, a tuple of names (split over their product, the first
    name major), or `P.UNCONSTRAINED`. Trailing dimensions not named are not split. Like JAX's, it is not a
    tuple (so pytree utilities treat it as a leaf) but indexes, iterates and concatenates like one.
    """

    __slots__ = ("_partitions",)
    UNCONSTRAINED = _UNCONSTRAINED

    def __init__(self, *partitions):
        object.__setattr__(self, "_partitions", tuple(_canonical_entry(p) for p in partitions))

    def __setattr__(self, name, value):
        raise AttributeError("PartitionSpec is immutable")

    @property
    def partitions(self):
        return self._partitions

    def __repr__(self):
        return f"P({repr(self._partitions)[1:-1]})"

    def __eq__(self, other):
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return self._partitions == other._partitions

    def __hash__(self):
        return hash(self._partitions)

    def __getitem__(self, index):
        return self._partitions[index]

    def __iter__(self):
        return iter(self._partitions)

    def __len__(self):
        return len(self._partitions)

    def __add__(self, other):
        if isinstance(other, PartitionSpec | tuple):
            return PartitionSpec(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._partitions)
        return NotImplemented

    def index(self, value):
        return self._partitions.index(_canonical_entry(value))

    def count(self, value):
        return self._partitions.count(_canonical_entry(value))

    def __reduce__(self):
        return (PartitionSpec, self._partitions)


P = PartitionSpec


def _canonical_axis_types(axis_names, axis_types):
    if axis_types is None:
        return (AxisType.Auto,) * len(axis_names)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(t, AxisType) for t in axis_types):
        raise TypeError(f"axis_types of a Mesh must be numax.sharding.AxisType values, got {axis_types!r}")
    if len(axis_types) != len(axis_names):
        raise ValueError(f"a Mesh needs one axis type per axis name: got axis_names={axis_names} and "
                         f"axis_types={axis_types}")
    return axis_types


class Mesh:
    """An n-dimensional array of devices whose axes have names, e.g. `Mesh(devices.reshape(4, 2), ('x', 'y'))`.

    `axis_types` defaults to `AxisType.Auto` for every axis (as `jax.sharding.Mesh`; `make_mesh` defaults to
    Explicit). Meshes are equal when they hold the same devices in the same places under the same names
    and types. Not a context manager: JAX deprecated `with mesh:`.
    """

    def __init__(self, devices, axis_names, axis_types=None):
        devices = np.array(devices, dtype=object)
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if any(name is None for name in axis_names):
            raise ValueError(f"Mesh axis names cannot be None, got {axis_names}")
        if devices.ndim != len(axis_names):
            raise ValueError(f"a Mesh needs one axis name per dimension of its device array: got devices.ndim == "
                             f"{devices.ndim} and len(axis_names) == {len(axis_names)}")
        devices.flags.writeable = False
        self._devices = devices
        self._axis_names = axis_names
        self._axis_types = _canonical_axis_types(axis_names, axis_types)
        self._size = 0 if not axis_names and devices.flat[0] is None else devices.size
        self._flat_devices = tuple(devices.flat)  # (read by every eager op on arrays over the mesh: made once)
        self._key = (devices.shape, self._flat_devices, axis_names, self._axis_types)  # equality and hashing
        self._hash = hash(self._key)  # shardings are hashed on every call of a sharded jit: once is enough

    devices = property(lambda self: self._devices, doc="The device array (read-only numpy object array).")
    axis_names = property(lambda self: self._axis_names)
    axis_types = property(lambda self: self._axis_types)
    size = property(lambda self: self._size, doc="The number of devices (0 for the empty mesh).")

    @property
    def axis_sizes(self):
        return self._devices.shape

    @property
    def shape(self):
        """Axis name -> size, in axis order."""
        return collections.OrderedDict(zip(self._axis_names, self._devices.shape))

    @property
    def empty(self):
        return self._size == 0

    @property
    def device_ids(self):
        return np.vectorize(lambda device: device.id, otypes=[int])(self._devices)

    @property
    def local_devices(self):
        return [device for device in self._devices.flat if _is_addressable(device)]

    def __eq__(self, other):
        if not isinstance(other, Mesh):
            return NotImplemented
        return self is other or self._key == other._key

    def __hash__(self):
        return self._hash

    def __str__(self):
        if self.empty:
            return "Mesh()"
        sizes = ", ".join(f"'{name}': {size}" for name, size in self.shape.items())
        return f"Mesh({sizes}, axis_types={self._axis_types})"

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self._axis_names!r}, axis_types={self._axis_types})"


def _is_addressable(device):
    return device.process_index == device.client.process_index()


def _default_memory_kind(device):
    return device.default_memory().kind


def _check_memory_kind(device, memory_kind):
    kinds = [memory.kind for memory in device.addressable_memories()]
    if memory_kind not in kinds:
        raise ValueError(f"device {device} has no memory of kind {memory_kind!r}; its memory kinds are "
                         f"{', '.join(kinds)}")
    return memory_kind


class Sharding:
    """How an array is laid out across devices: which devices hold it and which block each holds.

    Subclasses give `device_set`, `_device_assignment` (the devices in a fixed order), `memory_kind`,
    `is_fully_replicated` and `_block_layout(ndim)`; the index maps and shard shape follow from these.
    """

    @property
    def device_set(self):
        raise NotImplementedError

    @property
    def _device_assignment(self):
        raise NotImplementedError

    @property
    def memory_kind(self):
        raise NotImplementedError

    @property
    def is_fully_replicated(self):
        raise NotImplementedError

    def _block_layout(self, ndim):
        """(blocks per dimension, each device's block coordinates), devices in `_device_assignment` order."""
        raise NotImplementedError

    @property
    def num_devices(self):
        return len(self.device_set)

    @property
    def addressable_devices(self):
        return {device for device in self.device_set if _is_addressable(device)}

    @property
    def is_fully_addressable(self):
        return all(_is_addressable(device) for device in self.device_set)

    def shard_shape(self, global_shape):
        """The shape of the block each device holds; an IndivisibleError where a dimension does not split."""
        global_shape = tuple(global_shape)
        blocks, _ = self._block_layout(len(global_shape))
        for dim, (size, count) in enumerate(zip(global_shape, blocks)):
            if size % count:
                raise IndivisibleError(
                    f"{self} splits array axis {dim} into {count} blocks, but its size {size} is not divisible "
                    f"by {count} (global shape {global_shape}, blocks per dimension {list(blocks)})")
        return tuple(int(size) // count for size, count in zip(global_shape, blocks))

    def devices_indices_map(self, global_shape):
        """Device -> the tuple of slices of the global array it holds (`slice(None)` where a dim is whole)."""
        global_shape = tuple(global_shape)
        block_shape = self.shard_shape(global_shape)
        blocks, coordinates = self._block_layout(len(global_shape))
        return {
            device: tuple(slice(None) if count == 1 else slice(index * size, (index + 1) * size)
                          for index, size, count in zip(coordinate, block_shape, blocks))
            for device, coordinate in zip(self._device_assignment, coordinates)
        }

    def addressable_devices_indices_map(self, global_shape):
        indices = self.devices_indices_map(global_shape)
        return {device: index for device, index in indices.items() if _is_addressable(device)}

    def is_equivalent_to(self, other, ndim):
        """Whether both place the same blocks on the same devices (in the same memory)."""
        return (self._device_assignment == other._device_assignment and self.memory_kind == other.memory_kind
                and self._block_layout(ndim) == other._block_layout(ndim))


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self._memory_kind = _default_memory_kind(device) if memory_kind is None else _check_memory_kind(
            device, memory_kind)

    @property
    def device_set(self):
        return {self._device}

    @property
    def _device_assignment(self):
        return (self._device,)

    @property
    def memory_kind(self):
        return self._memory_kind

    @property
    def is_fully_replicated(self):
        return True

    def with_memory_kind(self, kind):
        return SingleDeviceSharding(self._device, memory_kind=kind)

    def _block_layout(self, ndim):
        return (1,) * ndim, [(0,) * ndim]

    def __eq__(self, other):
        if not isinstance(other, SingleDeviceSharding):
            return NotImplemented
        return self._device == other._device and self._memory_kind == other._memory_kind

    def __hash__(self):
        return hash((self._device, self._memory_kind))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"


def _check_spec(mesh, spec):
    """JAX's checks when a NamedSharding is made: every axis in the mesh, each used once, UNCONSTRAINED only
    where some mesh axis is Auto."""
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"NamedSharding takes a PartitionSpec (e.g. P{tuple(spec)!r}), got {spec!r}")
    uses = collections.Counter(axis for entry in spec for axis in _entry_axes(entry))
    for axis in uses:
        if axis not in mesh.axis_names:
            raise ValueError(f"Resource axis: {axis} of {spec} is not found in mesh: {mesh.axis_names}.")
    repeated = [axis for axis, count in uses.items() if count > 1]
    if repeated:
        raise DuplicateSpecError(f"a NamedSharding spec may map each mesh axis to at most one array dimension, but "
                                 f"{spec} uses {', '.join(f'`{axis}`' for axis in repeated)} more than once")
    if _UNCONSTRAINED in spec.partitions and AxisType.Auto not in mesh.axis_types:
        raise ValueError(f"{spec} cannot contain `P.UNCONSTRAINED` when no mesh axis is of type Auto; the mesh's "
                         f"axis types are {mesh.axis_types}")


class NamedSharding(Sharding):
    """A `Mesh` and a `PartitionSpec`: dimension i of the array is split over the mesh axes in `spec[i]`.

    Devices along mesh axes the spec does not name hold copies of the same block.
    """

    def __init__(self, mesh, spec, *, memory_kind=None):
        _check_spec(mesh, spec)
        self.mesh = mesh
        self.spec = spec
        self._hash = None
        first_device = mesh.devices.flat[0]
        self._memory_kind = _default_memory_kind(first_device) if memory_kind is None else _check_memory_kind(
            first_device, memory_kind)

    @property
    def device_set(self):
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self):
        return self.mesh._flat_devices

    @property
    def num_devices(self):
        return self.mesh.size

    @property
    def memory_kind(self):
        return self._memory_kind

    @property
    def is_fully_replicated(self):
        mesh_shape = self.mesh.shape
        return math.prod(mesh_shape[axis] for entry in self.spec for axis in _entry_axes(entry)) == 1

    def with_memory_kind(self, kind):
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def _split_axes(self, ndim):
        """Per array dimension, the mesh axes of size > 1 that split it (size-1 axes split nothing)."""
        if len(self.spec) > ndim:
            extra = " (for scalars the PartitionSpec should be P())" if ndim == 0 else ""
            raise ValueError(f"{self} is only valid for values of rank at least {len(self.spec)}, but was applied "
                             f"to a value of rank {ndim}{extra}")
        entries = tuple(self.spec) + (None,) * (ndim - len(self.spec))
        return [tuple(axis for axis in _entry_axes(entry) if self.mesh.shape[axis] != 1) for entry in entries]

    def _block_layout(self, ndim):
        split_axes = self._split_axes(ndim)
        mesh_shape = self.mesh.shape
        blocks = tuple(math.prod(mesh_shape[axis] for axis in axes) for axes in split_axes)
        coordinates = []
        for position in np.ndindex(self.mesh.axis_sizes):
            place = dict(zip(self.mesh.axis_names, position))
            # The axes of one entry number the blocks in mixed radix, the first axis major.
            coordinates.append(tuple(_mixed_radix([place[axis] for axis in axes], [mesh_shape[axis] for axis in axes])
                                     for axes in split_axes))
        return blocks, coordinates

    def __eq__(self, other):
        if not isinstance(other, NamedSharding):
            return NotImplemented
        return self.spec == other.spec and self._memory_kind == other._memory_kind and self.mesh == other.mesh

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.mesh, self._memory_kind, self.spec))
        return self._hash

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}, memory_kind={self._memory_kind})"


def _mixed_radix(digits, radices):
    number = 0
    for digit, radix in zip(digits, radices):
        number = number * radix + digit
    return number


PMAP_AXIS_NAME = "_internal_pmap_axis_name"


def pmap_sharding(devices: Sequence, out_axis=0, axis_name=None):
    """The sharding a pmap output carries, as JAX's pmap (now built on shard_map) gives it.

    A one-axis mesh over `devices` (Auto, named `axis_name`, or `_internal_pmap_axis_name` when pmap got
    none) and a spec naming it at position `out_axis` (the dimension pmap stacked its results along;
    None: an unmapped output, the same on every device). JAX has no PmapSharding class any more.
    """
    name = PMAP_AXIS_NAME if axis_name is None else axis_name
    mesh = Mesh(np.array(list(devices), dtype=object), (name,))
    spec = P() if out_axis is None else P(*(None,) * out_axis, name)
    return NamedSharding(mesh, spec)


class TiledSharding(Sharding):
    """A block layout given device by device, for the rare output layout XLA picks that no PartitionSpec over
    the program's mesh describes (an axis split further than the mesh splits it)."""

    def __init__(self, devices, blocks, coordinates, memory_kind=None):
        self._devices = tuple(devices)
        self._blocks = tuple(blocks)
        self._coordinates = [tuple(c) for c in coordinates]
        self._memory_kind = _default_memory_kind(self._devices[0]) if memory_kind is None else memory_kind

    @property
    def device_set(self):
        return set(self._devices)

    @property
    def _device_assignment(self):
        return self._devices

    @property
    def memory_kind(self):
        return self._memory_kind

    @property
    def is_fully_replicated(self):
        return math.prod(self._blocks) == 1

    def _block_layout(self, ndim):
        if ndim != len(self._blocks):
            raise ValueError(f"{self} describes arrays of rank {len(self._blocks)}, not {ndim}")
        return self._blocks, self._coordinates

    def __eq__(self, other):
        if not isinstance(other, TiledSharding):
            return NotImplemented
        return (self._devices, self._blocks, self._coordinates) == (other._devices, other._blocks, other._coordinates)

    def __hash__(self):
        return hash((self._devices, self._blocks))

    def __repr__(self):
        return f"TiledSharding(blocks={list(self._blocks)}, devices={[d.id for d in self._devices]})"


def sharding_with_layout(mesh, ndim, blocks, coordinates):
    """The sharding over `mesh` whose blocks are `blocks` per dimension, device k of the mesh (in flat order)
    holding the block at `coordinates[k]` (None: every device holds the whole array): a NamedSharding when
    some PartitionSpec gives exactly that layout, else a TiledSharding."""
    if coordinates is None:
        return NamedSharding(mesh, P())
    split_axes = [name for name, size in mesh.shape.items() if size > 1]
    wanted = (tuple(blocks), [tuple(c) for c in coordinates])

    def specs(dim, unused):
        """Every spec for dimensions dim.. whose product of axis sizes matches `blocks`."""
        if dim == ndim:
            yield ()
            return
        for axes in _ordered_subsets(unused, blocks[dim], mesh.shape):
            for rest in specs(dim + 1, [a for a in unused if a not in axes]):
                yield (axes if axes else None,) + rest

    for entries in specs(0, split_axes):
        while entries and entries[-1] is None:  # the shortest spec, as one would write it
            entries = entries[:-1]
        candidate = NamedSharding(mesh, P(*entries))
        if candidate._block_layout(ndim) == wanted:
            return candidate
    return TiledSharding(tuple(mesh.devices.flat), blocks, coordinates)


def _ordered_subsets(axes, product, sizes):
    """Ordered tuples of distinct `axes` whose sizes multiply to `product` (the empty tuple for 1)."""
    if product == 1:
        yield ()
        return
    for axis in axes:
        if product % sizes[axis] == 0:
            for rest in _ordered_subsets([a for a in axes if a != axis], product // sizes[axis], sizes):
                yield (axis,) + rest


# --- the mesh in context ------------------------------------------------------------------------------------
_context = threading.local()


def current_mesh():
    """The mesh set by `set_mesh` / `use_mesh` in this thread (None if none is)."""
    return getattr(_context, "mesh", None)


class _MeshSetting:
    """`set_mesh(mesh)`: sets this thread's mesh at once; used as a context manager, restores the previous one
    on exit (so it serves as `use_mesh` too)."""

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh takes a numax.sharding.Mesh, got {mesh!r}")
        self.previous = current_mesh()
        _context.mesh = mesh

    def __enter__(self):
        return current_mesh()

    def __exit__(self, *exc):
        _context.mesh = self.previous
        return False


def set_mesh(mesh):
    return _MeshSetting(mesh)


def as_sharding(value, what):
    """A Sharding from a Sharding, or from a PartitionSpec over the mesh in context (an error naming `what` if
    no mesh is set)."""
    if isinstance(value, Sharding):
        return value
    if isinstance(value, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise ValueError(f"{what} got the PartitionSpec {value} but no mesh is set: pass a "
                             f"NamedSharding(mesh, {value}), or set the mesh with `numax.set_mesh(mesh)` / "
                             f"`with numax.sharding.use_mesh(mesh):`")
        return NamedSharding(mesh, value)
    raise TypeError(f"{what} takes a Sharding or a PartitionSpec, got {value!r}")
