"""Collectives that move data between the examples of a named axis: ppermute, pshuffle and all_to_all.

Beside psum and its family (lax/collectives.py, whose binding and axis helpers these share): under
`vmap(..., axis_name=...)` a ppermute is a take along the vmap's batch dimension and an all_to_all a
reshape and transpose that trades the batch dimension for a block of the split dimension; in a
replicated program (pmap) they lower to `stablehlo.collective_permute` and `stablehlo.all_to_all` over
the replica groups of their axes.

Both are linear: ppermute transposes to the inverse permutation, all_to_all to the one that swaps its
split and concat dimensions.
"""

import numpy as np

from ..core.ad_util import Zero
from ..core.primitives import batching_rules
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, dense_elements, i64_attr
from .ad import deflinear
from .batching import batch_at_front
from .collectives import (
    CollectivePrimitive,
    _as_array,
    _axis_names,
    _map_leaves,
    _no_groups_under_vmap,
    axis_size,
    channel_handle,
    grouped_replica_groups,
    index_groups,
    register_varying_collective,
    replica_groups,
)

__all__ = ["all_to_all", "ppermute", "pshuffle", "pswapaxes"]


def _vmapped_axis_alone(name, axes):
    """The vmap's axis is the collective's only one; a tuple of names needs every example of the other axes,
    which live in outer vmaps."""
    if len(axes) > 1:
        raise NotImplementedError(f"{name} over several vmapped axes {axes} is not supported; use one axis name")


# --- ppermute -------------------------------------------------------------------------------------------
ppermute_p = CollectivePrimitive("ppermute")
ppermute_p.def_abstract_eval(lambda x, axes, perm: x)
register_varying_collective(ppermute_p)


def _sources_by_destination(perm, size):
    """For each position along the axis, the position it receives from; `size` (past the end) for none."""
    sources = np.full(size, size, np.int32)
    for source, destination in perm:
        sources[destination] = source
    return sources


def _ppermute_batching(values, dims, axis, axes, perm):
    from .lax_extras import index_take
    from .shapes import pad

    (x,), (dim,) = values, dims
    if axis.name not in axes:  # a permutation along an outer axis: this batch dimension rides along
        return ppermute_p.bind(x, axes=axes, perm=perm), dim
    _vmapped_axis_alone("ppermute", axes)
    if dim is None and len(perm) == axis.size:  # every example gets the same value back
        return x, None
    x = batch_at_front(x, dim, axis.size)
    sources = _sources_by_destination(perm, axis.size)
    if len(perm) < axis.size:  # examples no one sends to get zeros: a zero example appended to take from
        zero = np.zeros((), get_aval_of(x).dtype)
        x = pad(x, zero, [(0, 1, 0)] + [(0, 0, 0)] * (get_aval_of(x).ndim - 1))
    return index_take(x, [sources], (0,)), 0


_ppermute_batching.needs_axis = True
batching_rules[ppermute_p] = _ppermute_batching


def _ppermute_transpose(ct, x, axes, perm):
    if type(ct) is Zero:
        return [None]
    inverse = tuple((destination, source) for source, destination in perm)
    return [ppermute_p.bind(ct, axes=axes, perm=inverse)]


deflinear(ppermute_p, _ppermute_transpose)


def _ppermute_lowering(ctx, x, axes, perm):
    # Device ids, pair by pair within each group: position i of a group sends to its position j.
    pairs = np.array([[group[s], group[d]] for group in replica_groups(ctx.module.axis_env, axes) for s, d in perm],
                     np.int64).reshape(-1, 2)
    return ctx.builder.op1("stablehlo.collective_permute", [x], aval_type(ctx.aval_out),
                           {**_channel(ctx), "source_target_pairs": dense_elements(pairs)})


def _channel(ctx):
    """A channel handle in an SPMD program (a pmap's: the ids are partition ids), none in a program replicated
    with `num_replicas` (there a channel handle makes XLA read the ids as partition ids, and fail)."""
    if ctx.module.num_partitions == 1:
        return {}
    return {"channel_handle": channel_handle(ctx)}


