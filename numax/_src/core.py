"""`jax._src.core` as JAX's docs and extension libraries use it, mapped onto numax's core.

What each jax name is here:
- `Primitive`: numax's own Primitive class (the one every `numax.lax` primitive is), so a primitive made here binds,
  traces and lowers exactly as numax's do; its rules go into the same tables (`numax._src.interpreters`).
- `Jaxpr`, `ClosedJaxpr`, `JaxprEqn`: what `make_jaxpr` returns (views under jax's names of numax's `Program`,
  `ClosedProgram` and `Equation`); `Var` and `Literal` are numax's IR atoms (`Literal.val` is its value).
- `eval_jaxpr` / `jaxpr_as_fun`: numax's program evaluator, binding each equation so that the active
  transformation sees it, as jax's do.
- `ShapedArray`, `Tracer`, `get_aval`, `concrete_or_error`, `InconclusiveDimensionOperation`: numax's.
- `mapped_aval` / `unmapped_aval`: a type without / with a batch axis; `jaxprs_in_params` / `subjaxprs`: the jaxprs
  that equations hold in their parameters; `Atom`: what an equation's input is (a `Var` or a `Literal`).
"""

import abc

from numax.core.avals import InconclusiveDimensionOperation, ShapedArray
from numax.core.evaluation import eval_program
from numax.core.ir import ClosedProgram, Literal, Program, Var
from numax.core.primitives import Primitive
from numax.core.trace import Trace, Tracer, find_top_trace, get_aval_of
from numax.core.trace import concrete_or_error as _concrete_or_error
from numax.transforms.aot import ClosedJaxpr, Jaxpr, JaxprEqn

__all__ = ["AbstractValue", "Atom", "ClosedJaxpr", "InconclusiveDimensionOperation", "Jaxpr", "JaxprEqn", "Literal",
           "Primitive", "ShapedArray", "Trace", "Tracer", "Var", "concrete_or_error", "eval_jaxpr", "find_top_trace",
           "get_aval", "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params", "mapped_aval", "subjaxprs",
           "unmapped_aval"]

Atom = Var | Literal


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


def mapped_aval(size, axis, aval):
    """The type of one slice of `aval` along `axis` (of length `size`); `aval` itself when `axis` is None."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"axis {axis} of {aval.str_short()} has size {aval.shape[axis]}, not {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """The type of `size` values of type `aval` stacked along a new `axis`; `aval` itself when `axis` is None.
    (`explicit_mesh_axis` is accepted for jax's signature: numax's types carry no mesh axes.)"""
    del explicit_mesh_axis
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def _jaxprs_in(value):
    if isinstance(value, ClosedProgram):
        return [Jaxpr(value.program)]
    if isinstance(value, Program):
        return [Jaxpr(value)]
    if isinstance(value, Jaxpr):
        return [value]
    if isinstance(value, (tuple, list)):
        return [jaxpr for item in value for jaxpr in _jaxprs_in(item)]
    return []


def jaxprs_in_params(params):
    """The jaxprs held in an equation's parameters (a closed one gives its `.jaxpr`), directly or in tuples."""
    return [jaxpr for value in params.values() for jaxpr in _jaxprs_in(value)]


def subjaxprs(jaxpr):
    """The jaxprs that the equations of `jaxpr` hold in their parameters (one level down)."""
    for equation in _program_of(jaxpr).equations:
        yield from jaxprs_in_params(equation.params)


class OpaqueTraceState:
    """Which transformation is innermost where it was taken (`get_opaque_trace_state`): equal to another taken
    inside the same running transformation (or both outside any), and nothing else. Holds its trace weakly."""

    __slots__ = ("_main_ref",)

    def __init__(self, main_ref):
        self._main_ref = main_ref

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._main_ref == other._main_ref

    def __hash__(self):
        return hash(self._main_ref)


def get_opaque_trace_state(convention=None):
    """The identity of the innermost running transformation (jit tracing, grad, vmap, ...) as an opaque value that
    libraries compare to tell whether code runs in the same transformation as before (flax checks that a variable
    is updated where it was created). `convention` names the caller, as in jax; it changes nothing."""
    del convention
    import weakref

    from numax.core.trace import trace_state

    return OpaqueTraceState(weakref.ref(trace_state.stack[-1]))


class AbstractValue(abc.ABC):  # noqa: B024  (a marker: no method is abstract)
    """What a traced value's type is (jax's base class of abstract values): numax has one kind, `ShapedArray`
    (typed keys included), registered as a virtual subclass."""


AbstractValue.register(ShapedArray)
