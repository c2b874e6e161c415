"""Reductions over axes: reduce_sum/prod/max/min/and/or/xor, argmax and argmin."""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array, tensor_type
from . import typing as T
from .shapes import as_array


def reduced_shape(name, x, axes):
    if any(not 0 <= a < x.ndim for a in axes):
        raise TypeError(f"{name}: invalid axes {axes} for an operand of shape {x.shape}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in axes {axes} (operand of shape {x.shape})")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def identity_of(kind, dtype):
    """The identity element of a monoid reduction for `dtype`."""
    if kind == "sum" or kind == "or" or kind == "xor":
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        # All bits set: True for bool, -1 for signed and the maximum for unsigned integers.
        return np.array(True) if dtype == dtypes.bool_ else np.array(-1).astype(dtype)
    if kind == "max":
        if dtypes.is_inexact(dtype):
            return np.array(-np.inf, dtype)
        return np.array(False) if dtype == dtypes.bool_ else np.array(np.iinfo(dtype).min, dtype)
    if kind == "min":
        if dtypes.is_inexact(dtype):
            return np.array(np.inf, dtype)
        return np.array(True) if dtype == dtypes.bool_ else np.array(np.iinfo(dtype).max, dtype)
    raise ValueError(kind)


def lower_monoid_reduce(ctx, operand, axes, kind, op_name):
    """A `stablehlo.reduce` of one operand with a binary op and its identity."""
    builder = ctx.builder
    dtype = ctx.avals_in[0].dtype
    init = builder.constant(identity_of(kind, dtype))
    scalar = tensor_type((), dtype)

    def body(inner, args):
        if kind in ("max", "min") and dtypes.is_complex(dtype):
            return [lexicographic_pick(inner, args, "GT" if kind == "max" else "LT", dtype)]
        return [inner.op1(op_name, args, scalar)]

    region = builder.region([scalar, scalar], body)
    return builder.op1("stablehlo.reduce", [operand, init], aval_type(ctx.aval_out),
                       {"dimensions": i64_array(axes)}, [region])


def lexicographic_pick(builder, args, direction, dtype):
    """Of two complex scalars, the one that compares `direction` by (real, imag), as JAX orders them."""
    a, b = args
    part, pred = tensor_type((), T.complex_to_real(dtype)), tensor_type((), dtypes.bool_)

    def compare(x, y, how):
        return builder.op1("stablehlo.compare", [x, y], pred, {
            "comparison_direction": f"#stablehlo<comparison_direction {how}>",
            "compare_type": "#stablehlo<comparison_type FLOAT>"})

    a_re, b_re = (builder.op1("stablehlo.real", [v], part) for v in (a, b))
    a_im, b_im = (builder.op1("stablehlo.imag", [v], part) for v in (a, b))
    pick_a = builder.op1("stablehlo.select", [compare(a_re, b_re, "EQ"), compare(a_im, b_im, direction),
                                              compare(a_re, b_re, direction)], pred)
    return builder.op1("stablehlo.select", [pick_a, a, b], tensor_type((), dtype))


def _define_reduction(name, kind, op_name, allowed):
    primitive = Primitive(name)

    def abstract_eval(x, axes):
        T.check_dtype(name, x, allowed)
        return ShapedArray(reduced_shape(name, x, axes), x.dtype, x.weak_type)

    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lambda ctx, x, axes: lower_monoid_reduce(ctx, x, axes, kind, op_name))
    dynamic_shapes.polymorphic_primitives.add(primitive)

    def wrapper(operand, axes):
        aval = get_aval_of(operand)
        axes = tuple(sorted(T.normalize_axis(a, aval.ndim) for a in axes))
        if not axes:
            T.check_dtype(name, aval, allowed)
            return as_array(operand)
        return primitive.bind(operand, axes=axes)

    wrapper.__name__ = name
    wrapper.__doc__ = f"Reduces `operand` over `axes` with {kind}."
    return primitive, wrapper


