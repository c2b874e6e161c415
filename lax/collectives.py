"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter and axis_index.

An axis name is bound by `numax.vmap(..., axis_name=...)` (and, later, by pmap). Under vmap a collective
over the vmap's axis is a reduction (or a gather) over that vmap's batch dimension. A collective must
reach the vmap that names its axis even when its operand is not batched by it (`psum(1.0, 'i')` is the
axis size; a closed-over value is the same for every example), so these primitives bind through
`bind_collective`, which lifts the operands into that vmap's trace and runs its batching rule directly.

Params name the axes as a tuple (`axes`) so that a pmap lowering can later turn the same primitives
into `stablehlo.all_reduce` / `all_gather` / `reduce_scatter` over replica groups. Over the axes of pmaps and
shard_maps (not vmaps, as in JAX) a collective may run within `axis_index_groups`: lists of positions along
its axes, each group its own collective (the replica groups split accordingly).

Inside a shard_map with check_vma=True, values are typed by the mesh axes they may vary over (the `vma` of
their ShapedArray, JAX's "varying manual axes"): `pvary` (`pcast(x, axes, to='varying')`) makes an invariant
value varying at no cost, and its transpose is a psum; the reductions make their result invariant over their
axes (psum's transpose is then a pvary); every other collective takes and gives varying values. An ordinary
primitive whose operands vary over different axes gets `pvary`s staged before it (as JAX's do), so that a
gradient with respect to an invariant value is summed over the devices it was used on.
"""

import contextlib

import numpy as np

from ..core import dtypes, staging
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.ir import programs_in
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import find_top_trace, full_lower, get_aval_of, trace_state
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_attr, tensor_type
from .batching import batch_at_front, move_axis

__all__ = ["all_gather", "axis_index", "axis_size", "pcast", "pmax", "pmean", "pmin", "psum", "psum_scatter", "pvary"]


# --- replica groups: which devices of a pmap take part in one collective ------------------------------
def replica_groups(axis_env, axes):
    """The replica groups of a collective over `axes` in a program replicated over `axis_env`
    ((name, size), ... outermost first; a replica's id numbers its positions with the outermost axis most
    significant): replicas that differ only in their positions along `axes` form one group, each group
    ordered by those positions (the innermost of `axes` fastest), so that a collective's i-th member is the
    one at position i along the collective's axes."""
    names = [name for name, _ in axis_env]
    missing = [a for a in axes if a not in names]
    if missing:
        raise NameError(f"unbound axis name: {missing[0]}. The following axis names are bound here: {names}")
    sizes = [size for _, size in axis_env]
    ids = np.arange(int(np.prod(sizes, dtype=np.int64))).reshape(sizes)
    positions = [names.index(a) for a in axes]
    others = [i for i in range(len(names)) if i not in positions]
    grouped = ids.transpose(others + positions).reshape(-1, int(np.prod([sizes[i] for i in positions],
                                                                        dtype=np.int64)))
    return grouped.tolist()


def grouped_replica_groups(axis_env, axes, axis_index_groups):
    """The replica groups of a collective over `axes` run within each of `axis_index_groups` (positions along
    `axes`; None: the whole axes): every replica group splits into one group per index group."""
    groups = replica_groups(axis_env, axes)
    if axis_index_groups is None:
        return groups
    return [[group[i] for i in members] for group in groups for members in axis_index_groups]


def replica_groups_attr(groups):
    """StableHLO's dense replica_groups; uneven groups are padded with -1, which XLA reads as no replica."""
    width = max(len(group) for group in groups)
    padded = [list(group) + [-1] * (width - len(group)) for group in groups]
    return f"dense<{padded}> : tensor<{len(padded)}x{width}xi64>"


def index_groups(axis_index_groups, size, collective, equal_sizes):
    """`axis_index_groups` (positions along a collective's axes, of `size` positions) as a tuple of tuples, or
    None; ValueError unless they cover every position once (and, with `equal_sizes`, all have one size)."""
    if axis_index_groups is None:
        return None
    groups = tuple(tuple(int(i) for i in group) for group in axis_index_groups)
    outside = [i for group in groups for i in group if not 0 <= i < size]
    if outside:
        raise IndexError(f"{collective}: axis_index_groups {axis_index_groups} name position {outside[0]}, out of "
                         f"range for an axis of size {size}")
    if sorted(i for group in groups for i in group) != list(range(size)):
        raise ValueError(f"{collective}: axis_index_groups must cover all indices exactly once (the positions "
                         f"0..{size - 1} of the axis), got {axis_index_groups}")
    if equal_sizes and len({len(group) for group in groups}) != 1:
        raise ValueError(f"{collective}: axis_index_groups must all be the same size, got {axis_index_groups}")
    return groups


def _no_groups_under_vmap(collective, axis_index_groups):
    # As in jax: index groups split the devices of a pmap or shard_map, not the examples of a vmap.
    if axis_index_groups is not None:
        raise NotImplementedError(f"{collective}: axis_index_groups is not supported in vmap collectives (only "
                                  "over the axes of pmaps and shard_maps)")


# --- binding: find the transformation that names the axis -------------------------------------------------
class AxisFrame:
    """An axis name bound by a pmap or shard_map while its function is traced or transformed: collectives over
    it are staged into the per-device program (and lowered to collectives between devices). `level` is the top
    of the trace stack when it was bound: a vmap of the same name pushed later (above it) shadows it.
    `varying_types`: values are typed by whether they vary along it (a shard_map with check_vma=True)."""

    __slots__ = ("name", "size", "level", "varying_types")

    def __init__(self, name, size, level, varying_types=False):
        self.name = name
        self.size = size
        self.level = level
        self.varying_types = varying_types


@contextlib.contextmanager
def extend_axis_env(name, size, varying_types=False):
    """Binds the axis `name` of `size` devices (a pmap's or a shard_map's) for the duration of the block, in
    this thread; with `varying_types`, values are typed by the axes they vary over (shard_map's check_vma)."""
    if varying_types and staging.vma_rule is None:
        staging.vma_rule = _type_by_varying_axes
    frames = trace_state.axis_frames
    frames.append(AxisFrame(name, size, trace_state.stack[-1].level, varying_types))
    try:
        yield
    finally:
        frames.pop()


def _batch_trace_types():
    from ..transforms.vmap import BatchTrace, BatchTracer, find_axis

    return BatchTrace, BatchTracer, find_axis


def _bound_axis_names():
    BatchTrace, _, _ = _batch_trace_types()
    names = [frame.name for frame in trace_state.axis_frames]
    return names + [main.global_data.name for main in trace_state.stack
                    if main.trace_type is BatchTrace and main.global_data.name is not None]


def _unbound_axis_error(name):
    return NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by pmap) are available "
                     f"to collective operations: {_bound_axis_names()}")


def axis_main(name):
    """What binds the axis `name` innermost: a vmap's main trace, or a pmap's AxisFrame; NameError when
    nothing does."""
    _, _, find_axis = _batch_trace_types()
    main = None if name is None else find_axis(name)  # an unnamed vmap binds no name, not even None
    frame = next((f for f in reversed(trace_state.axis_frames) if f.name == name), None)
    if frame is not None and (main is None or main.level <= frame.level):
        return frame
    if main is None:
        raise _unbound_axis_error(name)
    return main


def _binder_size(binder):
    return binder.size if type(binder) is AxisFrame else binder.global_data.size


def _axis_names(axis_name):
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        try:
            hash(name)
        except TypeError:
            raise TypeError(f"axis names must be hashable (strings or other hashables), got {name!r}") from None
    return names


def axis_size(axis_name):
    """The number of examples (or devices) along the named axes (the product over a tuple of names)."""
    size = 1
    for name in _axis_names(axis_name):
        size *= _binder_size(axis_main(name))
    return size


class CollectivePrimitive(Primitive):
    """A primitive over named axes: binding goes to the vmap naming an axis even when no operand is
    batched by it (the ordinary bind would skip that vmap, since none of its tracers is involved)."""

    def bind(self, *args, **params):
        return bind_collective(self, args, params)

    def named_axes(self, params):
        return frozenset(params["axes"])


def bind_collective(primitive, args, params):
    BatchTrace, BatchTracer, _ = _batch_trace_types()
    names = params["axes"]
    if not names:  # nothing left to reduce over
        return list(args) if primitive.multiple_results else args[0]
    mains = [binder for binder in map(axis_main, names) if type(binder) is not AxisFrame]
    if not mains:  # only pmaps bind these axes: staged into the per-device program like any primitive
        return Primitive.bind(primitive, *args, **params)
    main = max(mains, key=lambda m: m.level)
    top = find_top_trace(args)
    if top.main.level > main.level:
        # A transformation inside the vmap (jvp, a jit being traced, an inner vmap) sees the operands
        # first; its rule binds this primitive again on what it wraps.
        return Primitive.bind(primitive, *args, **params)
    trace = BatchTrace(main)
    tracers = [trace.full_raise(a) for a in args]
    rule = batching_rules[primitive]
    out, out_dims = rule([t.value for t in tracers], [t.batch_dim for t in tracers], axis=trace.axis, **params)
    if primitive.multiple_results:
        return [full_lower(BatchTracer(trace, o, d)) for o, d in zip(out, out_dims)]
    return full_lower(BatchTracer(trace, out, out_dims))


# --- lowering: collectives between the devices of a pmap -----------------------------------------------
# A pmap's per-device program is lowered inside an `sdy.manual_computation` whose mesh axes are the pmap
# axes (ctx.module.axis_env); devices are numbered as replica_groups numbers them (the logical ids of the
# module's device assignment), hence `use_global_device_ids`.
def channel_handle(ctx):
    """A fresh channel handle: a collective between the partitions (devices) of an SPMD program."""
    return f"#stablehlo.channel_handle<handle = {ctx.module.next_channel()}, type = 1>"


def collective_attributes(ctx, axes, axis_index_groups):
    """replica_groups, channel_handle and use_global_device_ids for a collective over `axes` (within each of
    `axis_index_groups`)."""
    groups = grouped_replica_groups(ctx.module.axis_env, axes, axis_index_groups)
    return {"channel_handle": channel_handle(ctx), "replica_groups": replica_groups_attr(groups),
            "use_global_device_ids": "unit"}


def _reduction_region(builder, dtype, op_name):
    scalar = tensor_type((), dtype)
    return builder.region([scalar, scalar], lambda inner, args: [inner.op1(op_name, args, scalar)])


def _all_reduce_lowering(op_name):
    def rule(ctx, *operands, axes, axis_index_groups=None):
        results = []
        for operand, aval in zip(operands, ctx.avals_out):
            region = _reduction_region(ctx.builder, aval.dtype, op_name)
            results.append(ctx.builder.op1("stablehlo.all_reduce", [operand], aval_type(aval),
                                           collective_attributes(ctx, axes, axis_index_groups), [region]))
        return results

    return rule


def _others(axes, axis):
    return tuple(name for name in axes if name != axis.name)


# --- psum, pmax, pmin -----------------------------------------------------------------------------------
def _invariant_avals(*avals, axes, axis_index_groups=None):
    """The reduced values are the same on every device along `axes`."""
    return [aval.update(vma=aval.vma - frozenset(axes)) if aval.vma else aval for aval in avals]


def _define_reduction(name, op_name, reduce_batched, reduce_unbatched):
    primitive = CollectivePrimitive(name, multiple_results=True)
    primitive.def_abstract_eval(_invariant_avals)

    def rule(values, dims, axis, axes, axis_index_groups=None):
        if axis.name not in axes:  # a collective over an outer axis: this batch dimension rides along
            return primitive.bind(*values, axes=axes, axis_index_groups=axis_index_groups), list(dims)
        _no_groups_under_vmap(name, axis_index_groups)
        reduced = [reduce_unbatched(v, axis.size) if d is None else reduce_batched(v, d) for v, d in zip(values, dims)]
        out = primitive.bind(*reduced, axes=_others(axes, axis), axis_index_groups=axis_index_groups)
        return out, [None] * len(out)

    rule.needs_axis = True
    batching_rules[primitive] = rule
    register_lowering(primitive, _all_reduce_lowering(op_name))
    return primitive


def _sum_batched(x, dim):
    from .reductions import reduce_sum

    return reduce_sum(x, (dim,))


def _sum_unbatched(x, size):
    from .elementwise import mul, scalar_like

    return mul(x, scalar_like(size, x))  # weakly typed, so x keeps its weak type


def _max_batched(x, dim):
    from .reductions import reduce_max

    return reduce_max(x, (dim,))


def _min_batched(x, dim):
    from .reductions import reduce_min

    return reduce_min(x, (dim,))


psum_p = _define_reduction("psum", "stablehlo.add", _sum_batched, _sum_unbatched)
pmax_p = _define_reduction("pmax", "stablehlo.maximum", _max_batched, lambda x, size: x)
pmin_p = _define_reduction("pmin", "stablehlo.minimum", _min_batched, lambda x, size: x)


def _bind_over_leaves(primitive, x, axis_name, axis_index_groups, prepare=None):
    names = _axis_names(axis_name)
    for name in names:
        axis_main(name)  # a clear error for unbound names, before anything is traced
    groups = index_groups(axis_index_groups, axis_size(names), primitive.name, equal_sizes=False)
    leaves, treedef = tree.tree_flatten(x)
    leaves = [prepare(leaf) if prepare else leaf for leaf in leaves]
    out = primitive.bind(*leaves, axes=names, axis_index_groups=groups)
    return treedef.unflatten(out)


def _bools_as_int32(x):
    # JAX sums booleans as int32 (psum(True, 'i') is the axis size).
    from .conversions import convert_element_type
    from .shapes import as_array

    x = as_array(x)
    if get_aval_of(x).dtype == dtypes.bool_:
        return convert_element_type(x, np.int32)
    return x


def _map_leaves(fun, x):
    # (not tree_map: it unflattens a generator, which turns a ValueError raised by `fun` into a tree error)
    leaves, treedef = tree.tree_flatten(x)
    return treedef.unflatten([fun(leaf) for leaf in leaves])


def _as_array(x):
    from .shapes import as_array

    return as_array(x)


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of `x` (a pytree of arrays) over the named axis (or tuple of axes), or within each of
    `axis_index_groups` (lists of positions along the axes, covering each once) over pmap and shard_map axes."""
    if axis_index_groups is not None and varying_typed(_axis_names(axis_name)):
        # A sum within groups is not the same on every device along the axes: it has no invariant type (jax
        # refuses it alike).
        raise NotImplementedError("psum: axis_index_groups is not supported inside a shard_map with "
                                  "check_vma=True; pass check_vma=False to the shard_map")
    return _bind_over_leaves(psum_p, x, axis_name, axis_index_groups, _bools_as_int32)


def pmax(x, axis_name, *, axis_index_groups=None):
    """The maximum of `x` (a pytree of arrays) over the named axis (or tuple of axes)."""
    return _bind_over_leaves(pmax_p, x, axis_name, axis_index_groups, _as_array)


def pmin(x, axis_name, *, axis_index_groups=None):
    """The minimum of `x` (a pytree of arrays) over the named axis (or tuple of axes)."""
    return _bind_over_leaves(pmin_p, x, axis_name, axis_index_groups, _as_array)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of `x` (a pytree of arrays) over the named axis (or tuple of axes); integers give floats."""
    from .conversions import convert_element_type
    from .elementwise import div, scalar_like

    # Within index groups, the size of the first group (jax's choice, the same for uneven groups).
    size = axis_size(axis_name) if axis_index_groups is None else len(axis_index_groups[0])
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)

    def mean(leaf):
        aval = get_aval_of(leaf)
        if not dtypes.is_inexact(aval.dtype):
            leaf = convert_element_type(leaf, dtypes.canonicalize_dtype(np.float64), weak_type=aval.weak_type)
        return div(leaf, scalar_like(size, leaf))

    return _map_leaves(mean, total)


