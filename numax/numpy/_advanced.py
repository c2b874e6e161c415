"""Advanced indexing: integer-array and boolean-mask indices, and the `.at` property.

Every index expression is turned into one gather (or scatter) plan, `IndexPlan`: each index entry is an
operand dimension read whole, a window (unit-step slice), a strided slice (an iota of positions), or part
of the block of advanced indices, whose dimensions go where numpy puts them (in place when the advanced
indices are adjacent, first otherwise). Boolean masks must be concrete: their result shape depends on
their values.

Out-of-bounds indices follow JAX: reads clamp them (mode 'promise_in_bounds', the default, or 'clip') or fill
them (mode 'fill'); writes drop them (the default, 'drop' or 'fill') or clamp them ('clip'). Negative indices
count from the end once first, unless `wrap_negative_indices=False`. Index arrays are converted to the index
dtype of the indexed shape (int32 unless the shape needs more), so int32, int64 and unsigned index arrays mix.
"""

import math
import operator
from typing import NamedTuple

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.errors import NumaxIndexError
from numax.core.trace import Tracer

from . import _shape
from ._array_methods import install_late
from ._indexing import basic_getitem, empty_axis_error, is_basic_index, slice_indices, static_position, static_slice
from ._take import index_dtype, integer_indices, normalize_indices, take
from ._util import broadcast_shapes, is_array, materialize, shape, to_array

__all__ = [
    "NonConcreteBooleanIndexError", "argwhere", "compress", "diag_indices", "diag_indices_from", "extract",
    "flatnonzero", "indices", "ix_", "ravel_multi_index", "tril_indices", "tril_indices_from", "triu_indices",
    "triu_indices_from", "unravel_index",
]


class NonConcreteBooleanIndexError(NumaxIndexError):
    """A boolean mask whose values are not known at trace time was used as an index."""

    def __init__(self, aval):
        super().__init__(
            f"Array boolean indices must be concrete; got a traced mask {aval.str_short()}. The shape of "
            "`x[mask]` depends on the mask's values, which are unknown inside numax.jit. Use "
            "`numax.numpy.where(mask, x, fill)` to keep the shape, or `numax.numpy.nonzero(mask, size=N)` "
            "(and index with its result) for a fixed-size result.")


# --- parsing an index ---------------------------------------------------------------------------------------
# Entries after parsing: ("new",), ("slice", axis, start, step, count), ("int", axis, position) for static
# integers (negative ones already counted from the end, possibly out of bounds), ("array", axis, array) for
# integer arrays in the index dtype, normalized likewise (axis None: a 0-d boolean mask, which indexes nothing).


def _not_an_index(item):
    return IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays are valid "
                      f"indices; got {item!r} of type {type(item).__name__}")


def _as_index_array(item):
    """An index item that is not None/Ellipsis/slice/int, as an array (numpy for host values)."""
    if is_array(item):
        return item
    if isinstance(item, str):
        raise TypeError(f"string indices are not supported; got {item!r}")
    if isinstance(item, (list, tuple)):
        if any(isinstance(x, (slice, type(None), type(Ellipsis))) for x in item):
            raise TypeError(f"a list index may hold only integers or booleans, got {item!r}; use a tuple of "
                            "indices instead")
        array = to_array(list(item))
        if not is_array(array) and np.size(array) == 0:
            return np.zeros(np.shape(array), np.int32)  # numpy reads an empty list as an integer index
        return array
    try:
        array = np.asarray(item)
    except (TypeError, ValueError):
        raise _not_an_index(item) from None
    if array.dtype == object:
        raise _not_an_index(item)
    return array


def _concrete_mask(mask):
    if isinstance(mask, Tracer):
        value = mask.to_concrete_value()
        if value is None:
            raise NonConcreteBooleanIndexError(mask.aval)
        return np.asarray(value)
    return np.asarray(mask)


