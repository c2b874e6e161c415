"""float0 values at the boundary of compiled programs: they never reach XLA.

float0 is the dtype of the tangents and cotangents of integer and bool values; it holds no data, and XLA has no
such type. As in jax, a compiled program (of `jit` or `pmap`) whose arguments or results are float0 is compiled
with bool stand-ins in their places: the body reads a host float0 constant instead of a float0 argument (the
argument itself, passed as bool zeros, goes unread), and a float0 result is computed as bool zeros that are
dropped for a numpy float0 array made on the host (jax returns numpy float0 arrays too). Argument and result
positions are kept, so that donation, shardings and the caller's flattening stay as they are.
"""

import numpy as np

from ..core import dtypes
from ..core.ir import ClosedProgram, Program, Var


def _is_float0(aval):
    return aval.dtype == dtypes.float0


def has_float0_boundary(program) -> bool:
    """Whether any argument or result of `program` is float0."""
    return any(_is_float0(v.aval) for v in program.invars) or any(_is_float0(v.aval) for v in program.outvars)


def _bool_of(aval):
    return aval.update(dtype=np.dtype(np.bool_), weak_type=False)


def float0_as_bool(closed: ClosedProgram) -> ClosedProgram:
    """`closed` with bool in place of its float0 arguments and results (see the module's docstring)."""
    program = closed.program
    constvars, consts, invars, outvars = list(program.constvars), list(closed.consts), [], []
    for var in program.invars:
        if _is_float0(var.aval):
            constvars.append(var)  # the body reads host zeros (a `false` constant once lowered)
            consts.append(np.zeros(var.aval.shape, dtypes.float0))
            var = Var(_bool_of(var.aval))  # what the caller passes, unread
        invars.append(var)
    for out in program.outvars:
        if _is_float0(out.aval):
            out = Var(_bool_of(out.aval))
            constvars.append(out)
            consts.append(np.zeros(out.aval.shape, np.bool_))
        outvars.append(out)
    return ClosedProgram(Program(constvars, invars, outvars, program.equations), consts)


def bool_arguments(values, avals):
    """The call's arguments with bool zeros for its float0 ones."""
    return [np.zeros(aval.shape, np.bool_) if _is_float0(aval) else value for value, aval in zip(values, avals)]


def float0_results(outputs, avals):
    """The call's results with numpy float0 zeros for its float0 ones."""
    return [np.zeros(aval.shape, dtypes.float0) if _is_float0(aval) else out for out, aval in zip(outputs, avals)]


class Float0Executable:
    """An executable of `float0_as_bool(closed)`, called as one of `closed` would be (by jit's call path)."""

    def __init__(self, executable, closed: ClosedProgram):
        self.executable = executable
        self.in_avals = closed.program.in_avals
        self.out_avals = closed.program.out_avals

    def run_on(self, values):
        return self.executable.run_on(bool_arguments(values, self.in_avals))

    def wrap_outputs(self, raw_outputs):
        return float0_results(self.executable.wrap_outputs(raw_outputs), self.out_avals)

    def __call__(self, *args):
        return float0_results(self.executable(*bool_arguments(args, self.in_avals)), self.out_avals)

    def __getattr__(self, name):  # (its text, device and the rest are the compiled executable's)
        return getattr(self.executable, name)


def compile_with_float0(compile_program, closed: ClosedProgram, *args, **kwargs):
    """`compile_program(closed, *args, **kwargs)`, through bool stand-ins where `closed` has float0 arguments or
    results."""
    if not has_float0_boundary(closed.program):
        return compile_program(closed, *args, **kwargs)
    return Float0Executable(compile_program(float0_as_bool(closed), *args, **kwargs), closed)