# psum is linear; its transpose under vmap sums the cotangents over the axis again (as JAX does).
def _psum_jvp(primals, tangents, axes, axis_index_groups=None):
    out = psum_p.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
    nonzero = [i for i, t in enumerate(tangents) if type(t) is not Zero]
    tangent_out = [Zero(tangent_aval(get_aval_of(o))) for o in out]
    if nonzero:
        summed = psum_p.bind(*(tangents[i] for i in nonzero), axes=axes, axis_index_groups=axis_index_groups)
        for i, t in zip(nonzero, summed):
            tangent_out[i] = t
    return out, tangent_out


def _psum_transpose(cts, *inputs, axes, axis_index_groups=None):
    live = [i for i, (ct, x) in enumerate(zip(cts, inputs)) if is_undefined(x) and type(ct) is not Zero]
    result = [None] * len(inputs)
    if live and frozenset(axes) <= inputs[live[0]].aval.vma:
        # Typed by varying axes: the cotangent of the (invariant) sum is every device's own, unchanged.
        for i in live:
            result[i] = pvary_p.bind(cts[i], axes=axes)
    elif live:
        summed = psum_p.bind(*(cts[i] for i in live), axes=axes, axis_index_groups=axis_index_groups)
        for i, ct in zip(live, summed):
            result[i] = ct
    return result


