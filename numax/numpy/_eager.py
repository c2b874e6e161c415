"""Eager calls of numax.numpy functions run as one compiled program each, as jax.numpy's jitted functions run.

Through the general path an eager `x * 2.0`, `m + v`, `x + i` or `mean(m, axis=0)` promotes its operands and
binds its primitives one by one (converts, broadcasts, the op), a dispatch each. Here the call's key (the
function, its static arguments, the avals of its array operands, the type of a scalar operand, the device and
the flags a trace depends on) finds one executable of the whole function, traced from the function itself.
A scalar operand is an argument of that program: a cached 0-d device buffer holding the scalar converted as the
general path converts it (`lax.convert_element_type` to the promoted dtype and weak type). The cache hits of calls on
one Array (unary ufuncs of integers, reductions) run in C, as the eager fast path of a primitive does
(lowering/dispatch.py's `eager_unary`: the function, its static arguments and the flags stand for the primitive).

A key's second call traces and compiles the function (a key met once, as most of a program's or a test's one-off
calls are, costs no compile of its own: the general path's primitive programs are shared by every function), keeping
the executable only when its output aval is the one the function gives with the scalar itself (traced so). The
compiled program's values are the general path's, bit for bit on a CPU, except where XLA multiplies by the
reciprocal of a constant divisor (mean, var, std: as in jax's jitted functions): reductions with static arguments
are compiled on their first call, so that every call of such a key gives the same values. A call that the trace
refuses takes the general path, which raises the error.
Calls under a transformation (tracers), with debug_nans/debug_infs or disable_jit on (jax's jitted numpy
functions then run op by op), with `jax_numpy_rank_promotion="warn"` (a warning on every call), on arrays of
different devices, and with operands or static arguments of other kinds take the general path, as do calls whose
scalar the general path would refuse (an int out of range: its error is raised there).
"""

import contextlib
import functools
import threading

import numpy as np

from numax.core import caches, dtypes
from numax.core.avals import ShapedArray
from numax.core.config import TRACE_CONTEXT_NAMES, Config, config, trace_context
from numax.core.staging import trace_to_closed_program
from numax.core.trace import trace_state
from numax.lax import conversions
from numax.lowering import dispatch, xla
from numax.lowering.array import Array, is_committed
from numax.lowering.dispatch import eager_unary
from numax.lowering.native_dispatch import run_single

# The scalar operands passed as program arguments: Python's and numpy's numeric scalars. Booleans are left to
# the general path (a boolean operand changes what `multiply` computes: it selects).
_scalar_types = frozenset({int, float, complex} | {np.dtype(d).type for d in dtypes.integers + dtypes.floats
                                                     + dtypes.complexes})
_max_entries = 4096  # keys that never repeat (shapes of a data-dependent loop): start over rather than grow


class _Switch(threading.local):
    general_only = False  # set by `general_path()`, in the calling thread


_switch = _Switch()
_general_path_threads = 0  # threads inside `general_path()` (blocks entered, counted under the lock)
_general_path_lock = threading.RLock()

# key -> (Executable, scalar dtype, scalar weak type); False where the function does not compile to one
# single-output executable whose output aval is the general path's; _MET_ONCE after a first call that took the
# general path.
_entries = {}
_MET_ONCE = "met once"

# A key holds the flags a trace depends on (`trace_context()`) as one token per context, an object hashed and
# compared by identity: cheaper per call than the flags themselves. `_global_token` is the token of the global
# flags, which every thread sees while no thread holds a config override (config's class is then Config); it is
# None while debug_nans, debug_infs or disable_jit is on or a thread is inside `general_path()`: `_token()` then
# reads the calling thread's own flags.
_tokens = {}
_global_token = None


def _token_of(context):
    token = _tokens.get(context)
    return _tokens.setdefault(context, object()) if token is None else token


def _refresh_global_token(attribute=None, value=None):
    global _global_token
    flags = config.__dict__  # (the global values, whatever the calling thread overrides)
    with _general_path_lock:
        if flags["check_numerics"] or flags["disable_jit"] or _general_path_threads:
            _global_token = None
        else:
            _global_token = _token_of(tuple(flags[name] for name in TRACE_CONTEXT_NAMES))


_refresh_global_token()
config.on_change(_refresh_global_token)


