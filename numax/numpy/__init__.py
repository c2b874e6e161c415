"""`numax.numpy`: numpy's API over numax arrays, with JAX's semantics (`import numax.numpy as xnp`)."""

import numpy as _np

from numax.core import dtypes as _dtypes
from numax.core.array_type import Array as ndarray  # noqa: F401
from numax.core.dtypes import (  # noqa: F401
    finfo,
    iinfo,
    issubdtype,
    promote_types,
)
from numax.core.lazy_imports import defer_imports as _defer_imports

from . import _array_methods  # noqa: F401  (installs operators on arrays and tracers)
from ._advanced import *  # noqa: F401, F403
from ._array_api import __array_api_version__, __array_namespace_info__, isdtype  # noqa: F401
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
from ._scalar_types import (  # noqa: F401
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._scalar_types import narrow_types as _narrow_types
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

bool = bool_  # the array API's name (shadows the builtin inside this module only)
# jax.numpy's aliases: numpy's C-type names for the sized types and numpy's abstract non-numeric types.
double, single, cdouble, csingle, uint = float64, float32, complex128, complex64, uint64
character, flexible, object_ = _np.character, _np.flexible, _np.object_
globals().update(_narrow_types)

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
float_, int_, complex_ = float64, int64, complex128  # jax.numpy's aliases (truncated to 32 bits without x64)
dtype = _np.dtype
# numpy's own, as jax.numpy's are: save writes an array through its __array__; numpy's warning class.
save, savez, ComplexWarning = _np.save, _np.savez, _np.exceptions.ComplexWarning
array_repr, array_str = _np.array_repr, _np.array_str
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
    x = asarray(x)
    if _dtypes.has_extended_dtype(x):  # typed PRNG keys: to their own dtype only
        from ._creation import _placed, _typed_key_array

        return _placed(_typed_key_array(x, dtype, copy), device)
    return x.astype(dtype, device=device)


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
