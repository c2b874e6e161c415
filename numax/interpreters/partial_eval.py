"""`jax.interpreters.partial_eval`: running a function on partly known inputs, as libraries built on jax's internals
do (flax's `nn.scan` checks that broadcast values do not depend on the loop, flax's lazy init computes variables
from inputs given only as shapes).

`trace_to_jaxpr_nounits(fun, pvals)` runs `fun` (a `linear_util.WrappedFun` of flat arguments) once. Inputs whose
`PartialVal` is known are passed as they are, so every operation that reads only known values runs now (eagerly,
or in an enclosing transformation) and Python control flow on them works; unknown inputs are tracers of a staging
trace that is not the dynamic one (as `numax.linearize` stages its tangents), so only the work that depends on
them is recorded. The recorded work is the returned jaxpr, the known values it reads its constants.

`trace_to_jaxpr_dynamic(fun, in_avals)` traces everything (numax's `trace_to_program`); `dce_jaxpr` is numax's
dead-code elimination. `JaxprTracer` and `DynamicJaxprTracer` are numax's staging tracer class, the type of the
values both functions trace with.
"""

from numax.core.avals import ShapedArray
from numax.core.dce import dce_program
from numax.core.ir import Program
from numax.core.staging import ProgramBuilder, ProgramTrace, ProgramTracer, trace_to_program
from numax.core.trace import Tracer, full_lower, get_aval_of, new_main
from numax.transforms.aot import Jaxpr

__all__ = ["DynamicJaxprTracer", "JaxprTracer", "PartialVal", "Val", "dce_jaxpr", "trace_to_jaxpr_dynamic",
           "trace_to_jaxpr_nounits"]

JaxprTracer = DynamicJaxprTracer = ProgramTracer
Val = object


class PartialVal(tuple):
    """A value that is either known, `(None, value)`, or unknown with only its abstract value, `(aval, None)`."""

    def __new__(cls, xs):
        aval, const = xs
        if (aval is None) == (const is None):
            raise ValueError(f"a PartialVal is (aval, None) or (None, value), got {xs!r}")
        return tuple.__new__(cls, (aval, const))

    @classmethod
    def known(cls, const):
        return cls((None, const))

    @classmethod
    def unknown(cls, aval):
        return cls((aval, None))

    def is_known(self):
        return self[0] is None

    def get_known(self):
        """The known value, or None when unknown."""
        return self[1] if self[0] is None else None

    def get_aval(self):
        """The abstract value: given when unknown, the known value's own otherwise."""
        return get_aval_of(self[1]) if self[0] is None else self[0]


def _as_aval(aval):
    if isinstance(aval, ShapedArray):
        return aval
    return ShapedArray(tuple(aval.shape), aval.dtype, bool(getattr(aval, "weak_type", False)))


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Runs `fun` on the partial values `pvals`. Returns (jaxpr, out_pvals, consts): `jaxpr` takes the unknown
    inputs and computes the unknown outputs, its constvars bound to `consts` (the known values it reads);
    `out_pvals` has each output's known value or, when it depends on an unknown input, its aval. `instantiate`
    (a bool, or one per output) makes known outputs unknown: outputs of the jaxpr too."""
    builder = ProgramBuilder()
    with new_main(ProgramTrace, builder) as main:
        trace = ProgramTrace(main)
        unknown_args = []
        args = []
        for pval in pvals:
            if pval.is_known():
                args.append(pval.get_known())
            else:
                tracer = builder.new_arg(trace, _as_aval(pval[0]))
                unknown_args.append(tracer)
                args.append(tracer)
        outs = [full_lower(out) for out in fun.call_wrapped(*args)]
        if isinstance(instantiate, bool):
            instantiate = [instantiate] * len(outs)

        def is_unknown(value):
            return isinstance(value, Tracer) and value._trace.main is main

        unknown_outs = [is_unknown(out) or bool(inst) for out, inst in zip(outs, instantiate)]
        out_tracers = [trace.full_raise(out) for out, unknown in zip(outs, unknown_outs) if unknown]
        program, consts = builder.build(unknown_args, out_tracers)
    out_pvals = [PartialVal.unknown(get_aval_of(out)) if unknown else PartialVal.known(out)
                 for out, unknown in zip(outs, unknown_outs)]
    return Jaxpr(program), out_pvals, consts


def trace_to_jaxpr_dynamic(fun, in_avals):
    """Traces `fun` (a WrappedFun of flat arguments) on abstract inputs: (jaxpr, out avals, consts), every
    operation staged, the arrays and outer tracers it closes over its constants."""
    program, consts = trace_to_program(fun.call_wrapped, [_as_aval(a) for a in in_avals])
    return Jaxpr(program), list(program.out_avals), consts


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
    """(the jaxpr computing only the used outputs, which inputs it still reads). `instantiate` (a bool or one
    per input) keeps inputs as used even when nothing reads them."""
    program = jaxpr.program if isinstance(jaxpr, Jaxpr) else jaxpr
    pruned, used_inputs = dce_program(program, list(used_outputs))
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(used_inputs)
    used_inputs = [used or bool(inst) for used, inst in zip(used_inputs, instantiate)]
    pruned = Program(pruned.constvars, [v for v, used in zip(pruned.invars, used_inputs) if used], pruned.outvars,
                     pruned.equations)
    return (Jaxpr(pruned) if isinstance(jaxpr, Jaxpr) else pruned), used_inputs
