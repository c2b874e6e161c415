"""Compiling programs into executables, and running them on numax Arrays.

Owns `Executable` (a compiled program with its output handlers and argument checks), the
compilation entry point used by jit, and eager execution: a primitive applied to concrete arrays is
compiled alone once per (primitive, params, avals) and cached.
"""

import weakref

import numpy as np

from ..core import caches, dtypes, trace
from ..core.avals import ShapedArray, get_aval
from ..core.config import config
from ..core.ir import ClosedProgram, Equation, Program, Var, all_equations
from ..core.sharding import PMAP_AXIS_NAME, Mesh
from . import array as array_module
from . import native_dispatch, sharded, xla
from .array import Array, is_committed
from .lower import hoist_large_consts, lower_to_module
from .sharded_array import ShardedArray


class Executable:
    """A compiled program bound to one device, with what it needs to run on numax Arrays."""

    __slots__ = ("name", "compiled", "backend", "device", "in_avals", "out_avals", "handlers",
                 "const_buffers", "text", "host_callbacks", "execute")

    def __init__(self, name, compiled, backend, device, in_avals, out_avals, const_buffers, text,
                 host_callbacks):
        self.name = name
        self.compiled = compiled
        self.backend = backend
        self.device = device
        self.in_avals = in_avals
        self.out_avals = [array_module.canonical_aval(a) for a in out_avals]
        self.const_buffers = const_buffers
        self.text = text
        self.host_callbacks = host_callbacks  # kept alive as long as the executable
        self.execute = xla.executor(host_callbacks)  # (one with callbacks keeps its token for effects_barrier)
        self.handlers = [xla.result_handler(a.shape, a.dtype, backend, device) for a in out_avals]

    def buffers_of(self, values):
        """Device buffers of the call's arguments, whose avals are known to match (checked by the caller).
        Deleted buffers are not looked for here: executing one fails, and `run_on` says which."""
        backend, device = self.backend, self.device
        buffers = []
        for value, aval in zip(values, self.in_avals):
            if type(value) is Array and value._device is device and value._backend is backend:
                buffers.append(value._buffer)
            else:
                buffers.append(to_buffer(value, aval, backend, device))
        return buffers

    def run_on(self, values):
        """Runs on the call's arguments (avals known to match); returns the raw output buffers."""
        buffers = self.buffers_of(values)
        if self.const_buffers:
            buffers = self.const_buffers + buffers
        try:  # `run_buffers`, inlined: one Python frame less on every call
            return self.execute(self.compiled, buffers, self.handlers)
        except Exception:
            if not any(type(value) is Array and value.is_deleted() for value in values):
                raise
        refuse_deleted(values)  # (raises: an argument was deleted)

    def run_buffers(self, buffers):
        if self.const_buffers:
            buffers = self.const_buffers + buffers
        return self.execute(self.compiled, buffers, self.handlers)

    def wrap_outputs(self, raw_outputs):
        backend, device = self.backend, self.device
        return [Array(aval, buffer, backend, device) for aval, buffer in zip(self.out_avals, raw_outputs)]

    def __call__(self, *args):
        """Runs on numax Arrays, numpy arrays or scalars; returns numax Arrays."""
        return self.wrap_outputs(self.run_buffers([to_buffer(a, aval, self.backend, self.device)
                                                   for a, aval in zip(args, self.in_avals)]))

    def as_text(self):
        return self.text

    def hlo_text(self):
        return self.compiled.get_hlo_text() if hasattr(self.compiled, "get_hlo_text") else self.text


# Arrays donated to a compiled call, by id (Arrays are unhashable): a compiled program run again on one fails as
# jax's cached-call path does, with the runtime's ValueError about an invalid buffer. jax's other paths (an eager
# op, the first call of a signature) and any array deleted explicitly raise the array's own RuntimeError.
_donated_arrays = weakref.WeakValueDictionary()


def mark_donated(array):
    _donated_arrays[id(array)] = array


