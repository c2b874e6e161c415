"""Linearization: the JVP of a function with its tangent half staged into a linear program.

The primal computation runs as usual (eagerly, or into an enclosing jit), while every operation on
tangents is recorded by a staging trace that is *not* the dynamic trace, so that only tangent work
lands in it. Primal values the tangent work reads become the linear program's constants: the
residuals of reverse mode. Python control flow on primal values keeps working, as in JAX's grad.
"""

from ..core.ad_util import UndefinedPrimal, Zero, is_differentiable, tangent_aval
from ..core.dce import dce_program
from ..core.evaluation import eval_program
from ..core.staging import ProgramBuilder, ProgramTrace
from ..core.trace import get_aval_of, new_main
from ..lax.ad import instantiate
from .jvp import jvp_flat
from .transpose import backward_pass


class LinearFunction:
    """The linear map from input tangents to output tangents found by `linearize_flat`.

    `in_linear[i]` says whether input i has a tangent (integer inputs have none); `out_nonzero[j]` whether
    output j's tangent can be nonzero. The program takes the tangents of linear inputs only and returns
    those of nonzero outputs."""

    def __init__(self, program, residuals, in_avals, out_avals, in_linear, out_nonzero):
        self.program = program
        self.residuals = residuals
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.in_linear = in_linear
        self.out_nonzero = out_nonzero

    def apply(self, tangents):
        """Output tangents for input tangents (one per input; those of non-linear inputs are ignored)."""
        given = [instantiate(t) for t, linear in zip(tangents, self.in_linear) if linear]
        outs = iter(eval_program(self.program, self.residuals, *given))
        return [next(outs) if nonzero else Zero(tangent_aval(a))
                for a, nonzero in zip(self.out_avals, self.out_nonzero)]

    def transpose(self, cotangents):
        """Input cotangents (Zero where none flows, None for non-linear inputs) for output cotangents."""
        cts = [ct for ct, nonzero in zip(cotangents, self.out_nonzero) if nonzero]
        args = [_undefined(a) for a, linear in zip(self.in_avals, self.in_linear) if linear]
        cts_in = iter(backward_pass(self.program, self.residuals, args, cts))
        return [next(cts_in) if linear else None for linear in self.in_linear]


def _undefined(aval):
    return UndefinedPrimal(tangent_aval(aval))


def linearize_flat(flat_fun, primals):
    """Runs `flat_fun(*primals) -> list` and linearizes it at `primals`.

    The last `flat_fun.num_aux` outputs (an attribute the function may set while running) are auxiliary:
    returned as primals, not differentiated. Returns
    (primal outputs, LinearFunction over the other outputs)."""
    builder = ProgramBuilder()
    in_avals = [get_aval_of(p) for p in primals]
    with new_main(ProgramTrace, builder) as main:
        staging = ProgramTrace(main)
        tangent_args = [builder.new_arg(staging, tangent_aval(a)) if is_differentiable(a) else None
                        for a in in_avals]
        tangents = [t if t is not None else Zero(tangent_aval(a)) for t, a in zip(tangent_args, in_avals)]
        primal_out, tangent_out = jvp_flat(flat_fun, primals, tangents)
        num_aux = getattr(flat_fun, "num_aux", 0)
        tangent_out = tangent_out[:len(tangent_out) - num_aux]
        out_nonzero = [type(t) is not Zero for t in tangent_out]
        out_tracers = [staging.full_raise(t) for t in tangent_out if type(t) is not Zero]
        program, consts = builder.build([t for t in tangent_args if t is not None], out_tracers)
    value_of = dict(zip(program.constvars, consts))
    program, _ = dce_program(program)
    residuals = [value_of[v] for v in program.constvars]
    out_avals = [get_aval_of(p) for p in primal_out[:len(primal_out) - num_aux]]
    linear = LinearFunction(program, residuals, in_avals, out_avals, [t is not None for t in tangent_args],
                            out_nonzero)
    return primal_out, linear