def _dims_consumed(kind, item):
    if kind == "mask":
        return np.ndim(item)
    if kind == "basic":
        return 1 if isinstance(item, slice) else 0  # None and Ellipsis consume none themselves
    return 1


def _classify(item):
    """(kind, item) of one index item: 'basic' (None, Ellipsis, slice), 'int', 'mask' or 'array'."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return "basic", item
    if isinstance(item, (bool, np.bool_)):
        return "mask", np.asarray(item)
    if isinstance(item, (int, np.integer)):
        return "int", item
    array = _as_index_array(item)
    dtype = np.dtype(array.dtype)
    if dtype == np.bool_:
        return "mask", _concrete_mask(array)
    if dtypes.is_integer(dtype):
        return "array", array
    # (JAX's class: a float index is a type error, not an index error.)
    raise TypeError(f"indexer must have an integer or boolean dtype, got {dtype.name}; only integers, slices, None, "
                    "Ellipsis and integer or boolean arrays are valid indices")


def parse_index(index, a_shape, wrap_negative=True):
    """The entries of `index` for an array of `a_shape`, with Ellipsis expanded and masks made integer."""
    items = index if isinstance(index, tuple) else (index,)
    parsed = [_classify(item) for item in items]
    if sum(1 for kind, item in parsed if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(_dims_consumed(kind, item) for kind, item in parsed)
    rank = len(a_shape)
    if consumed > rank:
        raise IndexError(f"too many indices for array: array is {rank}-dimensional, but {consumed} were indexed")
    if not any(item is Ellipsis for _, item in parsed):
        parsed.append(("basic", Ellipsis))
    # Scalar indices into an empty axis are an error, unless they join an advanced block (then, as in JAX, a
    # write drops them and a read fails when it gathers).
    advanced = any(kind == "mask" or (kind == "array" and np.ndim(item) > 0) for kind, item in parsed)
    dtype = index_dtype(a_shape)
    entries, axis = [], 0
    for kind, item in parsed:
        if item is None:
            entries.append(("new",))
            continue
        if item is Ellipsis:
            for _ in range(rank - consumed):
                entries.append(_slice_entry(slice(None), axis, a_shape[axis]))
                axis += 1
            continue
        if kind == "basic":
            entries.append(_slice_entry(item, axis, a_shape[axis]))
            axis += 1
            continue
        if kind in ("int", "array") and a_shape[axis] == 0 and not advanced and np.ndim(item) == 0:
            raise empty_axis_error(axis)
        if kind == "int":
            entries.append(("int", axis, static_position(item, a_shape[axis], wrap_negative)))
            axis += 1
        elif kind == "array":
            entries.append(("array", axis, normalize_indices(item, a_shape[axis], dtype, wrap_negative)))
            axis += 1
        elif item.ndim == 0:
            entries.append(("array", None, np.zeros(int(item), dtype)))
        else:
            mask_shape = tuple(a_shape[axis:axis + item.ndim])
            if item.shape != mask_shape:
                raise IndexError(f"boolean index of shape {item.shape} does not match the indexed dimensions "
                                 f"{mask_shape} (axes {axis}..{axis + item.ndim - 1}) of an array of shape {a_shape}")
            for positions in np.nonzero(item):
                entries.append(("array", axis, positions.astype(dtype)))
                axis += 1
    return entries


def _slice_entry(item, axis, size):
    item = static_slice(item)
    if item.step == 0:
        raise ValueError("slice step cannot be zero")
    first, last, step = slice_indices(item, size)
    # A symbolic size allows only positive steps, and then last >= first.
    count = len(range(first, last, step)) if isinstance(size, int) else (last - first + step - 1) // step
    return ("slice", axis, first, step, count)


def _has_advanced(entries):
    """Whether an index array with dimensions takes part (JAX's test for 'the indices may repeat')."""
    return any(e[0] == "array" and (e[1] is None or np.ndim(e[2]) > 0) for e in entries)


# --- plans ------------------------------------------------------------------------------------------------------
class IndexPlan(NamedTuple):
    """One gather/scatter that reads or writes `a[index]`."""

    indices: object  # integer array of shape batch_shape + (len(start_index_map),)
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    slice_sizes: tuple
    gather_shape: tuple  # the gather's result shape: the indexed shape without the new (None) axes
    newaxis_dims: tuple  # positions of the None axes in the final shape
    final_shape: tuple


def _place(array, batch_shape, dims):
    """`array` broadcast into `batch_shape`, its dimensions at `dims` (right-aligned numpy broadcasting)."""
    if not is_array(array):
        target = [1] * len(batch_shape)
        for source, d in zip(np.shape(array), dims):
            target[d] = source
        return np.broadcast_to(np.reshape(array, target), batch_shape)
    return lax.broadcast_in_dim(array, batch_shape, dims)


def _stack_last(components, batch_shape, dtype):
    if not components:
        return np.zeros(tuple(batch_shape) + (0,), dtype)
    if not any(is_array(c) for c in components):
        return np.stack(components, axis=-1).astype(dtype)
    rank = len(batch_shape)
    return lax.concatenate([lax.expand_dims(lax.convert_element_type(c, dtype), (rank,)) for c in components], rank)


def _block_shape(advanced):
    try:
        return broadcast_shapes(*(shape(e[2]) if e[0] == "array" else () for e in advanced))
    except ValueError:
        shapes = " ".join(str(tuple(np.shape(e[2]))) for e in advanced if e[0] == "array")
        # (JAX's class: a ValueError, where numpy raises IndexError.)
        raise ValueError(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{shapes}") from None


def make_plan(entries, a_shape):
    """The gather/scatter plan of parsed entries (see `parse_index`)."""
    advanced = [e for e in entries if e[0] in ("int", "array")]
    positions = [i for i, e in enumerate(entries) if e[0] in ("int", "array")]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions))) if positions else True
    block_shape = _block_shape(advanced)
    tokens = [("block",)] if advanced and not contiguous else []
    for i, entry in enumerate(entries):
        if entry[0] in ("int", "array"):
            if contiguous and i == positions[0]:
                tokens.append(("block",))
        else:
            tokens.append(entry)

    dtype = index_dtype(a_shape)
    batch_shape, pending = [], []  # pending: (operand axis, index value, dims in batch_shape)
    offset_dims, collapsed, newaxis_dims, gather_shape = [], [], [], []
    slice_sizes = list(a_shape)
    final_position = 0
    for token in tokens:
        if token[0] == "new":
            newaxis_dims.append(final_position)
            final_position += 1
            continue
        if token[0] == "block":
            start = len(batch_shape)
            batch_shape.extend(block_shape)
            gather_shape.extend(block_shape)
            final_position += len(block_shape)
            for kind, axis, value in advanced:
                if axis is None:
                    continue
                if kind == "int":
                    # As jax passes it, clamped only into the index dtype's range (still out of bounds on its
                    # side). Not to just outside the axis: XLA's GPU scatter wrote x.at[1, 4] of a (3, 4, 5)
                    # array into x[2, 0] (an H100, jaxlib 0.11.2), where it drops jax's x.at[1, 9].
                    limits = np.iinfo(dtype)
                    value = np.asarray(min(max(value, int(limits.min)), int(limits.max)), dtype)
                rank = np.ndim(value)
                dims = list(range(start + len(block_shape) - rank, start + len(block_shape)))
                pending.append((axis, value, dims))
                collapsed.append(axis)
                slice_sizes[axis] = 1
            continue
        _, axis, first, step, count = token
        static = isinstance(count, int) and isinstance(first, int)
        if step == 1 or (static and count <= 1):
            offset_dims.append(len(gather_shape))
            slice_sizes[axis] = count
            if count != a_shape[axis]:
                start = np.asarray(first, dtype) if static else lax.convert_element_type(first, dtype)
                pending.append((axis, start, []))
        else:
            positions = np.arange(count) if static else lax.iota(dtype, count)  # symbolic: a staged iota
            pending.append((axis, (first + step * positions).astype(dtype), [len(batch_shape)]))
            batch_shape.append(count)
            collapsed.append(axis)
            slice_sizes[axis] = 1
        gather_shape.append(count)
        final_position += 1
    final_shape = list(gather_shape)
    for d in newaxis_dims:
        final_shape.insert(d, 1)
    components = [_place(value, tuple(batch_shape), dims) for axis, value, dims in pending]
    return IndexPlan(_stack_last(components, batch_shape, dtype), tuple(offset_dims), tuple(sorted(collapsed)),
                     tuple(axis for axis, _, _ in pending), tuple(slice_sizes), tuple(gather_shape),
                     tuple(newaxis_dims), tuple(final_shape))


