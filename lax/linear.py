"""Contractions: dot_general (batch and contracting dimensions, preferred element type) and dot."""

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from . import typing as T


class Precision:
    """`lax.Precision`: accepted for compatibility; XLA picks its default algorithms."""

    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


dot_general_p = Primitive("dot_general")


def _canonical_dimension_numbers(dimension_numbers):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    as_tuple = lambda dims: tuple(int(d) for d in dims)
    return (as_tuple(lhs_contract), as_tuple(rhs_contract)), (as_tuple(lhs_batch), as_tuple(rhs_batch))


def _dot_general_abstract_eval(lhs, rhs, dimension_numbers, precision, preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    T.check_dtype("dot_general", lhs, T.any_dtype)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires operands of the same dtype, got {T.describe((lhs, rhs))}")
    for dims, aval, what in ((lhs_contract, lhs, "lhs contracting"), (rhs_contract, rhs, "rhs contracting"),
                             (lhs_batch, lhs, "lhs batch"), (rhs_batch, rhs, "rhs batch")):
        if any(not 0 <= d < aval.ndim for d in dims) or len(set(dims)) != len(dims):
            raise TypeError(f"dot_general {what} dimensions {dims} are invalid for shape {aval.shape}")
    if len(lhs_contract) != len(rhs_contract) or len(lhs_batch) != len(rhs_batch):
        raise TypeError(f"dot_general dimension_numbers {dimension_numbers} pair up different numbers of dimensions")
    if set(lhs_contract) & set(lhs_batch) or set(rhs_contract) & set(rhs_batch):
        raise TypeError(f"dot_general dimension_numbers {dimension_numbers} use a dimension twice")
    for a, b in zip(lhs_contract, rhs_contract):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general contracting dimensions must have equal sizes, got lhs shape {lhs.shape} "
                            f"dim {a} and rhs shape {rhs.shape} dim {b}")
    for a, b in zip(lhs_batch, rhs_batch):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general batch dimensions must have equal sizes, got lhs shape {lhs.shape} "
                            f"dim {a} and rhs shape {rhs.shape} dim {b}")
    batch = tuple(lhs.shape[d] for d in lhs_batch)
    lhs_free = tuple(s for i, s in enumerate(lhs.shape) if i not in lhs_contract and i not in lhs_batch)
    rhs_free = tuple(s for i, s in enumerate(rhs.shape) if i not in rhs_contract and i not in rhs_batch)
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(batch + lhs_free + rhs_free, dtype, lhs.weak_type and rhs.weak_type)


def _dims(values):
    return "[" + ", ".join(str(v) for v in values) + "]"


def _lower_dot_general(ctx, lhs, rhs, dimension_numbers, precision, preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    numbers = (f"#stablehlo.dot<lhs_batching_dimensions = {_dims(lhs_batch)}, "
               f"rhs_batching_dimensions = {_dims(rhs_batch)}, "
               f"lhs_contracting_dimensions = {_dims(lhs_contract)}, "
               f"rhs_contracting_dimensions = {_dims(rhs_contract)}>")
    return ctx.builder.op1("stablehlo.dot_general", [lhs, rhs], aval_type(ctx.aval_out),
                           {"dot_dimension_numbers": numbers})


dot_general_p.def_abstract_eval(_dot_general_abstract_eval)
register_lowering(dot_general_p, _lower_dot_general)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """General tensor contraction: `dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`.

    The result's dimensions are the batch dimensions, then lhs's free ones, then rhs's free ones.
    """
    preferred = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canonical_dimension_numbers(dimension_numbers),
                              precision=None if precision is None else str(precision),
                              preferred_element_type=preferred)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector-vector, matrix-vector or matrix-matrix product (contracting lhs's last, rhs's first dim)."""
    lhs_aval, rhs_aval = get_aval_of(lhs), get_aval_of(rhs)
    if not 1 <= lhs_aval.ndim <= 2 or not 1 <= rhs_aval.ndim <= 2:
        raise TypeError(f"dot takes arrays of rank 1 or 2, got shapes {lhs_aval.shape} and {rhs_aval.shape}")
    return dot_general(lhs, rhs, (((lhs_aval.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)