def refuse_deleted(values):
    """Raises for the first deleted Array among a compiled program's arguments: ValueError for a donated one."""
    for index, value in enumerate(values):
        if type(value) is Array and value.is_deleted():
            if _donated_arrays.get(id(value)) is value:
                raise ValueError(f"Invalid buffer passed to a compiled program as argument {index}: the buffer has "
                                 "been deleted or donated (an array donated to an earlier call cannot be used "
                                 "again)") from None
            value._check_alive()


def deleted_as_eager(values):
    """Where jax checks the arguments before running (eager ops, the first call of a signature), the RuntimeError
    of a deleted one instead of `refuse_deleted`'s ValueError."""
    for value in values:
        if type(value) is Array:
            value._check_alive()


def to_buffer(value, aval, backend, device):
    """The device buffer for an argument, transferring host values (checked against the aval)."""
    if type(value) is Array:
        if value.aval.dtype != aval.dtype or value.aval.shape != aval.shape:
            raise TypeError(f"argument of type {value.aval.str_short()} passed where {aval.str_short()} is expected")
        value._check_alive()
        if value._backend is not backend:  # another platform's client: through the host
            return xla.device_put(value._value(), backend, device)
        if value._device is not device:
            return xla.copy_to_device(value._buffer, aval.shape, aval.dtype, backend, device)
        return value._buffer
    if type(value) in dtypes.python_scalar_types:
        return _scalar_buffer(value, aval.dtype, backend, device)
    host = np.asarray(value, dtype=aval.dtype)
    if host.shape != aval.shape:
        raise TypeError(f"argument of shape {host.shape} passed where {aval.str_short()} is expected")
    return xla.device_put(host, backend, device)


_scalar_buffers = {}


def _exact(value):
    """A cache key telling apart scalars that compare equal: 1 and 1.0 and True, 0.0 and -0.0."""
    kind = type(value)
    if kind is float:
        return kind, value.hex()
    if kind is complex:
        return kind, value.real.hex(), value.imag.hex()
    return kind, value
_scalar_arrays = {}


def scalar_array(value, dtype, weak_type):
    """A 0-d device Array holding a Python or numpy scalar, cached: eager `x + 1.0` transfers nothing."""
    backend, device = xla.default_placement()
    key = (_exact(value), dtype, weak_type, device)
    array = _scalar_arrays.get(key) if value == value else None
    if array is None or xla.is_deleted(array._buffer):
        aval = array_module.canonical_aval(ShapedArray((), dtype, weak_type))
        array = Array(aval, _scalar_buffer(value, dtype, backend, device), backend, device)
        if value == value:
            if len(_scalar_arrays) > 4096:
                _scalar_arrays.clear()
            _scalar_arrays[key] = array
    return array


def _scalar_buffer(value, dtype, backend, device):
    """Device buffers of Python scalars, cached: loops pass the same few scalars over and over."""
    key = (_exact(value), dtype, device)
    buffer = _scalar_buffers.get(key) if value == value else None
    if buffer is None:
        if type(value) is int and dtypes.is_integer(dtype):
            dtypes.check_int_fits(value, dtype)
        buffer = xla.device_put(np.asarray(value, dtype=dtype), backend, device)
        if value == value:
            if len(_scalar_buffers) > 4096:
                _scalar_buffers.clear()
            _scalar_buffers[key] = buffer
    return buffer


