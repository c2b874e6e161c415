"""Small jax.lax functions written over the primitives (`mulhi`, `batch_matmul`, `split`, `stack`,
`tile`, `index_take`, `approx_max_k`, `conv_general_dilated_patches`, ...), JAX's type names for
dimension numbers, and the `optimization_barrier` primitive.

Where JAX has a primitive of its own for one of these (`split_p`, `tile_p`, `mulhi_p`), numax writes the
function with existing primitives instead: the results, and their derivatives and batching, are the same.
"""

import builtins
import math
from collections.abc import Sequence

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from . import typing as T
from .conversions import bitcast_convert_type
from .convolution import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated
from .elementwise import add, bitwise_and, integer_pow, lt, mul, neg, rem, select, shift_right_logical, sub
from .gather_scatter import GatherDimensionNumbers, gather, scatter_add
from .linear import Precision, dot_general
from .shapes import as_array, broadcast_in_dim, concatenate, full, reshape, rev, transpose
from .slicing import index_in_dim, slice_in_dim
from .sorting import sort, top_k

__all__ = ["DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike", "approx_max_k",
           "approx_min_k", "batch_matmul", "broadcast_shapes", "collapse", "conv_general_dilated_local",
           "conv_general_dilated_patches", "dtype", "empty", "index_take", "mulhi",
           "optimization_barrier", "optimization_barrier_p", "reciprocal",
           "scatter_sub", "split", "stack", "tile", "unstack"]

# JAX's type names, for annotations.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None
PrecisionLike = None | str | Precision | tuple[str, str] | tuple[Precision, Precision]


def dtype(x):
    """The canonical dtype of a value or dtype specifier (int64 becomes int32 unless x64 is on)."""
    return dtypes.dtype(x)


# --- arithmetic -----------------------------------------------------------------------------------------------
def reciprocal(x):
    """1 / x, elementwise (`integer_pow(x, -1)`)."""
    return integer_pow(x, -1)


def mulhi(x, y, /):
    """The high half of the bits of the full product x * y of two integers of one dtype (signed or not)."""
    x, y = as_array(x), as_array(y)
    for position, value in enumerate((x, y)):
        value_dtype = get_aval_of(value).dtype
        if value_dtype.kind not in "iu":
            raise TypeError(f"mulhi does not accept dtype {value_dtype} at position {position}. Accepted dtypes at "
                            f"position {position} are subtypes of integer.")
    x_dtype, y_dtype = get_aval_of(x).dtype, get_aval_of(y).dtype
    if x_dtype != y_dtype:
        raise TypeError(f"lax.mulhi requires arguments to have the same dtypes, got {x_dtype}, {y_dtype}.")
    # Schoolbook multiplication on half-width digits, all in the unsigned type of the same width, so that
    # no wider type is needed (64-bit integers included).
    width = x_dtype.itemsize * 8
    half = width // 2
    unsigned = np.dtype(f"uint{width}")
    ux = x if x_dtype == unsigned else bitcast_convert_type(x, unsigned)
    uy = y if y_dtype == unsigned else bitcast_convert_type(y, unsigned)
    mask = np.array((1 << half) - 1, unsigned)
    shift = np.array(half, unsigned)

    def low(v):
        return bitwise_and(v, mask)

    def high(v):
        return shift_right_logical(v, shift)

    x_lo, x_hi, y_lo, y_hi = low(ux), high(ux), low(uy), high(uy)
    lo_lo, lo_hi, hi_lo = mul(x_lo, y_lo), mul(x_lo, y_hi), mul(x_hi, y_lo)
    carry = high(add(add(high(lo_lo), low(lo_hi)), low(hi_lo)))
    result = add(add(add(mul(x_hi, y_hi), high(lo_hi)), high(hi_lo)), carry)
    if x_dtype.kind == "i":
        # The signed product differs from the unsigned one of the same bits by y * 2^w where x < 0 (and x * 2^w
        # where y < 0), which leaves the high half less y (and x).
        zero, unsigned_zero = np.zeros((), x_dtype), np.zeros((), unsigned)
        result = sub(result, select(lt(x, zero), uy, _full_like(uy, unsigned_zero)))
        result = sub(result, select(lt(y, zero), ux, _full_like(ux, unsigned_zero)))
        result = bitcast_convert_type(result, x_dtype)
    return result


