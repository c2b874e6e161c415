"""Shape manipulation: reshape, ravel, transpose, swapaxes, moveaxis, expand_dims, squeeze,
concatenate/stack and friends, split, tile, repeat, flip, roll, broadcast_to, atleast_nd."""

import builtins
import functools
import math

import numpy as np

from numax import lax
from numax.core.dtypes import has_extended_dtype
from numax.core.pytree import tree_map
from numax.core.trace import Tracer, concrete_or_error

from ._util import (
    aval,
    broadcast_shapes,
    canonicalize_axes,
    canonicalize_axis,
    index_dims,
    promote_dtypes,
    shape,
    to_array,
)


def keys_moved_like_arrays(function):
    """`function`, which moves, copies or drops an array's elements but computes none (reshape, transpose, flip,
    split, ...), also for a typed PRNG key array as its first argument, as in jax: applied to the keys' data
    vmapped over its trailing axis of key words (so axes and shapes mean the keys' own), its results wrapped as keys
    again."""

    @functools.wraps(function)
    def on_keys_too(a, *args, **kwargs):
        if not has_extended_dtype(a):
            return function(a, *args, **kwargs)
        from numax import random  # (numax.random builds on numax.numpy)
        from numax.transforms.vmap import vmap

        moved = vmap(lambda words: function(words, *args, **kwargs), in_axes=-1, out_axes=-1)(random.key_data(a))
        return tree_map(random.wrap_key_data, moved)

    return on_keys_too