register_lowering(ppermute_p, _ppermute_lowering)


def _canonical_perm(perm, size, names):
    """`perm` as a tuple of (source, destination) pairs in [0, size): negative positions count from the end,
    as jax's pmap reads them."""
    pairs = []
    for pair in perm:
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(f"ppermute: perm must be (source, destination) pairs, got {pair!r} in {perm!r}")
        for position in pair:
            if not -size <= int(position) < size:
                raise IndexError(f"ppermute: position {position} in perm {perm!r} is out of range for axis "
                                 f"{names[0] if len(names) == 1 else names!r} of size {size}")
        pairs.append(tuple(int(p) % size for p in pair))
    sources, destinations = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(sources)) < len(pairs) or len(set(destinations)) < len(pairs):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm!r}.")
    return tuple(pairs)


def ppermute(x, axis_name, perm):
    """`x` (a pytree) sent along the named axis: for each (source, destination) pair in `perm`, the example at
    position destination receives the value of the one at position source; examples that no pair sends to
    receive zeros."""
    names = _axis_names(axis_name)
    pairs = _canonical_perm(perm, axis_size(names), names)
    return _map_leaves(lambda leaf: ppermute_p.bind(_as_array(leaf), axes=names, perm=pairs), x)


def pshuffle(x, axis_name, perm):
    """`x` (a pytree) shuffled along the named axis: the example at position i receives the value of the one
    at position perm[i]; `perm` must hold each of 0..len(perm)-1 once."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


# --- all_to_all -----------------------------------------------------------------------------------------
# The primitive is always "tiled": the split dimension is cut into axis_size blocks, block i goes to the
# example at position i, and the blocks received are concatenated along the concat dimension in the order of
# their senders. The untiled form (a dimension of exactly axis_size is traded for a new one) is a reshape of it.
def _all_to_all_abstract_eval(x, axes, split_axis, concat_axis, axis_size, axis_index_groups):
    if not (0 <= split_axis < x.ndim and 0 <= concat_axis < x.ndim):
        raise TypeError(f"all_to_all: split_axis {split_axis} or concat_axis {concat_axis} is out of bounds for "
                        f"an operand of shape {x.shape}")
    if x.shape[split_axis] % axis_size:
        raise TypeError(f"all_to_all: dimension {split_axis} of the operand (shape {x.shape}) must be a multiple of "
                        f"the axis size {axis_size}")
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape), weak_type=False)


all_to_all_p = CollectivePrimitive("all_to_all")
all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)
register_varying_collective(all_to_all_p)


def _exchange_blocks(x, split_axis, concat_axis, size):
    """The all_to_all of the examples along dimension 0 of `x`: example e receives block e of every example's
    split dimension, concatenated along its concat dimension; the result's examples are along dimension 0."""
    from .shapes import reshape, transpose

    shape = get_aval_of(x).shape
    split = 1 + split_axis  # dimensions of x: the examples, then each example's
    blocks = reshape(x, shape[:split] + (size, shape[split] // size) + shape[split + 1:])
    # Each example's dimensions once its split dimension holds one block, as dimensions of `blocks`.
    kept = [1 + d if d <= split_axis else 2 + d for d in range(len(shape) - 1)]
    kept[split_axis] += 1  # the block's own extent, behind the block index
    # Receivers (the block index) first, then each receiver's dimensions with the senders in front of concat.
    order = [split] + kept[:concat_axis] + [0] + kept[concat_axis:]
    exchanged = transpose(blocks, tuple(order))
    out_shape = list(get_aval_of(exchanged).shape)
    out_shape[1 + concat_axis: 3 + concat_axis] = [size * out_shape[2 + concat_axis]]
    return reshape(exchanged, tuple(out_shape))


def _all_to_all_batching(values, dims, axis, axes, split_axis, concat_axis, axis_size, axis_index_groups):
    (x,), (dim,) = values, dims
    if axis.name not in axes:  # an all_to_all over an outer axis: this batch dimension rides along
        return all_to_all_p.bind(x, axes=axes, split_axis=split_axis + (dim <= split_axis),
                                 concat_axis=concat_axis + (dim <= concat_axis), axis_size=axis_size,
                                 axis_index_groups=axis_index_groups), dim
    _vmapped_axis_alone("all_to_all", axes)
    _no_groups_under_vmap("all_to_all", axis_index_groups)
    return _exchange_blocks(batch_at_front(x, dim, axis.size), split_axis, concat_axis, axis.size), 0


_all_to_all_batching.needs_axis = True
batching_rules[all_to_all_p] = _all_to_all_batching


def _all_to_all_transpose(ct, x, axes, split_axis, concat_axis, axis_size, axis_index_groups):
    if type(ct) is Zero:
        return [None]
    return [all_to_all_p.bind(ct, axes=axes, split_axis=concat_axis, concat_axis=split_axis, axis_size=axis_size,
                              axis_index_groups=axis_index_groups)]


deflinear(all_to_all_p, _all_to_all_transpose)


def _all_to_all_lowering(ctx, x, axes, split_axis, concat_axis, axis_size, axis_index_groups):
    groups = grouped_replica_groups(ctx.module.axis_env, axes, axis_index_groups)
    if len(groups[0]) == 1:
        return x
    return ctx.builder.op1("stablehlo.all_to_all", [x], aval_type(ctx.aval_out), {**_channel(ctx),
        "split_dimension": i64_attr(split_axis), "concat_dimension": i64_attr(concat_axis),
        "split_count": i64_attr(len(groups[0])),
        "replica_groups": dense_elements(np.array(groups, np.int64))})


register_lowering(all_to_all_p, _all_to_all_lowering)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Trades dimension `split_axis` of `x` (a pytree) for the named axis: the example at position i receives
    slice (block, when `tiled`) i of every example's split dimension, stacked (concatenated, when `tiled`)
    along `concat_axis` in the order of the sending examples."""
    names = _axis_names(axis_name)
    groups = index_groups(axis_index_groups, axis_size(names), "all_to_all", equal_sizes=True)
    # The number of examples one all_to_all exchanges among: the axis size, or that of each index group.
    size = axis_size(names) if groups is None else len(groups[0])

    def exchange_leaf(leaf):
        from .shapes import expand_dims, squeeze

        leaf = _as_array(leaf)
        shape = get_aval_of(leaf).shape
        # Axes count from 0 only (as in jax); numpy's AxisError is both the IndexError jax raises for a split
        # axis and the ValueError it raises for an untiled concat axis.
        for name, value in (("split_axis", split_axis), ("concat_axis", concat_axis)):
            if not 0 <= value < len(shape):
                raise np.exceptions.AxisError(f"all_to_all: {name} {value} is out of bounds for an operand of rank "
                                              f"{len(shape)}")
        length = shape[split_axis]
        if tiled and length % size:
            raise ValueError(f"The size of all_to_all split_axis ({length}) has to be divisible by the size of the "
                             f"named axis {axis_name} ({size})")
        if not tiled and length != size:
            raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to equal "
                             f"x.shape[split_axis], but they are {size} and {length} respectively.")
        split, concat = split_axis, concat_axis
        if not tiled and split != concat:  # a size-1 dimension to gather into, at concat in the result
            concat += split < concat
            split += concat <= split
            leaf = expand_dims(leaf, (concat,))
        out = all_to_all_p.bind(leaf, axes=names, split_axis=split, concat_axis=concat, axis_size=size,
                                axis_index_groups=groups)
        return out if tiled or split == concat else squeeze(out, (split,))

    return _map_leaves(exchange_leaf, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swaps the named axis with dimension `axis` of `x` (a pytree), whose size must be the axis size (or that
    of each index group): the example at position i receives slice i of every example's `axis`, stacked along
    `axis` in the order of the senders (`all_to_all(x, axis_name, axis, axis)`)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)
