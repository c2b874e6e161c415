"""Contractions: dot_general (batch and contracting dimensions, preferred element type) and dot."""

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering.array import Array
from ..lowering.dispatch import eager_binary
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, tensor_type
from . import ad
from . import typing as T


class Precision:
    """`lax.Precision`: the precision_config dot_general passes to XLA (HIGHEST keeps full float32 on GPUs)."""

    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


dot_general_p = Primitive("dot_general")


_canonical_numbers = {}  # dimension numbers as given (when hashable) -> as tuples of ints


def _canonical_dimension_numbers(dimension_numbers):
    try:
        return _canonical_numbers[dimension_numbers]
    except (KeyError, TypeError):  # new, or unhashable (lists)
        pass
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    as_tuple = lambda dims: tuple(int(d) for d in dims)
    canonical = (as_tuple(lhs_contract), as_tuple(rhs_contract)), (as_tuple(lhs_batch), as_tuple(rhs_batch))
    try:
        if len(_canonical_numbers) < 4096:
            _canonical_numbers[dimension_numbers] = canonical  # equal numbers as given are equal as tuples of ints
    except TypeError:
        pass
    return canonical


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
    attributes = {"dot_dimension_numbers": numbers}
    if precision is not None:
        attributes["precision_config"] = "[" + ", ".join(f"#stablehlo<precision {p}>" for p in precision) + "]"
    builder = ctx.builder
    lhs_aval, out_aval = ctx.avals_in[0], ctx.aval_out
    if lhs_aval.dtype != out_aval.dtype and dtypes.is_inexact(out_aval.dtype) and not dtypes.is_inexact(lhs_aval.dtype):
        # XLA's GPU backend cannot multiply integers into floats: convert the operands first (as JAX does).
        lhs, rhs = (builder.op1("stablehlo.convert", [operand], tensor_type(aval.shape, out_aval.dtype))
                    for operand, aval in zip((lhs, rhs), ctx.avals_in))
    return builder.op1("stablehlo.dot_general", [lhs, rhs], aval_type(out_aval), attributes)


def canonicalize_precision(precision):
    """None, or a pair of StableHLO precision names (DEFAULT, HIGH, HIGHEST) for the two operands."""
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"precision must be None, one Precision or a pair of them, got {precision!r}")
        names = tuple(_precision_name(p) for p in precision)
        return None if names == (None, None) else tuple(n or "DEFAULT" for n in names)
    name = _precision_name(precision)
    return None if name is None else (name, name)


def _precision_name(precision):
    if precision is None:
        return None
    name = str(getattr(precision, "name", precision)).upper().split(".")[-1]
    aliases = {"FASTEST": "DEFAULT", "BFLOAT16": "DEFAULT", "TENSORFLOAT32": "HIGH", "FLOAT32": "HIGHEST"}
    name = aliases.get(name, name)
    if name not in ("DEFAULT", "HIGH", "HIGHEST"):
        raise ValueError(f"unknown precision {precision!r}: use numax.lax.Precision.DEFAULT, HIGH or HIGHEST")
    return name


dot_general_p.def_abstract_eval(_dot_general_abstract_eval)
register_lowering(dot_general_p, _lower_dot_general)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None):
    """General tensor contraction: `dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`.

    The result's dimensions are the batch dimensions, then lhs's free ones, then rhs's free ones. `out_sharding`
    (a Sharding or a PartitionSpec over the mesh in context) lays the result out, as JAX's keyword does.
    """
    if out_sharding is not None:
        from .sharding_constraint import reshard  # (the sharding machinery only when asked for)

        return reshard(dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type), out_sharding)
    if type(lhs) is Array and precision is None and preferred_element_type is None:
        result = eager_dot_general(lhs, rhs, _canonical_dimension_numbers(dimension_numbers))
        if result is not None:
            return result
    preferred = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canonical_dimension_numbers(dimension_numbers),
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred)


