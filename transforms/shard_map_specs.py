"""The `shard_map` call primitive and what its specs mean: the mesh axes a PartitionSpec splits each dimension over,
the aval of one device's block and of the global value, and the mesh axes bound while a per-shard program is traced.

transforms/shard_map.py gives the primitive its rules and `numax.shard_map`; transforms/shard_map_eager.py (the
eager, per-device path that shard_map.py calls) binds it. Both build on this module.
"""

import contextlib
import math

from ..core.primitives import Primitive
from ..core.sharding import P
from ..lax.collectives import extend_axis_env


class ShardMapPrimitive(Primitive):
    """The shard_map call: the axes its program's collectives name, less the mesh axes it binds itself, are
    the ones an enclosing vmap must see."""

    def named_axes(self, params):
        return super().named_axes(params) - frozenset(params["mesh"].axis_names)


shard_map_p = ShardMapPrimitive("shard_map", multiple_results=True)


# --- specs and avals --------------------------------------------------------------------------------------
def _dimension_axes(spec, ndim):
    """Per dimension of a rank-`ndim` value, the mesh axes that `spec` splits it over (major first)."""
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    return [() if entry is None else entry if isinstance(entry, tuple) else (entry,) for entry in entries]


def _named_axes_of(spec):
    return {axis for axes in _dimension_axes(spec, len(spec)) for axis in axes}


def _blocks_per_dimension(mesh, spec, ndim):
    return [math.prod(mesh.shape[axis] for axis in axes) for axes in _dimension_axes(spec, ndim)]


def _shard_aval(mesh, spec, aval, check_vma):
    """The aval of one device's block of a global value laid out by `spec` (typed as varying over the axes
    `spec` names, with `check_vma`)."""
    blocks = _blocks_per_dimension(mesh, spec, aval.ndim)
    return aval.update(shape=tuple(size // count for size, count in zip(aval.shape, blocks)),
                       vma=frozenset(_named_axes_of(spec)) if check_vma else frozenset())


def _unshard_aval(mesh, spec, aval):
    """The aval of the global value whose blocks (one per device, laid out by `spec`) have `aval`."""
    blocks = _blocks_per_dimension(mesh, spec, aval.ndim)
    return aval.update(shape=tuple(size * count for size, count in zip(aval.shape, blocks)), vma=frozenset())


def _unmentioned(manual_axes, spec):
    """The manual axes along which a value laid out by `spec` is the same on every device."""
    named = _named_axes_of(spec)
    return tuple(axis for axis in manual_axes if axis not in named)


def _spec_with_dimension(spec, ndim, position, entry=None):
    """`spec` (of a rank-`ndim` value) with a new dimension at `position`, split over `entry`."""
    entries = list(spec) + [None] * (ndim - len(spec))
    entries.insert(position, entry)
    return P(*entries)


@contextlib.contextmanager
def _mesh_axes_bound(mesh, check_vma):
    """Binds every axis of `mesh` for collectives traced or transformed in the block (values typed by the axes
    they vary over, with `check_vma`)."""
    with contextlib.ExitStack() as stack:
        for name, size in mesh.shape.items():
            stack.enter_context(extend_axis_env(name, size, varying_types=check_vma))
        yield
