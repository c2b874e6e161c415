"""Selection and logic over whole arrays: where, select, clip, nan_to_num, array_equal, allclose."""

import builtins

import numpy as np

from numax import lax
from numax.core import dtypes

from ._eager import clip_compiled_when_eager, where_compiled_when_eager
from ._ufuncs import isclose, isnan, to_bool
from ._util import aval, broadcast_shapes, check_arraylike, promote_args, promote_dtypes, shape, to_array


def _broadcast_to(x, target):
    x_shape = shape(x)
    if x_shape == target:
        return x
    rank = len(target)
    return lax.broadcast_in_dim(lax.broadcast_to_rank(x, rank) if len(x_shape) < rank and x_shape else x,
                                target, range(rank) if x_shape else ())


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Elementwise `x` where `condition`, else `y` (the one-argument form is `nonzero`)."""
    if x is None and y is None:
        from ._indexing import nonzero

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where takes either 1 or 3 arguments")
    condition = to_bool(condition)
    if dtypes.has_extended_dtype(x) and dtypes.has_extended_dtype(y):
        return _where_keys(condition, x, y)
    x, y = promote_dtypes(x, y)
    target = broadcast_shapes(shape(condition), shape(x), shape(y))
    return lax.select(_broadcast_to(condition, target), _broadcast_to(x, target), _broadcast_to(y, target))


where = where_compiled_when_eager(where)  # eager calls: one compiled program (see _eager)


def _where_keys(condition, x, y):
    """`where` between typed PRNG key arrays, as in jax: a selection of their key data (each key's words, one
    trailing axis), wrapped as keys again."""
    from numax import random  # (numax.random builds on numax.numpy)

    target = broadcast_shapes(shape(condition), tuple(x.shape), tuple(y.shape))
    data = [random.key_data(keys) for keys in (x, y)]
    data = [_broadcast_to(words, target + (shape(words)[-1],)) if tuple(keys.shape) != target else words
            for keys, words in zip((x, y), data)]
    selector = _broadcast_to(condition, target)[..., None]
    return random.wrap_key_data(where(selector, *data))


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length")
    if not condlist:
        raise ValueError("select: condlist must not be empty")
    result = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        result = where(condition, choice, result)
    return result


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """`arr` limited to [min, max] (either bound may be None)."""
    arr = a if arr is None else arr
    min = a_min if min is None else min
    max = a_max if max is None else max
    if arr is None:
        raise ValueError("No input was provided to the clip function.")
    check_arraylike("clip", arr)
    if builtins.any(b is not None and dtypes.is_complex(aval(to_array(b)).dtype) for b in (arr, min, max)):
        raise ValueError("clip received a complex value through the input or the min/max bounds; complex values "
                         "have no order: clip their real or imaginary part (numax.numpy.real/imag) instead")
    (arr,) = promote_args("clip", arr)
    if min is not None:
        arr = _maximum(arr, min)
    if max is not None:
        arr = _minimum(arr, max)
    return arr


clip = clip_compiled_when_eager(clip)  # eager calls: one compiled program (see _eager)


def _maximum(a, b):
    a, b = promote_args("clip", a, b)
    return lax.max(a, b)


def _minimum(a, b):
    a, b = promote_args("clip", a, b)
    return lax.min(a, b)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    (x,) = promote_args("nan_to_num", x)
    dtype = aval(x).dtype
    if dtypes.is_complex(dtype):
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    if not dtypes.is_inexact(dtype):
        return x
    info = dtypes.finfo(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), lax.convert_element_type(nan, dtype), x)
    x = where(lax.eq(x, lax.convert_element_type(np.inf, dtype)), lax.convert_element_type(posinf, dtype), x)
    return where(lax.eq(x, lax.convert_element_type(-np.inf, dtype)), lax.convert_element_type(neginf, dtype), x)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    from ._reductions import all as all_

    return all_(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    from ._reductions import all as all_

    if dtypes.has_extended_dtype(a1) or dtypes.has_extended_dtype(a2):  # typed keys: their own `==`, as jax's
        if tuple(a1.shape) != tuple(a2.shape):
            return lax.full((), False, dtypes.bool_)
        return all_(a1 == a2)
    a1, a2 = to_array(a1), to_array(a2)
    if shape(a1) != shape(a2):
        return lax.full((), False, dtypes.bool_)
    a1, a2 = promote_dtypes(a1, a2)
    equal = lax.eq(a1, a2)
    if equal_nan and dtypes.is_inexact(aval(a1).dtype):
        equal = lax.bitwise_or(equal, lax.bitwise_and(isnan(a1), isnan(a2)))
    return all_(equal)


def array_equiv(a1, a2):
    from ._reductions import all as all_

    a1, a2 = promote_args("array_equiv", a1, a2)
    try:
        broadcast_shapes(shape(a1), shape(a2))
    except ValueError:
        return lax.full((), False, dtypes.bool_)
    return all_(lax.eq(a1, a2))
