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
import functools
import math
import threading
from collections.abc import Sequence

import numpy as np

__all__ = [
    "AxisType", "PartitionSpec", "P", "Mesh", "AbstractMesh", "Sharding", "SingleDeviceSharding", "NamedSharding",
    "pmap_sharding", "DuplicateSpecError", "IndivisibleError",
]


class DuplicateSpecError(Exception):
    """A partition spec uses one mesh axis for more than one array dimension (JAX's type: not a ValueError)."""


class IndivisibleError(ValueError):
    """An array dimension does not split evenly into the blocks its sharding asks for."""


class ShardingTypeError(Exception):
    """Operands whose types split them over Explicit mesh axes in ways an operation cannot combine (JAX's type:
    not a TypeError)."""


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

    __slots__ = ("_partitions", "unreduced", "reduced")
    UNCONSTRAINED = _UNCONSTRAINED

    def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
        partitions = tuple(_canonical_entry(p) for p in partitions)
        named = {axis for entry in partitions for axis in _entry_axes(entry)}
        for keyword, axes in (("unreduced", unreduced), ("reduced", reduced)):
            if not isinstance(axes, set | frozenset):
                raise TypeError(f"{keyword} argument of PartitionSpec should of type `frozenset` or `set`. Got type "
                                f"{axes}")
            if named & axes:
                raise ValueError(f"partitions cannot overlap with {keyword} axes passed to PartitionSpec. Got "
                                 f"partitions: {partitions} and {keyword} axes: {frozenset(axes)}")
        if set(unreduced) & set(reduced):
            raise ValueError(f"unreduced and reduced axes of a PartitionSpec cannot overlap: got {set(unreduced)} "
                             f"and {set(reduced)}")
        object.__setattr__(self, "_partitions", partitions)
        # Axes over which the array is a per-device partial sum (`unreduced`), or replicated but known to come
        # from such a sum (`reduced`): part of the type in JAX, kept here so specs compare and print as JAX's.
        object.__setattr__(self, "unreduced", frozenset(unreduced))
        object.__setattr__(self, "reduced", frozenset(reduced))

    def __setattr__(self, name, value):
        raise AttributeError("PartitionSpec is immutable")

    @property
    def partitions(self):
        return self._partitions

    def __repr__(self):
        parts = [repr(entry) for entry in self._partitions]
        parts += [f"{keyword}={{{', '.join(repr(axis) for axis in sorted(axes, key=str))}}}"
                  for keyword, axes in (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes]
        return f"P({', '.join(parts)}{',' if len(self._partitions) == 1 and len(parts) == 1 else ''})"

    def __eq__(self, other):
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return (self._partitions == other._partitions and self.unreduced == other.unreduced
                and self.reduced == other.reduced)

    def __hash__(self):
        return hash((self._partitions, self.unreduced, self.reduced))

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
        return (functools.partial(PartitionSpec, unreduced=self.unreduced, reduced=self.reduced), self._partitions)


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
    def abstract_mesh(self):
        return AbstractMesh(self.axis_sizes, self._axis_names, self._axis_types)

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


class AbstractMesh:
    """A mesh's shape, axis names and axis types without its devices (JAX's `jax.sharding.AbstractMesh`): what
    a traced program may know of the mesh it runs on. `Mesh.abstract_mesh` is a mesh's."""

    def __init__(self, axis_sizes, axis_names, axis_types=None):
        self._axis_sizes = tuple(int(size) for size in axis_sizes)
        self._axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(self._axis_sizes) != len(self._axis_names):
            raise ValueError(f"an AbstractMesh needs one axis name per axis size: got axis_sizes={self._axis_sizes} "
                             f"and axis_names={self._axis_names}")
        self._axis_types = _canonical_axis_types(self._axis_names, axis_types)

    axis_sizes = property(lambda self: self._axis_sizes)
    axis_names = property(lambda self: self._axis_names)
    axis_types = property(lambda self: self._axis_types)
    size = property(lambda self: math.prod(self._axis_sizes))
    empty = property(lambda self: not self._axis_names)

    @property
    def shape(self):
        return collections.OrderedDict(zip(self._axis_names, self._axis_sizes))

    @property
    def shape_tuple(self):
        return tuple(zip(self._axis_names, self._axis_sizes))

    def update_axis_types(self, new_types):
        """This mesh with the axes named in `new_types` (name -> AxisType) of those types."""
        return AbstractMesh(self._axis_sizes, self._axis_names,
                            tuple(new_types.get(name, kind) for name, kind in zip(self._axis_names, self._axis_types)))

    def _key(self):
        return (self._axis_sizes, self._axis_names, self._axis_types)

    def __eq__(self, other):
        if not isinstance(other, AbstractMesh):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        sizes = ", ".join(f"'{name}': {size}" for name, size in self.shape.items())
        return f"AbstractMesh({sizes}, axis_types={self._axis_types})"


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
        if has_partial_sums(self) or has_partial_sums(other):  # (blocks of partial sums: only the same spec)
            return self == other
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
    for axis in spec.unreduced | spec.reduced:
        if axis not in mesh.axis_names:
            raise ValueError(f"Resource axis: {axis} of {spec} is not found in mesh: {mesh.axis_names}.")
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
        if isinstance(mesh, AbstractMesh):  # (a type's sharding: no devices, so no memory to check)
            self._memory_kind = memory_kind
            return
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

    def update(self, *, mesh=None, spec=None, memory_kind=None):
        """This sharding with the given mesh, spec (a PartitionSpec or a sequence of its entries) or memory kind."""
        if spec is not None and not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(self.mesh if mesh is None else mesh, self.spec if spec is None else spec,
                             memory_kind=self._memory_kind if memory_kind is None else memory_kind)

    def _split_axes(self, ndim):
        """Per array dimension, the mesh axes of size > 1 that split it (size-1 axes split nothing)."""
        if len(self.spec) > ndim:
            extra = " (for scalars the PartitionSpec should be P())" if ndim == 0 else ""
            raise ValueError(f"{self} is only valid for values of rank at least {len(self.spec)}, but was applied "
                             f"to a value of rank {ndim}{extra}")
        entries = tuple(self.spec) + (None,) * (ndim - len(self.spec))
        return [tuple(axis for axis in _entry_axes(entry) if self.mesh.shape[axis] != 1) for entry in entries]

    def shard_shape(self, global_shape):
        # Partial sums have the shape of the blocks the split axes make.
        return (self.without_partial_sums() if has_partial_sums(self) else super()).shard_shape(global_shape)

    def without_partial_sums(self):
        """This sharding's blocks without the partial sums: its spec less the unreduced and reduced axes."""
        return NamedSharding(self.mesh, PartitionSpec(*self.spec), memory_kind=self._memory_kind)

    def _block_layout(self, ndim):
        if self.spec.unreduced or self.spec.reduced:
            raise NotImplementedError(f"numax cannot yet lay out arrays as partial sums over mesh axes: {self.spec} "
                                      f"has unreduced or reduced axes")
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
        if isinstance(self.mesh, AbstractMesh):
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}, memory_kind={self._memory_kind})"


