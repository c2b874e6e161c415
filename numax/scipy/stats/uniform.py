"""The uniform distribution on [loc, loc + scale]."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.numpy._util import promote_args_inexact


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    log_probs = lax.neg(lax.log(scale))
    outside = xnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
    return xnp.where(outside, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    dtype = xnp.result_type(x)
    high = lax.add(loc, scale)
    inside = xnp.logical_and(lax.ge(x, loc), lax.le(x, high))
    # nan (in none of the cases) falls through to 0, as numpy.select's default.
    return xnp.select([lax.lt(x, loc), lax.gt(x, high), inside],
                      [np.asarray(0, dtype), np.asarray(1, dtype), lax.div(lax.sub(x, loc), scale)])


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    invalid = xnp.isnan(q) | (q < 0) | (q > 1)
    return xnp.where(invalid, np.nan, lax.add(loc, lax.mul(scale, q)))
