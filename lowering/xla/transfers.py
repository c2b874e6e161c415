"""Transfers and readback: host arrays to a device, buffers between devices, buffers back to host arrays (a view
on a CPU, jaxlib's host copy elsewhere) or shared through DLPack, waits for a buffer's value, the handlers that
wrap a program's outputs, what a buffer can be asked (its device, whether it was deleted), and the raw arrays of
programs over several devices, assembled from and split into single-device buffers."""

import _imp
import contextlib
import os
import sys
import time

import numpy as np

from . import _jaxlib

_jax = xc = None  # jaxlib's runtime, set when it loads (_jaxlib.load_jaxlib)


class HostAval:
    """The minimal aval jaxlib wants for a transfer or a result handler."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = False


_HANDLER_TAKES_SKIP_CHECKS = True


def result_handler(shape, dtype, backend, device):
    """A handler turning an executable's output into a raw jaxlib array (built once per executable)."""
    return array_handler(HostAval(shape, dtype), backend.sharding(device))


def array_handler(aval, sharding):
    """jaxlib's handler turning an output of `aval` laid out by the jaxlib `sharding` into a raw array."""
    global _HANDLER_TAKES_SKIP_CHECKS
    if _HANDLER_TAKES_SKIP_CHECKS:
        try:
            return _jax.array_result_handler(aval, sharding, True, _skip_checks=True)
        except TypeError:  # jaxlib >= 0.11 dropped the keyword
            _HANDLER_TAKES_SKIP_CHECKS = False
    return _jax.array_result_handler(aval, sharding, True)


def device_put(value: np.ndarray, backend, device):
    """Copies a host array to `device` (always a copy: the host array may change later)."""
    aval = HostAval(value.shape, value.dtype)
    return _jax.batched_device_put(aval, backend.sharding(device), [value], [device], True, True,
                                           enable_x64=True)


def copy_to_device(buffer, shape, dtype, backend, device):
    """Moves a buffer to another device of the same backend (a RuntimeError for a deleted one, whose copy would
    crash the process)."""
    if buffer.is_deleted():
        raise RuntimeError("this array was deleted (donated to a jitted function, or deleted explicitly)")
    sharding = backend.sharding(device)
    copy_semantics = _jax.ArrayCopySemantics.ALWAYS_COPY
    return _jax.batched_copy_array_to_devices_with_sharding(
        [buffer], [backend.device_list([device])], [sharding], [copy_semantics])[0]


class _DLPackView:
    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer

    def __dlpack__(self, stream=None, **_):
        return dlpack_capsule(self.buffer)

    def __dlpack_device__(self):
        return (1, 0)


def dlpack_capsule(buffer, stream=None):
    """A DLPack capsule sharing `buffer` (the consumer's `stream`, on GPUs, waits for it to be ready)."""
    return _jax.buffer_to_dlpack_managed_tensor(buffer, stream=stream)


def to_numpy(buffer) -> np.ndarray:
    """A read-only host array of a CPU buffer's contents (the caller handles bfloat16, which neither way below
    knows).

    Through the buffer protocol (jaxlib's CPU arrays export it; it waits for the buffer to be ready), the array is
    a view, as jax's is: it holds the runtime's external reference on the buffer, which keeps the memory alive
    after the array is deleted and makes a donation of it copy instead of reusing the memory
    (tests/test_eager_fast_paths.py checks both). Through DLPack, where the protocol is refused (another layout,
    a jaxlib without it), a copy: a DLPack consumer still holding the buffer when it is deleted aborts the
    process."""
    try:
        return np.asarray(memoryview(buffer))
    except (BufferError, TypeError):
        return np.array(np.from_dlpack(_DLPackView(buffer)), copy=True)


