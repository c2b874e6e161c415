"""Sorting and order statistics: sort, argsort, lexsort, partition, searchsorted, unique, and the
quantile family (quantile, percentile, median and their NaN-ignoring forms).

Everything is written over lax.sort (searchsorted too: sorting the queries together with the sorted
array places them), and gathers where elements are read at computed positions.
"""

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error
from numax.lax.elementwise import scalar_like

from ._array_methods import install_late
from ._util import (
    aval,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    promote_args,
    promote_args_inexact,
    promote_dtypes,
    promote_dtypes_inexact,
    shape,
    to_array,
)

__all__ = ["sort", "argsort", "lexsort", "sort_complex", "partition", "argpartition", "searchsorted",
           "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "quantile", "percentile",
           "median", "nanquantile", "nanpercentile", "nanmedian"]


def _int_dtype(dtype=None):
    return dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def _flatten_if_none(a, axis):
    if axis is None:
        return lax.reshape(a, (aval(a).size,)), 0
    return a, canonicalize_axis(axis, aval(a).ndim)


def _check_rank(name, a):
    if aval(a).ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to sort along; use axis=None or a 1-d array")


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (flattened when None); NaNs go last (first when descending)."""
    if order is not None:
        raise TypeError("sort: the `order` argument is not supported (numax arrays have no fields)")
    (a,) = promote_args("sort", a)
    if axis is not None:
        _check_rank("sort", a)
    a, axis = _flatten_if_none(a, axis)
    result = lax.sort(a, dimension=axis, is_stable=stable)
    return lax.rev(result, (axis,)) if descending else result


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort `a` along `axis`; ties keep their order (also when `descending`)."""
    if order is not None:
        raise TypeError("argsort: the `order` argument is not supported (numax arrays have no fields)")
    (a,) = promote_args("argsort", a)
    if axis is not None:
        _check_rank("argsort", a)
    a, axis = _flatten_if_none(a, axis)
    index_dtype = _int_dtype(dtype)
    a_shape = shape(a)
    if descending:
        # Sort the reversed array ascending, then reverse back: equal keys keep their original order.
        a = lax.rev(a, (axis,))
    indices = lax.broadcasted_iota(index_dtype, a_shape, axis)
    _, order_ = lax.sort((a, indices), dimension=axis, is_stable=stable, num_keys=1)
    if descending:
        last = lax.full(a_shape, a_shape[axis] - 1, index_dtype)
        order_ = lax.sub(last, lax.rev(order_, (axis,)))
    return order_


def sort_complex(a):
    (a,) = promote_args_inexact("sort_complex", a)
    a = sort(a, axis=-1)
    dtype = dtypes.to_complex_dtype(aval(a).dtype)
    return lax.convert_element_type(a, dtype)


def lexsort(keys, axis=-1):
    """Indices that sort by the last key, then the one before it, and so on (stably)."""
    keys = [to_array(k) for k in keys]
    if not keys:
        raise TypeError("lexsort: need a sequence of keys with length at least 1")
    key_shape = shape(keys[0])
    if any(shape(k) != key_shape for k in keys):
        raise ValueError(f"lexsort: all keys need to be the same shape, got {[shape(k) for k in keys]}")
    if not key_shape:
        raise TypeError("lexsort: the keys must be at least 1-d")
    axis = canonicalize_axis(axis, len(key_shape))
    indices = lax.broadcasted_iota(dtypes.default_int_dtype(), key_shape, axis)
    result = lax.sort((*keys[::-1], indices), dimension=axis, is_stable=True, num_keys=len(keys))
    return result[-1]


