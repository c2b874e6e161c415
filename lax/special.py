"""Special-function primitives beyond the gamma family of `elementwise`: the regularized incomplete gamma
functions and their derivatives in `a`, the regularized incomplete beta function, Hurwitz zeta and the
exponentially scaled modified Bessel functions of orders 0 and 1.

StableHLO has no op for most of these. zeta and bessel_i1e lower to CHLO ops (XLA expands them), the rest
inline an algorithm written with lax ops into their lowering, as XLA's math library and JAX do: a power
series or continued fraction run by a `while_loop` until every element has converged (igamma and its
relatives, after Cephes), a modified Lentz continued fraction (DLMF 8.17.22), and Cephes' Chebyshev
expansions (bessel_i0e). float16 and bfloat16 operands are computed in float32.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.primitives import Primitive
from ..core.staging import trace_to_closed_program
from ..lowering.lower import broadcast_operands, elementwise_lowering, register_lowering
from . import ad, batching
from . import typing as T
from .conversions import convert_element_type
from .elementwise import (
    abs,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    digamma,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    lgamma,
    log,
    log1p,
    lt,
    mul,
    ne,
    neg,
    rem,
    select,
    sign,
    sqrt,
    sub,
)
from .reductions import reduce_or
from .while_loop import while_loop

__all__ = ["bessel_i0e", "bessel_i1e", "betainc", "igamma", "igamma_grad_a", "igammac", "random_gamma_grad",
           "zeta"]


# --- helpers for the algorithms ------------------------------------------------------------------------
def _const(like, value):
    """`value` as a host constant of `like`'s dtype (the algorithms run on one dtype throughout)."""
    from ..core.trace import get_aval_of

    return np.asarray(value, get_aval_of(like).dtype)


def _full(like, value):
    from .shapes import full_like

    return full_like(like, _const(like, value))


def _dtype_of(x):
    from ..core.trace import get_aval_of

    return get_aval_of(x).dtype


def _any(predicate):
    from ..core.trace import get_aval_of

    return reduce_or(predicate, tuple(range(get_aval_of(predicate).ndim)))


def _is_nan(x):
    return ne(x, x)


def _any_of(*predicates):
    result = predicates[0]
    for predicate in predicates[1:]:
        result = bitwise_or(result, predicate)
    return result


def _eps(x):
    return float(np.finfo(_dtype_of(x)).eps)


# --- defining a primitive whose lowering inlines an algorithm --------------------------------------------
_UPCAST = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _algorithm_lowering(algorithm):
    """A lowering that broadcasts the operands to the output's shape and inlines `algorithm(*operands)`
    traced with lax ops (in float32 for 16-bit floats, whose precision the algorithms' constants exceed)."""

    def rule(ctx, *operands):
        operands = broadcast_operands(ctx, operands)
        out = ctx.aval_out
        arg_avals = [ShapedArray(out.shape, out.dtype)] * len(operands)

        def body(*args):
            if out.dtype in _UPCAST:
                args = [convert_element_type(a, np.float32) for a in args]
            return [convert_element_type(algorithm(*args), out.dtype)]

        closed = trace_to_closed_program(body, arg_avals)
        return ctx.lower_program(closed, operands)[0]

    rule.__name__ = f"lower_{algorithm.__name__.lstrip('_')}"
    return rule


def _define(name, arity, lowering, doc):
    primitive = Primitive(name)
    if arity == 1:
        primitive.def_abstract_eval(T.unary(name, T.float_dtypes))
        batching.defvectorized(primitive)
    else:
        primitive.def_abstract_eval(T.naryop(name, T.float_dtypes))
        batching.defbroadcasting(primitive)
    register_lowering(primitive, lowering)

    def wrapper(*args):
        return primitive.bind(*args)

    wrapper.__name__ = name
    wrapper.__doc__ = doc
    return primitive, wrapper


# --- incomplete gamma: power series and continued fraction ------------------------------------------------
_VALUE, _DERIVATIVE, _SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


