"""Convolution: `conv_general_dilated` (one primitive, lowered to stablehlo.convolution) and the
wrappers over it (`conv`, `conv_with_general_padding`, `conv_transpose`), with JAX's dimension numbers.

`ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)` holds, for each operand, the dimension indices of
(batch, feature, spatial...) for lhs and out and of (out feature, in feature, spatial...) for rhs; the
spatial dimensions are listed in the order of the kernel's. String specs such as ('NCHW', 'OIHW',
'NCHW') are turned into this form by `conv_dimension_numbers`.
"""

import collections

from ..core import dtypes
from ..core.avals import InconclusiveDimensionOperation, ShapedArray
from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array, tensor_type
from . import typing as T
from .windows import padtype_to_pads

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations", "conv_general_dilated",
           "conv", "conv_with_general_padding", "conv_transpose", "conv_general_dilated_p"]


class ConvDimensionNumbers(collections.namedtuple("ConvDimensionNumbers", ["lhs_spec", "rhs_spec", "out_spec"])):
    """Dimension indices of (batch, feature, spatial...) in lhs and out, (out feature, in feature,
    spatial...) in rhs."""


def conv_general_permutations(dimension_numbers):
    """String specs ('NCHW', 'OIHW', 'NCHW') as index permutations (lhs_spec, rhs_spec, out_spec)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fixed_letters = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (first, second)) in enumerate(zip(dimension_numbers, fixed_letters)):
        if spec.count(first) != 1 or spec.count(second) != 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters '{first}' and "
                            f"'{second}' exactly once, got {spec}.")
        if len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}.")
    spatial = [set(spec) - set(letters) for spec, letters in zip(dimension_numbers, fixed_letters)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(f"convolution dimension_numbers elements must each have the same set of spatial "
                        f"characters, got {dimension_numbers}.")
    kernel_spatial = [c for c in rhs_spec if c not in "OI"]

    def permutation(spec, letters):
        spatial_dims = [spec.index(c) for c in kernel_spatial]
        return (spec.index(letters[0]), spec.index(letters[1])) + tuple(spatial_dims)

    return tuple(permutation(spec, letters) for spec, letters in zip(dimension_numbers, fixed_letters))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """`dimension_numbers` (None, a ConvDimensionNumbers, or three string specs) in canonical form."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
                        f"{len(rhs_shape)}.")
    if dimension_numbers is None:
        identity = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(identity, identity, identity)
    if not isinstance(dimension_numbers, (list, tuple)) or len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers must be None, a ConvDimensionNumbers or three strings, "
                        f"got {dimension_numbers!r}.")
    if not all(isinstance(spec, str) for spec in dimension_numbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in spec) for spec in dimension_numbers))
    for i, spec in enumerate(dimension_numbers):
        if len(spec) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and rhs, "
                            f"got {len(spec)} for lhs and rhs shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _dilate(size, dilation):
    return 0 if size == 0 else (size - 1) * dilation + 1


# --- the primitive ---------------------------------------------------------------------------------------------
conv_general_dilated_p = Primitive("conv_general_dilated")


