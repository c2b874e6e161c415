"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, concatenate,
pad and iota."""

import math

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, canonical_shape
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.array import put
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array
from . import typing as T


def as_array(operand):
    """`operand` when it is an array or a tracer, else copied to the device: a wrapper that has nothing
    to do still returns an array, as JAX's do."""
    if isinstance(getattr(operand, "aval", None), ShapedArray):
        return operand
    return put(np.asarray(operand), weak_type=dtypes.is_weak_scalar(operand))


def _shape_tuple(shape):
    try:
        return canonical_shape(shape)
    except TypeError:
        return canonical_shape((shape,))


# --- broadcast_in_dim --------------------------------------------------------------------------------
broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _broadcast_in_dim_abstract_eval(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} ({x.str_short()}) needs {x.ndim} "
                        f"broadcast_dimensions, got {broadcast_dimensions}")
    if any(b <= a for a, b in zip(broadcast_dimensions, broadcast_dimensions[1:])):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must be strictly increasing, "
                        f"got {broadcast_dimensions}")
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        if not 0 <= out_dim < len(shape):
            raise TypeError(f"broadcast_in_dim: dimension {out_dim} is out of range for shape {shape}")
        if x.shape[operand_dim] not in (1, shape[out_dim]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot broadcast to {shape} along "
                            f"broadcast_dimensions {broadcast_dimensions}")
    return ShapedArray(T.check_shape("broadcast_in_dim", shape), x.dtype, x.weak_type)


broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract_eval)
register_lowering(broadcast_in_dim_p, lambda ctx, x, shape, broadcast_dimensions: ctx.builder.broadcast_in_dim(
    x, shape, ctx.aval_out.dtype, broadcast_dimensions))


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """`operand` placed in an array of `shape`, its dimension i at `broadcast_dimensions[i]`."""
    shape, dims = _shape_tuple(shape), tuple(int(d) for d in broadcast_dimensions)
    aval = get_aval_of(operand)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        return as_array(operand)
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims)


def broadcast(operand, sizes):
    """Adds leading dimensions of `sizes`."""
    sizes = _shape_tuple(sizes)
    aval = get_aval_of(operand)
    return broadcast_in_dim(operand, sizes + aval.shape, range(len(sizes), len(sizes) + aval.ndim))


def broadcast_to_rank(operand, rank):
    aval = get_aval_of(operand)
    return operand if aval.ndim >= rank else broadcast(operand, (1,) * (rank - aval.ndim))


# --- reshape -----------------------------------------------------------------------------------------
reshape_p = Primitive("reshape")


def _reshape_abstract_eval(x, new_sizes, dimensions):
    new_sizes = T.check_shape("reshape", new_sizes)
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(f"reshape dimensions {dimensions} are not a permutation of the operand's {x.ndim} dimensions "
                        f"({x.str_short()})")
    if math.prod(new_sizes) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for shape {x.shape}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _lower_reshape(ctx, x, new_sizes, dimensions):
    if dimensions is not None:
        source = ctx.avals_in[0]
        x = ctx.builder.op1("stablehlo.transpose", [x], aval_type(source.update(
            shape=tuple(source.shape[d] for d in dimensions))), {"permutation": i64_array(dimensions)})
    return dynamic_shapes.reshape(ctx.builder, x, new_sizes, ctx.aval_out.dtype)


reshape_p.def_abstract_eval(_reshape_abstract_eval)
register_lowering(reshape_p, _lower_reshape)


def reshape(operand, new_sizes, dimensions=None):
    """`operand` with shape `new_sizes` (after transposing by `dimensions`, if given)."""
    new_sizes = _shape_tuple(new_sizes)
    aval = get_aval_of(operand)
    dims = None if dimensions is None or tuple(dimensions) == tuple(range(aval.ndim)) else tuple(dimensions)
    if aval.shape == new_sizes and dims is None:
        return as_array(operand)
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


# --- transpose -----------------------------------------------------------------------------------------
transpose_p = Primitive("transpose")


def _transpose_abstract_eval(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the operand's "
                        f"{x.ndim} dimensions ({x.str_short()})")
    return ShapedArray(tuple(x.shape[d] for d in permutation), x.dtype, x.weak_type)


transpose_p.def_abstract_eval(_transpose_abstract_eval)
register_lowering(transpose_p, lambda ctx, x, permutation: ctx.builder.op1(
    "stablehlo.transpose", [x], aval_type(ctx.aval_out), {"permutation": i64_array(permutation)}))


