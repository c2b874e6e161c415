"""Slicing primitives: static `slice`, and `dynamic_slice` / `dynamic_update_slice` with traced starts.

Gather and scatter, the general indexed reads and writes, live in `gather_scatter.py`.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, canonical_shape
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from . import typing as T

slice_p = Primitive("slice")


def _slice_abstract_eval(x, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: start_indices {start_indices}, limit_indices {limit_indices} and strides "
                        f"{strides} must each have one entry per dimension of shape {x.shape}")
    shape = []
    for size, start, limit, stride in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= start <= limit <= size or stride < 1:
            raise TypeError(f"slice: invalid start {start_indices}, limit {limit_indices}, strides {strides} "
                            f"for shape {x.shape}")
        shape.append((limit - start + stride - 1) // stride)
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p.def_abstract_eval(_slice_abstract_eval)
register_lowering(slice_p, lambda ctx, x, start_indices, limit_indices, strides: dynamic_shapes.slice(
    ctx.builder, x, start_indices, limit_indices, strides, aval_type(ctx.aval_out)))


def slice(operand, start_indices, limit_indices, strides=None):
    """The static slice [start, limit) with `strides` along every dimension."""
    aval = get_aval_of(operand)
    start_indices, limit_indices = canonical_shape(start_indices), canonical_shape(limit_indices)
    strides = (1,) * aval.ndim if strides is None else tuple(int(s) for s in strides)
    if start_indices == (0,) * aval.ndim and limit_indices == aval.shape and strides == (1,) * aval.ndim:
        return operand
    return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    aval = get_aval_of(operand)
    start = [0] * aval.ndim
    limit = list(aval.shape)
    strides = [1] * aval.ndim
    size = aval.shape[axis]
    start_index = 0 if start_index is None else start_index
    limit_index = size if limit_index is None else limit_index
    start[axis] = start_index + size if start_index < 0 else start_index
    limit[axis] = limit_index + size if limit_index < 0 else limit_index
    strides[axis] = stride
    return slice(operand, start, limit, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    from .shapes import squeeze

    aval = get_aval_of(operand)
    index = index + aval.shape[axis] if index < 0 else index
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# --- dynamic_slice / dynamic_update_slice ---------------------------------------------------------------
# Start indices are scalar operands. XLA clamps each start so that the whole window fits in the operand;
# the wrappers first wrap negative starts once (start + size), as JAX does.


def _check_start_indices(name, operand, start_indices):
    if len(start_indices) != operand.ndim:
        raise TypeError(f"{name}: got {len(start_indices)} start indices for an operand of rank {operand.ndim} "
                        f"({operand.str_short()}); pass one scalar index per dimension")
    for i, index in enumerate(start_indices):
        if index.ndim != 0 or index.dtype not in T.integer_dtypes:
            raise TypeError(f"{name}: start index {i} must be an integer scalar, got {index.str_short()}")
    if len({index.dtype for index in start_indices}) > 1:
        raise TypeError(f"{name}: start indices must share one dtype, got {T.describe(start_indices)}")


dynamic_slice_p = Primitive("dynamic_slice")


def _dynamic_slice_abstract_eval(operand, *start_indices, slice_sizes):
    _check_start_indices("dynamic_slice", operand, start_indices)
    if len(slice_sizes) != operand.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must have one entry per dimension of "
                        f"{operand.str_short()}, each between 0 and that dimension's size")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract_eval)
register_lowering(dynamic_slice_p, lambda ctx, operand, *start_indices, slice_sizes: dynamic_shapes.dynamic_slice(
    ctx.builder, operand, start_indices, slice_sizes, ctx.avals_in[0].shape, aval_type(ctx.aval_out)))

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dynamic_update_slice_abstract_eval(operand, update, *start_indices):
    _check_start_indices("dynamic_update_slice", operand, start_indices)
    T.check_same_dtypes("dynamic_update_slice", (operand, update))
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the operand's rank and fit "
                        f"inside the operand {operand.str_short()}")
    return operand


dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_abstract_eval)
register_lowering(dynamic_update_slice_p, lambda ctx, operand, update, *start_indices: ctx.builder.op1(
    "stablehlo.dynamic_update_slice", [operand, update, *start_indices], aval_type(ctx.aval_out)))


def index_dtype_for_shape(shape):
    """The dtype indices into an array of `shape` are converted to (JAX's choice): int32, unless a dimension is
    too long for it (a symbolic dimension is taken to fit)."""
    wide = any(d > np.iinfo(np.int32).max for d in shape if isinstance(d, int))
    return dtypes.int64 if wide else dtypes.int32


def dynamic_start_indices(operand_shape, start_indices):
    """Start indices with negative values wrapped (start + size), all of one integer dtype.

    As in JAX, array indices must share a dtype; Python ints take it (or int32).
    """
    from .conversions import convert_element_type
    from .elementwise import add, lt, select

    start_indices = list(start_indices)
    if len(start_indices) != len(operand_shape):
        raise ValueError(f"expected {len(operand_shape)} start indices for an operand of shape {operand_shape}, "
                        f"got {len(start_indices)}")
    avals = [None if isinstance(i, int) else get_aval_of(i) for i in start_indices]
    for aval in avals:
        if aval is not None and (aval.ndim != 0 or aval.dtype not in T.integer_dtypes):
            raise TypeError(f"start indices must be integer scalars, got {aval.str_short()}")
    array_dtypes = {aval.dtype for aval in avals if aval is not None}
    if len(array_dtypes) > 1:
        raise TypeError(f"start indices must be integers of the same type, got {sorted(d.name for d in array_dtypes)}")
    dtype = array_dtypes.pop() if array_dtypes else dtypes.int32
    out = []
    for index, aval, size in zip(start_indices, avals, operand_shape):
        if aval is None and not isinstance(size, int):
            # Along a symbolic dimension XLA's clamping is left to run time (it cannot be decided here).
            index = int(index)
            out.append(np.asarray(index, dtype)[()] if index >= 0 else convert_element_type(index + size, dtype))
        elif aval is None:
            # Wrapped once, then clamped here as XLA would clamp it (so it fits an unsigned dtype).
            index = int(index)
            out.append(np.asarray(min(max(index + size if index < 0 else index, 0), size), dtype)[()])
        elif dtypes.is_unsigned(dtype):
            out.append(index)
        else:
            size = dtype.type(size) if isinstance(size, int) else convert_element_type(size, dtype)
            out.append(select(lt(index, dtype.type(0)), add(index, size), index))
    return out


def dynamic_slice(operand, start_indices, slice_sizes):
    """The window of `slice_sizes` starting at `start_indices` (scalars, possibly traced).

    Starts are clamped so the window stays inside the operand, as in XLA; negative starts count from
    the end first.
    """
    aval = get_aval_of(operand)
    slice_sizes = canonical_shape(slice_sizes)
    return dynamic_slice_p.bind(operand, *dynamic_start_indices(aval.shape, start_indices), slice_sizes=slice_sizes)


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with `update` written at `start_indices` (clamped so the update fits)."""
    aval = get_aval_of(operand)
    return dynamic_update_slice_p.bind(operand, update, *dynamic_start_indices(aval.shape, start_indices))


def _axis_starts(rank, index, axis):
    starts = [0] * rank
    starts[axis] = index
    return starts


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    aval = get_aval_of(operand)
    axis = T.normalize_axis(axis, aval.ndim)
    sizes = list(aval.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, _axis_starts(aval.ndim, start_index, axis), sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    from .shapes import squeeze

    aval = get_aval_of(operand)
    axis = T.normalize_axis(axis, aval.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    aval = get_aval_of(operand)
    axis = T.normalize_axis(axis, aval.ndim)
    return dynamic_update_slice(operand, update, _axis_starts(aval.ndim, start_index, axis))


def dynamic_update_index_in_dim(operand, update, index, axis):
    from .shapes import expand_dims

    aval = get_aval_of(operand)
    axis = T.normalize_axis(axis, aval.ndim)
    if get_aval_of(update).ndim == aval.ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


# --- differentiation rules -------------------------------------------------------------------------------------
# All three are linear in their array operands with the start indices held fixed; the same start indices
# (clamped the same way) place cotangents back where the values came from.
from ..core.ad_util import is_undefined  # noqa: E402
from . import ad  # noqa: E402


def _slice_transpose(ct, operand, start_indices, limit_indices, strides):
    from .shapes import pad

    operand_shape = operand.aval.shape
    out_shape = get_aval_of(ct).shape
    # The last element read along each dimension, plus one: where the high padding starts.
    ends = [start + (size - 1) * stride + 1 if size else start
            for start, size, stride in zip(start_indices, out_shape, strides)]
    config = [(start, full - end, stride - 1) for start, end, full, stride in
              zip(start_indices, ends, operand_shape, strides)]
    return [pad(ct, np.zeros((), get_aval_of(ct).dtype), config)]


def _dynamic_slice_transpose(ct, operand, *start_indices, slice_sizes):
    zeros = ad.zeros_like_aval(operand.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *start_indices)] + [None] * len(start_indices)


def _dynamic_update_slice_transpose(ct, operand, update, *start_indices):
    update_aval = update.aval if is_undefined(update) else get_aval_of(update)
    operand_ct = None
    if is_undefined(operand):
        # The window was overwritten: nothing there flowed from the operand.
        operand_ct = dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(update_aval), *start_indices)
    update_ct = None
    if is_undefined(update):
        update_ct = dynamic_slice_p.bind(ct, *start_indices, slice_sizes=update_aval.shape)
    return [operand_ct, update_ct] + [None] * len(start_indices)


ad.deflinear(slice_p, _slice_transpose)
ad.deflinear_in(dynamic_slice_p, (0,), _dynamic_slice_transpose)
ad.deflinear_in(dynamic_update_slice_p, (0, 1), _dynamic_update_slice_transpose)


# --- batching rules ------------------------------------------------------------------------------------------
# The batch dimension is one more dimension to slice whole. With start indices that differ per example,
# dynamic_slice becomes one gather and dynamic_update_slice one scatter (clamping like XLA does), as in JAX.
from ..core.primitives import batching_rules  # noqa: E402
from .batching import axis_size_of, batch_at, batch_at_front  # noqa: E402


def _slice_batch(values, dims, start_indices, limit_indices, strides):
    (x,), (dim,) = values, dims
    size = get_aval_of(x).shape[dim]
    return slice_p.bind(x, start_indices=start_indices[:dim] + (0,) + start_indices[dim:],
                        limit_indices=limit_indices[:dim] + (size,) + limit_indices[dim:],
                        strides=strides[:dim] + (1,) + strides[dim:]), dim


def _zero_start(start_indices):
    dtype = get_aval_of(start_indices[0]).dtype if start_indices else dtypes.int32
    return np.zeros((), dtype)[()]


def _stacked_starts(start_indices, index_dims, size):
    """The start indices as one (size, rank) array of index vectors, one per example."""
    from .shapes import concatenate, reshape

    columns = [reshape(batch_at_front(i, d, size), (size, 1)) for i, d in zip(start_indices, index_dims)]
    return concatenate(columns, 1)


def _dynamic_slice_batch(values, dims, slice_sizes):
    from .gather_scatter import GatherDimensionNumbers, GatherScatterMode, gather_p

    (operand, *start_indices), (operand_dim, *index_dims) = values, dims
    if all(d is None for d in index_dims):
        starts = list(start_indices)
        starts.insert(operand_dim, _zero_start(start_indices))
        sizes = slice_sizes[:operand_dim] + (get_aval_of(operand).shape[operand_dim],) + slice_sizes[operand_dim:]
        return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes), operand_dim
    size = axis_size_of(values, dims)
    rank = len(slice_sizes)
    numbers = GatherDimensionNumbers(offset_dims=tuple(range(rank)), collapsed_slice_dims=(),
                                     start_index_map=tuple(range(rank)))
    params = dict(dimension_numbers=numbers, slice_sizes=slice_sizes, indices_are_sorted=False,
                  unique_indices=True, mode=GatherScatterMode.CLIP, fill_value=None)
    return batching_rules[gather_p]([operand, _stacked_starts(start_indices, index_dims, size)],
                                    [operand_dim, 0], **params)


