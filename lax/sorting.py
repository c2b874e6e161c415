"""Sorting primitives: multi-operand stable `sort` (and `sort_key_val` over it) and `top_k`.

Floating keys sort in JAX's order: -inf < ... < -0.0 == 0.0 < ... < inf < NaN (every NaN, whatever
its sign or payload, is equal to the others and last). Complex keys sort by real part, then imaginary.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, canonical_shape
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, tensor_type
from . import typing as T

__all__ = ["sort", "sort_key_val", "top_k", "sort_p", "top_k_p"]

_int_of_width = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


# --- the comparator ------------------------------------------------------------------------------------
def _compare(builder, a, b, direction, compare_type):
    return builder.op1("stablehlo.compare", [a, b], tensor_type((), dtypes.bool_), {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {compare_type}>"})


def _float_order_key(builder, x, dtype, canonicalize=True):
    """A signed integer whose order is a total order of the float scalar `x`.

    The bits are read as a signed integer; negative floats have their magnitude bits flipped, which
    makes integer order agree with float order across the whole line (-NaN < -inf < -0.0 < 0.0 < inf <
    NaN). With `canonicalize` (sort's order), -0.0 first becomes 0.0 and every NaN the canonical
    positive NaN, so that they compare equal and NaNs go last.
    """
    if dtype == dtypes.bfloat16:
        # As jax does: bfloat16 keys go to float32 first (exact, NaN signs kept). XLA's GPU backend otherwise
        # turns a comparator bitcasting bfloat16 into a float32 one that drops NaN signs (-NaN sorted as NaN).
        x = builder.op1("stablehlo.convert", [x], tensor_type((), dtypes.float32))
        dtype = dtypes.float32
    scalar = tensor_type((), dtype)
    int_dtype = _int_of_width[dtype.itemsize]
    int_scalar = tensor_type((), int_dtype)
    if canonicalize:
        zero = builder.constant(np.zeros((), dtype))
        nan = builder.constant(np.array(np.nan, dtype))
        x = builder.op1("stablehlo.select", [_compare(builder, x, zero, "EQ", "FLOAT"), zero, x], scalar)
        x = builder.op1("stablehlo.select", [_compare(builder, x, x, "NE", "FLOAT"), nan, x], scalar)
    bits = builder.op1("stablehlo.bitcast_convert", [x], int_scalar)
    width = builder.constant(np.array(8 * dtype.itemsize - 1, int_dtype))
    sign_mask = builder.op1("stablehlo.shift_right_arithmetic", [bits, width], int_scalar)  # 0 or all ones
    magnitude_mask = builder.constant(np.array(np.iinfo(int_dtype).max, int_dtype))
    flip = builder.op1("stablehlo.and", [sign_mask, magnitude_mask], int_scalar)
    return builder.op1("stablehlo.xor", [bits, flip], int_scalar)


def _scalar_keys(builder, x, dtype, canonicalize=True):
    """The scalars that `x` sorts by, lexicographically, each with its comparison type."""
    if dtypes.is_complex(dtype):
        part = T.complex_to_real(dtype)
        re = builder.op1("stablehlo.real", [x], tensor_type((), part))
        im = builder.op1("stablehlo.imag", [x], tensor_type((), part))
        return [(_float_order_key(builder, re, part), "SIGNED"), (_float_order_key(builder, im, part), "SIGNED")]
    if dtypes.is_float(dtype):
        return [(_float_order_key(builder, x, dtype, canonicalize), "SIGNED")]
    if dtype == dtypes.bool_ or dtypes.is_unsigned(dtype):
        return [(x, "UNSIGNED")]
    return [(x, "SIGNED")]


def _lexicographic_less(builder, pairs):
    """`a < b` in lexicographic order of (a_key, b_key, compare_type) triples."""
    pred = tensor_type((), dtypes.bool_)
    result = None
    for a, b, kind in reversed(pairs):
        less = _compare(builder, a, b, "LT", kind)
        if result is None:
            result = less
        else:
            equal = _compare(builder, a, b, "EQ", kind)
            result = builder.op1("stablehlo.or", [less, builder.op1("stablehlo.and", [equal, result], pred)], pred)
    return result


def sort_comparator(builder, key_dtypes, operand_dtypes):
    """The comparator region of a stablehlo.sort whose first len(key_dtypes) operands are keys."""
    arg_types = []
    for dtype in operand_dtypes:
        arg_types += [tensor_type((), dtype)] * 2

    def body(inner, args):
        pairs = []
        for i, dtype in enumerate(key_dtypes):
            lhs = _scalar_keys(inner, args[2 * i], dtype)
            rhs = _scalar_keys(inner, args[2 * i + 1], dtype)
            pairs += [(a, b, kind) for (a, kind), (b, _) in zip(lhs, rhs)]
        return [_lexicographic_less(inner, pairs)]

    return builder.region(arg_types, body)


# --- sort -------------------------------------------------------------------------------------------------
sort_p = Primitive("sort", multiple_results=True)


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort needs at least one operand")
    shape = operands[0].shape
    if any(op.shape != shape for op in operands[1:]):
        raise TypeError(f"sort operands must all have the same shape, got {T.describe(operands)}")
    if not 0 <= dimension < len(shape):
        raise TypeError(f"sort dimension {dimension} is out of range for operands of rank {len(shape)}")
    if not 1 <= num_keys <= len(operands):
        raise TypeError(f"sort num_keys={num_keys} must be between 1 and the number of operands ({len(operands)})")
    return list(operands)


def _lower_sort(ctx, *operands, dimension, is_stable, num_keys):
    builder = ctx.builder
    operand_dtypes = [a.dtype for a in ctx.avals_in]
    region = sort_comparator(builder, operand_dtypes[:num_keys], operand_dtypes)
    return builder.op("stablehlo.sort", list(operands), [aval_type(a) for a in ctx.avals_out], {
        "dimension": f"{dimension} : i64", "is_stable": "true" if is_stable else "false"}, [region])


sort_p.def_abstract_eval(_sort_abstract_eval)
register_lowering(sort_p, _lower_sort)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sorts along `dimension`. Given a sequence of operands, sorts them all by the first `num_keys`
    (lexicographically) and returns a tuple."""
    if isinstance(operand, (list, tuple)):
        operands = tuple(operand)
        if not operands:
            raise TypeError("sort of an empty sequence of operands")
        rank = get_aval_of(operands[0]).ndim
        dimension = T.normalize_axis(dimension, rank, "sort dimension")
        return tuple(sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable), num_keys=int(num_keys)))
    if int(num_keys) != 1:
        raise ValueError(f"sort of a single operand takes num_keys=1, got {num_keys}")
    rank = get_aval_of(operand).ndim
    if rank == 0:
        raise TypeError("sort of a 0-d operand: there is no dimension to sort along")
    dimension = T.normalize_axis(dimension, rank, "sort dimension")
    (result,) = sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable), num_keys=1)
    return result


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sorts `keys` along `dimension` and applies the same permutation to `values`."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