def partition(a, kth, axis=-1):
    """`a` with its `kth` element in sorted position, smaller ones before and larger after (a full sort)."""
    (a,) = promote_args("partition", a)
    _check_index("partition", a, kth, axis)
    return sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition `a` around its `kth` element (those of a full stable sort)."""
    (a,) = promote_args("argpartition", a)
    _check_index("argpartition", a, kth, axis)
    return argsort(a, axis=axis)


def _check_index(name, a, kth, axis):
    size = shape(a)[canonicalize_axis(axis, aval(a).ndim)] if aval(a).ndim else 0
    kth = int(concrete_or_error(kth, f"{name}: kth must be a static integer"))
    if not -size <= kth < size:
        raise ValueError(f"{name}: kth(={kth}) out of bounds ({size})")


# --- searchsorted -----------------------------------------------------------------------------------------------
def _stable_rank(x):
    """The position of each entry of the 1-d `x` in its stable sort (sorting the permutation inverts it)."""
    positions = lax.iota(dtypes.int32, shape(x)[0])
    _, order_ = lax.sort((x, positions), dimension=0, num_keys=1)
    _, rank = lax.sort((order_, positions), dimension=0, num_keys=1)
    return rank


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where to insert `v` into the sorted 1-d `a` to keep it sorted: the number of entries of `a`
    before each `v` ("left": strictly less, "right": less or equal), in sort's order (NaN last).

    `method` "compare_all" compares every pair (len(a) * len(v) work, best for small inputs); every other
    method sorts `a` and `v` together, which takes (len(a) + len(v)) log(len(a) + len(v)) work.
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"searchsorted: method must be 'scan', 'scan_unrolled', 'sort' or 'compare_all', got "
                         f"{method!r}")
    check_arraylike("searchsorted", a, v)
    a, v = promote_dtypes(a, v)
    if aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {shape(a)}")
    if sorter is not None:
        a = _take_1d(a, to_array(sorter))
    v_shape = shape(v)
    n, m = shape(a)[0], aval(v).size
    flat_v = lax.reshape(v, (m,))
    if method == "compare_all":
        row, column = lax.reshape(a, (1, n)), lax.reshape(flat_v, (m, 1))
        before = _sort_less(row, column) if side == "left" else lax.bitwise_not(_sort_less(column, row))
        counts = lax.reduce_sum(lax.convert_element_type(before, dtypes.int32), (1,))
    elif side == "left":
        # In a stable sort of (v, a), each query lands after the entries of `a` below it and before equal ones;
        # its rank there, less its rank among the queries, counts those entries.
        combined = _stable_rank(lax.concatenate([flat_v, a], 0))
        counts = lax.sub(lax.slice(combined, (0,), (m,)), _stable_rank(flat_v))
    else:
        combined = _stable_rank(lax.concatenate([a, flat_v], 0))
        counts = lax.sub(lax.slice(combined, (n,), (n + m,)), _stable_rank(flat_v))
    return lax.reshape(counts, v_shape)


def _sort_less(x, y):
    """`x < y` in sort's order, where NaN is larger than everything (and equal to other NaNs)."""
    less = lax.lt(x, y)
    if dtypes.is_inexact(aval(x).dtype):
        x_nan, y_nan = lax.ne(x, x), lax.ne(y, y)
        less = lax.bitwise_or(less, lax.bitwise_and(y_nan, lax.bitwise_not(x_nan)))
    return less


def _take_1d(a, indices):
    """`a[indices]` for a 1-d `a` and in-bounds integer indices of any shape."""
    from ._indexing import take

    return take(a, indices)