def explicit_sharding_of(value):
    """A value's layout over Explicit mesh axes (an array's, a traced jit argument's, a ShapeDtypeStruct's), or
    None: jax keeps it in the value's type."""
    return explicit_only(value.explicit_sharding if hasattr(value, "explicit_sharding") else
                         getattr(value, "sharding", None))


def explicit_only(sharding):
    """`sharding` where it lays out over Explicit mesh axes (a NamedSharding), else None."""
    explicit = isinstance(sharding, NamedSharding) and AxisType.Explicit in sharding.mesh.axis_types
    return sharding if explicit else None


def has_partial_sums(sharding):
    """Whether `sharding` lays an array out as partial sums (or reduced copies) along some mesh axes."""
    spec = getattr(sharding, "spec", None)
    return isinstance(spec, PartitionSpec) and bool(spec.unreduced or spec.reduced)


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


def current_abstract_mesh():
    """The abstract mesh in context: the one `use_abstract_mesh` set, else that of the mesh set by `set_mesh`,
    else the empty one."""
    abstract = getattr(_context, "abstract_mesh", None)
    if abstract is not None:
        return abstract
    mesh = current_mesh()
    return _EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def unsplit_type_sharding(ndim):
    """The sharding of a type that splits no dimension, over the abstract mesh in context (JAX's
    `ShapedArray.sharding` of an unsharded value)."""
    return NamedSharding(current_abstract_mesh(), PartitionSpec(*(None,) * ndim))


def _mesh_for_abstract(abstract, what):
    """A concrete mesh of `abstract`'s shape, names and types over the devices of the mesh in context (JAX's
    abstract mesh stands for the concrete one it runs on, laid out anew)."""
    mesh = current_mesh()
    if mesh is None or mesh.size != abstract.size:
        raise ValueError(f"{what} got the abstract mesh {abstract}, which needs a mesh of {abstract.size} devices "
                         f"set with `numax.set_mesh`, but the mesh in context is {mesh}")
    if mesh.abstract_mesh == abstract:
        return mesh
    return Mesh(mesh.devices.reshape(abstract.axis_sizes), abstract.axis_names, abstract.axis_types)