def _full_like(x, value):
    aval = get_aval_of(x)
    return full(aval.shape, value, aval.dtype)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product of arrays of equal rank >= 2: the leading dimensions are batch dimensions."""
    lhs_ndim, rhs_ndim = get_aval_of(lhs).ndim, get_aval_of(rhs).ndim
    if builtins.min(lhs_ndim, rhs_ndim) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lhs_ndim}, {rhs_ndim}")
    if lhs_ndim != rhs_ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lhs_ndim}, {rhs_ndim}")
    batch = tuple(range(lhs_ndim - 2))
    return dot_general(lhs, rhs, (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)), precision=precision)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    """Subtracts `updates` from `operand` at the indices; repeated indices subtract each of their updates."""
    return scatter_add(operand, scatter_indices, neg(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


# --- shapes ---------------------------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """The shape that NumPy broadcasting of `shapes` gives (ranks aligned on the right)."""
    shapes = [tuple(int(d) for d in shape) for shape in shapes]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def collapse(operand, start_dimension, stop_dimension=None):
    """`operand` with its dimensions [start_dimension, stop_dimension) merged into one."""
    shape = get_aval_of(operand).shape
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {shape}[{start_dimension}:{stop_dimension}]")
    return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose contents the caller overwrites (zeros, as in JAX)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return full(shape, np.zeros((), dtypes.canonicalize_dtype(dtype)), dtypes.canonicalize_dtype(dtype))


def split(operand, sizes, axis=0):
    """`operand` cut along `axis` into consecutive pieces of the given `sizes` (which sum to its length)."""
    operand = as_array(operand)
    shape = get_aval_of(operand).shape
    axis = T.normalize_axis(axis, len(shape))
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
    if sum(sizes) != shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
                         f"{list(shape)}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(slice_in_dim(operand, start, start + size, axis=axis))
        start += size
    return pieces


def stack(operands, axis=0):
    """The arrays of one shape stacked along a new dimension `axis`."""
    operands = [as_array(x) for x in operands]
    shapes = [get_aval_of(x).shape for x in operands]
    if not operands:
        raise ValueError("stack requires at least one array")
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"All input arrays must have the same shape. Got {', '.join(str(s) for s in shapes)}.")
    axis = T.normalize_axis(axis, len(shapes[0]) + 1)
    new_shape = shapes[0][:axis] + (1,) + shapes[0][axis:]
    return concatenate([reshape(x, new_shape) for x in operands], axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple of arrays of one dimension less."""
    x = as_array(x)
    shape = get_aval_of(x).shape
    axis = T.normalize_axis(axis, len(shape))
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


def tile(operand, reps):
    """`operand` repeated `reps[i]` times along each dimension i (`len(reps)` must equal its rank)."""
    operand = as_array(operand)
    shape = get_aval_of(operand).shape
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape):
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
                        f"x.ndim={len(shape)}.")
    interleaved = tuple(d for pair in zip(reps, shape) for d in pair)
    spread = broadcast_in_dim(operand, interleaved, tuple(range(1, 2 * len(shape), 2)))
    return reshape(spread, tuple(r * d for r, d in zip(reps, shape)))


def index_take(src, idxs, axes):
    """`src` indexed by the integer arrays `idxs` (one per axis in `axes`, all of one length n), the indices
    wrapping modulo the axis sizes: the result has n leading entries, then src's other dimensions."""
    src = as_array(src)
    src_shape = get_aval_of(src).shape
    axes = tuple(int(a) for a in axes)
    columns = [reshape(as_array(i), (get_aval_of(i).shape[0], 1)) for i in idxs]
    indices = concatenate(columns, 1) if len(columns) > 1 else columns[0]
    index_dtype = get_aval_of(indices).dtype
    count = get_aval_of(indices).shape[0]
    sizes = broadcast_in_dim(np.array([src_shape[a] for a in axes], index_dtype), (count, len(axes)), (1,))
    indices = rem(add(rem(indices, sizes), sizes), sizes)  # Python's modulo: negative indices wrap too
    slice_sizes = tuple(1 if d in axes else size for d, size in enumerate(src_shape))
    numbers = GatherDimensionNumbers(offset_dims=tuple(range(1, len(src_shape) - len(axes) + 1)),
                                     collapsed_slice_dims=axes, start_index_map=axes)
    return gather(src, indices, numbers, slice_sizes)


# --- top k ----------------------------------------------------------------------------------------------------
def _approx_k(operand, k, reduction_dimension, largest):
    operand = as_array(operand)
    shape = get_aval_of(operand).shape
    dimension = T.normalize_axis(reduction_dimension, len(shape))
    if not dtypes.is_inexact(get_aval_of(operand).dtype):
        raise ValueError("operand must be a floating type")
    if not 0 <= k <= shape[dimension]:
        raise ValueError(f"k must be in [0, {shape[dimension]}] (the size of the reduction dimension), got {k}")
    if k == 1:
        # XLA's exact fallback finds a single extreme by a reduction that keeps the last of tied entries.
        values, positions = _sorted_k(rev(operand, (dimension,)), 1, dimension, largest)
        return [values, sub(_full_like(positions, np.int32(shape[dimension] - 1)), positions)]
    return _sorted_k(operand, k, dimension, largest)


