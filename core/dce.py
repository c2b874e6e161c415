"""Dead-code elimination on Programs: drop equations whose outputs nobody uses."""

from .ir import Literal, Program, all_equations, sub_programs


def dce_program(program: Program, used_outputs=None):
    """Returns (program keeping only the used outputs and the work they need, used-input mask).

    Equations with side effects are always kept: those of effectful primitives (`primitive.effectful`)
    and those holding a sub-program with such an equation (a `jit` whose body calls `debug_callback`).
    """
    if used_outputs is None:
        used_outputs = [True] * len(program.outvars)
    outvars = [v for v, used in zip(program.outvars, used_outputs) if used]
    kept, live = live_equations(program.equations, outvars)
    used_inputs = [v in live for v in program.invars]
    constvars = [v for v in program.constvars if v in live]
    return Program(constvars, program.invars, outvars, kept), used_inputs


def live_equations(equations, outvars):
    """(the equations `outvars` need, and those with side effects, in order; the set of values they read)."""
    live = {v for v in outvars if type(v) is not Literal}
    kept = []
    for eqn in reversed(equations):
        if any(v in live for v in eqn.outvars) or has_effects(eqn):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if type(a) is not Literal)
    kept.reverse()
    return kept, live


def has_effects(eqn) -> bool:
    """True when running the equation does something besides computing its outputs."""
    if getattr(eqn.primitive, "effectful", False):
        return True
    return any(getattr(inner.primitive, "effectful", False) for p in sub_programs(eqn) for inner in all_equations(p))