def _token():
    """The calling thread's trace context token; None where its calls take the general path (under a
    transformation, with debug_nans/debug_infs or disable_jit on, inside `general_path()`)."""
    token = _global_token
    if token is None or type(config) is not Config:
        if config.check_numerics or config.disable_jit or _switch.general_only:
            return None
        token = _token_of(trace_context())
    return token if len(trace_state.stack) == 1 else None


def binary(fn, x, y, swap):
    """`fn(x, y)` (`fn(y, x)` if `swap`) for an Array `x` and an Array or scalar `y`, through one compiled
    program; None where that does not apply (the caller then takes the general path)."""
    if type(x) is not Array:
        return None  # (x: an Array laid out over several devices, a subclass of Array, also has these operators)
    token = _token()
    if token is None:
        return None
    kind = type(y)
    device = x._device
    if kind is Array:
        if y._device is not device:
            return None
        key = (fn, swap, x.aval, y.aval, device, token)
    elif kind in _scalar_types:
        if y != y:  # NaN: its payload and sign are not kept apart by the buffer cache's key
            return None
        key = (fn, swap, x.aval, kind, device, token)
    else:
        return None
    entry = _entries.get(key)
    if type(entry) is not tuple:
        scalars = () if kind is Array else (0,) if swap else (1,)
        return _first_calls(key, entry, fn, (y, x) if swap else (x, y), scalars, False)
    executable, dtype, weak = entry
    if dtype is None:
        buffers = [y._buffer, x._buffer] if swap else [x._buffer, y._buffer]
        committed = is_committed(x) or is_committed(y)
    else:
        buffer = _scalar_buffer(y, dtype, weak, x._backend, device)
        if buffer is None:
            return None
        buffers = [buffer, x._buffer] if swap else [x._buffer, buffer]
        committed = is_committed(x)
    return _run(executable, buffers, committed)


def unary(fn, x):
    """`fn(x)` for an Array `x`, through one compiled program; None where that does not apply. (Its hits are
    answered before it is called: `unary_compiled_when_eager`.)"""
    token = _token()
    if token is None:
        return None
    name = (fn, token)
    result = eager_unary(name, x)
    return _unary_miss(name, fn, x, compile_at_once=False) if result is None else result


def with_static(fn, x, args, kwargs):
    """`fn(x, *args, **kwargs)` for an Array `x` and static arguments (axes, keepdims), through one compiled
    program; None where that does not apply."""
    token = _global_token  # (`_token()` inlined on every call; `eager_unary` checks the trace stack itself)
    if token is None or type(config) is not Config:
        token = _token()
        if token is None:
            return None
    for value in args:
        if not (type(value) is int or _is_static(value)):
            return None
    if kwargs:
        items = tuple(kwargs.items())
        for key, value in items:
            kind = type(value)
            if not (kind is int or _is_static(value) or kind is bool and key == "keepdims"):
                return None
        name = (fn, token, args, items)
    else:
        name = (fn, token, args)
    result = eager_unary(name, x)
    return _unary_miss(name, lambda a: fn(a, *args, **kwargs), x, compile_at_once=True) if result is None else result


def _unary_miss(name, fn, x, compile_at_once):
    """`fn(x)` where `eager_unary(name, x)` answered None. The hits of one-argument functions run in C, as the
    eager fast path of a primitive does (`dispatch.eager_unary`, the function's `name` as its primitive); so
    here: a key's first calls, the calls under a transformation (None), those `eager_unary` refused (a deleted
    `x`, debug_nans: None) and those its table forgot (`drop_eager_unary`, numax.clear_caches)."""
    if _token() is None:
        return None
    key = (name, x.aval, x._device)
    entry = _entries.get(key)
    if type(entry) is not tuple:
        result = _first_calls(key, entry, fn, (x,), (), compile_at_once)
        entry = _entries.get(key)
    else:
        result = _run(entry[0], [x._buffer], is_committed(x))
    if type(entry) is tuple and result is not None:
        dispatch.add_eager_unary(*key, entry[0])
    return result


def _is_static(value):
    """Static arguments the key can hold: None, ints, tuples of ints (and `keepdims=` a bool: as keys, True and
    1 are one)."""
    kind = type(value)
    return value is None or kind is int or (kind is tuple and all(type(a) is int for a in value))


