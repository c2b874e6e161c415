"""Elementwise primitives: arithmetic, transcendental and special functions, comparisons, logic and
bit operations, selection and clamping (dtype conversions are lax/conversions.py).

Operands of an n-ary elementwise primitive share a dtype; their shapes may differ by rank-0 operands
and size-1 dimensions, which the lowering broadcasts (as JAX's lax does).
"""

import builtins

import numpy as np

from ..core import dtypes
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import get_aval_of
from ..lowering.array import put
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import broadcast_operands, elementwise_lowering, register_lowering
from ..lowering.stablehlo import aval_type, comparison_type, tensor_type
from . import typing as T


def _scalars_like(args):
    """Python scalars among `args` take the dtype of the array operands (staying weakly typed)."""
    if all(type(a) not in dtypes.python_scalar_types for a in args):
        return args
    reference = next((a for a in args if type(a) not in dtypes.python_scalar_types), None)
    if reference is None:
        return args
    dtype = get_aval_of(reference).dtype
    return [scalar_as(a, dtype) if type(a) in dtypes.python_scalar_types else a for a in args]


def scalar_as(value, dtype):
    """A Python scalar as a value of `dtype`: itself when that is its weak type, else a weakly typed array (so
    that a weak float16 array times `scalar_as(2.0, float16)` stays weak, as it would times a Python scalar in
    jax.numpy)."""
    if type(value) is not bool and dtypes.python_scalar_dtype(value) == dtype:
        return value
    if type(value) is int and dtypes.is_integer(dtype):
        dtypes.check_int_fits(value, dtype)
    if type(value) is builtins.complex and not dtypes.is_complex(dtype):
        raise TypeError(f"cannot convert the complex scalar {value} to {dtype}")
    return put(np.asarray(value, dtype=dtype), weak_type=type(value) is not bool)


def scalar_like(value, like):
    """The Python scalar `value` as an operand of `like`'s dtype (see `scalar_as`): how numax's own code writes
    a constant beside an array, since lax takes a bare Python scalar at its own default dtype."""
    return scalar_as(value, get_aval_of(like).dtype)


def _define(name, abstract_eval, lowering, arity):
    primitive = Primitive(name)
    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lowering)
    polymorphic_primitives.add(primitive)  # elementwise rules handle symbolic shapes (builder.broadcast_*)

    if arity == 1:
        def wrapper(x):
            return primitive.bind(x)
    else:
        def wrapper(*args):
            return primitive.bind(*args)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise `{name}` (the `{name}` primitive)."
    return primitive, wrapper


def _unary(name, op_name, allowed=T.inexact_dtypes, result_dtype=None, **attributes):
    return _define(name, T.unary(name, allowed, result_dtype), elementwise_lowering(op_name, **attributes), 1)


def _binary(name, op_name, allowed=T.numeric_dtypes, result_dtype=None, **attributes):
    return _define(name, T.naryop(name, allowed, result_dtype), elementwise_lowering(op_name, **attributes), 2)


# --- unary math ------------------------------------------------------------------------------------
neg_p, neg = _unary("neg", "stablehlo.negate", T.numeric_dtypes)


def _lower_sign(ctx, x):
    # stablehlo.sign has no unsigned form: an unsigned sign is x != 0.
    aval = ctx.avals_in[0]
    if not dtypes.is_unsigned(aval.dtype):
        return ctx.builder.op1("stablehlo.sign", [x], aval_type(ctx.aval_out))
    nonzero = compare_values(ctx.builder, x, ctx.builder.broadcast_scalar(0, aval.shape, aval.dtype), "NE", aval)
    return ctx.builder.op1("stablehlo.convert", [nonzero], aval_type(ctx.aval_out))


sign_p, sign = _define("sign", T.unary("sign", T.numeric_dtypes), _lower_sign, 1)
floor_p, floor = _unary("floor", "stablehlo.floor", T.float_dtypes)
ceil_p, ceil = _unary("ceil", "stablehlo.ceil", T.float_dtypes)
is_finite_p, is_finite = _unary("is_finite", "stablehlo.is_finite", T.float_dtypes, lambda _: dtypes.bool_)
exp_p, exp = _unary("exp", "stablehlo.exponential")
expm1_p, expm1 = _unary("expm1", "stablehlo.exponential_minus_one")
log_p, log = _unary("log", "stablehlo.log")
log1p_p, log1p = _unary("log1p", "stablehlo.log_plus_one")
sqrt_p, sqrt = _unary("sqrt", "stablehlo.sqrt")
rsqrt_p, rsqrt = _unary("rsqrt", "stablehlo.rsqrt")
cbrt_p, cbrt = _unary("cbrt", "stablehlo.cbrt", T.float_dtypes)
tanh_p, tanh = _unary("tanh", "stablehlo.tanh")
logistic_p, logistic = _unary("logistic", "stablehlo.logistic")


