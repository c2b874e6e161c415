"""The exponential distribution with rate 1/scale, shifted by loc."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.numpy._util import promote_args_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    linear_term = lax.div(lax.sub(x, loc), scale)
    log_probs = lax.neg(lax.add(linear_term, lax.log(scale)))
    return xnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return xnp.where(lax.lt(x, loc), xnp.zeros_like(neg_scaled_x), lax.neg(lax.expm1(neg_scaled_x)))


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("expon.logsf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return xnp.where(lax.lt(x, loc), xnp.zeros_like(neg_scaled_x), neg_scaled_x)


def sf(x, loc=0, scale=1):
    return lax.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return lax.log1p(lax.neg(sf(x, loc, scale)))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    invalid = xnp.isnan(q) | (q < 0) | (q > 1)
    return xnp.where(invalid, np.nan, lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
