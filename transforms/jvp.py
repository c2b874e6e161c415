"""Forward-mode differentiation: the JVP interpreter.

A `JVPTracer` carries a primal value and its tangent (or a symbolic `Zero`); every primitive applied
to one goes through the primitive's JVP rule. Each `jvp` pushes its own main trace, so the
perturbations of nested differentiation live at different levels and never mix.
"""


import numpy as np

from ..core import caches
from ..core.ad_util import Zero, tangent_aval
from ..core.evaluation import eval_closed_program
from ..core.ir import ClosedProgram
from ..core.primitives import jvp_rules
from ..core.sharding import explicit_sharding_of
from ..core.staging import trace_to_closed_program
from ..core.trace import Trace, Tracer, full_lower, get_aval_of, new_main
from ..lax.ad import instantiate as instantiate_zeros
from ..lax.conversions import convert_element_type


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval_of(self.primal)

    @property
    def explicit_sharding(self):  # (the primal's layout: see core/staging.py's ProgramTracer)
        return explicit_sharding_of(self.primal)

    def full_lower(self):
        if type(self.tangent) is Zero:
            return full_lower(self.primal)
        return self

    def to_concrete_value(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal if hasattr(primal, "__array__") else np.asarray(primal)


class JVPTrace(Trace):
    __slots__ = ()

    def pure(self, value):
        return JVPTracer(self, value, Zero(tangent_aval(get_aval_of(value))))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [self.pure(o) for o in out]
            return self.pure(out)
        rule = jvp_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"differentiation rule for '{primitive.name}' not implemented")
        primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
        return JVPTracer(self, primal_out, tangent_out)


def jvp_flat(flat_fun, primals, tangents):
    """Runs `flat_fun(*inputs) -> list` on primals perturbed by tangents (Zeros allowed).

    Returns (primal outputs, tangent outputs, with Zeros where the output does not depend on them)."""
    with new_main(JVPTrace) as main:
        trace = JVPTrace(main)
        inputs = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = [trace.full_raise(o) for o in flat_fun(*inputs)]
        return [o.primal for o in outs], [o.tangent for o in outs]


def instantiate_tangent(tangent):
    """A tangent as an array: a symbolic zero becomes zeros of its type, weakly typed where its type is (as in
    JAX, the tangent of a weak output that does not depend on the inputs is weak, like the output)."""
    value = instantiate_zeros(tangent)
    if type(tangent) is Zero and tangent.aval.weak_type:
        return convert_element_type(value, tangent.aval.dtype, weak_type=True)
    return value


def jvp_program(closed: ClosedProgram, nonzeros, instantiate=False):
    """The JVP of a closed program as a program: it takes the primals, then the tangents of the inputs
    marked in `nonzeros`, and returns the primal outputs, then the output tangents that are not zero or
    that `instantiate` (a bool, or one per output) asks for (zeros materialized).

    Returns (program, mask of the output tangents that are not symbolically zero). Cached: a jitted function
    differentiated in a loop gets the same program each time, so its executable is compiled once."""
    n_out = len(closed.program.outvars)
    instantiate = (instantiate,) * n_out if isinstance(instantiate, bool) else tuple(instantiate)
    return _jvp_program(closed, tuple(nonzeros), instantiate)


@caches.lru(maxsize=512)
def _jvp_program(closed, nonzeros, instantiate):
    in_avals = closed.program.in_avals
    tangent_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    out_nonzeros = []

    def traced(*args):
        primals, given = args[:len(in_avals)], iter(args[len(in_avals):])
        tangents = [next(given) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        primal_out, tangent_out = jvp_flat(lambda *xs: eval_closed_program(closed, *xs), primals, tangents)
        out_nonzeros[:] = [type(t) is not Zero for t in tangent_out]
        return list(primal_out) + [instantiate_tangent(t) for t, inst in zip(tangent_out, instantiate)
                                   if inst or type(t) is not Zero]

    program = trace_to_closed_program(traced, list(in_avals) + tangent_avals)
    return program, tuple(out_nonzeros)
