"""`numax.numpy`: numpy's API over numax arrays, with JAX's semantics (`import numax.numpy as xnp`)."""

import ml_dtypes as _ml_dtypes
import numpy as _np

from numax.core import dtypes as _dtypes
from numax.core.dtypes import (  # noqa: F401
    finfo,
    iinfo,
    issubdtype,
    promote_types,
)
from numax.core.lazy_imports import defer_imports as _defer_imports
from numax.lowering.array import Array as ndarray  # noqa: F401

from . import _array_methods  # noqa: F401  (installs operators on arrays and tracers)
from ._advanced import *  # noqa: F401, F403
from ._creation import (  # noqa: F401
    arange,
    array,
    asarray,
    diag_indices,
    diag_indices_from,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    geomspace,
    identity,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    tri,
    tril,
    triu,
    vander,
    zeros,
    zeros_like,
)
from ._cumulative import *  # noqa: F401, F403
from ._indexing import nonzero, take  # noqa: F401
from ._linalg_ops import (  # noqa: F401
    cross,
    diag,
    diagonal,
    dot,
    inner,
    kron,
    matmul,
    outer,
    polyval,
    tensordot,
    trace,
    vdot,
    vecdot,
)
from ._logic import allclose, array_equal, array_equiv, clip, nan_to_num, select, where  # noqa: F401
from ._reductions import (  # noqa: F401
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    average,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    ptp,
    std,
    sum,
    var,
)
from ._shape import (  # noqa: F401
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_to,
    column_stack,
    concat,
    concatenate,
    delete,
    dsplit,
    dstack,
    expand_dims,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    insert,
    matrix_transpose,
    moveaxis,
    permute_dims,
    ravel,
    repeat,
    reshape,
    resize,
    roll,
    rollaxis,
    rot90,
    row_stack,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
    trim_zeros,
    unstack,
    vsplit,
    vstack,
)
from ._shape import ndim_of as ndim  # noqa: F401
from ._shape import shape_of as shape  # noqa: F401
from ._shape import size_of as size  # noqa: F401
from ._sorting import *  # noqa: F401, F403
from ._take import *  # noqa: F401, F403
from ._ufuncs import (  # noqa: F401
    abs,
    absolute,
    acos,
    acosh,
    add,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    around,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    cbrt,
    ceil,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    deg2rad,
    degrees,
    divide,
    divmod,
    equal,
    exp,
    exp2,
    expm1,
    fix,
    float_power,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    frexp,
    gcd,
    greater,
    greater_equal,
    heaviside,
    hypot,
    imag,
    invert,
    isclose,
    iscomplex,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    isreal,
    lcm,
    ldexp,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    modf,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,
    power,
    rad2deg,
    radians,
    real,
    reciprocal,
    remainder,
    right_shift,
    rint,
    round,
    sign,
    signbit,
    sin,
    sinc,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
)


class _ScalarType:
    """`numax.numpy.float32` and friends: usable wherever a dtype is (`np.dtype(xnp.float32)`), and callable
    like jax.numpy's scalar types: `xnp.float32(3)` is a 0-d float32 array."""

    def __init__(self, dtype):
        self.dtype = _np.dtype(dtype)
        self.__name__ = self.dtype.name if self.dtype != _np.bool_ else "bool_"

    def __call__(self, value=0):
        return asarray(value, dtype=self.dtype)

    def __repr__(self):
        return f"numax.numpy.{self.__name__}"

    def __eq__(self, other):
        try:
            return self.dtype == _np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)


bool_ = _ScalarType(_dtypes.bool_)
int8, int16, int32, int64 = (_ScalarType(d) for d in (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64))
uint8, uint16, uint32, uint64 = (_ScalarType(d) for d in (_dtypes.uint8, _dtypes.uint16, _dtypes.uint32,
                                                          _dtypes.uint64))
bfloat16, float16, float32, float64 = (_ScalarType(d) for d in (_dtypes.bfloat16, _dtypes.float16, _dtypes.float32,
                                                                _dtypes.float64))