def _lower_complex_sin_cos(ctx, z, which):
    """sin or cos of a complex operand from real functions of its parts (as JAX lowers them):
    sin(a+bi) = sin a cosh b + i cos a sinh b, cos(a+bi) = cos a cosh b - i sin a sinh b, with
    cosh and sinh from expm1 for accuracy near 0, and the exact zero part kept when a == 0."""
    builder = ctx.builder
    aval = ctx.avals_in[0]
    part = aval.update(dtype=T.complex_to_real(aval.dtype), weak_type=False)
    part_type = aval_type(part)

    def op(name, *operands):
        return builder.op1(name, list(operands), part_type)

    a, b = op("stablehlo.real", z), op("stablehlo.imag", z)
    sin_a, cos_a = op("stablehlo.sine", a), op("stablehlo.cosine", a)
    up = op("stablehlo.exponential_minus_one", b)
    down = op("stablehlo.exponential_minus_one", op("stablehlo.negate", b))
    half = builder.broadcast_scalar(0.5, part.shape, part.dtype)
    two = builder.broadcast_scalar(2, part.shape, part.dtype)
    sinh_b = op("stablehlo.multiply", op("stablehlo.subtract", up, down), half)
    cosh_b = op("stablehlo.multiply", op("stablehlo.add", op("stablehlo.add", up, down), two), half)
    zero = builder.broadcast_scalar(0, part.shape, part.dtype)
    a_is_zero = compare_values(builder, a, zero, "EQ", part)
    if which == "sin":
        re, im = op("stablehlo.multiply", sin_a, cosh_b), op("stablehlo.multiply", cos_a, sinh_b)
        re = builder.op1("stablehlo.select", [a_is_zero, zero, re], part_type)
    else:
        re = op("stablehlo.multiply", cos_a, cosh_b)
        im = op("stablehlo.negate", op("stablehlo.multiply", sin_a, sinh_b))
        im = builder.op1("stablehlo.select", [a_is_zero, zero, im], part_type)
    return builder.op1("stablehlo.complex", [re, im], aval_type(ctx.aval_out))


def _sin_cos_lowering(which, op_name):
    def lower(ctx, x):
        if dtypes.is_complex(ctx.avals_in[0].dtype):
            return _lower_complex_sin_cos(ctx, x, which)
        return ctx.builder.op1(op_name, [x], aval_type(ctx.aval_out))

    return lower


sin_p, sin = _define("sin", T.unary("sin", T.inexact_dtypes), _sin_cos_lowering("sin", "stablehlo.sine"), 1)
cos_p, cos = _define("cos", T.unary("cos", T.inexact_dtypes), _sin_cos_lowering("cos", "stablehlo.cosine"), 1)
tan_p, tan = _unary("tan", "stablehlo.tan")
asin_p, asin = _unary("asin", "chlo.asin")
acos_p, acos = _unary("acos", "chlo.acos")
atan_p, atan = _unary("atan", "chlo.atan")
sinh_p, sinh = _unary("sinh", "chlo.sinh")
cosh_p, cosh = _unary("cosh", "chlo.cosh")
asinh_p, asinh = _unary("asinh", "chlo.asinh")
acosh_p, acosh = _unary("acosh", "chlo.acosh")
atanh_p, atanh = _unary("atanh", "chlo.atanh")
erf_p, erf = _unary("erf", "chlo.erf", T.float_dtypes)
erfc_p, erfc = _unary("erfc", "chlo.erfc", T.float_dtypes)
erf_inv_p, erf_inv = _unary("erf_inv", "chlo.erf_inv", T.float_dtypes)
lgamma_p, lgamma = _unary("lgamma", "chlo.lgamma", T.float_dtypes)
digamma_p, digamma = _unary("digamma", "chlo.digamma", T.float_dtypes)
# polygamma(m, x), the m-th derivative of digamma, exists for digamma's derivative (as in JAX).
polygamma_p, polygamma = _binary("polygamma", "chlo.polygamma", T.float_dtypes)
real_p, real = _unary("real", "stablehlo.real", dtypes.complexes, T.complex_to_real)
imag_p, imag = _unary("imag", "stablehlo.imag", dtypes.complexes, T.complex_to_real)
abs_p, abs = _unary("abs", "stablehlo.abs", T.signed_numeric_dtypes, T.complex_to_real)
not_p, bitwise_not = _unary("not", "stablehlo.not", T.bool_or_integer)
population_count_p, population_count = _unary("population_count", "stablehlo.popcnt", T.integer_dtypes)
clz_p, clz = _unary("clz", "stablehlo.count_leading_zeros", T.integer_dtypes)