def _is_empty(shape_):
    return math.prod(shape_) == 0  # a symbolic size (shape-polymorphic export) is not 0


# --- reading ------------------------------------------------------------------------------------------------------
def _reads_by_dynamic_slice(entries):
    """JAX reads with one dynamic_slice when the index has integer scalars, unit-step slices and None only."""
    return (any(e[0] == "array" for e in entries) and not _has_advanced(entries)
            and all(e[0] != "slice" or e[3] in (1, -1) for e in entries))


def _dynamic_scalar_getitem(a, entries):
    """`a[...]` where the only non-static indices are integer scalars: one dynamic_slice, then the slices."""
    a_shape = shape(a)
    starts, sizes, squeezed, rest = [0] * len(a_shape), list(a_shape), [], []
    dtype = index_dtype(a_shape)
    for entry in entries:
        if entry[0] in ("int", "array"):
            # Positions were counted from the end once already: one still below zero clamps to 0 here, as
            # dynamic_slice would count it from the end a second time.
            _, axis, position = entry
            if is_array(position):
                starts[axis] = lax.max(position, dtype.type(0))
            else:
                starts[axis] = min(max(int(position), 0), a_shape[axis] - 1)
            sizes[axis] = 1
            squeezed.append(axis)
        elif entry[0] == "new":
            rest.append(None)
        else:
            _, axis, first, step, count = entry
            stop = first + step * count
            rest.append(slice(first, stop if stop >= 0 else None, step))
    out = lax.squeeze(lax.dynamic_slice(a, starts, sizes), squeezed)
    return basic_getitem(out, tuple(rest))