# --- unique ----------------------------------------------------------------------------------------------------
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           size=None, fill_value=None, sorted=True):
    """The sorted distinct values of `ar` (flattened), or its distinct slices along `axis`, optionally with the
    index of each one's first occurrence, the inverse map and the counts. Outside jit the result size is known
    from the data; under jit pass `size` (extra entries hold `fill_value`, by default the first unique value)."""
    (ar,) = promote_args("unique", ar)
    ar_shape = shape(ar)
    if axis is None:
        n, rest = int(np.prod(ar_shape, dtype=int)), ()
    else:
        if not ar_shape:
            raise ValueError("unique: axis must be None for a 0-d array")
        axis = canonicalize_axis(axis, len(ar_shape))
        ar = lax.transpose(ar, (axis,) + tuple(d for d in range(len(ar_shape)) if d != axis))
        n, rest = ar_shape[axis], tuple(d for i, d in enumerate(ar_shape) if i != axis)
    width = int(np.prod(rest, dtype=int))
    table = lax.reshape(ar, (n, width))
    # Each slice is a row of `table`; rows sort lexicographically, one sort key per column.
    columns = [lax.reshape(lax.slice(table, (0, j), (n, j + 1)), (n,)) for j in range(width)]
    index_dtype = dtypes.default_int_dtype()
    positions = lax.iota(index_dtype, n)
    *sorted_columns, perm = lax.sort((*columns, positions), dimension=0, num_keys=max(width, 1))
    different = lax.full((max(n - 1, 0),), False, dtypes.bool_)
    for column in sorted_columns:
        head, tail = lax.slice(column, (0,), (max(n - 1, 0),)), lax.slice(column, (min(1, n),), (n,))
        differs = lax.ne(head, tail)
        if dtypes.is_inexact(aval(column).dtype) and equal_nan:
            differs = lax.bitwise_and(differs, lax.bitwise_not(lax.bitwise_and(lax.ne(head, head), lax.ne(tail, tail))))
        different = lax.bitwise_or(different, differs)
    first = lax.concatenate([lax.full((min(n, 1),), True, dtypes.bool_), different], 0)
    count_value = lax.reduce_sum(lax.convert_element_type(first, index_dtype), (0,))
    if size is None:
        count = int(concrete_or_error(
            count_value, "unique: the number of distinct values must be known; under jit pass a static `size`"))
    else:
        count = int(size)
    # A stable sort on "not first" moves each run's first entry to the front, keeping the order.
    not_first = lax.convert_element_type(lax.bitwise_not(first), dtypes.int32)
    _, first_index, start = lax.sort((not_first, perm, positions), dimension=0, num_keys=1)
    ends = None
    if return_counts:
        # A run ends where the next one starts; the last run ends at n.
        next_start = lax.concatenate([lax.slice(start, (min(1, n),), (n,)), lax.full((1,), n, index_dtype)], 0)
        next_start = lax.slice(next_start, (0,), (n,))
        before_last = lax.lt(positions, lax.full((n,), lax.sub(count_value, scalar_like(1, count_value)), index_dtype))
        ends = lax.select(before_last, next_start, lax.full((n,), n, index_dtype))
    kept = min(count, n)
    first_index = _resize(first_index, kept, count)
    valid = lax.lt(lax.iota(index_dtype, count), lax.full((count,), count_value, index_dtype))
    if size is not None and count:
        # Past the distinct values, JAX repeats the first one (its index too) and counts nothing.
        first_index = lax.select(valid, first_index, lax.full((count,), lax.index_in_dim(first_index, 0, 0, False),
                                                              index_dtype))
    rows = _take_rows(table, first_index) if n else lax.full((count, width), 0, aval(table).dtype)
    if size is not None and fill_value is not None and count:
        fill = lax.full((count, width), lax.convert_element_type(fill_value, aval(table).dtype), aval(table).dtype)
        rows = lax.select(lax.broadcast_in_dim(valid, (count, width), (0,)), rows, fill)
    if axis is None:
        values = lax.reshape(rows, (count,))
    else:
        values = lax.reshape(rows, (count,) + rest)
        values = lax.transpose(values, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(ar_shape))))
    results = [values]
    if return_index:
        results.append(first_index)
    if return_inverse:
        rank_in_sorted = lax.sub(lax.cumsum(lax.convert_element_type(first, index_dtype)) if n else positions,
                                 lax.full((n,), 1, index_dtype))
        _, inverse = lax.sort((perm, rank_in_sorted), dimension=0, num_keys=1)
        results.append(lax.reshape(inverse, ar_shape) if axis is None else inverse)
    if return_counts:
        counts = _resize(lax.sub(ends, start), kept, count)
        results.append(lax.select(valid, counts, lax.full((count,), 0, index_dtype)) if size is not None else counts)
    return results[0] if len(results) == 1 else tuple(results)


def _take_rows(table, indices):
    from ._indexing import take

    return take(table, indices, axis=0)


def _resize(x, kept, count):
    """The first `kept` entries of 1-d `x`, padded with zeros to length `count`."""
    x = lax.slice(x, (0,), (kept,))
    return lax.pad(x, lax.full((), 0, aval(x).dtype), ((0, count - kept, 0),)) if count > kept else x


# The array API forms treat every NaN as distinct, as JAX does.
def unique_values(x, *, size=None, fill_value=None):
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, *, size=None, fill_value=None):
    from collections import namedtuple

    values, counts = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return namedtuple("UniqueCountsResult", ["values", "counts"])(values, counts)


def unique_inverse(x, *, size=None, fill_value=None):
    from collections import namedtuple

    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return namedtuple("UniqueInverseResult", ["values", "inverse_indices"])(values, inverse)


def unique_all(x, *, size=None, fill_value=None):
    from collections import namedtuple

    values, indices, inverse, counts = unique(x, True, True, True, equal_nan=False, size=size,
                                              fill_value=fill_value)
    return namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])(
        values, indices, inverse, counts)


