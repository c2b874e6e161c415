"""Running and NaN-ignoring reductions: cumsum, cumprod, cumulative_sum/prod, nancumsum/prod, diff,
ediff1d, and nansum, nanprod, nanmean, nanvar, nanstd, nanmax, nanmin, nanargmax, nanargmin."""

import numpy as np

from numax import lax
from numax.core import dtypes

from . import _reductions
from ._array_methods import install_late
from ._logic import where
from ._shape import broadcast_to, concatenate, ravel
from ._ufuncs import isnan, logical_not
from ._util import aval, canonicalize_axis, promote_args, requested_dtype, shape, to_array

__all__ = ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod", "diff",
           "ediff1d", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax",
           "nanargmin"]


# --- running reductions ----------------------------------------------------------------------------------------
def _cumulative(name, lax_fn, nan_identity=None):
    def reduce(a, axis=None, dtype=None, out=None):
        if out is not None:
            raise NotImplementedError(f"{name}: the `out` argument is not supported (numax arrays are immutable)")
        (a,) = promote_args(name, a)
        if axis is None:
            a, axis = lax.reshape(a, (aval(a).size,)), 0
        axis = canonicalize_axis(axis, aval(a).ndim)
        if nan_identity is not None and dtypes.is_inexact(aval(a).dtype):
            a = where(isnan(a), lax.full((), nan_identity, aval(a).dtype), a)
        if dtype is not None:
            a = lax.convert_element_type(a, requested_dtype(dtype, name))
        elif aval(a).dtype == dtypes.bool_:
            a = lax.convert_element_type(a, dtypes.default_int_dtype())
        result = lax_fn(a, axis)
        return lax.convert_element_type(result, aval(result).dtype)  # strong, as jax.numpy's running reductions

    reduce.__name__ = name
    reduce.__doc__ = f"numpy.{name}: the running {name[:-3] if name.startswith('nan') else name} along `axis`."
    return reduce


# lax.cumsum/cumprod are read at call time: their family loads on first use, not with numax.numpy.
cumsum = _cumulative("cumsum", lambda a, axis: lax.cumsum(a, axis))
cumprod = _cumulative("cumprod", lambda a, axis: lax.cumprod(a, axis))
nancumsum = _cumulative("nancumsum", lambda a, axis: lax.cumsum(a, axis), 0)
nancumprod = _cumulative("nancumprod", lambda a, axis: lax.cumprod(a, axis), 1)


def _cumulative_with_initial(name, fn, identity):
    def reduce(x, /, *, axis=None, dtype=None, include_initial=False):
        (x,) = promote_args(name, x)
        rank = aval(x).ndim
        if axis is None:
            if rank > 1:
                raise ValueError(f"{name}: the input array has {rank} dimensions; pass an axis when it has more "
                                 "than one")
            axis = 0
        if rank == 0:
            raise ValueError(f"{name}: the input must be at least 1-d, got a 0-d array")
        axis = canonicalize_axis(axis, rank)
        result = fn(x, axis=axis, dtype=dtype)
        if include_initial:
            initial_shape = list(shape(result))
            initial_shape[axis] = 1
            initial = lax.full(initial_shape, identity, aval(result).dtype)
            result = lax.concatenate([initial, result], axis)
        return result

    reduce.__name__ = name
    return reduce


def _upcast_then(fn):
    """cumulative_sum sums small integers in the default integer type, like sum (as JAX does)."""

    def run(x, axis, dtype):
        if dtype is None:
            dtype = _reductions._upcast_small_ints(aval(x).dtype)
        return fn(x, axis=axis, dtype=dtype)

    return run


cumulative_sum = _cumulative_with_initial("cumulative_sum", _upcast_then(cumsum), 0)
cumulative_prod = _cumulative_with_initial("cumulative_prod", cumprod, 1)  # JAX does not upcast here


# --- differences ---------------------------------------------------------------------------------------------------
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The `n`-th discrete difference along `axis` (for booleans: where neighbours differ)."""
    (a,) = promote_args("diff", a)
    rank = aval(a).ndim
    if rank == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    n = int(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if n == 0:
        return a
    axis = canonicalize_axis(axis, rank)
    def edge(extra):
        extra = to_array(extra)
        if aval(extra).ndim:
            return extra
        edge_shape = list(shape(a))
        edge_shape[axis] = 1
        return broadcast_to(extra, tuple(edge_shape))

    pieces = [edge(prepend)] if prepend is not None else []
    pieces += [a] + ([edge(append)] if append is not None else [])
    if len(pieces) > 1:
        a = concatenate(pieces, axis=axis)
    combine = lax.ne if aval(a).dtype == dtypes.bool_ else lax.sub
    for _ in range(n):
        size = shape(a)[axis]
        if size == 0:
            break
        a = combine(lax.slice_in_dim(a, 1, size, 1, axis), lax.slice_in_dim(a, 0, size - 1, 1, axis))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with optional values at either end."""
    (ary,) = promote_args("ediff1d", ary)
    flat = ravel(ary)
    size = shape(flat)[0]
    result = lax.sub(lax.slice(flat, (1,), (size,)), lax.slice(flat, (0,), (size - 1,))) if size else flat
    dtype = aval(flat).dtype
    pieces = []
    if to_begin is not None:
        pieces.append(lax.convert_element_type(ravel(to_array(to_begin)), dtype))
    pieces.append(result)
    if to_end is not None:
        pieces.append(lax.convert_element_type(ravel(to_array(to_end)), dtype))
    return lax.concatenate(pieces, 0) if len(pieces) > 1 else result