class use_abstract_mesh:  # noqa: N801  (JAX's name)
    """`with use_abstract_mesh(abstract_mesh):` PartitionSpecs in the block name axes of `abstract_mesh`, laid
    over the devices of the mesh in context (which must have as many)."""

    def __init__(self, abstract_mesh):
        if not isinstance(abstract_mesh, AbstractMesh):
            raise ValueError(f"use_abstract_mesh takes an AbstractMesh, got {abstract_mesh!r}")
        self.abstract_mesh = abstract_mesh

    def __enter__(self):
        self.previous = getattr(_context, "abstract_mesh", None)
        _context.abstract_mesh = self.abstract_mesh
        return self.abstract_mesh

    def __exit__(self, *exc):
        _context.abstract_mesh = self.previous
        return False


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
        abstract = getattr(_context, "abstract_mesh", None)
        if abstract is not None:
            mesh = _mesh_for_abstract(abstract, what)
        return NamedSharding(mesh, value)
    raise TypeError(f"{what} takes a Sharding or a PartitionSpec, got {value!r}")


# --- the types of values split over Explicit mesh axes ------------------------------------------------------
def explicit_entries(sharding, ndim):
    """Per dimension, the Explicit mesh axes (a name, a tuple of names, or None) that `sharding` splits it over,
    as the value's type shows them; None for a value not laid out by a NamedSharding."""
    if not isinstance(sharding, NamedSharding):
        return None
    explicit = {name for name, kind in zip(sharding.mesh.axis_names, sharding.mesh.axis_types)
                if kind is AxisType.Explicit}
    entries = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    return tuple(_canonical_entry(tuple(axis for axis in _entry_axes(entry) if axis in explicit))
                 for entry in entries)


def type_text(aval, entries):
    """`i32[4@X,4]`: an array type with its Explicit splits, as JAX prints it in errors."""
    from .dtypes import short_name  # (the dtype names only: core.sharding knows no arrays)

    dims = [str(size) + ("" if entry is None else f"@{entry}" if isinstance(entry, str) else f"@({','.join(entry)})")
            for size, entry in zip(aval.shape, entries)]
    return f"{short_name(aval.dtype)}[{','.join(dims)}]"


def check_broadcasting_splits(name, avals, shardings, out_aval):
    """JAX's typing of an elementwise operation on operands split over Explicit mesh axes: each dimension of the
    result is split as every operand that splits it (size-1 dimensions aside) agrees, and no mesh axis may
    split two of its dimensions; a ShardingTypeError otherwise. An operand of partial sums (unreduced) needs the
    other to be partial sums too: the sum would otherwise need communication that jax's types make explicit."""
    unreduced = [has_partial_sums(sharding) for sharding in shardings]
    if len(unreduced) == 2 and unreduced[0] != unreduced[1]:
        which, other = ("lhs", "rhs") if unreduced[0] else ("rhs", "lhs")
        raise ShardingTypeError(f"{which} is unreduced while {other} is not. `{name}` operation does not allow this "
                                f"because there will be implicit communication. Please reduce {which} via `reshard` "
                                f"before calling `{name}`.")
    typed = [(aval, explicit_entries(sharding, aval.ndim)) for aval, sharding in zip(avals, shardings)]
    if not any(entries and any(entries) for _, entries in typed):
        return
    typed = [(aval, entries or (None,) * aval.ndim) for aval, entries in typed]
    ranked = [(aval, entries) for aval, entries in typed if aval.ndim]
    if not ranked or len({aval.ndim for aval, _ in ranked}) != 1:
        return  # (rank errors are the shape rule's)
    result = []
    for dim in range(ranked[0][0].ndim):
        splits = {entries[dim] for aval, entries in ranked if not (aval.shape[dim] == 1 and entries[dim] is None)}
        splits.discard(None)
        if len(splits) > 1:
            specs = ", ".join(str(entries) for _, entries in ranked)
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: {specs}.")
        result.append(splits.pop() if splits else None)
    used = [axis for entry in result for axis in _entry_axes(entry)]
    if len(used) != len(set(used)):
        inputs = ", ".join(type_text(aval, entries) for aval, entries in typed)
        raise ShardingTypeError(f"{name} operation with inputs: {inputs} produces an illegally sharded result: "
                                f"{type_text(out_aval, result)}")
