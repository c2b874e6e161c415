"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin and cumlogsumexp.

Each lowers to a `stablehlo.reduce_window` whose window spans the whole axis, padded by `size - 1`
identities before the data (after it, when reversed). XLA rewrites such windows into a logarithmic-depth
scan, so this is efficient, and integer results are exact.
"""

import numpy as np

from ..core.primitives import Primitive
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from . import typing as T
from .reductions import identity_of
from .windows import lower_reduce_window

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
           "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _define_cumulative(name, kind, allowed):
    primitive = Primitive(name)

    def abstract_eval(operand, axis, reverse):
        T.check_dtype(name, operand, allowed)
        if not 0 <= axis < operand.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape {operand.shape}")
        return operand

    def lower(ctx, operand, axis, reverse):
        aval = ctx.avals_in[0]
        rank, size = aval.ndim, aval.shape[axis]
        if size == 0:
            return operand  # StableHLO has no empty windows; there is nothing to scan
        window = [1] * rank
        window[axis] = size
        padding = [(0, 0)] * rank
        padding[axis] = (0, size - 1) if reverse else (size - 1, 0)
        identity = (np.array(-np.inf, aval.dtype) if kind == "logaddexp"
                    else identity_of({"add": "sum", "mul": "prod"}.get(kind, kind), aval.dtype))
        init = ctx.builder.constant(identity)
        return lower_reduce_window(ctx, operand, init, kind, window_dimensions=tuple(window),
                                   window_strides=(1,) * rank, padding=tuple(padding), base_dilation=(1,) * rank,
                                   window_dilation=(1,) * rank)

    primitive.def_abstract_eval(abstract_eval)
    register_lowering(primitive, lower)

    def wrapper(operand, axis=0, reverse=False):
        aval = get_aval_of(operand)
        if aval.ndim == 0:
            raise ValueError(f"{name} needs an operand of rank at least 1, got a 0-d operand")
        axis = T.normalize_axis(axis, aval.ndim)
        return primitive.bind(operand, axis=axis, reverse=bool(reverse))

    wrapper.__name__ = name
    wrapper.__doc__ = (f"The running {kind} of `operand` along `axis` (from the end, when `reverse`); the result "
                       "has the operand's shape.")
    return primitive, wrapper


cumsum_p, cumsum = _define_cumulative("cumsum", "add", T.numeric_dtypes)
cumprod_p, cumprod = _define_cumulative("cumprod", "mul", T.numeric_dtypes)
_ordered_dtypes = T.bool_or_integer + T.float_dtypes
cummax_p, cummax = _define_cumulative("cummax", "max", _ordered_dtypes)
cummin_p, cummin = _define_cumulative("cummin", "min", _ordered_dtypes)
cumlogsumexp_p, cumlogsumexp = _define_cumulative("cumlogsumexp", "logaddexp", T.float_dtypes)
