"""Shape and dtype rules shared by many primitives, and the errors they raise.

Every check raises a TypeError that names the primitive and the shapes and dtypes it was given.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, canonical_shape

float_dtypes = dtypes.floats
inexact_dtypes = dtypes.floats + dtypes.complexes
integer_dtypes = dtypes.integers
numeric_dtypes = dtypes.integers + dtypes.floats + dtypes.complexes
real_numeric_dtypes = dtypes.integers + dtypes.floats
signed_numeric_dtypes = dtypes.signed_integers + dtypes.floats + dtypes.complexes
ordered_dtypes = (dtypes.bool_,) + dtypes.integers + dtypes.floats
bool_or_integer = (dtypes.bool_,) + dtypes.integers
any_dtype = dtypes.all_dtypes

_category_names = {
    float_dtypes: "floating",
    inexact_dtypes: "floating or complex",
    integer_dtypes: "integer",
    numeric_dtypes: "numeric",
    bool_or_integer: "boolean or integer",
    real_numeric_dtypes: "integer or floating",
    signed_numeric_dtypes: "signed integer, floating or complex",
    ordered_dtypes: "boolean, integer or floating",
    any_dtype: "any",
}


def describe(avals):
    return ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in avals)


def check_dtype(name, aval, allowed, position=""):
    if aval.dtype not in allowed:
        category = _category_names.get(allowed, ", ".join(d.name for d in allowed))
        where = f" (operand {position})" if position != "" else ""
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}{where}; accepted: {category} dtypes")


def check_same_dtypes(name, avals):
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        raise TypeError(f"{name} requires arguments of the same dtype, got {describe(avals)}")


def broadcast_shapes(name, avals):
    """The shape elementwise operands make: rank-0 operands go anywhere, others share a rank and may
    have size-1 dimensions that stretch (as JAX's lax allows)."""
    ranked = [a.shape for a in avals if a.shape]
    if not ranked:
        return ()
    rank = len(ranked[0])
    if any(len(shape) != rank for shape in ranked):
        raise TypeError(f"{name} requires arguments of equal rank (or rank 0), got {describe(avals)}")
    result = stretched_shape(ranked)
    if result is None:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {describe(avals)}")
    return result


def stretched_shape(shapes):
    """The shape that `shapes` of one rank broadcast to (size-1 dimensions stretch; a symbolic dimension is not
    1), or None where two sizes other than 1 meet."""
    first = shapes[0]
    if all(shape == first for shape in shapes):  # the common case, without a set per dimension
        return tuple(first)
    result = []
    for sizes in zip(*shapes):
        stretched = {d for d in sizes if d != 1}
        if len(stretched) > 1:
            return None
        result.append(stretched.pop() if stretched else 1)
    return tuple(result)


def all_weak(avals):
    return all(a.weak_type for a in avals)


def unary(name, allowed, result_dtype=None):
    """Abstract eval of an elementwise unary op; `result_dtype(dtype)` maps the output dtype.

    Weak types propagate even when the dtype changes (a weak float's is_finite is a weak bool), as in JAX."""

    def rule(x):
        check_dtype(name, x, allowed)
        dtype = x.dtype if result_dtype is None else result_dtype(x.dtype)
        return ShapedArray(x.shape, dtype, x.weak_type)

    return rule


def naryop(name, allowed, result_dtype=None):
    """Abstract eval of an elementwise op on operands of one dtype and broadcast-compatible shapes."""

    def rule(*operands):
        for i, operand in enumerate(operands):
            check_dtype(name, operand, allowed, i)
        check_same_dtypes(name, operands)
        shape = broadcast_shapes(name, operands)
        dtype = operands[0].dtype if result_dtype is None else result_dtype
        return ShapedArray(shape, dtype, all_weak(operands))

    return rule


def complex_to_real(dtype):
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dtype, dtype)


def normalize_axis(axis, ndim, name="axis"):
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise np.exceptions.AxisError(f"{name} {axis} is out of bounds for an array of rank {ndim}")  # a ValueError
    return axis % ndim if ndim else 0


def check_shape(name, shape):
    shape = canonical_shape(shape)
    if any(d < 0 for d in shape):
        raise TypeError(f"{name}: shape {shape} has negative dimensions")
    return shape


def as_dtype(dtype):
    return dtypes.canonicalize_dtype(np.dtype(dtype))
