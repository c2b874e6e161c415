"""The multivariate normal distribution N(mean, cov) over the last axis."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.numpy._util import promote_dtypes_inexact


def logpdf(x, mean, cov, allow_singular=None):
    """log density at `x` (..., n) for `mean` (..., n) and `cov` (..., n, n) (or a scalar variance)."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (xnp.asarray(v) for v in promote_dtypes_inexact(x, mean, cov))
    if not mean.shape:
        return -1 / 2 * xnp.square(x - mean) / cov - 1 / 2 * (xnp.log(2 * np.pi) + xnp.log(cov))
    n = mean.shape[-1]
    if not cov.shape:
        y = x - mean
        return -1 / 2 * xnp.einsum("...i,...i->...", y, y) / cov - n / 2 * (xnp.log(2 * np.pi) + xnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean {mean.shape}, cov {cov.shape}")
    factor = lax.cholesky(cov)
    # Whiten: solve L y = x - mean, so that y.y is the Mahalanobis distance.
    residual = x - mean
    batch = np.broadcast_shapes(factor.shape[:-2], residual.shape[:-1])
    factor = xnp.broadcast_to(factor, batch + (n, n))
    residual = xnp.broadcast_to(residual, batch + (n,))[..., None]
    y = lax.triangular_solve(factor, residual, left_side=True, lower=True)[..., 0]
    log_det_half = xnp.log(xnp.diagonal(factor, axis1=-1, axis2=-2)).sum(-1)
    return -1 / 2 * xnp.einsum("...i,...i->...", y, y) - n / 2 * xnp.log(2 * np.pi) - log_det_half


def pdf(x, mean, cov):
    return lax.exp(logpdf(x, mean, cov))
