"""What every primitive's differentiation rules are written with: helpers that register JVP and
transpose rules in the tables of `core.primitives`, symbolic-zero arithmetic on tangents, and the two
primitives that exist for autodiff itself (`add_any`, which sums tangents and cotangents, and
`stop_gradient`).

A JVP rule is `rule(primals, tangents, **params) -> (primal_out, tangent_out)`, where tangents may be
`Zero`s. A transpose rule is `rule(cotangent, *inputs, **params) -> cotangents of inputs`, where the
linear inputs are `UndefinedPrimal`s and a `None` or `Zero` cotangent means "nothing flows there".
"""

import numpy as np

from ..core import dtypes
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import get_aval_of
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from . import typing as T

__all__ = ["stop_gradient"]


# Rule helpers import other lax modules inside functions: those modules import this one at load time.
# --- tangent arithmetic ----------------------------------------------------------------------------------
def zeros_like_aval(aval: ShapedArray):
    """A materialized zero of type `aval` (a host float0 array for integer tangents)."""
    from .shapes import broadcast_in_dim_p  # lax modules import this one to register their rules

    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    return broadcast_in_dim_p.bind(np.zeros((), aval.dtype), shape=aval.shape, broadcast_dimensions=())


def instantiate(tangent):
    return zeros_like_aval(tangent.aval) if type(tangent) is Zero else tangent


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return add_any_p.bind(a, b)


def broadcast_tangent(tangent, shape):
    """A tangent of an elementwise operand stretched to the operation's output shape."""
    from .shapes import broadcast_in_dim

    if type(tangent) is Zero:
        return Zero(tangent.aval.update(shape=shape))
    current = get_aval_of(tangent).shape
    if current == shape:
        return tangent
    dims = tuple(range(len(shape) - len(current), len(shape)))
    return broadcast_in_dim(tangent, shape, dims)


def unbroadcast(cotangent, aval: ShapedArray):
    """The cotangent of an elementwise operand of type `aval` from one of the (broadcast) output's."""
    from .reductions import reduce_sum
    from .shapes import reshape

    if type(cotangent) is Zero:
        return Zero(tangent_aval(aval))
    shape = get_aval_of(cotangent).shape
    if shape == aval.shape:
        return cotangent
    if not aval.shape:
        return reduce_sum(cotangent, tuple(range(len(shape))))
    stretched = tuple(i for i, (d, c) in enumerate(zip(aval.shape, shape)) if d == 1 and c != 1)
    return reshape(reduce_sum(cotangent, stretched), aval.shape)


def _out_aval(value):
    return tangent_aval(get_aval_of(value))


# --- registering rules ------------------------------------------------------------------------------------
def defjvp(primitive, *derivatives):
    """JVP from one function per input: `derivative(tangent, *primals, **params)` is that input's
    contribution to the output tangent (None for an input that is not differentiable)."""

    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        return out, _sum_contributions(derivatives, tangents, out, (), primals, params)

    jvp_rules[primitive] = rule


def defjvp2(primitive, *derivatives):
    """Like `defjvp`, with the primal output passed too: `derivative(tangent, out, *primals, **params)`."""

    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        return out, _sum_contributions(derivatives, tangents, out, (out,), primals, params)

    jvp_rules[primitive] = rule


def _sum_contributions(derivatives, tangents, out, extra, primals, params):
    out_aval = _out_aval(out)
    total = Zero(out_aval)
    for derivative, tangent in zip(derivatives, tangents):
        if derivative is None or type(tangent) is Zero:
            continue
        contribution = derivative(tangent, *extra, *primals, **params)
        total = add_tangents(total, broadcast_tangent(contribution, out_aval.shape))
    return total


def defjvp_zero(primitive):
    """The output does not depend differentiably on the inputs (comparisons, integer ops, argmax...)."""

    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(_out_aval(o)) for o in out]
        return out, Zero(_out_aval(out))

    jvp_rules[primitive] = rule


def deflinear(primitive, transpose_rule):
    """A primitive linear in all of its inputs: its JVP applies it to the tangents."""

    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return out, Zero(_out_aval(out))
        return out, primitive.bind(*(instantiate(t) for t in tangents), **params)

    jvp_rules[primitive] = rule
    transpose_rules[primitive] = transpose_rule


