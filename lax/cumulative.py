"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin and cumlogsumexp.

Each lowers to a `stablehlo.reduce_window` whose window spans the whole axis, padded by `size - 1`
identities before the data (after it, when reversed). XLA rewrites such windows into a logarithmic-depth
scan, so this is efficient, and integer results are exact.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, is_static_shape
from ..core.primitives import Primitive
from ..core.staging import trace_to_closed_program
from ..core.trace import get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.lower import register_lowering
from . import typing as T
from .reductions import identity_of
from .windows import lower_reduce_window

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
           "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _define_cumulative(name, kind, allowed):
    primitive = Primitive(name)

    def abstract_eval(operand, axis, reverse):
        T.check_dtype(name, operand, allowed)
        if not 0 <= axis < operand.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape {operand.shape}")
        return operand

    def lower(ctx, operand, axis, reverse):
        aval = ctx.avals_in[0]
        rank, size = aval.ndim, aval.shape[axis]
        if not is_static_shape((size,)):
            # The window spans the axis, and a window's size is a static attribute.
            raise NotImplementedError(f"export: primitive {name} is not supported with symbolic shapes along a "
                                      f"symbolic axis (axis {axis} of {aval.str_short()}); scan along a static axis")
        if size == 0:
            return operand  # StableHLO has no empty windows; there is nothing to scan
        window = [1] * rank
        window[axis] = size
        padding = [(0, 0)] * rank
        padding[axis] = (0, size - 1) if reverse else (size - 1, 0)
        identity = (np.array(-np.inf, aval.dtype) if kind == "logaddexp"
                    else identity_of({"add": "sum", "mul": "prod"}.get(kind, kind), aval.dtype))
        init = ctx.builder.constant(identity)
        combiner = _complex_combiner(kind, aval.dtype) if dtypes.is_complex(aval.dtype) else kind
        return lower_reduce_window(ctx, operand, init, combiner, window_dimensions=tuple(window),
                                   window_strides=(1,) * rank, padding=tuple(padding), base_dilation=(1,) * rank,
                                   window_dilation=(1,) * rank)

    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lower)
    dynamic_shapes.polymorphic_primitives.add(primitive)  # along a static axis

    def wrapper(operand, axis=0, reverse=False):
        aval = get_aval_of(operand)
        if aval.ndim == 0:
            raise ValueError(f"{name} needs an operand of rank at least 1, got a 0-d operand")
        if not 0 <= int(axis) < aval.ndim:  # no negative axes, as jax.lax (jax.numpy normalizes them first)
            raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape {aval.shape} (lax "
                             "operations do not take negative axes)")
        return primitive.bind(operand, axis=int(axis), reverse=bool(reverse))

    wrapper.__name__ = name
    wrapper.__doc__ = (f"The running {kind} of `operand` along `axis` (from the end, when `reverse`); the result "
                       "has the operand's shape.")
    return primitive, wrapper


def _complex_combiner(kind, dtype):
    """The combining computation of a complex scan, as a program of two scalars: StableHLO's maximum, minimum
    and the window logaddexp are real-only, so complex ones are spelled out (lexicographic order, as in JAX)."""
    from . import elementwise

    if kind in ("max", "min"):
        combine = elementwise.max if kind == "max" else elementwise.min
    elif kind == "logaddexp":
        combine = complex_logaddexp
    else:
        return kind  # add and mul are complex StableHLO operations
    scalar = ShapedArray((), dtype)
    return trace_to_closed_program(lambda a, b: [combine(a, b)], [scalar, scalar])


def complex_logaddexp(x, y):
    """log(exp(x) + exp(y)) for complex values (also jax.numpy.logaddexp's): the larger (lexicographically)
    plus log1p(exp(x + y - 2 max)), with the imaginary part wrapped into [-pi, pi) as jax.numpy's logaddexp does."""
    from .elementwise import add, complex, exp, imag, log1p, lt, max, mul, real, rem, select, sub

    larger = max(x, y)
    out = add(larger, log1p(exp(sub(add(x, y), mul(larger, np.array(2, get_aval_of(x).dtype))))))
    angle = imag(out)
    pi, two_pi = (np.array(v, get_aval_of(angle).dtype) for v in (np.pi, 2 * np.pi))
    wrapped = rem(add(angle, pi), two_pi)
    wrapped = select(lt(wrapped, np.zeros((), get_aval_of(angle).dtype)), add(wrapped, two_pi), wrapped)
    return complex(real(out), sub(wrapped, pi))


# As in JAX, every cumulative reduction takes any number (not bool).
cumsum_p, cumsum = _define_cumulative("cumsum", "add", T.numeric_dtypes)
cumprod_p, cumprod = _define_cumulative("cumprod", "mul", T.numeric_dtypes)
cummax_p, cummax = _define_cumulative("cummax", "max", T.numeric_dtypes)
cummin_p, cummin = _define_cumulative("cummin", "min", T.numeric_dtypes)
cumlogsumexp_p, cumlogsumexp = _define_cumulative("cumlogsumexp", "logaddexp", T.inexact_dtypes)