jvp_rules[psum_p] = _psum_jvp
transpose_rules[psum_p] = _psum_transpose
# pmax and pmin have no differentiation rule, as in JAX.


# --- all_gather and psum_scatter ------------------------------------------------------------------------
def _gathered_shape(shape, all_gather_dimension, axis_size, tiled):
    if tiled:
        return shape[:all_gather_dimension] + (shape[all_gather_dimension] * axis_size,) + \
            shape[all_gather_dimension + 1:]
    return shape[:all_gather_dimension] + (axis_size,) + shape[all_gather_dimension:]


def _all_gather_abstract_eval(x, axes, all_gather_dimension, axis_size, tiled, axis_index_groups):
    if not 0 <= all_gather_dimension < (x.ndim if tiled else x.ndim + 1):
        raise TypeError(f"all_gather: axis {all_gather_dimension} is out of bounds for an operand of shape {x.shape}"
                        f"{' (tiled)' if tiled else ''}")
    return x.update(shape=_gathered_shape(x.shape, all_gather_dimension, axis_size, tiled))


all_gather_p = CollectivePrimitive("all_gather")
all_gather_p.def_abstract_eval(_all_gather_abstract_eval)


def _all_gather_batching(values, dims, axis, axes, all_gather_dimension, axis_size, tiled, axis_index_groups):
    from .shapes import reshape

    (x,), (dim,) = values, dims
    if axis.name not in axes:  # gathering over an outer axis: this batch dimension rides along
        inner = all_gather_dimension + (dim <= all_gather_dimension)
        out_dim = dim if dim < inner or tiled else dim + 1
        return all_gather_p.bind(x, axes=axes, all_gather_dimension=inner, axis_size=axis_size, tiled=tiled,
                                 axis_index_groups=axis_index_groups), out_dim
    _no_groups_under_vmap("all_gather", axis_index_groups)
    # The examples of this vmap become the gathered dimension; every example sees the same result.
    gathered = move_axis(batch_at_front(x, dim, axis.size), 0, all_gather_dimension)
    if tiled:
        shape = get_aval_of(gathered).shape
        gathered = reshape(gathered, _gathered_shape(shape[:all_gather_dimension] + shape[all_gather_dimension + 1:],
                                                     all_gather_dimension, axis.size, True))
    return gathered, None


