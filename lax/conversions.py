"""Dtype conversions: `convert_element_type` (as XLA converts: C-style, saturating floats to integers, complex to
real keeping the real part), `bitcast_convert_type` (the same bits as another dtype, the last axis growing or
shrinking with the width) and `reduce_precision`, with their rules."""

import numpy as np

from ..core import dtypes
from ..core.ad_util import Zero, tangent_aval
from ..core.avals import ShapedArray, symbolic_dim_types
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import Tracer, get_aval_of
from ..lowering.array import Array
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, comparison_type, tensor_type
from . import ad, batching
from . import typing as T

convert_element_type_p = Primitive("convert_element_type")


def _convert_abstract_eval(x, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _lower_convert(ctx, x, new_dtype, weak_type):
    builder = ctx.builder
    source = ctx.avals_in[0]
    out_type = aval_type(ctx.aval_out)
    if source.dtype == new_dtype:
        return x
    if dtypes.is_complex(source.dtype) and not dtypes.is_complex(new_dtype):
        # Complex to real keeps the real part (with numpy's warning dropped, as JAX does).
        x = builder.op1("stablehlo.real", [x], tensor_type(source.shape, T.complex_to_real(source.dtype)))
        source = ShapedArray(source.shape, T.complex_to_real(source.dtype))
        if source.dtype == new_dtype:
            return x
    if new_dtype == dtypes.bool_:
        zero = builder.broadcast_scalar(0, source.shape, source.dtype)
        return builder.op1("stablehlo.compare", [x, zero], out_type, {
            "comparison_direction": "#stablehlo<comparison_direction NE>",
            "compare_type": f"#stablehlo<comparison_type {comparison_type(source.dtype)}>"})
    return builder.op1("stablehlo.convert", [x], out_type)


convert_element_type_p.def_abstract_eval(_convert_abstract_eval)
register_lowering(convert_element_type_p, _lower_convert)


def convert_element_type(operand, new_dtype, weak_type=False):
    """`operand` as `new_dtype` (C-style conversion; complex to real keeps the real part)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if not isinstance(operand, Tracer | Array) and type(operand) not in symbolic_dim_types:
        # Host values convert on the host: no device round trip, and literals stay literals. (A symbolic
        # dimension is staged: its value is computed from the dimension variables.)
        if type(operand) is int and dtypes.is_integer(new_dtype):
            # As in JAX: a Python int must fit the default integer type; it then wraps into smaller ones.
            dtypes.check_int_fits(operand, dtypes.default_int_dtype())
        value = np.asarray(operand)
        if dtypes.is_complex(value.dtype) and not dtypes.is_complex(new_dtype):
            value = value.real
        if isinstance(operand, np.ndarray) and dtypes.is_float(value.dtype) and dtypes.is_integer(new_dtype):
            value = _saturated(value, new_dtype)
        if weak_type and value.ndim == 0 and type(operand) in dtypes.python_scalar_types:
            kind = dtypes.scalar_type_of(new_dtype)
            if kind is not bool and dtypes.python_scalar_dtype(kind(0)) == new_dtype:
                return kind(value.item())
        # copy=False keeps a numpy constant the same object, so tracing captures it once.
        return np.asarray(value, dtype=new_dtype)[()] if value.ndim == 0 else value.astype(new_dtype, copy=False)
    aval = get_aval_of(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _saturated(value, int_dtype):
    """A float array converted as XLA converts it to integers (and jax does with a numpy array): NaN is 0 and
    values out of range saturate, where numpy's cast would wrap them (-1.5 to uint8 is 0, not 255)."""
    info = np.iinfo(int_dtype)
    # float64 holds every 32-bit bound exactly; the 64-bit maxima round up, so the float just below them is used.
    low, high = float(info.min), float(info.max)
    if high >= 2.0 ** 63:
        high = np.nextafter(high, 0)
    wide = value.astype(np.float64)
    return np.where(np.isnan(wide), 0, np.clip(wide, low, high)).astype(int_dtype)


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x, new_dtype):
    old_size, new_size = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if x.dtype == new_dtype:
        return ShapedArray(x.shape, new_dtype)
    if dtypes.bool_ in (x.dtype, new_dtype) or dtypes.is_complex(x.dtype) or dtypes.is_complex(new_dtype):
        raise TypeError(f"bitcast_convert_type does not accept bool or complex values unless the operand and result "
                        f"dtypes match, got {x.dtype.name} to {np.dtype(new_dtype).name}")
    if old_size == new_size:
        shape = x.shape
    elif old_size > new_size:
        shape = x.shape + (old_size // new_size,)
    else:
        if not x.shape or x.shape[-1] != new_size // old_size:
            raise TypeError(f"bitcast_convert_type from {x.dtype.name}{list(x.shape)} to {np.dtype(new_dtype).name} "
                            f"needs a last dimension of {new_size // old_size}")
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype)


bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract_eval)
register_lowering(bitcast_convert_type_p, lambda ctx, x, new_dtype: ctx.builder.op1(
    "stablehlo.bitcast_convert", [x], aval_type(ctx.aval_out)))


def bitcast_convert_type(operand, new_dtype):
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(new_dtype))


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_abstract_eval(
    lambda x, exponent_bits, mantissa_bits: T.unary("reduce_precision", T.float_dtypes)(x))
register_lowering(reduce_precision_p, lambda ctx, x, exponent_bits, mantissa_bits: ctx.builder.op1(
    "stablehlo.reduce_precision", [x], aval_type(ctx.aval_out),
    {"exponent_bits": f"{exponent_bits} : i32", "mantissa_bits": f"{mantissa_bits} : i32"}))


def reduce_precision(operand, exponent_bits, mantissa_bits):
    return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))


# --- rules ----------------------------------------------------------------------------------------------------
def _convert_element_type_jvp(primals, tangents, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(new_dtype):
        return out, Zero(tangent_aval(get_aval_of(out)))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct, x, new_dtype, weak_type):
    aval = x.aval
    if type(ct) is Zero or not dtypes.is_inexact(aval.dtype):
        return [Zero(tangent_aval(aval))]
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


jvp_rules[convert_element_type_p] = _convert_element_type_jvp
transpose_rules[convert_element_type_p] = _convert_element_type_transpose
ad.defjvp_zero(bitcast_convert_type_p)
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
batching.defvectorized(convert_element_type_p)
batching.defvectorized(reduce_precision_p)


def _bitcast_convert_type_batching(values, dims, new_dtype):
    (x,), (dim,) = values, dims
    aval = get_aval_of(x)
    if np.dtype(new_dtype).itemsize > aval.dtype.itemsize and dim == aval.ndim - 1:
        # A wider dtype consumes the examples' last dimension, so the batch must not sit there.
        x, dim = batching.move_axis(x, dim, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), dim


batching_rules[bitcast_convert_type_p] = _bitcast_convert_type_batching

# Its lowering (a compare with a broadcast zero for bool results) takes the builder's dynamic forms for symbolic
# shapes.
polymorphic_primitives.add(convert_element_type_p)