# --- top_k ------------------------------------------------------------------------------------------------
top_k_p = Primitive("top_k", multiple_results=True)


def _top_k_abstract_eval(operand, k):
    if operand.ndim == 0:
        raise TypeError("top_k needs an operand of rank at least 1, got a 0-d operand")
    if not 0 <= k <= operand.shape[-1]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of the last axis ({operand.shape[-1]})")
    if dtypes.is_complex(operand.dtype):
        raise TypeError("top_k does not accept complex operands (they have no order)")
    shape = operand.shape[:-1] + (k,)
    return [ShapedArray(shape, operand.dtype, operand.weak_type), ShapedArray(shape, dtypes.int32)]


def _lower_top_k(ctx, operand, k):
    # A stable descending sort of (values, indices), then the first k columns. Like JAX's top_k (and
    # unlike its sort) the order is the raw total order: NaN > inf > 0.0 > -0.0 > -inf > -NaN.
    builder = ctx.builder
    aval = ctx.avals_in[0]
    axis = aval.ndim - 1
    index_type = tensor_type(aval.shape, dtypes.int32)
    indices = dynamic_shapes.iota(builder, aval.shape, dtypes.int32, axis)
    arg_types = [tensor_type((), aval.dtype)] * 2 + [tensor_type((), dtypes.int32)] * 2

    def body(inner, args):
        lhs = _scalar_keys(inner, args[0], aval.dtype, canonicalize=False)
        rhs = _scalar_keys(inner, args[1], aval.dtype, canonicalize=False)
        return [_lexicographic_less(inner, [(b, a, kind) for (a, kind), (b, _) in zip(lhs, rhs)])]

    region = builder.region(arg_types, body)
    values, order = builder.op("stablehlo.sort", [operand, indices], [aval_type(aval), index_type], {
        "dimension": f"{axis} : i64", "is_stable": "true"}, [region])
    starts, limits, strides = (0,) * aval.ndim, aval.shape[:-1] + (k,), (1,) * aval.ndim
    return [dynamic_shapes.slice(builder, result, starts, limits, strides, aval_type(result_aval))
            for result, result_aval in zip((values, order), ctx.avals_out)]