def _gather_mode(mode):
    return lax.GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else lax.GatherScatterMode.from_any(mode)


def _scalar_fill_value(fill_value):
    if fill_value is not None and np.ndim(fill_value) != 0:
        raise ValueError(f"fill_value of an indexed get() must be a scalar, got shape {np.shape(fill_value)}")
    return fill_value


def gather_getitem(a, entries, gather_mode, *, indices_are_sorted=False, unique_indices=False, fill_value=None):
    """`a[index]` for parsed entries, as one gather."""
    a_shape = shape(a)
    plan = make_plan(entries, a_shape)
    if _is_empty(plan.final_shape):
        return lax.full(plan.final_shape, np.zeros((), dtypes.dtype(a)))
    for axis in plan.collapsed_slice_dims:
        if a_shape[axis] == 0:
            raise empty_axis_error(axis)
    dimension_numbers = lax.GatherDimensionNumbers(plan.offset_dims, plan.collapsed_slice_dims, plan.start_index_map)
    out = lax.gather(a, plan.indices, dimension_numbers, plan.slice_sizes, indices_are_sorted=indices_are_sorted,
                     unique_indices=unique_indices or not _has_advanced(entries), mode=gather_mode,
                     fill_value=fill_value)
    if plan.newaxis_dims:
        out = lax.expand_dims(out, plan.newaxis_dims)
    return materialize(out)


