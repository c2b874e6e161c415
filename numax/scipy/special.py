"""`numax.scipy.special`: scipy.special functions over numax arrays, with JAX's numerics and dtypes.

Integer and boolean inputs promote to the default float type; special values (-inf, nan, 0 in
`xlogy`) follow `jax.scipy.special`, and so do derivatives: where JAX defines a custom JVP (logit, xlogy,
xlog1py, x log x in entr and rel_entr, log_ndtr) or stops a gradient (logsumexp's shift), numax does too.
"""

import functools

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax._logsumexp import logsumexp  # noqa: F401  (shared with numax.nn, which this module loads only for softmax)
from numax.core import dtypes
from numax.numpy._util import promote_args_inexact
from numax.transforms.custom_derivatives import custom_jvp


def _unary(name, lax_fn, doc):
    def fn(x):
        (x,) = promote_args_inexact(name, x)
        return lax_fn(x)

    fn.__name__ = name
    fn.__doc__ = doc
    return fn


erf = _unary("erf", lax.erf, "The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt.")
erfc = _unary("erfc", lax.erfc, "The complementary error function 1 - erf(x).")
erfinv = _unary("erfinv", lax.erf_inv, "The inverse of erf on (-1, 1).")
gammaln = _unary("gammaln", lax.lgamma, "log|Gamma(x)|.")
digamma = _unary("digamma", lax.digamma, "The logarithmic derivative of Gamma.")
expit = _unary("expit", lax.logistic, "The logistic sigmoid 1 / (1 + exp(-x)).")


def _const(like, value):
    return np.asarray(value, xnp.result_type(like))


# The custom rules below take promoted (inexact) arguments: JAX attaches them before promotion, so that
# jax.grad of xlogy(x, 2) fails on the integer 2's tangent; numax promotes first and differentiates it.
def logit(x):
    """log(x / (1 - x)), the inverse of expit; its derivative is 1 / (x (1 - x))."""
    (x,) = promote_args_inexact("logit", x)
    return _logit(x)


@custom_jvp
def _logit(x):
    return lax.log(lax.div(x, lax.sub(_const(x, 1), x)))


_logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_const(x, 1), x))))