_all_gather_batching.needs_axis = True
batching_rules[all_gather_p] = _all_gather_batching


def _all_gather_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = all_gather_p.bind(x, **params)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval_of(out)))
    return out, all_gather_p.bind(t, **params)


def _all_gather_transpose(ct, x, axes, all_gather_dimension, axis_size, tiled, axis_index_groups):
    if type(ct) is Zero:
        return [None]
    scattered = psum_scatter_p.bind(ct, axes=axes, scatter_dimension=all_gather_dimension, axis_size=axis_size,
                                    tiled=tiled, axis_index_groups=axis_index_groups)
    return [scattered]


jvp_rules[all_gather_p] = _all_gather_jvp
transpose_rules[all_gather_p] = _all_gather_transpose


def _scattered_shape(shape, scatter_dimension, axis_size, tiled):
    if tiled:
        return shape[:scatter_dimension] + (shape[scatter_dimension] // axis_size,) + shape[scatter_dimension + 1:]
    return shape[:scatter_dimension] + shape[scatter_dimension + 1:]


def _psum_scatter_abstract_eval(x, axes, scatter_dimension, axis_size, tiled, axis_index_groups):
    if not 0 <= scatter_dimension < x.ndim:
        raise TypeError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of bounds for an operand of "
                        f"shape {x.shape}")
    size = x.shape[scatter_dimension]
    if (tiled and size % axis_size) or (not tiled and size != axis_size):
        raise TypeError(f"psum_scatter: dimension {scatter_dimension} of the operand (shape {x.shape}) must be "
                        f"{'a multiple of' if tiled else 'equal to'} the axis size {axis_size}")
    return x.update(shape=_scattered_shape(x.shape, scatter_dimension, axis_size, tiled))


