"""`numax.sharding` (JAX's `jax.sharding`): meshes, partition specs and shardings, `make_mesh`, the mesh in
context (`set_mesh`, `get_mesh`) and `reshard`.

The descriptions themselves live in `numax.core.sharding` (the runtime lays arrays out by them); this module
adds `make_mesh`, which builds a mesh over the runtime's devices.
"""

import math

import numpy as np

from numax.core.sharding import (  # noqa: F401
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
)
from numax.core.sharding import current_mesh as get_mesh  # noqa: F401
from numax.lax.sharding_constraint import reshard  # noqa: F401

__all__ = [
    "AxisType", "PartitionSpec", "P", "Mesh", "make_mesh", "Sharding", "SingleDeviceSharding", "NamedSharding",
    "pmap_sharding", "DuplicateSpecError", "IndivisibleError", "set_mesh", "get_mesh", "reshard",
]


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