def compile_program(closed: ClosedProgram, name="main", backend=None, device=None, arg_attributes=None,
                    reason=None, compiler_options=None, in_shardings=(), out_shardings=(),
                    asked_in_shardings=()) -> Executable:
    """Lowers and compiles a closed program. Large constants become leading device arguments. A program whose
    arguments, results (`in_shardings`, `out_shardings`: a Sharding or None per value) or equations carry
    shardings over several devices compiles for all of them, partitioned by XLA. `asked_in_shardings` (a
    Sharding or None per argument): those jit's in_shardings named, which committed arguments must have."""
    mesh = sharded.program_mesh(closed.program, in_shardings, out_shardings)
    pmap_devices = _devices_of_pmaps(closed.program)
    if pmap_devices:
        if len(pmap_devices) > 1 or (mesh is not None and tuple(mesh.devices.flat) not in pmap_devices):
            return InterpretedExecutable(closed, name)
        mesh = Mesh(np.array(pmap_devices.pop(), dtype=object), (PMAP_AXIS_NAME,))
    if mesh is not None:
        program = closed.program
        return sharded.ShardedExecutable(closed, name, mesh, in_shardings or [None] * len(program.invars),
                                         out_shardings or [None] * len(program.outvars), reason, compiler_options,
                                         asked_in_shardings)
    if backend is None:
        backend, device = xla.default_placement()
    device = device or backend.default_device
    program = closed.program
    lowered, hoisted_vars, hoisted = hoist_large_consts(closed)
    if arg_attributes:
        arg_attributes = {i + len(hoisted): attr for i, attr in arg_attributes.items()}
    text, module = lower_to_module(lowered, name, backend.platform, arg_attributes)
    compiled = xla.compile_module(text, backend, [device], module.host_callbacks, compiler_options=compiler_options,
                                  log_as=(f"{name} for {_signature_text(program.in_avals)}", reason))
    const_buffers = [to_buffer(v, var.aval, backend, device) for var, v in zip(hoisted_vars, hoisted)]
    return Executable(name, compiled, backend, device, program.in_avals, program.out_avals, const_buffers, text,
                      module.host_callbacks)


class InterpretedExecutable:
    """A program holding pmaps over different sets of devices, run equation by equation: each pmap compiles
    for its devices, the rest runs eagerly."""

    def __init__(self, closed, name):
        self.closed = closed
        self.name = name
        self.in_avals = closed.program.in_avals
        self.out_avals = closed.program.out_avals

    def run_on(self, values):
        from ..core.evaluation import eval_closed_program

        return eval_closed_program(self.closed, *values)

    def wrap_outputs(self, outputs):
        return list(outputs)

    def __call__(self, *args):
        return self.run_on(args)


def _devices_of_pmaps(program) -> set:
    """The device tuples of the primitives running over several devices (pmaps) in a program and its
    sub-programs; a program whose pmaps share their devices compiles as one program over them."""
    return {tuple(eqn.params["devices"]) for eqn in all_equations(program)
            if getattr(eqn.primitive, "spans_devices", False)}


def _signature_text(avals):
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


# --- eager execution of single primitives ------------------------------------------------------------
class PrimitiveCache:
    """Executables of single primitives, keyed by (primitive, params, input avals, device)."""

    def __init__(self):
        self.cache = caches.ComputeOnceCache()
        self.entries = self.cache.entries

    def get(self, primitive, params, in_avals, backend, device, in_shardings=()):
        key = (primitive, tuple(params.items()), tuple(in_avals), device, in_shardings)
        try:
            executable = self.entries.get(key)
        except TypeError:  # unhashable params: compile without caching
            return self._compile_alone(primitive, params, in_avals, backend, device, in_shardings)
        if executable is None:  # the compile closure is built on a miss only
            executable = self.cache.get(key, lambda: self._compile_alone(primitive, params, in_avals, backend, device,
                                                                         in_shardings))
        return executable

    @staticmethod
    def _compile_alone(primitive, params, in_avals, backend, device, in_shardings):
        return compile_program(_single_equation_program(primitive, params, in_avals), primitive.name, backend, device,
                               in_shardings=in_shardings)

    def clear(self):
        self.cache.clear()


primitive_cache = PrimitiveCache()


def _single_equation_program(primitive, params, in_avals):
    invars = [Var(a) for a in in_avals]
    out = primitive.abstract_eval(*in_avals, **params)
    out_avals = out if primitive.multiple_results else [out]
    outvars = [Var(a) for a in out_avals]
    return ClosedProgram(Program([], invars, outvars, [Equation(primitive, invars, outvars, params)]), [])


def _placement_of_args(args):
    """(backend, device) where a computation on `args` runs: the device of the committed arguments, else of the
    first Array (uncommitted arrays may move); (None, None) when an argument is laid out over several devices
    (the computation then runs over them: see `in_shardings_of`). Committed arguments on different devices are
    jax's ValueError."""
    return _placement_and_commitment(args)[:2]