def to_numpy_via_host_copy(buffer) -> np.ndarray:
    """Readback for non-CPU buffers: jaxlib's own host copy. Where jaxlib copied (a GPU buffer's value, brought
    into a host array of its own), that read-only array is the caller's and is not copied again (np.asarray then
    costs what jaxlib's copy costs: bench/RESULTS.md, "Host overhead per call", session 13). A view of memory the
    runtime still owns is copied.

    jaxlib keeps a reference to a copy's destination until the copy is done, and drops it only when its deferred
    garbage is next collected; it is collected here, so that a dropped readback frees its memory at once."""
    array, did_copy = buffer._single_device_array_to_np_array_did_copy()
    if did_copy:
        _jaxlib.collect_runtime_garbage()
        return array
    return np.array(array, copy=True)


def copy_to_host_async(buffer, backend):
    """Starts jaxlib's host copy of a buffer that a later `to_numpy_via_host_copy` returns. On a CPU, where a
    readback is a view of the buffer's memory, there is nothing to start (and jaxlib's call would import jax)."""
    if backend.platform != "cpu":
        buffer._copy_single_device_array_to_host_async()


def buffer_device(buffer):
    return buffer._sharding._internal_device_list[0]


def is_deleted(buffer):
    return buffer.is_deleted()


def delete(buffer):
    buffer.delete()


# A wait on a GPU polls readiness for up to this long before it blocks in the runtime: there the runtime's blocking
# wait wakes its thread 10-20 us after the device is done, and polling sees it at once (bench/gpu_latency.py).
# A longer program is waited for as before, the budget spent; other threads get the GIL at the usual switches.
# On a CPU the runtime's blocking wait is the quicker: polling made a 120 us program's call + wait 10 us slower
# on this project's 2-core machine, whose cores the program's threads need.
SPIN_WAIT_SECONDS = 200e-6


def wait(buffer, poll):
    """Blocks until a live buffer's value is computed; raises the program's error if it failed. With `poll` (a
    backend whose `polls_waits`), its readiness is polled first (the caller made sure that the buffer is live:
    jaxlib's is_ready() crashes the process on a deleted buffer)."""
    if poll and not buffer.is_ready():
        deadline = time.perf_counter() + SPIN_WAIT_SECONDS
        while not buffer.is_ready() and time.perf_counter() < deadline:
            os.sched_yield()
    buffer.block_until_ready()


def block_until_ready(buffers, poll):
    for buffer in buffers:
        if buffer.is_deleted():
            buffer.block_until_ready()  # the runtime's error for a deleted buffer
        wait(buffer, poll)


# --- arrays over several devices ----------------------------------------------------------------
def multi_device_result_handler(shape, dtype, devices, sharding):
    """A handler turning a multi-device program's output into one raw array over `devices` (the program's
    device order) laid out by the HLO `sharding` (built once per executable)."""
    return array_handler(HostAval(shape, dtype), _jax.GSPMDSharding(list(devices), sharding))


def assemble(shape, dtype, devices, sharding, shards):
    """One raw array over `devices` (the program's device order) from single-device buffers (one per device,
    in that order) laid out by the HLO `sharding`, as a multi-device program takes its arguments."""
    return _jax.ArrayImpl(HostAval(shape, dtype), _jax.GSPMDSharding(list(devices), sharding), list(shards), True,
                          _skip_checks=True)


def split(array):
    """The single-device buffers of a multi-device raw array (its addressable ones, in its devices' order)."""
    with _jax_imports_refused():  # jaxlib would import jax to describe each piece
        return array._arrays


_JAX_MODULES = ("jax", "jax.core", "jax._src", "jax._src.sharding_impls")


@contextlib.contextmanager
def _jax_imports_refused():
    """jaxlib, splitting an array into its shards, imports jax (when installed) to build jax's
    single-device shardings: 0.4 s, and it changes jaxlib's array class for the whole process (RUNTIME.md
    traps 1 and 2). While jax is not imported, its modules are marked unavailable for the call (under the
    import lock, so that no other thread's import sees the marks), and jaxlib uses its own sharding class."""
    if "jax" in sys.modules:
        yield
        return
    _imp.acquire_lock()
    try:
        for name in _JAX_MODULES:
            sys.modules[name] = None
        yield
    finally:
        for name in _JAX_MODULES:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        _imp.release_lock()
