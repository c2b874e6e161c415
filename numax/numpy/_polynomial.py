"""Polynomials as 1-d coefficient arrays, highest power first (numpy's poly1d order): poly, polyadd,
polysub, polymul, polydiv, polyder, polyint, polyfit and roots. polyval lives in _linalg_ops.

Written over numax.numpy as a user would, with JAX's semantics: results keep their static shapes (roots
with strip_zeros=False marks the roots of leading zeros as nan instead of dropping them)."""

import builtins
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error

from . import linalg
from ._creation import arange, array, asarray, full, ones, vander, zeros
from ._linalg_ops import diag, dot, outer
from ._logic import where
from ._reductions import all, argmin
from ._shape import atleast_1d, concatenate, roll, stack, trim_zeros
from ._signal import convolve
from ._ufuncs import abs, maximum, sqrt, true_divide
from ._util import aval, check_arraylike, device_array, promote_dtypes, promote_dtypes_inexact, shape, to_array

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit", "roots"]


def _complex_dtype(dtype):
    return dtype if dtypes.is_complex(dtype) else np.dtype(np.complex128 if dtype == np.float64 else np.complex64)


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (or the characteristic polynomial of a
    non-empty square matrix, from its eigenvalues: CPU only)."""
    check_arraylike("poly", seq_of_zeros)
    (zeros_,) = promote_dtypes_inexact(seq_of_zeros)
    zeros_ = atleast_1d(zeros_)
    zeros_shape = shape(zeros_)
    if len(zeros_shape) == 2 and zeros_shape[0] == zeros_shape[1] and zeros_shape[0] != 0:
        zeros_ = linalg.eigvals(zeros_)
    if aval(zeros_).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dtype = aval(zeros_).dtype
    if shape(zeros_)[0] == 0:
        return ones((), dtype=dtype)
    coefficients = ones((1,), dtype=dtype)
    for k in range(shape(zeros_)[0]):
        coefficients = convolve(coefficients, stack((lax.full((), 1, dtype), -zeros_[k])), mode="full")
    return coefficients


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter one is aligned with the end of the longer)."""
    check_arraylike("polyadd", a1, a2)
    a1, a2 = (asarray(a) for a in promote_dtypes(a1, a2))
    if shape(a2)[0] > shape(a1)[0]:
        a1, a2 = a2, a1
    return a1.at[-shape(a2)[0]:].add(a2)


def polysub(a1, a2):
    """The difference of two polynomials."""
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(a1, a2)
    return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (a full convolution). `trim_leading_zeros=True` drops leading zeros
    first, as numpy does; that needs concrete coefficients."""
    check_arraylike("polymul", a1, a2)
    a1, a2 = promote_dtypes_inexact(a1, a2)
    if trim_leading_zeros and (shape(a1)[0] > 1 or shape(a2)[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if shape(a1)[0] == 0:
        a1 = zeros(1, dtype=aval(a2).dtype)
    if shape(a2)[0] == 0:
        a2 = zeros(1, dtype=aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial long division u / v. The remainder keeps u's length unless
    `trim_leading_zeros=True` (concrete values only), which drops its leading near-zero coefficients."""
    check_arraylike("polydiv", u, v)
    u, v = (asarray(a) for a in promote_dtypes_inexact(u, v))
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    scale = 1.0 / v[0]
    quotient = zeros(builtins.max(m - n + 1, 1), dtype=aval(u).dtype)
    for k in range(m - n + 1):
        d = scale * u[k]
        quotient = quotient.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        u = _trim_leading_small(u, float(np.sqrt(dtypes.finfo(aval(u).dtype).eps)))
    return quotient, u


def _trim_leading_small(values, tol):
    """`values` (concrete) without its leading entries smaller than `tol` in magnitude (numpy's polydiv
    remainder trimming)."""
    small = np.asarray(concrete_or_error(abs(values) < tol, "polydiv: trim_leading_zeros=True needs concrete "
                                         "coefficients (the result length depends on them)"))
    if small.all():
        return zeros((0,), dtype=aval(values).dtype)
    return values[int(np.argmin(small)):]


def polyder(p, m=1):
    """The coefficients of the m-th derivative of polynomial p."""
    check_arraylike("polyder", p)
    m = operator.index(concrete_or_error(m, "polyder: 'm' must be a static integer"))
    (p,) = promote_dtypes_inexact(p)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    dtype = aval(p).dtype
    factors = (arange(m, shape(p)[0], dtype=dtype)[None] - arange(m, dtype=dtype)[:, None]).prod(0)
    return p[:-m] * factors[::-1]