psum_scatter_p = CollectivePrimitive("psum_scatter")
psum_scatter_p.def_abstract_eval(_psum_scatter_abstract_eval)


def _psum_scatter_batching(values, dims, axis, axes, scatter_dimension, axis_size, tiled, axis_index_groups):
    from .reductions import reduce_sum
    from .shapes import reshape

    (x,), (dim,) = values, dims
    if axis.name not in axes:
        inner_dim = scatter_dimension + (dim <= scatter_dimension)
        out_dim = dim if dim < inner_dim or tiled else dim - 1
        return psum_scatter_p.bind(x, axes=axes, scatter_dimension=inner_dim, axis_size=axis_size,
                                   tiled=tiled, axis_index_groups=axis_index_groups), out_dim
    _no_groups_under_vmap("psum_scatter", axis_index_groups)
    # Example e keeps block e of the sum over examples: sum over the batch, then split the scattered
    # dimension into (examples, block) and put the examples dimension in front as the new batch dim.
    x = batch_at_front(x, dim, axis.size)
    total = reduce_sum(x, (0,))
    shape = get_aval_of(total).shape
    blocks = reshape(total, shape[:scatter_dimension] + (axis.size, shape[scatter_dimension] // axis.size)
                     + shape[scatter_dimension + 1:])
    out = move_axis(blocks, scatter_dimension, 0)
    if not tiled:
        out = reshape(out, (axis.size,) + shape[:scatter_dimension] + shape[scatter_dimension + 1:])
    return out, 0


_psum_scatter_batching.needs_axis = True
batching_rules[psum_scatter_p] = _psum_scatter_batching


def _psum_scatter_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    out = psum_scatter_p.bind(x, **params)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval_of(out)))
    return out, psum_scatter_p.bind(t, **params)


