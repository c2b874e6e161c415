"""What differentiation passes around besides arrays: symbolic zeros, undefined primals, tangent types (defined
in avals.py, as `ShapedArray.to_tangent_aval` gives them).

A `Zero` stands for a tangent or cotangent known to be zero, so that no work is done for it; an
`UndefinedPrimal` marks the linear inputs of an equation being transposed. Both carry an aval only.
"""

from . import dtypes
from .avals import ShapedArray, tangent_aval, tangent_dtype  # noqa: F401  (the tangent types, beside the avals)
from .trace import get_aval_of


def is_differentiable(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


class Zero:
    """A tangent (or cotangent) of type `aval` known to be all zeros."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def like_primal(value):
        return Zero(tangent_aval(get_aval_of(value)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear input of an equation being transposed: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(value) -> bool:
    return type(value) is UndefinedPrimal


def is_zero(value) -> bool:
    return type(value) is Zero
