"""Primitives: named operations with an abstract evaluation rule, bound through the trace stack.

Also owns the rule tables that the interpreters read (jvp, transpose, batching), so that a primitive's
module in `lax/` can register every rule beside its definition without importing the interpreters.
"""

from . import ir
from . import trace as trace_module

# primitive -> rule. Filled by `lax/` modules beside each primitive; read by `transforms/`.
jvp_rules = {}
transpose_rules = {}
batching_rules = {}


class Primitive:
    """A named operation. Applying it (`bind`) goes to the innermost active interpreter."""

    multiple_results = False

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval_rule = None
        self.impl_rule = None

    def __repr__(self):
        return self.name

    def def_abstract_eval(self, rule):
        """`rule(*avals, **params)` -> aval (or list of avals for multiple results); raises TypeError."""
        self.abstract_eval_rule = rule
        return rule

    def def_impl(self, rule):
        """A Python implementation on concrete values, used instead of compiling the primitive alone."""
        self.impl_rule = rule
        return rule

    def abstract_eval(self, *avals, **params):
        if self.abstract_eval_rule is None:
            raise NotImplementedError(f"primitive {self.name} has no abstract evaluation rule")
        return self.abstract_eval_rule(*avals, **params)

    def bind(self, *args, **params):
        return trace_module.bind(self, args, params)

    def get_bind_params(self, params):
        """The parameters that bind an equation of this primitive again, given the equation's (jax's name): the
        same ones, as numax's equations keep the parameters they were bound with."""
        return dict(params)

    _holds_programs = None  # found on the first call of named_axes: whether params hold programs

    def named_axes(self, params) -> frozenset:
        """The axis names this application works over: those of the collectives in the programs it holds
        (collectives themselves say theirs). An interpreter binding one of them (a vmap's axis_name) must
        process the application even when none of the operands is its own."""
        if self._holds_programs is False:
            return frozenset()
        programs = [p for value in params.values() for p in ir.programs_in(value)]
        if self._holds_programs is None:
            self._holds_programs = bool(programs)
        return frozenset().union(*[ir.named_axes(p) for p in programs])

    def impl(self, *args, **params):
        if self.impl_rule is not None:
            return self.impl_rule(*args, **params)
        return trace_module.eager_executor(self, args, params)