top_k_p.def_abstract_eval(_top_k_abstract_eval)
register_lowering(top_k_p, _lower_top_k)


def top_k(operand, k, *, axis=-1):
    """The `k` largest entries along `axis` (descending, ties in index order) and their int32 indices. `k` may
    be a symbolic dimension (in a shape-polymorphic export, say `x.shape[0]` of another argument)."""
    from .shapes import transpose

    k, = canonical_shape((k,))
    rank = get_aval_of(operand).ndim
    if rank == 0:
        raise TypeError("top_k needs an operand of rank at least 1, got a 0-d operand")
    axis = T.normalize_axis(axis, rank)
    if axis == rank - 1:
        return top_k_p.bind(operand, k=k)
    permutation = tuple(d for d in range(rank) if d != axis) + (axis,)
    inverse = tuple(int(i) for i in np.argsort(permutation))
    values, indices = top_k_p.bind(transpose(operand, permutation), k=k)
    return [transpose(values, inverse), transpose(indices, inverse)]


# --- differentiation rules -------------------------------------------------------------------------------------
# As in JAX, sort and top_k differentiate through the permutation they apply: the tangents are read at the
# positions the outputs came from (a gather), so ties follow the order the sort chose.
from ..core.ad_util import Zero, tangent_aval  # noqa: E402
from ..core.primitives import jvp_rules  # noqa: E402


def take_along_axis(operand, indices, axis):
    """operand[..., indices, ...] along `axis`: `indices` has the operand's rank and, except along `axis`,
    its shape; every other dimension is matched position by position."""
    from .gather_scatter import GatherDimensionNumbers, GatherScatterMode, gather
    from .shapes import broadcasted_iota, concatenate, reshape

    shape = get_aval_of(indices).shape
    rank = len(shape)
    index_dtype = get_aval_of(indices).dtype
    columns = [reshape(indices, shape + (1,)) if d == axis else broadcasted_iota(index_dtype, shape + (1,), d)
               for d in range(rank)]
    numbers = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(rank)),
                                     start_index_map=tuple(range(rank)))
    return gather(operand, concatenate(columns, rank), numbers, (1,) * rank, mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    from .shapes import broadcasted_iota

    shape = get_aval_of(primals[0]).shape
    positions = broadcasted_iota(dtypes.int32, shape, dimension)
    *outs, permutation = sort_p.bind(*primals, positions, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    empty = 0 in shape
    tangents_out = [t if type(t) is Zero or empty else take_along_axis(t, permutation, dimension) for t in tangents]
    return outs, tangents_out


def _top_k_jvp(primals, tangents, k):
    (operand,), (tangent,) = primals, tangents
    values, indices = top_k_p.bind(operand, k=k)
    index_tangent = Zero(tangent_aval(get_aval_of(indices)))
    if type(tangent) is Zero or 0 in get_aval_of(values).shape:
        return [values, indices], [Zero(tangent_aval(get_aval_of(values))), index_tangent]
    return [values, indices], [take_along_axis(tangent, indices, get_aval_of(indices).ndim - 1), index_tangent]


jvp_rules[sort_p] = _sort_jvp
jvp_rules[top_k_p] = _top_k_jvp


# --- batching rules -----------------------------------------------------------------------------------------------
from ..core.primitives import batching_rules  # noqa: E402
from .batching import axis_size_of, batch_at, move_axis  # noqa: E402


def _sort_batching(values, dims, dimension, is_stable, num_keys):
    """One sort of all operands with the batch dimension where the batched operands have it (first when they
    disagree); unbatched operands are broadcast there, since sort needs operands of one shape."""
    batched = {d for d in dims if d is not None}
    out_dim = batched.pop() if len(batched) == 1 else 0
    size = axis_size_of(values, dims)
    operands = [batch_at(v, d, size, out_dim) if d is None else move_axis(v, d, out_dim) for v, d in zip(values, dims)]
    dimension = dimension + (dimension >= out_dim)
    outs = sort_p.bind(*operands, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    return outs, [out_dim] * len(outs)


def _top_k_batching(values, dims, k):
    """top_k works on the last dimension: a batch dimension there moves to the front."""
    (operand,), (dim,) = values, dims
    if dim == get_aval_of(operand).ndim - 1:
        operand, dim = move_axis(operand, dim, 0), 0
    return top_k_p.bind(operand, k=k), [dim, dim]


batching_rules[sort_p] = _sort_batching
batching_rules[top_k_p] = _top_k_batching

# stablehlo.sort accepts dynamic types as they are; top_k's iota and slices take the dynamic forms.
dynamic_shapes.polymorphic_primitives.update((sort_p, top_k_p))