def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (unless y is nan). Differentiated as log(y) dx + x / y dy
    everywhere (JAX's rule), which is what makes the x == 0 case differentiable."""
    return _xlogy(*promote_args_inexact("xlogy", x, y))


@custom_jvp
def _xlogy(x, y):
    keep = xnp.logical_or(xnp.not_equal(x, 0), xnp.isnan(y))
    return xnp.where(keep, xnp.multiply(x, xnp.log(y)), xnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = _xlogy(x, y)
    return result, (x_dot * xnp.log(y) + y_dot * x / y).astype(result.dtype)


def xlog1py(x, y):
    """x * log1p(y), defined as 0 where x == 0 (unless y is nan); differentiated as xlogy is."""
    return _xlog1py(*promote_args_inexact("xlog1py", x, y))


@custom_jvp
def _xlog1py(x, y):
    keep = xnp.logical_or(xnp.not_equal(x, 0), xnp.isnan(y))
    return xnp.where(keep, xnp.multiply(x, xnp.log1p(y)), xnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = _xlog1py(x, y)
    return result, (x_dot * xnp.log1p(y) + y_dot * x / (1 + y)).astype(result.dtype)


@custom_jvp
def _xlogx(x):
    """x log x (0 at 0), with derivative log(x) + 1 (-inf at 0, where xlogy's rule would give nan)."""
    return _xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (xnp.log(x) + 1)


def entr(x):
    """Elementwise entropy: -x log x for x > 0, 0 at 0, -inf below."""
    (x,) = promote_args_inexact("entr", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise ValueError("entr does not support complex-valued inputs.")
    return lax.select(lax.lt(x, _const(x, 0)), lax.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p == 0 <= q; inf otherwise."""
    p, q = promote_args_inexact("rel_entr", p, q)
    if dtypes.is_complex(xnp.result_type(p)):
        raise ValueError("rel_entr does not support complex-valued inputs.")
    zero = _const(p, 0.0)
    both_positive = xnp.logical_and(lax.gt(p, zero), lax.gt(q, zero))
    p_zero = xnp.logical_and(lax.eq(p, zero), lax.ge(q, zero))
    safe_p, safe_q = xnp.where(both_positive, p, 1), xnp.where(both_positive, q, 1)
    log_value = lax.sub(_xlogx(safe_p), xlogy(safe_p, safe_q))
    return xnp.where(both_positive, log_value, xnp.where(p_zero, zero, np.inf))


def kl_div(p, q):
    """rel_entr(p, q) - p + q, the elementwise Kullback-Leibler divergence."""
    p, q = promote_args_inexact("kl_div", p, q)
    if dtypes.is_complex(xnp.result_type(p)):
        raise ValueError("kl_div does not support complex-valued inputs.")
    return rel_entr(p, q) - p + q


def gammasgn(x):
    """The sign of Gamma(x): nan at poles and nan, -1 on negative odd intervals and at -0."""
    (x,) = promote_args_inexact("gammasgn", x)
    x = xnp.asarray(x)
    if dtypes.is_complex(x.dtype):
        raise ValueError("gammasgn does not support complex-valued inputs.")
    floor_x = lax.floor(x)
    negative = x < 0
    pole = (negative & (x == floor_x)) | xnp.isnan(x)
    minus = (negative & (floor_x % 2 != 0)) | ((x == 0) & xnp.signbit(x))
    return xnp.select([pole, minus], [np.asarray(np.nan, x.dtype), np.asarray(-1.0, x.dtype)],
                      np.asarray(1.0, x.dtype))


def gamma(x):
    """The Gamma function for real x (sign times exp(lgamma))."""
    (x,) = promote_args_inexact("gamma", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise NotImplementedError("numax.scipy.special.gamma does not support complex inputs yet")
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def softmax(x, /, *, axis=None):
    from numax.nn import softmax as nn_softmax

    return nn_softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    from numax.nn import log_softmax as nn_log_softmax

    return nn_log_softmax(x, axis=axis)


# --- the normal distribution function and its inverse ----------------------------------------------
def _require_f32_or_f64(name, x):
    x = xnp.asarray(x)
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{name}: x.dtype={x.dtype} is not supported; use float32 or float64")
    return x


def _ndtr(x):
    dtype = xnp.result_type(x)
    half_sqrt_2 = np.asarray(0.5 * np.sqrt(2.0, dtype=dtype), dtype)
    w = lax.mul(x, half_sqrt_2)
    z = lax.abs(w)
    # erf is accurate near 0, erfc in the tails.
    y = lax.select(lax.lt(z, half_sqrt_2), lax.add(np.asarray(1.0, dtype), lax.erf(w)),
                   lax.select(lax.gt(w, np.asarray(0.0, dtype)), lax.sub(np.asarray(2.0, dtype), lax.erfc(z)),
                              lax.erfc(z)))
    return lax.mul(np.asarray(0.5, dtype), y)


def ndtr(x):
    """The standard normal CDF."""
    return _ndtr(_require_f32_or_f64("ndtr", x))


_LOG_NDTR_BOUNDS = {np.dtype(np.float32): (-10.0, 5.0), np.dtype(np.float64): (-20.0, 8.0)}


def log_ndtr(x, series_order=3):
    """log of the standard normal CDF, accurate far into both tails. Differentiated as JAX does, by
    exp(log pdf(x) - log_ndtr(x)) rather than through the tail series."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if not 0 <= series_order <= 30:
        raise ValueError(f"series_order must be between 0 and 30, got {series_order}")
    return _log_ndtr(_require_f32_or_f64("log_ndtr", x), series_order)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x, series_order):
    dtype = x.dtype
    lower, upper = (np.asarray(bound, dtype) for bound in _LOG_NDTR_BOUNDS[dtype])
    above = lax.gt(x, upper)
    ndtr_value = _ndtr(xnp.where(above, lax.neg(x), lax.max(x, xnp.full_like(x, lower))))
    tail = _log_ndtr_lower(lax.min(x, xnp.full_like(x, lower)), series_order)
    # Upper tail: log(1 - q) ~ -q; middle: log of ndtr; lower tail: asymptotic series.
    return xnp.where(above, lax.neg(ndtr_value),
                     xnp.where(lax.gt(x, lower), lax.log(ndtr_value), tail))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    log_pdf = lax.sub(lax.mul(_const(x, -0.5), lax.square(x)), _const(x, 0.5 * np.log(2 * np.pi)))
    return ans, lax.mul(t, lax.exp(lax.sub(log_pdf, ans)))


def _log_ndtr_lower(x, series_order):
    dtype = x.dtype
    x_2 = lax.square(x)
    log_scale = lax.sub(lax.sub(lax.mul(np.asarray(-0.5, dtype), x_2), lax.log(lax.neg(x))),
                        np.asarray(0.5 * np.log(2.0 * np.pi), dtype))
    return lax.add(log_scale, lax.log(_log_ndtr_series(x_2, series_order)))


def _log_ndtr_series(x_2, series_order):
    """1 + sum_n (-1)^n (2n-1)!! / x^(2n): the asymptotic series of the Mills ratio."""
    dtype = x_2.dtype
    if series_order <= 0:
        return np.asarray(1, dtype)
    even_sum, odd_sum = xnp.zeros_like(x_2), xnp.zeros_like(x_2)
    x_2n = x_2
    for n in range(1, series_order + 1):
        double_factorial = np.prod(np.arange(2 * n - 1, 1, -2))
        term = lax.div(np.asarray(double_factorial, dtype), x_2n)
        if n % 2:
            odd_sum = lax.add(odd_sum, term)
        else:
            even_sum = lax.add(even_sum, term)
        x_2n = lax.mul(x_2n, x_2)
    return lax.sub(lax.add(np.asarray(1.0, dtype), even_sum), odd_sum)


# Cephes' piecewise rational approximation of ndtri (numerators p*, denominators q*).
_NDTRI_P0 = [-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0]
_NDTRI_P1 = [4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4]
_NDTRI_P2 = [3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9]


def _polyval(coefficients, x):
    dtype = x.dtype
    result = xnp.zeros_like(x)
    for c in coefficients:
        result = lax.add(lax.mul(result, x), np.asarray(c, dtype))
    return result


def ndtri(p):
    """The inverse of the standard normal CDF (-inf at 0, inf at 1, nan outside [0, 1])."""
    p = _require_f32_or_f64("ndtri", p)
    dtype = p.dtype

    def c(value):
        return np.asarray(value, dtype)

    # Work with the smaller of p and 1 - p; the sign is fixed at the end.
    complement = xnp.where(lax.gt(p, c(-np.expm1(-2.0))), lax.sub(c(1.0), p), p)
    safe = xnp.where(lax.eq(complement, c(0.0)), xnp.full_like(p, 0.5), complement)
    w = lax.sub(safe, c(0.5))
    ww = lax.square(w)
    central = lax.add(w, lax.mul(lax.mul(w, ww), lax.div(_polyval(_NDTRI_P0, ww), _polyval(_NDTRI_Q0, ww))))
    central = lax.mul(central, lax.neg(c(np.sqrt(2.0 * np.pi))))
    z = lax.sqrt(lax.mul(c(-2.0), lax.log(safe)))
    first = lax.sub(z, lax.div(lax.log(z), z))
    inv_z = lax.div(c(1.0), z)
    far_tail = lax.div(lax.div(_polyval(_NDTRI_P2, inv_z), _polyval(_NDTRI_Q2, inv_z)), z)
    near_tail = lax.div(lax.div(_polyval(_NDTRI_P1, inv_z), _polyval(_NDTRI_Q1, inv_z)), z)
    tail = xnp.where(lax.ge(z, c(8.0)), lax.sub(first, far_tail), lax.sub(first, near_tail))
    x = xnp.where(lax.gt(safe, c(np.exp(-2.0))), central, tail)
    x = xnp.where(lax.gt(p, c(1.0 - np.exp(-2.0))), x, lax.neg(x))
    infinity = xnp.full_like(p, np.inf)
    return xnp.where(lax.eq(p, c(0.0)), lax.neg(infinity), xnp.where(lax.eq(p, c(1.0)), infinity, x))


# --- incomplete gamma and beta, beta, zeta, polygamma -------------------------------------------------
def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (nan for a < 0 or x < 0)."""
    return lax.igamma(*promote_args_inexact("gammainc", a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return lax.igammac(*promote_args_inexact("gammaincc", a, x))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b); differentiable in x only (as in JAX)."""
    return lax.betainc(*promote_args_inexact("betainc", a, b, x))


def _log_gamma_ratio_large(a, b):
    """log(Gamma(b) / Gamma(a + b)) for 0 < a <= b with b >= 8, from Stirling's series of the two
    log-gammas, with the difference of their correction terms summed as one series in 1/b (cdflib algdiv)."""
    dtype = xnp.result_type(a)
    h = a / b
    ratio = h / (1 + h)
    ratio_2 = ratio * ratio
    # partial[i] = 1 + ratio + ... + ratio^(2i) (= (1 - ratio^(2i+1)) / (1 - ratio)).
    partial = [None, 1.0 + (ratio + ratio_2)]
    for _ in range(4):
        partial.append(1.0 + (ratio + ratio_2 * partial[-1]))
    coefficients = [-0.165322962780713e-02, 0.837308034031215e-03, -0.595202931351870e-03,
                    0.793650666825390e-03, -0.277777777760991e-02]
    inv_b_2 = (1.0 / b) ** 2
    correction = xnp.zeros_like(b)
    for coefficient, part in zip(coefficients, partial[::-1]):
        correction = (correction + np.asarray(coefficient, dtype) * part) * inv_b_2
    correction = (correction + np.asarray(0.833333333333333e-01, dtype)) * (ratio / b)
    u = (b + (a - 0.5)) * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.0)
    return xnp.where(u <= v, (correction - v) - u, (correction - u) - v)


def betaln(a, b):
    """log|B(a, b)|, accurate for large arguments (a Stirling-series ratio once max(a, b) >= 8)."""
    a, b = promote_args_inexact("betaln", a, b)
    a, b = xnp.minimum(a, b), xnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _log_gamma_ratio_large(a, b)
    return xnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b), real arguments only."""
    a, b = promote_args_inexact("beta", a, b)
    if dtypes.is_complex(xnp.result_type(a)):
        raise ValueError("beta does not support complex-valued inputs.")
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def zeta(x, q=None):
    """The Hurwitz zeta function sum_n (n + q)^-x; q is required (JAX has no Riemann zeta either)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to compute the Hurwitz "
                                  "Zeta function.")
    return _zeta(*promote_args_inexact("zeta", x, q))


def _zeta_expansion_coefficients(count):
    """(2k)! / B_2k for k = 1..count, B_n the Bernoulli numbers (exact rationals, then rounded)."""
    from fractions import Fraction
    from math import comb as binomial
    from math import factorial as int_factorial

    numbers = [Fraction(1)]
    for n in range(1, 2 * count + 1):
        numbers.append(-sum(binomial(n + 1, j) * numbers[j] for j in range(n)) / (n + 1))
    return np.array([float(Fraction(int_factorial(2 * k)) / numbers[2 * k]) for k in range(1, count + 1)])


_ZETA_COEFFICIENTS = _zeta_expansion_coefficients(16)


def _zeta_series(s, a):
    """Hurwitz zeta by Euler-Maclaurin summation (Johansson 2015, eq. 5): N direct terms, the integral of the
    tail, and M correction terms with Bernoulli numbers; written with differentiable ops, for zeta's JVP."""
    s, a = xnp.broadcast_arrays(s, a)
    dtype = xnp.result_type(s)
    n = 8 if dtype == np.float32 else 16
    s_col, a_col = s[..., None], a[..., None]
    direct = xnp.sum((a_col + xnp.arange(n, dtype=dtype)) ** -s_col, axis=-1)
    a_n = a + n
    integral = a_n ** (1 - s) / (s - 1)
    rising = xnp.cumprod((s_col + xnp.arange(2 * n, dtype=dtype)) / a_n[..., None], axis=-1)[..., ::2]
    rising = xnp.minimum(rising, np.finfo(dtype).max)
    corrections = xnp.sum(rising / _ZETA_COEFFICIENTS[:n].astype(dtype), axis=-1)
    return direct + integral + a_n ** -s * (0.5 + corrections)


@custom_jvp
def _zeta(x, q):
    return lax.zeta(x, q)


@_zeta.defjvp
def _zeta_jvp(primals, tangents):
    # No closed form in x: differentiate the series (its value, too, is what JAX returns here).
    from numax.transforms.autodiff import jvp

    return jvp(_zeta_series, primals, tangents)


def polygamma(n, x):
    """The n-th derivative of digamma; n must have an integer dtype."""
    n_dtype = xnp.result_type(n)
    if not dtypes.is_integer(n_dtype):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_dtype}.")
    n, x = promote_args_inexact("polygamma", n, x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise ValueError("polygamma does not support complex-valued inputs.")
    return lax.polygamma(n, x)


# --- Bessel functions of orders 0 and 1 ------------------------------------------------------------------
i0e = _unary("i0e", lax.bessel_i0e, "The exponentially scaled modified Bessel function exp(-|x|) I0(x).")
i1e = _unary("i1e", lax.bessel_i1e, "The exponentially scaled modified Bessel function exp(-|x|) I1(x).")


def i0(x):
    """The modified Bessel function of the first kind of order 0 (`numax.numpy.i0`)."""
    return xnp.i0(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = promote_args_inexact("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# --- gamma-function combinations -------------------------------------------------------------------------
def loggamma(x):
    """log Gamma(x) on the principal branch; for real x, nan where x <= 0 (complex x is not supported yet)."""
    (x,) = promote_args_inexact("loggamma", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise NotImplementedError("numax.scipy.special.loggamma does not support complex inputs yet")
    return xnp.where(x > 0, lax.lgamma(x), np.nan)


def factorial(n, exact=False):
    """n! as a float, Gamma(n + 1) (0 for negative n); exact=True is not supported (as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_args_inexact("factorial", n)
    return xnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
    """The binomial coefficient N choose k as a float (from gammaln); 0 outside 0 <= k <= N.
    With `repetition`, the number of k-combinations with repetition, comb(N + k - 1, k)."""
    N, k = promote_args_inexact("comb", N, k)
    if repetition:
        return xnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    valid = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = xnp.where(valid, N, 0.0), xnp.where(valid, k, 0.0)
    value = lax.exp(gammaln(safe_n + 1) - gammaln(safe_k + 1) - gammaln(safe_n + 1 - safe_k))
    return xnp.where(valid, value, 0.0)


def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z), 1 where m == 0 (real arguments)."""
    z, m = promote_args_inexact("poch", z, m)
    if dtypes.is_complex(xnp.result_type(z)):
        raise ValueError("jnp.poch does not support complex-valued inputs.")
    return _poch(z, m)


@custom_jvp
def _poch(z, m):
    return xnp.where(m == 0.0, np.asarray(1, xnp.result_type(z)), gamma(z + m) / gamma(z))


_poch.defjvps(lambda z_dot, ans, z, m: (digamma(z + m) - digamma(z)) * _poch(z, m) * z_dot,
              lambda m_dot, ans, z, m: digamma(z + m) * _poch(z, m) * m_dot)


def multigammaln(a, d):
    """log of the multivariate gamma function: d(d-1)/4 log(pi) + sum_{i<d} gammaln(a - i/2); d static."""
    from numax.core.trace import concrete_or_error

    d = int(concrete_or_error(d, "the d argument of multigammaln must be a concrete integer"))
    a, d_value = promote_args_inexact("multigammaln", a, d)
    dtype = xnp.result_type(a)
    constant = 0.25 * d_value * (d_value - 1) * np.asarray(np.log(np.pi), dtype)
    halves = xnp.arange(d, dtype=dtype) / np.asarray(2, dtype)
    a = xnp.asarray(a)
    return xnp.sum(gammaln(xnp.expand_dims(a, -1) - halves), axis=-1) + constant


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = promote_args_inexact("boxcox", x, lmbda)
    return _boxcox_of_log(lax.log(x), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
    return _boxcox_of_log(lax.log1p(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
    is_zero = lmbda == 0
    safe = xnp.where(is_zero, xnp.ones_like(lmbda), lmbda)
    return xnp.where(is_zero, log_x, lax.expm1(safe * log_x) / safe)


def bernoulli(n):
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), from B_2k = 2 (2k)! / (2 pi)^2k zeta(2k) summed to
    2^-50, in the default float dtype."""
    import operator

    from numax.core.trace import concrete_or_error

    n = operator.index(concrete_or_error(n, "the argument n of bernoulli must be a concrete integer"))
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    first = np.array([1.0, -0.5, 1.0 / 6.0])
    dtype = dtypes.canonicalize_dtype(np.float64)
    if n < 3:
        return xnp.asarray(first[:n + 1].astype(dtype))
    even = xnp.arange(4, n + 1, 2, dtype=dtype)
    # (-1)^(k+1) 2 (2k)! / (2 pi)^2k, built up as a running product over the even orders.
    scale = (1.0 / np.pi ** 2) * xnp.cumprod(-(even - 1) * even / 4 / np.pi ** 2)
    terms = xnp.arange(2, 50, dtype=dtype)
    zeta_minus_one = xnp.sum(terms[:, None] ** -even[None, :], axis=0)
    numbers = xnp.zeros(n + 1, dtype).at[:3].set(first.astype(dtype))
    return numbers.at[4::2].set(scale * (1 + zeta_minus_one))


# --- exponential integrals ----------------------------------------------------------------------------------
_EULER_GAMMA = 0.57721566490153286061


def _series_until_small(first_term, next_term, total):
    """Adds terms (each from the previous one and its index) to `total` until every element's latest term is
    below eps relative to its sum (at most 2000 terms); returns the sum."""
    dtype = xnp.result_type(total)
    eps = np.asarray(np.finfo(dtype).eps, dtype)

    def going(term, total):
        return lax.abs(term) > eps * lax.abs(total)

    def cond(state):
        k, term, total = state
        return lax.bitwise_and(k < 2000, xnp.any(going(term, total)))

    def body(state):
        k, term, total = state
        active = going(term, total)
        k = k + 1
        term = xnp.where(active, next_term(term, k.astype(dtype)), term)
        return k, term, xnp.where(active, total + term, total)

    return lax.while_loop(cond, body, (np.int32(1), first_term, total + first_term))[2]


def _exp1_fraction(x):
    """E1(x) = e^-x / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))) for x > 1, by the modified Lentz method."""
    dtype = xnp.result_type(x)
    eps = np.asarray(np.finfo(dtype).eps, dtype)
    tiny = np.asarray(np.finfo(dtype).tiny, dtype)

    def cond(state):
        i, _, _, _, _, delta = state
        return lax.bitwise_and(i < 500, xnp.any(lax.abs(delta - 1) > eps))

    def body(state):
        i, b, c, d, h, _ = state
        partial = -(i * i).astype(dtype)
        b = b + 2
        d = 1 / (partial * d + b)
        c = b + partial / xnp.where(c == 0, tiny, c)
        delta = c * d
        return i + 1, b, c, d, h * delta, delta

    b = x + 1
    start = (np.int32(1), b, xnp.full_like(x, 1 / tiny), 1 / b, 1 / b, xnp.full_like(x, 2))
    return lax.while_loop(cond, body, start)[4] * lax.exp(-x)


def _exp1_positive(x):
    small = x <= 1
    x_small = xnp.where(small, x, 1)
    # E1(x) = -gamma - log x - sum_k (-x)^k / (k k!) for x <= 1.
    series = _series_until_small(-x_small, lambda term, k: -term * x_small * (k - 1) / (k * k),
                                 xnp.zeros_like(x_small))
    near = -_const(x, _EULER_GAMMA) - lax.log(x_small) - series
    far = _exp1_fraction(xnp.where(small, 2, x))
    return xnp.where(small, near, far)


def _expi_positive(x):
    """Ei(x) = gamma + log x + sum_k x^k / (k k!) for x > 0: positive terms, so no cancellation."""
    x = xnp.where(x > 0, x, 1)
    series = _series_until_small(x, lambda term, k: term * x * (k - 1) / (k * k), xnp.zeros_like(x))
    return _const(x, _EULER_GAMMA) + lax.log(x) + series


def exp1(x):
    """The exponential integral E1(x) = integral_x^inf e^-t / t dt for real x >= 0 (inf at 0, nan below)."""
    (x,) = promote_args_inexact("exp1", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise ValueError("exp1 does not support complex-valued inputs.")
    return _exp1(x)


@custom_jvp
def _exp1(x):
    positive = x > 0
    value = _exp1_positive(xnp.where(positive, xnp.minimum(x, 1e4), 1))
    value = xnp.where(x > 1e4, 0, value)  # e^-x underflows long before
    return xnp.where(positive, value, xnp.where(x == 0, np.inf, np.nan)).astype(xnp.result_type(x))  # nan too


_exp1.defjvps(lambda g, ans, x: -g * lax.exp(-x) / x)


def expi(x):
    """The exponential integral Ei(x) = -integral_-x^inf e^-t / t dt (principal value) for real x."""
    (x,) = promote_args_inexact("expi", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise ValueError("expi does not support complex-valued inputs.")
    return _expi(x)


@custom_jvp
def _expi(x):
    negative = x < 0
    positive_part = _expi_positive(xnp.minimum(xnp.where(negative, 1, x), 1e3))
    positive_part = xnp.where(x > 1e3, np.inf, positive_part)  # overflowed long before
    negative_part = -_exp1(xnp.where(negative, -x, 1))
    value = xnp.where(negative, negative_part, positive_part)
    value = xnp.where(xnp.isnan(x), np.nan, value)
    return xnp.where(x == 0, -np.inf, value).astype(xnp.result_type(x))


_expi.defjvps(lambda g, ans, x: g * lax.exp(x) / x)


# --- scaled complementary error function, Spence's function ---------------------------------------------
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), without overflow for large positive x
    (real x; complex inputs, Faddeeva's function, are not supported yet)."""
    (x,) = promote_args_inexact("erfcx", x)
    if dtypes.is_complex(xnp.result_type(x)):
        raise NotImplementedError("numax.scipy.special.erfcx does not support complex inputs yet")
    return _erfcx(x)


@custom_jvp
def _erfcx(x):
    dtype = xnp.result_type(x)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return _erfcx_real(lax.convert_element_type(x, np.float32)).astype(dtype)
    return _erfcx_real(x)


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - _const(x, 2 / np.sqrt(np.pi))))


def _erfcx_real(x):
    dtype = xnp.result_type(x)
    # Where exp(x^2) would overflow, the asymptotic series 1 / (sqrt(pi) x) sum_k (-1)^k (2k-1)!! / (2 x^2)^k,
    # cut where the first omitted term is far below eps (9 terms in float64, 5 in float32).
    terms = 9 if dtype == np.float64 else 5
    coefficients = [1.0]
    for k in range(1, terms):
        coefficients.append(coefficients[-1] * -(2 * k - 1) / 2)
    large = x > _const(x, np.sqrt(np.log(np.finfo(dtype).max)))
    safe_x = lax.select(large, lax.full_like(x, 1), x)
    direct = lax.exp(lax.square(safe_x)) * lax.erfc(safe_x)
    series = _polyval(coefficients[::-1], _const(x, 1) / lax.square(x))
    return lax.select(large, series / (x * _const(x, np.sqrt(np.pi))), direct)


# Cephes' rational approximation of the dilogarithm near 1 (numerator and denominator, highest degree first).
_SPENCE_P = [4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
             8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
             3.29771340985225106936e0, 1.00000000000000000126e0]
_SPENCE_Q = [6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
             1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
             3.54771340985225096217e0, 9.99999999999999998740e-1]


def spence(x):
    """Spence's function integral_1^x log(t) / (1 - t) dt for real x >= 0 (nan below 0); float32 or float64."""
    x = _require_f32_or_f64("spence", x)
    one = _const(x, 1)
    # Reduce to w = x - 1 near 1: beyond 2 through x -> 1/x, on (1.5, 2] through w = 1/x - 1, and below
    # 1/2 through the reflection spence(x) = pi^2/6 - log(x) log(1 - x) - spence(1 - x).
    # Points with a constant result (x < 0, 0, 1) take a harmless stand-in, so that no nan or inf from the
    # unused branches reaches their gradient (which is 0 there, as in JAX).
    constant = (x < 0) | (x == 0) | (x == 1)
    x_safe = xnp.where(constant, _const(x, 0.5), x)
    above_two = x_safe > 2
    x_reduced = xnp.where(above_two, one / x_safe, x_safe)
    above_1_5 = x_reduced > 1.5
    below_half = x_reduced < 0.5
    inverted = above_two | above_1_5
    w = xnp.where(above_1_5, one / x_reduced - one, xnp.where(below_half, -x_reduced, x_reduced - one))
    y = -w * _polyval(_SPENCE_P, w) / _polyval(_SPENCE_Q, w)
    y = xnp.where(below_half, _const(x, np.pi ** 2 / 6) - lax.log(x_reduced) * lax.log(one - x_reduced) - y, y)
    y = xnp.where(inverted, _const(x, -0.5) * lax.square(lax.log(x_reduced)) - y, y)
    y = xnp.where(x == 0, _const(x, np.pi ** 2 / 6), xnp.where(x == 1, _const(x, 0), y))
    return xnp.where(x < 0, _const(x, np.nan), y)


__all__ = ["bernoulli", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr", "erf", "erfc",
           "erfcx", "erfinv", "exp1", "expi", "expit", "factorial", "gamma", "gammainc", "gammaincc", "gammaln",
           "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit",
           "logsumexp", "multigammaln", "ndtr", "ndtri", "poch", "polygamma", "rel_entr", "softmax", "spence",
           "xlog1py", "xlogy", "zeta"]