# --- differentiation rules -------------------------------------------------------------------------------------
# cumsum is linear. The others follow JAX: their JVP is the JVP of a parallel prefix scan (the same
# associative_scan recursion as JAX's, so that ties of cummax/cummin share the tangent as JAX's do),
# run on (value, tangent) pairs; a reduce_window is not differentiable to arbitrary order, the scan is.
from ..core.primitives import jvp_rules  # noqa: E402
from . import ad  # noqa: E402


def _cumsum_transpose(ct, operand, axis, reverse):
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


def _pair_jvp(primitive):
    """Combines two (value, tangent) pairs by the JVP rule of a binary elementwise primitive."""
    def combine(a, b):
        return jvp_rules[primitive]((a[0], b[0]), (a[1], b[1]))
    return combine


def _logaddexp_pair(a, b):
    """log(exp(a) + exp(b)) and its tangent, as jax.numpy.logaddexp computes them: infinities of one sign
    give their sum, and an infinite result is replaced by zero in the tangent's exponents."""
    from .elementwise import abs, add, eq, exp, log1p, max, mul, ne, neg, real, select, sub

    (x, tx), (y, ty) = a, b
    if dtypes.is_complex(get_aval_of(x).dtype):
        out = complex_logaddexp(x, y)
    else:
        delta = sub(x, y)
        out = select(ne(delta, delta), add(x, y), add(max(x, y), log1p(exp(neg(abs(delta))))))

    def finite_or_zero(v):
        aval = get_aval_of(v)
        real_part = real(v) if dtypes.is_complex(aval.dtype) else v
        infinite = eq(real_part, np.array(np.inf, get_aval_of(real_part).dtype))
        return select(infinite, np.zeros(aval.shape, aval.dtype), v)

    weight_x = exp(sub(finite_or_zero(x), finite_or_zero(out)))
    weight_y = exp(sub(finite_or_zero(y), finite_or_zero(out)))
    return out, ad.add_tangents(mul(tx, weight_x), mul(ty, weight_y))


def _interleave(even, odd, axis):
    """even[0], odd[0], even[1], odd[1], ... along `axis` (len(even) is len(odd) or one more)."""
    from .elementwise import add
    from .shapes import pad

    rank = get_aval_of(even).ndim
    same = get_aval_of(even).shape[axis] == get_aval_of(odd).shape[axis]
    even_config, odd_config = [(0, 0, 0)] * rank, [(0, 0, 0)] * rank
    even_config[axis] = (0, 1 if same else 0, 1)
    odd_config[axis] = (1, 0 if same else 1, 1)
    zero = np.zeros((), get_aval_of(even).dtype)
    return add(pad(even, zero, even_config), pad(odd, zero, odd_config))


def _associative_scan(combine, elements, axis):
    """The inclusive prefix combination of the pairs `elements` along `axis`, by the odd/even recursion."""
    from .shapes import concatenate
    from .slicing import slice_in_dim

    size = get_aval_of(elements[0]).shape[axis]
    if size < 2:
        return elements

    def cut(pair, start, limit, stride=1):
        return [slice_in_dim(e, start, limit, stride, axis) for e in pair]

    odd = _associative_scan(combine, combine(cut(elements, 0, size - 1, 2), cut(elements, 1, size, 2)), axis)
    if size % 2 == 0:
        odd_size = get_aval_of(odd[0]).shape[axis]
        even = combine(cut(odd, 0, odd_size - 1), cut(elements, 2, size, 2))
    else:
        even = combine(odd, cut(elements, 2, size, 2))
    even = [concatenate([first, rest], axis) for first, rest in zip(cut(elements, 0, 1), even)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _scan_jvp(primitive, combine):
    def rule(primals, tangents, axis, reverse):
        from .shapes import rev

        (x,), (t,) = primals, tangents
        pair = [x, ad.instantiate(t)]
        if reverse:
            pair = [rev(e, (axis,)) for e in pair]
        out, tangent_out = _associative_scan(lambda a, b: list(combine(a, b)), pair, axis)
        if reverse:
            out, tangent_out = rev(out, (axis,)), rev(tangent_out, (axis,))
        return out, tangent_out

    jvp_rules[primitive] = rule


def _define_scan_jvps():
    from .elementwise import max_p, min_p, mul_p

    _scan_jvp(cumprod_p, _pair_jvp(mul_p))
    _scan_jvp(cummax_p, _pair_jvp(max_p))
    _scan_jvp(cummin_p, _pair_jvp(min_p))
    _scan_jvp(cumlogsumexp_p, _logaddexp_pair)


ad.deflinear(cumsum_p, _cumsum_transpose)
_define_scan_jvps()


# --- batching rules -----------------------------------------------------------------------------------------------
# The scan runs along the same axis of each example: only its number shifts past the batch dimension.
from ..core.primitives import batching_rules  # noqa: E402


def _batch_cumulative(primitive):
    def rule(values, dims, axis, reverse):
        (x,), (dim,) = values, dims
        return primitive.bind(x, axis=axis + (axis >= dim), reverse=reverse), dim

    batching_rules[primitive] = rule


for _primitive in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    _batch_cumulative(_primitive)
