"""`jax.interpreters.ad`: numax's differentiation rule tables and helpers under jax's names. The tables are the
ones numax's own primitives fill (core/primitives.py) and its interpreters read, and numax's rules have jax's
signatures: a JVP rule is `rule(primals, tangents, **params) -> (primal_out, tangent_out)` (tangents may be
`Zero`), a transpose rule `rule(cotangent, *inputs, **params)` (linear inputs are `UndefinedPrimal`s).
`deflinear` and `defbilinear` take jax's forms of transpose rules and store numax's forms of them. A JVP rule
stored through `primitive_jvps` gets its primals and tangents as tuples, as jax passes them."""

from numax.core.ad_util import UndefinedPrimal, Zero
from numax.core.ad_util import is_undefined as is_undefined_primal
from numax.core.primitives import jvp_rules as _jvp_rules
from numax.core.primitives import transpose_rules as primitive_transposes
from numax.lax import ad as _lax_ad
from numax.lax.ad import add_tangents, defjvp, defjvp2, zeros_like_aval
from numax.lax.ad import deflinear as deflinear2  # (jax's deflinear2: the transpose rule sees the inputs)
from numax.lax.ad import instantiate as instantiate_zeros
from numax.transforms.jvp import JVPTrace, JVPTracer

from . import RuleTableView

__all__ = ["JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_tangents", "defbilinear", "defjvp", "defjvp2",
           "deflinear", "deflinear2", "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "primitive_jvps", "primitive_transposes", "zeros_like_aval"]


class _JVPRuleTable(RuleTableView):
    """numax's table of JVP rules (the one its interpreters read); a rule stored through it gets its primals and
    tangents as tuples, as jax passes them (numax's own rules get lists)."""

    def wrap(self, rule):
        def numax_rule(primals, tangents, **params):
            return rule(tuple(primals), tuple(tangents), **params)

        return numax_rule


primitive_jvps = _JVPRuleTable(_jvp_rules)


def deflinear(primitive, transpose_rule):
    """A primitive linear in all its inputs, whose transpose is `transpose_rule(cotangent, **params)` (the inputs
    unseen): its JVP applies it to the tangents; a symbolic-zero cotangent transposes to zeros."""

    def transpose(cotangent, *inputs, **params):
        if type(cotangent) is Zero:
            return [Zero(x.aval.to_tangent_aval()) if is_undefined_primal(x) else None for x in inputs]
        return transpose_rule(cotangent, **params)

    _lax_ad.deflinear(primitive, transpose)


def defbilinear(primitive, lhs_rule, rhs_rule):
    """A primitive of two inputs, linear in each for the other fixed: `lhs_rule(cotangent, x, y, **params)` is the
    cotangent of `x` (an UndefinedPrimal) for a known `y`, `rhs_rule` likewise for `y`."""
    _lax_ad.defbilinear(primitive,
                        lambda ct, x_aval, y, **params: lhs_rule(ct, UndefinedPrimal(x_aval), y, **params),
                        lambda ct, x, y_aval, **params: rhs_rule(ct, x, UndefinedPrimal(y_aval), **params))


def get_primitive_transpose(primitive):
    """The transpose rule of `primitive`; NotImplementedError when it has none."""
    try:
        return primitive_transposes[primitive]
    except KeyError:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for '{primitive}' not "
                                  "implemented") from None
