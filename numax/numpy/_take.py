"""`take`, `take_along_axis` and `put_along_axis`: gathers and scatters along one axis, with JAX's out-of-bounds
modes, and the index normalization that indexing shares with them.

JAX's defaults, followed here: `take` and `take_along_axis` fill out-of-bounds reads (NaN for inexact dtypes,
the extreme integer otherwise; see `lax.gather_fill_value`), `put_along_axis` drops out-of-bounds writes.
"""

import math

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.lax.slicing import index_dtype_for_shape

from . import _shape
from ._util import broadcast_shapes, canonicalize_axis, is_array, materialize, shape, to_array

__all__ = ["put_along_axis", "take_along_axis"]


def index_dtype(a_shape):
    """The dtype index arrays into an array of `a_shape` are converted to (int32 unless the shape needs more)."""
    return dtypes.canonicalize_dtype(index_dtype_for_shape(a_shape))


def normalize_indices(indices, size, dtype, wrap_negative=True):
    """Integer indices as `dtype`, negative entries first counted from the end (i + size) when `wrap_negative`.

    The sum is formed in the wider of the two dtypes: a narrow index type does not overflow, and a wide one is
    narrowed afterwards as JAX narrows it."""
    if not is_array(indices):
        indices = np.asarray(indices)
        if wrap_negative and not dtypes.is_unsigned(indices.dtype):
            indices = indices.astype(np.int64)
            indices = np.where(indices < 0, indices + size, indices)
        return indices.astype(dtype)
    own = dtypes.dtype(indices)
    if wrap_negative and not dtypes.is_unsigned(own):
        wide = own if own.itemsize >= dtype.itemsize else dtype
        indices = lax.convert_element_type(indices, wide)
        size = wide.type(size) if isinstance(size, int) else lax.convert_element_type(size, wide)  # symbolic
        indices = lax.select(lax.lt(indices, wide.type(0)), lax.add(indices, size), indices)
    return lax.convert_element_type(indices, dtype)


def integer_indices(name, indices, error=TypeError):
    indices = to_array(indices)
    if not dtypes.is_integer(dtypes.dtype(indices)):
        raise error(f"{name} requires integer indices, got {dtypes.dtype(indices).name}")
    return indices


def _expand_last(indices):
    return np.expand_dims(indices, -1) if not is_array(indices) else lax.expand_dims(indices, (len(shape(indices)),))


def _size(shape_):
    return math.prod(shape_)  # a symbolic size (shape-polymorphic export) stays symbolic


def _take_mode(mode, indices, a_shape, axis):
    """(indices, gather mode) for take's modes as JAX reads them: None is 'fill', which counts negative indices
    from the end; 'clip' clamps them to 0; 'wrap' takes them modulo the axis size."""
    size = a_shape[axis]
    if mode is None or mode == "fill":
        return normalize_indices(indices, size, index_dtype(a_shape)), lax.GatherScatterMode.FILL_OR_DROP
    if mode == "clip":
        return indices, lax.GatherScatterMode.CLIP
    if mode == "wrap":
        from ._ufuncs import remainder

        return remainder(indices, np.asarray(max(size, 1), dtypes.dtype(indices))), (
            lax.GatherScatterMode.PROMISE_IN_BOUNDS)
    if mode == "raise":
        raise NotImplementedError("take's mode='raise' needs the index values; use 'fill', 'clip' or 'wrap'")
    raise ValueError(f"invalid mode {mode!r} for take: expected 'fill', 'clip' or 'wrap'")


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    """Elements of `a` at `indices` along `axis` (flattened when None); out-of-bounds indices give `fill_value`
    (NaN, or the extreme integer) unless `mode` is 'clip' or 'wrap'."""
    if out is not None:
        raise NotImplementedError("take's out= argument is not supported: numax arrays are immutable")
    a = to_array(a)
    indices = integer_indices("take", indices, ValueError)  # (JAX's class: lax.gather's)
    if axis is None:
        a, axis = _shape.ravel(a), 0
    a_shape = shape(a)
    axis = canonicalize_axis(axis, len(a_shape))
    index_shape = shape(indices)
    out_shape = a_shape[:axis] + index_shape + a_shape[axis + 1:]
    indices, gather_mode = _take_mode(mode, indices, a_shape, axis)
    if a_shape[axis] == 0 and _size(index_shape):
        raise IndexError("cannot do a non-empty take from an empty axis")
    if _size(out_shape) == 0:
        return lax.full(out_shape, np.zeros((), dtypes.dtype(a)))
    offset_dims = tuple(range(axis)) + tuple(range(axis + len(index_shape), len(out_shape)))
    slice_sizes = a_shape[:axis] + (1,) + a_shape[axis + 1:]
    dimension_numbers = lax.GatherDimensionNumbers(offset_dims, (axis,), (axis,))
    return materialize(lax.gather(a, _expand_last(indices), dimension_numbers, slice_sizes, mode=gather_mode,
                                  fill_value=fill_value, unique_indices=unique_indices,
                                  indices_are_sorted=indices_are_sorted))


