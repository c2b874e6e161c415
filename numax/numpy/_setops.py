"""Set operations on flattened arrays: isin, intersect1d, union1d, setdiff1d and setxor1d.

Except for isin, the result length depends on the values. As in JAX, outside tracing it is read from the data;
under numax.jit the caller passes a static `size`, and the result is cut to it or padded with `fill_value`.
Each operation marks the wanted entries of an array already in result order (usually sorted), and `_pack` moves
them to the front with a stable sort. The work is one jitted function per operation (compiled once per shape);
without `size` it returns the results at full length with their count, and the caller cuts them.
"""

import functools
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error
from numax.transforms.jit import jit

from ._util import aval, check_arraylike, promote_dtypes, to_array

__all__ = ["isin", "intersect1d", "union1d", "setdiff1d", "setxor1d"]

_isin_methods = ("auto", "compare_all", "binary_search", "sort")


def _flat(name, *arrays):
    check_arraylike(name, *arrays)
    return [lax.reshape(x, (aval(x).size,)) for x in map(to_array, arrays)]


def _static_size(name, size):
    if size is None:
        return None
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{name}: size must be a static (Python) integer, got {size!r}; under numax.jit mark it "
                        "with static_argnames") from None
    if size < 0:
        raise ValueError(f"{name}: size must be non-negative, got {size}")
    return size


def _sort_with_positions(x):
    """`x` sorted (stably, NaNs last) and the original position of each sorted entry."""
    n = aval(x).size
    if n == 0:
        return x, lax.iota(dtypes.default_int_dtype(), 0)
    return lax.sort((x, lax.iota(dtypes.default_int_dtype(), n)), num_keys=1)


def _first_of_runs(sorted_x):
    """True where a sorted 1-d array starts a run of equal values (NaNs count as equal, as numpy's unique)."""
    n = aval(sorted_x).size
    if n == 0:
        return lax.full((0,), False, dtypes.bool_)
    head, tail = lax.slice(sorted_x, (0,), (n - 1,)), lax.slice(sorted_x, (1,), (n,))
    differs = lax.ne(head, tail)
    if dtypes.is_inexact(aval(sorted_x).dtype):
        differs = lax.bitwise_and(differs, lax.bitwise_not(lax.bitwise_and(lax.ne(head, head), lax.ne(tail, tail))))
    return lax.concatenate([lax.full((1,), True, dtypes.bool_), differs], 0)


def _isin_flat(a, b, method="auto"):
    """For each entry of 1-d `a`, whether it equals some entry of 1-d `b` (NaN equals nothing)."""
    a, b = promote_dtypes(a, b)
    n, m = aval(a).size, aval(b).size
    if n == 0 or m == 0:
        return lax.full((n,), False, dtypes.bool_)
    if method in ("auto", "compare_all"):
        equal = lax.eq(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))
        return lax.reduce_or(equal, (1,))
    # binary_search and sort: look each entry up in sorted `b` (same answers, n log m work instead of n * m).
    from ._sorting import searchsorted

    sorted_b = lax.sort(b)
    found_at = lax.clamp(np.int32(0), lax.convert_element_type(searchsorted(sorted_b, a), dtypes.int32),
                         np.int32(m - 1))
    from ._indexing import take

    return lax.eq(a, take(sorted_b, found_at))


def _pack(keep, operands, size):
    """The entries of the 1-d `operands` where `keep` is true moved to the front in order, cut or zero-padded
    to `size` (None: their full length); the mask of real entries; and how many were kept."""
    n = aval(keep).size
    size = n if size is None else size
    index_dtype = dtypes.default_int_dtype()
    count = lax.reduce_sum(lax.convert_element_type(keep, index_dtype), (0,))
    if n:
        skip = lax.convert_element_type(lax.bitwise_not(keep), dtypes.int32)
        operands = lax.sort((skip, *operands), num_keys=1)[1:]
    kept = min(size, n)
    packed = []
    for x in operands:
        x = lax.slice(x, (0,), (kept,))
        if size > kept:
            x = lax.pad(x, lax.full((), 0, aval(x).dtype), ((0, size - kept, 0),))
        packed.append(x)
    valid = lax.lt(lax.iota(index_dtype, size), lax.broadcast_in_dim(count, (size,), ()))
    return packed, valid, count


