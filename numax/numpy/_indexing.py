"""Indexing: `x[...]`. Static basic indices (ints, slices, None, Ellipsis) become one static slice here;
everything else (integer and boolean arrays, traced integers) goes to `_advanced`, which gathers.

Out-of-bounds integers follow JAX, not numpy: a read clamps them into the array after counting negative ones
from the end once, so `arange(10)[11]` is 9 and `arange(10)[-11]` is 0 (numpy raises IndexError).
"""

import operator

import numpy as np

from numax import lax
from numax.core.avals import symbolic_dim_types
from numax.core.errors import ConcretizationTypeError
from numax.core.trace import Tracer

from ._shape import keys_moved_like_arrays
from ._util import shape, to_array


class NonConcreteSliceError(ConcretizationTypeError, IndexError):
    """A slice in an index has a traced start, stop or step. Also an IndexError: the class jax raises here."""

    def __init__(self, tracer):
        super().__init__(tracer, "a slice's start, stop and step in an index must be static; for a window at a "
                                 "traced position use `numax.lax.dynamic_slice` (its size is static)")


def slice_along(a, axis, start, stop, step=1):
    return lax.slice_in_dim(a, start, stop, step, axis)


def is_basic_index(index):
    if isinstance(index, (bool, np.bool_)):
        return False  # a boolean scalar is a 0-d mask, not the integer 0 or 1
    return index is None or index is Ellipsis or isinstance(index, (int, np.integer, slice))


def _expand_ellipsis(indices, rank):
    consumed = sum(1 for i in indices if i is not None and i is not Ellipsis)
    if sum(1 for i in indices if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > rank:
        raise IndexError(f"too many indices for array: array is {rank}-dimensional, but {consumed} were indexed")
    out = []
    for index in indices:
        if index is Ellipsis:
            out.extend([slice(None)] * (rank - consumed))
        else:
            out.append(index)
    if Ellipsis not in indices:
        out.extend([slice(None)] * (rank - consumed))
    return out


def static_slice(index):
    """`index` (a slice) with its start, stop and step as Python ints, symbolic dimensions or None."""
    bounds = []
    for value in (index.start, index.stop, index.step):
        if isinstance(value, Tracer):
            concrete = value.to_concrete_value()
            if concrete is None:
                raise NonConcreteSliceError(value)
            value = concrete
        symbolic = type(value) in symbolic_dim_types  # x[:x.shape[1]] in a shape-polymorphic export
        bounds.append(value if value is None or symbolic else operator.index(value))
    return slice(*bounds)


def slice_indices(index, size):
    """`index.indices(size)` (a static slice), also for a symbolic `size` or bounds: then bounds are clamped only
    where the comparisons with `size` are decided for every value of its variables (else
    InconclusiveDimensionOperation)."""
    if all(isinstance(value, int | None) for value in (size, index.start, index.stop, index.step)):
        return index.indices(size)
    step = 1 if index.step is None else index.step
    if step < 0:
        raise NotImplementedError(f"a slice with a negative step ({index}) along a symbolic dimension {size}")

    def clamped(bound, default):
        if bound is None:
            return default
        bound = bound + size if bound < 0 else bound
        return 0 if bound < 0 else bound if bound <= size else size

    first, last = clamped(index.start, 0), clamped(index.stop, size)
    return first, (last if last >= first else first), step


def empty_axis_error(axis):
    return IndexError(f"index is out of bounds for axis {axis} with size 0")


def static_position(index, size, wrap_negative=True):
    """A static integer index as JAX reads it: negative ones count from the end once (unless not
    `wrap_negative`); the result may still lie outside [0, size)."""
    position = int(index)
    return position + size if wrap_negative and position < 0 else position


def basic_getitem(a, indices, *, wrap_negative=True, clip=False):
    """Static indexing: slices (any step), integers (clamped into range), None and Ellipsis."""
    a_shape = shape(a)
    expanded = _expand_ellipsis(indices, len(a_shape))
    start, limit, strides, reversed_axes, squeezed, new_axes = [], [], [], [], [], []
    axis = 0
    out_axis = 0
    clamped = strided = False
    for index in expanded:
        if index is None:
            new_axes.append(out_axis)
            out_axis += 1
            continue
        size = a_shape[axis]
        if isinstance(index, slice):
            first, last, step = slice_indices(static_slice(index), size)
            strided |= abs(step) != 1
            if step > 0:
                count = (last - first + step - 1) // step
                count = max(0, count) if isinstance(size, int) else count  # symbolic: last >= first
                start.append(first)
                # A symbolic limit stays `last` (the same count): the tightened one is not comparable with the size.
                tight = first + (count - 1) * step + 1 if count != 0 else first
                limit.append(tight if isinstance(size, int) else last)
                strides.append(step)
            else:
                count = max(0, (first - last - step - 1) // -step)
                low = first + (count - 1) * step if count else 0
                start.append(low)
                limit.append(first + 1 if count else 0)
                strides.append(-step)
                reversed_axes.append(axis)
            out_axis += 1
        else:
            if size == 0:
                raise empty_axis_error(axis)
            position = static_position(index, size, wrap_negative)
            clamped |= not 0 <= position < size
            position = min(max(position, 0), size - 1)
            start.append(position)
            limit.append(position + 1)
            strides.append(1)
            squeezed.append(axis)
        axis += 1
    if clamped and strided and not clip:
        # JAX reads this case with a gather that promises in-bounds indices (so its gradient drops the
        # out-of-bounds read), not with a slice: do the same.
        from ._advanced import gather_getitem, parse_index

        return gather_getitem(a, parse_index(indices, a_shape, wrap_negative), lax.GatherScatterMode.PROMISE_IN_BOUNDS)
    out = lax.slice(a, start, limit, strides)
    if reversed_axes:
        out = lax.rev(out, reversed_axes)
    if squeezed:
        out = lax.squeeze(out, squeezed)
    if new_axes:
        out = lax.expand_dims(out, new_axes)
    return out


def getitem(a, index):
    """`a[index]` as JAX defines it (numpy's, but out-of-bounds integers are clamped)."""
    a = to_array(a)
    indices = index if isinstance(index, tuple) else (index,)
    if all(is_basic_index(i) for i in indices):
        from ._util import materialize

        return materialize(basic_getitem(a, indices))
    from ._advanced import advanced_getitem

    return advanced_getitem(a, indices)


@keys_moved_like_arrays
def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    """Elements of `a` at `indices` along `axis` (see `_take.take`)."""
    from ._take import take as take_

    return take_(a, indices, axis=axis, out=out, mode=mode, unique_indices=unique_indices,
                 indices_are_sorted=indices_are_sorted, fill_value=fill_value)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements; under tracing, `size` must be given (the result shape)."""
    from ._advanced import nonzero as nonzero_

    return nonzero_(a, size=size, fill_value=fill_value)
