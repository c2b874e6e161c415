"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax, argmin, and friends."""

import math

import numpy as np

from numax import lax
from numax.core import dtypes

from ._eager import compiled_when_eager
from ._util import (
    aval,
    canonicalize_axes,
    canonicalize_axis,
    promote_args,
    promote_dtypes,
    promote_dtypes_numeric,
    requested_dtype,
    shape,
    to_array,
)


def _upcast_small_ints(dtype):
    """numpy sums small integers (and bools) in the platform integer: int32/uint32 by default here."""
    if dtype == dtypes.bool_ or (dtypes.is_integer(dtype) and dtype.itemsize < dtypes.default_int_dtype().itemsize):
        return dtypes.default_uint_dtype() if dtypes.is_unsigned(dtype) else dtypes.default_int_dtype()
    return dtype


def _upcast_16_bit_floats(dtype):
    """The dtype a sum or product of `dtype` values accumulates in: float32 for float16 and bfloat16 (as
    jax.numpy computes them), else `dtype` itself."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _keep_dims(result, reduced_shape, axes):
    kept = [1 if i in axes else d for i, d in enumerate(reduced_shape)]
    return lax.reshape(result, kept)


def _apply_where(a, where, identity):
    if where is None:
        return a
    from ._logic import where as where_

    return where_(where, a, lax.convert_element_type(identity, aval(a).dtype))


def _reduction(name, lax_reduce, identity, upcast=False, bool_result=False, has_identity=True, bool_reduce=None):
    """numpy's reduction `name` over lax_reduce. `upcast`: small integers are summed in the default integer
    and 16-bit floats in float32 (the result converted back), as in jax.numpy. `bool_reduce`: the logical
    reduction used when the requested dtype is bool (a sum is then an `or`, a product an `and`, as in jax)."""
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
        if out is not None:
            raise NotImplementedError(f"{name}: the `out` argument is not supported (numax arrays are immutable)")
        (a,) = promote_args(name, a)
        a_aval = aval(a)
        if bool_result:
            a = lax.convert_element_type(a, dtypes.bool_)
        elif dtype is not None:
            a = lax.convert_element_type(a, requested_dtype(dtype, name))
        elif upcast:
            (a,) = promote_dtypes_numeric(a)
            if promote_integers:
                a = lax.convert_element_type(a, _upcast_small_ints(aval(a).dtype))
        axes = canonicalize_axes(axis, a_aval.ndim)
        if not has_identity and initial is None:
            for ax in axes:
                if a_aval.shape[ax] == 0:
                    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
            if where is not None:
                raise ValueError(f"reduction operation {name} with `where` requires `initial`")
        a = _apply_where(a, where, identity(aval(a).dtype) if initial is None else initial)
        result_dtype = aval(a).dtype
        if upcast and _upcast_16_bit_floats(result_dtype) != result_dtype:
            a = lax.convert_element_type(a, _upcast_16_bit_floats(result_dtype))
        logical = bool_reduce is not None and aval(a).dtype == dtypes.bool_
        result = (bool_reduce if logical else lax_reduce)(a, axes)
        if initial is not None:
            combine = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min}[name]
            if logical:
                combine = lax.bitwise_or if name == "sum" else lax.bitwise_and
            result = combine(result, lax.convert_element_type(initial, aval(result).dtype))
        if aval(result).dtype != result_dtype:
            result = lax.convert_element_type(result, result_dtype)
        if keepdims:
            result = _keep_dims(result, a_aval.shape, axes)
        if not has_identity:
            # max and min are strongly typed even for weak inputs (as in jax.numpy).
            result = lax.convert_element_type(result, aval(result).dtype)
        return result

    reduce.__name__ = name
    reduce.__doc__ = f"numpy.{name}: reduces over `axis` (all axes by default)."
    return reduce


def _max_identity(dtype):
    return -np.inf if dtypes.is_inexact(dtype) else (False if dtype == dtypes.bool_ else np.iinfo(dtype).min)


def _min_identity(dtype):
    return np.inf if dtypes.is_inexact(dtype) else (True if dtype == dtypes.bool_ else np.iinfo(dtype).max)


sum = _reduction("sum", lax.reduce_sum, lambda _: 0, upcast=True, bool_reduce=lax.reduce_or)
prod = _reduction("prod", lax.reduce_prod, lambda _: 1, upcast=True, bool_reduce=lax.reduce_and)
max = _reduction("max", lax.reduce_max, _max_identity, has_identity=False)
min = _reduction("min", lax.reduce_min, _min_identity, has_identity=False)
amax, amin = max, min
_all = _reduction("all", lax.reduce_and, lambda _: True, bool_result=True)
_any = _reduction("any", lax.reduce_or, lambda _: False, bool_result=True)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    return _all(a, axis=axis, keepdims=keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    return _any(a, axis=axis, keepdims=keepdims, where=where)


def _count(a_shape, axes, where):
    if where is None:
        return math.prod(a_shape[i] for i in axes)  # symbolic when a counted dimension is
    from ._shape import broadcast_to

    counted = sum(broadcast_to(lax.convert_element_type(to_array(where), dtypes.int32), a_shape), axis=axes)
    return counted


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    (a,) = promote_args("mean", a)
    a_aval = aval(a)
    if dtype is None:
        dtype = dtypes.to_inexact_dtype(a_aval.dtype)
    dtype = requested_dtype(dtype, "mean")
    computation = _upcast_16_bit_floats(dtype)
    axes = canonicalize_axes(axis, a_aval.ndim)
    total = sum(a, axis=axes, dtype=computation, keepdims=keepdims, where=where)
    count = _count(a_aval.shape, axes, where)
    if where is not None and keepdims:
        count = _keep_dims(count, a_aval.shape, axes)
    result = lax.div(total, lax.convert_element_type(count, computation))
    return result if computation == dtype else lax.convert_element_type(result, dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    if correction is not None:
        ddof = correction
    (a,) = promote_args("var", a)
    a_aval = aval(a)
    given = dtypes.to_inexact_dtype(a_aval.dtype)
    computation = _upcast_16_bit_floats(given)  # 16-bit floats: computed in float32, returned in their dtype
    a = lax.convert_element_type(a, computation)
    axes = canonicalize_axes(axis, a_aval.ndim)
    centered = lax.sub(a, mean(a, axis=axes, keepdims=True, where=where))
    if dtypes.is_complex(computation):
        squared = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        squared = lax.mul(centered, centered)
    total = sum(squared, axis=axes, keepdims=keepdims, where=where)
    count = _count(a_aval.shape, axes, where)
    real_dtype = aval(total).dtype
    if isinstance(count, int):
        divisor = lax.convert_element_type(count - ddof, real_dtype)
    else:
        if where is not None and keepdims:
            count = _keep_dims(count, a_aval.shape, axes)
        divisor = lax.sub(lax.convert_element_type(count, real_dtype), lax.convert_element_type(ddof, real_dtype))
    result = lax.div(total, divisor)
    if not (isinstance(count, int) and count - ddof > 0):
        from ._logic import where as where_

        # No degrees of freedom left: NaN, selected (not divided by zero), so that its tangent is 0 as in JAX.
        result = where_(lax.gt(divisor, lax.full_like(divisor, 0)), result, np.nan)
    if dtype is None:
        return result if computation == given else lax.convert_element_type(result, given)
    return lax.convert_element_type(result, dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _arg_reduction(name, lax_fn):
    def arg_reduce(a, axis=None, out=None, keepdims=False):
        (a,) = promote_args(name, a)
        a_aval = aval(a)
        if a_aval.size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        if axis is None:
            flat = lax.reshape(a, (a_aval.size,))
            result = lax_fn(flat, 0, dtypes.default_int_dtype())
            return lax.reshape(result, (1,) * a_aval.ndim) if keepdims else result
        axis = canonicalize_axis(axis, a_aval.ndim)
        result = lax_fn(a, axis, dtypes.default_int_dtype())
        return _keep_dims(result, a_aval.shape, (axis,)) if keepdims else result

    arg_reduce.__name__ = name
    return arg_reduce


argmax = _arg_reduction("argmax", lax.argmax)
argmin = _arg_reduction("argmin", lax.argmin)


def ptp(a, axis=None, out=None, keepdims=False):
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    (a,) = promote_args("count_nonzero", a)
    nonzero = lax.ne(a, lax.convert_element_type(0, aval(a).dtype))
    return sum(nonzero, axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        result = mean(a, axis=axis, keepdims=keepdims)
        count = lax.full_like(result, np.prod([shape(a)[i] for i in canonicalize_axes(axis, len(shape(a)))]))
        return (result, count) if returned else result
    from ._shape import broadcast_to

    a, weights = promote_dtypes(a, weights)
    a_shape = shape(a)
    if shape(weights) != a_shape:
        if axis is None or len(shape(weights)) != 1:
            raise ValueError("average: weights must have the array's shape, or be 1-d along a single axis")
        axis_index = canonicalize_axis(axis, len(a_shape))
        weights = lax.broadcast_in_dim(weights, a_shape, (axis_index,))
    weights = broadcast_to(weights, a_shape)
    total_weight = sum(weights, axis=axis, keepdims=keepdims)
    result = lax.div(sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), total_weight)
    return (result, total_weight) if returned else result


# Eager calls on one Array with static arguments run as one compiled program each (see _eager).
sum, prod, max, min, mean, all, any, var, std, argmax, argmin, ptp = (
    compiled_when_eager(f) for f in (sum, prod, max, min, mean, all, any, var, std, argmax, argmin, ptp))
amax, amin = max, min
