"""`jax._src.core` as JAX's docs and extension libraries use it, mapped onto numax's core.

What each jax name is here:
- `Primitive`: numax's own Primitive class (the one every `numax.lax` primitive is), so a primitive made here binds,
  traces and lowers exactly as numax's do; its rules go into the same tables (`numax._src.interpreters`).
- `Jaxpr`, `ClosedJaxpr`, `JaxprEqn`: what `make_jaxpr` returns (views under jax's names of numax's `Program`,
  `ClosedProgram` and `Equation`); `Var` and `Literal` are numax's IR atoms (`Literal.val` is its value).
- `eval_jaxpr` / `jaxpr_as_fun`: numax's program evaluator, binding each equation so that the active
  transformation sees it, as jax's do.
- `ShapedArray`, `Tracer`, `get_aval`, `concrete_or_error`, `InconclusiveDimensionOperation`: numax's.
"""

from numax.core.avals import InconclusiveDimensionOperation, ShapedArray
from numax.core.evaluation import eval_program
from numax.core.ir import ClosedProgram, Literal, Program, Var
from numax.core.primitives import Primitive
from numax.core.trace import Trace, Tracer, find_top_trace, get_aval_of
from numax.core.trace import concrete_or_error as _concrete_or_error
from numax.transforms.aot import ClosedJaxpr, Jaxpr, JaxprEqn

__all__ = ["ClosedJaxpr", "InconclusiveDimensionOperation", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Trace", "Tracer", "Var", "concrete_or_error", "eval_jaxpr", "find_top_trace", "get_aval",
           "jaxpr_as_fun"]


def _program_of(jaxpr):
    """numax's Program behind a jaxpr (a `Jaxpr` view or a Program itself)."""
    program = jaxpr.program if isinstance(jaxpr, Jaxpr) else jaxpr
    if not isinstance(program, Program):
        raise TypeError(f"expected a Jaxpr (as make_jaxpr(...).jaxpr gives), got {type(jaxpr).__name__}")
    return program


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """The outputs (a list) of `jaxpr` applied to `args`, its constvars bound to `consts`. Each equation is bound
    again, so the transformation or trace that is active sees every primitive. (`propagate_source_info` is
    accepted for jax's signature: numax's programs carry no source locations.)"""
    del propagate_source_info
    return eval_program(_program_of(jaxpr), consts, *args)


def jaxpr_as_fun(closed_jaxpr, *args):
    """A function of the closed jaxpr's arguments returning the list of its outputs; arguments given here come
    first (jax's function is curried: it returns a function either way)."""
    if not isinstance(closed_jaxpr, ClosedProgram):
        raise TypeError(f"jaxpr_as_fun expects a ClosedJaxpr, got {type(closed_jaxpr).__name__}")

    def fun(*more_args):
        return eval_program(closed_jaxpr.program, closed_jaxpr.consts, *args, *more_args)

    return fun


def get_aval(x):
    """The abstract value (ShapedArray) of an array, a Python or numpy scalar, or a tracer."""
    return get_aval_of(x)


def concrete_or_error(force, val, context=""):
    """`force(concrete value of val)` (the value itself when `force` is None), or a ConcretizationTypeError saying
    that `context` needs a value known at trace time."""
    value = _concrete_or_error(val, context or "this operation needs a concrete value")
    return value if force is None else force(value)
