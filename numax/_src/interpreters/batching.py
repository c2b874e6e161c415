"""`jax.interpreters.batching`: numax's table of batching rules and helpers under jax's names. The table is the one
numax's own primitives fill and `vmap` reads; a rule is `rule(values, dims, **params) -> (out, out_dims)`, a dim
being the operand's batch axis or None where the operand is not batched, as in jax. A rule stored through these
tables gets the operands and their dims as tuples, as jax passes them (numax's own rules get lists).

One difference: numax's vmap calls a rule only for an application that involves a value it batches (an operand,
or a collective over its axis); jax calls a `fancy_primitive_batchers` / `axis_primitive_batchers` rule for every
application inside the vmapped function, with all dims None when nothing is batched. numax binds those directly,
which is what jax's own proxy for `primitive_batchers` does and what such rules do (equinox's among them).

Rules that need the vmap's axis are registered through `fancy_primitive_batchers` (`rule(axis_data, values, dims,
**params)`, `axis_data` with `.size` and `.name`) or jax's older `axis_primitive_batchers` (`rule(axis_size,
axis_name, trace_type, values, dims, **params)`, `trace_type` always None); both store into the same table."""

from numax.core.primitives import batching_rules as _batching_rules
from numax.lax.batching import defbroadcasting, defvectorized

from . import RuleTableView

__all__ = ["axis_primitive_batchers", "defbroadcasting", "defvectorized", "fancy_primitive_batchers", "not_mapped",
           "primitive_batchers"]

not_mapped = None  # the batch dim of an operand or result that has none


class _RuleTable(RuleTableView):
    """numax's batching table seen through jax's form of rules: reading gives the stored rules, storing wraps a
    rule into numax's form (`adapt(rule, axis, values, dims, params)`; numax calls a rule marked `needs_axis` with
    the vmap's axis as `axis=`)."""

    def __init__(self, adapt, needs_axis):
        super().__init__(_batching_rules)
        self._adapt, self._needs_axis = adapt, needs_axis

    def wrap(self, rule):
        if self._needs_axis:
            def numax_rule(values, dims, *, axis, **params):
                return self._adapt(rule, axis, tuple(values), tuple(dims), params)

            numax_rule.needs_axis = True
        else:
            def numax_rule(values, dims, **params):
                return rule(tuple(values), tuple(dims), **params)

        return numax_rule


primitive_batchers = _RuleTable(None, needs_axis=False)
fancy_primitive_batchers = _RuleTable(lambda rule, axis, values, dims, params: rule(axis, values, dims, **params),
                                      needs_axis=True)
axis_primitive_batchers = _RuleTable(
    lambda rule, axis, values, dims, params: rule(axis.size, axis.name, None, values, dims, **params), needs_axis=True)
