"""The Bernoulli distribution: 1 with probability p, else 0 (shifted by loc)."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.numpy._util import promote_args_inexact
from numax.scipy.special import xlog1py, xlogy


def _const(like, value):
    return np.asarray(value, xnp.result_type(like))


def logpmf(k, p, loc=0):
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    zero, one = _const(k, 0), _const(k, 1)
    x = lax.sub(k, loc)
    log_probs = xlogy(x, p) + xlog1py(lax.sub(one, x), -p)
    return xnp.where(xnp.logical_or(lax.lt(x, zero), lax.gt(x, one)), -np.inf, log_probs)


def pmf(k, p, loc=0):
    return xnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    zero, one = _const(k, 0), _const(k, 1)
    invalid = xnp.isnan(k) | xnp.isnan(p) | (p < zero) | (p > one)
    conditions = [invalid, lax.lt(k, zero), xnp.logical_and(lax.ge(k, zero), lax.lt(k, one)), lax.ge(k, one)]
    return xnp.select(conditions, [np.nan, zero, one - p, one])


def ppf(q, p):
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    zero, one = _const(q, 0), _const(q, 1)
    invalid = xnp.isnan(q) | xnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return xnp.where(invalid, np.nan, xnp.where(lax.le(q, one - p), zero, one))