def _placement_and_commitment(args):
    """`_placement_of_args`, and whether the outputs are committed (some argument was)."""
    first = committed = None
    for arg in args:
        kind = type(arg)
        if kind is Array:
            if first is None:
                first = arg
            if committed is None and is_committed(arg):
                committed = arg
        elif kind is ShardedArray:
            sharded.check_committed_devices(args)
            return None, None, True
    if committed is not None:
        sharded.check_committed_devices(args)
        return committed._backend, committed._device, True
    if first is not None:
        return first._backend, first._device, False
    return (*xla.default_placement(), False)


def in_shardings_of(args):
    """The shardings of the arguments laid out over several devices (None for the others)."""
    return tuple(arg._sharding if type(arg) is ShardedArray else None for arg in args)


def apply_primitive(primitive, args, params):
    """Eager execution: runs one primitive on concrete values through its cached executable (on arrays laid
    out over several devices, partitioned over them as the arrays are)."""
    in_avals = [arg.aval if type(arg) is Array else get_aval(arg) for arg in args]
    backend, device, committed = _placement_and_commitment(args)
    if device is None:
        executable = primitive_cache.get(primitive, params, in_avals, None, None, in_shardings_of(args))
    else:
        executable = primitive_cache.get(primitive, params, in_avals, backend, device)
    # The avals were read off the arguments themselves, so their buffers can be passed as they are.
    try:
        outs = executable.wrap_outputs(executable.run_on(args))
    except ValueError:
        deleted_as_eager(args)
        raise
    if committed and device is not None:
        _commit(outs)
    if config.check_numerics:
        check_numerics(outs, primitive.name)
    return outs if primitive.multiple_results else outs[0]


def _commit(arrays):
    """Marks one-device outputs computed from committed arguments committed, as jax's are."""
    for array in arrays:
        if type(array) is Array:
            array._committed = True


def check_numerics(outputs, name):
    """`jax_debug_nans`/`jax_debug_infs`: FloatingPointError if an output of `name` holds NaN (or Inf)."""
    for out in outputs:
        if not dtypes.is_inexact(out.aval.dtype):
            continue
        value = np.asarray(out)
        if config.debug_nans and np.isnan(value).any():
            raise FloatingPointError(f"invalid value (nan) encountered in {name}")
        if config.debug_infs and np.isinf(value).any():
            raise FloatingPointError(f"invalid value (inf) encountered in {name}")


def check_program_numerics(outputs, closed, args, name):
    """`check_numerics` for a compiled program's outputs; on a hit, the program runs again op by op so that
    the error names the first primitive producing the value, as JAX's de-optimized rerun does."""
    try:
        check_numerics(outputs, name)
    except FloatingPointError as error:
        from ..core.evaluation import eval_closed_program

        eval_closed_program(closed, *args)  # raises at the primitive, through `apply_primitive`
        raise FloatingPointError(f"{error} (the function run op by op produced no such value: it arises only "
                                 "in the compiled program)") from None


# --- eager fast paths ----------------------------------------------------------------------------------
# Eager calls of the common shapes (one Array, two Arrays of one aval, two Arrays a contraction takes as they
# are) skip the trace stack, promotion and the general cache's key building: a dictionary lookup, the
# execution and the output Array. Each returns None when it does not apply, and the caller then takes the
# general path, which also says what is wrong with an argument (a deleted one). An operand the primitive
# rejects fails in the same abstract evaluation on either path, with the same error.
_fast_executables = {}  # (primitive, avals, device) or (primitive, params key, avals, device) -> Executable


def _fast_executable(key, primitive, params, in_avals, backend, device):
    """The executable of a fast path's key, taken from the general cache on the key's first use."""
    executable = primitive_cache.get(primitive, params, in_avals, backend, device)
    assert type(executable) is Executable and not executable.const_buffers  # one equation on one device
    _fast_executables[key] = executable
    return executable


def _run_fast(executable, buffers, committed):
    try:
        output = native_dispatch.run_single(executable, buffers)  # (one device, no constant buffers)
    except Exception:  # a deleted argument (donated?): the general path says which
        return None
    if committed:
        output._committed = True
    return output