def deflinear_in(primitive, linear_arguments, transpose_rule):
    """A primitive linear in the inputs at `linear_arguments` jointly, the others held fixed (pad in its
    operand and padding value; dynamic_slice in its operand, with indices fixed)."""

    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(type(tangents[i]) is Zero for i in linear_arguments):
            return out, Zero(_out_aval(out))
        args = [instantiate(tangents[i]) if i in linear_arguments else p for i, p in enumerate(primals)]
        return out, primitive.bind(*args, **params)

    jvp_rules[primitive] = rule
    transpose_rules[primitive] = transpose_rule


def defbilinear(primitive, lhs_transpose, rhs_transpose):
    """A primitive linear in each of its two inputs separately (mul, dot_general, convolution).

    `lhs_transpose(ct, lhs_aval, rhs, **params)` is the cotangent of the left input for a fixed right one;
    `rhs_transpose(ct, lhs, rhs_aval, **params)` likewise for the right."""

    def rule(primals, tangents, **params):
        lhs, rhs = primals
        t_lhs, t_rhs = tangents
        out = primitive.bind(lhs, rhs, **params)
        out_aval = _out_aval(out)
        total = Zero(out_aval)
        if type(t_lhs) is not Zero:
            total = add_tangents(total, broadcast_tangent(primitive.bind(t_lhs, rhs, **params), out_aval.shape))
        if type(t_rhs) is not Zero:
            total = add_tangents(total, broadcast_tangent(primitive.bind(lhs, t_rhs, **params), out_aval.shape))
        return out, total

    def transpose(ct, lhs, rhs, **params):
        if is_undefined(lhs) and is_undefined(rhs):
            raise TypeError(f"{primitive.name} is not linear in both of its inputs at once (transposing it)")
        if type(ct) is Zero:
            return [None, None]
        if is_undefined(lhs):
            return [lhs_transpose(ct, lhs.aval, rhs, **params), None]
        return [None, rhs_transpose(ct, lhs, rhs.aval, **params)]

    jvp_rules[primitive] = rule
    transpose_rules[primitive] = transpose


# --- add_any: the sum of two tangents or cotangents ----------------------------------------------------------
add_any_p = Primitive("add_any")


def _add_any_abstract_eval(x, y):
    if x.shape != y.shape or x.dtype != y.dtype:
        raise TypeError(f"add_any requires arguments of one type, got {T.describe([x, y])}")
    return x.update(weak_type=x.weak_type and y.weak_type)


add_any_p.def_abstract_eval(_add_any_abstract_eval)
register_lowering(add_any_p, lambda ctx, x, y: ctx.builder.op1("stablehlo.add", [x, y], aval_type(ctx.aval_out)))
batching_rules[add_any_p] = lambda values, dims: _batched_add_any(values, dims)
deflinear(add_any_p, lambda ct, x, y: [unbroadcast(ct, x.aval) if is_undefined(x) else None,
                                       unbroadcast(ct, y.aval) if is_undefined(y) else None])


def _batched_add_any(values, dims):
    from .batching import axis_size_of, batch_at

    if dims[0] == dims[1]:
        return add_any_p.bind(*values), dims[0]
    size = axis_size_of(values, dims)
    return add_any_p.bind(*(batch_at(v, d, size, 0) for v, d in zip(values, dims))), 0


# --- stop_gradient -------------------------------------------------------------------------------------------
stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
register_lowering(stop_gradient_p, lambda ctx, x: x)
defjvp_zero(stop_gradient_p)
batching_rules[stop_gradient_p] = lambda values, dims: (stop_gradient_p.bind(*values), dims[0])
polymorphic_primitives.update((add_any_p, stop_gradient_p))


def stop_gradient(x):
    """`x` itself, seen by differentiation as a constant: no gradient flows through it. Any pytree."""
    from ..core import pytree

    def stop(leaf):
        aval = get_aval_of(leaf)
        if not dtypes.is_inexact(aval.dtype):
            return leaf
        return stop_gradient_p.bind(leaf)

    return pytree.tree_map(stop, x)