def nary(fn, operands):
    """`fn(*operands)` for Arrays of one device and scalars of one type, through one compiled program; None where
    that does not apply. (Scalars of one type promote with the arrays alike whether `fn` promotes the operands
    all together or pairwise, as clip does.)"""
    token = _token()
    if token is None:
        return None
    device = scalar_type = None
    key = [fn]
    for operand in operands:
        kind = type(operand)
        if kind is Array:
            if device is None:
                device, backend = operand._device, operand._backend
            elif operand._device is not device:
                return None
            key.append(operand.aval)
        elif kind in _scalar_types and scalar_type in (None, kind) and operand == operand:
            scalar_type = kind
            key.append(kind)
        else:
            return None
    if device is None:
        return None
    key.append(device)
    key.append(token)
    key = tuple(key)
    entry = _entries.get(key)
    if type(entry) is not tuple:
        scalars = tuple(position for position, operand in enumerate(operands) if type(operand) is not Array)
        return _first_calls(key, entry, fn, operands, scalars, False)
    return _run_entry(entry, operands, backend, device)


def _run_entry(entry, operands, backend, device):
    """Runs a compiled entry on the operands' buffers, the scalars' (the operands that are not Arrays)
    converted."""
    executable, dtype, weak = entry
    buffers = []
    committed = False
    for operand in operands:
        if type(operand) is Array:
            buffers.append(operand._buffer)
            committed = committed or is_committed(operand)
        else:
            buffer = _scalar_buffer(operand, dtype, weak, backend, device)
            if buffer is None:
                return None
            buffers.append(buffer)
    return _run(executable, buffers, committed)


def _run(executable, buffers, committed):
    try:
        output = run_single(executable, buffers)
    except Exception:  # a deleted argument (donated?): the general path says which
        return None
    if committed:
        output._committed = True
    return output


def _first_calls(key, entry, fn, operands, scalars, compile_at_once):
    """A key's second call (its first, `compile_at_once`) compiles the function's program (a scalar operand as an
    argument) and runs it; None (the caller takes the general path, which raises what is wrong) where it does not
    apply and on a key's first call."""
    if entry is False or config.numpy_rank_promotion == "warn":
        return None
    if entry is None and not compile_at_once:
        _remember(key, _MET_ONCE)
        return None
    array = next(a for a in operands if type(a) is Array)
    expected = None
    if scalars:
        try:
            expected = _output_aval(fn, operands, scalars)
        except Exception:  # (an error that may depend on the scalar's value, an int out of range: nothing kept)
            return None
    compiled = _compile(fn, operands, scalars, array, expected)
    _remember(key, compiled or False)
    if compiled is None:
        return None
    return _run_entry(compiled, operands, array._backend, array._device)


def _remember(key, entry):
    if len(_entries) > _max_entries:
        _entries.clear()
        dispatch.drop_eager_unary()
    _entries[key] = entry


def _output_aval(fn, operands, scalars):
    """The aval of `fn(*operands)` traced with the scalar operands themselves, as the general path takes them."""
    def with_the_scalars(*tracers):
        values = list(tracers)
        for position in scalars:
            values.insert(position, operands[position])
        return [fn(*values)]

    arrays = [a.aval for position, a in enumerate(operands) if position not in scalars]
    (aval,) = trace_to_closed_program(with_the_scalars, arrays).program.out_avals
    return aval


def _compile(fn, operands, scalars, array, expected_aval):
    """(Executable, scalar dtype, scalar weak type) of `fn` on `operands`' avals (on `array`'s device), the
    scalars' (those at the positions `scalars`) as the general path promotes them; None unless that is one
    single-output program (whose output aval is `expected_aval`, if given)."""
    dtype = weak = None
    if scalars:  # (scalars of one type: all take the one promoted dtype)
        dtype, weak = dtypes.result_type(*operands, return_weak_type_flag=True)
    in_avals = [ShapedArray((), dtype, weak) if position in scalars else operand.aval
                for position, operand in enumerate(operands)]
    try:
        closed = trace_to_closed_program(lambda *tracers: [fn(*tracers)], in_avals)
    except Exception:  # (the general path raises it, or computes from values a trace does not know)
        return None
    if expected_aval is not None and closed.program.out_avals != [expected_aval]:
        return None
    executable = dispatch.compile_program(closed, getattr(fn, "__name__", "eager"), array._backend, array._device)
    if type(executable) is not dispatch.Executable or executable.const_buffers:
        return None
    return executable, dtype, weak


_scalar_buffers = {}