# --- NaN-ignoring reductions -------------------------------------------------------------------------------------
def _without_nans(a, replacement):
    (a,) = promote_args("nan reduction", a)
    if not dtypes.is_inexact(aval(a).dtype):
        return a, None
    mask = isnan(a)
    return where(mask, lax.full((), replacement, aval(a).dtype), a), mask


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    a, _ = _without_nans(a, 0)
    return _reductions.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    a, _ = _without_nans(a, 1)
    return _reductions.prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def _nan_extreme(name, reduce, fill):
    def reduce_ignoring_nan(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        cleaned, mask = _without_nans(a, fill)
        result = reduce(cleaned, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
        if mask is None:
            return result
        # A slice of only NaNs has no answer: NaN, as in JAX.
        all_nan = _reductions.all(mask, axis=axis, keepdims=keepdims)
        return _select_where(all_nan, lax.full((), np.nan, aval(result).dtype), result)

    reduce_ignoring_nan.__name__ = name
    return reduce_ignoring_nan


def _select_where(condition, x, y):
    """`where`, for functions whose `where` argument hides it."""
    return where(condition, x, y)


nanmax = _nan_extreme("nanmax", _reductions.max, -np.inf)
nanmin = _nan_extreme("nanmin", _reductions.min, np.inf)


def _nan_arg_extreme(name, arg_reduce, fill):
    def arg_reduce_ignoring_nan(a, axis=None, out=None, keepdims=False):
        cleaned, mask = _without_nans(a, fill)
        result = arg_reduce(cleaned, axis=axis, keepdims=keepdims)
        if mask is None:
            return result
        all_nan = _reductions.all(mask, axis=axis, keepdims=keepdims)
        return where(all_nan, lax.full((), -1, aval(result).dtype), result)

    arg_reduce_ignoring_nan.__name__ = name
    return arg_reduce_ignoring_nan


nanargmax = _nan_arg_extreme("nanargmax", _reductions.argmax, -np.inf)
nanargmin = _nan_arg_extreme("nanargmin", _reductions.argmin, np.inf)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    (a,) = promote_args("nanmean", a)
    if not dtypes.is_inexact(aval(a).dtype):
        return _reductions.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    if dtype is not None:
        a = lax.convert_element_type(a, requested_dtype(dtype, "nanmean"))
    cleaned, mask = _without_nans(a, 0)
    total = _reductions.sum(cleaned, axis=axis, keepdims=keepdims, where=where)
    count = _reductions.sum(logical_not(mask), axis=axis, keepdims=keepdims, where=where)
    return lax.div(total, lax.convert_element_type(count, aval(total).dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    if correction is not None:
        ddof = correction
    (a,) = promote_args("nanvar", a)
    computation = dtypes.to_inexact_dtype(aval(a).dtype)
    a = lax.convert_element_type(a, computation)
    mask = isnan(a)
    centered = _select_where(mask, lax.full((), 0, computation), lax.sub(a, nanmean(a, axis=axis, keepdims=True,
                                                                               where=where)))
    if dtypes.is_complex(computation):
        squared = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        squared = lax.mul(centered, centered)
    total = _reductions.sum(squared, axis=axis, keepdims=keepdims, where=where)
    real_dtype = aval(total).dtype
    count = _reductions.sum(logical_not(mask), axis=axis, keepdims=keepdims, where=where)
    divisor = lax.sub(lax.convert_element_type(count, real_dtype), lax.convert_element_type(ddof, real_dtype))
    nonpositive = lax.le(divisor, lax.full_like(divisor, 0))
    result = lax.div(total, lax.select(nonpositive, lax.full_like(divisor, 1), divisor))
    result = lax.select(nonpositive, lax.full_like(result, np.nan), result)
    return result if dtype is None else lax.convert_element_type(result, dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


install_late("cumsum", lambda self, axis=None, dtype=None, out=None: cumsum(self, axis, dtype, out))
install_late("cumprod", lambda self, axis=None, dtype=None, out=None: cumprod(self, axis, dtype, out))