reduce_sum_p, reduce_sum = _define_reduction("reduce_sum", "sum", "stablehlo.add", T.numeric_dtypes)
reduce_prod_p, reduce_prod = _define_reduction("reduce_prod", "prod", "stablehlo.multiply", T.numeric_dtypes)
reduce_max_p, reduce_max = _define_reduction("reduce_max", "max", "stablehlo.maximum", T.any_dtype)
reduce_min_p, reduce_min = _define_reduction("reduce_min", "min", "stablehlo.minimum", T.any_dtype)
reduce_and_p, reduce_and = _define_reduction("reduce_and", "and", "stablehlo.and", T.bool_or_integer)
reduce_or_p, reduce_or = _define_reduction("reduce_or", "or", "stablehlo.or", T.bool_or_integer)
reduce_xor_p, reduce_xor = _define_reduction("reduce_xor", "xor", "stablehlo.xor", T.bool_or_integer)


# --- argmax / argmin ----------------------------------------------------------------------------------
def _define_arg_reduction(name, direction):
    primitive = Primitive(name)

    def abstract_eval(x, axes, index_dtype):
        T.check_dtype(name, x, T.ordered_dtypes)
        if not dtypes.is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype.name}")
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got {axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name} of an empty axis (shape {x.shape}, axis {axes[0]}) has no answer")
        return ShapedArray(reduced_shape(name, x, axes), index_dtype)

    def lower(ctx, x, axes, index_dtype):
        # A variadic reduce over (value, index) pairs: the extreme value wins, NaN beats everything
        # (as in numpy), and ties go to the lower index.
        builder = ctx.builder
        aval = ctx.avals_in[0]
        axis = axes[0]
        indices = dynamic_shapes.iota(builder, aval.shape, index_dtype, axis)
        value_init = builder.constant(identity_of("max" if direction == "GT" else "min", aval.dtype))
        index_init = builder.constant(np.zeros((), index_dtype))
        value_scalar, index_scalar = tensor_type((), aval.dtype), tensor_type((), index_dtype)
        pred = tensor_type((), dtypes.bool_)
        float_like = dtypes.is_inexact(aval.dtype)
        compare_type = "FLOAT" if float_like else ("UNSIGNED" if aval.dtype in dtypes.unsigned_integers
                                                   or aval.dtype == dtypes.bool_ else "SIGNED")

        def compare(inner, a, b, how, kind=compare_type):
            return inner.op1("stablehlo.compare", [a, b], pred, {
                "comparison_direction": f"#stablehlo<comparison_direction {how}>",
                "compare_type": f"#stablehlo<comparison_type {kind}>"})

        def body(inner, args):
            a_value, a_index, b_value, b_index = args
            better = compare(inner, a_value, b_value, direction)
            equal = compare(inner, a_value, b_value, "EQ")
            if float_like:
                a_nan = compare(inner, a_value, a_value, "NE")
                b_nan = compare(inner, b_value, b_value, "NE")
                b_not_nan = inner.op1("stablehlo.not", [b_nan], pred)
                better = inner.op1("stablehlo.or", [better, inner.op1("stablehlo.and", [a_nan, b_not_nan], pred)], pred)
                equal = inner.op1("stablehlo.or", [equal, inner.op1("stablehlo.and", [a_nan, b_nan], pred)], pred)
            index_kind = "UNSIGNED" if dtypes.is_unsigned(index_dtype) else "SIGNED"
            lower_index = compare(inner, a_index, b_index, "LT", index_kind)
            take_a = inner.op1("stablehlo.or", [better, inner.op1("stablehlo.and", [equal, lower_index], pred)], pred)
            return [inner.op1("stablehlo.select", [take_a, a_value, b_value], value_scalar),
                    inner.op1("stablehlo.select", [take_a, a_index, b_index], index_scalar)]

        region = builder.region([value_scalar, index_scalar, value_scalar, index_scalar], body)
        out_shape = ctx.aval_out.shape
        results = builder.op("stablehlo.reduce", [x, indices, value_init, index_init],
                             [tensor_type(out_shape, aval.dtype), tensor_type(out_shape, index_dtype)],
                             {"dimensions": i64_array(axes)}, [region])
        return results[1]

    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lower)

    def wrapper(operand, axis, index_dtype):
        aval = get_aval_of(operand)
        axis = T.normalize_axis(axis, aval.ndim)
        return primitive.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize_dtype(index_dtype))

    wrapper.__name__ = name
    return primitive, wrapper