# --- quantiles -------------------------------------------------------------------------------------------------
_methods = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile(name, a, q, axis, method, keepdims, ignore_nan):
    if method not in _methods:
        raise ValueError(f"{name}: method must be one of {_methods}, got {method!r}")
    check_arraylike(name, a, q)
    # `a` alone sets the result's dtype (median(int8) is float32 with x64 on, as in jax.numpy); q follows it.
    (a,) = promote_dtypes_inexact(a)
    q = lax.convert_element_type(to_array(q), aval(a).dtype)
    if dtypes.is_complex(aval(a).dtype):
        raise ValueError(f"{name} does not support complex input, as the operation is poorly defined.")
    a_shape = shape(a)
    rank = len(a_shape)
    axes = canonicalize_axes(axis, rank)
    from ._take import take_along_axis

    kept_axes = [d for d in range(rank) if d not in axes]
    n = int(np.prod([a_shape[d] for d in axes], dtype=int))
    # The reduced axes, flattened, go last: x has shape (rest..., n).
    x = lax.reshape(lax.transpose(a, kept_axes + list(axes)), tuple(a_shape[d] for d in kept_axes) + (n,))
    rest = shape(x)[:-1]
    x = lax.sort(x, dimension=len(rest))
    dtype = aval(x).dtype
    q_shape = shape(q)
    q_flat = lax.reshape(q, (int(np.prod(q_shape, dtype=int)),))
    k = shape(q_flat)[0]
    is_nan = lax.ne(x, x)
    if ignore_nan:
        valid = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(is_nan), dtype), (len(rest),))
    else:
        valid = lax.full(rest, n, dtype)
    # positions[..., j] = q[j] * (count - 1), over (rest..., k)
    target = rest + (k,)
    last = lax.broadcast_in_dim(lax.sub(valid, lax.full(rest, 1, dtype)), target, range(len(rest)))
    position = lax.mul(lax.broadcast_in_dim(q_flat, target, (len(rest),)), last)
    low = lax.floor(position)
    high = lax.ceil(position)
    if method == "nearest":
        # JAX rounds exact halves down (numpy rounds them to even).
        low = high = lax.select(lax.le(lax.sub(position, low), lax.full(target, 0.5, dtype)), low, high)
    elif method == "lower":
        high = low
    elif method == "higher":
        low = high
    upper = lax.max(last, lax.full(target, 0, dtype))
    index_of = lambda p: lax.convert_element_type(lax.clamp(lax.full((), 0, dtype), p, upper), dtypes.int32)  # noqa: E731
    low_value = take_along_axis(x, index_of(low), axis=-1)
    high_value = take_along_axis(x, index_of(high), axis=-1)
    if method == "linear":
        fraction = lax.sub(position, low)
        result = lax.add(lax.mul(low_value, lax.sub(lax.full(target, 1, dtype), fraction)),
                         lax.mul(high_value, fraction))
    elif method == "midpoint":
        result = lax.mul(lax.add(low_value, high_value), lax.full(target, 0.5, dtype))
    else:
        result = low_value
    nan = lax.full(target, np.nan, dtype)
    if ignore_nan:
        result = lax.select(lax.lt(last, lax.full(target, 0, dtype)), nan, result)
    elif n:
        any_nan = lax.broadcast_in_dim(lax.reduce_or(is_nan, (len(rest),)), target, range(len(rest)))
        result = lax.select(any_nan, nan, result)
    else:
        result = nan
    # (rest..., k) -> q_shape + rest (+ kept size-1 axes)
    result = lax.transpose(result, (len(rest),) + tuple(range(len(rest))))
    out_rest = tuple(1 if d in axes else a_shape[d] for d in range(rank)) if keepdims else rest
    if keepdims and rank == 0:
        out_rest = (1,)  # jax.numpy reduces a 0-d array as its 1-d ravel, whose kept axis stays
    return lax.reshape(result, q_shape + out_rest)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    """The `q`-th quantiles of `a` over `axis` (NaN where a slice holds NaN); q in [0, 1]."""
    _check_quantile_args("quantile", out, weights)
    return _quantile("quantile", a, q, axis, interpolation or method, keepdims, ignore_nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    """quantile ignoring NaNs (NaN only for slices that are all NaN)."""
    _check_quantile_args("nanquantile", out, weights)
    return _quantile("nanquantile", a, q, axis, interpolation or method, keepdims, ignore_nan=True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    _check_quantile_args("percentile", out, weights)
    (q,) = promote_args_inexact("percentile", q)
    q = lax.div(q, lax.full_like(q, 100))
    return _quantile("percentile", a, q, axis, interpolation or method, keepdims, ignore_nan=False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None, interpolation=None):
    _check_quantile_args("nanpercentile", out, weights)
    (q,) = promote_args_inexact("nanpercentile", q)
    q = lax.div(q, lax.full_like(q, 100))
    return _quantile("nanpercentile", a, q, axis, interpolation or method, keepdims, ignore_nan=True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _check_quantile_args("median", out, None)
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, ignore_nan=False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _check_quantile_args("nanmedian", out, None)
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, ignore_nan=True)


def _check_quantile_args(name, out, weights):
    if out is not None:
        raise NotImplementedError(f"{name}: the `out` argument is not supported (numax arrays are immutable)")
    if weights is not None:
        raise NotImplementedError(f"{name}: weights are not supported yet")


install_late("sort", lambda self, axis=-1, *, kind=None, order=None, stable=True, descending=False: sort(
    self, axis, kind=kind, order=order, stable=stable, descending=descending))
install_late("argsort", lambda self, axis=-1, *, kind=None, order=None, stable=True, descending=False: argsort(
    self, axis, kind=kind, order=order, stable=stable, descending=descending))
install_late("searchsorted", lambda self, v, side="left", sorter=None, *, method="scan": searchsorted(
    self, v, side, sorter, method=method))
