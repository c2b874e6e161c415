"""Partial evaluation of programs: splitting a program into the part that can run now (its inputs are
known) and the part that must wait (it depends on unknown inputs), joined by residuals.

This is how a JVP program becomes a primal computation plus a linear tangent program (linearize), how
a jitted function differentiated in reverse mode runs its forward pass compiled, and where
`checkpoint` decides what to save and what to recompute. Primitives holding sub-programs register a
rule in `partial_eval_rules` to split themselves; any other equation with an unknown input is unknown.
"""


from ..core import caches
from ..core.dce import dce_program
from ..core.ir import ClosedProgram, Program, Var

# primitive -> rule(eqn, in_unknowns) -> (known eqn or None, unknown eqn or None, out_unknowns, residual vars)
partial_eval_rules = {}


def partial_eval_program(closed: ClosedProgram, unknowns, instantiate=False):
    """Splits `closed` by which inputs are unknown.

    Returns (known, unknown, out_unknowns, num_residuals) where
    - known: ClosedProgram(known inputs) -> (known outputs, residuals);
    - unknown: ClosedProgram(residuals, unknown inputs) -> unknown outputs;
    - out_unknowns[i]: whether output i comes from the unknown program. `instantiate` (a bool or one per
      output) asks for an output there even when it is known (it then travels as a residual).
    Cached on the program's identity and the masks."""
    n_out = len(closed.program.outvars)
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * n_out
    return _partial_eval(closed, tuple(unknowns), tuple(instantiate))


@caches.lru(maxsize=512)
def _partial_eval(closed, unknowns, instantiate):
    program = closed.program
    unknown_vars = {v for v, unknown in zip(program.invars, unknowns) if unknown}
    known_eqns, unknown_eqns = [], []
    for eqn in program.equations:
        in_unknowns = [type(a) is Var and a in unknown_vars for a in eqn.inputs]
        if not any(in_unknowns):
            known_eqns.append(eqn)
            continue
        rule = partial_eval_rules.get(eqn.primitive)
        if rule is None:
            unknown_eqns.append(eqn)
            unknown_vars.update(eqn.outvars)
            continue
        known_eqn, unknown_eqn, out_unknowns, _ = rule(eqn, in_unknowns)
        if known_eqn is not None:
            known_eqns.append(known_eqn)
        if unknown_eqn is not None:
            unknown_eqns.append(unknown_eqn)
        unknown_vars.update(v for v, unknown in zip(eqn.outvars, out_unknowns) if unknown)

    out_unknowns = tuple(type(v) is Var and v in unknown_vars or inst
                         for v, inst in zip(program.outvars, instantiate))
    constvars = set(program.constvars)

    # Residuals: known values the unknown side reads (known outputs it must produce included).
    residuals, seen = [], set()

    def need(atom):
        if type(atom) is Var and atom not in unknown_vars and atom not in constvars and atom not in seen:
            seen.add(atom)
            residuals.append(atom)

    for eqn in unknown_eqns:
        for atom in eqn.inputs:
            need(atom)
    for v, unknown in zip(program.outvars, out_unknowns):
        if unknown:
            need(v)

    known_invars = [v for v, unknown in zip(program.invars, unknowns) if not unknown]
    known_outvars = [v for v, unknown in zip(program.outvars, out_unknowns) if not unknown]
    known, _ = dce_program(Program(program.constvars, known_invars, known_outvars + residuals, known_eqns))
    unknown_invars = [v for v, unknown in zip(program.invars, unknowns) if unknown]
    unknown_outvars = [v for v, unknown in zip(program.outvars, out_unknowns) if unknown]
    unknown, _ = dce_program(Program(program.constvars, residuals + unknown_invars, unknown_outvars, unknown_eqns))
    return (_closed_with_used_consts(known, program, closed.consts),
            _closed_with_used_consts(unknown, program, closed.consts), out_unknowns, len(residuals))


def _closed_with_used_consts(program: Program, original: Program, consts):
    value_of = dict(zip(original.constvars, consts))
    return ClosedProgram(program, [value_of[v] for v in program.constvars])


