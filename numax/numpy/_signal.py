"""Signal and counting functions: convolve, correlate (over lax.conv_general_dilated), interp, digitize,
bincount, histogram and histogram_bin_edges.

Counting is a scatter-add of the weights into the bins (indices past the last bin are dropped).
"""


from numax import lax
from numax.core import dtypes
from numax.core.trace import concrete_or_error

from ._sorting import _take_1d, searchsorted
from ._util import aval, check_arraylike, promote_dtypes, promote_dtypes_inexact, shape, to_array

__all__ = ["convolve", "correlate", "interp", "digitize", "bincount", "histogram", "histogram_bin_edges"]


# --- convolve / correlate ----------------------------------------------------------------------------------------
def _convolve_1d(name, a, v, mode, precision, preferred_element_type, flip):
    check_arraylike(name, a, v)
    a, v = to_array(a), to_array(v)
    if aval(a).ndim != 1 or aval(v).ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        a, v = promote_dtypes_inexact(a, v)
    if shape(a)[0] == 0 or shape(v)[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {shape(a)} and {shape(v)}.")
    reverse_output = False
    if not flip and dtypes.is_complex(aval(v).dtype):
        v = lax.conj(v)
    if shape(a)[0] < shape(v)[0]:
        # Convolution commutes; correlation with the operands swapped is the reversed result.
        a, v = v, a
        reverse_output = not flip
    if flip:
        v = lax.rev(v, (0,))
    size = shape(v)[0]
    paddings = {"valid": (0, 0), "same": (size // 2, size - size // 2 - 1), "full": (size - 1, size - 1)}
    if mode not in paddings:
        raise ValueError(f"{name}: mode must be one of ['full', 'same', 'valid'], got {mode!r}")
    result = lax.conv_general_dilated(lax.reshape(a, (1, 1, shape(a)[0])), lax.reshape(v, (1, 1, size)), (1,),
                                      [paddings[mode]], precision=precision,
                                      preferred_element_type=preferred_element_type)
    result = lax.reshape(result, (shape(result)[2],))
    return lax.rev(result, (0,)) if reverse_output else result


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of two 1-d arrays ('full', 'same' or 'valid' output)."""
    return _convolve_1d("convolve", a, v, mode, precision, preferred_element_type, flip=True)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-d arrays: c[k] = sum_n a[n + k] * conj(v[n])."""
    return _convolve_1d("correlate", a, v, mode, precision, preferred_element_type, flip=False)


# --- interpolation and binning --------------------------------------------------------------------------------
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at `x`; xp must be increasing (unless `period`)."""
    check_arraylike("interp", x, xp, fp)
    if aval(to_array(xp)).ndim != 1 or aval(to_array(fp)).ndim != 1:
        raise ValueError("interp: xp and fp must be one-dimensional")
    if shape(xp) != shape(fp):
        raise ValueError(f"interp: xp and fp must have the same length, got {shape(xp)} and {shape(fp)}")
    x, xp = promote_dtypes_inexact(x, xp)
    (fp,) = promote_dtypes_inexact(fp)
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("interp: left and right are not used when period is given")
        period = lax.abs(lax.convert_element_type(period, aval(x).dtype))
        x = _mod(x, period)
        xp = _mod(xp, period)
        xp, fp = lax.sort((xp, fp), dimension=0, num_keys=1)
        n = shape(xp)[0]
        xp = lax.concatenate([lax.sub(lax.slice(xp, (n - 1,), (n,)), period), xp,
                              lax.add(lax.slice(xp, (0,), (1,)), period)], 0)
        fp = lax.concatenate([lax.slice(fp, (n - 1,), (n,)), fp, lax.slice(fp, (0,), (1,))], 0)
    n = shape(xp)[0]
    upper = lax.full(shape(x), max(n - 1, 1), dtypes.int32)
    index = lax.clamp(lax.full((), 1, dtypes.int32), searchsorted(xp, x, side="right"), upper)
    below = lax.sub(index, lax.full_like(index, 1))
    if n == 1:
        below = index = lax.full_like(index, 0)
    x_low, x_high = _take_1d(xp, below), _take_1d(xp, index)
    f_low, f_high = _take_1d(fp, below), _take_1d(fp, index)
    dx = lax.sub(x_high, x_low)
    # Equal neighbouring xp (a vertical step) take the left value rather than dividing by zero.
    flat = lax.le(lax.abs(dx), lax.full_like(dx, 0))
    slope_x = lax.div(lax.sub(x, x_low), lax.select(flat, lax.full_like(dx, 1), dx))
    f_dtype = aval(f_low).dtype
    slope_x = lax.convert_element_type(slope_x, f_dtype) if dtypes.is_complex(f_dtype) else slope_x
    f = lax.add(f_low, lax.mul(slope_x, lax.sub(f_high, f_low)))
    f = lax.select(flat, f_low, f)
    if period is None:
        first_x, last_x = lax.slice(xp, (0,), (1,)), lax.slice(xp, (n - 1,), (n,))
        first_f, last_f = lax.slice(fp, (0,), (1,)), lax.slice(fp, (n - 1,), (n,))
        left_value = lax.full(shape(x), lax.reshape(first_f, ()) if left is None else
                              lax.convert_element_type(left, f_dtype), f_dtype)
        right_value = lax.full(shape(x), lax.reshape(last_f, ()) if right is None else
                               lax.convert_element_type(right, f_dtype), f_dtype)
        f = lax.select(lax.lt(x, lax.full(shape(x), lax.reshape(first_x, ()), aval(x).dtype)), left_value, f)
        f = lax.select(lax.gt(x, lax.full(shape(x), lax.reshape(last_x, ()), aval(x).dtype)), right_value, f)
    return f


def _mod(x, period):
    """x mod period with the sign of the period (numpy's %)."""
    remainder = lax.rem(x, lax.full_like(x, period) if aval(period).ndim == 0 else period)
    negative = lax.lt(remainder, lax.full_like(remainder, 0))
    return lax.select(negative, lax.add(remainder, lax.full_like(remainder, period)), remainder)


def digitize(x, bins, right=False):
    """The index of the bin of each `x` (bins increasing or decreasing), as numpy.digitize."""
    check_arraylike("digitize", x, bins)
    x, bins = promote_dtypes(x, bins)
    if aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {shape(bins)}")
    n = shape(bins)[0]
    if n == 0:
        return lax.full(shape(x), 0, dtypes.int32)
    side = "left" if right else "right"
    increasing = lax.ge(lax.reshape(lax.slice(bins, (n - 1,), (n,)), ()), lax.reshape(lax.slice(bins, (0,), (1,)), ()))
    forward = searchsorted(bins, x, side=side)
    backward = lax.sub(lax.full_like(forward, n), searchsorted(lax.rev(bins, (0,)), x, side=side))
    return lax.select(lax.full(shape(x), increasing, dtypes.bool_), forward, backward)


def _scatter_counts(indices, weights, length):
    """counts[j] = sum of weights where indices == j, for j in [0, length); other indices are dropped."""
    size = aval(indices).size
    dimension_numbers = lax.ScatterDimensionNumbers((), (0,), (0,), (), ())
    zeros = lax.full((length,), 0, aval(weights).dtype)
    return lax.scatter_add(zeros, lax.reshape(indices, (size, 1)), lax.reshape(weights, (size,)), dimension_numbers,
                           mode="drop")


def bincount(x, weights=None, minlength=0, *, length=None):
    """The number of occurrences (or summed weights) of each value 0, 1, ... of the non-negative ints `x`.
    Under jit, pass a static `length`; larger values are dropped and negative ones count as 0."""
    check_arraylike("bincount", x)
    x = to_array(x)
    if not dtypes.is_integer(aval(x).dtype) and aval(x).dtype != dtypes.bool_:
        raise TypeError(f"bincount: x argument must have an integer type, got {aval(x).dtype.name}")
    if aval(x).ndim != 1:
        raise ValueError(f"bincount: only 1-d inputs are supported, got shape {shape(x)}")
    minlength = int(concrete_or_error(minlength, "bincount: minlength must be a static integer"))
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        largest = concrete_or_error(
            lax.reduce_max(x, (0,)) if shape(x)[0] else 0,
            "bincount: the result length depends on the values; under jit pass a static `length`")
        length = max(int(largest) + 1, minlength)
    length = int(length)
    x = lax.convert_element_type(x, dtypes.int32)
    x = lax.max(x, lax.full_like(x, 0))
    weights = lax.full(shape(x), 1, dtypes.default_int_dtype()) if weights is None else to_array(weights)
    if shape(weights) != shape(x):
        raise ValueError(f"bincount: weights {shape(weights)} must have the shape of x {shape(x)}")
    if aval(weights).dtype == dtypes.bool_:
        weights = lax.convert_element_type(weights, dtypes.default_int_dtype())
    return _scatter_counts(x, weights, length)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges of `bins` equal bins over `range` (by default the data's min and max), or `bins`
    itself when it is an array of edges."""
    check_arraylike("histogram_bin_edges", a)
    (a,) = promote_dtypes_inexact(a)
    dtype = aval(a).dtype
    if aval(to_array(bins)).ndim:
        (edges,) = promote_dtypes_inexact(to_array(bins))
        edges = lax.convert_element_type(edges, aval(edges).dtype)  # a device array of the canonical dtype
        if aval(edges).ndim != 1:
            raise ValueError(f"histogram: bins must be an int or a 1-d array of edges, got shape {shape(edges)}")
        return edges
    bins = int(concrete_or_error(bins, "histogram: the number of bins must be a static integer"))
    if bins < 1:
        raise ValueError(f"histogram: bins must be positive, got {bins}")
    if range is None:
        if aval(a).size == 0:
            low, high = lax.full((), 0, dtype), lax.full((), 1, dtype)
        else:
            low, high = lax.reduce_min(lax.reshape(a, (aval(a).size,)), (0,)), lax.reduce_max(
                lax.reshape(a, (aval(a).size,)), (0,))
    else:
        low, high = (lax.convert_element_type(to_array(r), dtype) for r in range)
    # An empty range widens to half a unit either side, as numpy does.
    same = lax.eq(low, high)
    half = lax.full((), 0.5, dtype)
    low = lax.select(same, lax.sub(low, half), low)
    high = lax.select(same, lax.add(high, half), high)
    steps = lax.div(lax.convert_element_type(lax.iota(dtypes.int32, bins + 1), dtype), lax.full((), bins, dtype))
    edges = lax.add(lax.full((bins + 1,), low, dtype), lax.mul(steps, lax.full((bins + 1,), lax.sub(high, low), dtype)))
    # The last edge is exactly the top of the range (rounding must not drop the maximum).
    return lax.concatenate([lax.slice(edges, (0,), (bins,)), lax.reshape(high, (1,))], 0)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts (or summed weights) of `a` in each bin, and the bin edges. Bins are half-open except the
    last, which includes its right edge; values outside the edges are not counted."""
    check_arraylike("histogram", a)
    edges = histogram_bin_edges(a, bins, range)
    (a,) = promote_dtypes_inexact(a)
    flat = lax.reshape(a, (aval(a).size,))
    if weights is None:
        weights = lax.full(shape(flat), 1, aval(a).dtype)
    else:
        weights = lax.reshape(to_array(weights), (aval(a).size,))
    n_edges = shape(edges)[0]
    flat = lax.convert_element_type(flat, aval(edges).dtype)
    bin_index = searchsorted(edges, flat, side="right")
    last_edge = lax.full(shape(flat), lax.reshape(lax.slice(edges, (n_edges - 1,), (n_edges,)), ()), aval(edges).dtype)
    bin_index = lax.select(lax.eq(flat, last_edge), lax.full_like(bin_index, n_edges - 1), bin_index)
    counts = lax.slice(_scatter_counts(bin_index, weights, n_edges), (1,), (n_edges,))
    if density:
        widths = lax.sub(lax.slice(edges, (1,), (n_edges,)), lax.slice(edges, (0,), (n_edges - 1,)))
        total = lax.reduce_sum(counts, (0,))
        counts = lax.div(lax.div(counts, lax.convert_element_type(widths, aval(counts).dtype)),
                         lax.full(shape(counts), total, aval(counts).dtype))
    return counts, edges
