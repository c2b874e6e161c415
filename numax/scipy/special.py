"""`numax.scipy.special`: scipy.special functions over numax arrays, with JAX's numerics and dtypes.

Integer and boolean inputs promote to the default float type; special values (-inf, nan, 0 in
`xlogy`) follow `jax.scipy.special`, and so do derivatives: where JAX defines a custom JVP (logit, xlogy,
xlog1py, x log x in entr and rel_entr, log_ndtr) or stops a gradient (logsumexp's shift), numax does too.
"""

import functools

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.core import dtypes
from numax.numpy._util import canonicalize_axes, promote_args_inexact
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


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over `axis`, computed stably (shifted by the finite maximum).

    With `return_sign`, returns (log|sum|, sign(sum)); otherwise a negative sum gives nan.
    """
    if where is not None:
        a = xnp.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = xnp.where(xnp.not_equal(b, 0), a, -np.inf)
    else:
        (a,) = promote_args_inexact("logsumexp", a)
    a = xnp.asarray(a)
    rank = a.ndim
    axes = canonicalize_axes(axis, rank)
    real_a = xnp.real(a) if dtypes.is_complex(a.dtype) else a
    amax = xnp.max(real_a, axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    # Infinite maxima (all -inf, or +inf present) shift by 0 so that exp sees the infinities themselves.
    # The shift cancels mathematically; JAX keeps it out of differentiation.
    amax = lax.stop_gradient(lax.select(xnp.isfinite(amax), amax, lax.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, lax.convert_element_type(xnp.broadcast_to(amax_with_dims, a.shape), a.dtype)))
    if b is not None:
        exp_a = xnp.multiply(exp_a, b)
    sumexp = xnp.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    if return_sign or not dtypes.is_complex(a.dtype):
        sumexp = lax.abs(sumexp)
    out = lax.add(lax.log(sumexp), lax.convert_element_type(amax, xnp.result_type(sumexp)))
    if return_sign:
        return out, sign
    if b is not None and not dtypes.is_complex(xnp.result_type(out)):
        out = xnp.where(lax.lt(sign, lax.full_like(sign, 0)), np.array(np.nan, xnp.result_type(out)), out)
    return out


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


__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "expit", "gamma", "gammaln", "gammasgn", "kl_div", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "ndtr", "ndtri", "rel_entr", "softmax", "xlog1py", "xlogy"]
