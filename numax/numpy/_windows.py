"""Window functions: bartlett, blackman, hamming, hanning and kaiser tapers of M points (M must be concrete).

Each is symmetric, in the default float type, and [1.] for M = 1 (empty for M = 0), as numpy's and JAX's.
"""

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error

from ._misc import i0
from ._ufuncs import absolute, cos, sqrt

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _positions(M, name):
    """(M, n): M as a concrete int and n = 0, 1, ..., M-1 in the default float type, or (M, None) when the
    window is all ones (M <= 1)."""
    M = int(concrete_or_error(M, f"M argument of numax.numpy.{name} must be concrete (it is the window's size)"))
    if M <= 1:
        return M, None
    return M, lax.iota(dtypes.default_float_dtype(), M)


def _ones(M):
    return lax.full((M,), 1, dtypes.default_float_dtype())


def bartlett(M):
    """The Bartlett (triangular) window: 1 - |2n - (M - 1)| / (M - 1)."""
    M, n = _positions(M, "bartlett")
    if n is None:
        return _ones(M)
    return 1 - absolute(2 * n + 1 - M) / (M - 1)


def blackman(M):
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    M, n = _positions(M, "blackman")
    if n is None:
        return _ones(M)
    return 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1))


def hamming(M):
    """The Hamming window: 0.54 - 0.46 cos(2 pi n / (M - 1))."""
    M, n = _positions(M, "hamming")
    if n is None:
        return _ones(M)
    return 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1))


def hanning(M):
    """The Hann window: (1 - cos(2 pi n / (M - 1))) / 2."""
    M, n = _positions(M, "hanning")
    if n is None:
        return _ones(M)
    return 0.5 * (1 - cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
    """The Kaiser window with shape parameter `beta`: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (M-1)/2."""
    M, n = _positions(M, "kaiser")
    if n is None:
        return _ones(M)
    alpha = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