def _lower_exp2(ctx, x):
    # exp2(x) = exp(x * ln 2): StableHLO has no base-2 exponential.
    builder = ctx.builder
    ln2 = builder.broadcast_scalar(np.log(2.0), ctx.aval_out.shape, ctx.aval_out.dtype)
    scaled = builder.op1("stablehlo.multiply", [x, ln2], aval_type(ctx.aval_out))
    return builder.op1("stablehlo.exponential", [scaled], aval_type(ctx.aval_out))


exp2_p, exp2 = _define("exp2", T.unary("exp2", T.inexact_dtypes), _lower_exp2, 1)


def _lower_conj(ctx, x):
    builder = ctx.builder
    aval = ctx.avals_in[0]
    part_type = tensor_type(aval.shape, T.complex_to_real(aval.dtype))
    if dtypes.is_complex(aval.dtype):
        re = builder.op1("stablehlo.real", [x], part_type)
        im = builder.op1("stablehlo.negate", [builder.op1("stablehlo.imag", [x], part_type)], part_type)
    else:
        # A real operand is the real part of a complex result (as in JAX).
        re, im = x, builder.broadcast_scalar(0, aval.shape, aval.dtype)
    return builder.op1("stablehlo.complex", [re, im], aval_type(ctx.aval_out))


_real_to_complex = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
conj_p, conj = _define("conj", T.unary("conj", (dtypes.float32, dtypes.float64) + dtypes.complexes,
                                       lambda dtype: _real_to_complex.get(dtype, dtype)), _lower_conj, 1)

_rounding_methods = {0: "stablehlo.round_nearest_afz", 1: "stablehlo.round_nearest_even"}


class RoundingMethod:
    """`lax.round`'s rounding methods, with JAX's numbering."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


round_p = Primitive("round")
round_p.def_abstract_eval(lambda x, rounding_method: T.unary("round", T.float_dtypes)(x))
register_lowering(round_p, lambda ctx, x, rounding_method: ctx.builder.op1(
    _rounding_methods[int(rounding_method)], [x], aval_type(ctx.aval_out)))


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Rounds to the nearest integer (ties away from zero, or to even)."""
    return round_p.bind(x, rounding_method=int(rounding_method))


# --- binary arithmetic -----------------------------------------------------------------------------
add_p, add = _binary("add", "stablehlo.add")
sub_p, sub = _binary("sub", "stablehlo.subtract")
mul_p, mul = _binary("mul", "stablehlo.multiply")
div_p, div = _binary("div", "stablehlo.divide")
rem_p, rem = _binary("rem", "stablehlo.remainder", T.real_numeric_dtypes)


def _minmax_lowering(op_name, direction):
    def lower(ctx, x, y):
        x, y = broadcast_operands(ctx, (x, y))
        aval = ctx.aval_out
        if not dtypes.is_complex(aval.dtype):
            return ctx.builder.op1(op_name, [x, y], aval_type(aval))
        # Complex numbers are ordered lexicographically by (real, imag), as in JAX.
        builder = ctx.builder
        part = aval.update(dtype=T.complex_to_real(aval.dtype), weak_type=False)
        x_re, y_re = (builder.op1("stablehlo.real", [v], aval_type(part)) for v in (x, y))
        x_im, y_im = (builder.op1("stablehlo.imag", [v], aval_type(part)) for v in (x, y))
        by_real = compare_values(builder, x_re, y_re, direction, part)
        by_imag = compare_values(builder, x_im, y_im, direction, part)
        real_equal = compare_values(builder, x_re, y_re, "EQ", part)
        pick_x = builder.op1("stablehlo.select", [real_equal, by_imag, by_real], tensor_type(part.shape, dtypes.bool_))
        return builder.op1("stablehlo.select", [pick_x, x, y], aval_type(aval))

    return lower