def _python_eager_unary(primitive, x):
    """The fast path of eager `primitive(x)`, a primitive without params, for an Array `x` outside every trace.
    The caller checks that the primitive takes x's dtype as it is (no promotion)."""
    if config.check_numerics or len(trace.trace_state.stack) > 1 or type(primitive) is tuple:
        return None  # (a tuple: a compiled function's key, see `add_eager_unary`: its caller compiles on a miss)
    aval, device = x.aval, x._device
    key = (primitive, aval, device)
    executable = _fast_executables.get(key) or _fast_executable(key, primitive, {}, [aval], x._backend, device)
    return _run_fast(executable, [x._buffer], is_committed(x))


# Its hits run in C when the extension is built (the table is _fast_executables; misses compile above).
eager_unary = native_dispatch.eager_unary_with(_fast_executables, _python_eager_unary)


def add_eager_unary(key, aval, device, executable):
    """`eager_unary(key, x)` of an Array `x` of `aval` on `device` runs `executable` (a one-argument function
    compiled whole, numax/numpy/_eager.py: `key` is a tuple, which names the function and the flags it was traced
    under); for other `x` it answers None."""
    _fast_executables[key, aval, device] = executable


def drop_eager_unary():
    """Forgets every executable `add_eager_unary` gave (their cache starts over)."""
    for key in [key for key in _fast_executables if type(key[0]) is tuple]:
        _fast_executables.pop(key, None)


def eager_same_aval(primitive, x, y):
    """The fast path of eager `x OP y` for two Arrays of one aval on one device, outside every trace:
    none of the promotion or placement logic."""
    if type(y) is not Array or config.check_numerics or len(trace.trace_state.stack) > 1:
        return None
    aval, device = x.aval, x._device
    if (y.aval is not aval and y.aval != aval) or y._device is not device:
        return None
    key = (primitive, aval, device)
    executable = _fast_executables.get(key) or _fast_executable(key, primitive, {}, [aval, aval], x._backend, device)
    return _run_fast(executable, [x._buffer, y._buffer], is_committed(x) or is_committed(y))


def eager_binary(primitive, params_key, params, x, y):
    """The fast path of eager `primitive(x, y, **params)` for two Arrays on one device, outside every trace, that
    the primitive takes as they are (the caller promoted them). `params_key` is a hashable stand-in for `params`
    (the same key for the same params)."""
    if type(y) is not Array or config.check_numerics or len(trace.trace_state.stack) > 1:
        return None
    device = x._device
    if y._device is not device:
        return None
    x_aval, y_aval = x.aval, y.aval
    key = (primitive, params_key, x_aval, y_aval, device)
    executable = _fast_executables.get(key) or _fast_executable(key, primitive, params, [x_aval, y_aval],
                                                                x._backend, device)
    return _run_fast(executable, [x._buffer, y._buffer], is_committed(x) or is_committed(y))


trace.set_eager_executor(apply_primitive)


# --- readback of dtypes DLPack lacks -------------------------------------------------------------------
_bitcast_executables = caches.ComputeOnceCache()  # (shape, device) -> Executable


def _bitcast_to_uint16(array: Array) -> Array:
    aval, backend, device = array.aval, array._backend, array._device

    def compile_bitcast():
        from .stablehlo import tensor_type

        source = tensor_type(aval.shape, aval.dtype)
        target = tensor_type(aval.shape, dtypes.uint16)
        text = (
            "module @bitcast_readback {\n"
            f"  func.func public @main(%arg0: {source}) -> ({target}) {{\n"
            f'    %0 = "stablehlo.bitcast_convert"(%arg0) : ({source}) -> {target}\n'
            f"    return %0 : {target}\n  }}\n}}"
        )
        compiled = xla.compile_module(text, backend, [device])
        return Executable("bitcast_readback", compiled, backend, device, [aval],
                          [ShapedArray(aval.shape, dtypes.uint16)], [], text, [])

    return _bitcast_executables.get((aval.shape, device), compile_bitcast)(array)[0]


array_module.bitcast_readback = _bitcast_to_uint16


@caches.register
def _clear_caches():
    for cache in (primitive_cache, _fast_executables, _bitcast_executables, _scalar_arrays, _scalar_buffers):
        cache.clear()