argmax_p, argmax = _define_arg_reduction("argmax", "GT")
argmin_p, argmin = _define_arg_reduction("argmin", "LT")
dynamic_shapes.polymorphic_primitives.update((argmax_p, argmin_p))  # their iota takes the dynamic form


# --- differentiation rules -------------------------------------------------------------------------------------
from ..core.ad_util import Zero, tangent_aval  # noqa: E402
from ..core.primitives import jvp_rules  # noqa: E402
from . import ad  # noqa: E402


def _reduce_sum_transpose(ct, operand, axes):
    from .shapes import broadcast_in_dim

    aval = operand.aval
    if type(ct) is Zero:
        return [None]
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    return [broadcast_in_dim(ct, aval.shape, kept)]


def _reduce_prod_jvp(primals, tangents, axes):
    """JAX's rule: a balanced tree of products of (value, tangent) pairs over the reduced elements, so that
    zeros need no division; the product of (a, ta) and (b, tb) is (a b, ta b + a tb)."""
    from .elementwise import add, mul
    from .shapes import pad, reshape, squeeze, transpose
    from .slicing import slice_in_dim

    (x,), (t,) = primals, tangents
    shape = get_aval_of(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    kept_shape = tuple(shape[i] for i in kept)
    if count == 0:
        out = reduce_prod_p.bind(x, axes=axes)
        return out, Zero(tangent_aval(get_aval_of(out)))
    # The reduced axes, flattened, lead.
    permutation = tuple(axes) + kept
    if permutation != tuple(range(len(shape))):
        x, t = transpose(x, permutation), transpose(t, permutation)
    x, t = reshape(x, (count,) + kept_shape), reshape(t, (count,) + kept_shape)
    while count > 1:
        half = (count + 1) // 2
        x1, t1 = slice_in_dim(x, 0, half), slice_in_dim(t, 0, half)
        x2, t2 = slice_in_dim(x, half, count), slice_in_dim(t, half, count)
        if count % 2:  # the second half is one short: pad it with (1, 0)
            config = [(0, 1, 0)] + [(0, 0, 0)] * len(kept_shape)
            x2 = pad(x2, np.ones((), get_aval_of(x2).dtype), config)
            t2 = pad(t2, np.zeros((), get_aval_of(t2).dtype), config)
        x, t = mul(x1, x2), add(mul(t1, x2), mul(x1, t2))
        count = half
    return squeeze(x, (0,)), squeeze(t, (0,))


def _reduce_chooser_jvp(tangent, out, operand, axes):
    """JAX's convention for max and min: the tangent is the mean of the tangents at the positions that
    equal the result (ties share equally)."""
    from .conversions import convert_element_type
    from .elementwise import div, eq, mul
    from .shapes import reshape

    shape = tuple(1 if i in axes else d for i, d in enumerate(get_aval_of(operand).shape))
    chosen = convert_element_type(eq(operand, reshape(out, shape)), get_aval_of(tangent).dtype)
    return div(reduce_sum(mul(tangent, chosen), axes), reduce_sum(chosen, axes))


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
jvp_rules[reduce_prod_p] = _reduce_prod_jvp
ad.defjvp2(reduce_max_p, _reduce_chooser_jvp)
ad.defjvp2(reduce_min_p, _reduce_chooser_jvp)
for _primitive in (reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
    ad.defjvp_zero(_primitive)


# --- batching rules -----------------------------------------------------------------------------------------------
# A reduction carries the batch dimension where it is: the reduced axes are renumbered around it, and the
# result's batch dimension is where it lands once the reduced axes are gone.
from ..core.primitives import batching_rules  # noqa: E402


def shift_axes_past(axes, batch_dim):
    """Axes of an unbatched operand, numbered in the batched operand whose batch dimension is `batch_dim`."""
    return tuple(a + (a >= batch_dim) for a in axes)


def _batch_reduction(primitive):
    def rule(values, dims, axes, **params):
        (x,), (dim,) = values, dims
        axes = shift_axes_past(axes, dim)
        out_dim = dim - sum(a < dim for a in axes)
        return primitive.bind(x, axes=axes, **params), out_dim

    batching_rules[primitive] = rule


for _primitive in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
                   reduce_xor_p, argmax_p, argmin_p):
    _batch_reduction(_primitive)