def _along_axis_operands(name, arr, indices, axis):
    """arr and indices broadcast against each other outside `axis` (numpy's take_along_axis rule)."""
    arr = to_array(arr)
    indices = integer_indices(name, indices)
    if axis is None:
        if len(shape(indices)) != 1:
            raise ValueError(f"{name}: indices must be 1-D when axis is None, got shape {shape(indices)}")
        arr, axis = _shape.ravel(arr), 0
    arr_shape, index_shape = shape(arr), shape(indices)
    if len(arr_shape) != len(index_shape):
        raise ValueError(f"{name}: indices and arr must have the same number of dimensions, got shapes "
                         f"{index_shape} and {arr_shape}")
    axis = canonicalize_axis(axis, len(arr_shape))
    others = [d for d in range(len(arr_shape)) if d != axis]
    batch = broadcast_shapes(tuple(arr_shape[d] for d in others), tuple(index_shape[d] for d in others))
    arr_target = list(batch)
    arr_target.insert(axis, arr_shape[axis])
    index_target = list(batch)
    index_target.insert(axis, index_shape[axis])
    return _shape.broadcast_to(arr, arr_target), _shape.broadcast_to(indices, index_target), axis, tuple(others)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None):
    """`arr` read at `indices` along `axis`, matching the other dimensions. Out-of-bounds reads are filled unless
    `mode` says otherwise; negative indices count from the end unless `wrap_negative_indices` is False (by
    default they do, except in mode 'promise_in_bounds', as in JAX)."""
    arr, indices, axis, others = _along_axis_operands("take_along_axis", arr, indices, axis)
    out_shape = shape(indices)
    size = shape(arr)[axis]
    if size == 0 or _size(out_shape) == 0:
        return lax.full(out_shape, np.zeros((), dtypes.dtype(arr)))
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    if wrap_negative_indices:
        indices = normalize_indices(indices, size, index_dtype((size,)))
    dimension_numbers = lax.GatherDimensionNumbers((), (axis,), (axis,), others, others)
    return materialize(lax.gather(arr, _expand_last(indices), dimension_numbers, (1,) * len(out_shape),
                                  mode="fill" if mode is None else mode, fill_value=fill_value))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """`arr` with `values` written at `indices` along `axis` (pass inplace=False: arrays are immutable).
    Out-of-bounds writes are dropped unless `mode` is 'clip'."""
    if inplace:
        raise ValueError("numax arrays are immutable: call put_along_axis(..., inplace=False), which returns "
                         "the updated array")
    original_shape = shape(to_array(arr))
    written_shape = (_size(original_shape),) if axis is None else original_shape  # (axis None: flattened)
    arr, indices, axis, others = _along_axis_operands("put_along_axis", arr, indices, axis)
    target_shape = shape(arr)
    if target_shape != written_shape:
        raise ValueError(f"put_along_axis: indices of shape {shape(indices)} do not fit arr of shape {original_shape}")
    values = lax.convert_element_type(to_array(values), dtypes.dtype(arr), dtypes.dtype_and_weak_of(arr)[1])
    values = _shape.broadcast_to(values, shape(indices))
    if _size(shape(indices)) == 0:
        return materialize(lax.reshape(arr, original_shape))
    indices = normalize_indices(indices, target_shape[axis], index_dtype(target_shape))
    dimension_numbers = lax.ScatterDimensionNumbers((), (axis,), (axis,), others, others)
    out = lax.scatter(arr, _expand_last(indices), values, dimension_numbers, mode=mode)
    return materialize(lax.reshape(out, original_shape))