complex64, complex128 = _ScalarType(_dtypes.complex64), _ScalarType(_dtypes.complex128)
bool = bool_  # the array API's name (shadows the builtin inside this module only)
# jax.numpy's aliases: numpy's C-type names for the sized types, numpy's abstract non-numeric types, and the
# narrow ml_dtypes types (names usable as dtypes; numax may not compute in them).
double, single, cdouble, csingle, uint = float64, float32, complex128, complex64, uint64
character, flexible, object_ = _np.character, _np.flexible, _np.object_
for _name in ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
              "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2",
              "int4", "uint1", "uint2", "uint4"):
    if hasattr(_ml_dtypes, _name):
        globals()[_name] = _ScalarType(getattr(_ml_dtypes, _name))
del _name

_isdtype_kinds = {
    "bool": lambda d: d == _dtypes.bool_,
    "signed integer": lambda d: d in _dtypes.signed_integers,
    "unsigned integer": lambda d: d in _dtypes.unsigned_integers,
    "integral": lambda d: d in _dtypes.integers,
    "real floating": lambda d: d in _dtypes.floats,
    "complex floating": lambda d: d in _dtypes.complexes,
    "numeric": lambda d: d in _dtypes.integers + _dtypes.floats + _dtypes.complexes,
}


def isdtype(dtype, kind):
    """The array API's `isdtype`: whether `dtype` is of `kind` (a dtype, a kind name, or a tuple of them)."""
    dtype = _np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _isdtype_kinds:
                raise ValueError(f"unknown dtype kind {k!r}; expected one of {sorted(_isdtype_kinds)}")
            if _isdtype_kinds[k](dtype):
                return True
        elif dtype == _np.dtype(k):
            return True
    return False


pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
float_ = _dtypes.default_float_dtype()
int_ = _dtypes.default_int_dtype()
complex_ = _dtypes.default_complex_dtype()
dtype = _np.dtype
integer, floating, complexfloating, inexact, number, signedinteger, unsignedinteger, generic = (
    _np.integer, _np.floating, _np.complexfloating, _np.inexact, _np.number, _np.signedinteger,
    _np.unsignedinteger, _np.generic)
result_type = _dtypes.result_type


def can_cast(from_, to, casting="safe"):
    return _np.can_cast(_dtypes.dtype(from_), _np.dtype(to), casting)


def isscalar(element):
    return _np.isscalar(element) or (hasattr(element, "shape") and element.shape == ())


def iscomplexobj(x):
    return _dtypes.is_complex(_dtypes.dtype(x))


def isrealobj(x):
    return not iscomplexobj(x)


def astype(x, dtype, /, *, copy=False, device=None):
    return asarray(x).astype(dtype)


# Loaded on first use: each module maps to the names it provides here (its `__all__`; tests/test_import.py
# keeps the two equal). Modules that add array methods (`.at`, `.sort`, `.cumsum`) load with the package.
_defer_imports(globals(), {
    "_einsum": ("einsum", "einsum_path"),
    "_functional": ("vectorize", "apply_along_axis", "apply_over_axes", "piecewise", "fromfunction", "choose",
        "block"),
    "_index_tricks": ("c_", "index_exp", "mgrid", "ogrid", "r_", "s_"),
    "_misc": ("bitwise_count", "broadcast_shapes", "copy", "diagflat", "fabs", "fill_diagonal", "frombuffer",
        "fromfile", "fromiter", "fromstring", "get_printoptions", "i0", "iterable", "load", "matvec", "packbits",
        "place", "printoptions", "put", "set_printoptions", "spacing", "unpackbits", "vecmat"),
    "_pad": ("pad",),
    "_polynomial": ("poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit", "roots"),
    "_setops": ("isin", "intersect1d", "union1d", "setdiff1d", "setxor1d"),
    "_signal": ("convolve", "correlate", "interp", "digitize", "bincount", "histogram", "histogram_bin_edges"),
    "_statistics": ("cov", "corrcoef", "gradient", "trapezoid", "unwrap", "histogram2d", "histogramdd",
        "mask_indices"),
    "_windows": ("bartlett", "blackman", "hamming", "hanning", "kaiser"),
    "fft": (),
    "linalg": (),
})
