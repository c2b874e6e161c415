"""Abstract values: `ShapedArray(shape, dtype, weak_type)`, and how to get one from a Python value.

Concrete array types (numax.Array, numpy arrays, Python scalars) say how to make their aval through
the `aval_of_type` table, so the core need not know the runtime's array class.
"""

import math

import numpy as np

from . import dtypes

# Types of symbolic dimensions (numax.export registers its DimExpr): shapes may hold them besides ints.
symbolic_dim_types = set()


class InconclusiveDimensionOperation(Exception):
    """A comparison or conversion of symbolic dimensions whose answer depends on the variables' values."""


def canonical_shape(shape) -> tuple:
    """`shape` (an iterable of dimensions) as a tuple of ints, symbolic dimensions kept as they are."""
    try:
        return tuple(int(d) for d in shape)
    except InconclusiveDimensionOperation:  # symbolic dimensions refuse int()
        return tuple(d if type(d) in symbolic_dim_types else int(d) for d in shape)


def is_static_shape(shape) -> bool:
    """Whether every dimension of `shape` is an integer (no symbolic dimension)."""
    return not symbolic_dim_types or not any(type(d) in symbolic_dim_types for d in shape)


class ShapedArray:
    """The abstract value of an array: its shape, dtype and whether its type is weak."""

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self):
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def str_short(self):
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return self._hash

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    __str__ = str_short


# type -> function(value) -> ShapedArray. The runtime registers numax.Array here.
aval_of_type = {}


def _numpy_aval(value):
    return ShapedArray(value.shape, dtypes.canonicalize_dtype(value.dtype), False)


def _scalar_aval(value):
    if type(value) not in dtypes.python_scalar_types:
        # A subclass of a Python scalar type (an IntEnum member, say) is typed as its base type.
        value = next(kind for kind in dtypes.python_scalar_types if isinstance(value, kind))(value)
    dtype = dtypes.python_scalar_dtype(value)
    if type(value) is int:
        # A Python int stands for a value of the default integer type; one too large for it is an
        # error (as in JAX), not a silent wrap-around.
        dtypes.check_int_fits(value, dtype)
    return ShapedArray((), dtype, dtypes.is_weak_scalar(value))


for _scalar_type in dtypes.python_scalar_types:
    aval_of_type[_scalar_type] = _scalar_aval
aval_of_type[np.ndarray] = _numpy_aval
for _numpy_scalar in set(np.sctypeDict.values()):
    aval_of_type.setdefault(_numpy_scalar, _numpy_aval)
aval_of_type[type(np.dtype(dtypes.bfloat16).type(0))] = _numpy_aval


def get_aval(value):
    """The ShapedArray of any value numax accepts as an array (tracers answer with their own)."""
    handler = aval_of_type.get(type(value))
    if handler is not None:
        return handler(value)
    aval = getattr(value, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    for kind in type(value).__mro__[1:]:
        handler = aval_of_type.get(kind)
        if handler is not None:
            return handler(value)
    raise TypeError(
        f"{type(value).__name__} is not a valid numax type: expected an array, a numpy array or a Python scalar"
    )


def is_array_like(value) -> bool:
    try:
        get_aval(value)
    except TypeError:
        return False
    return True
