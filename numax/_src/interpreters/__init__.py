"""`jax._src.interpreters`: the rule tables of numax's interpreters under jax's names (`ad`, `batching`) and the
registration of lowering rules written against jax's API (`mlir`). `numax.interpreters` re-exports them."""

import collections.abc


class RuleTableView(collections.abc.MutableMapping):
    """One of numax's rule tables (primitive -> rule) as jax's dict of rules: storing a rule wraps it into numax's
    calling form (`wrap`, which marks the wrapper with `.jax_rule`); reading gives back the rule as it was stored."""

    def __init__(self, table):
        self._table = table

    def wrap(self, rule):
        raise NotImplementedError

    def __setitem__(self, primitive, rule):
        numax_rule = self.wrap(rule)
        numax_rule.__name__ = getattr(rule, "__name__", "rule")
        numax_rule.jax_rule = rule
        self._table[primitive] = numax_rule

    def __getitem__(self, primitive):
        rule = self._table[primitive]
        return getattr(rule, "jax_rule", rule)

    def __delitem__(self, primitive):
        del self._table[primitive]

    def __iter__(self):
        return iter(self._table)

    def __len__(self):
        return len(self._table)