def _conv_abstract_eval(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                        feature_group_count, batch_group_count, precision, preferred_element_type):
    name = "conv_general_dilated"
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(f"{name}: lhs and rhs must have the same rank (at least 2), got {T.describe((lhs, rhs))}")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"{name} requires arguments to have the same dtypes, got {lhs.dtype.name}, {rhs.dtype.name}")
    T.check_dtype(name, lhs, T.numeric_dtypes)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial_count = lhs.ndim - 2
    for label, values in (("window_strides", window_strides), ("padding", padding), ("lhs_dilation", lhs_dilation),
                          ("rhs_dilation", rhs_dilation)):
        if len(values) != spatial_count:
            error = TypeError if label == "padding" else ValueError  # (JAX's classes)
            raise error(f"{name}: {label} {values} must have one entry per spatial dimension ({spatial_count})")
    if feature_group_count < 1 or batch_group_count < 1:
        raise ValueError(f"{name}: feature_group_count and batch_group_count must be positive, got "
                         f"{feature_group_count} and {batch_group_count}")
    if feature_group_count > 1 and batch_group_count > 1:
        raise ValueError(f"{name}: at most one of batch_group_count and feature_group_count may be > 1, got "
                         f"batch_group_count={batch_group_count} and feature_group_count={feature_group_count}")
    in_features = lhs.shape[lhs_spec[1]]
    if in_features % feature_group_count or in_features // feature_group_count != rhs.shape[rhs_spec[1]]:
        raise ValueError(f"{name}: the lhs feature dimension ({in_features}) divided by feature_group_count "
                         f"({feature_group_count}) must equal the rhs input feature dimension "
                         f"({rhs.shape[rhs_spec[1]]})")
    out_features = rhs.shape[rhs_spec[0]]
    if out_features % feature_group_count or out_features % batch_group_count:
        raise ValueError(f"{name}: the rhs output feature dimension ({out_features}) must be a multiple of "
                         f"feature_group_count ({feature_group_count}) and batch_group_count ({batch_group_count})")
    batch = lhs.shape[lhs_spec[0]]
    if batch % batch_group_count:
        raise ValueError(f"{name}: batch_group_count ({batch_group_count}) must divide the lhs batch size ({batch})")
    out_shape = [0] * lhs.ndim
    out_shape[out_spec[0]] = batch // batch_group_count
    out_shape[out_spec[1]] = out_features
    for i in range(spatial_count):
        stride = window_strides[i]
        if stride < 1 or lhs_dilation[i] < 1 or rhs_dilation[i] < 1:
            raise ValueError(f"{name}: strides and dilations must be positive, got window_strides={window_strides}, "
                             f"lhs_dilation={lhs_dilation}, rhs_dilation={rhs_dilation}")
        low, high = padding[i]
        padded = _dilate(lhs.shape[lhs_spec[2 + i]], lhs_dilation[i]) + low + high
        window = _dilate(rhs.shape[rhs_spec[2 + i]], rhs_dilation[i])
        out_shape[out_spec[2 + i]] = max(0, (padded - window) // stride + 1) if padded >= window else 0
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(out_shape, dtype)


def _lower_conv(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                feature_group_count, batch_group_count, precision, preferred_element_type):
    return _emit_conv(ctx.builder, lhs, rhs, aval_type(ctx.aval_out), window_strides, padding, lhs_dilation,
                      rhs_dilation, dimension_numbers, feature_group_count, batch_group_count)


def _lower_conv_gpu(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                    feature_group_count, batch_group_count, precision, preferred_element_type):
    """XLA's GPU backend has no complex convolutions: four real ones give the real and imaginary parts.
    Nor integer ones: those run as exact float64 convolutions (`_lower_integer_conv_gpu`)."""
    out = ctx.aval_out
    if dtypes.is_integer(ctx.avals_in[0].dtype):
        return _lower_integer_conv_gpu(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                       dimension_numbers, feature_group_count, batch_group_count)
    if not dtypes.is_complex(out.dtype):
        return _lower_conv(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                           feature_group_count, batch_group_count, precision, preferred_element_type)
    builder = ctx.builder
    part_dtype = dtypes.float32 if out.dtype == dtypes.complex64 else dtypes.float64
    lhs_aval, rhs_aval = ctx.avals_in
    parts = {}
    for name, value, aval in (("lhs", lhs, lhs_aval), ("rhs", rhs, rhs_aval)):
        part_type = tensor_type(aval.shape, part_dtype)
        parts[name] = (builder.op1("stablehlo.real", [value], part_type),
                       builder.op1("stablehlo.imag", [value], part_type))
    real_type = tensor_type(out.shape, part_dtype)
    settings = (window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                batch_group_count)

    def conv(a, b):
        return _emit_conv(builder, a, b, real_type, *settings)

    (lhs_re, lhs_im), (rhs_re, rhs_im) = parts["lhs"], parts["rhs"]
    real = builder.op1("stablehlo.subtract", [conv(lhs_re, rhs_re), conv(lhs_im, rhs_im)], real_type)
    imag = builder.op1("stablehlo.add", [conv(lhs_re, rhs_im), conv(lhs_im, rhs_re)], real_type)
    return builder.op1("stablehlo.complex", [real, imag], aval_type(out))


_EXACT_FLOAT64 = 2 ** 53  # every integer of magnitude up to this is a float64


def _lower_integer_conv_gpu(ctx, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                            feature_group_count, batch_group_count):
    """Integer convolutions on the GPU (XLA GPU rejects them, jax fails alike), as float64 ones that are exact.

    Each output element sums `terms` products (the kernel's size per output feature). When no such sum
    can reach 2**53, one float64 convolution of the operands is exact; its value becomes the result type
    through int64, which wraps like an integer accumulator would. Wider operands (32/64-bit) are first
    brought to the result's width and split into unsigned pieces of `width` bits; the convolutions of
    the pairs of pieces that reach below the result's top bit, shifted and added in uint64, give the
    result modulo 2**bits, as integer arithmetic does.
    """
    builder = ctx.builder
    out, (lhs_aval, rhs_aval) = ctx.aval_out, ctx.avals_in
    terms = rhs_aval.size // max(1, rhs_aval.shape[dimension_numbers[1][0]])
    info = dtypes.iinfo(lhs_aval.dtype)
    largest = max(-int(info.min), int(info.max))
    f64_type = tensor_type(out.shape, dtypes.float64)
    settings = (window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                batch_group_count)

    def conv64(a, a_aval, b, b_aval):
        a = builder.op1("stablehlo.convert", [a], tensor_type(a_aval.shape, dtypes.float64))
        b = builder.op1("stablehlo.convert", [b], tensor_type(b_aval.shape, dtypes.float64))
        return _emit_conv(builder, a, b, f64_type, *settings)

    if terms * largest * largest <= _EXACT_FLOAT64 or not dtypes.is_integer(out.dtype):
        result = conv64(lhs, lhs_aval, rhs, rhs_aval)
        if dtypes.is_integer(out.dtype):
            result = builder.op1("stablehlo.convert", [result], tensor_type(out.shape, dtypes.int64))
        return builder.op1("stablehlo.convert", [result], aval_type(out))
    bits = 8 * out.dtype.itemsize
    unsigned = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[out.dtype.itemsize]
    width = min(16, bits)
    while width > 1 and terms * (2 ** width - 1) ** 2 > _EXACT_FLOAT64:
        width -= 1

    def pieces(value, aval):
        value = builder.op1("stablehlo.convert", [value], tensor_type(aval.shape, out.dtype))
        value = builder.op1("stablehlo.bitcast_convert", [value], tensor_type(aval.shape, unsigned))
        mask = builder.broadcast_scalar(2 ** width - 1, aval.shape, unsigned)
        found = []
        for shift in range(0, bits, width):
            amount = builder.broadcast_scalar(shift, aval.shape, unsigned)
            piece = builder.op1("stablehlo.shift_right_logical", [value, amount], tensor_type(aval.shape, unsigned))
            found.append(builder.op1("stablehlo.and", [piece, mask], tensor_type(aval.shape, unsigned)))
        return found

    u64_type = tensor_type(out.shape, dtypes.uint64)
    total = None
    lhs_pieces, rhs_pieces = pieces(lhs, lhs_aval), pieces(rhs, rhs_aval)
    for i, lhs_piece in enumerate(lhs_pieces):
        for j, rhs_piece in enumerate(rhs_pieces):
            shift = width * (i + j)
            if shift >= bits:
                continue
            term = builder.op1("stablehlo.convert", [conv64(lhs_piece, lhs_aval, rhs_piece, rhs_aval)], u64_type)
            if shift:
                amount = builder.broadcast_scalar(shift, out.shape, dtypes.uint64)
                term = builder.op1("stablehlo.shift_left", [term, amount], u64_type)
            total = term if total is None else builder.op1("stablehlo.add", [total, term], u64_type)
    total = builder.op1("stablehlo.convert", [total], tensor_type(out.shape, unsigned))
    return builder.op1("stablehlo.bitcast_convert", [total], aval_type(out))


def _emit_conv(builder, lhs, rhs, out_type, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count, batch_group_count):
    lhs_spec, rhs_spec, out_spec = dimension_numbers

    def dims(values):
        return "[" + ", ".join(str(int(v)) for v in values) + "]"

    numbers = (
        f"#stablehlo.conv<raw input_batch_dimension = {lhs_spec[0]}, input_feature_dimension = {lhs_spec[1]}, "
        f"input_spatial_dimensions = {dims(lhs_spec[2:])}, kernel_input_feature_dimension = {rhs_spec[1]}, "
        f"kernel_output_feature_dimension = {rhs_spec[0]}, kernel_spatial_dimensions = {dims(rhs_spec[2:])}, "
        f"output_batch_dimension = {out_spec[0]}, output_feature_dimension = {out_spec[1]}, "
        f"output_spatial_dimensions = {dims(out_spec[2:])}>")
    spatial_count = len(window_strides)
    pads = ", ".join(f"[{low}, {high}]" for low, high in padding)
    attributes = {
        "window_strides": i64_array(window_strides),
        "padding": f"dense<[{pads}]> : tensor<{spatial_count}x2xi64>" if spatial_count else "dense<> : tensor<0x2xi64>",
        "lhs_dilation": i64_array(lhs_dilation),
        "rhs_dilation": i64_array(rhs_dilation),
        "dimension_numbers": numbers,
        "feature_group_count": f"{feature_group_count} : i64",
        "batch_group_count": f"{batch_group_count} : i64",
    }
    return builder.op1("stablehlo.convolution", [lhs, rhs], out_type, attributes)


conv_general_dilated_p.def_abstract_eval(_conv_abstract_eval)
register_lowering(conv_general_dilated_p, _lower_conv)
register_lowering(conv_general_dilated_p, _lower_conv_gpu, platform="gpu")
polymorphic_primitives.add(conv_general_dilated_p)  # stablehlo.convolution takes a symbolic batch as it is


# --- wrappers ----------------------------------------------------------------------------------------------------
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
                         preferred_element_type=None, out_sharding=None):
    """General n-d convolution with strides, padding ('SAME', 'SAME_LOWER', 'VALID' or (low, high)
    pairs), input (lhs) and kernel (rhs) dilation, and feature or batch grouping. `out_sharding` (a Sharding or
    a PartitionSpec over the mesh in context) lays the result out, as JAX's keyword does."""
    if out_sharding is not None:
        from .sharding_constraint import reshard  # (the sharding machinery only when asked for)

        return reshard(conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                            dimension_numbers, feature_group_count, batch_group_count, precision,
                                            preferred_element_type), out_sharding)
    lhs_aval, rhs_aval = get_aval_of(lhs), get_aval_of(rhs)
    numbers = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    numbers = ConvDimensionNumbers(*(tuple(int(d) for d in spec) for spec in numbers))
    spatial_count = lhs_aval.ndim - 2
    if lhs_dilation is None:
        lhs_dilation = (1,) * spatial_count
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution using this op. Please "
                         "either exactly specify the required padding or use conv_transpose.")
    rhs_dilation = (1,) * spatial_count if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    if len(rhs_dilation) != spatial_count:
        raise ValueError(f"conv_general_dilated: rhs_dilation {rhs_dilation} must have one entry per spatial "
                         f"dimension ({spatial_count})")
    if isinstance(padding, str):
        lhs_spatial = [lhs_aval.shape[d] for d in numbers.lhs_spec[2:]]
        window = [_dilate(rhs_aval.shape[d], r) for d, r in zip(numbers.rhs_spec[2:], rhs_dilation)]
        try:
            padding = padtype_to_pads(lhs_spatial, window, window_strides, padding)
        except InconclusiveDimensionOperation:
            raise NotImplementedError(
                f"conv_general_dilated: {padding!r} padding of the symbolic spatial dimensions "
                f"{lhs_aval.str_short()} depends on their values (a stride above 1); export with static spatial "
                "dimensions or give explicit (low, high) padding") from None
    try:
        padding = tuple((int(low), int(high)) for low, high in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding argument to conv_general_dilated should be a string or a sequence of (low, high) "
                         f"pairs, got {padding}") from None
    preferred = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(int(s) for s in window_strides), padding=padding,
        lhs_dilation=tuple(int(d) for d in lhs_dilation), rhs_dilation=rhs_dilation, dimension_numbers=numbers,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=None, preferred_element_type=preferred)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in NCHW / OIHW layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    """Convolution in NCHW / OIHW layout with dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(kernel, stride, padding):
    """(low, high) padding of the dilated input that undoes a forward convolution's `padding`."""
    if padding == "SAME":
        total = kernel + stride - 2
        low = kernel - 1 if stride > kernel - 1 else -(-total // 2)
    elif padding == "VALID":
        total = kernel + stride - 2 + max(kernel - stride, 0)
        low = kernel - 1
    else:
        raise ValueError(f"conv_transpose: invalid padding mode {padding!r}: use 'SAME', 'VALID' or (low, high) pairs")
    return low, total - low


_default_transpose_specs = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                            5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, transpose_kernel=False,
                   precision=None, preferred_element_type=None):
    """The transposed ("fractionally strided") convolution: the input is dilated by `strides`. With
    `transpose_kernel`, the kernel is flipped spatially and its feature dimensions swapped, which makes
    this the gradient of conv_general_dilated with respect to its input."""
    from .shapes import rev, transpose

    lhs_aval, rhs_aval = get_aval_of(lhs), get_aval_of(rhs)
    rank = lhs_aval.ndim
    if rank != rhs_aval.ndim or rank < 2:
        raise TypeError(f"conv_transpose: lhs and rhs must have the same rank (at least 2), got "
                        f"{T.describe((lhs_aval, rhs_aval))}")
    if dimension_numbers is None:
        dimension_numbers = _default_transpose_specs.get(rank)
    numbers = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    kernel_spatial = [rhs_aval.shape[d] for d in numbers.rhs_spec[2:]]
    rhs_dilation = (1,) * (rank - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if isinstance(padding, str):
        windows = [_dilate(k, r) for k, r in zip(kernel_spatial, rhs_dilation)]
        padding = [_transpose_padding(k, s, padding.upper()) for k, s in zip(windows, strides)]
    if transpose_kernel:
        rhs = rev(rhs, tuple(numbers.rhs_spec[2:]))
        permutation = list(range(rank))
        out_dim, in_dim = numbers.rhs_spec[0], numbers.rhs_spec[1]
        permutation[out_dim], permutation[in_dim] = in_dim, out_dim
        rhs = transpose(rhs, permutation)
    return conv_general_dilated(lhs, rhs, (1,) * (rank - 2), padding, lhs_dilation=strides,
                                rhs_dilation=rhs_dilation, dimension_numbers=numbers, precision=precision,
                                preferred_element_type=preferred_element_type)


# --- differentiation -----------------------------------------------------------------------------------------
# conv_general_dilated is bilinear. The cotangent of either operand is itself a convolution: of the output's
# cotangent with the spatially reversed kernel for lhs, of lhs with the output's cotangent for rhs, with
# strides and dilations trading places and the paddings that make the shapes come out right. Feature and
# batch groups trade places too, with the group axis moved between dimensions by reshapes.
def _split_axis(x, axis, groups):
    """Dimension `axis` of size groups * n becomes two, (groups, n)."""
    from .shapes import reshape

    shape = list(get_aval_of(x).shape)
    shape[axis:axis + 1] = [groups, shape[axis] // groups]
    return reshape(x, tuple(shape))


def _merge_axis(x, source, destination):
    """Dimension `source` folds into `destination` (an index among the other dimensions) as its major part."""
    from .shapes import reshape, transpose

    shape = get_aval_of(x).shape
    order = [d for d in range(len(shape)) if d != source]
    order.insert(destination, source)
    merged = [shape[d] for d in range(len(shape)) if d != source]
    merged[destination] *= shape[source]
    return reshape(transpose(x, tuple(order)), tuple(merged))


def _swap_features(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _spatial(shape, spec):
    return [shape[d] for d in spec[2:]]


def _cast(x, dtype):
    from .conversions import convert_element_type

    return x if get_aval_of(x).dtype == dtype else convert_element_type(x, dtype)


def _conv_transpose_lhs(ct, lhs_aval, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                        feature_group_count, batch_group_count, precision, preferred_element_type):
    from .shapes import rev

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape, ct_shape = get_aval_of(rhs).shape, get_aval_of(ct).shape
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:  # the group axis moves from the kernel's output features into its input features
        rhs = _merge_axis(_split_axis(rhs, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
    # The low padding that puts the first window's last element first, and the high one that makes
    # the result exactly as large as lhs (negative where trailing lhs elements fed no output).
    pads = []
    for size, window, out_size, (low, _), stride, lhs_dil, rhs_dil in zip(
            _spatial(lhs_aval.shape, lhs_spec), _spatial(rhs_shape, rhs_spec), _spatial(ct_shape, out_spec),
            padding, window_strides, lhs_dilation, rhs_dilation):
        window = _dilate(window, rhs_dil)
        before = window - low - 1
        pads.append((before, _dilate(size, lhs_dil) + window - 1 - _dilate(out_size, stride) - before))
    kernel = _cast(rev(rhs, tuple(rhs_spec[2:])), get_aval_of(ct).dtype)
    result = conv_general_dilated_p.bind(
        ct, kernel, window_strides=tuple(lhs_dilation), padding=tuple(pads), lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(out_spec, _swap_features(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision, preferred_element_type=None)
    result = _cast(result, lhs_aval.dtype)
    if batch_group_count > 1:  # the groups were batch slices: move them from the features back to the batch
        result = _merge_axis(_split_axis(result, lhs_spec[1], batch_group_count), lhs_spec[1], lhs_spec[0])
    return result


def _conv_transpose_rhs(ct, lhs, rhs_aval, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                        feature_group_count, batch_group_count, precision, preferred_element_type):
    from ..core.ad_util import Zero, tangent_aval

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, ct_aval = get_aval_of(lhs).shape, get_aval_of(ct)
    if ct_aval.size == 0:  # no output: avoid a convolution whose kernel would have empty spatial dimensions
        return Zero(tangent_aval(rhs_aval))
    pads = []
    for size, window, out_size, (low, _), stride, lhs_dil, rhs_dil in zip(
            _spatial(lhs_shape, lhs_spec), _spatial(rhs_aval.shape, rhs_spec), _spatial(ct_aval.shape, out_spec),
            padding, window_strides, lhs_dilation, rhs_dilation):
        high = _dilate(out_size, stride) - _dilate(size, lhs_dil) + _dilate(window, rhs_dil) - low - 1
        pads.append((low, high))
    # Feature groups of the forward convolution are batch groups here (each group's kernel sees only its
    # own input features), and batch groups become feature groups.
    result = conv_general_dilated_p.bind(
        _cast(lhs, ct_aval.dtype), ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(_swap_features(lhs_spec), _swap_features(out_spec),
                                               _swap_features(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count, precision=precision,
        preferred_element_type=None)
    return _cast(result, rhs_aval.dtype)


from . import ad  # noqa: E402  (ad imports other lax modules lazily; kept beside the rules it registers)

ad.defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)


# --- batching rules -----------------------------------------------------------------------------------------------
# JAX's rule: one convolution, the vmapped axis folded by reshapes into a dimension the convolution already
# has. A batched lhs joins the batch dimension; a batched kernel joins the output features; both batched, the
# examples become feature groups (or batch groups) of one grouped convolution. When groups are already there,
# the examples go inside each group so that the group axis stays outermost.
from ..core.primitives import batching_rules  # noqa: E402


def _conv_batching(values, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params):
    (lhs, rhs), (lhs_dim, rhs_dim) = values, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers

    def conv(new_lhs, new_rhs, feature_groups, batch_groups):
        return conv_general_dilated_p.bind(new_lhs, new_rhs, dimension_numbers=dimension_numbers,
                                           feature_group_count=feature_groups, batch_group_count=batch_groups,
                                           **params)

    if lhs_dim is not None and rhs_dim is not None:
        size = get_aval_of(lhs).shape[lhs_dim]
        if batch_group_count > 1:
            new_lhs = _merge_axis(lhs, lhs_dim, lhs_spec[0])
            feature_groups, batch_groups = feature_group_count, batch_group_count * size
        else:
            new_lhs = _merge_axis(lhs, lhs_dim, lhs_spec[1])
            feature_groups, batch_groups = feature_group_count * size, batch_group_count
        out = conv(new_lhs, _merge_axis(rhs, rhs_dim, rhs_spec[0]), feature_groups, batch_groups)
        return _split_axis(out, out_spec[1], size), out_spec[1]
    if lhs_dim is not None:
        size = get_aval_of(lhs).shape[lhs_dim]
        if batch_group_count == 1:
            new_lhs = _merge_axis(lhs, lhs_dim, lhs_spec[0])
        else:  # examples inside each batch group: (groups, examples, rest) of the batch dimension
            batch = lhs_spec[0] + (lhs_dim <= lhs_spec[0])
            new_lhs = _split_axis(lhs, batch, batch_group_count)
            new_lhs = _merge_axis(new_lhs, lhs_dim + (batch < lhs_dim), lhs_spec[0] + 1)
            new_lhs = _merge_axis(new_lhs, lhs_spec[0], lhs_spec[0])
        out = conv(new_lhs, rhs, feature_group_count, batch_group_count)
        return _split_axis(out, out_spec[0], size), out_spec[0]
    size = get_aval_of(rhs).shape[rhs_dim]
    if feature_group_count == 1 and batch_group_count == 1:
        out = conv(lhs, _merge_axis(rhs, rhs_dim, rhs_spec[0]), 1, 1)
        return _split_axis(out, out_spec[1], size), out_spec[1]
    # examples inside each group of output features: (groups, examples, rest), and back out of the result
    groups = max(feature_group_count, batch_group_count)
    features = rhs_spec[0] + (rhs_dim <= rhs_spec[0])
    new_rhs = _split_axis(rhs, features, groups)
    new_rhs = _merge_axis(new_rhs, rhs_dim + (features < rhs_dim), rhs_spec[0] + 1)
    new_rhs = _merge_axis(new_rhs, rhs_spec[0], rhs_spec[0])
    out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
    out = _split_axis(_split_axis(out, out_spec[1], groups), out_spec[1] + 1, size)
    return _merge_axis(out, out_spec[1], out_spec[1] + 1), out_spec[1]


batching_rules[conv_general_dilated_p] = _conv_batching
