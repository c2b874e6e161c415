"""Statistics and sampled-function calculus: cov, corrcoef, gradient, trapezoid, unwrap, histogram2d,
histogramdd and mask_indices, written over numax.numpy as a user would (JAX's semantics and dtypes)."""

import builtins
import math
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error

from ._advanced import ix_, nonzero, ravel_multi_index
from ._creation import array, asarray, full, ones
from ._cumulative import cumsum, diff
from ._linalg_ops import diag, dot
from ._logic import clip, where
from ._reductions import average, sum
from ._shape import atleast_2d, concatenate, moveaxis, reshape, stack, transpose
from ._signal import bincount, histogram_bin_edges
from ._sorting import searchsorted
from ._ufuncs import abs, imag, mod, real, sqrt, true_divide
from ._util import (
    aval,
    canonicalize_axis,
    check_arraylike,
    promote_args_inexact,
    promote_dtypes,
    promote_dtypes_inexact,
    shape,
    to_array,
)

__all__ = ["cov", "corrcoef", "gradient", "trapezoid", "unwrap", "histogram2d", "histogramdd", "mask_indices"]


def _check_inexact_dtype(name, dtype):
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"{name}: dtype must be a subclass of float or complex; got dtype={np.dtype(dtype)}")


def _observation_weights(name, weights, n_observations):
    check_arraylike("cov", weights)
    weights = to_array(weights)
    if aval(weights).ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if shape(weights)[0] != n_observations:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    # numpy rejects negative weights; under tracing that cannot be checked, so JAX takes absolute values.
    return abs(weights)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """The (weighted) sample covariance matrix of the variables in the rows of `m` (columns if not
    `rowvar`), with `y`'s variables appended; a 0-d result for a single variable."""
    if y is not None:
        check_arraylike("cov", m, y)
        m, y = promote_dtypes_inexact(m, y)
        # Like JAX, the lower-rank operand gains leading unit axes (this decides whether rowvar=False transposes).
        rank = builtins.max(aval(m).ndim, aval(y).ndim)
        m, y = (lax.broadcast_to_rank(a, rank) if aval(a).ndim < rank else a for a in (m, y))
        if aval(y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (m,) = promote_args_inexact("cov", m)
    if aval(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    m = asarray(m)
    _check_inexact_dtype("cov", dtype)
    variables = atleast_2d(m)
    if not rowvar and aval(m).ndim != 1:
        variables = transpose(variables)
    if shape(variables)[0] == 0:
        return reshape(array([]), (0, 0))
    if y is not None:
        extra = atleast_2d(y)
        if not rowvar and shape(extra)[0] != 1:
            extra = transpose(extra)
        variables = concatenate((variables, extra), axis=0)
    n_variables, n_observations = shape(variables)
    if n_observations == 0:
        return full(() if n_variables == 1 else (n_variables, n_variables), np.nan, dtype=aval(variables).dtype)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    weights = None
    if fweights is not None:
        fweights = _observation_weights("fweights", fweights, n_observations)
        if not dtypes.is_integer(aval(fweights).dtype):
            raise TypeError("fweights must be integer.")
        weights = fweights
    if aweights is not None:
        aweights = _observation_weights("aweights", aweights, n_observations)
        weights = aweights if weights is None else weights * aweights
    if dtype is not None:
        variables = variables.astype(dtype)
        weights = None if weights is None else weights.astype(dtype)
    mean, weight_sum = average(variables, axis=1, weights=weights, returned=True)
    weight_sum = weight_sum[0]
    if weights is None:
        normalizer = n_observations - ddof
    elif ddof == 0:
        normalizer = weight_sum
    elif aweights is None:
        normalizer = weight_sum - ddof
    else:
        normalizer = weight_sum - ddof * sum(weights * aweights) / weight_sum
    centered = variables - mean[:, None]
    weighted = centered if weights is None else centered * weights[None, :]
    return true_divide(dot(centered, transpose(weighted).conj()), normalizer).squeeze()


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients: cov(x, y) normalized by the standard deviations, clipped to [-1, 1]."""
    check_arraylike("corrcoef", x)
    _check_inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if aval(c).ndim == 0:
        return true_divide(c, c)  # nan for 0/0, inf/inf and nan; 1 otherwise
    stddev = sqrt(real(diag(c))).astype(aval(c).dtype)
    c = c / stddev[:, None] / stddev[None, :]
    real_part = clip(real(c), -1, 1)
    if dtypes.is_complex(aval(c).dtype):
        return lax.complex(real_part, clip(imag(c), -1, 1))
    return real_part


def _index_tuple(axis):
    return tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)


def _gradient_along_axis(f, spacing, axis):
    """Second-order central differences inside, first-order one-sided differences at both ends."""
    n = shape(f)[axis]

    def part(a, start, stop):
        return lax.slice_in_dim(a, start, stop, axis=axis)

    first = part(f, 1, 2) - part(f, 0, 1)
    last = part(f, n - 1, n) - part(f, n - 2, n - 1)
    if aval(spacing).ndim == 0:
        inner = (part(f, 2, n) - part(f, 0, n - 2)) * 0.5 / spacing
        return concatenate((first / spacing, inner, last / spacing), axis=axis)
    if aval(spacing).ndim != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    if shape(spacing)[0] != n:
        raise ValueError("Spacing arrays must have the same length as the dimension along which the gradient is "
                         "calculated.")
    coordinates = reshape(spacing, tuple(n if i == axis else 1 for i in range(aval(f).ndim)))
    first = first / (part(coordinates, 1, 2) - part(coordinates, 0, 1))
    last = last / (part(coordinates, n - 1, n) - part(coordinates, n - 2, n - 1))
    left = part(coordinates, 1, n - 1) - part(coordinates, 0, n - 2)
    right = part(coordinates, 2, n) - part(coordinates, 1, n - 1)
    inner = (-right / (left * (left + right)) * part(f, 0, n - 2)
             + (right - left) / (left * right) * part(f, 1, n - 1)
             + left / (right * (left + right)) * part(f, 2, n))
    return concatenate((first, inner, last), axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The numerical gradient of sampled values `f` along each axis (one array, or a list for several axes).
    Spacings: none (unit), one scalar for all axes, or one scalar or coordinate array per axis.
    Only first-order edges (numpy's edge_order=1) are supported, as in JAX."""
    if edge_order is not None and edge_order != 1:
        raise NotImplementedError(f"gradient: only edge_order=1 is supported, got edge_order={edge_order}")
    check_arraylike("gradient", f, *varargs)
    f, *spacings = promote_dtypes_inexact(f, *varargs)
    rank = aval(f).ndim
    if axis is None:
        axes = tuple(range(rank))
    else:
        axes = tuple(canonicalize_axis(a, rank) for a in _index_tuple(axis))
    if not axes:
        return []
    if builtins.min(shape(f)[a] for a in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 elements are "
                         "required.")
    if not spacings:
        spacings = [lax.full((), 1.0, aval(f).dtype)] * len(axes)
    elif len(spacings) == 1:
        spacings = spacings * len(axes)
    elif len(spacings) != len(axes):
        raise TypeError(f"Invalid number of spacing arguments {len(spacings)} for axis={axis}")
    result = [_gradient_along_axis(f, h, a) for a, h in zip(axes, spacings)]
    return result[0] if len(axes) == 1 else result


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` along `axis` by the composite trapezoidal rule, at sample points `x` or with
    spacing `dx`."""
    if x is None:
        check_arraylike("trapezoid", y)
        (y,) = promote_dtypes_inexact(y)
        spacing = to_array(dx)
        if aval(spacing).ndim > 0:
            spacing = lax.expand_dims(spacing, tuple(range(aval(y).ndim - aval(spacing).ndim)))
            spacing = moveaxis(spacing, axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(y, x)
        spacing = diff(x) if aval(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    if aval(spacing).ndim == 0 or shape(spacing)[-1] == 1:
        # One spacing along the axis: dx * (sum - (first + last) / 2).
        step = spacing if aval(spacing).ndim == 0 else spacing[..., 0]
        return step * (y.sum(-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * (spacing * (y[..., 1:] + y[..., :-1])).sum(-1)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """`p` with jumps between neighbours larger than `discont` (default period/2) along `axis` replaced by
    their complement modulo `period`."""
    check_arraylike("unwrap", p)
    p, period = promote_dtypes(p, period)
    if dtypes.is_complex(aval(p).dtype):
        raise ValueError("unwrap does not support complex inputs.")
    axis = canonicalize_axis(axis, aval(p).ndim)
    if shape(p)[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    half_period = period // 2 if dtypes.is_integer(aval(p).dtype) else period / 2
    step = diff(p, axis=axis)
    wrapped = mod(step + half_period, period) - half_period
    # A step of exactly +period/2 stays positive (numpy's rule).
    wrapped = where((wrapped == -half_period) & (step > 0), half_period, wrapped)
    correction = where(abs(step) < discont, 0, wrapped - step)
    # The running correction is strongly typed (jax's cumsum drops a weak type), so the result is too: an int
    # input with the default float period gives float32, not weakly typed float32.
    running = cumsum(lax.convert_element_type(correction, aval(correction).dtype), axis=axis)
    n = shape(p)[axis]
    return concatenate((lax.slice_in_dim(p, 0, 1, axis=axis),
                        lax.slice_in_dim(p, 1, n, axis=axis) + running), axis=axis)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The histogram of `N` points in `D` dimensions (sample of shape (N, D)) and the bin edges of each
    dimension. `bins`: one count, or a count or edge array per dimension; `range`: a (low, high) pair or
    None per dimension."""
    if weights is None:
        check_arraylike("histogramdd", sample)
        (sample,) = promote_dtypes_inexact(sample)
    else:
        check_arraylike("histogramdd", sample, weights)
        if shape(weights) != shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = promote_dtypes_inexact(sample, weights)
    if aval(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must have shape (N, D), got {shape(sample)}")
    n_points, n_dims = shape(sample)
    if range is not None and (len(range) != n_dims or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(n_points, n_dims)}, range must be a sequence of {n_dims} pairs or "
                         f"Nones; got range={range}")
    try:
        bins_per_dim = list(bins)
    except TypeError:
        bins_per_dim = n_dims * [bins]
    else:
        if len(bins_per_dim) != n_dims:
            raise ValueError("should be a bin for each dimension.")
    indices, edges = [], []
    for i in builtins.range(n_dims):
        column = sample[:, i]
        dim_edges = histogram_bin_edges(column, bins_per_dim[i], None if range is None else range[i])
        index = searchsorted(dim_edges, column, side="right")
        # The last bin is closed: points on the top edge count in it.
        index = where(column == dim_edges[-1], index - 1, index)
        indices.append(index)
        edges.append(dim_edges)
    # Bin 0 and bin len(edges) of each dimension catch the points outside the edges; they are cut off below.
    padded_shape = tuple(shape(e)[0] + 1 for e in edges)
    flat_index = ravel_multi_index(tuple(indices), padded_shape, mode="clip")
    hist = reshape(bincount(flat_index, weights, length=math.prod(padded_shape)), padded_shape)
    hist = hist[(slice(1, -1),) * n_dims]
    if density:
        hist = hist.astype(aval(sample).dtype)
        hist = hist / hist.sum()
        for widths in ix_(*[diff(e) for e in edges]):
            hist = hist / widths
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """The 2-d histogram of points (x, y) and the edges along x and y. `bins`: a count, an edge array,
    or a pair of them."""
    check_arraylike("histogram2d", x, y)
    try:
        n_bins = len(bins)
    except TypeError:
        n_bins = 1
    if n_bins not in (1, 2):
        shared_edges = to_array(bins)
        bins = [shared_edges, shared_edges]
    x, y = promote_dtypes(x, y)
    hist, edges = histogramdd(stack((x, y), axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


def mask_indices(n, mask_func, k=0, *, size=None):
    """The (row, column) indices where `mask_func(ones((n, n)), k)` is nonzero (e.g. triu, tril); under
    numax.jit pass a static `size`."""
    n = operator.index(concrete_or_error(n, "mask_indices: n must be a static integer"))
    rows, columns = nonzero(mask_func(ones((n, n)), k), size=size)
    return rows, columns
