"""Abstract values: `ShapedArray(shape, dtype, weak_type)`, the type of its tangents, and how to get one from a
Python value.

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


class ManualAxisType:
    """How a value inside a shard_map relates to the mesh axes it is manual over (JAX's `ManualAxisType`):
    `varying` names the axes along which its blocks may differ from device to device (JAX's "vma"); numax
    has no unreduced / reduced values, so those are always empty."""

    __slots__ = ("varying",)
    unreduced = frozenset()
    reduced = frozenset()

    def __init__(self, varying=frozenset()):
        self.varying = frozenset(varying)

    def __eq__(self, other):
        return type(other) is ManualAxisType and self.varying == other.varying

    def __hash__(self):
        return hash(self.varying)

    def __repr__(self):
        return f"ManualAxisType(varying={self.varying}, unreduced=frozenset(), reduced=frozenset())"


_INVARIANT = frozenset()


def _vma_text(vma):
    names = sorted(vma, key=str)
    return "{V:" + (str(names[0]) if len(names) == 1 else "(" + ",".join(map(str, names)) + ")") + "}"


class ShapedArray:
    """The abstract value of an array: its shape, dtype, whether its type is weak, and (inside a shard_map with
    check_vma=True) `vma`, the manual mesh axes along which it may vary (empty everywhere else)."""

    __slots__ = ("shape", "dtype", "weak_type", "vma", "_hash")

    def __init__(self, shape, dtype, weak_type=False, vma=_INVARIANT, *, sharding=None):
        # `sharding` (jax's keyword) is accepted and not kept: numax's types carry no splits (see `.sharding`).
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.vma = vma
        # Two avals that differ only in vma are different types (JAX's are interned, vma included).
        self._hash = hash((self.shape, self.dtype, self.weak_type, vma) if vma else
                          (self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def manual_axis_type(self):
        return ManualAxisType(self.vma)

    mat = manual_axis_type

    @property
    def sharding(self):
        """How the type splits the array over the mesh in context (JAX's `aval.sharding`). numax's types carry
        no splits (XLA's partitioner places values inside traced code), so this splits nothing; `typeof` of a
        concrete array split over Explicit mesh axes shows its split."""
        from .sharding import unsplit_type_sharding  # (read when asked for: the layout machinery is not a type's)

        return unsplit_type_sharding(self.ndim)

    def update(self, shape=None, dtype=None, weak_type=None, vma=None):
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            self.vma if vma is None else frozenset(vma),
        )

    def strip_weak_type(self):
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False, self.vma)

    def to_tangent_aval(self):
        """The type of this type's tangents (float0 for integers and bools), as differentiation makes them."""
        return tangent_aval(self)

    def str_short(self):
        text = f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"
        return text + _vma_text(self.vma) if self.vma else text

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
            and self.vma == other.vma
        )

    def __hash__(self):
        return self._hash

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    __str__ = str_short


# type -> function(value) -> ShapedArray. The runtime registers numax.Array here.
aval_of_type = {}


def tangent_dtype(dtype):
    """The dtype of tangents of values of `dtype`: itself when inexact, float0 for integers and bools."""
    return dtype if dtypes.is_inexact(dtype) else dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    dtype = tangent_dtype(aval.dtype)
    if dtype == aval.dtype:
        return aval
    return ShapedArray(aval.shape, dtype, False)


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
