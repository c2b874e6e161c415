"""Tracers and the trace stack.

Each active interpreter (jit staging, jvp, vmap, ...) owns a `MainTrace` at a level on the stack.
Binding a primitive finds the highest-level trace among its arguments (or the dynamic trace, when a
staging interpreter is active), lifts the arguments into it and lets it process the primitive. Levels
keep nested interpreters of the same kind apart, so nested differentiation never confuses whose
perturbation is whose.

The stack is per thread (`trace_state`): threads trace and transform independently, and a tracer
that crosses into another thread is recognised as foreign there, as one from a finished
transformation is.
"""

import contextlib
import itertools
import threading

from . import errors
from .avals import get_aval


class MainTrace:
    """One interpreter's place on the stack: its level, its Trace class and its private data."""

    # (weakly held: get_opaque_trace_state)
    __slots__ = ("level", "trace_type", "global_data", "thread", "trace", "__weakref__")

    def __init__(self, level, trace_type, global_data):
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.thread = threading.get_ident()  # stacks are per thread: tells a foreign tracer apart
        # Its Trace, which holds nothing but this main: made once, not once per primitive applied
        self.trace = trace_type(self)

    def __repr__(self):
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class Trace:
    """Processes primitives applied to its own tracers. Subclasses are the interpreters."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, value):
        """A tracer of this trace that stands for a value from outside every trace."""
        raise NotImplementedError

    @staticmethod
    def axis_name_of(main):
        """The axis name an interpreter binds (vmap's axis_name), or None."""
        return None

    def lift(self, tracer):
        """A tracer of this trace standing for a tracer of a lower-level trace."""
        return self.pure(tracer)

    def process_primitive(self, primitive, tracers, params):
        raise NotImplementedError

    def full_raise(self, value):
        if not isinstance(value, Tracer):
            return self.pure(value)
        level = self.main.level
        value_main = value._trace.main
        if value_main is self.main:
            return value
        if value_main.level < level:
            check_live(value_main)
            return self.lift(value)
        if value_main.level > level and is_live(value_main):
            raise errors.UnexpectedTracerError(
                f"a tracer from a more deeply nested transformation ({value_main}) reached {self.main}; "
                "did a traced value escape its transformation (a global, a list, a nonlocal)?"
            )
        raise dead_tracer_error(value_main)


class EvalTrace(Trace):
    """The bottom of the stack: primitives run at once on concrete values."""

    __slots__ = ()

    def pure(self, value):
        return value

    lift = pure

    def process_primitive(self, primitive, values, params):
        return primitive.impl(*values, **params)


class Tracer:
    """A stand-in for an array inside a transformation. Operators come from numax.numpy."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000
    explicit_sharding = None  # the layout over Explicit mesh axes a jit's argument keeps (core/staging.py)

    @property
    def aval(self):
        raise NotImplementedError

    def full_lower(self):
        """This tracer, or the value it wraps when the wrapping carries no information."""
        return self

    def to_concrete_value(self):
        """The concrete value this tracer stands for, when it is known at trace time (else None)."""
        return None

    # Array attributes answered from the aval.
    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    def _concrete(self, context, error_type):
        value = self.to_concrete_value()
        if value is None:
            raise error_type(self, context)
        return value

    def __bool__(self):
        value = self._concrete("the truth value of a traced array (Python `if`, `while`, `and`, `or`, `bool()`)",
                               errors.TracerBoolConversionError)
        return bool(value)

    def __int__(self):
        return int(self._concrete("int() of a traced array", errors.TracerIntegerConversionError))

    def __float__(self):
        return float(self._concrete("float() of a traced array", errors.ConcretizationTypeError))

    def __complex__(self):
        return complex(self._concrete("complex() of a traced array", errors.ConcretizationTypeError))

    def __index__(self):
        value = self._concrete("a traced array used as a Python index (`range`, slicing, `operator.index`)",
                               errors.TracerIntegerConversionError)
        return int(value)

    def __array__(self, dtype=None, copy=None):
        value = self.to_concrete_value()
        if value is None:
            raise errors.TracerArrayConversionError(self)
        return value.__array__(dtype) if dtype is not None else value.__array__()

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")

    def __repr__(self):
        return f"Traced<{self.aval}>with<{type(self._trace).__name__}>"


# --- the stack -------------------------------------------------------------------------------
class TraceState(threading.local):
    """One thread's interpreters: `stack` holds them all, bottom (eager evaluation) first; `dynamic` the
    staging (omnistaging) traces among them, the innermost last, or the eval trace when none stages;
    `axis_frames` the axis names that pmaps being traced bind (lax.collectives.AxisFrame), innermost last."""

    def __init__(self):
        self.stack = [MainTrace(0, EvalTrace, None)]
        self.dynamic = [self.stack[0]]
        self.axis_frames = []


trace_state = TraceState()


def is_tracing() -> bool:
    """True while any interpreter runs in this thread (values may be tracers, operations may be staged)."""
    return len(trace_state.stack) > 1


def eager_executor(primitive, args, params):
    """Runs a primitive on concrete values; the runtime replaces this with its compiled dispatch."""
    raise NotImplementedError(f"no runtime is installed to execute {primitive.name}")


def set_eager_executor(executor):
    global eager_executor
    eager_executor = executor


@contextlib.contextmanager
def new_main(trace_type, global_data=None, dynamic=False):
    """Pushes a new interpreter on the stack for the duration of the block."""
    state = trace_state
    stack = state.stack
    main = MainTrace(len(stack), trace_type, global_data)
    stack.append(main)
    if dynamic:
        state.dynamic.append(main)
    try:
        yield main
    finally:
        if dynamic:
            state.dynamic.pop()
        stack.pop()
        main.trace = None  # (main and its Trace refer to each other: free them now, not at the next collection)


@contextlib.contextmanager
def new_base_main(trace_type, global_data=None):
    """Stages everything inside the block, hiding outer tracers (used to trace a closed sub-program)."""
    with new_main(trace_type, global_data, dynamic=True) as main:
        yield main


def current_dynamic_main():
    return trace_state.dynamic[-1]


def find_top_trace(args):
    state = trace_state
    top = state.dynamic[-1]
    level = top.level
    for arg in args:
        if isinstance(arg, Tracer):
            main = arg._trace.main
            if main.level > level:
                top, level = main, main.level
    stack = state.stack
    if level >= len(stack) or stack[level] is not top:
        raise dead_tracer_error(top)
    return top.trace


def is_live(main) -> bool:
    """True if `main` is on this thread's stack: its interpreter is running here now."""
    stack = trace_state.stack
    return main.level < len(stack) and stack[main.level] is main


def check_live(main):
    if not is_live(main):
        # Recording into a finished interpreter, or another thread's, would silently lose the operation.
        raise dead_tracer_error(main)


def dead_tracer_error(main):
    if main.thread != threading.get_ident():
        return errors.UnexpectedTracerError(
            f"encountered a tracer of a transformation running in another thread ({main}). Each thread traces "
            "on its own: pass values between threads as arrays returned from transformed functions, not as "
            "tracers.")
    return errors.UnexpectedTracerError(
        f"encountered a tracer of a transformation that has already finished ({main}). Values computed inside "
        "a transformed function must be returned from it, not stored.")


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Operations on concrete values run at once inside the block, even while a function is being traced
    (their results are concrete, usable in Python control flow); operations on tracers are still traced."""
    state = trace_state
    state.dynamic.append(state.stack[0])
    try:
        yield
    finally:
        state.dynamic.pop()


def trace_naming_axes(names, top):
    """The innermost interpreter above `top` that binds one of the axis `names` (its Trace class says
    which name it binds), or `top` when none does."""
    for main in reversed(trace_state.stack):
        if main.level <= top.main.level:
            break
        name = main.trace_type.axis_name_of(main)
        if name is not None and name in names:
            return main.trace
    return top


def bind(primitive, args, params):
    top_trace = find_top_trace(args)
    if top_trace.main.level < len(trace_state.stack) - 1:
        # Interpreters above the operands' own see the application only if it uses an axis they name
        # (a jit holding a psum over a vmap's axis, called on values that vmap does not batch).
        names = primitive.named_axes(params)
        if names:
            top_trace = trace_naming_axes(names, top_trace)
    if type(top_trace) is EvalTrace:
        return primitive.impl(*args, **params)
    tracers = [top_trace.full_raise(a) for a in args]
    out = top_trace.process_primitive(primitive, tracers, params)
    if primitive.multiple_results:
        return [full_lower(o) for o in out]
    return full_lower(out)


def full_lower(value):
    return value.full_lower() if isinstance(value, Tracer) else value


def is_concrete(value) -> bool:
    """True for values with a known value now: arrays outside every trace, or tracers that know theirs."""
    if isinstance(value, Tracer):
        return value.to_concrete_value() is not None
    return True


def concrete_or_error(value, context="this operation needs a concrete value"):
    """The concrete value of `value`, or a ConcretizationTypeError naming the user's line."""
    if isinstance(value, Tracer):
        concrete = value.to_concrete_value()
        if concrete is None:
            raise errors.ConcretizationTypeError(value, context)
        return concrete
    return value


def get_aval_of(value):
    return value.aval if isinstance(value, Tracer) else get_aval(value)


_fresh_ids = itertools.count()


def fresh_id() -> int:
    return next(_fresh_ids)
