"""Slicing primitives: static slice (gather, scatter, dynamic slices are added beside it)."""

from ..core.avals import ShapedArray
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array

slice_p = Primitive("slice")


def _slice_abstract_eval(x, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: start_indices {start_indices}, limit_indices {limit_indices} and strides "
                        f"{strides} must each have one entry per dimension of shape {x.shape}")
    shape = []
    for size, start, limit, stride in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= start <= limit <= size or stride < 1:
            raise TypeError(f"slice: invalid start {start_indices}, limit {limit_indices}, strides {strides} "
                            f"for shape {x.shape}")
        shape.append((limit - start + stride - 1) // stride)
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p.def_abstract_eval(_slice_abstract_eval)
register_lowering(slice_p, lambda ctx, x, start_indices, limit_indices, strides: ctx.builder.op1(
    "stablehlo.slice", [x], aval_type(ctx.aval_out), {
        "start_indices": i64_array(start_indices), "limit_indices": i64_array(limit_indices),
        "strides": i64_array(strides)}))


def slice(operand, start_indices, limit_indices, strides=None):
    """The static slice [start, limit) with `strides` along every dimension."""
    aval = get_aval_of(operand)
    start_indices = tuple(int(i) for i in start_indices)
    limit_indices = tuple(int(i) for i in limit_indices)
    strides = (1,) * aval.ndim if strides is None else tuple(int(s) for s in strides)
    if start_indices == (0,) * aval.ndim and limit_indices == aval.shape and strides == (1,) * aval.ndim:
        return operand
    return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    aval = get_aval_of(operand)
    start = [0] * aval.ndim
    limit = list(aval.shape)
    strides = [1] * aval.ndim
    size = aval.shape[axis]
    start_index = 0 if start_index is None else start_index
    limit_index = size if limit_index is None else limit_index
    start[axis] = start_index + size if start_index < 0 else start_index
    limit[axis] = limit_index + size if limit_index < 0 else limit_index
    strides[axis] = stride
    return slice(operand, start, limit, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    from .shapes import squeeze

    aval = get_aval_of(operand)
    index = index + aval.shape[axis] if index < 0 else index
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))
