"""Elementwise numpy functions (ufunc-style), with numpy broadcasting and JAX's dtype promotion."""

import functools
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.config import config
from numax.lax import elementwise
from numax.lax.elementwise import scalar_like
from numax.lowering.array import Array
from numax.lowering.dispatch import eager_unary
from numax.transforms.custom_derivatives import custom_jvp

from ._eager import binary_compiled_when_eager, unary_compiled_when_eager
from ._util import (
    aval,
    check_arraylike,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    to_array,
)

_inexact_dtypes = frozenset(dtypes.floats + dtypes.complexes)


def _unary_inexact(primitive, name):
    def general(x):
        (x,) = promote_args_inexact(name, x)
        return primitive.bind(x)  # the lax function of `primitive`, less one call

    # Eager calls: `primitive` alone where there is nothing to promote, else one compiled program (see _eager).
    fn = unary_compiled_when_eager(general, primitive, _inexact_dtypes)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}, like numpy.{name} (integers and bools become floats, as in jax.numpy)."
    return fn


sin = _unary_inexact(elementwise.sin_p, "sin")
cos = _unary_inexact(elementwise.cos_p, "cos")
tan = _unary_inexact(elementwise.tan_p, "tan")
arcsin = _unary_inexact(elementwise.asin_p, "arcsin")
arccos = _unary_inexact(elementwise.acos_p, "arccos")
arctan = _unary_inexact(elementwise.atan_p, "arctan")
sinh = _unary_inexact(elementwise.sinh_p, "sinh")
cosh = _unary_inexact(elementwise.cosh_p, "cosh")
tanh = _unary_inexact(elementwise.tanh_p, "tanh")
arcsinh = _unary_inexact(elementwise.asinh_p, "arcsinh")
arccosh = _unary_inexact(elementwise.acosh_p, "arccosh")
arctanh = _unary_inexact(elementwise.atanh_p, "arctanh")
exp = _unary_inexact(elementwise.exp_p, "exp")
exp2 = _unary_inexact(elementwise.exp2_p, "exp2")
expm1 = _unary_inexact(elementwise.expm1_p, "expm1")
log = _unary_inexact(elementwise.log_p, "log")
log1p = _unary_inexact(elementwise.log1p_p, "log1p")
sqrt = _unary_inexact(elementwise.sqrt_p, "sqrt")
cbrt = _unary_inexact(elementwise.cbrt_p, "cbrt")
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def _log_base(x, base, log_of_base=None):
    # Complex logs divide both parts by the real log of the base (a complex division would turn
    # log(0) = -inf + 0j into -inf + nan j). `log_of_base(like)`, if given, makes the divisor.
    log_x = lax.log(x)
    dtype = aval(x).dtype
    if not dtypes.is_complex(dtype):
        return lax.div(log_x, np.asarray(np.log(base), dtype) if log_of_base is None else log_of_base(log_x))
    re, im = lax.real(log_x), lax.imag(log_x)
    log_base = np.asarray(np.log(base), aval(re).dtype) if log_of_base is None else log_of_base(re)
    return lax.complex(lax.div(re, log_base), lax.div(im, log_base))


def log2(x, /):
    (x,) = promote_args_inexact("log2", x)
    if config.jax_semantics < (0, 11, 1):
        return _log_base(x, 2)
    # jax >= 0.11.1 (seen in 0.11.2; 0.11.0's source is 0.10's) has a log2 primitive that keeps x's weak type
    # (a Python scalar gives a weak result). log(x) / log(2), both logs in the program, gives its bits under jit.
    return _log_base(x, 2, lambda like: lax.log(lax.full_like(like, 2)))


def log10(x, /):
    (x,) = promote_args_inexact("log10", x)
    return _log_base(x, 10)


def rsqrt(x, /):
    (x,) = promote_args_inexact("rsqrt", x)
    return lax.rsqrt(x)


def _binary(lax_fn, name, promote=promote_args):
    def fn(x1, x2, /):
        x1, x2 = promote(name, x1, x2)
        return lax_fn(x1, x2)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}, like numpy.{name}."
    return binary_compiled_when_eager(fn)  # eager calls: one compiled program (see _eager)


def _bool_as(lax_fn, bool_fn):
    """numpy adds booleans with `or` and multiplies them with `and`."""
    def fn(x1, x2):
        return bool_fn(x1, x2) if aval(x1).dtype == dtypes.bool_ else lax_fn(x1, x2)

    return fn


