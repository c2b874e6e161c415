"""Transposition: running a linear program backwards, from cotangents of its outputs to cotangents of
its linear inputs. Reverse-mode differentiation is linearize followed by this.

Each equation that touches a linear value is transposed by its primitive's rule; equations that do not
(computations on residuals alone) are evaluated forward first. Cotangents that are known to be zero
stay symbolic, so unused inputs cost nothing.
"""


from ..core import caches
from ..core.ad_util import UndefinedPrimal, Zero, is_undefined, tangent_aval
from ..core.ir import ClosedProgram, Literal
from ..core.primitives import transpose_rules
from ..core.staging import trace_to_closed_program
from ..lax.ad import add_tangents, instantiate


def backward_pass(program, consts, args, cotangents):
    """Cotangents of the `UndefinedPrimal`s among `args`, given the output cotangents (Zeros allowed).

    Returns one entry per argument: a cotangent (maybe Zero) for undefined ones, None for the others."""
    primal_env = {}
    linear_vars = set()

    def read(atom):
        return atom.operand if type(atom) is Literal else primal_env[atom]

    for var, value in zip(program.constvars, consts):
        primal_env[var] = value
    for var, value in zip(program.invars, args):
        if is_undefined(value):
            linear_vars.add(var)
        else:
            primal_env[var] = value

    linear_eqns = []
    for eqn in program.equations:
        if any(type(a) is not Literal and a in linear_vars for a in eqn.inputs):
            linear_eqns.append(eqn)
            linear_vars.update(eqn.outvars)
            continue
        outs = eqn.primitive.bind(*(read(a) for a in eqn.inputs), **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        primal_env.update(zip(eqn.outvars, outs))

    ct_env = {}

    def accumulate(var, ct):
        if ct is None or type(ct) is Zero:
            return
        ct_env[var] = add_tangents(ct_env[var], ct) if var in ct_env else ct

    for var, ct in zip(program.outvars, cotangents):
        if type(var) is not Literal and var in linear_vars:
            accumulate(var, ct)

    for eqn in reversed(linear_eqns):
        cts_out = [ct_env.pop(v) if v in ct_env else Zero(tangent_aval(v.aval)) for v in eqn.outvars]
        if all(type(ct) is Zero for ct in cts_out):
            continue
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(f"transpose rule for '{eqn.primitive.name}' not implemented "
                                      "(reverse-mode differentiation of a primitive that is not linear?)")
        inputs = [UndefinedPrimal(a.aval) if type(a) is not Literal and a in linear_vars else read(a)
                  for a in eqn.inputs]
        cts_in = rule(cts_out if eqn.primitive.multiple_results else cts_out[0], *inputs, **eqn.params)
        for atom, ct in zip(eqn.inputs, cts_in):
            if type(atom) is not Literal and atom in linear_vars:
                accumulate(atom, ct)

    return [(ct_env.get(var) if var in ct_env else Zero(tangent_aval(var.aval))) if is_undefined(arg) else None
            for var, arg in zip(program.invars, args)]


def transpose_program(closed: ClosedProgram, linear, nonzero_cts):
    """The transpose of a program linear in the inputs marked in `linear`, as a program: it takes the
    non-linear inputs, then the nonzero output cotangents, and returns the cotangents of the linear
    inputs (zeros materialized). Cached on the program's identity and the masks."""
    return _transpose_program(closed, tuple(linear), tuple(nonzero_cts))


@caches.lru(maxsize=512)
def _transpose_program(closed, linear, nonzero_cts):
    program = closed.program
    in_avals, out_avals = program.in_avals, program.out_avals
    fixed_avals = [a for a, is_linear in zip(in_avals, linear) if not is_linear]
    ct_avals = [tangent_aval(a) for a, nz in zip(out_avals, nonzero_cts) if nz]

    def traced(*values):
        fixed, given = iter(values[:len(fixed_avals)]), iter(values[len(fixed_avals):])
        args = [UndefinedPrimal(a) if is_linear else next(fixed) for a, is_linear in zip(in_avals, linear)]
        cts = [next(given) if nz else Zero(tangent_aval(a)) for a, nz in zip(out_avals, nonzero_cts)]
        cts_in = backward_pass(program, closed.consts, args, cts)
        return [instantiate(ct) for ct, is_linear in zip(cts_in, linear) if is_linear]

    return trace_to_closed_program(traced, fixed_avals + ct_avals)