max_p, max = _define("max", T.naryop("max", T.any_dtype), _minmax_lowering("stablehlo.maximum", "GT"), 2)
min_p, min = _define("min", T.naryop("min", T.any_dtype), _minmax_lowering("stablehlo.minimum", "LT"), 2)
atan2_p, atan2 = _binary("atan2", "stablehlo.atan2", T.inexact_dtypes)
nextafter_p, nextafter = _binary("nextafter", "chlo.next_after", T.float_dtypes)
and_p, bitwise_and = _binary("and", "stablehlo.and", T.bool_or_integer)
or_p, bitwise_or = _binary("or", "stablehlo.or", T.bool_or_integer)
xor_p, bitwise_xor = _binary("xor", "stablehlo.xor", T.bool_or_integer)
shift_left_p, shift_left = _binary("shift_left", "stablehlo.shift_left", T.integer_dtypes)
shift_right_arithmetic_p, shift_right_arithmetic = _binary(
    "shift_right_arithmetic", "stablehlo.shift_right_arithmetic", T.integer_dtypes)
shift_right_logical_p, shift_right_logical = _binary(
    "shift_right_logical", "stablehlo.shift_right_logical", T.integer_dtypes)
complex_p, complex = _binary("complex", "stablehlo.complex", (dtypes.float32, dtypes.float64))
complex_p.def_abstract_eval(lambda x, y: T.naryop("complex", (dtypes.float32, dtypes.float64))(x, y).update(
    dtype=dtypes.complex64 if x.dtype == dtypes.float32 else dtypes.complex128))