def _igamma_series(ax, x, a, enabled, mode):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)...(a+n)) (Cephes igam), and its derivative
    in `a`; each element stops updating once its terms fall below machine epsilon."""
    eps = _const(x, _eps(x))

    def body(values):
        active, r, term, total, dterm_da, dtotal_da = values
        r_next = add(r, _const(r, 1))
        dterm_next = sub(mul(dterm_da, div(x, r_next)), div(mul(term, x), mul(r_next, r_next)))
        dtotal_next = add(dtotal_da, dterm_next)
        term_next = mul(term, div(x, r_next))
        total_next = add(total, term_next)
        if mode == _VALUE:
            going = gt(div(term_next, total_next), eps)
        else:
            going = gt(abs(div(dterm_next, dtotal_next)), eps)
        new = (r_next, term_next, total_next, dterm_next, dtotal_next)
        kept = [select(active, n, o) for n, o in zip(new, values[1:])]
        return (bitwise_and(active, going), *kept)

    one, zero = _full(x, 1), _full(x, 0)
    _, _, _, total, _, dtotal_da = while_loop(lambda v: _any(v[0]), body, (enabled, a, one, one, zero, zero))
    if mode == _VALUE:
        return div(mul(total, ax), a)
    dlogax_da = sub(log(x), digamma(add(a, _const(a, 1))))
    if mode == _DERIVATIVE:
        return div(mul(ax, add(mul(total, dlogax_da), dtotal_da)), a)
    return div(mul(neg(add(dtotal_da, mul(total, dlogax_da))), x), a)


def _igammac_continued_fraction(ax, x, a, enabled, mode):
    """Q(a, x) = x^a e^-x / Gamma(a) * (the continued fraction of Cephes igamc), with its derivative in `a`
    carried along the convergents; at most 2000 steps, convergents rescaled to stay finite."""
    eps = _eps(x)
    k_eps, k_big = _const(x, eps), _const(x, 1 / eps)

    def body(values):
        active, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = values
        c = add(c, _const(c, 1))
        y = add(y, _const(y, 1))
        z = add(z, _const(z, 2))
        yc = mul(y, c)
        pk = sub(mul(pkm1, z), mul(pkm2, yc))
        qk = sub(mul(qkm1, z), mul(qkm2, yc))
        qk_nonzero = ne(qk, _const(qk, 0))
        r = div(pk, qk)
        t_new = select(qk_nonzero, abs(div(sub(ans, r), r)), _full(r, 1))
        ans_new = select(qk_nonzero, r, ans)
        dpk = add(sub(sub(mul(dpkm1, z), pkm1), mul(dpkm2, yc)), mul(pkm2, c))
        dqk = add(sub(sub(mul(dqkm1, z), qkm1), mul(dqkm2, yc)), mul(qkm2, c))
        dans_new = select(qk_nonzero, div(sub(dpk, mul(ans_new, dqk)), qk), dans)
        dans_change = select(qk_nonzero, abs(sub(dans_new, dans)), _full(dans, 1))
        # The carried convergents shift by one: (pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1).
        convergents = [pk, qk, pkm1, qkm1, dpkm1, dqkm1, dpk, dqk]
        rescale = gt(abs(pk), k_big)
        pkm1_n, qkm1_n, pkm2_n, qkm2_n, dpkm2_n, dqkm2_n, dpkm1_n, dqkm1_n = [
            select(rescale, mul(v, k_eps), v) for v in convergents]
        going = gt(t_new, k_eps) if mode == _VALUE else gt(dans_change, k_eps)
        new = (ans_new, t_new, y, z)
        kept = [select(active, n, o) for n, o in zip(new, values[1:5])]
        new_convergents = (pkm1_n, qkm1_n, pkm2_n, qkm2_n, dpkm2_n, dqkm2_n, dpkm1_n, dqkm1_n, dans_new)
        kept_convergents = [select(active, n, o) for n, o in zip(new_convergents, values[6:])]
        return (bitwise_and(active, going), *kept, c, *kept_convergents)

    def cond(values):
        return bitwise_and(lt(values[5], _const(values[5], 2000)), _any(values[0]))

    one, zero = _full(x, 1), _full(x, 0)
    y = sub(one, a)
    z = add(add(x, y), one)
    pkm1 = add(x, one)
    qkm1 = mul(z, x)
    ans = div(pkm1, qkm1)
    dqkm1 = neg(x)
    dans = div(sub(zero, mul(ans, dqkm1)), qkm1)
    init = (enabled, ans, one, y, z, _const(x, 0), pkm1, qkm1, one, x, zero, zero, zero, dqkm1, dans)
    values = while_loop(cond, body, init)
    ans, dans = values[1], values[14]
    if mode == _VALUE:
        return mul(ans, ax)
    dlogax_da = sub(log(x), digamma(a))
    if mode == _DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans))
    return neg(mul(add(dans, mul(ans, dlogax_da)), x))


def _log_ax(a, x):
    """log(x^a e^-x / Gamma(a)), whether it underflows, and its exponential."""
    log_ax = sub(sub(mul(a, log(x)), x), lgamma(a))
    underflow = lt(log_ax, _const(a, -np.log(np.finfo(_dtype_of(a)).max)))
    return exp(log_ax), underflow


def _at_infinite_a(a, x_is_inf, out, limit):
    """jax from 0.11 on: at a = inf the limit (0 for P, 1 for Q) for finite x, nan at x = inf; earlier jax
    releases (whose semantics numax follows with their jaxlib) computed nan and the x = inf value there."""
    if config.jax_semantics < (0, 11, 0):
        return out
    at_limit = select(x_is_inf, _full(a, np.nan), _full(a, limit))
    return select(eq(a, _const(a, np.inf)), at_limit, out)


def _igamma_masks(a, x):
    """The special cases P(a, x) and Q(a, x) share: x == 0, x == inf, a == 0, and where they are undefined
    (nan: a negative argument, a == x == 0, a nan)."""
    zero = _const(x, 0)
    x_is_zero, x_is_inf, a_is_zero = eq(x, zero), eq(x, _const(x, np.inf)), eq(a, zero)
    domain_error = _any_of(lt(x, zero), lt(a, zero), bitwise_and(a_is_zero, x_is_zero), _is_nan(a), _is_nan(x))
    return x_is_zero, x_is_inf, a_is_zero, domain_error


def _igamma(a, x):
    x_is_zero, x_is_inf, _, domain_error = _igamma_masks(a, x)
    use_igammac = bitwise_and(ge(x, _const(x, 1)), gt(x, a))
    ax, underflow = _log_ax(a, x)
    enabled = bitwise_not(_any_of(x_is_zero, domain_error, underflow, x_is_inf))
    from_fraction = sub(_const(a, 1), _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac), _VALUE))
    from_series = _igamma_series(ax, x, a, bitwise_and(enabled, bitwise_not(use_igammac)), _VALUE)
    out = select(use_igammac, from_fraction, from_series)
    out = select(x_is_zero, _full(a, 0), out)
    out = select(x_is_inf, _full(a, 1), out)
    out = _at_infinite_a(a, x_is_inf, out, 0)
    return select(domain_error, _full(a, np.nan), out)


def _igammac(a, x):
    _, x_is_inf, a_is_zero, domain_error = _igamma_masks(a, x)
    use_igamma = bitwise_or(lt(x, _const(x, 1)), lt(x, a))
    ax, underflow = _log_ax(a, x)
    enabled = bitwise_not(_any_of(domain_error, underflow, x_is_inf, a_is_zero))
    from_series = sub(_const(a, 1), _igamma_series(ax, x, a, bitwise_and(enabled, use_igamma), _VALUE))
    from_fraction = _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, bitwise_not(use_igamma)), _VALUE)
    out = select(use_igamma, from_series, from_fraction)
    out = select(bitwise_or(x_is_inf, a_is_zero), _full(a, 0), out)
    out = _at_infinite_a(a, x_is_inf, out, 1)
    return select(domain_error, _full(a, np.nan), out)


def _igamma_derivative(mode):
    """dP(a, x)/da (mode _DERIVATIVE) or the reparameterization gradient of a Gamma(a) sample,
    -(dP/da) / (dP/dx) (mode _SAMPLE_DERIVATIVE)."""

    def algorithm(a, x):
        zero = _const(x, 0)
        x_is_zero = eq(x, zero)
        is_nan = bitwise_or(_is_nan(a), _is_nan(x))
        domain_error = bitwise_or(lt(x, zero), le(a, zero))
        use_igammac = bitwise_and(gt(x, _const(x, 1)), gt(x, a))
        ax, underflow = _log_ax(a, x)
        enabled = bitwise_not(_any_of(x_is_zero, domain_error, underflow, is_nan))
        from_fraction = neg(_igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac), mode))
        from_series = _igamma_series(ax, x, a, bitwise_and(enabled, bitwise_not(use_igammac)), mode)
        out = select(use_igammac, from_fraction, from_series)
        out = select(x_is_zero, _full(out, 0), out)
        return select(bitwise_or(domain_error, is_nan), _full(a, np.nan), out)

    algorithm.__name__ = f"_igamma_{mode}"
    return algorithm


igamma_p, igamma = _define("igamma", 2, _algorithm_lowering(_igamma),
                           "The regularized lower incomplete gamma function P(a, x).")
igammac_p, igammac = _define("igammac", 2, _algorithm_lowering(_igammac),
                             "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).")
igamma_grad_a_p, igamma_grad_a = _define("igamma_grad_a", 2, _algorithm_lowering(_igamma_derivative(_DERIVATIVE)),
                                         "The derivative of igamma(a, x) with respect to a.")
random_gamma_grad_p, random_gamma_grad = _define(
    "random_gamma_grad", 2, _algorithm_lowering(_igamma_derivative(_SAMPLE_DERIVATIVE)),
    "d sample / d a for a sample x of Gamma(a, 1), by implicit differentiation of its CDF igamma(a, x).")


def _igamma_derivative_x(t, a, x):
    return mul(t, exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a))))


ad.defjvp(igamma_p, lambda t, a, x: mul(t, igamma_grad_a(a, x)), _igamma_derivative_x)
ad.defjvp(igammac_p, lambda t, a, x: neg(mul(t, igamma_grad_a(a, x))),
          lambda t, a, x: neg(_igamma_derivative_x(t, a, x)))


def _not_differentiable(name, operand):
    def derivative(*_args):
        raise ValueError(f"{name} is not differentiable with respect to {operand}")

    return derivative


ad.defjvp(igamma_grad_a_p, _not_differentiable("igamma_grad_a", "a"), _not_differentiable("igamma_grad_a", "x"))
ad.defjvp(random_gamma_grad_p, _not_differentiable("random_gamma_grad", "a"),
          _not_differentiable("random_gamma_grad", "x"))


# --- regularized incomplete beta ---------------------------------------------------------------------------
def _lentz(numerator, a, b, x, iterations):
    """The continued fraction 1 / (1 + d1 / (1 + d2 / ...)) by the modified Lentz method, `numerator(n)` giving
    the n-th partial numerator (partial denominators are 1 after the leading 0); stops once every element's
    step changes the value by under eps / 2 (converged elements keep multiplying by ~1)."""
    tiny = _const(x, _eps(x) / 2)

    def nudge(v):
        return select(lt(abs(v), tiny), _full(v, tiny), v)

    def body(values):
        n, _, c, d, h = values
        partial = numerator(n)
        c = nudge(add(_const(c, 1), div(partial, c)))
        d = div(_const(d, 1), nudge(add(_const(d, 1), mul(partial, d))))
        delta = mul(c, d)
        going = _any(ge(abs(sub(delta, _const(delta, 1))), tiny))
        return add(n, np.int32(1)), going, c, d, mul(h, delta)

    def cond(values):
        return bitwise_and(lt(values[0], np.int32(iterations)), values[1])

    start = _full(x, _eps(x) / 2)
    return while_loop(cond, body, (np.int32(1), np.asarray(True), start, _full(x, 0), start))[4]


def _betainc(a, b, x):
    zero, one = _const(x, 0), _const(x, 1)
    a_is_zero = bitwise_or(eq(a, zero), eq(b, _const(b, np.inf)))
    b_is_zero = bitwise_or(eq(b, zero), eq(a, _const(a, np.inf)))
    x_is_zero, x_is_one = eq(x, zero), eq(x, one)
    result_is_zero = bitwise_or(bitwise_and(b_is_zero, bitwise_not(x_is_one)), bitwise_and(a_is_zero, x_is_zero))
    result_is_one = bitwise_or(bitwise_and(a_is_zero, bitwise_not(x_is_zero)), bitwise_and(b_is_zero, x_is_one))
    result_is_nan = _any_of(lt(a, zero), lt(b, zero), lt(x, zero), gt(x, one), bitwise_and(a_is_zero, b_is_zero),
                            _is_nan(a), _is_nan(b), _is_nan(x))
    # The fraction converges quickly for x < (a + 1) / (a + b + 2); beyond, use I_x(a, b) = 1 - I_{1-x}(b, a).
    direct = lt(x, div(add(a, one), add(add(a, b), _const(b, 2))))
    a, b = select(direct, a, b), select(direct, b, a)
    x = select(direct, x, sub(one, x))

    def numerator(n):
        # d_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) at even n, d_{2m} = m(b-m)x / ((a+2m-1)(a+2m)) at odd n,
        # with m = (n - 1) // 2; the first partial numerator is 1.
        m = convert_element_type(div(sub(n, np.int32(1)), np.int32(2)), _dtype_of(x))
        a_2m = add(a, mul(_const(x, 2), m))
        odd_index = neg(div(mul(mul(add(a, m), add(add(a, b), m)), x), mul(a_2m, add(a_2m, one))))
        # At m == 0, written without (a + m) / a, which loses accuracy for tiny a.
        odd_index = select(eq(m, zero), neg(div(mul(add(a, b), x), add(a, one))), odd_index)
        even_index = div(mul(mul(m, sub(b, m)), x), mul(sub(a_2m, one), a_2m))
        value = select(eq(rem(n, np.int32(2)), np.int32(0)), odd_index, even_index)
        return select(eq(n, np.int32(1)), _full(x, 1), value)

    iterations = 200 if _dtype_of(x) == np.float32 else 600
    fraction = _lentz(numerator, a, b, x, iterations)
    lbeta_without_a = sub(lgamma(b), lgamma(add(a, b)))
    lbeta = add(lgamma(a), lbeta_without_a)
    # a Gamma(a) -> 1 as a -> 0, which keeps the prefactor finite for tiny a.
    tiny_a = lt(a, _const(a, np.finfo(_dtype_of(a)).tiny * 2))
    factor = select(tiny_a, exp(sub(mul(log1p(neg(x)), b), lbeta_without_a)),
                    div(exp(sub(add(mul(log(x), a), mul(log1p(neg(x)), b)), lbeta)), a))
    result = mul(fraction, factor)
    result = select(direct, result, sub(one, result))
    result = select(result_is_zero, _full(result, 0), result)
    result = select(result_is_one, _full(result, 1), result)
    return select(result_is_nan, _full(result, np.nan), result)


regularized_incomplete_beta_p, betainc = _define(
    "regularized_incomplete_beta", 3, _algorithm_lowering(_betainc),
    "The regularized incomplete beta function I_x(a, b) (jax.lax.betainc).")


def _betainc_derivative_x(t, a, b, x):
    lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    one = _const(x, 1)
    return mul(t, exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))), lbeta)))


ad.defjvp(regularized_incomplete_beta_p, _not_differentiable("betainc", "a"), _not_differentiable("betainc", "b"),
          _betainc_derivative_x)


# --- Hurwitz zeta ----------------------------------------------------------------------------------------------
zeta_p, zeta = _define("zeta", 2, elementwise_lowering("chlo.zeta"),
                       "The Hurwitz zeta function zeta(x, q) = sum_n (n + q)^-x.")
ad.defjvp(zeta_p, _not_differentiable("zeta", "x"),
          lambda t, x, q: mul(t, neg(mul(x, zeta(add(x, _const(x, 1)), q)))))


# --- exponentially scaled modified Bessel functions ---------------------------------------------------------
# Cephes' Chebyshev coefficients for exp(-x) I0(x): on [0, 8] in (x / 2 - 2), beyond in (32 / x - 2) (times
# sqrt(x)). float32 uses the trailing (largest) coefficients only.
_I0E_NEAR = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
    -1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
    -1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
    -4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
    -5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
    -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_FAR = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
    -2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
    -9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
    1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
    2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)


def _chebyshev(x, coefficients):
    """Clenshaw's sum of a Chebyshev series in Cephes' convention (half the leading term)."""
    b0, b1, b2 = _full(x, 0), _full(x, 0), _full(x, 0)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = add(sub(mul(x, b1), b2), _const(x, c))
    return mul(_const(x, 0.5), sub(b0, b2))


def _bessel_i0e(x):
    single = _dtype_of(x) != np.float64
    near_coefficients = _I0E_NEAR[-18:] if single else _I0E_NEAR
    far_coefficients = _I0E_FAR[-7:] if single else _I0E_FAR
    x = abs(x)
    near = _chebyshev(sub(mul(_const(x, 0.5), x), _const(x, 2)), near_coefficients)
    far = div(_chebyshev(sub(div(_const(x, 32), x), _const(x, 2)), far_coefficients), sqrt(x))
    return select(le(x, _const(x, 8)), near, far)


bessel_i0e_p, bessel_i0e = _define("bessel_i0e", 1, _algorithm_lowering(_bessel_i0e),
                                   "The exponentially scaled modified Bessel function exp(-|x|) I0(x).")
bessel_i1e_p, bessel_i1e = _define("bessel_i1e", 1, elementwise_lowering("chlo.bessel_i1e"),
                                   "The exponentially scaled modified Bessel function exp(-|x|) I1(x).")
ad.defjvp2(bessel_i0e_p, lambda t, y, x: mul(t, sub(bessel_i1e(x), mul(sign(x), y))))


def _bessel_i1e_derivative(t, y, x):
    # i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2.
    eps = _const(x, _eps(x))
    not_tiny = gt(abs(x), eps)
    safe_x = select(not_tiny, x, _full(x, eps))
    slope = sub(bessel_i0e(safe_x), mul(y, add(sign(safe_x), div(_const(x, 1), safe_x))))
    return mul(t, select(not_tiny, slope, _full(x, 0.5)))


ad.defjvp2(bessel_i1e_p, _bessel_i1e_derivative)