def _cut_to_count(name, outputs, count, size):
    """Without `size`, the outputs (packed to full length) cut to the number of results, which must be known."""
    if size is not None:
        return outputs
    count = int(concrete_or_error(
        count, f"the result length of {name} depends on the values of its inputs; under numax.jit pass a static "
               "size= (the result length, padded with fill_value)"))
    return [lax.slice(x, (0,), (count,)) for x in outputs]


def _fill(values, valid, fill_value):
    size, dtype = aval(values).size, aval(values).dtype
    fill = lax.convert_element_type(fill_value, dtype)
    return lax.select(valid, values, lax.broadcast_in_dim(fill, (size,), ()))


def _fill_with_smallest(values, valid, fill_value):
    """Padding as in JAX's intersect1d and setxor1d: `fill_value`, or by default the smallest result (0 if there
    is none; NaN if a result is NaN)."""
    if fill_value is not None:
        from ._logic import where

        return where(valid, values, fill_value)  # promotes with fill_value's dtype, as JAX's where does
    if aval(values).size == 0:
        return values
    values = _fill(values, valid, 0)  # what JAX's gather leaves in the padding, which its default then reads
    largest = lax.reduce_max(values, (0,))
    values = lax.select(valid, values, lax.broadcast_in_dim(largest, aval(values).shape, ()))
    return _fill(values, valid, lax.reduce_min(values, (0,)))


# --- the operations, each compiled once per shape (size=None: results at full length, cut by the caller) ---------
@functools.partial(jit, static_argnames=("size",))
def _union1d(a, b, fill_value, *, size):
    values = lax.sort(lax.concatenate([a, b], 0)) if aval(a).size + aval(b).size else lax.concatenate([a, b], 0)
    (packed,), valid, count = _pack(_first_of_runs(values), [values], size)
    if size:
        # As JAX's unique: padding repeats the smallest value unless a fill_value is given.
        packed = _fill(packed, valid, lax.index_in_dim(values, 0, 0, False) if fill_value is None else fill_value)
    return packed, count


@functools.partial(jit, static_argnames=("assume_unique", "size"))
def _setdiff1d(a, b, fill_value, *, assume_unique, size):
    if assume_unique:
        keep = lax.bitwise_not(_isin_flat(a, b))
    else:
        a = lax.sort(a) if aval(a).size else a
        keep = lax.bitwise_and(_first_of_runs(a), lax.bitwise_not(_isin_flat(a, b)))
    (packed,), valid, count = _pack(keep, [a], size)
    if size is not None:
        packed = _fill(packed, valid, 0 if fill_value is None else fill_value)
    return packed, count


@functools.partial(jit, static_argnames=("assume_unique", "size"))
def _setxor1d(a, b, fill_value, *, assume_unique, size):
    if assume_unique:
        # As numpy and JAX do: a value is kept when it differs from both sorted neighbours.
        values = lax.concatenate([a, b], 0)
        if aval(values).size:
            values = lax.sort(values)
        unlike_previous = _first_of_runs(values)
        unlike_next = lax.rev(_first_of_runs(lax.rev(values, (0,))), (0,))
        keep = lax.bitwise_and(unlike_previous, unlike_next)
    else:
        parts, keeps = [], []
        for x, other in ((a, b), (b, a)):
            x = lax.sort(x) if aval(x).size else x
            parts.append(x)
            keeps.append(lax.bitwise_and(_first_of_runs(x), lax.bitwise_not(_isin_flat(x, other))))
        values, keep = lax.concatenate(parts, 0), lax.concatenate(keeps, 0)
        if aval(values).size:
            # Sort the kept values of both arrays together; the others go last.
            skip = lax.convert_element_type(lax.bitwise_not(keep), dtypes.int32)
            skip, values = lax.sort((skip, values), num_keys=2)
            keep = lax.eq(skip, np.int32(0))
    (packed,), valid, count = _pack(keep, [values], size)
    if size is not None:
        packed = _fill_with_smallest(packed, valid, fill_value)
    return packed, count