def compare_values(builder, x, y, direction, aval):
    """A `stablehlo.compare` of two values of `aval`'s shape and dtype: a boolean SSA value."""
    return builder.op1("stablehlo.compare", [x, y], tensor_type(aval.shape, dtypes.bool_), {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {comparison_type(aval.dtype)}>"})


def _compare(name, direction, allowed):
    def lower(ctx, x, y):
        operands = broadcast_operands(ctx, (x, y))
        attributes = {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": f"#stablehlo<comparison_type {comparison_type(ctx.avals_in[0].dtype)}>",
        }
        return ctx.builder.op1("stablehlo.compare", operands, aval_type(ctx.aval_out), attributes)

    return _define(name, T.naryop(name, allowed, dtypes.bool_), lower, 2)


# Complex numbers have equality but no order (as in JAX).
eq_p, eq = _compare("eq", "EQ", T.any_dtype)
ne_p, ne = _compare("ne", "NE", T.any_dtype)
lt_p, lt = _compare("lt", "LT", T.ordered_dtypes)
le_p, le = _compare("le", "LE", T.ordered_dtypes)
gt_p, gt = _compare("gt", "GT", T.ordered_dtypes)
ge_p, ge = _compare("ge", "GE", T.ordered_dtypes)


# --- pow ----------------------------------------------------------------------------------------------
def _pow_abstract_eval(x, y):
    # The exponent has the base's dtype, or is an integer array (as in JAX).
    T.check_dtype("pow", x, T.inexact_dtypes, 0)
    if y.dtype != x.dtype:
        T.check_dtype("pow", y, T.integer_dtypes, 1)
    shape = T.broadcast_shapes("pow", (x, y))
    return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


def _lower_pow(ctx, x, y):
    base, exponent = ctx.avals_in
    x, y = broadcast_operands(ctx, (x, y))
    if exponent.dtype != base.dtype:
        y = ctx.builder.op1("stablehlo.convert", [y], tensor_type(ctx.aval_out.shape, base.dtype))
    return ctx.builder.op1("stablehlo.power", [x, y], aval_type(ctx.aval_out))


pow_p, _ = _define("pow", _pow_abstract_eval, _lower_pow, 2)


def pow(x, y):
    """`x ** y` elementwise; `y` has `x`'s dtype or is an integer array (a Python scalar has its own default
    dtype, as in jax)."""
    return pow_p.bind(x, y)


# --- integer_pow ------------------------------------------------------------------------------------
integer_pow_p = Primitive("integer_pow")
def _integer_pow_abstract_eval(x, y):
    if y < 0 and not dtypes.is_inexact(x.dtype):
        raise TypeError(f"integers cannot be raised to negative powers, got integer_pow({x.str_short()}, {y})")
    return T.unary("integer_pow", T.numeric_dtypes)(x)


integer_pow_p.def_abstract_eval(_integer_pow_abstract_eval)


def _lower_integer_pow(ctx, x, y):
    # Exponentiation by squaring; a negative power is the reciprocal of the positive one.
    builder = ctx.builder
    out_type = aval_type(ctx.aval_out)
    result = None
    base, n = x, -y if y < 0 else y
    while n:
        if n & 1:
            result = base if result is None else builder.op1("stablehlo.multiply", [result, base], out_type)
        n >>= 1
        if n:
            base = builder.op1("stablehlo.multiply", [base, base], out_type)
    if result is None:
        result = builder.broadcast_scalar(1, ctx.aval_out.shape, ctx.aval_out.dtype)
    if y < 0:
        one = builder.broadcast_scalar(1, ctx.aval_out.shape, ctx.aval_out.dtype)
        result = builder.op1("stablehlo.divide", [one, result], out_type)
    return result


register_lowering(integer_pow_p, _lower_integer_pow)


def integer_pow(x, y: int):
    """`x ** y` for a static Python integer `y`."""
    return integer_pow_p.bind(x, y=int(y))


def square(x):
    return integer_pow(x, 2)


# --- selection and clamping ---------------------------------------------------------------------------
select_n_p = Primitive("select_n")


def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    if which.dtype != dtypes.bool_ and which.dtype not in dtypes.integers:
        raise TypeError(f"select_n selector must be boolean or integer, got {which.dtype.name}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise TypeError(f"select_n with a boolean selector takes at most 2 cases, got {len(cases)}")
    T.check_same_dtypes("select_n", cases)
    if any(c.shape != cases[0].shape for c in cases):
        raise TypeError(f"select_n cases must have the same shape, got {T.describe(cases)}")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(f"select_n selector shape {which.shape} must be scalar or equal the case shape "
                        f"{cases[0].shape}")
    return ShapedArray(cases[0].shape, cases[0].dtype, T.all_weak(cases))


def _lower_select_n(ctx, which, *cases):
    builder = ctx.builder
    which_aval = ctx.avals_in[0]
    out_type = aval_type(ctx.aval_out)
    shape = ctx.aval_out.shape
    if which_aval.shape != shape:
        which = builder.broadcast_in_dim(which, shape, which_aval.dtype, [])
    if len(cases) == 1:
        return cases[0]
    pred_type = tensor_type(shape, dtypes.bool_)

    def choose(low, high):
        # Cases low..high-1, split in halves: `which < mid` picks the lower half.
        if high - low == 1:
            return cases[low]
        mid = (low + high) // 2
        if which_aval.dtype == dtypes.bool_:
            predicate = which
        else:
            bound = builder.broadcast_scalar(mid, shape, which_aval.dtype)
            predicate = builder.op1("stablehlo.compare", [which, bound], pred_type, {
                "comparison_direction": "#stablehlo<comparison_direction LT>",
                "compare_type": f"#stablehlo<comparison_type {comparison_type(which_aval.dtype)}>"})
        lower_half, upper_half = choose(low, mid), choose(mid, high)
        if which_aval.dtype == dtypes.bool_:
            return builder.op1("stablehlo.select", [predicate, upper_half, lower_half], out_type)
        return builder.op1("stablehlo.select", [predicate, lower_half, upper_half], out_type)

    return choose(0, len(cases))


select_n_p.def_abstract_eval(_select_n_abstract_eval)
register_lowering(select_n_p, _lower_select_n)


def select_n(which, *cases):
    """Picks, elementwise, `cases[which]` (a boolean `which` picks cases[1] where True)."""
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """`on_true` where `pred`, else `on_false`."""
    return select_n(pred, on_false, on_true)


clamp_p = Primitive("clamp")


def _clamp_abstract_eval(low, x, high):
    T.check_dtype("clamp", x, T.any_dtype)
    T.check_same_dtypes("clamp", (low, x, high))
    for bound in (low, high):
        if bound.shape and bound.shape != x.shape:
            raise TypeError(f"clamp bounds must be scalars or have the operand's shape, got "
                            f"{T.describe((low, x, high))}")
    return ShapedArray(x.shape, x.dtype, T.all_weak((low, x, high)))


clamp_p.def_abstract_eval(_clamp_abstract_eval)
register_lowering(clamp_p, lambda ctx, low, x, high: ctx.builder.op1(
    "stablehlo.clamp", [low, x, high], aval_type(ctx.aval_out)))


def clamp(min, x, max):
    """`x` clipped to [min, max] (bounds may be scalars of `x`'s dtype).

    A Python scalar bound has its default dtype, which must be `x`'s: jax.lax.clamp raises a TypeError for
    `clamp(0, uint8_array, 1)`, so no weak conversion is done here."""
    return clamp_p.bind(min, x, max)


# --- differentiation rules ---------------------------------------------------------------------------------
# JVPs follow JAX's formulas (so values, nan and inf at the edges of domains match); complex inputs get
# holomorphic rules: the tangent times the complex derivative.
from . import ad  # noqa: E402
from .conversions import convert_element_type  # noqa: E402


def _const(like, value):
    """`value` as a (strongly typed) constant of `like`'s dtype, as JAX's rules write constants."""
    return np.asarray(value, get_aval_of(like).dtype)


def _full_like(like, value):
    aval = get_aval_of(like)
    return ad.zeros_like_aval(aval) if value == 0 else ad.broadcast_tangent(_const(like, value), aval.shape)


def _replace_zero(x):
    """x with its zeros replaced by ones: keeps a jacobian finite where a select discards it anyway."""
    return select(eq(x, _const(x, 0)), _full_like(x, 1), x)


def _shape_of(*values):
    return T.broadcast_shapes("jvp", [get_aval_of(v) for v in values])


for _primitive in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p, and_p, or_p,
                   xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, eq_p, ne_p, lt_p, le_p,
                   gt_p, ge_p):
    ad.defjvp_zero(_primitive)
del _primitive
# nextafter has no derivative rule in JAX either: differentiating it raises.


# --- linear primitives ---
def _transpose_add(ct, x, y):
    return [ad.unbroadcast(ct, x.aval) if is_undefined(x) else None,
            ad.unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _transpose_sub(ct, x, y):
    return [ad.unbroadcast(ct, x.aval) if is_undefined(x) else None,
            ad.unbroadcast(neg(ct), y.aval) if is_undefined(y) and type(ct) is not Zero else None]


ad.defjvp(add_p, lambda t, x, y: t, lambda t, x, y: t)
transpose_rules[add_p] = _transpose_add
ad.defjvp(sub_p, lambda t, x, y: t, lambda t, x, y: neg(t))
transpose_rules[sub_p] = _transpose_sub
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])
ad.defbilinear(mul_p, lambda ct, x_aval, y: ad.unbroadcast(mul(ct, y), x_aval),
               lambda ct, x, y_aval: ad.unbroadcast(mul(x, ct), y_aval))


def _transpose_div(ct, x, y):
    # div is linear in its numerator only.
    if is_undefined(y):
        raise TypeError("div is not linear in its denominator (transposing it)")
    if type(ct) is Zero:
        return [None, None]
    return [ad.unbroadcast(div(ct, y), x.aval), None]


ad.defjvp(div_p, lambda t, x, y: div(t, y), lambda t, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))
transpose_rules[div_p] = _transpose_div
ad.deflinear(real_p, lambda ct, x: [complex(ct, _const(ct, 0))])
ad.deflinear(imag_p, lambda ct, x: [complex(_const(ct, 0), neg(ct))])
ad.deflinear(complex_p, lambda ct, x, y: [ad.unbroadcast(real(ct), x.aval) if is_undefined(x) else None,
                                          ad.unbroadcast(imag(neg(ct)), y.aval) if is_undefined(y) else None])
