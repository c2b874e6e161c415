"""`numax.sharding` (JAX's `jax.sharding`): meshes, partition specs and shardings, `make_mesh`, the mesh in
context (`set_mesh`, `get_mesh`, `get_abstract_mesh`, `use_abstract_mesh`), `reshard`, and `auto_axes` /
`explicit_axes`, which run a function with some mesh axes retyped.

The descriptions themselves live in `numax.core.sharding` (the runtime lays arrays out by them); this module
adds `make_mesh`, which builds a mesh over the runtime's devices.
"""

import functools
import math

import numpy as np

from numax.core import pytree as tree
from numax.core.sharding import (  # noqa: F401
    AbstractMesh,
    AxisType,
    DuplicateSpecError,
    IndivisibleError,
    Mesh,
    NamedSharding,
    P,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    pmap_sharding,
    set_mesh,  # noqa: F401
    use_abstract_mesh,
)
from numax.core.sharding import current_abstract_mesh as get_abstract_mesh  # noqa: F401
from numax.core.sharding import current_mesh as get_mesh  # noqa: F401
from numax.lax.sharding_constraint import reshard  # noqa: F401

__all__ = [
    "AxisType", "PartitionSpec", "P", "Mesh", "make_mesh", "Sharding", "SingleDeviceSharding", "NamedSharding",
    "pmap_sharding", "DuplicateSpecError", "IndivisibleError", "set_mesh", "get_mesh", "reshard", "AbstractMesh",
    "get_abstract_mesh", "use_abstract_mesh", "auto_axes", "explicit_axes", "make_single_device_sharding",
]


def make_single_device_sharding(device, *, memory_kind=None):
    """The sharding that puts a whole array on `device` (in `memory_kind`, default the device's own memory)."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    """A mesh of the given shape over `devices` (default: all of numax's devices), as `jax.make_mesh`.

    The first `prod(axis_shapes)` devices are used (an error if there are fewer); axis types default to
    `AxisType.Explicit` (JAX's default since 0.9). CPU devices keep their order (numax.devices() is in id
    order); GPU devices are sorted by id, as JAX does.
    """
    try:
        axis_shapes = tuple(int(size) for size in axis_shapes)
    except (TypeError, ValueError):
        raise ValueError(
            f"`axis_shapes` passed to `make_mesh` should be a sequence of ints, got {axis_shapes}") from None
    if devices is None:
        from numax._runtime import devices as all_devices  # the runtime only when a mesh is made

        devices = all_devices()
    devices = list(devices)
    mesh_size = math.prod(axis_shapes)
    if mesh_size > len(devices):
        raise ValueError(f"make_mesh needs as many devices as the product of mesh shape {axis_shapes} "
                         f"({mesh_size}), but only {len(devices)} devices were given")
    devices = devices[:mesh_size]
    if devices[-1].platform == "gpu":
        devices = sorted(devices, key=lambda device: device.id)
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_shapes)
    return Mesh(np.array(devices, dtype=object).reshape(axis_shapes), axis_names, axis_types)


# --- running a function with mesh axes retyped ------------------------------------------------------------
def _axes_to_retype(what, axes, mesh, from_type):
    if mesh is None:
        raise ValueError(f"{what} needs a mesh: set one with `numax.set_mesh(mesh)`")
    if axes is None:
        return tuple(name for name, kind in zip(mesh.axis_names, mesh.axis_types) if kind is from_type)
    axes = (axes,) if isinstance(axes, str) else tuple(axes)
    unknown = [axis for axis in axes if axis not in mesh.axis_names]
    if unknown:
        raise ValueError(f"{what} got axes {unknown} that are not in the mesh's axes {mesh.axis_names}")
    return axes


def _onto(mesh, x):
    """`x`'s concrete array leaves laid out by the same specs over `mesh` (the same devices, axes retyped)."""
    def move(leaf):
        sharding = getattr(leaf, "_sharding", None)
        if isinstance(sharding, NamedSharding) and sharding.mesh.devices.shape == mesh.devices.shape and \
                sharding.mesh.axis_names == mesh.axis_names and sharding.mesh != mesh:
            from numax._runtime import device_put

            return device_put(leaf, NamedSharding(mesh, sharding.spec))
        return leaf
    return tree.tree_map(move, x)


def _retyping(what, f, axes, axis_type, from_type, sharding_keyword, default_sharding):
    @functools.wraps(f)
    def call(*args, **kwargs):
        sharding = kwargs.pop(sharding_keyword, default_sharding)
        if sharding is None:
            raise TypeError(f"Missing required keyword argument: '{sharding_keyword}'")
        mesh = get_mesh()
        names = _axes_to_retype(what, axes, mesh, from_type)
        retyped = Mesh(mesh.devices, mesh.axis_names,
                       tuple(axis_type if name in names else kind
                             for name, kind in zip(mesh.axis_names, mesh.axis_types)))
        with set_mesh(retyped), use_abstract_mesh(retyped.abstract_mesh):
            args, kwargs = _onto(retyped, (args, kwargs))
            if sharding_keyword == "in_sharding":
                args = reshard(args, sharding)
            out = f(*args, **kwargs)
        out = _onto(mesh, out)
        return reshard(out, sharding) if sharding_keyword == "out_sharding" else out
    return call


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """`f` run with the mesh axes `axes` (default: every Explicit axis) of the mesh in context typed Auto, so
    that the compiler chooses how its values are split along them; its result is laid out by `out_sharding`
    (given here or, as a keyword, at each call)."""
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)
    return _retyping("auto_axes", f, axes, AxisType.Auto, AxisType.Explicit, "out_sharding", out_sharding)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """`f` run with the mesh axes `axes` (default: every Auto axis) of the mesh in context typed Explicit; its
    arguments are first laid out by `in_sharding` (given here or, as a keyword, at each call)."""
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)
    return _retyping("explicit_axes", f, axes, AxisType.Explicit, AxisType.Auto, "in_sharding", in_sharding)