def advanced_getitem(a, index, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
                     wrap_negative_indices=True):
    """`a[index]` for any numpy index. Out-of-bounds indices are clamped, or filled with `fill_value` in mode
    'fill' (JAX's default fill: NaN, the extreme integer, True)."""
    a = to_array(a)
    gather_mode = _gather_mode(mode)
    fill_value = _scalar_fill_value(fill_value)
    items = index if isinstance(index, tuple) else (index,)
    filling = gather_mode is lax.GatherScatterMode.FILL_OR_DROP
    if not filling and all(is_basic_index(i) for i in items):
        return materialize(basic_getitem(a, items, wrap_negative=wrap_negative_indices,
                                         clip=gather_mode is lax.GatherScatterMode.CLIP))
    entries = parse_index(items, shape(a), wrap_negative_indices)
    if not filling and _reads_by_dynamic_slice(entries):
        return materialize(_dynamic_scalar_getitem(a, entries))
    return gather_getitem(a, entries, gather_mode, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, fill_value=fill_value)


# --- writing: the .at property ----------------------------------------------------------------------------------
def scatter_update(a, index, values, scatter_op, *, indices_are_sorted=False, unique_indices=False, mode=None,
                   wrap_negative_indices=True):
    """`a` with `values` combined into `a[index]` by `scatter_op` (one of lax's scatter functions)."""
    a = to_array(a)
    a_shape = shape(a)
    a_dtype, a_weak = dtypes.dtype_and_weak_of(a)
    values = to_array(values)
    entries = parse_index(index, a_shape, wrap_negative_indices)
    # Integers and slices alone address distinct elements (JAX marks them unique, which makes scatter_mul
    # differentiable with respect to the updates). Not necessarily sorted: a negative-step slice descends.
    unique_indices = unique_indices or not _has_advanced(entries)
    plan = make_plan(entries, a_shape)
    if _is_empty(plan.final_shape) or any(a_shape[axis] == 0 for axis in plan.collapsed_slice_dims):
        return materialize(a)  # nothing to write, or every write falls outside an empty axis
    values = lax.convert_element_type(values, a_dtype, a_weak)
    values = _shape.broadcast_to(values, plan.final_shape)
    values = lax.reshape(values, plan.gather_shape)
    dimension_numbers = lax.ScatterDimensionNumbers(plan.offset_dims, plan.collapsed_slice_dims, plan.start_index_map)
    return materialize(scatter_op(a, plan.indices, values, dimension_numbers, indices_are_sorted=indices_are_sorted,
                                  unique_indices=unique_indices, mode=mode))


def _apply_at(a, index, func, **options):
    """`func` applied at `a[index]`, once per occurrence of an element in the index (JAX's `.at[].apply`)."""
    from ._creation import zeros

    a = to_array(a)
    dtype = dtypes.dtype(a)
    counts = scatter_update(zeros(shape(a), np.int32), index, np.int32(1), lax.scatter_add, **options)

    def more_to_apply(state):
        done, _ = state
        return lax.reduce_or(lax.lt(done, counts), tuple(range(len(shape(a)))))

    def apply_once(state):
        done, x = state
        applied = lax.convert_element_type(func(x), dtype)
        return lax.add(done, np.int32(1)), lax.select(lax.lt(done, counts), applied, x)

    return materialize(lax.while_loop(more_to_apply, apply_once, (zeros(shape(a), np.int32), a))[1])


