"""Evaluating a Program by binding its equations in order, so that whatever interpreter is active
(eager execution, jvp, vmap, another staging trace) sees each primitive again."""

from .ir import Literal


def eval_program(program, consts, *args):
    """Runs `program` on `consts` and `args`; returns the list of its outputs."""
    env = {}

    def read(atom):
        return atom.operand if type(atom) is Literal else env[atom]

    if len(consts) != len(program.constvars):
        raise TypeError(f"program has {len(program.constvars)} constants, got {len(consts)} values for them")
    if len(args) != len(program.invars):
        raise TypeError(f"program takes {len(program.invars)} arguments, got {len(args)}")
    for var, value in zip(program.constvars, consts):
        env[var] = value
    for var, value in zip(program.invars, args):
        env[var] = value
    for eqn in program.equations:
        outs = eqn.primitive.bind(*(read(a) for a in eqn.inputs), **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in program.outvars]


def eval_closed_program(closed, *args):
    return eval_program(closed.program, closed.consts, *args)