def _sorted_k(operand, k, dimension, largest):
    """The first k entries of a stable sort along `dimension` (descending when `largest`): ties in index order."""
    shape = get_aval_of(operand).shape
    if largest:
        return list(top_k(operand, k, axis=dimension))
    # Ascending, stable: ties keep index order, as XLA's exact fallback on CPU does.
    indices = broadcast_in_dim(np.arange(shape[dimension], dtype=np.int32), shape, (dimension,))
    values, positions = sort((operand, indices), dimension=dimension, is_stable=True, num_keys=1)
    return [slice_in_dim(values, 0, k, axis=dimension), slice_in_dim(positions, 0, k, axis=dimension)]


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The `k` largest values along `reduction_dimension` and their int32 indices. numax computes them exactly
    (XLA's fallback off TPU does too), so `recall_target` and the other tuning arguments change nothing."""
    return _approx_k(operand, k, reduction_dimension, largest=True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The `k` smallest values along `reduction_dimension` and their int32 indices (computed exactly)."""
    return _approx_k(operand, k, reduction_dimension, largest=False)


# --- convolution patches --------------------------------------------------------------------------------------
def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """The patches a convolution with a filter of spatial shape `filter_shape` reads: the output has, in its
    feature dimension, C * prod(filter_shape) entries ordered channel-major (entry c * prod + s is channel c at
    flattened filter position s). Computed as a grouped convolution with an identity filter, as in JAX."""
    lhs = as_array(lhs)
    lhs_aval = get_aval_of(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    numbers = conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape, dimension_numbers)
    spatial_size = math.prod(filter_shape)
    channels = lhs_aval.shape[numbers.lhs_spec[1]]
    # Filter in (out feature, in feature, spatial...) order: output feature c * S + s reads channel c (through
    # feature grouping) at spatial position s.
    identity = np.eye(spatial_size, dtype=lhs_aval.dtype)
    logical = np.broadcast_to(identity, (channels, spatial_size, spatial_size))
    logical = logical.reshape((channels * spatial_size, 1) + filter_shape)
    rhs = np.transpose(logical, np.argsort(numbers.rhs_spec))
    if precision is not None and not isinstance(precision, tuple):
        precision = (precision, Precision.DEFAULT)
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, numbers,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None, rhs_dilation=None,
                               dimension_numbers=None, precision=None):
    """A locally connected (unshared) convolution: each output position has its own filter. `rhs` is laid out as
    a convolution filter (`dimension_numbers`' rhs spec) whose input-feature dimension holds C * prod(filter_shape)
    entries ordered as `conv_general_dilated_patches` orders them, and whose spatial dimensions are the output's.
    `precision`: None, or a pair (that of the patches, that of the contraction), as in jax."""
    lhs = as_array(lhs)
    if precision is None or (isinstance(precision, tuple) and len(precision) == 2):
        patches_precision = None if precision is None else precision[0]
    elif isinstance(precision, (Precision, str)):
        patches_precision, precision = precision, (precision, precision)
    else:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                           dimension_numbers, precision=patches_precision)
    numbers = conv_dimension_numbers(get_aval_of(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    out_spec, rhs_spec = numbers.out_spec, numbers.rhs_spec
    # Contract the patch features with the filter's input features, position by position: the spatial dimensions
    # are batch dimensions of the product, taken in the order they have in the output.
    spatial = sorted(range(len(out_spec) - 2), key=lambda i: out_spec[2 + i])
    out = dot_general(patches, rhs, (([out_spec[1]], [rhs_spec[1]]),
                                     ([out_spec[2 + i] for i in spatial], [rhs_spec[2 + i] for i in spatial])),
                      precision=precision)
    # `out` is (spatial in output order..., batch, features): put batch and features where the output has them.
    rank = len(out_spec)
    order, source = [0] * rank, iter(range(rank - 2))
    for position in range(rank):
        order[position] = (rank - 2 if position == out_spec[0] else rank - 1 if position == out_spec[1]
                           else next(source))
    return transpose(out, tuple(order))


# --- optimization_barrier -------------------------------------------------------------------------------------
optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def _barrier_lowering(ctx, *values):
    if not values:
        return []
    return ctx.builder.op("stablehlo.optimization_barrier", list(values), [aval_type(a) for a in ctx.avals_in])


register_lowering(optimization_barrier_p, _barrier_lowering)


def _barrier_jvp(primals, tangents):
    # The tangents get a barrier of their own: the primal outputs must not depend on them (linearize splits
    # the two), and the tangent barrier is linear, so reverse mode transposes it into a barrier again.
    outs = optimization_barrier_p.bind(*primals)
    given = [t for t in tangents if type(t) is not Zero]
    barred = iter(optimization_barrier_p.bind(*given))
    return outs, [next(barred) if type(t) is not Zero else t for t in tangents]


def _barrier_transpose(cts, *operands):
    given = [ct for ct in cts if type(ct) is not Zero]
    barred = iter(optimization_barrier_p.bind(*given))
    return [next(barred) if type(ct) is not Zero else ct for ct in cts]


jvp_rules[optimization_barrier_p] = _barrier_jvp
transpose_rules[optimization_barrier_p] = _barrier_transpose
batching_rules[optimization_barrier_p] = lambda values, dims: (optimization_barrier_p.bind(*values), list(dims))


def optimization_barrier(operand, /):
    """`operand` (a pytree of arrays) unchanged, but XLA may not move computations across this point: nothing
    computed from the outputs is scheduled before all the inputs are computed, and no value is shared (CSE)
    across it."""
    leaves, treedef = tree.tree_flatten(operand)
    leaves = [as_array(leaf) for leaf in leaves]
    return treedef.unflatten(optimization_barrier_p.bind(*leaves))