def _dynamic_update_slice_batch(values, dims):
    from .gather_scatter import GatherScatterMode, ScatterDimensionNumbers, scatter_p

    (operand, update, *start_indices), (operand_dim, update_dim, *index_dims) = values, dims
    size = axis_size_of(values, dims)
    if all(d is None for d in index_dims):
        out_dim = operand_dim if operand_dim is not None else update_dim
        operand, update = batch_at(operand, operand_dim, size, out_dim), batch_at(update, update_dim, size, out_dim)
        starts = list(start_indices)
        starts.insert(out_dim, _zero_start(start_indices))
        return dynamic_update_slice_p.bind(operand, update, *starts), out_dim
    # Per example: a scatter of the whole update as one window at one index vector.
    rank = len(start_indices)
    numbers = ScatterDimensionNumbers(update_window_dims=tuple(range(rank)), inserted_window_dims=(),
                                      scatter_dims_to_operand_dims=tuple(range(rank)))
    indices = _stacked_starts(start_indices, index_dims, size)
    return batching_rules[scatter_p]([operand, indices, update], [operand_dim, 0, update_dim],
                                     dimension_numbers=numbers, indices_are_sorted=False, unique_indices=True,
                                     mode=GatherScatterMode.CLIP)


batching_rules[slice_p] = _slice_batch
batching_rules[dynamic_slice_p] = _dynamic_slice_batch
batching_rules[dynamic_update_slice_p] = _dynamic_update_slice_batch

# Their rules take the dynamic forms for symbolic shapes (or their ops accept dynamic types as they are).
dynamic_shapes.polymorphic_primitives.update((slice_p, dynamic_slice_p, dynamic_update_slice_p))
