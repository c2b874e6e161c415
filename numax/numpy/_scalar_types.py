"""numax.numpy's scalar types (`float32`, `int8`, `bool`, ...): dtype stand-ins that compare, hash and
convert like numpy dtypes, and make 0-d arrays when called (as jax.numpy's do)."""

import ml_dtypes
import numpy as np

from numax.core import dtypes

from ._creation import asarray


class ScalarType:
    """`numax.numpy.float32` and friends: usable wherever a dtype is (`np.dtype(xnp.float32)`), and callable
    like jax.numpy's scalar types: `xnp.float32(3)` is a 0-d float32 array."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.__name__ = self.dtype.name if self.dtype != np.bool_ else "bool"

    def __call__(self, value=0):
        return asarray(value, dtype=self.dtype)

    def __repr__(self):
        return f"numax.numpy.{self.__name__}"

    def __eq__(self, other):
        # Equal to whatever names the same dtype (a dtype, a scalar type or class, a dtype string); anything
        # else (values, arrays, dicts numpy would parse as record dtypes) is simply not equal: dtypes are kept
        # in lookup tables next to arbitrary keys, so comparing must never raise.
        if isinstance(other, ScalarType):
            return self.dtype == other.dtype
        if not isinstance(other, (np.dtype, type, str)):
            return False
        try:
            return self.dtype == np.dtype(other)
        except (TypeError, ValueError, SyntaxError):  # numpy's errors for strings and types it cannot parse
            return False

    def __hash__(self):
        # The dtype's hash: `x.dtype` (a numpy dtype) and the scalar type find each other in dicts and sets.
        return hash(self.dtype)


bool_ = ScalarType(dtypes.bool_)
int8, int16, int32, int64 = (ScalarType(d) for d in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64))
uint8, uint16, uint32, uint64 = (ScalarType(d) for d in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64))
bfloat16, float16, float32, float64 = (ScalarType(d) for d in (dtypes.bfloat16, dtypes.float16, dtypes.float32,
                                                               dtypes.float64))
complex64, complex128 = ScalarType(dtypes.complex64), ScalarType(dtypes.complex128)

# jax.numpy's narrow ml_dtypes types: names usable as dtypes (numax may not compute in them).
narrow_types = {name: ScalarType(getattr(ml_dtypes, name)) for name in (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2",
    "int4", "uint1", "uint2", "uint4") if hasattr(ml_dtypes, name)}
