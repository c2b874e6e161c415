"""Dead-code elimination on Programs: drop equations whose outputs nobody uses."""

from .ir import Literal, Program


def dce_program(program: Program, used_outputs=None):
    """Returns (program keeping only the used outputs and the work they need, used-input mask).

    Equations of primitives with side effects (`primitive.effectful`) are always kept.
    """
    if used_outputs is None:
        used_outputs = [True] * len(program.outvars)
    outvars = [v for v, used in zip(program.outvars, used_outputs) if used]
    live = {v for v in outvars if type(v) is not Literal}
    kept = []
    for eqn in reversed(program.equations):
        if getattr(eqn.primitive, "effectful", False) or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if type(a) is not Literal)
    kept.reverse()
    used_inputs = [v in live for v in program.invars]
    constvars = [v for v in program.constvars if v in live]
    return Program(constvars, program.invars, outvars, kept), used_inputs
