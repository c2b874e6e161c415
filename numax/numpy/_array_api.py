"""The Python array API standard's namespace-level pieces: the version numax.numpy implements, the
`__array_namespace__` lookup, the inspection namespace (`__array_namespace_info__`) and `isdtype`, all
sharing one table of the standard's dtype kinds. Values follow jax.numpy's."""

import numpy as np

from numax.core import dtypes
from numax.lowering import xla

from ._scalar_types import narrow_types

__array_api_version__ = "2024.12"


def _narrow(prefix):
    return tuple(scalar_type.dtype for name, scalar_type in narrow_types.items() if name.startswith(prefix))


# The standard's dtype kinds and the dtypes in each: beyond the standard's own, `isdtype` knows bfloat16,
# float16 and the narrow ml_dtypes types as jax.numpy does.
_signed = dtypes.signed_integers + _narrow("int")
_unsigned = dtypes.unsigned_integers + _narrow("uint")
_real = dtypes.floats + _narrow("float")
_kind_members = {
    "bool": (dtypes.bool_,),
    "signed integer": _signed,
    "unsigned integer": _unsigned,
    "integral": _signed + _unsigned,
    "real floating": _real,
    "complex floating": dtypes.complexes,
    "numeric": _signed + _unsigned + _real + dtypes.complexes,
}
# The standard's own dtypes, in its order; the 64-bit ones exist only while x64 is on.
_standard_dtypes = (dtypes.bool_,) + dtypes.signed_integers + dtypes.unsigned_integers + (
    dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def array_namespace(self, /, *, api_version=None):
    """`Array.__array_namespace__`: numax.numpy, for the one version of the standard it implements."""
    if api_version is not None and api_version != __array_api_version__:
        raise ValueError(f"api_version={api_version!r} is not available; available versions are: "
                         f"{[__array_api_version__]}")
    import numax.numpy

    return numax.numpy


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a kind name of the standard, a dtype, or a tuple of them."""
    dtype = np.dtype(dtype)
    for one_kind in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(one_kind, str):
            if one_kind not in _kind_members:
                raise ValueError(f"Unrecognized kind={one_kind!r} expected one of {list(_kind_members)}, or a "
                                 "compatible input for numax.numpy.dtype()")
            if dtype in _kind_members[one_kind]:
                return True
        elif dtype == np.dtype(one_kind):
            return True
    return False


class ArrayNamespaceInfo:
    """What `numax.numpy.__array_namespace_info__()` returns: the standard's inspection functions.

    Devices follow jax.numpy: `None` stands for the default placement (`numax.default_device`, else the
    default backend's first device), and is what `default_device()` returns."""

    def capabilities(self):
        # No boolean indexing or data-dependent shapes under transformations; XLA allows 64 dimensions.
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        return None

    def devices(self):
        platforms = dict.fromkeys([xla.default_backend().platform, "cpu"])
        return [None] + [device for platform in platforms for device in xla.get_backend(platform).devices]

    def default_dtypes(self, *, device=None):
        # The same on every device.
        return {"real floating": dtypes.default_float_dtype(), "complex floating": dtypes.default_complex_dtype(),
                "integral": dtypes.default_int_dtype(), "indexing": dtypes.default_int_dtype()}

    def dtypes(self, *, device=None, kind=None):
        """The standard's dtypes numax supports now (64-bit ones only under x64), by name; `kind` is a kind
        name or a tuple of them (None: every dtype)."""
        kinds = ("bool", "numeric") if kind is None else kind if isinstance(kind, tuple) else (kind,)
        for one_kind in kinds:
            if one_kind not in _kind_members:
                raise KeyError(f"unknown dtype kind {one_kind!r}; expected one of {list(_kind_members)}")
        return {dtype.name: dtype for dtype in _standard_dtypes
                if dtypes.canonicalize_dtype(dtype) == dtype and any(dtype in _kind_members[k] for k in kinds)}


def __array_namespace_info__():
    return ArrayNamespaceInfo()