def eager_dot_general(lhs, rhs, dimension_numbers):
    """The fast path of an eager dot_general of two Arrays (canonical dimension numbers, default precision and
    element type): None when it does not apply (see dispatch.eager_binary)."""
    params = {"dimension_numbers": dimension_numbers, "precision": None, "preferred_element_type": None}
    return eager_binary(dot_general_p, dimension_numbers, params, lhs, rhs)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector-vector, matrix-vector or matrix-matrix product (contracting lhs's last, rhs's first dim)."""
    lhs_aval, rhs_aval = get_aval_of(lhs), get_aval_of(rhs)
    if not 1 <= lhs_aval.ndim <= 2 or not 1 <= rhs_aval.ndim <= 2:
        raise ValueError(f"dot takes arrays of rank 1 or 2, got shapes {lhs_aval.shape} and {rhs_aval.shape}")
    return dot_general(lhs, rhs, (((lhs_aval.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


# --- differentiation ---------------------------------------------------------------------------------------
def _dot_general_transpose_operand(ct, operand_aval, other, operand_dims, other_dims, operand_is_lhs, precision):
    """The cotangent of one operand of a dot_general, the other held fixed: a dot_general of the output's
    cotangent with the other operand over the other's free dimensions, transposed into the operand's order.

    `operand_dims` and `other_dims` are (contracting, batch) of the two operands; the output holds the batch
    dimensions, then lhs's free ones, then rhs's free ones."""
    from .conversions import convert_element_type
    from .shapes import transpose

    (operand_contract, operand_batch), (other_contract, other_batch) = operand_dims, other_dims
    other_aval = get_aval_of(other)
    operand_free = [d for d in range(operand_aval.ndim) if d not in operand_contract and d not in operand_batch]
    other_free = [d for d in range(other_aval.ndim) if d not in other_contract and d not in other_batch]
    batch_count = len(operand_batch)
    if operand_is_lhs:
        ct_other_free = range(batch_count + len(operand_free), batch_count + len(operand_free) + len(other_free))
    else:
        ct_other_free = range(batch_count, batch_count + len(other_free))
    ct_dtype = get_aval_of(ct).dtype
    if other_aval.dtype != ct_dtype:  # a preferred_element_type: contract in the output's type, as JAX does
        other = convert_element_type(other, ct_dtype)
    numbers = ((tuple(ct_other_free), tuple(other_free)), (tuple(range(batch_count)), tuple(other_batch)))
    product = dot_general(ct, other, numbers, precision=precision)
    # The product's dimensions: batch, the operand's free ones, then the other's contracting ones in
    # increasing order, which pair with the operand's contracting dimensions sorted by the other's.
    contract_pairs = sorted(zip(other_contract, operand_contract))
    order = list(operand_batch) + operand_free + [operand_dim for _, operand_dim in contract_pairs]
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    result = transpose(product, inverse) if inverse != tuple(range(len(order))) else product
    if get_aval_of(result).dtype != operand_aval.dtype:
        result = convert_element_type(result, operand_aval.dtype)
    return result


def _dot_general_transpose_lhs(ct, lhs_aval, rhs, dimension_numbers, precision, preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    return _dot_general_transpose_operand(ct, lhs_aval, rhs, (lhs_contract, lhs_batch), (rhs_contract, rhs_batch),
                                          True, precision)


def _dot_general_transpose_rhs(ct, lhs, rhs_aval, dimension_numbers, precision, preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    return _dot_general_transpose_operand(ct, rhs_aval, lhs, (rhs_contract, rhs_batch), (lhs_contract, lhs_batch),
                                          False, precision)


ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)


# --- batching rules -----------------------------------------------------------------------------------------------
# JAX's rule, one dot_general whatever is batched and never a broadcast: when both operands are batched, their
# batch dimensions pair up as one more dot_general batch dimension (the result's first); when one is, its batch
# dimension is one more free dimension of that operand, and the result has it among that operand's free
# dimensions.
from ..core.primitives import batching_rules  # noqa: E402


def _bump(dims, batch_dim):
    return tuple(d + (d >= batch_dim) for d in dims)


def _free_position(batch_dim, contract, batch):
    """How many free dimensions of an operand come before its free dimension `batch_dim`."""
    return sum(1 for d in range(batch_dim) if d not in contract and d not in batch)


def _dot_general_batching(values, dims, dimension_numbers, precision, preferred_element_type):
    (lhs, rhs), (lhs_dim, rhs_dim) = values, dims
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    if lhs_dim is not None:
        lhs_contract, lhs_batch = _bump(lhs_contract, lhs_dim), _bump(lhs_batch, lhs_dim)
    if rhs_dim is not None:
        rhs_contract, rhs_batch = _bump(rhs_contract, rhs_dim), _bump(rhs_batch, rhs_dim)
    if lhs_dim is not None and rhs_dim is not None:
        lhs_batch, rhs_batch = (lhs_dim,) + lhs_batch, (rhs_dim,) + rhs_batch
        out_dim = 0
    elif lhs_dim is not None:
        out_dim = len(lhs_batch) + _free_position(lhs_dim, lhs_contract, lhs_batch)
    else:
        lhs_free = get_aval_of(lhs).ndim - len(lhs_contract) - len(lhs_batch)
        out_dim = len(lhs_batch) + lhs_free + _free_position(rhs_dim, rhs_contract, rhs_batch)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)),
                             precision=precision, preferred_element_type=preferred_element_type)
    return out, out_dim


batching_rules[dot_general_p] = _dot_general_batching

polymorphic_primitives.add(dot_general_p)  # dot_general accepts dynamic types as they are