@functools.partial(jit, static_argnames=("assume_unique", "size"))
def _intersect1d(a, b, fill_value, *, assume_unique, size):
    sides = []
    for x, other in ((a, b), (b, a)):
        # Both sides keep the same sorted values (the intersection), so their positions line up after packing.
        x, positions = _sort_with_positions(x)
        found = _isin_flat(x, other)
        keep = found if assume_unique else lax.bitwise_and(_first_of_runs(x), found)
        sides.append(_pack(keep, [x, positions], size))
    ((values, indices1), valid, count), ((_, indices2), _, _) = sides
    if size is not None:
        values = _fill_with_smallest(values, valid, fill_value)
        indices1 = _fill(indices1, valid, aval(a).size)
        indices2 = _fill(indices2, valid, aval(b).size)
    return values, indices1, indices2, count


@functools.partial(jit, static_argnames=("invert", "method"))
def _isin(element, test_elements, *, invert, method):
    found = _isin_flat(element, test_elements, method)
    return lax.bitwise_not(found) if invert else found


# --- public functions --------------------------------------------------------------------------------------------
def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each entry of `element` occurs in `test_elements` (or not, with `invert`); shaped like `element`.
    `method` is 'auto' / 'compare_all' (compare every pair) or 'binary_search' / 'sort' (look up in sorted
    test_elements); all give the same result."""
    if method not in _isin_methods:
        raise ValueError(f"isin: method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    a, b = _flat("isin", element, test_elements)
    found = _isin(a, b, invert=bool(invert), method=method)
    return lax.reshape(found, aval(to_array(element)).shape)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct values found in either array (both flattened). Under numax.jit pass a static `size`:
    the result is cut to it or padded with `fill_value` (by default the smallest value)."""
    size = _static_size("union1d", size)
    a, b = promote_dtypes(*_flat("union1d", ar1, ar2))
    if not aval(a).size + aval(b).size and size and fill_value is None:
        raise ValueError("union1d: for zero-sized inputs with a nonzero size, fill_value must be specified")
    values, count = _union1d(a, b, fill_value, size=size)
    return _cut_to_count("union1d", [values], count, size)[0]


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The distinct values of `ar1` not in `ar2`, sorted (in `ar1`'s order with `assume_unique`), with `ar1`'s
    dtype. Under numax.jit pass a static `size`: the result is cut or padded with `fill_value` (default 0)."""
    size = _static_size("setdiff1d", size)
    a, b = _flat("setdiff1d", ar1, ar2)
    values, count = _setdiff1d(a, b, fill_value, assume_unique=bool(assume_unique), size=size)
    return _cut_to_count("setdiff1d", [values], count, size)[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values found in exactly one of the two arrays (both flattened). Under numax.jit pass a static
    `size`: the result is cut or padded with `fill_value` (by default the smallest result)."""
    size = _static_size("setxor1d", size)
    a, b = promote_dtypes(*_flat("setxor1d", ar1, ar2))
    values, count = _setxor1d(a, b, fill_value, assume_unique=bool(assume_unique), size=size)
    return _cut_to_count("setxor1d", [values], count, size)[0]


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted distinct values found in both arrays (both flattened); with `return_indices`, also the index
    of each one's first occurrence in each array. Under numax.jit pass a static `size`: values are cut or padded
    with `fill_value` (by default the smallest result), indices padded with the array's length."""
    size = _static_size("intersect1d", size)
    a, b = promote_dtypes(*_flat("intersect1d", ar1, ar2))
    *outputs, count = _intersect1d(a, b, fill_value, assume_unique=bool(assume_unique), size=size)
    values, indices1, indices2 = _cut_to_count("intersect1d", outputs, count, size)
    return (values, indices1, indices2) if return_indices else values
