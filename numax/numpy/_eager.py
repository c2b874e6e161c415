"""Eager calls of numax.numpy functions run as one compiled program each, as jax.numpy's jitted functions run.

Through the general path an eager `x * 2.0`, `m + v`, `x + i` or `mean(m, axis=0)` promotes its operands and
binds its primitives one by one (converts, broadcasts, the op), a dispatch each. Here the call's key (the
function, its static arguments, the avals of its array operands, the type of a scalar operand, the device and
the flags a trace depends on) finds one executable of the whole function, traced from the function itself.
A scalar operand is an argument of that program: a cached 0-d device buffer holding the scalar converted as the
general path converts it (`lax.convert_element_type` to the promoted dtype and weak type).

A key's first call traces and compiles the function, keeping the executable only when its output aval is the one
the function gives with the scalar itself (traced so); every call of a key gives the compiled program's values
(which differ from the op-by-op path's where XLA multiplies by the reciprocal of a constant divisor, as in jax's
jitted functions). A call that the trace refuses takes the general path, which raises the error.
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
from numax.core.config import config, trace_context
from numax.core.staging import trace_to_closed_program
from numax.core.trace import trace_state
from numax.lax import elementwise
from numax.lowering import dispatch, xla
from numax.lowering.array import Array, is_committed
from numax.lowering.native_dispatch import run_single

# The scalar operands passed as program arguments: Python's and numpy's numeric scalars. Booleans are left to
# the general path (a boolean operand changes what `multiply` computes: it selects).
_scalar_types = frozenset({int, float, complex} | {np.dtype(d).type for d in dtypes.integers + dtypes.floats
                                                     + dtypes.complexes})
_max_entries = 4096  # keys that never repeat (shapes of a data-dependent loop): start over rather than grow


class _Switch(threading.local):
    general_only = False  # set by `general_path()`, in the calling thread


_switch = _Switch()

# key -> (Executable, scalar dtype, scalar weak type); False where the function does not compile to one
# single-output executable whose output aval is the general path's.
_entries = {}


def binary(fn, x, y, swap):
    """`fn(x, y)` (`fn(y, x)` if `swap`) for an Array `x` and an Array or scalar `y`, through one compiled
    program; None where that does not apply (the caller then takes the general path)."""
    if (config.check_numerics or config.disable_jit or len(trace_state.stack) > 1 or _switch.general_only
            or type(x) is not Array):
        return None  # (x: an Array laid out over several devices, a subclass of Array, also has these operators)
    kind = type(y)
    device = x._device
    if kind is Array:
        if y._device is not device:
            return None
        key = (fn, swap, x.aval, y.aval, device, *trace_context())
    elif kind in _scalar_types:
        if y != y:  # NaN: its payload and sign are not kept apart by the buffer cache's key
            return None
        key = (fn, swap, x.aval, kind, device, *trace_context())
    else:
        return None
    entry = _entries.get(key)
    if type(entry) is not tuple:
        scalars = () if kind is Array else (0,) if swap else (1,)
        return _first_calls(key, entry, fn, (y, x) if swap else (x, y), scalars)
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


def with_static(fn, x, args, kwargs):
    """`fn(x, *args, **kwargs)` for an Array `x` and static arguments (axes, keepdims), through one compiled
    program; None where that does not apply."""
    if config.check_numerics or config.disable_jit or len(trace_state.stack) > 1 or _switch.general_only:
        return None
    for value in args:
        if not _is_static(value):
            return None
    if kwargs:
        for name, value in kwargs.items():
            if not (_is_static(value) or name == "keepdims" and type(value) is bool):
                return None
        key = (fn, x.aval, args, tuple(kwargs.items()), x._device, *trace_context())
    else:
        key = (fn, x.aval, args, x._device, *trace_context())
    entry = _entries.get(key)
    if type(entry) is not tuple:
        return _first_calls(key, entry, lambda a: fn(a, *args, **kwargs), (x,), ())
    try:  # (`_run`, inlined: a call less on every reduction)
        output = run_single(entry[0], [x._buffer])
    except Exception:
        return None
    if is_committed(x):
        output._committed = True
    return output


def _is_static(value):
    """Static arguments the key can hold: None, ints, tuples of ints (and `keepdims=` a bool: as keys, True and
    1 are one)."""
    kind = type(value)
    return value is None or kind is int or (kind is tuple and all(type(a) is int for a in value))


def nary(fn, operands):
    """`fn(*operands)` for Arrays of one device and scalars of one type, through one compiled program; None where
    that does not apply. (Scalars of one type promote with the arrays alike whether `fn` promotes the operands
    all together or pairwise, as clip does.)"""
    if config.check_numerics or config.disable_jit or len(trace_state.stack) > 1 or _switch.general_only:
        return None
    device = scalar_type = None
    scalars = []
    parts = [fn]
    for position, operand in enumerate(operands):
        kind = type(operand)
        if kind is Array:
            if device is None:
                device, backend = operand._device, operand._backend
            elif operand._device is not device:
                return None
            parts.append(operand.aval)
        elif kind in _scalar_types and scalar_type in (None, kind) and operand == operand:
            scalar_type = kind
            scalars.append(position)
            parts.append(kind)
        else:
            return None
    if device is None:
        return None
    key = (*parts, device, *trace_context())
    entry = _entries.get(key)
    if type(entry) is not tuple:
        return _first_calls(key, entry, fn, operands, tuple(scalars))
    return _run_entry(entry, operands, scalars, backend, device)


def _run_entry(entry, operands, scalars, backend, device):
    """Runs a compiled entry on the operands' buffers, the scalars' (at the positions `scalars`) converted."""
    executable, dtype, weak = entry
    buffers = []
    for position, operand in enumerate(operands):
        if position in scalars:
            buffer = _scalar_buffer(operand, dtype, weak, backend, device)
            if buffer is None:
                return None
            buffers.append(buffer)
        else:
            buffers.append(operand._buffer)
    return _run(executable, buffers, any(is_committed(a) for a in operands if type(a) is Array))


def _run(executable, buffers, committed):
    try:
        output = run_single(executable, buffers)
    except Exception:  # a deleted argument (donated?): the general path says which
        return None
    if committed:
        output._committed = True
    return output


def _first_calls(key, entry, fn, operands, scalars):
    """A key's first call compiles the function's program (a scalar operand as an argument) and runs it; None
    (the caller takes the general path, which raises what is wrong) where it does not apply."""
    if entry is False or config.numpy_rank_promotion == "warn":
        return None
    array = next(a for a in operands if type(a) is Array)
    expected = None
    if scalars:
        try:
            expected = _output_aval(fn, operands, scalars)
        except Exception:  # (an error that may depend on the scalar's value, an int out of range: nothing kept)
            return None
    compiled = _compile(fn, operands, scalars, array, expected)
    if len(_entries) > _max_entries:
        _entries.clear()
    _entries[key] = compiled or False
    if compiled is None:
        return None
    return _run_entry(compiled, operands, scalars, array._backend, array._device)


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
    in_avals = []
    for position, operand in enumerate(operands):
        if position in scalars:
            dtype, weak = dtypes.result_type(*operands, return_weak_type_flag=True)
            in_avals.append(ShapedArray((), dtype, weak))
        else:
            in_avals.append(operand.aval)
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
    key = (type(value), _bits(value), dtype, weak, device)
    buffer = _scalar_buffers.get(key)
    if buffer is None:
        try:
            if type(value) is int:  # (as `promote_dtypes` checks it)
                dtypes.check_int_fits(value, dtypes.default_int_dtype())
            host = np.asarray(elementwise.convert_element_type(value, dtype, weak), dtype)
        except (OverflowError, TypeError, ValueError):
            return None
        buffer = xla.device_put(host, backend, device)
        if len(_scalar_buffers) > _max_entries:
            _scalar_buffers.clear()
        _scalar_buffers[key] = buffer
    return buffer


def _bits(value):
    """A key that tells apart the scalars that compare equal (0.0 and -0.0)."""
    kind = type(value)
    if kind is float:
        return value.hex()
    if kind is complex:
        return value.real.hex(), value.imag.hex()
    if kind is int:
        return value
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
    saved, _switch.general_only = _switch.general_only, True
    try:
        yield
    finally:
        _switch.general_only = saved


@caches.register
def _clear_caches():
    _entries.clear()
    _scalar_buffers.clear()
