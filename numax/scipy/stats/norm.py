"""The normal distribution N(loc, scale^2)."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.numpy._util import promote_args_inexact
from numax.scipy import special


def _const(like, value):
    return np.asarray(value, xnp.result_type(like))


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    scale_squared = lax.square(scale)
    log_normalizer = lax.log(lax.mul(_const(x, 2 * np.pi), scale_squared))
    quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_squared)
    return lax.div(lax.add(log_normalizer, quadratic), _const(x, -2))


def pdf(x, loc=0, scale=1):
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """1 - cdf, computed as the cdf of the mirrored point (accurate in the upper tail)."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(lax.neg(x), lax.neg(loc), scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(lax.neg(x), lax.neg(loc), scale)


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse cdf)."""
    return xnp.asarray(special.ndtri(q) * scale + loc, float)


def isf(q, loc=0, scale=1):
    (q,) = promote_args_inexact("norm.isf", q)
    return ppf(lax.sub(_const(q, 1), q), loc, scale)