def _resolve_shape(new_shape, size):
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (int(new_shape),)
    new_shape = index_dims(new_shape)
    unknown = [i for i, d in enumerate(new_shape) if d == -1]
    if len(unknown) > 1:
        raise TypeError("can only specify one unknown dimension (-1)")
    if unknown:
        known = math.prod(d for d in new_shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of size {size} into shape {tuple(new_shape)}")
        new_shape[unknown[0]] = size // known
    if math.prod(new_shape) != size:
        # (JAX's class for arrays: a TypeError; jax.numpy hands numpy inputs to numpy, which raises ValueError.)
        raise TypeError(f"cannot reshape array of size {size} into shape {tuple(new_shape)}")
    return tuple(new_shape)


@keys_moved_like_arrays
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    a = to_array(a)
    a_aval = aval(a)
    target = _resolve_shape(shape, a_aval.size)
    if order == "F":
        reversed_axes = tuple(range(a_aval.ndim))[::-1]
        return lax.transpose(lax.reshape(lax.transpose(a, reversed_axes), target[::-1]),
                             tuple(range(len(target)))[::-1])
    if order not in ("C", "A", "K"):
        raise ValueError(f"reshape order must be 'C' or 'F', got {order!r}")
    return _as_array(lax.reshape(a, target))


def _as_array(x):
    from ._util import materialize

    return materialize(x)


@keys_moved_like_arrays
def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


@keys_moved_like_arrays
def transpose(a, axes=None):
    a = to_array(a)
    rank = len(shape(a))
    if axes is None:
        axes = tuple(range(rank))[::-1]
    axes = tuple(canonicalize_axis(ax, rank) for ax in axes)
    if sorted(axes) != list(range(rank)):
        raise TypeError(f"transpose: axes {axes} are not a permutation of the {rank} axes of the array")
    return _as_array(lax.transpose(a, axes))


@keys_moved_like_arrays
def permute_dims(a, axes):
    return transpose(a, axes)


@keys_moved_like_arrays
def matrix_transpose(x):
    rank = len(shape(x))
    if rank < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {shape(x)}")
    return swapaxes(x, -1, -2)


@keys_moved_like_arrays
def swapaxes(a, axis1, axis2):
    rank = len(shape(a))
    perm = list(range(rank))
    i, j = canonicalize_axis(axis1, rank), canonicalize_axis(axis2, rank)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


@keys_moved_like_arrays
def moveaxis(a, source, destination):
    rank = len(shape(a))
    source = [canonicalize_axis(s, rank) for s in (source if isinstance(source, (tuple, list)) else [source])]
    destination = [canonicalize_axis(d, rank) for d in
                   (destination if isinstance(destination, (tuple, list)) else [destination])]
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    order = [i for i in range(rank) if i not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(a, order)


@keys_moved_like_arrays
def rollaxis(a, axis, start=0):
    rank = len(shape(a))
    axis = canonicalize_axis(axis, rank)
    start = start + rank if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


@keys_moved_like_arrays
def expand_dims(a, axis):
    a = to_array(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return _as_array(lax.expand_dims(a, axes))


@keys_moved_like_arrays
def squeeze(a, axis=None):
    a = to_array(a)
    a_shape = shape(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a_shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, len(a_shape))
        for ax in axes:
            if a_shape[ax] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one "
                                 f"(axis {ax} of shape {a_shape})")
    return _as_array(lax.squeeze(a, axes))


def _typed_keys(arrays):
    return bool(arrays) and all(has_extended_dtype(a) for a in arrays)


def _join_keys(join, arrays, axis, rank):
    """`concatenate`/`stack` of typed PRNG key arrays, as in jax: the same join of their key data (whose one
    trailing axis holds each key's words), wrapped as keys again."""
    from numax import random  # (numax.random builds on numax.numpy)

    return random.wrap_key_data(join([random.key_data(a) for a in arrays], axis=canonicalize_axis(axis, rank)))


def concatenate(arrays, axis=0, dtype=None):
    arrays = list(arrays)
    if dtype is None and axis is not None and _typed_keys(arrays):
        return _join_keys(concatenate, arrays, axis, len(arrays[0].shape))
    arrays = [to_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays) if len(arrays) > 1 else arrays
    if dtype is not None:
        arrays = [lax.convert_element_type(a, dtype) for a in arrays]
    rank = len(shape(arrays[0]))
    if rank == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for a in arrays:
        if len(shape(a)) != rank:
            raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                            f"{', '.join(str(shape(x)) for x in arrays)}.")
    return _as_array(lax.concatenate(arrays, canonicalize_axis(axis, rank)))


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None):
    arrays = list(arrays)
    if dtype is None and _typed_keys(arrays):
        return _join_keys(stack, arrays, axis, len(arrays[0].shape) + 1)
    arrays = [to_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    axis = canonicalize_axis(axis, len(shape(arrays[0])) + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype)


def atleast_1d(*arys):
    out = [reshape(a, (1,)) if len(shape(a)) == 0 else to_array(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = to_array(a)
        rank = len(shape(a))
        out.append(reshape(a, (1,) * (2 - rank) + shape(a)) if rank < 2 else a)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = to_array(a)
        a_shape = shape(a)
        if len(a_shape) == 0:
            a = reshape(a, (1, 1, 1))
        elif len(a_shape) == 1:
            a = reshape(a, (1, a_shape[0], 1))
        elif len(a_shape) == 2:
            a = reshape(a, a_shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def hstack(tup, dtype=None):
    arrays = [atleast_1d(a) for a in tup]
    return concatenate(arrays, axis=0 if len(shape(arrays[0])) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    return concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


def column_stack(tup):
    arrays = [reshape(a, (-1, 1)) if len(shape(a)) < 2 else to_array(a) for a in tup]
    return concatenate(arrays, axis=1)


def _split_points(size, indices_or_sections, strict):
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0")
        if strict and size % sections:
            raise ValueError(f"array split does not result in an equal division: {size} into {sections}")
        base, extra = divmod(size, sections)
        sizes = [base + 1] * extra + [base] * (sections - extra)
        return list(np.cumsum([0] + sizes))
    points = [int(concrete_or_error(i, "split indices must be concrete")) for i in indices_or_sections]
    points = [builtins.min(builtins.max(p + size if p < 0 else p, 0), size) for p in points]
    return [0] + points + [size]


def _split(ary, indices_or_sections, axis, strict):
    ary = to_array(ary)
    a_shape = shape(ary)
    axis = canonicalize_axis(axis, len(a_shape))
    points = _split_points(a_shape[axis], indices_or_sections, strict)
    from ._indexing import slice_along

    return [slice_along(ary, axis, start, builtins.max(start, stop)) for start, stop in zip(points[:-1], points[1:])]


@keys_moved_like_arrays
def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, strict=True)


@keys_moved_like_arrays
def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, strict=False)


@keys_moved_like_arrays
def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=1 if len(shape(ary)) > 1 else 0)


@keys_moved_like_arrays
def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


@keys_moved_like_arrays
def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=2)


@keys_moved_like_arrays
def broadcast_to(array, shape):
    array = to_array(array)
    target = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(index_dims(shape))
    a_shape = aval(array).shape
    if a_shape == target:
        return _as_array(array)
    if len(a_shape) > len(target) or broadcast_shapes(a_shape, target) != target:
        raise ValueError(f"cannot broadcast an array of shape {a_shape} to shape {target}")
    offset = len(target) - len(a_shape)
    kept = [i for i, d in enumerate(a_shape) if d == target[offset + i]]
    squeezed = lax.reshape(array, [a_shape[i] for i in kept]) if len(kept) != len(a_shape) else array
    return _as_array(lax.broadcast_in_dim(squeezed, target, [offset + i for i in kept]))


def broadcast_arrays(*args):
    target = broadcast_shapes(*(shape(a) for a in args))
    return [broadcast_to(a, target) for a in args]


@keys_moved_like_arrays
def tile(A, reps):
    A = to_array(A)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    a_shape = shape(A)
    rank = builtins.max(len(a_shape), len(reps))
    a_shape = (1,) * (rank - len(a_shape)) + a_shape
    reps = (1,) * (rank - len(reps)) + reps
    A = lax.reshape(A, a_shape)
    # Broadcast each dimension d to (rep, d), then merge the pairs.
    expanded_shape = [x for pair in zip(reps, a_shape) for x in pair]
    expanded = lax.broadcast_in_dim(A, expanded_shape, [2 * i + 1 for i in range(rank)])
    return _as_array(lax.reshape(expanded, [r * d for r, d in zip(reps, a_shape)]))


@keys_moved_like_arrays
def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    a = to_array(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    a_shape = shape(a)
    axis = canonicalize_axis(axis, len(a_shape))
    if isinstance(repeats, (int, np.integer)):
        count = int(repeats)
        expanded_shape = list(a_shape[:axis + 1]) + [count] + list(a_shape[axis + 1:])
        dims = [i for i in range(len(a_shape) + 1) if i != axis + 1]
        expanded = lax.broadcast_in_dim(a, expanded_shape, dims)
        out_shape = list(a_shape)
        out_shape[axis] *= count
        return _as_array(lax.reshape(expanded, out_shape))
    counts = np.asarray(concrete_or_error(repeats, "repeat counts must be concrete (or pass an int)"))
    counts = np.broadcast_to(counts, (a_shape[axis],))
    index = np.repeat(np.arange(a_shape[axis]), counts)
    from ._indexing import take

    return take(a, index, axis=axis)


@keys_moved_like_arrays
def flip(m, axis=None):
    m = to_array(m)
    axes = canonicalize_axes(axis, len(shape(m)))
    return _as_array(lax.rev(m, axes))


@keys_moved_like_arrays
def fliplr(m):
    return flip(m, 1)


@keys_moved_like_arrays
def flipud(m):
    return flip(m, 0)


@keys_moved_like_arrays
def rot90(m, k=1, axes=(0, 1)):
    k = k % 4
    ax0, ax1 = axes
    if k == 0:
        return to_array(m)
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(len(shape(m))))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    if k == 1:
        return transpose(flip(m, ax1), perm)
    return flip(transpose(m, perm), ax1)


@keys_moved_like_arrays
def roll(a, shift, axis=None):
    """numpy's roll. A traced shift (under jit or vmap) rolls with one dynamic slice of the axis doubled."""
    a = to_array(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape(a))
    if isinstance(shift, (tuple, list)) or np.ndim(shift) or isinstance(axis, (tuple, list)):
        shifts, axes = np.broadcast_arrays(np.asarray(shift if not hasattr(shift, "aval") else
                                                      concrete_or_error(shift, "roll: shifts for several axes "
                                                                                "must be concrete")),
                                           np.asarray(axis))
        for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
            a = roll(a, s, ax)
        return _as_array(a)
    ax = canonicalize_axis(axis, len(shape(a)))
    size = shape(a)[ax]
    if size == 0:
        return _as_array(a)
    from ._indexing import slice_along

    if not isinstance(shift, Tracer):
        s = int(np.asarray(concrete_or_error(shift, "roll shift"))) % size
        if s:
            a = lax.concatenate([slice_along(a, ax, size - s, size), slice_along(a, ax, 0, size - s)], ax)
        return _as_array(a)
    start = lax.rem(lax.sub(np.int32(size), lax.rem(lax.convert_element_type(shift, np.int32), np.int32(size))),
                    np.int32(size))
    start = lax.select(lax.lt(start, np.int32(0)), lax.add(start, np.int32(size)), start)
    doubled = lax.concatenate([a, a], ax)
    return _as_array(lax.dynamic_slice_in_dim(doubled, start, size, axis=ax))


def resize(a, new_shape):
    a = ravel(a)
    new_shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    size = int(np.prod(new_shape, dtype=np.int64))
    length = shape(a)[0]
    if length == 0:
        return lax.full(new_shape, 0, aval(a).dtype)
    repeats = -(-size // length)
    return reshape(tile(a, repeats)[:size], new_shape)


def shape_of(a):
    """`a.shape` for anything that has one (a ShapeDtypeStruct, say), as jax's `shape`; the array's otherwise."""
    return a.shape if hasattr(a, "shape") else shape(a)


def size_of(a, axis=None):
    if axis is None and hasattr(a, "size"):
        return a.size
    a_shape = shape_of(a)
    if axis is None:
        return int(np.prod(a_shape, dtype=np.int64))
    if isinstance(axis, (tuple, list)):
        return int(np.prod([a_shape[i] for i in axis], dtype=np.int64))
    return a_shape[axis]


def ndim_of(a):
    return a.ndim if hasattr(a, "ndim") else len(shape(a))


def append(arr, values, axis=None):
    """`arr` with `values` appended (both flattened when axis is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _concrete_positions(name, obj, size):
    if isinstance(obj, slice):
        return np.arange(size)[obj]
    positions = np.asarray(concrete_or_error(obj, f"{name}'s indices must be concrete (static) values"))
    if positions.dtype == bool:
        return np.nonzero(positions)[0]
    positions = positions.astype(np.int64)
    if np.any((positions < -size) | (positions >= size)):
        raise IndexError(f"{name}: index out of bounds for axis with size {size}")
    return np.where(positions < 0, positions + size, positions)


def delete(arr, obj, axis=None):
    """`arr` without the entries at the (concrete) indices `obj` along `axis` (flattened if None)."""
    from ._indexing import take

    arr = to_array(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = canonicalize_axis(axis, len(shape(arr)))
    size = shape(arr)[axis]
    kept = np.setdiff1d(np.arange(size), _concrete_positions("delete", obj, size))
    return take(arr, kept.astype(np.int32), axis=axis)


def insert(arr, obj, values, axis=None):
    """`values` inserted before the (concrete) index or indices `obj` along `axis` (flattened if None)."""
    arr = to_array(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    rank = len(shape(arr))
    axis = canonicalize_axis(axis, rank)
    size = shape(arr)[axis]
    scalar_index = np.ndim(concrete_or_error(obj, "insert's indices must be concrete")) == 0 and \
        not isinstance(obj, slice)
    if isinstance(obj, slice):
        positions = np.arange(size)[obj]
    else:
        positions = np.asarray(concrete_or_error(obj, "insert's indices must be concrete")).astype(np.int64).ravel()
    if np.any((positions < -size) | (positions > size)):
        raise IndexError(f"insert: index out of bounds for axis with size {size}")
    positions = np.where(positions < 0, positions + size, positions)
    values = lax.convert_element_type(to_array(values), aval(arr).dtype)
    others = [d for i, d in enumerate(shape(arr)) if i != axis]
    if scalar_index and len(shape(values)) == rank:
        values = broadcast_to(values, [d if i != axis else shape(values)[axis] for i, d in enumerate(shape(arr))])
        positions = np.full(shape(values)[axis], positions[0])
    elif scalar_index:
        values = expand_dims(broadcast_to(values, others), axis)
    else:
        values = moveaxis(broadcast_to(values, [len(positions)] + others), 0, axis)
    # Merge: output slot of each original entry and each inserted entry (stable, inserted first).
    keys = np.concatenate([np.arange(size) * 2 + 1, positions * 2])
    order = np.argsort(keys, kind="stable")
    from ._indexing import take

    joined = lax.concatenate([arr, values], axis)
    return take(joined, order.astype(np.int32), axis=axis)


def trim_zeros(filt, trim="fb"):
    """`filt` (1-d, concrete) without its leading ('f') and/or trailing ('b') zeros."""
    values = np.asarray(concrete_or_error(filt, "trim_zeros needs a concrete array (its result size depends on it)"))
    if values.ndim != 1:
        raise ValueError(f"trim_zeros takes a 1-d array, got shape {values.shape}")
    nonzero = np.flatnonzero(values)
    trim = trim.lower()
    start = (nonzero[0] if nonzero.size else values.size) if "f" in trim else 0
    stop = (nonzero[-1] + 1 if nonzero.size else 0) if "b" in trim else values.size
    from ._indexing import slice_along

    return slice_along(to_array(filt), 0, int(start), int(builtins.max(start, stop)))


@keys_moved_like_arrays
def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple (the array API's unstack)."""
    from ._indexing import slice_along

    x = to_array(x)
    rank = len(shape(x))
    if rank == 0:
        raise ValueError("unstack requires an array of at least one dimension")
    axis = canonicalize_axis(axis, rank)
    return tuple(lax.squeeze(slice_along(x, axis, i, i + 1), (axis,)) for i in range(shape(x)[axis]))
