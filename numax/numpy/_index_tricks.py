"""Index tricks: `mgrid`, `ogrid`, `r_`, `c_`, `s_`, `index_exp`, objects indexed with slices to build arrays.

Slice bounds must be concrete (they fix the result's shape). A complex step `a:b:nj` means "n points from a to
b inclusive" (linspace), a real step is an arange step, as in numpy.
"""

import numpy as np

from numax.core.trace import concrete_or_error

from ._creation import arange, array, linspace, meshgrid
from ._shape import concatenate, expand_dims, stack, transpose
from ._util import ndim, promote_dtypes

__all__ = ["c_", "index_exp", "mgrid", "ogrid", "r_", "s_"]


def _grid_from_slice(item, op_name):
    """The 1-d array a slice `start:stop:step` stands for in `op_name`."""
    start, stop, step = (concrete_or_error(value, f"slice {part} of numax.numpy.{op_name} must be concrete")
                         for part, value in (("start", item.start), ("stop", item.stop), ("step", item.step)))
    # As in JAX, a missing (or zero) start/step means 0/1.
    start = start or 0
    step = step or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


def _grids(key, op_name):
    key = key if isinstance(key, tuple) else (key,)
    for item in key:
        if not isinstance(item, slice):
            raise TypeError(f"numax.numpy.{op_name} is indexed by slices, got {item!r}")
    return promote_dtypes(*(_grid_from_slice(item, op_name) for item in key))


class _Mgrid:
    """`mgrid[a:b:s, c:d:t, ...]`: the dense ("ij") mesh grid of the slices' ranges, stacked on axis 0.

    A single slice gives the 1-d range; an imaginary step `nj` asks for n points with the stop included."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_from_slice(key, "mgrid")
        grids = _grids(key, "mgrid")
        if not grids:
            return arange(0)
        return stack(meshgrid(*grids, indexing="ij", sparse=False), 0)


class _Ogrid:
    """`ogrid[a:b:s, c:d:t, ...]`: the open (sparse, "ij") mesh grid of the slices' ranges, as a list of arrays.

    A single slice gives the 1-d range; an imaginary step `nj` asks for n points with the stop included."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_from_slice(key, "ogrid")
        return meshgrid(*_grids(key, "ogrid"), indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


def _parse_directive(directive, defaults):
    """The (axis, ndmin, trans1d, matrix) a leading string asks for: "r"/"c" (a row/column matrix from a 1-d
    result) or up to three comma-separated integers "axis,ndmin,trans1d" (more are ignored, as in JAX)."""
    if directive == "r":
        return defaults[:3] + (0,)
    if directive == "c":
        return defaults[:3] + (1,)
    fields = directive.split(",")
    fields = fields[:3] + list(defaults[len(fields[:3]):])
    try:
        return tuple(int(field) for field in fields)
    except ValueError:
        raise ValueError(f"could not understand directive {directive!r}") from None


class _AxisConcat:
    """Concatenates slices (as ranges), scalars and array-likes along `axis` after raising each to `ndmin`
    dimensions; `trans1d` says where a raised item's own dimensions go (-1: last, as numpy)."""

    axis, ndmin, trans1d, op_name = 0, 1, -1, ""

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d, matrix = _parse_directive(items[0], (axis, ndmin, trans1d, -1))
            items = items[1:]
        pieces = []
        for item in items:
            if isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            if isinstance(item, slice):
                piece, item_ndim = _grid_from_slice(item, self.op_name), 0
            else:
                piece = array(item, copy=False)
                item_ndim = ndim(piece)
            piece = array(piece, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin > item_ndim:
                # Rotate the dimensions left so the item's own dimensions end at position `trans1d`.
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                order = tuple(range(ndmin))
                piece = transpose(piece, order[shift:] + order[:shift])
            pieces.append(piece)
        result = concatenate(pieces, axis=axis)
        if matrix != -1 and ndim(result) == 1:
            result = expand_dims(result, matrix)
        return result

    def __len__(self):
        return 0


class _RClass(_AxisConcat):
    """`r_[...]`: concatenates slices (as ranges), scalars and arrays along the first axis. A leading string
    "axis,ndmin,trans1d" or "r"/"c" changes the axis, the minimum rank, or makes a row/column matrix."""

    axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class _CClass(_AxisConcat):
    """`c_[...]`: concatenates slices, scalars and arrays along the last axis, 1-d items becoming columns.
    A leading string "axis,ndmin,trans1d" or "r"/"c" changes this as for `r_`."""

    axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


r_ = _RClass()
c_ = _CClass()
s_ = np.s_
index_exp = np.index_exp