def transpose(operand, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == get_aval_of(operand).ndim:
        return as_array(operand)
    return transpose_p.bind(operand, permutation=permutation)


# --- squeeze / expand_dims -------------------------------------------------------------------------------
squeeze_p = Primitive("squeeze")


def _squeeze_abstract_eval(x, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot remove dimension {d} of shape {x.shape} (it must have size 1)")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype, x.weak_type)


squeeze_p.def_abstract_eval(_squeeze_abstract_eval)
register_lowering(squeeze_p, lambda ctx, x, dimensions: dynamic_shapes.reshape(
    ctx.builder, x, ctx.aval_out.shape, ctx.aval_out.dtype))


def squeeze(array, dimensions):
    aval = get_aval_of(array)
    dimensions = tuple(sorted({T.normalize_axis(d, aval.ndim, "squeeze dimension") for d in dimensions}))
    if not dimensions:
        return as_array(array)
    return squeeze_p.bind(array, dimensions=dimensions)


def expand_dims(array, dimensions):
    """Inserts size-1 dimensions at `dimensions` (positions in the result)."""
    aval = get_aval_of(array)
    rank = aval.ndim + len(dimensions)
    dimensions = sorted({T.normalize_axis(d, rank, "expand_dims dimension") for d in dimensions})
    shape = list(aval.shape)
    for d in dimensions:
        shape.insert(d, 1)
    kept = [i for i in range(rank) if i not in dimensions]
    return broadcast_in_dim(array, shape, kept)


# --- rev ---------------------------------------------------------------------------------------------------
rev_p = Primitive("rev")


def _rev_abstract_eval(x, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions {dimensions} are invalid for an array of rank {x.ndim}")
    return x


rev_p.def_abstract_eval(_rev_abstract_eval)
register_lowering(rev_p, lambda ctx, x, dimensions: ctx.builder.op1(
    "stablehlo.reverse", [x], aval_type(ctx.aval_out), {"dimensions": i64_array(dimensions)}))


def rev(operand, dimensions):
    dimensions = tuple(int(d) for d in dimensions)
    return rev_p.bind(operand, dimensions=dimensions) if dimensions else as_array(operand)


# --- concatenate -----------------------------------------------------------------------------------------
concatenate_p = Primitive("concatenate")


def _concatenate_abstract_eval(*operands, dimension):
    if not operands:
        raise ValueError("concatenate needs at least one operand")
    T.check_same_dtypes("concatenate", operands)
    first = operands[0]
    if not 0 <= dimension < first.ndim:
        raise TypeError(f"concatenate dimension {dimension} is out of range for rank {first.ndim}")
    for op in operands[1:]:
        if op.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(op.shape, first.shape))
                                        if i != dimension):
            raise TypeError(f"concatenate operands must match except in dimension {dimension}, got "
                            f"{T.describe(operands)}")
    shape = list(first.shape)
    shape[dimension] = sum(op.shape[dimension] for op in operands)
    return ShapedArray(shape, first.dtype, T.all_weak(operands))


concatenate_p.def_abstract_eval(_concatenate_abstract_eval)
register_lowering(concatenate_p, lambda ctx, *xs, dimension: ctx.builder.op1(
    "stablehlo.concatenate", list(xs), aval_type(ctx.aval_out), {"dimension": f"{dimension} : i64"}))


def concatenate(operands, dimension):
    operands = list(operands)
    if len(operands) == 1:
        _concatenate_abstract_eval(get_aval_of(operands[0]), dimension=int(dimension))
        return as_array(operands[0])
    return concatenate_p.bind(*operands, dimension=int(dimension))


# --- pad -----------------------------------------------------------------------------------------------------
pad_p = Primitive("pad")


def _pad_abstract_eval(x, padding_value, padding_config):
    T.check_same_dtypes("pad", (x, padding_value))
    if padding_value.ndim != 0:
        raise ValueError(f"pad: padding_value must be a scalar, got {padding_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: padding_config has {len(padding_config)} entries for an array of rank {x.ndim}")
    shape = []
    for size, (low, high, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be non-negative, got {padding_config}")
        out = low + high + size + (max(size - 1, 0) * interior if interior else 0)  # no max of a symbolic size
        if out < 0:
            raise TypeError(f"pad: padding {padding_config} makes a negative dimension for shape {x.shape}")
        shape.append(out)
    return ShapedArray(shape, x.dtype, x.weak_type)


pad_p.def_abstract_eval(_pad_abstract_eval)
register_lowering(pad_p, lambda ctx, x, value, padding_config: dynamic_shapes.pad(
    ctx.builder, x, value, padding_config, aval_type(ctx.aval_out)))


def pad(operand, padding_value, padding_config):
    """Pads with (low, high, interior) per dimension; negative low/high crop."""
    config = tuple((*canonical_shape((lo, hi)), int(mid)) for lo, hi, mid in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# --- iota ----------------------------------------------------------------------------------------------------
iota_p = Primitive("iota")


def _iota_abstract_eval(dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise TypeError(f"iota dimension {dimension} is out of range for shape {shape}")
    return ShapedArray(shape, dtype)


iota_p.def_abstract_eval(_iota_abstract_eval)
register_lowering(iota_p, lambda ctx, dtype, shape, dimension: dynamic_shapes.iota(ctx.builder, shape, dtype,
                                                                                   dimension))


def iota(dtype, size):
    """[0, 1, ..., size-1] of `dtype`."""
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=T.check_shape("iota", (size,)), dimension=0)


def broadcasted_iota(dtype, shape, dimension):
    shape = _shape_tuple(shape)
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=shape, dimension=int(dimension))


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (of `dtype`, or the value's own dtype)."""
    from .conversions import convert_element_type

    shape = _shape_tuple(shape)
    aval = get_aval_of(fill_value)
    if aval.ndim:
        raise TypeError(f"full: fill_value must be a scalar, got shape {aval.shape}")
    weak = dtype is None and aval.weak_type
    value = convert_element_type(fill_value, dtype if dtype is not None else aval.dtype, weak)
    # Always a primitive, so that the result is an array even for shape () and a host scalar.
    return broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like `x` (its shape and dtype unless given) filled with `fill_value`."""
    from .conversions import convert_element_type

    aval = get_aval_of(x)
    target_dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    # With no dtype given the result keeps x's weak type (as in JAX).
    value = convert_element_type(fill_value, target_dtype, dtype is None and aval.weak_type)
    return broadcast_in_dim_p.bind(value, shape=aval.shape if shape is None else _shape_tuple(shape),
                                   broadcast_dimensions=())



# --- differentiation rules -------------------------------------------------------------------------------------
# Every primitive here is linear: its JVP applies it to the tangents, and its transpose moves the
# cotangent back to the operand's layout. `iota` has no inputs and needs no rule.
from ..core.ad_util import is_undefined  # noqa: E402
from . import ad  # noqa: E402


def _broadcast_in_dim_transpose(ct, operand, shape, broadcast_dimensions):
    from .reductions import reduce_sum

    operand_shape = operand.aval.shape
    # Kept: the output dimensions that carry an operand dimension unstretched; new and stretched ones are summed.
    kept = {d for d, size in zip(broadcast_dimensions, operand_shape) if size == shape[d]}
    summed = tuple(d for d in range(len(shape)) if d not in kept)
    return [reshape(reduce_sum(ct, summed), operand_shape)]


def _reshape_transpose(ct, operand, new_sizes, dimensions):
    if dimensions is None:
        return [reshape(ct, operand.aval.shape)]
    permuted = tuple(operand.aval.shape[d] for d in dimensions)
    return [transpose(reshape(ct, permuted), np.argsort(dimensions))]


def _concatenate_transpose(ct, *operands, dimension):
    from .slicing import slice_in_dim

    cts, start = [], 0
    for operand in operands:
        size = (operand.aval if is_undefined(operand) else get_aval_of(operand)).shape[dimension]
        cts.append(slice_in_dim(ct, start, start + size, 1, dimension) if is_undefined(operand) else None)
        start += size
    return cts


def _pad_transpose(ct, operand, padding_value, padding_config):
    from .elementwise import sub
    from .reductions import reduce_sum
    from .slicing import slice

    # The operand's part: the padding undone (negative padding crops, so undoing it restores zeros),
    # then every (interior + 1)-th element.
    zero = np.zeros((), get_aval_of(ct).dtype)
    uncropped = pad_p.bind(ct, zero, padding_config=tuple((-low, -high, 0) for low, high, _ in padding_config))
    shape = get_aval_of(uncropped).shape
    operand_ct = slice(uncropped, (0,) * len(shape), shape, tuple(interior + 1 for _, _, interior in padding_config))
    value_ct = None
    if is_undefined(padding_value):
        # Everything that is not the operand's came from the padding value (JAX's formula).
        everything = tuple(range(len(shape)))
        value_ct = sub(reduce_sum(ct, everything), reduce_sum(operand_ct, everything))
    return [operand_ct if is_undefined(operand) else None, value_ct]


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
ad.deflinear(reshape_p, _reshape_transpose)
ad.deflinear(transpose_p, lambda ct, operand, permutation: [transpose(ct, np.argsort(permutation))])
ad.deflinear(squeeze_p, lambda ct, operand, dimensions: [reshape(ct, operand.aval.shape)])
ad.deflinear(rev_p, lambda ct, operand, dimensions: [rev(ct, dimensions)])
ad.deflinear(concatenate_p, _concatenate_transpose)
ad.deflinear(pad_p, _pad_transpose)


# --- batching rules ------------------------------------------------------------------------------------------
# Every rule here keeps the batch dimension where it is when the op can carry it there (broadcast_in_dim,
# transpose, squeeze, rev, pad); reshape moves it to the front, where merging dimensions cannot disturb it.
from ..core.primitives import batching_rules  # noqa: E402
from .batching import axis_size_of, batch_at, batch_at_front  # noqa: E402


def _shift_dims(dims, batch_dim):
    """Operand dimensions `dims` renumbered for an operand with a batch dimension at `batch_dim`."""
    return tuple(d + (d >= batch_dim) for d in dims)


def _broadcast_in_dim_batch(values, dims, shape, broadcast_dimensions):
    (x,), (dim,) = values, dims
    # The batch dimension lands right after the output dimension of the operand dimension before it.
    out_dim = broadcast_dimensions[dim - 1] + 1 if dim else 0
    new_dims = tuple(d + (d >= out_dim) for d in broadcast_dimensions)
    new_dims = new_dims[:dim] + (out_dim,) + new_dims[dim:]
    new_shape = shape[:out_dim] + (get_aval_of(x).shape[dim],) + shape[out_dim:]
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims), out_dim


def _reshape_batch(values, dims, new_sizes, dimensions):
    (x,), (dim,) = values, dims
    x = batch_at_front(x, dim, None)
    new_dims = None if dimensions is None else (0,) + tuple(d + 1 for d in dimensions)
    return reshape_p.bind(x, new_sizes=(get_aval_of(x).shape[0],) + new_sizes, dimensions=new_dims), 0


def _transpose_batch(values, dims, permutation):
    (x,), (dim,) = values, dims
    # The batch dimension stays at its position; the other dimensions are permuted around it.
    shifted = list(_shift_dims(permutation, dim))
    shifted.insert(dim, dim)
    return transpose_p.bind(x, permutation=tuple(shifted)), dim


def _squeeze_batch(values, dims, dimensions):
    (x,), (dim,) = values, dims
    out_dim = dim - sum(d < dim for d in dimensions)
    return squeeze_p.bind(x, dimensions=_shift_dims(dimensions, dim)), out_dim


def _concatenate_batch(values, dims, dimension):
    size = axis_size_of(values, dims)
    # Batched operands agree on the first batched operand's position; unbatched ones are broadcast there.
    out_dim = next(d for d in dims if d is not None)
    operands = [batch_at(v, d, size, out_dim) for v, d in zip(values, dims)]
    return concatenate_p.bind(*operands, dimension=dimension + (dimension >= out_dim)), out_dim


def _pad_batch(values, dims, padding_config):
    from .elementwise import select

    (x, value), (dim, value_dim) = values, dims
    if value_dim is None:
        config = padding_config[:dim] + ((0, 0, 0),) + padding_config[dim:]
        return pad_p.bind(x, value, padding_config=config), dim
    # A padding value per example (as in JAX): pad with any value, then select the padded positions, which a
    # padded mask of the same layout marks.
    size = axis_size_of(values, dims)
    x = batch_at_front(x, dim, size)
    aval = get_aval_of(x)
    config = ((0, 0, 0),) + padding_config
    padded = pad_p.bind(x, np.zeros((), aval.dtype), padding_config=config)
    mask = pad_p.bind(full(aval.shape, np.True_), np.False_, padding_config=config)
    out_shape = get_aval_of(padded).shape
    fill = broadcast_in_dim_p.bind(value, shape=out_shape, broadcast_dimensions=(0,))
    return select(mask, padded, fill), 0


batching_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch
batching_rules[reshape_p] = _reshape_batch
batching_rules[transpose_p] = _transpose_batch
batching_rules[squeeze_p] = _squeeze_batch
batching_rules[rev_p] = lambda values, dims, dimensions: (
    rev_p.bind(values[0], dimensions=_shift_dims(dimensions, dims[0])), dims[0])
batching_rules[concatenate_p] = _concatenate_batch
batching_rules[pad_p] = _pad_batch

# Their rules take the dynamic forms for symbolic shapes (or their ops accept dynamic types as they are: pad's
# widths are static, so stablehlo.pad needs no dynamic_pad).
dynamic_shapes.polymorphic_primitives.update(
    (broadcast_in_dim_p, reshape_p, transpose_p, squeeze_p, rev_p, concatenate_p, pad_p, iota_p))