# conj of a real operand is a complex result: its transpose keeps the real part.
ad.deflinear(conj_p, lambda ct, x: [conj(ct) if dtypes.is_complex(x.aval.dtype) else real(ct)])


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero(tangent_aval(get_aval_of(out)))
    return out, select_n_p.bind(which, *(ad.instantiate(t) for t in case_tangents))


def _select_n_transpose(ct, which, *cases):
    # Linear in the cases, the selector fixed: each case gets the cotangent where it was picked.
    if is_undefined(which):
        raise TypeError("select_n is not linear in its selector (transposing it)")
    if type(ct) is Zero:
        return [None] + [Zero(tangent_aval(c.aval)) if is_undefined(c) else None for c in cases]
    zeros = ad.zeros_like_aval(get_aval_of(ct))
    if get_aval_of(which).dtype == dtypes.bool_:
        picked = [lambda: select_n(which, ct, zeros), lambda: select_n(which, zeros, ct)]
    else:
        picked = [lambda i=i: select_n(eq(which, _const(which, i)), zeros, ct) for i in range(len(cases))]
    return [None] + [picked[i]() if is_undefined(c) else None for i, c in enumerate(cases)]


jvp_rules[select_n_p] = _select_n_jvp
transpose_rules[select_n_p] = _select_n_transpose