add = _binary(_bool_as(lax.add, lax.bitwise_or), "add")
subtract = _binary(lax.sub, "subtract")
_multiply = _binary(_bool_as(lax.mul, lax.bitwise_and), "multiply")


def multiply(x1, x2, /):
    """Elementwise product; a boolean operand selects (x * False is 0 even for inf), as in jax.numpy."""
    bools = [dtypes.dtype(to_array(x)) == dtypes.bool_ for x in (x1, x2)]
    if bools[0] != bools[1]:
        mask, other = (x1, x2) if bools[0] else (x2, x1)
        product = _multiply(x1, x2)
        return where_(mask, product, lax.full_like(product, 0))
    return _multiply(x1, x2)
maximum = _binary(lax.max, "maximum")
minimum = _binary(lax.min, "minimum")
arctan2 = _binary(lax.atan2, "arctan2", promote_args_inexact)
atan2 = arctan2
nextafter = _binary(lax.nextafter, "nextafter", promote_args_inexact)
def _ordered(lax_fn):
    """An order comparison that orders complex numbers lexicographically by (real, imag), as jax.numpy does."""
    def fn(x1, x2):
        if not dtypes.is_complex(aval(x1).dtype):
            return lax_fn(x1, x2)
        re1, re2 = lax.real(x1), lax.real(x2)
        return lax.select(lax.eq(re1, re2), lax_fn(lax.imag(x1), lax.imag(x2)), lax_fn(re1, re2))

    return fn


equal = _binary(lax.eq, "equal")
not_equal = _binary(lax.ne, "not_equal")
less = _binary(_ordered(lax.lt), "less")
less_equal = _binary(_ordered(lax.le), "less_equal")
greater = _binary(_ordered(lax.gt), "greater")
greater_equal = _binary(_ordered(lax.ge), "greater_equal")


def _bitwise(lax_fn, name):
    def fn(x1, x2, /):
        x1, x2 = promote_args(name, x1, x2)
        dtype = aval(x1).dtype
        if dtype != dtypes.bool_ and not dtypes.is_integer(dtype):
            raise TypeError(f"{name} is only defined for boolean and integer arrays, got {dtype.name}")
        return lax_fn(x1, x2)

    fn.__name__ = name
    return binary_compiled_when_eager(fn)  # eager calls: one compiled program (see _eager)


bitwise_and = _bitwise(lax.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(lax.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(lax.bitwise_xor, "bitwise_xor")


def _logical(lax_fn, name):
    def fn(x1, x2, /):
        x1_in, x2_in = x1, x2
        x1, x2 = promote_args(name, x1, x2)
        result = lax_fn(to_bool(x1), to_bool(x2))
        return _weak_if_all_weak(result, x1_in, x2_in)

    fn.__name__ = name
    return fn


def to_bool(x):
    """`x != 0` (for complex values too, where a conversion would look at the real part only)."""
    (x,) = promote_args("logical", x)
    if aval(x).dtype == dtypes.bool_:
        return x
    return lax.ne(x, lax.full_like(x, 0))


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


def logical_not(x, /):
    return lax.bitwise_not(to_bool(x))


def invert(x, /):
    (x,) = promote_args("invert", x)
    dtype = aval(x).dtype
    if dtype != dtypes.bool_ and not dtypes.is_integer(dtype):
        raise TypeError(f"invert is only defined for boolean and integer arrays, got {dtype.name}")
    return lax.bitwise_not(x)


bitwise_not = bitwise_invert = invert


def left_shift(x1, x2, /):
    x1, x2 = promote_args_numeric("left_shift", x1, x2)
    return lax.shift_left(x1, x2)


def right_shift(x1, x2, /):
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    if dtypes.is_unsigned(aval(x1).dtype):
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


_numeric_dtypes = frozenset(dtypes.integers) | _inexact_dtypes
_signed_dtypes = frozenset(dtypes.signed_integers) | _inexact_dtypes


def negative(x, /):
    if type(x) is Array and x.aval.dtype in _numeric_dtypes:  # nothing to promote: maybe the fast path
        result = eager_unary(elementwise.neg_p, x)
        if result is not None:
            return result
    (x,) = promote_args("negative", x)
    return lax.neg(x)


def positive(x, /):
    (x,) = promote_args("positive", x)
    return x


def absolute(x, /):
    if type(x) is Array and x.aval.dtype in _signed_dtypes:  # nothing to promote: maybe the fast path
        result = eager_unary(elementwise.abs_p, x)
        if result is not None:
            return result
    (x,) = promote_args("absolute", x)
    dtype = aval(x).dtype
    if dtype == dtypes.bool_ or dtypes.is_unsigned(dtype):
        return x
    return lax.abs(x)


abs = absolute


def sign(x, /):
    (x,) = promote_args("sign", x)
    dtype = aval(x).dtype
    if dtypes.is_unsigned(dtype):
        return lax.convert_element_type(lax.ne(x, scalar_like(0, x)), dtype)
    return lax.sign(x)  # complex: x / |x| as XLA computes it (0 at 0), the array API's and jax's sign


def true_divide(x1, x2, /):
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


true_divide = binary_compiled_when_eager(true_divide)
divide = true_divide


def floor_divide(x1, x2, /):
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dtype = aval(x1).dtype
    if dtypes.is_integer(dtype):
        quotient = lax.div(x1, x2)
        if dtypes.is_unsigned(dtype):
            return quotient
        # C division truncates; floor division rounds toward -inf when the signs differ.
        needs_fix = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), scalar_like(0, x1)))
        return lax.select(needs_fix, lax.sub(quotient, scalar_like(1, x1)), quotient)
    if dtypes.is_complex(dtype):
        raise TypeError("floor_divide does not support complex numbers")
    return _float_divmod(x1, x2)[0]


