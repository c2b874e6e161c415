"""Arrays laid out as partial sums (a PartitionSpec's `unreduced` axes): which data each device holds.

Along an unreduced mesh axis the devices hold blocks of the same shape whose sum is the array's block, as JAX's
`device_put(x, P(..., unreduced={...}))` makes them. Pure layout arithmetic on host data, beside core/sharding.py
(which describes the layouts); the runtime places the blocks.
"""

import math

import numpy as np

from .sharding import NamedSharding, _entry_axes

__all__ = ["partial_sum_blocks"]


def _positions_along(sharding, axis, shape, free_dims):
    """Per element of an array of `shape` laid out by `sharding` (a NamedSharding), the position along mesh
    `axis` of the devices holding it (an index array broadcastable to `shape`); 0 where `axis` splits none of
    `free_dims`."""
    mesh_shape = sharding.mesh.shape
    for dim, entry in enumerate(tuple(sharding.spec) + (None,) * (len(shape) - len(sharding.spec))):
        axes = _entry_axes(entry)
        if axis not in axes or dim not in free_dims:
            continue
        if len(axes) > 1:  # (XLA's own choice there is not a layout rule numax can state)
            raise NotImplementedError(f"numax cannot yet lay out an array split over several mesh axes on one "
                                      f"dimension ({sharding.spec}) as partial sums over {axis!r}")
        # The axes of one entry number the blocks in mixed radix, the first axis major.
        count = math.prod(mesh_shape[a] for a in axes)
        minor = math.prod(mesh_shape[a] for a in axes[axes.index(axis) + 1:])
        block = np.arange(shape[dim]) // (shape[dim] // count)
        return ((block // minor) % mesh_shape[axis]).reshape((-1,) + (1,) * (len(shape) - dim - 1))
    return np.zeros((), np.int64)


def partial_sum_blocks(sharding, host, source=None):
    """Device -> its block (a numpy array) of `host` laid out by `sharding`, a NamedSharding whose spec has
    `unreduced` axes: along those the devices hold partial sums that add up to the block, as JAX's device_put
    makes them. Each element goes whole to the device whose position along the unreduced axes is the element's
    in `source` (the NamedSharding, over the same mesh, that the value came laid out by) where `source` splits a
    dimension that `sharding` leaves whole over that axis, else to the device at position 0 along it; the others
    hold zeros."""
    spec = sharding.spec
    if spec.reduced:
        raise NotImplementedError(f"numax cannot yet lay out arrays as reduced over mesh axes: {spec}")
    if isinstance(source, NamedSharding) and (source.spec.unreduced or source.spec.reduced):
        raise NotImplementedError(f"numax cannot yet lay out an array of sharding {source.spec} as {spec}")
    if not isinstance(source, NamedSharding) or source.mesh.shape != sharding.mesh.shape:
        source = None
    host = np.asarray(host)
    split = sharding.without_partial_sums()
    free_dims = {dim for dim, axes in enumerate(split._split_axes(host.ndim)) if not axes}
    owners = {axis: np.broadcast_to(_positions_along(source, axis, host.shape, free_dims) if source else 0,
                                    host.shape) for axis in spec.unreduced}
    blocks = {}
    for (place, device), index in zip(np.ndenumerate(sharding.mesh.devices),
                                      split.devices_indices_map(host.shape).values()):
        position = dict(zip(sharding.mesh.axis_names, place))
        mine = np.logical_and.reduce([owners[axis][index] == position[axis] for axis in spec.unreduced])
        blocks[device] = np.where(mine, host[index], np.zeros((), host.dtype))
    return blocks