class _IndexUpdateRef:
    """`x.at[index]`: functional updates of the elements `x[index]`, returning new arrays.

    Every method takes JAX's keyword options: `indices_are_sorted`, `unique_indices` (promises that allow
    faster code), `mode` (out-of-bounds handling, see the module docstring) and `wrap_negative_indices`."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
            wrap_negative_indices=True):
        """`x[index]`; out-of-bounds reads clamp, or give `fill_value` with mode='fill'."""
        return advanced_getitem(self.array, self.index, indices_are_sorted=indices_are_sorted,
                                unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                                wrap_negative_indices=wrap_negative_indices)

    def _update(self, values, scatter_op, options, operand=None):
        return scatter_update(self.array if operand is None else operand, self.index, values, scatter_op, **options)

    def set(self, values, **options):
        """`x` with `x[index] = values` (out-of-bounds updates are dropped unless mode='clip')."""
        return self._update(values, lax.scatter, options)

    def add(self, values, **options):
        """`x` with `x[index] += values`; repeated indices accumulate."""
        return self._update(values, lax.scatter_add, options)

    def subtract(self, values, **options):
        from ._ufuncs import negative

        return self._update(negative(to_array(values)), lax.scatter_add, options)

    def multiply(self, values, **options):
        """`x` with `x[index] *= values`; repeated indices multiply."""
        return self._update(values, lax.scatter_mul, options)

    mul = multiply

    def divide(self, values, **options):
        """`x / y` where y is 1 outside `index` and the product of the values at it (as JAX computes it)."""
        from ._creation import ones_like
        from ._ufuncs import divide

        return divide(self.array, self._update(values, lax.scatter_mul, options, ones_like(self.array)))

    def power(self, values, **options):
        from ._creation import ones_like
        from ._ufuncs import power

        return power(self.array, self._update(values, lax.scatter_mul, options, ones_like(self.array)))

    def min(self, values, **options):
        """`x` with `x[index] = minimum(x[index], values)`."""
        return self._update(values, lax.scatter_min, options)

    def max(self, values, **options):
        """`x` with `x[index] = maximum(x[index], values)`."""
        return self._update(values, lax.scatter_max, options)

    def apply(self, func, **options):
        """`x` with the unary function `func` applied at `index`: like `set(func(x[index]))`, but a repeated index
        applies `func` repeatedly (numpy's `ufunc.at`). Not differentiable, as in JAX."""
        return _apply_at(self.array, self.index, func, **options)


class _IndexUpdateHelper:
    """The object `x.at` returns: index it (`x.at[index]`) to choose the elements to update."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


install_late("at", property(_IndexUpdateHelper))


# --- nonzero and friends -------------------------------------------------------------------------------------
def _inclusive_cumsum(x):
    """Prefix sums of a 1-D integer array by doubling shifts (log2(n) adds of padded copies)."""
    n = shape(x)[0]
    shift = 1
    while shift < n:
        x = lax.add(x, lax.pad(x, np.zeros((), dtypes.dtype(x)), [(shift, -shift, 0)]))
        shift *= 2
    return x


def _fill_values(fill_value, ndim):
    if fill_value is None:
        return (0,) * ndim
    values = tuple(np.ravel(np.asarray(fill_value))) if np.ndim(fill_value) else (fill_value,) * ndim
    if len(values) != ndim:
        raise ValueError(f"fill_value must be a scalar or have one entry per dimension ({ndim}), got {fill_value}")
    return values


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, one array per dimension. Under numax.jit pass `size` (the result length:
    extra positions get `fill_value`, default 0; extra nonzeros are dropped)."""
    a = to_array(a)
    a_shape = shape(a)
    if not a_shape:
        raise ValueError("nonzero of a 0-d array is not allowed; use atleast_1d(a).nonzero()")
    index_dtype = dtypes.default_int_dtype()
    concrete = None
    if isinstance(a, Tracer):
        concrete = a.to_concrete_value()
        if concrete is None and size is None:
            from numax.core.errors import ConcretizationTypeError

            raise ConcretizationTypeError(a, "the result shape of nonzero depends on the values; pass size= "
                                             "(a static result length) to use nonzero under numax.jit")
    else:
        concrete = np.asarray(a)
    fills = _fill_values(fill_value, len(a_shape))
    if concrete is not None:
        found = np.nonzero(concrete)
        if size is not None:
            found = tuple(np.concatenate([f[:size], np.full(max(0, size - len(f)), fill, f.dtype)])
                          for f, fill in zip(found, fills))
        return tuple(materialize(f.astype(index_dtype)) for f in found)
    return _traced_nonzero(a, a_shape, int(size), fills, index_dtype)


def _traced_nonzero(a, a_shape, size, fills, index_dtype):
    from ._ufuncs import not_equal

    total = int(np.prod(a_shape, dtype=np.int64))
    flags = lax.convert_element_type(_shape.ravel(not_equal(a, 0)), index_dtype)
    # Each nonzero's rank among the nonzeros is its destination; the others go out of bounds and are dropped.
    destination = lax.select(lax.ne(flags, index_dtype.type(0)),
                             lax.sub(_inclusive_cumsum(flags), index_dtype.type(1)),
                             lax.full((total,), index_dtype.type(size)))
    positions = lax.full((size,), index_dtype.type(total))
    dimension_numbers = lax.ScatterDimensionNumbers((), (0,), (0,))
    positions = lax.scatter(positions, lax.expand_dims(destination, (1,)), lax.iota(index_dtype, total),
                            dimension_numbers, unique_indices=True, mode="drop")
    found = lax.lt(positions, index_dtype.type(total))
    out, stride = [], total
    for size_d, fill in zip(a_shape, fills):
        stride //= size_d
        coordinate = lax.rem(lax.div(positions, index_dtype.type(stride)), index_dtype.type(size_d))
        out.append(lax.select(found, coordinate, lax.full((size,), np.asarray(fill, index_dtype))))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(_shape.ravel(to_array(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of nonzero elements as rows of a (count, ndim) array."""
    a = to_array(a)
    if not shape(a):
        count = len(nonzero(lax.reshape(a, (1,)), size=size)[0])
        return materialize(np.zeros((count, 0), dtypes.default_int_dtype()))
    found = nonzero(a, size=size, fill_value=fill_value)
    return _shape.stack(found, axis=1)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of `a` along `axis` where `condition` (1-D) is true; `size` fixes the result length."""
    if out is not None:
        raise NotImplementedError("compress's out= argument is not supported: numax arrays are immutable")
    condition = to_array(condition)
    if len(shape(condition)) != 1:
        raise ValueError(f"compress: condition must be 1-D, got shape {shape(condition)}")
    a = to_array(a)
    if axis is None:
        a, axis = _shape.ravel(a), 0
    length = shape(a)[axis]
    if size is not None and not 0 <= size <= length:
        raise ValueError(f"compress: size must be between 0 and the length of the axis ({length}), got {size}")
    if shape(condition)[0] > length:
        if size is None and np.asarray(_concrete_mask(condition))[length:].any():
            raise ValueError(f"compress: condition has true entries beyond the {length} entries of axis {axis}")
        condition = lax.slice_in_dim(condition, 0, length)
    kept = nonzero(condition, size=size, fill_value=length)[0]
    return take(a, kept, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of `arr` where `condition` is true, flattened."""
    return compress(_shape.ravel(to_array(condition)), _shape.ravel(to_array(arr)), size=size, fill_value=fill_value)


# --- index arrays ------------------------------------------------------------------------------------------------
def _index_arrays(arrays, dtype=None):
    dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    return tuple(materialize(np.asarray(x, dtype)) for x in arrays)


def diag_indices(n, ndim=2):
    if n < 0 or ndim < 0:
        raise ValueError(f"diag_indices needs non-negative n and ndim, got n={n}, ndim={ndim}")
    return _index_arrays([np.arange(n)] * ndim)


def diag_indices_from(arr):
    arr_shape = shape(arr)
    if len(arr_shape) < 2 or len(set(arr_shape)) != 1:
        raise ValueError(f"diag_indices_from needs an array of at least 2 equal dimensions, got shape {arr_shape}")
    return diag_indices(arr_shape[0], len(arr_shape))


def tril_indices(n, k=0, m=None):
    return _index_arrays(np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n, k=0, m=None):
    return _index_arrays(np.triu_indices(operator.index(n), operator.index(k), m))


def _matrix_shape(name, arr):
    arr_shape = shape(arr)
    if len(arr_shape) != 2:
        raise ValueError(f"{name} needs a 2-D array, got shape {arr_shape}")
    return arr_shape


def tril_indices_from(arr, k=0):
    rows, cols = _matrix_shape("tril_indices_from", arr)
    return tril_indices(rows, k, cols)


def triu_indices_from(arr, k=0):
    rows, cols = _matrix_shape("triu_indices_from", arr)
    return triu_indices(rows, k, cols)


def indices(dimensions, dtype=None, sparse=False):
    """An index grid for an array of shape `dimensions` (stacked, or a tuple of broadcastable arrays if sparse)."""
    dimensions = tuple(operator.index(d) for d in dimensions)
    grids = np.indices(dimensions, sparse=True)
    if sparse:
        return _index_arrays(grids, dtype)
    dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    return materialize(np.indices(dimensions, dtype=dtype))


def ix_(*args):
    """Open-mesh index arrays: the i-th argument (1-D) shaped to lie along dimension i."""
    out = []
    for i, arg in enumerate(args):
        arg = to_array(arg)
        arg_shape = shape(arg)
        if len(arg_shape) != 1:
            raise ValueError(f"cross index must be 1-dimensional, got shape {arg_shape} at position {i}")
        if dtypes.dtype(arg) == dtypes.bool_:
            arg = nonzero(arg)[0]
        target = [1] * len(args)
        target[i] = shape(arg)[0]
        out.append(materialize(lax.reshape(arg, target)))
    return tuple(out)


def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinate arrays for an array of `shape` (negative indices count from the end;
    out-of-bounds ones are clipped, as in JAX)."""
    from ._logic import clip
    from ._ufuncs import floor_divide, remainder

    indices = integer_indices("unravel_index", indices)
    dims = tuple(operator.index(d) for d in shape)
    total = int(np.prod(dims, dtype=np.int64))
    dtype = dtypes.dtype(indices)
    flat = clip(normalize_indices(indices, total, dtype), 0, max(total - 1, 0))
    out, stride = [], total
    for size in dims:
        stride //= size if size else 1
        out.append(remainder(floor_divide(flat, np.asarray(max(stride, 1), dtype)), np.asarray(max(size, 1), dtype)))
    return tuple(materialize(o) for o in out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Coordinate arrays as flat indices into an array of shape `dims` (mode 'raise' needs concrete indices)."""
    from ._logic import clip
    from ._ufuncs import add, multiply, remainder

    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for {len(dims)} dimensions")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index order must be 'C' or 'F', got {order!r}")
    arrays = [integer_indices("ravel_multi_index", i) for i in multi_index]
    if mode == "raise":
        for i, (array, size) in enumerate(zip(arrays, dims)):
            if isinstance(array, Tracer) and array.to_concrete_value() is None:
                from numax.core.errors import ConcretizationTypeError

                raise ConcretizationTypeError(array, "ravel_multi_index with mode='raise' checks the index values; "
                                                     "use mode='wrap' or mode='clip' under numax.jit")
            value = np.asarray(array.to_concrete_value() if isinstance(array, Tracer) else array)
            if value.size and (value.min() < 0 or value.max() >= size):
                raise ValueError(f"invalid entry in coordinates array {i}: values must lie in [0, {size})")
    elif mode == "wrap":
        arrays = [remainder(a, np.asarray(size, dtypes.dtype(a))) for a, size in zip(arrays, dims)]
    elif mode == "clip":
        arrays = [clip(a, 0, size - 1) for a, size in zip(arrays, dims)]
    else:
        raise ValueError(f"ravel_multi_index mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    strides = np.cumprod((1,) + (dims[::-1] if order == "C" else dims)[:-1])
    strides = strides[::-1] if order == "C" else strides
    result = None
    for array, stride in zip(arrays, strides):
        term = multiply(array, int(stride))
        result = term if result is None else add(result, term)
    return materialize(result)
