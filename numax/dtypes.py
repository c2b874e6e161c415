"""`numax.dtypes`, as `jax.dtypes`: the promotion error, the dtype helpers and categories users reach through it
(`extended` and `prng_key` are the categories of typed PRNG key dtypes, for `issubdtype`)."""

import numpy as np
from ml_dtypes import bfloat16  # noqa: F401  (the scalar type, as jax.dtypes.bfloat16 is)

from numax.core.dtypes import (  # noqa: F401
    ExtendedDType,
    TypePromotionError,
    canonicalize_dtype,
    extended,
    float0,
    issubdtype,
    prng_key,
    promote_types,
    result_type,
)
from numax.numpy import finfo, iinfo  # noqa: F401

DType = np.dtype  # what jax._src.dtypes (this module, under the switch) calls a dtype object, in annotations


def itemsize_bits(dtype):
    """The number of bits one element of `dtype` takes (4 for int4, 1 for bool as jax counts it: 8)."""
    dtype = np.dtype(dtype)
    return dtype.itemsize * 8


def scalar_type_of(x):
    """The Python scalar type (bool, int, float or complex) matching the dtype of `x`."""
    dtype = np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype)
    for category, scalar in ((np.bool_, bool), (np.integer, int), (np.floating, float), (np.complexfloating, complex)):
        if issubdtype(dtype, category):
            return scalar
    raise TypeError(f"Invalid scalar value {x}")