def _scalar_buffer(value, dtype, weak, backend, device):
    """A device buffer of the scalar `value` converted as the general path converts it; None where that raises
    (an int out of range: the general path raises it)."""
    kind = type(value)
    # (Nonzero Python numbers that compare equal have the same bits; zeros and the other kinds are told apart.)
    key = (kind, value if kind is int or kind is float and value else _bits(value), dtype, weak, device)
    buffer = _scalar_buffers.get(key)
    if buffer is None:
        try:
            if kind is int:  # (as `promote_dtypes` checks it)
                dtypes.check_int_fits(value, dtypes.default_int_dtype())
            host = np.asarray(conversions.convert_element_type(value, dtype, weak), dtype)
        except (OverflowError, TypeError, ValueError):
            return None
        buffer = xla.device_put(host, backend, device)
        if len(_scalar_buffers) > _max_entries:
            _scalar_buffers.clear()
        _scalar_buffers[key] = buffer
    return buffer


def _bits(value):
    """A key that tells apart the scalars that compare equal (0.0 and -0.0): of a float zero, a complex, a numpy
    scalar (Python ints and nonzero floats are their own keys)."""
    kind = type(value)
    if kind is float:
        return value.hex()
    if kind is complex:
        return value.real.hex(), value.imag.hex()
    return value.tobytes()


def compiled_when_eager(fn):
    """`fn(a, *static_args, **static_kwargs)` (a reduction), whose eager calls on one Array go through
    `with_static`."""

    def wrapper(a, *args, **kwargs):
        if type(a) is Array:
            result = with_static(fn, a, args, kwargs)
            if result is not None:
                return result
        return fn(a, *args, **kwargs)

    return functools.update_wrapper(wrapper, fn)


def unary_compiled_when_eager(fn, primitive, direct_dtypes):
    """`fn(x)` (a unary ufunc), whose eager calls on an Array run `primitive` alone where x's dtype is one of
    `direct_dtypes` (`dispatch.eager_unary`: nothing to promote), else `fn` as one compiled program (`unary`)."""

    def wrapper(x, /):
        if type(x) is Array:
            if x.aval.dtype in direct_dtypes:
                result = eager_unary(primitive, x)
            else:  # (`unary`'s hit, inlined: a call less)
                token = _global_token
                result = eager_unary((fn, token), x) if token is not None and type(config) is Config else None
                if result is None:
                    result = unary(fn, x)
            if result is not None:
                return result
        return fn(x)

    return wrapper


def binary_compiled_when_eager(fn):
    """`fn(x1, x2)` (a binary ufunc), whose eager calls on an Array and an Array or scalar go through `binary`."""

    def wrapper(x1, x2, /):
        if type(x1) is Array:
            result = binary(fn, x1, x2, False)
        elif type(x2) is Array:
            result = binary(fn, x2, x1, True)
        else:
            result = None
        return fn(x1, x2) if result is None else result

    return functools.update_wrapper(wrapper, fn)


def where_compiled_when_eager(fn):
    """`where(condition, x, y)`, whose eager calls on a boolean Array condition and Arrays or a scalar go
    through `nary`."""

    def wrapper(condition, x=None, y=None, /, **kwargs):
        if not kwargs and type(condition) is Array and condition.aval.dtype == dtypes.bool_:
            result = nary(fn, (condition, x, y))
            if result is not None:
                return result
        return fn(condition, x, y, **kwargs)

    return functools.update_wrapper(wrapper, fn)


def clip_compiled_when_eager(fn):
    """`clip(arr, min, max)`, whose eager calls on an Array between two bounds go through `nary`."""

    def wrapper(arr=None, /, min=None, max=None, **kwargs):
        if not kwargs and type(arr) is Array and min is not None and max is not None:
            result = nary(fn, (arr, min, max))
            if result is not None:
                return result
        return fn(arr, min, max, **kwargs)

    return functools.update_wrapper(wrapper, fn)


@contextlib.contextmanager
def general_path():
    """Every call of the calling thread inside the block takes the general path (tests compare the two paths with
    it)."""
    global _general_path_threads
    saved, _switch.general_only = _switch.general_only, True
    with _general_path_lock:
        _general_path_threads += 1
        _refresh_global_token()
    try:
        yield
    finally:
        _switch.general_only = saved
        with _general_path_lock:
            _general_path_threads -= 1
            _refresh_global_token()


@caches.register
def _clear_caches():
    _entries.clear()
    _scalar_buffers.clear()
