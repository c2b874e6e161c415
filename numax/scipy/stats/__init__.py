"""`numax.scipy.stats`: densities, distribution functions and quantiles of common distributions."""

from . import bernoulli, expon, multivariate_normal, norm, uniform  # noqa: F401