def _psum_scatter_transpose(ct, x, axes, scatter_dimension, axis_size, tiled, axis_index_groups):
    if type(ct) is Zero:
        return [None]
    return [all_gather_p.bind(ct, axes=axes, all_gather_dimension=scatter_dimension, axis_size=axis_size,
                              tiled=tiled, axis_index_groups=axis_index_groups)]


jvp_rules[psum_scatter_p] = _psum_scatter_jvp
transpose_rules[psum_scatter_p] = _psum_scatter_transpose


def _single_axis(name, axis_name):
    """The axis names of a collective that takes one vmap axis, or several axes of pmaps / shard_maps (their
    devices form the groups, in the order of the names)."""
    names = _axis_names(axis_name)
    if len(names) != 1 and not all(type(axis_main(n)) is AxisFrame for n in names):
        raise NotImplementedError(f"{name} over several axes {names} is supported over the axes of pmaps and "
                                  "shard_maps only, not vmap axes; use one axis name")
    return names


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every example's `x` (a pytree), stacked along a new dimension `axis` (concatenated along `axis` when
    `tiled`), the same for every example along the named axis."""
    names = _single_axis("all_gather", axis_name)
    groups = index_groups(axis_index_groups, axis_size(names), "all_gather", equal_sizes=True)
    size = axis_size(names) if groups is None else len(groups[0])

    def gather_leaf(leaf):
        leaf = _as_array(leaf)
        ndim = get_aval_of(leaf).ndim
        limit = ndim if tiled else ndim + 1
        if tiled and ndim == 0:
            raise ValueError("all_gather with tiled=True needs operands of rank at least 1")
        if not -limit <= axis < limit:
            raise ValueError(f"all_gather: axis {axis} is out of bounds for an operand of rank {ndim}")
        return all_gather_p.bind(leaf, axes=names, all_gather_dimension=axis % limit, axis_size=size, tiled=tiled,
                                 axis_index_groups=groups)

    return _map_leaves(gather_leaf, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """The sum of `x` (a pytree) over the named axis, of which each example keeps its own slice along
    `scatter_dimension` (a block of it when `tiled`)."""
    names = _single_axis("psum_scatter", axis_name)
    groups = index_groups(axis_index_groups, axis_size(names), "psum_scatter", equal_sizes=True)
    size = axis_size(names) if groups is None else len(groups[0])

    def scatter_leaf(leaf):
        leaf = _as_array(leaf)
        ndim = get_aval_of(leaf).ndim
        if not -ndim <= scatter_dimension < ndim:
            raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of bounds for an operand "
                             f"of rank {ndim}")
        dim = scatter_dimension % ndim
        length = get_aval_of(leaf).shape[dim]
        if (tiled and length % size) or (not tiled and length != size):
            raise ValueError(f"psum_scatter: dimension {dim} of the operand (shape {get_aval_of(leaf).shape}) must "
                             f"be {'a multiple of' if tiled else 'equal to'} the size {size} of axis {names[0]!r}")
        return psum_scatter_p.bind(leaf, axes=names, scatter_dimension=dim, axis_size=size, tiled=tiled,
                                   axis_index_groups=groups)

    return _map_leaves(scatter_leaf, x)


# --- axis_index -----------------------------------------------------------------------------------------
axis_index_p = CollectivePrimitive("axis_index")
axis_index_p.def_abstract_eval(lambda axes: ShapedArray((), np.dtype(np.int32), vma=varying_typed(axes)))


def _axis_index_batching(values, dims, axis, axes):
    from .shapes import iota

    # Only one name reaches here (axis_index takes one axis name).
    return iota(np.int32, axis.size), 0


_axis_index_batching.needs_axis = True
batching_rules[axis_index_p] = _axis_index_batching


def axis_index(axis_name):
    """The position of the current example along the named axis (int32)."""
    names = _single_axis("axis_index", axis_name)
    axis_main(names[0])
    return axis_index_p.bind(axes=names)


def _all_gather_lowering(ctx, x, axes, all_gather_dimension, axis_size, tiled, axis_index_groups):
    aval_in = ctx.avals_in[0]
    if not tiled:  # a new dimension of size 1 to gather along
        shape = aval_in.shape[:all_gather_dimension] + (1,) + aval_in.shape[all_gather_dimension:]
        x = ctx.builder.op1("stablehlo.reshape", [x], tensor_type(shape, aval_in.dtype))
    attributes = {"all_gather_dim": i64_attr(all_gather_dimension),
                  **collective_attributes(ctx, axes, axis_index_groups)}
    return ctx.builder.op1("stablehlo.all_gather", [x], aval_type(ctx.aval_out), attributes)


def _psum_scatter_lowering(ctx, x, axes, scatter_dimension, axis_size, tiled, axis_index_groups):
    aval_in, aval_out = ctx.avals_in[0], ctx.aval_out
    shape = aval_in.shape[:scatter_dimension] + (aval_in.shape[scatter_dimension] // axis_size,) + \
        aval_in.shape[scatter_dimension + 1:]
    region = _reduction_region(ctx.builder, aval_in.dtype, "stablehlo.add")
    attributes = {"scatter_dimension": i64_attr(scatter_dimension),
                  **collective_attributes(ctx, axes, axis_index_groups)}
    out = ctx.builder.op1("stablehlo.reduce_scatter", [x], tensor_type(shape, aval_in.dtype), attributes, [region])
    if not tiled:
        out = ctx.builder.op1("stablehlo.reshape", [out], aval_type(aval_out))
    return out


def _axis_index_lowering(ctx, axes):
    """The device's position along the axes (the first major), from its logical id (outermost axis most
    significant)."""
    env = ctx.module.axis_env
    names, sizes = [name for name, _ in env], [size for _, size in env]
    replica_groups(env, axes)  # NameError for an axis no pmap here binds
    builder, u32 = ctx.builder, tensor_type((), np.dtype(np.uint32))
    device = builder.op1("stablehlo.partition_id", [], u32)
    index = None
    for axis in axes:
        position = names.index(axis)
        stride = int(np.prod(sizes[position + 1:], dtype=np.int64))
        quotient = builder.op1("stablehlo.divide", [device, builder.scalar(stride, np.dtype(np.uint32))], u32)
        digit = builder.op1("stablehlo.remainder", [quotient, builder.scalar(sizes[position], np.dtype(np.uint32))],
                            u32)
        if index is not None:
            scaled = builder.op1("stablehlo.multiply", [index, builder.scalar(sizes[position], np.dtype(np.uint32))],
                                 u32)
            digit = builder.op1("stablehlo.add", [scaled, digit], u32)
        index = digit
    return builder.op1("stablehlo.convert", [index], aval_type(ctx.aval_out))


register_lowering(all_gather_p, _all_gather_lowering)
register_lowering(psum_scatter_p, _psum_scatter_lowering)
register_lowering(axis_index_p, _axis_index_lowering)


# --- varying manual axes: pvary / pcast, and how staging types each application --------------------------------
def varying_typed(axes) -> frozenset:
    """Those of `axes` whose innermost binding types values by whether they vary along it."""
    frames = trace_state.axis_frames
    typed = set()
    for name in axes:
        frame = next((f for f in reversed(frames) if f.name == name), None)
        if frame is not None and frame.varying_types:
            typed.add(name)
    return frozenset(typed)


def _in_mesh_order(names):
    """`names` ordered as their axes were bound (a mesh's order), as JAX orders pvary's axes."""
    order = {frame.name: k for k, frame in enumerate(trace_state.axis_frames)}
    return tuple(sorted(names, key=lambda name: (order.get(name, len(order)), str(name))))


def _pvary_abstract_eval(x, axes):
    if x.vma & frozenset(axes):
        raise ValueError(f"pvary is an invariant->varying collective: the axis names in `axes` must not be in "
                         f"`numax.typeof(x).manual_axis_type.varying`. Got axes={axes} and "
                         f"numax.typeof(x)={x.str_short()}")
    return x.update(vma=x.vma | frozenset(axes))


pvary_p = CollectivePrimitive("pvary")
pvary_p.def_abstract_eval(_pvary_abstract_eval)
pvary_p.def_impl(lambda x, axes: x)
register_lowering(pvary_p, lambda ctx, x, axes: x)  # the same value, now typed as varying: no communication


def _pvary_transpose(ct, x, axes):
    if type(ct) is Zero:
        return [None]
    return psum_p.bind(ct, axes=axes, axis_index_groups=None)


def _pvary_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    out = pvary_p.bind(x, axes=axes)
    return out, Zero(tangent_aval(get_aval_of(out))) if type(t) is Zero else pvary_p.bind(t, axes=axes)


def _pvary_batching(values, dims, axes):
    return pvary_p.bind(values[0], axes=axes), dims[0]


jvp_rules[pvary_p] = _pvary_jvp
transpose_rules[pvary_p] = _pvary_transpose
batching_rules[pvary_p] = _pvary_batching

_PCAST_TARGETS = ("varying", "unreduced", "reduced")


def pcast(x, axis_name, *, to):
    """`x` (a pytree) with its type changed along the named mesh axes, the values unchanged: `to='varying'`
    makes a value that is the same on every device along them typed as varying (JAX's `pvary`), as an operand
    of a collective that takes varying values, or a loop carry that becomes varying, must be. Outside a
    shard_map with check_vma=True, a no-op."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"{axis_name=} must be a tuple or a str. Got {axis_name}")
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in _PCAST_TARGETS:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TARGETS)}")
    if to != "varying":
        raise NotImplementedError(f"pcast(..., to={to!r}): numax has no reduced or unreduced values")
    for name in names:
        if type(axis_main(name)) is not AxisFrame:
            raise ValueError("pvary should be called under numax.shard_map.")
    typed = varying_typed(names)

    def cast(leaf):
        leaf = _as_array(leaf)
        aval = get_aval_of(leaf)
        states = {"varying" if name in aval.vma else "invarying" for name in names}
        if len(states) > 1:
            raise ValueError(f"numax.lax.pcast can only accept axis_name which corresponds to one of varying, "
                             f"unreduced, reduced or invarying state of the input. Got input type: "
                             f"{aval.str_short()}, axes: {names} and input state: {states}")
        if states == {"varying"}:
            raise ValueError(f"Unsupported pcast from=varying, {to=}")
        return pvary_p.bind(leaf, axes=_in_mesh_order(typed)) if typed else leaf

    return _map_leaves(cast, x)


