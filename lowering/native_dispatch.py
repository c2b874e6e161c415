"""The base class of `numax.jit`'s callable, which answers cache hits, and the eager fast paths' runner.

The native call path (`_native_dispatch.c`, built at install when a C compiler is there) answers a
cache hit of a positional call made of numax Arrays, Python scalars, tuples, lists and dicts without
running Python code: key, lookup, execute, output wrapping; and, once `configure_sharded` ran, a hit of
sharded jit or pmap (`PmapFunction` is a CachedCall too) on ShardedArrays laid out as the program takes
them. Every other call, and every call while the `numax_native_dispatch` flag is off, goes to the
subclass's `_call`, the Python path, which stays the reference. Without the extension, `CachedCall` is
a plain class whose `__call__` is that Python path.
`run_single` runs a one-output executable and wraps its result, in C when it is built; `eager_unary_with`
gives the eager one-argument fast path, whose hits the extension answers. (numax.Array's waits and readback
come from the extension's `ArrayBase`, see lowering/array.py.)
"""

import numpy as np

from . import xla
from .array import Array

try:
    from . import _native_dispatch
except ImportError:  # built without a C compiler: the Python path serves every call
    _native_dispatch = None

available = _native_dispatch is not None

# The dtypes a CPU buffer is read back as through the buffer protocol (not bfloat16 and the other ml_dtypes).
_buffer_protocol_dtypes = tuple(np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))

if available:
    CachedCall = _native_dispatch.CachedCall
    run_single = _native_dispatch.run_single
    _native_dispatch.configure_arrays(np.asarray, _buffer_protocol_dtypes)
else:
    class CachedCall:
        """Subclasses define `_call(*args, **kwargs)`, the call itself."""

        def __call__(self, *args, **kwargs):
            return self._call(*args, **kwargs)

    def run_single(executable, buffers):
        """The one output of a one-device Executable without constants, run on `buffers`, as an Array."""
        (output,) = xla.execute(executable.compiled, buffers, executable.handlers)
        return Array(executable.out_avals[0], output, executable.backend, executable.device)


def eager_unary_with(table, python_eager_unary):
    """The eager fast path of one-argument primitives, `(primitive, x) -> Array or None`: in C when the extension
    is built, answering from `table` ({(primitive, aval, device): Executable}) and calling `python_eager_unary`
    for everything else; `python_eager_unary` itself otherwise."""
    if not available:
        return python_eager_unary
    _native_dispatch.configure_eager(table, python_eager_unary)
    return _native_dispatch.eager_unary


def configure(executable_type, cache_entry_type, statistics):
    """Hands the native path the types and state it reads: lowering/dispatch.py's Executable (passed in, as that
    module imports this one), jit's cache entry type and the process-wide JitStatistics (the Array type, config
    and the trace state are looked up here)."""
    if not available:
        return
    from ..core.config import Config, config
    from ..core.trace import trace_state

    _native_dispatch.configure(Array, executable_type, cache_entry_type, config, Config, trace_state, statistics)


def configure_sharded(sharded_array_type, multi_device_call_type):
    """Hands the native path the types of arrays and calls over several devices (lowering/sharded_array.py's
    ShardedArray, lowering/sharded.py's MultiDeviceCall): cache hits of sharded jit and pmap are then answered
    natively too."""
    if available:
        _native_dispatch.configure_sharded(sharded_array_type, multi_device_call_type)