# --- exponentials, logarithms, powers ---
ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp2(exp2_p, lambda t, ans, x: mul(_const(x, np.log(2.0)), mul(t, ans)))
ad.defjvp2(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(ans, 1))))
ad.defjvp(log_p, lambda t, x: div(t, x))
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _const(x, 1))))
ad.defjvp2(sqrt_p, lambda t, ans, x: mul(t, div(_const(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))
ad.defjvp2(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(ans, 1), ans))))


def _pow_jvp_base(t, ans, x, y):
    if dtypes.is_inexact(get_aval_of(y).dtype):
        jacobian = mul(y, pow(x, sub(y, _const(y, 1))))
    else:
        # An integer exponent: d/dx x**0 is 0 even at x == 0 (where y * x**(y-1) would be 0 * inf).
        shape = _shape_of(x, y)
        x = ad.broadcast_tangent(x, shape)
        y = ad.broadcast_tangent(convert_element_type(y, get_aval_of(x).dtype), shape)
        jacobian = select(eq(y, _const(y, 0)), _full_like(y, 0),
                          mul(_replace_zero(y), pow(x, sub(y, _const(y, 1)))))
    return mul(t, jacobian)


def _pow_jvp_exponent(t, ans, x, y):
    # log(0) is replaced by log(1): d/dy 0**y is taken as 0.
    return mul(t, mul(log(_replace_zero(x)), ans))


ad.defjvp2(pow_p, _pow_jvp_base, _pow_jvp_exponent)


def _integer_pow_jvp(t, x, y):
    if y == 0:
        return Zero(tangent_aval(get_aval_of(t)))
    if y == 1:
        return t
    if y == 2:
        return mul(t, mul(_const(x, 2), x))
    return mul(t, mul(_const(x, y), integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


# --- trigonometric and hyperbolic ---
def _one_plus(x, value):
    return add(_const(x, 1), value)


ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(tan_p, lambda t, ans, x: mul(t, _one_plus(x, square(ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_const(x, 1), square(x)))))
ad.defjvp(acos_p, lambda t, x: mul(t, neg(rsqrt(sub(_const(x, 1), square(x))))))
ad.defjvp(atan_p, lambda t, x: div(t, _one_plus(x, square(x))))
ad.defjvp(atan2_p, lambda t, x, y: mul(t, div(y, add(square(x), square(y)))),
          lambda t, x, y: mul(t, div(neg(x), add(square(x), square(y)))))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp2(tanh_p, lambda t, ans, x: mul(add(t, mul(t, ans)), sub(_const(x, 1), ans)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(_one_plus(x, square(x)))))
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(square(x), _const(x, 1)))))
ad.defjvp(atanh_p, lambda t, x: mul(integer_pow(_one_plus(x, x), -1), div(t, sub(_const(x, 1), x))))


# --- special functions ---
def _polygamma_jvp_order(t, m, x):
    raise NotImplementedError("polygamma is not differentiable with respect to its order m")


ad.defjvp(erf_p, lambda t, x: mul(_const(x, 2 / np.sqrt(np.pi)), mul(t, exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda t, x: mul(_const(x, -2 / np.sqrt(np.pi)), mul(t, exp(neg(square(x))))))
ad.defjvp2(erf_inv_p, lambda t, ans, x: mul(_const(x, np.sqrt(np.pi) / 2), mul(t, exp(square(ans)))))
ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))
ad.defjvp(digamma_p, lambda t, x: mul(t, polygamma(_const(x, 1), x)))
ad.defjvp(polygamma_p, _polygamma_jvp_order, lambda t, m, x: mul(t, polygamma(add(m, _const(m, 1)), x)))


# --- piecewise: abs, rem, max, min, clamp ---
def _abs_jvp(t, ans, x):
    if dtypes.is_complex(get_aval_of(x).dtype):
        # d|z| = Re(conj(z) dz) / |z|, taken as 0 at z == 0.
        magnitude = convert_element_type(ans, get_aval_of(x).dtype)
        return real(mul(t, div(conj(x), _replace_zero(magnitude))))
    # x >= 0 (0 and -0 included) takes slope +1, as in JAX.
    return select(ge(x, _const(x, 0)), t, neg(t))


ad.defjvp2(abs_p, _abs_jvp)
ad.defjvp(rem_p, lambda t, x, y: t,
          lambda t, x, y: mul(neg(t), mul(sign(div(x, y)), floor(abs(div(x, y))))))