def polyint(p, m=1, k=None):
    """The coefficients of the m-th antiderivative of polynomial p, with integration constants `k` (a scalar
    for all m integrations, or m values, the first for the lowest order)."""
    m = operator.index(concrete_or_error(m, "polyint: 'm' must be a static integer"))
    k = 0 if k is None else k
    check_arraylike("polyint", p, k)
    p, k = promote_dtypes_inexact(p, k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = atleast_1d(k)
    if shape(k)[0] == 1:
        k = full((m,), k[0])
    if shape(k) != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dtype = aval(p).dtype
    grid = arange(shape(p)[0] + m, dtype=dtype)[None] - arange(m, dtype=dtype)[:, None]
    divisors = maximum(1, grid).prod(0)[::-1]
    return true_divide(concatenate((p, k)), divisors)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` to points (x, y) (y may hold several columns), optionally
    weighted by `w`. `full=True` also returns (residuals, rank, singular values, rcond); `cov=True` (or
    'unscaled') also returns the coefficients' covariance."""
    if w is None:
        check_arraylike("polyfit", x, y)
    else:
        check_arraylike("polyfit", x, y, w)
    # Only x is made inexact (JAX's rcond and Vandermonde matrix take x's dtype); lstsq promotes y.
    (x,) = promote_dtypes_inexact(x)
    y = to_array(y)
    deg = operator.index(concrete_or_error(deg, "polyfit: deg must be a static integer"))
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if aval(x).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if aval(y).ndim < 1 or aval(y).ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if shape(x)[0] != shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = shape(x)[0] * float(dtypes.finfo(aval(x).dtype).eps)
    rcond = float(concrete_or_error(rcond, "polyfit: rcond must be a static float"))
    if cov and cov != "unscaled" and not full and shape(x)[0] <= order:
        raise ValueError("the number of data points must exceed order to scale the covariance matrix")
    lhs, rhs = vander(x, order), y
    if w is not None:
        (w,) = promote_dtypes_inexact(w)
        if aval(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if shape(w)[0] != shape(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if aval(rhs).ndim == 2 else w)
    # Scaling the columns to unit norm improves the conditioning of the least-squares problem.
    scale = sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale[None, :]
    coefficients, residuals, rank, singular_values = linalg.lstsq(lhs, rhs, rcond)
    coefficients = (coefficients.T / scale[None, :]).T if aval(coefficients).ndim > 1 else coefficients / scale
    if full:
        return coefficients, residuals, rank, singular_values, device_array(rcond)
    if not cov:
        return coefficients
    base = linalg.inv(dot(lhs.T, lhs)) / outer(scale, scale)
    if cov == "unscaled":
        factor = array(1.0)
    else:
        factor = residuals / (shape(x)[0] - order)
    if aval(y).ndim == 1:
        return coefficients, base * atleast_1d(factor)[None]
    return coefficients, base[:, :, None] * atleast_1d(factor)[None, None, :]


def _roots_of_nonzero_leading(p):
    """The eigenvalues of the companion matrix of p (whose first coefficient is nonzero)."""
    n = shape(p)[0]
    if n < 2:
        return zeros((0,), dtype=_complex_dtype(aval(p).dtype))
    companion = diag(ones((n - 2,), aval(p).dtype), -1)
    companion = companion.at[0, :].set(-p[1:] / p[0])
    return linalg.eigvals(companion)


def roots(p, *, strip_zeros=True):
    """The (complex) roots of polynomial p, from the eigenvalues of its companion matrix (CPU only).
    With strip_zeros=True leading zeros are dropped (concrete p only); with strip_zeros=False (usable
    under jit) the roots they would contribute are returned as nan at the end."""
    check_arraylike("roots", p)
    (p,) = promote_dtypes_inexact(p)
    p = atleast_1d(p)
    if aval(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    n = shape(p)[0]
    if n < 2:
        return zeros((0,), dtype=_complex_dtype(aval(p).dtype))
    is_zero = p == 0
    leading_zeros = where(all(is_zero), n, argmin(is_zero))
    if strip_zeros:
        leading_zeros = int(concrete_or_error(
            leading_zeros, "roots: with strip_zeros=True the number of roots depends on the values; under jit "
            "pass strip_zeros=False (the roots of leading zeros then come back as nan)"))
        return _roots_of_nonzero_leading(p[leading_zeros:])
    # An all-zero polynomial becomes all ones, so that the eigenvalue solver sees finite values.
    p = where(leading_zeros == n, lax.full_like(p, 1), p)
    # Rolling the leading zeros to the end adds that many zero roots; sort them last, then mark them nan.
    found = _roots_of_nonzero_leading(roll(p, -leading_zeros))
    _, found = lax.sort((found == 0, found), dimension=0, num_keys=1)
    count = shape(found)[0]
    nan = lax.full((count,), complex(np.nan, np.nan), aval(found).dtype)
    return where(arange(count) < count - leading_zeros, found, nan)
