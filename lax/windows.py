"""Windowed reductions: reduce_window_sum/max/min (identity-initialised), the generic `reduce_window`
(add/mul/max/min or any traced scalar computation, with any initial value), and the padding helpers
(`padtype_to_pads`).

All of them lower to one `stablehlo.reduce_window`; cumulative reductions (lax/cumulative.py) reuse
`lower_reduce_window` with a window as long as the scanned axis.
"""

import enum

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, symbolic_dim_types
from ..core.ir import ClosedProgram
from ..core.primitives import Primitive
from ..core.staging import trace_to_closed_program
from ..core.trace import Tracer, get_aval_of, is_concrete
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type, i64_array, tensor_type
from . import typing as T
from .reductions import identity_of, lexicographic_pick, reduce_sum

__all__ = [
    "PaddingType", "padtype_to_pads", "reduce_window", "reduce_window_shape_tuple",
    "reduce_window_sum", "reduce_window_max", "reduce_window_min",
    "reduce_window_p", "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p",
]


class PaddingType(enum.Enum):
    VALID = 1
    SAME = 2
    SAME_LOWER = 3


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) padding per dimension for 'SAME' (extra at the end), 'SAME_LOWER' (extra at the
    start) or 'VALID' (none): SAME keeps ceil(size / stride) outputs."""
    if isinstance(padding, str):
        try:
            padding = PaddingType[padding.upper()]
        except KeyError:
            # (JAX's class: a RuntimeError.)
            raise RuntimeError(f"unknown padding type {padding!r}: use 'SAME', 'SAME_LOWER' or 'VALID'") from None
    if padding == PaddingType.VALID:
        return [(0, 0)] * len(in_shape)
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        size = size if type(size) in symbolic_dim_types else int(size)  # (stride 1: the pads do not depend on it)
        out = -(-size // int(stride))
        total = max(0, (out - 1) * int(stride) + int(window) - size)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if padding == PaddingType.SAME else (large, small))
    return pads



def _dilate(size, dilation):
    return 0 if size == 0 else (size - 1) * dilation + 1


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None):
    """The output shape of a windowed reduction."""
    rank = len(operand_shape)
    base_dilation = base_dilation or (1,) * rank
    window_dilation = window_dilation or (1,) * rank
    shape = []
    for size, window, stride, (low, high), base, wdil in zip(operand_shape, window_dimensions, window_strides,
                                                             padding, base_dilation, window_dilation):
        padded = _dilate(size, base) + low + high
        span = _dilate(window, wdil)
        shape.append(0 if padded < span else (padded - span) // stride + 1)
    return tuple(shape)


def _check_window_params(name, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    rank = operand.ndim
    for label, values in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                          ("padding", padding), ("base_dilation", base_dilation),
                          ("window_dilation", window_dilation)):
        if len(values) != rank:
            raise TypeError(f"{name}: {label} {values} must have one entry per dimension of the operand "
                            f"{operand.str_short()}")
    for label, values in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                          ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if any(v < 1 for v in values):
            raise TypeError(f"{name}: {label} must be positive, got {values}")
    return ShapedArray(reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding,
                                                 base_dilation, window_dilation), operand.dtype, operand.weak_type)


# --- lowering ----------------------------------------------------------------------------------------------
_combiners = {"add": "stablehlo.add", "mul": "stablehlo.multiply", "max": "stablehlo.maximum",
              "min": "stablehlo.minimum"}


def _logaddexp(builder, a, b, dtype):
    """log(exp(a) + exp(b)) without overflow: max + log1p(exp(-|a - b|)); infinities of one sign (where
    a - b is NaN) give the max, and NaNs propagate through it."""
    scalar = tensor_type((), dtype)
    larger = builder.op1("stablehlo.maximum", [a, b], scalar)
    difference = builder.op1("stablehlo.subtract", [a, b], scalar)
    magnitude = builder.op1("stablehlo.negate", [builder.op1("stablehlo.abs", [difference], scalar)], scalar)
    softplus = builder.op1("stablehlo.log_plus_one", [builder.op1("stablehlo.exponential", [magnitude], scalar)],
                           scalar)
    combined = builder.op1("stablehlo.add", [larger, softplus], scalar)
    undefined = builder.op1("stablehlo.compare", [difference, difference], tensor_type((), dtypes.bool_), {
        "comparison_direction": "#stablehlo<comparison_direction NE>",
        "compare_type": "#stablehlo<comparison_type FLOAT>"})
    return builder.op1("stablehlo.select", [undefined, larger, combined], scalar)


def lower_reduce_window(ctx, operand, init, kind, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
    """Emits a stablehlo.reduce_window combining with `kind` (add, mul, max, min, logaddexp), or with a
    ClosedProgram of two scalars (a traced user computation)."""
    builder = ctx.builder
    dtype = ctx.avals_in[0].dtype
    scalar = tensor_type((), dtype)

    def body(inner, args):
        if isinstance(kind, ClosedProgram):
            return lower_program_body(ctx.module, inner, kind.program, kind.consts, args)
        if kind == "logaddexp":
            return [_logaddexp(inner, args[0], args[1], dtype)]
        if kind in ("max", "min") and dtypes.is_complex(dtype):
            return [lexicographic_pick(inner, args, "GT" if kind == "max" else "LT", dtype)]
        op_name = _combiners[kind]
        if dtype == dtypes.bool_ and kind in ("add", "mul"):
            op_name = "stablehlo.or" if kind == "add" else "stablehlo.and"
        return [inner.op1(op_name, args, scalar)]

    region = builder.region([scalar, scalar], body)
    rank = len(window_dimensions)
    pads = np.asarray(padding, np.int64).reshape(rank, 2)
    pads_text = "[" + ", ".join(f"[{low}, {high}]" for low, high in pads) + "]" if rank else ""
    attributes = {
        "window_dimensions": i64_array(window_dimensions),
        "window_strides": i64_array(window_strides),
        "base_dilations": i64_array(base_dilation),
        "window_dilations": i64_array(window_dilation),
        "padding": f"dense<{pads_text}> : tensor<{rank}x2xi64>",
    }
    return builder.op1("stablehlo.reduce_window", [operand, init], aval_type(ctx.aval_out), attributes, [region])


# --- identity-initialised primitives ------------------------------------------------------------------------
def _define_monoid_window(name, kind, allowed):
    primitive = Primitive(name)

    def abstract_eval(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        T.check_dtype(name, operand, allowed)
        return _check_window_params(name, operand, window_dimensions, window_strides, padding, base_dilation,
                                    window_dilation)

    def lower(ctx, operand, **params):
        init = ctx.builder.constant(identity_of({"add": "sum"}.get(kind, kind), ctx.avals_in[0].dtype))
        return lower_reduce_window(ctx, operand, init, kind, **params)

    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lower)

    def wrapper(operand, window_dimensions, window_strides=None, padding="VALID", base_dilation=None,
                window_dilation=None):
        params = _window_params(get_aval_of(operand), window_dimensions, window_strides, padding, base_dilation,
                                window_dilation)
        return primitive.bind(operand, **params)

    wrapper.__name__ = name
    wrapper.__doc__ = f"The {kind} over each window of `operand` (padding contributes the identity)."
    return primitive, wrapper


def _window_params(aval, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    rank = aval.ndim
    window_dimensions = tuple(int(d) for d in window_dimensions)
    window_strides = (1,) * rank if window_strides is None else tuple(int(s) for s in window_strides)
    base_dilation = (1,) * rank if base_dilation is None else tuple(int(d) for d in base_dilation)
    window_dilation = (1,) * rank if window_dilation is None else tuple(int(d) for d in window_dilation)
    if isinstance(padding, (str, PaddingType)):
        # As in JAX, SAME padding uses the dilated window but the undilated operand shape.
        dilated_window = [_dilate(w, d) for w, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(aval.shape, dilated_window, window_strides, padding)
    padding = tuple((int(low), int(high)) for low, high in padding)
    return dict(window_dimensions=window_dimensions, window_strides=window_strides, padding=padding,
                base_dilation=base_dilation, window_dilation=window_dilation)


reduce_window_sum_p, reduce_window_sum = _define_monoid_window("reduce_window_sum", "add", T.numeric_dtypes)
reduce_window_max_p, reduce_window_max = _define_monoid_window("reduce_window_max", "max", T.any_dtype)
reduce_window_min_p, reduce_window_min = _define_monoid_window("reduce_window_min", "min", T.any_dtype)


# --- the generic form ---------------------------------------------------------------------------------------
reduce_window_p = Primitive("reduce_window")


def _reduce_window_abstract_eval(operand, init_value, computation, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    if init_value.ndim != 0 or init_value.dtype != operand.dtype:
        raise TypeError(f"reduce_window: init_value must be a scalar of the operand's dtype {operand.dtype.name}, "
                        f"got {init_value.str_short()}")
    return _check_window_params("reduce_window", operand, window_dimensions, window_strides, padding,
                                base_dilation, window_dilation)


reduce_window_p.def_abstract_eval(_reduce_window_abstract_eval)
register_lowering(reduce_window_p, lambda ctx, operand, init, computation, **params: lower_reduce_window(
    ctx, operand, init, computation, **params))


def _computation_kind(computation, dtype):
    """"add", "mul", "max" or "min" for those lax functions; any other computation traced into a
    ClosedProgram from two scalars of `dtype` to one."""
    from . import elementwise

    kinds = {elementwise.add: "add", elementwise.mul: "mul", elementwise.max: "max", elementwise.min: "min"}
    kind = kinds.get(computation)
    if kind is not None:
        return kind
    scalar = ShapedArray((), dtype)
    program = trace_to_closed_program(lambda a, b: [computation(a, b)], [scalar, scalar])
    if any(isinstance(c, Tracer) for c in program.consts):
        raise NotImplementedError("reduce_window: the computation closes over a traced value; pass it as part of "
                                  "the operand or init_value instead")
    if [(a.shape, a.dtype) for a in program.program.out_avals] != [((), dtype)]:
        raise TypeError(f"reduce_window: the computation must map two {dtype.name} scalars to one, got "
                        f"{[a.str_short() for a in program.program.out_avals]}")
    return program


_monoid_windows = {"add": reduce_window_sum_p, "max": reduce_window_max_p, "min": reduce_window_min_p}


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None):
    """Reduces each window of `operand` with `computation`, a function of two scalars (associative, with
    `init_value` its identity), starting from `init_value`. lax.add, lax.max and lax.min with their
    identities use the dedicated reduce_window_sum/max/min primitives."""
    from .elementwise import _scalars_like

    operand, init_value = _scalars_like((operand, init_value))
    aval = get_aval_of(operand)
    kind = _computation_kind(computation, aval.dtype)
    params = _window_params(aval, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    if kind in _monoid_windows and is_concrete(init_value) and aval.dtype in T.numeric_dtypes + (dtypes.bool_,):
        identity = identity_of({"add": "sum"}.get(kind, kind), aval.dtype)
        value = np.asarray(init_value)
        if type(init_value) in dtypes.python_scalar_types:
            value = value.astype(aval.dtype)
        if value.shape == () and value.dtype == aval.dtype and value.tobytes() == identity.tobytes():
            return _monoid_windows[kind].bind(operand, **params)
    return reduce_window_p.bind(operand, init_value, computation=kind, **params)


# --- differentiation rules -------------------------------------------------------------------------------------
from ..core.ad_util import Zero, tangent_aval  # noqa: E402
from ..core.primitives import jvp_rules  # noqa: E402
from . import ad  # noqa: E402


def _reduce_window_sum_transpose(ct, operand, window_dimensions, window_strides, padding, base_dilation,
                                 window_dilation):
    """JAX's rule: each operand element receives the sum of the cotangents of the windows holding it, that
    is a window sum over the cotangent spread out by the strides and padded so that the windows line up."""
    from .shapes import pad

    if type(ct) is Zero:
        return [None]
    in_shape = operand.aval.shape
    out_shape = get_aval_of(ct).shape
    config = []
    for size, window, stride, (low, _), base, dilation, out in zip(in_shape, window_dimensions, window_strides,
                                                                   padding, base_dilation, window_dilation,
                                                                   out_shape):
        span = _dilate(window, dilation)
        before = span - low - 1
        after = _dilate(size, base) + span - 1 - _dilate(out, stride) - before
        config.append((before, after, stride - 1))
    spread = pad(ct, np.zeros((), get_aval_of(ct).dtype), config)
    rank = len(in_shape)
    result = reduce_window_sum_p.bind(spread, window_dimensions=tuple(window_dimensions), window_strides=tuple(
        base_dilation), padding=((0, 0),) * rank, base_dilation=(1,) * rank, window_dilation=tuple(window_dilation))
    assert get_aval_of(result).shape == in_shape, (get_aval_of(result).shape, in_shape)
    return [result]


def _window_patches(operand, fill, window_dimensions, window_strides, padding, base_dilation, window_dilation,
                    stacked=True):
    """A (window size, *output shape) stack whose entry k holds the k-th element (row-major over the
    window) of every window (a list of the entries, unless `stacked`); padding and base dilation
    positions hold `fill`. The output shape has no zero dimension."""
    from .shapes import concatenate, pad, reshape
    from .slicing import slice

    out_shape = reduce_window_shape_tuple(get_aval_of(operand).shape, window_dimensions, window_strides, padding,
                                          base_dilation, window_dilation)
    config = [(low, high, base - 1) for (low, high), base in zip(padding, base_dilation)]
    padded = pad(operand, fill, config)
    patches = []
    for offset in np.ndindex(*window_dimensions):
        start = [o * d for o, d in zip(offset, window_dilation)]
        limit = [s + (n - 1) * stride + 1 for s, n, stride in zip(start, out_shape, window_strides)]
        patches.append(slice(padded, start, limit, window_strides))
    if not stacked:
        return patches
    return concatenate([reshape(p, (1,) + out_shape) for p in patches], 0)


def _reduce_window_chooser_jvp(kind):
    """JAX's rule for windowed max and min (select_and_gather_add): each window's tangent is the tangent of
    its first element equal to the result, written here as a gather of window patches."""
    from .elementwise import eq, select
    from .reductions import argmax_p, argmin_p
    from .shapes import broadcast_in_dim, broadcasted_iota

    def rule(primals, tangents, **params):
        (operand,), (tangent,) = primals, tangents
        primitive = reduce_window_max_p if kind == "max" else reduce_window_min_p
        out = primitive.bind(operand, **params)
        out_aval = get_aval_of(out)
        if type(tangent) is Zero or 0 in out_aval.shape:
            return out, Zero(tangent_aval(out_aval))
        dtype = get_aval_of(operand).dtype
        values = _window_patches(operand, identity_of(kind, dtype), **params)
        if dtypes.is_complex(dtype):  # no argmax over complex numbers: the first position equal to the result
            equal = eq(values, broadcast_in_dim(out, get_aval_of(values).shape, tuple(range(1, out_aval.ndim + 1))))
            position = argmax_p.bind(equal, axes=(0,), index_dtype=dtypes.int32)
        else:
            position = (argmax_p if kind == "max" else argmin_p).bind(values, axes=(0,), index_dtype=dtypes.int32)
        tangent_values = _window_patches(tangent, np.zeros((), get_aval_of(tangent).dtype), **params)
        shape = get_aval_of(values).shape
        chosen = eq(broadcasted_iota(dtypes.int32, shape, 0),
                    broadcast_in_dim(position, shape, tuple(range(1, len(shape)))))
        zeros = ad.zeros_like_aval(get_aval_of(tangent_values))
        return out, reduce_sum(select(chosen, tangent_values, zeros), (0,))

    return rule


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
jvp_rules[reduce_window_max_p] = _reduce_window_chooser_jvp("max")
jvp_rules[reduce_window_min_p] = _reduce_window_chooser_jvp("min")


def _reduce_window_jvp(primals, tangents, computation, **params):
    """The generic form with add, mul, max or min and any initial value: the JVP of folding each window's
    elements into the initial value, one window position after another, by the combiner's own JVP rule.
    (JAX differentiates it in forward mode only; the fold is made of differentiable operations, so
    here it transposes too.)"""
    from . import elementwise
    from .shapes import broadcast_in_dim

    operand, init_value = primals
    out = reduce_window_p.bind(operand, init_value, computation=computation, **params)
    out_aval = get_aval_of(out)
    if isinstance(computation, ClosedProgram):
        raise NotImplementedError(
            "reduce_window: differentiating a reduce_window whose computation is a custom function is not "
            "supported; use lax.add, lax.mul, lax.max or lax.min as the computation (reduce_window_sum/max/min), "
            "or write the windowed reduction with differentiable operations")
    if 0 in out_aval.shape:
        return out, Zero(tangent_aval(out_aval))
    combiner = {"add": elementwise.add_p, "mul": elementwise.mul_p, "max": elementwise.max_p,
                "min": elementwise.min_p}[computation]
    operand_tangent, init_tangent = (ad.instantiate(t) for t in tangents)
    # XLA combines the initial value once per window and skips padding and base-dilation holes (the
    # StableHLO spec would fill them with the initial value): they hold the combiner's identity here.
    dtype = get_aval_of(operand).dtype
    values = _window_patches(operand, identity_of({"add": "sum", "mul": "prod"}.get(computation, computation), dtype),
                             stacked=False, **params)
    tangent_values = _window_patches(operand_tangent, np.zeros((), dtype), stacked=False, **params)
    value = broadcast_in_dim(init_value, out_aval.shape, ())
    tangent = broadcast_in_dim(init_tangent, out_aval.shape, ())
    for element, element_tangent in zip(values, tangent_values):
        value, tangent = jvp_rules[combiner]((value, element), (tangent, element_tangent))
    return out, ad.instantiate(tangent)


jvp_rules[reduce_window_p] = _reduce_window_jvp


# --- batching rules -----------------------------------------------------------------------------------------------
# As in JAX, the batch dimension gets a window of size 1 (stride 1, no padding, no dilation): each example's
# windows stay within the example.
from ..core.primitives import batching_rules  # noqa: E402


def _window_params_with_batch(dim, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    def insert(values, value):
        return tuple(values[:dim]) + (value,) + tuple(values[dim:])

    return dict(window_dimensions=insert(window_dimensions, 1), window_strides=insert(window_strides, 1),
                padding=insert(padding, (0, 0)), base_dilation=insert(base_dilation, 1),
                window_dilation=insert(window_dilation, 1))


def _batch_monoid_window(primitive):
    def rule(values, dims, **params):
        (operand,), (dim,) = values, dims
        return primitive.bind(operand, **_window_params_with_batch(dim, **params)), dim

    batching_rules[primitive] = rule


for _primitive in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _batch_monoid_window(_primitive)


def _reduce_window_batching(values, dims, computation, **params):
    (operand, init_value), (dim, init_dim) = values, dims
    if init_dim is not None:
        raise NotImplementedError("reduce_window: vmap over init_value is not supported (as in JAX); pass an "
                                  "init_value that is the same for every example")
    return reduce_window_p.bind(operand, init_value, computation=computation,
                                **_window_params_with_batch(dim, **params)), dim


batching_rules[reduce_window_p] = _reduce_window_batching
