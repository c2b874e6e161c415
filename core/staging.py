"""Staging: tracing a Python function into a Program.

`ProgramTrace` is the interpreter that records each primitive as an equation instead of running it.
It sits on the trace stack as the dynamic trace, so every primitive applied while it is active is
recorded, even one whose operands are all constants (omnistaging).
"""

import numpy as np

from . import dtypes
from .avals import ShapedArray, get_aval
from .collector import full_collections_deferred
from .ir import ClosedProgram, Equation, Literal, Program, Var
from .trace import Trace, Tracer, new_main


class ProgramTracer(Tracer):
    """A value of the program being traced. An argument laid out over Explicit mesh axes keeps that layout in
    `explicit_sharding` (jax's sharding-in-types for a jit's arguments: what `typeof` shows and what shard_map
    infers its in_specs from); the values computed from it carry none."""

    __slots__ = ("_aval", "explicit_sharding", "_atom")

    def __init__(self, trace, aval, atom):
        self._trace = trace
        self._aval = aval
        self.explicit_sharding = None
        self._atom = atom  # the program's Var or Literal for this value

    @property
    def aval(self):
        return self._aval


class ProgramBuilder:
    """Collects the equations, constants and literals of one program being traced."""

    def __init__(self):
        self.equations = []
        self.const_vars = {}  # id(value) -> Var
        self.const_values = []  # (Var, value), in order of capture

    def new_tracer(self, trace, aval, atom):
        # The atom lives on the tracer (not in a table by id, which had to keep every tracer alive until the program
        # was built: a heap the garbage collector walks again and again while a large program is traced)
        return ProgramTracer(trace, aval, atom)

    def new_arg(self, trace, aval):
        return self.new_tracer(trace, aval, Var(aval))

    def const_tracer(self, trace, value):
        var = self.const_vars.get(id(value))
        if var is None:
            var = self.const_vars[id(value)] = Var(get_aval(value))
            self.const_values.append((var, value))
        return self.new_tracer(trace, var.aval, var)

    @staticmethod
    def atom(tracer):
        return tracer._atom

    def build(self, in_tracers, out_tracers):
        invars = [self.atom(t) for t in in_tracers]
        outvars = [self.atom(t) for t in out_tracers]
        constvars = [var for var, _ in self.const_values]
        consts = [value for _, value in self.const_values]
        return Program(constvars, invars, outvars, self.equations), consts


def literal_value(value):
    """The value as a Literal if it is a scalar constant that belongs in the program text, else None."""
    kind = type(value)
    if kind in dtypes.python_scalar_types:
        return Literal(value, get_aval(value))  # get_aval rejects ints too large for the default int type
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return _scalar_literal(value, get_aval(value))
    aval = getattr(value, "aval", None)
    if isinstance(aval, ShapedArray) and not aval.shape and not isinstance(value, Tracer):
        # A concrete 0-d device array (a scalar made into an array before tracing reached it): inlined
        # like a scalar, as JAX inlines scalar constants, keeping its weak type.
        return _scalar_literal(np.asarray(value), aval, operand=value)
    return None


def _scalar_literal(value, aval, operand=None):
    host = np.asarray(value, aval.dtype)
    return Literal(host[()] if aval.dtype == dtypes.bfloat16 else host.item(), aval,
                   host[()] if operand is None else operand)


# Installed by lax.collectives when a shard_map first types its values by the mesh axes they vary over
# (check_vma=True): `vma_rule(trace, primitive, tracers, params) -> (tracers, out_vma)` may stage `pvary`s
# that make the operands agree and names the outputs' varying axes (None: the abstract evaluation says).
# None until then, so that programs traced without shard_map pay one test per equation.
vma_rule = None


class ProgramTrace(Trace):
    """Records primitives into the builder held in `main.global_data`."""

    __slots__ = ()

    @property
    def builder(self) -> ProgramBuilder:
        return self.main.global_data

    def pure(self, value):
        literal = literal_value(value)
        if literal is not None:
            return self.builder.new_tracer(self, literal.aval, literal)
        return self.builder.const_tracer(self, value)

    def lift(self, tracer):
        return self.builder.const_tracer(self, tracer)

    def process_primitive(self, primitive, tracers, params):
        builder = self.builder
        out_vma = None
        if vma_rule is not None:
            tracers, out_vma = vma_rule(self, primitive, tracers, params)
        in_avals = [t.aval for t in tracers]
        out = primitive.abstract_eval(*in_avals, **params)
        out_avals = out if primitive.multiple_results else [out]
        if out_vma:
            out_avals = [aval.update(vma=out_vma) for aval in out_avals]
        out_tracers = [builder.new_arg(self, aval) for aval in out_avals]
        builder.equations.append(
            Equation(primitive, [t._atom for t in tracers], [t._atom for t in out_tracers], params)
        )
        return out_tracers if primitive.multiple_results else out_tracers[0]


def trace_to_program(flat_fun, in_avals, in_explicit_shardings=None):
    """Traces `flat_fun(*tracers) -> list of outputs` into (Program, const values).

    Const values are the arrays the function closed over, and tracers of outer interpreters it used.
    `in_explicit_shardings` (one per argument, or None) are the arguments' layouts over Explicit mesh axes.
    """
    builder = ProgramBuilder()
    with full_collections_deferred(), new_main(ProgramTrace, builder, dynamic=True) as main:
        trace = ProgramTrace(main)
        in_tracers = [builder.new_arg(trace, aval) for aval in in_avals]
        for tracer, sharding in zip(in_tracers, in_explicit_shardings or ()):
            tracer.explicit_sharding = sharding
        outs = flat_fun(*in_tracers)
        out_tracers = [trace.full_raise(out) for out in outs]
        program, consts = builder.build(in_tracers, out_tracers)
    return program, consts


def trace_to_closed_program(flat_fun, in_avals):
    program, consts = trace_to_program(flat_fun, in_avals)
    return ClosedProgram(program, consts)


def hoist_tracer_consts(program: Program, consts):
    """Splits consts into concrete ones (kept closed over) and tracers (made leading arguments).

    Returns (ClosedProgram taking the tracer consts first, then the original arguments; tracer consts).
    """
    keep_vars, keep_values, hoisted_vars, hoisted_values = [], [], [], []
    for var, value in zip(program.constvars, consts):
        if isinstance(value, Tracer):
            hoisted_vars.append(var)
            hoisted_values.append(value)
        else:
            keep_vars.append(var)
            keep_values.append(value)
    program = Program(keep_vars, hoisted_vars + program.invars, program.outvars, program.equations)
    return ClosedProgram(program, keep_values), hoisted_values