def _balanced_eq(x, ans, y):
    """1 where x alone gave `ans`, 1/2 where x and y tie, 0 elsewhere: a tie splits the tangent in two."""
    dtype = get_aval_of(ans).dtype
    x_won = convert_element_type(eq(x, ans), dtype)
    y_won = convert_element_type(eq(y, ans), dtype)
    return div(x_won, add(y_won, _const(ans, 1)))


ad.defjvp2(max_p, lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
           lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)))
ad.defjvp2(min_p, lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
           lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)))


def _clamp_derivative(picked):
    """The tangent of one clamp input where `picked(low, x, high)` says the output follows it, else 0
    (scalar bounds' tangents are stretched to the operand's shape)."""

    def derivative(t, low, x, high):
        shape = get_aval_of(x).shape
        return select(picked(low, x, high), ad.broadcast_tangent(t, shape), _full_like(x, 0))

    return derivative


ad.defjvp(clamp_p,
          _clamp_derivative(lambda low, x, high: bitwise_and(gt(low, x), lt(low, high))),
          _clamp_derivative(lambda low, x, high: bitwise_and(gt(x, low), lt(x, high))),
          _clamp_derivative(lambda low, x, high: lt(high, x)))


# --- batching rules ------------------------------------------------------------------------------------
# Elementwise primitives carry a batch dimension wherever it sits: unary ones apply to the batched operand
# as it is, n-ary ones align their operands once (`batching.broadcast_batched`). select_n and clamp need
# equal shapes (only rank-0 selectors and bounds broadcast), so their operands are brought to full shape.
from . import batching  # noqa: E402
from .shapes import broadcast_in_dim  # noqa: E402

for _primitive in (neg_p, sign_p, floor_p, ceil_p, is_finite_p, exp_p, expm1_p, log_p, log1p_p, sqrt_p, rsqrt_p,
                   cbrt_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p, atan_p, sinh_p, cosh_p, asinh_p,
                   acosh_p, atanh_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, real_p, imag_p, abs_p, not_p,
                   population_count_p, clz_p, exp2_p, conj_p, round_p, integer_pow_p):
    batching.defvectorized(_primitive)
for _primitive in (polygamma_p, add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p, atan2_p, nextafter_p, and_p, or_p,
                   xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, complex_p, eq_p, ne_p, lt_p,
                   le_p, gt_p, ge_p, pow_p):
    batching.defbroadcasting(_primitive)
del _primitive


def _batch_to_full_shape(values, dims, shape, may_stay):
    """Operands of per-example `shape` (or rank 0) as arrays of that shape batched at one common place; an
    unbatched rank-0 operand whose `may_stay` is set stays as it is. Returns (operands, out_dim)."""
    size = batching.axis_size_of(values, dims)
    full = {d for v, d in zip(values, dims) if d is not None and get_aval_of(v).ndim == len(shape) + 1}
    out_dim = full.pop() if len(full) == 1 else 0
    out_shape = shape[:out_dim] + (size,) + shape[out_dim:]
    example_dims = tuple(d for d in range(len(out_shape)) if d != out_dim)
    out = []
    for value, dim, stay in zip(values, dims, may_stay):
        rank = get_aval_of(value).ndim
        if dim is None:
            if not (stay and rank == 0):
                value = broadcast_in_dim(value, out_shape, example_dims if rank else ())
        elif rank == 1 and shape:  # a batched scalar meets full-shape operands
            value = broadcast_in_dim(value, out_shape, (out_dim,))
        else:
            value = batching.move_axis(value, dim, out_dim)
        out.append(value)
    return out, out_dim


def _example_shape(value, dim):
    shape = get_aval_of(value).shape
    return shape if dim is None else shape[:dim] + shape[dim + 1:]


def _select_n_batching(values, dims):
    # A selector that is one scalar per example is broadcast to the cases' shape (as in JAX).
    shape = _example_shape(values[1], dims[1])
    operands, out_dim = _batch_to_full_shape(values, dims, shape, [True] + [False] * (len(values) - 1))
    return select_n_p.bind(*operands), out_dim


def _clamp_batching(values, dims):
    operands, out_dim = _batch_to_full_shape(values, dims, _example_shape(values[1], dims[1]), [True, False, True])
    return clamp_p.bind(*operands), out_dim


batching_rules[select_n_p] = _select_n_batching
batching_rules[clamp_p] = _clamp_batching

# Their rules build full-shape values with the builder, which takes the dynamic forms for symbolic shapes.
polymorphic_primitives.update((round_p, integer_pow_p, select_n_p, clamp_p))