floor_divide = binary_compiled_when_eager(floor_divide)


def _float_divmod(x1, x2):
    """numpy's float divmod: the quotient is (x1 - fmod(x1, x2)) / x2, corrected by one (and the
    remainder by x2) where the remainder's sign differs from the divisor's; the quotient is rounded."""
    mod = lax.rem(x1, x2)
    # Dividing by zero keeps x1 (the remainder is nan there), so that 1 // 0 is inf.
    quotient = lax.div(where_(lax.eq(x2, lax.full_like(x2, 0)), x1, lax.sub(x1, mod)), x2)
    fix = lax.bitwise_and(lax.ne(mod, lax.full_like(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = where_(fix, lax.add(mod, x2), mod)
    quotient = where_(fix, lax.sub(quotient, lax.full_like(quotient, 1)), quotient)
    return lax.round(quotient, lax.RoundingMethod.TO_NEAREST_EVEN), mod


def remainder(x1, x2, /):
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    dtype = aval(x1).dtype
    if dtypes.is_complex(dtype):
        raise TypeError("remainder does not support complex numbers")
    x2 = _nonzero_divisor(x2)
    rem = lax.rem(x1, x2)
    if dtypes.is_unsigned(dtype):
        return rem
    # numpy's remainder takes the sign of the divisor.
    zero = lax.convert_element_type(0, dtype)
    fix = lax.bitwise_and(lax.ne(rem, zero), lax.ne(lax.lt(rem, zero), lax.lt(x2, zero)))
    return lax.select(fix, lax.add(rem, x2), rem)


remainder = binary_compiled_when_eager(remainder)
mod = remainder


def _nonzero_divisor(x2):
    """Integer remainders by zero are 0 in jax.numpy: the divisor 0 is replaced by 1."""
    dtype = aval(x2).dtype
    if not dtypes.is_integer(dtype):
        return x2
    return lax.select(lax.eq(x2, lax.full_like(x2, 0)), lax.full_like(x2, 1), x2)


def fmod(x1, x2, /):
    # Booleans keep C semantics (x % 0 == x); integer divisors 0 become 1.
    integer_operands = dtypes.is_integer(dtypes.result_type(to_array(x1), to_array(x2)))
    x1, x2 = promote_args_numeric("fmod", x1, x2)
    if dtypes.is_complex(aval(x1).dtype):
        raise TypeError("fmod does not support complex numbers")
    return lax.rem(x1, _nonzero_divisor(x2) if integer_operands else x2)


def divmod(x1, x2, /):
    x1, x2 = promote_args_numeric("divmod", x1, x2)
    if dtypes.is_inexact(aval(x1).dtype):
        return _float_divmod(x1, x2)
    return floor_divide(x1, x2), remainder(x1, x2)


def power(x1, x2, /):
    check_arraylike("power", x1, x2)
    if type(x2) is not int and _is_concrete_integer_scalar(x2):
        # A known integer exponent (numpy scalar, 0-d array) is used like a Python int, as jax.numpy does.
        x2 = int(x2)
    if type(x2) is int:
        (x1,) = promote_args_numeric("power", x1)
        if x2 < 0 and dtypes.is_integer(aval(x1).dtype):
            raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({aval(x1).str_short()}, "
                            f"{x2})")  # (jax's TypeError, where numpy raises a ValueError)
        return lax.integer_pow(x1, x2)
    from ._util import promote_shapes

    if dtypes.is_integer(aval(to_array(x2)).dtype) and dtypes.is_inexact(dtypes.result_type(x1, x2)):
        # An integer exponent stays an integer (lax.pow takes one): only the base becomes inexact.
        (x1,) = promote_args_inexact("power", x1)
        (x2,) = promote_args("power", x2)
        return lax.pow(*promote_shapes("power", x1, x2))
    x1_in, x2_in = x1, x2
    x1, x2 = promote_args_numeric("power", x1, x2)
    dtype = aval(x1).dtype
    if dtypes.is_integer(dtype):
        return _weak_if_all_weak(_integer_power(x1, x2), x1_in, x2_in)
    return lax.pow(x1, x2)


def _is_concrete_integer_scalar(value):
    from numax.core.trace import Tracer

    if isinstance(value, Tracer) or type(value) in dtypes.python_scalar_types:
        return False
    value_aval = aval(to_array(value))
    return value_aval.shape == () and dtypes.is_integer(value_aval.dtype)


def _integer_power(base, exponent):
    """Square-and-multiply over the low 6 bits of the exponent (larger powers of |base| > 1 overflow),
    shifting the exponent logically; 0 ** n is 0 for n != 0. These are jax.numpy's integer semantics."""
    from ._shape import broadcast_arrays

    base, exponent = broadcast_arrays(base, exponent)
    zero, one = lax.full_like(exponent, 0), lax.full_like(exponent, 1)
    result = lax.select(lax.bitwise_and(lax.eq(base, zero), lax.ne(exponent, zero)), zero, one)
    for _ in range(6):
        odd = lax.ne(lax.bitwise_and(exponent, one), zero)
        result = lax.select(odd, lax.mul(result, base), result)
        base = lax.mul(base, base)
        exponent = lax.shift_right_logical(exponent, one)
    return result


pow = power


def float_power(x1, x2, /):
    x1, x2 = promote_args_inexact("float_power", x1, x2)
    return lax.pow(x1, x2)


def square(x, /):
    (x,) = promote_args_numeric("square", x)
    return lax.integer_pow(x, 2)


def reciprocal(x, /):
    (x,) = promote_args_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


def floor(x, /):
    (x,) = promote_args("floor", x)
    return x if not dtypes.is_inexact(aval(x).dtype) else lax.floor(x)


def ceil(x, /):
    (x,) = promote_args("ceil", x)
    return x if not dtypes.is_inexact(aval(x).dtype) else lax.ceil(x)


def trunc(x, /):
    (x,) = promote_args("trunc", x)
    if not dtypes.is_inexact(aval(x).dtype):
        return x
    return lax.select(lax.lt(x, scalar_like(0, x)), lax.ceil(x), lax.floor(x))


fix = trunc


def rint(x, /):
    if not dtypes.is_inexact(aval(to_array(x)).dtype):
        # Integers become (strongly typed) floats first, as in jax.numpy.
        x = lax.convert_element_type(to_array(x), dtypes.default_float_dtype())
    (x,) = promote_args_inexact("rint", x)
    if dtypes.is_complex(aval(x).dtype):
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals=0, out=None):
    """Rounds half to even, to `decimals` places (like numpy.round)."""
    decimals = operator.index(decimals)
    (a,) = promote_args("round", a)
    dtype = aval(a).dtype
    if dtype == dtypes.bool_:
        raise TypeError("round does not accept boolean arrays (data type bool is not inexact)")
    if dtypes.is_integer(dtype):
        if decimals < 0:
            raise NotImplementedError("integer round is not implemented for decimals < 0 (as in jax.numpy)")
        return a
    if decimals > np.log10(dtypes.finfo(dtype).max):
        return a  # rounding beyond the type's precision changes nothing
    if dtypes.is_complex(dtype):
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN)
    # float16 is scaled in float32, where 10**decimals times the value does not overflow (as jax.numpy does).
    scaled = lax.convert_element_type(a, dtypes.float32) if dtype == dtypes.float16 else a
    factor = lax.convert_element_type(10.0 ** decimals, aval(scaled).dtype)
    out = lax.div(lax.round(lax.mul(scaled, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(out, dtype) if dtype == dtypes.float16 else out


around = round


def isfinite(x, /):
    (x,) = promote_args("isfinite", x)
    dtype = aval(x).dtype
    if dtypes.is_complex(dtype):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if dtypes.is_float(dtype):
        return lax.is_finite(x)
    return lax.full(aval(x).shape, True, dtypes.bool_)


def isinf(x, /):
    (x,) = promote_args("isinf", x)
    dtype = aval(x).dtype
    if dtypes.is_complex(dtype):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    if dtypes.is_float(dtype):
        return lax.eq(lax.abs(x), lax.convert_element_type(np.inf, dtype))
    return lax.full(aval(x).shape, False, dtypes.bool_)


def isnan(x, /):
    (x,) = promote_args("isnan", x)
    # x != x also for integers: False, with x's weak type (as in jax.numpy).
    return lax.ne(x, x)


def isposinf(x, /):
    (x,) = promote_args("isposinf", x)
    _reject_complex("isposinf", x)
    return lax.bitwise_and(isinf(x), lax.gt(x, scalar_like(0, x))) if dtypes.is_float(aval(x).dtype) else isinf(x)


def isneginf(x, /):
    (x,) = promote_args("isneginf", x)
    _reject_complex("isneginf", x)
    return lax.bitwise_and(isinf(x), lax.lt(x, scalar_like(0, x))) if dtypes.is_float(aval(x).dtype) else isinf(x)


def signbit(x, /):
    (x,) = promote_args("signbit", x)
    dtype = aval(x).dtype
    if dtypes.is_integer(dtype):
        return lax.lt(x, np.zeros((), dtype))
    if dtype == dtypes.bool_:
        return lax.full(aval(x).shape, False, dtypes.bool_)
    _reject_complex("signbit", x)
    int_type = {2: np.int16, 4: np.int32, 8: np.int64}[dtype.itemsize]
    return lax.lt(lax.bitcast_convert_type(x, int_type), np.zeros((), int_type))


def copysign(x1, x2, /):
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    if dtypes.is_complex(aval(x1).dtype):
        raise TypeError("copysign does not accept complex inputs")
    return _copysign(x1, x2)


@custom_jvp
def _copysign(x1, x2):
    """`x1`'s magnitude with `x2`'s sign bit, put together from their bits: exact for NaNs and zeros on every
    platform (negating an absolute value left a float64 NaN's sign unset on the GPU)."""
    dtype = aval(x1).dtype
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    sign = bits(1 << (8 * dtype.itemsize - 1))
    magnitude = lax.bitwise_and(lax.bitcast_convert_type(x1, bits), bits(~sign))
    sign_of_x2 = lax.bitwise_and(lax.bitcast_convert_type(x2, bits), sign)
    result = lax.bitcast_convert_type(lax.bitwise_or(magnitude, sign_of_x2), dtype)
    return lax.convert_element_type(result, dtype, weak_type=aval(x1).weak_type)


@_copysign.defjvp
def _copysign_jvp(primals, tangents):
    # As JAX differentiates where(signbit(x2), -abs(x1), abs(x1)), with abs'(0) = 1: no gradient reaches x2.
    (x1, x2), (t1, _) = primals, tangents
    keeps_sign = lax.ne(lax.ge(x1, lax.full_like(x1, 0)), signbit(x2))
    return _copysign(x1, x2), where_(keeps_sign, t1, lax.neg(t1))


def where_(condition, x, y):
    from ._logic import where

    return where(condition, x, y)


def real(x, /):
    (x,) = promote_args("real", x)
    return lax.real(x) if dtypes.is_complex(aval(x).dtype) else x


def imag(x, /):
    (x,) = promote_args("imag", x)
    return lax.imag(x) if dtypes.is_complex(aval(x).dtype) else lax.full_like(x, 0)


def conjugate(x, /):
    (x,) = promote_args("conjugate", x)
    return lax.conj(x) if dtypes.is_complex(aval(x).dtype) else x


conj = conjugate


def angle(z, deg=False):
    (z,) = promote_args_inexact("angle", z)
    dtype = aval(z).dtype
    if dtypes.is_complex(dtype):
        result = lax.atan2(lax.imag(z), lax.real(z))
    else:
        result = lax.atan2(lax.full_like(z, 0), z)
    result = lax.mul(result, np.asarray(180 / np.pi, aval(result).dtype)) if deg else result
    return lax.convert_element_type(result, aval(result).dtype)  # strongly typed, as in jax.numpy


def _reject_complex(name, *args, error=ValueError):
    """jax.numpy's error for complex operands of a real function: a ValueError where it checks them (hypot,
    isposinf), the TypeError of a real-only lax primitive elsewhere."""
    if any(dtypes.is_complex(aval(a).dtype) for a in args):
        raise error(f"{name} is not well defined for complex-valued inputs; convert to real values first "
                    f"(for example with abs(x))")


def hypot(x1, x2, /):
    return _weak_if_all_weak(_hypot(x1, x2), x1, x2)


def _hypot(x1, x2):
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    _reject_complex("hypot", x1)
    # big * sqrt(1 + (small / big)**2) does not overflow where x1**2 + x2**2 would.
    x1, x2 = lax.abs(x1), lax.abs(x2)
    either_inf = lax.bitwise_or(isinf(x1), isinf(x2))
    big, small = lax.max(x1, x2), lax.min(x1, x2)
    big_is_zero = lax.eq(big, lax.full_like(big, 0))
    ratio = lax.div(small, where_(big_is_zero, lax.full_like(big, 1), big))
    result = where_(big_is_zero, big, lax.mul(big, lax.sqrt(lax.add(lax.integer_pow(ratio, 2), scalar_like(1, ratio)))))
    return where_(either_inf, np.inf, result)


def logaddexp(x1, x2, /):
    x1, x2 = promote_args_inexact("logaddexp", x1, x2)
    return _logaddexp(x1, x2)


def _replace_inf(x):
    """+inf (in the real part) replaced by 0: the logaddexp JVPs' exp(x - out) is then 1, not nan, where both
    are +inf."""
    real_part = lax.real(x) if dtypes.is_complex(aval(x).dtype) else x
    return lax.select(lax.eq(real_part, lax.full_like(real_part, np.inf)), lax.full_like(x, 0), x)


# JAX defines logaddexp and logaddexp2 with custom JVPs: d out = sum_i dx_i * exp(x_i - out) (base 2 for
# logaddexp2), with +inf replaced by 0 on both sides; differentiating the stable formula would give other
# values at ties and infinities.
@custom_jvp
def _logaddexp(x1, x2):
    if dtypes.is_complex(aval(x1).dtype):
        from numax.lax.cumulative import complex_logaddexp  # (loaded on first use, as lax's rarer families)

        return complex_logaddexp(x1, x2)
    biggest = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    # delta is nan when both are infinite of the same sign (the sum is then right) or one is nan.
    softplus = lax.log1p(lax.exp(lax.neg(lax.abs(delta))))
    return where_(isnan(delta), lax.add(x1, x2), lax.add(biggest, softplus))


def _logaddexp_jvp_rule(exp_fn, fn):
    def rule(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        out_safe = _replace_inf(out)
        return out, lax.add(lax.mul(t1, exp_fn(lax.sub(_replace_inf(x1), out_safe))),
                            lax.mul(t2, exp_fn(lax.sub(_replace_inf(x2), out_safe))))

    return rule


_logaddexp.defjvp(_logaddexp_jvp_rule(lax.exp, _logaddexp))


def logaddexp2(x1, x2, /):
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    return _logaddexp2(x1, x2)


@custom_jvp
def _logaddexp2(x1, x2):
    ln2 = lax.convert_element_type(np.log(2), aval(x1).dtype)
    return lax.div(_logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


_logaddexp2.defjvp(_logaddexp_jvp_rule(lax.exp2, _logaddexp2))


def deg2rad(x, /):
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, scalar_like(np.pi / 180, x))


def rad2deg(x, /):
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, scalar_like(180 / np.pi, x))


radians, degrees = deg2rad, rad2deg


def sinc(x, /):
    (x,) = promote_args_inexact("sinc", x)
    pi_x = lax.mul(x, scalar_like(np.pi, x))
    is_zero = lax.eq(x, scalar_like(0, x))
    if config.jax_semantics < (0, 11, 1):
        safe = lax.select(is_zero, lax.full_like(pi_x, 1), pi_x)
        return lax.select(is_zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe), safe))
    # jax >= 0.11.1: sinc(+-inf) = 0 (the limit), also for complex x = +-inf + finite j; jax 0.10 gives nan.
    if dtypes.is_complex(aval(x).dtype):
        re = lax.real(x)
        is_inf = lax.bitwise_and(lax.eq(lax.abs(re), lax.full_like(re, np.inf)), lax.is_finite(lax.imag(x)))
    else:
        is_inf = lax.eq(lax.abs(x), lax.full_like(x, np.inf))
    safe = lax.select(lax.bitwise_or(is_zero, is_inf), lax.full_like(pi_x, 1), pi_x)
    result = lax.select(is_zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe), safe))
    return lax.select(is_inf, lax.full_like(x, 0), result)


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_maclaurin(k, x):
    """The k-th derivative of sin(y)/y at y = 0, shaped like x. Its JVP is the next derivative times the
    tangent, so sinc's derivatives of every order at 0 are exact (as jax.numpy.sinc's)."""
    return lax.full_like(x, 0 if k % 2 else (-1) ** (k // 2) / (k + 1))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_maclaurin(k, x), lax.mul(_sinc_maclaurin(k + 1, x), t)


def _weak_if_all_weak(result, *args):
    """Strips the weak type unless the promotion is weak and every argument was weakly typed (Python scalars,
    weak arrays) or 0-d (`hypot(uint8_scalar_array, 2.5)`); jax.numpy's heaviside, hypot, power and logical
    functions type their results so (an array of higher rank gives a strong result there)."""
    arrays = [to_array(a) for a in args]
    kinds = [dtypes.dtype_and_weak_of(a) for a in arrays]
    if all(weak or aval(a).ndim == 0 for a, (_, weak) in zip(arrays, kinds)) and (
            dtypes.result_type_and_weak(*kinds)[1]):
        return result
    return lax.convert_element_type(result, aval(result).dtype)


def heaviside(x1, x2, /):
    return _weak_if_all_weak(_heaviside(x1, x2), x1, x2)


def _heaviside(x1, x2):
    x1, x2 = promote_args_inexact("heaviside", x1, x2)
    _reject_complex("heaviside", x1, error=TypeError)
    zero, one = lax.full_like(x1, 0), lax.full_like(x1, 1)
    step = where_(lax.lt(x1, zero), zero, where_(lax.gt(x1, zero), one, x2))
    return where_(isnan(x1), x1, step)


def fmax(x1, x2, /):
    x1, x2 = promote_args("fmax", x1, x2)
    return where_(isnan(x2), x1, where_(isnan(x1), x2, lax.max(x1, x2)))


def fmin(x1, x2, /):
    x1, x2 = promote_args("fmin", x1, x2)
    return where_(isnan(x2), x1, where_(isnan(x1), x2, lax.min(x1, x2)))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote_args_inexact("isclose", a, b)
    dtype = aval(a).dtype
    if dtypes.is_complex(dtype):
        dtype = np.dtype(np.float32 if dtype == dtypes.complex64 else np.float64)
    close = lax.le(lax.abs(lax.sub(a, b)), lax.add(lax.convert_element_type(atol, dtype),
                                                    lax.mul(lax.convert_element_type(rtol, dtype), lax.abs(b))))
    finite = lax.bitwise_and(isfinite(a), isfinite(b))
    same_inf = lax.bitwise_and(lax.bitwise_not(finite), lax.eq(a, b))
    result = lax.bitwise_or(lax.bitwise_and(close, finite), same_inf)
    if equal_nan:
        result = lax.bitwise_or(result, lax.bitwise_and(isnan(a), isnan(b)))
    return result


def ldexp(x1, x2, /):
    """x1 * 2**x2 for a real x1 and an integer (or boolean) x2."""
    check_arraylike("ldexp", x1, x2)
    x1_dtype, x2_dtype = aval(to_array(x1)).dtype, aval(to_array(x2)).dtype
    if dtypes.is_complex(x1_dtype) or dtypes.is_inexact(x2_dtype):
        raise ValueError(f"ldexp not supported for input types {(x1_dtype, x2_dtype)}: x1 must be real and x2 an "
                         "integer")
    (x1,) = promote_args_inexact("ldexp", x1)
    dtype = aval(x1).dtype
    # Three exact powers of two (built from their bits) keep each factor finite where x1 * 2**x2 is.
    info = dtypes.finfo(dtype)
    nmant, bias = int(info.nmant), int(info.maxexp) - 1
    int_type = {2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}[dtype.itemsize]
    total = lax.clamp(np.int32(-3 * bias), lax.convert_element_type(to_array(x2), dtypes.int32), np.int32(3 * bias))
    result = x1
    for part in range(3):
        share = lax.div(total, np.int32(3 - part))
        total = lax.sub(total, share)
        biased = lax.convert_element_type(lax.add(share, np.int32(bias)), int_type)
        power = lax.bitcast_convert_type(lax.shift_left(biased, np.asarray(nmant, int_type)), dtype)
        result, power = promote_args("ldexp", result, power)
        result = lax.mul(result, power)
    return result


def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1 (0 for 0, inf, nan)."""
    (x,) = promote_args_inexact("frexp", x)
    dtype = aval(x).dtype
    if dtypes.is_complex(dtype):
        raise TypeError("frexp does not support complex numbers")
    return _frexp(x)


@custom_jvp
def _frexp(x):
    dtype = aval(x).dtype
    info = dtypes.finfo(dtype)
    nmant, bits = int(info.nmant), dtype.itemsize * 8
    int_type = {16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}[bits]
    exponent_mask = (1 << (bits - 1 - nmant)) - 1
    bias = int(info.maxexp) - 1
    # Subnormals are scaled into the normal range first.
    subnormal = lax.lt(lax.abs(x), np.asarray(info.smallest_normal, dtype))
    scaled = where_(subnormal, lax.mul(x, np.asarray(2.0 ** (nmant + 1), dtype)), x)
    raw = lax.bitcast_convert_type(scaled, int_type)
    biased = lax.bitwise_and(lax.shift_right_logical(raw, np.asarray(nmant, int_type)),
                             np.asarray(exponent_mask, int_type))
    exponent = lax.sub(biased, np.asarray(bias - 1, int_type))
    exponent = where_(subnormal, lax.sub(exponent, np.asarray(nmant + 1, int_type)), exponent)
    keep = np.asarray(~(exponent_mask << nmant), int_type)
    mantissa_bits = lax.bitwise_or(lax.bitwise_and(raw, keep), np.asarray((bias - 1) << nmant, int_type))
    mantissa = lax.bitcast_convert_type(mantissa_bits, dtype)
    special = lax.bitwise_or(lax.eq(x, lax.full_like(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    exponent = lax.convert_element_type(where_(special, np.asarray(0, int_type), exponent), dtypes.int32)
    return where_(special, x, mantissa), exponent


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
    """The mantissa's tangent is x's scaled by 2**-exponent (JAX's rule: the bit manipulation itself has
    no derivative); the exponent is an integer."""
    (x,), (t,) = primals, tangents
    mantissa, exponent = _frexp(x)
    scale = lax.exp2(lax.neg(lax.convert_element_type(exponent, aval(t).dtype)))
    return (mantissa, exponent), (lax.mul(t, scale), np.zeros(aval(exponent).shape, dtypes.float0))


def modf(x, /, out=None):
    """(fractional part, integral part), both with x's sign (inf gives nan and inf, as in jax.numpy)."""
    (x,) = promote_args_inexact("modf", x)
    whole = trunc(x)
    return lax.sub(x, whole), whole


def _euclid(a, b):
    """gcd of non-negative integer arrays by a Euclid loop unrolled to its worst case (Fibonacci inputs)."""
    dtype = aval(a).dtype
    steps = {8: 13, 16: 25, 32: 48, 64: 94}[dtype.itemsize * 8]
    zero, one = lax.full_like(b, 0), lax.full_like(b, 1)
    for _ in range(steps):
        nonzero = lax.ne(b, zero)
        a, b = lax.select(nonzero, b, a), lax.select(nonzero, lax.rem(a, lax.select(nonzero, b, one)), zero)
    return a


def gcd(x1, x2, /):
    x1, x2 = promote_args("gcd", x1, x2)
    if not dtypes.is_integer(aval(x1).dtype):
        raise TypeError(f"gcd requires integer arguments, got {aval(x1).dtype}")
    from ._shape import broadcast_arrays

    x1, x2 = broadcast_arrays(x1, x2)
    return _euclid(absolute(x1), absolute(x2))


def lcm(x1, x2, /):
    x1, x2 = promote_args("lcm", x1, x2)
    if not dtypes.is_integer(aval(x1).dtype):
        raise TypeError(f"lcm requires integer arguments, got {aval(x1).dtype}")
    from ._shape import broadcast_arrays

    x1, x2 = broadcast_arrays(x1, x2)
    divisor = gcd(x1, x2)
    zero = lax.full_like(divisor, 0)
    is_zero = lax.eq(divisor, zero)
    quotient = lax.div(absolute(x1), lax.select(is_zero, lax.full_like(divisor, 1), divisor))
    return lax.select(is_zero, zero, lax.mul(quotient, absolute(x2)))


def isreal(x, /):
    zeros_imag = imag(x)
    return lax.eq(zeros_imag, lax.full_like(zeros_imag, 0))


def iscomplex(x, /):
    zeros_imag = imag(x)
    return lax.ne(zeros_imag, lax.full_like(zeros_imag, 0))