def pvary(x, axis_name):
    """`pcast(x, axis_name, to='varying')` (JAX removed this spelling in 0.10; kept for code written before)."""
    return pcast(x, axis_name, to="varying")


# Collectives typed by their own abstract evaluation; those in _VARYING_OPERANDS take operands that vary over
# their axes (an invariant one is pvary'd first, as in JAX: psum of an invariant x is the axis size times x).
_SELF_TYPED = {pvary_p, axis_index_p}
_VARYING_OPERANDS = {psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p}


def register_varying_collective(primitive):
    """Declares a collective over `params['axes']` that takes varying operands and types its own results."""
    _VARYING_OPERANDS.add(primitive)


def _vary(trace, tracer, axes):
    return trace.process_primitive(pvary_p, [tracer], {"axes": _in_mesh_order(axes)}) if axes else tracer


def _type_by_varying_axes(trace, primitive, tracers, params):
    """staging.vma_rule: the operands of a primitive staged in `trace`, with pvarys that make them vary over
    the same axes, and the axes its results vary over (None where its abstract evaluation says: collectives,
    and primitives holding programs, whose results are typed by those programs)."""
    if primitive in _VARYING_OPERANDS:
        typed = varying_typed(params["axes"])
        return ([_vary(trace, t, typed - t.aval.vma) for t in tracers] if typed else tracers), None
    vmas = [t.aval.vma for t in tracers]
    if not any(vmas) or primitive in _SELF_TYPED or any(programs_in(value) for value in params.values()):
        return tracers, None
    everything = frozenset().union(*vmas)
    return [_vary(trace, t, everything - vma) for t, vma in zip(tracers, vmas)], everything
