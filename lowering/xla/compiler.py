"""Compile and executables: a StableHLO module verified and compiled for a backend's devices into a loaded
executable (or loaded from the persistent compilation cache, lowering/compile_cache.py, which this module feeds
with keys and serialized executables), with the custom call targets it needs registered first and compile events
reported as jax reports them; the HLO shardings of a program over several devices (given, and chosen by XLA);
running an executable, keeping the runtime tokens of those that call host callbacks. jax's `jax._src.compiler`
under numax.compat is this module: every compile goes through its `backend_compile_and_load`, which tools wrap."""

import os
import re
import sys
import threading
import time

import numpy as np

from ...core.config import config
from . import _jaxlib
from .backends import Backend
from .hlo import LoweringError, compilable_module

_jax = xc = None  # jaxlib's runtime, set when it loads (_jaxlib.load_jaxlib)


def compile_module(text: str, backend: Backend, devices, host_callbacks=(), num_replicas=1, num_partitions=1,
                   compiler_options=None, spmd=False, log_as=None):
    """Verifies and compiles a module for `devices`; returns the loaded executable. `compiler_options`
    ({XLA option name: value}) override XLA's debug options for this compile, as jax.jit's do. An `spmd`
    module (over `num_partitions` devices) is split over the devices by XLA's Shardy partitioner.
    Threads compile concurrently: PJRT clients are thread-safe.

    With the persistent compilation cache on (lowering/compile_cache.py), an executable stored for the same
    key is loaded instead, and a fresh one is stored.

    Under `jax_log_compiles`, `log_as` = (what, reason or None) names the program in the one line printed:
    "compiled <what> in N ms (<reason>)", or "loaded <what> from the persistent compilation cache ..."."""
    _ensure_custom_call_targets(text, backend)
    _check_host_callback_indices(text, host_callbacks)
    settings = (num_replicas, num_partitions, compiler_options, spmd)
    cache_root = config.compilation_cache_dir and _compile_cache().directory()
    start = time.perf_counter()
    wall_start = time.time()  # jax.monitoring's time spans are wall-clock seconds
    if cache_root:
        from ...core import monitoring  # (loaded by the first compile, not by `import numax`)

        monitoring.record_event(monitoring.CACHE_REQUEST_EVENT)
        compile_cache = _compile_cache()
        key = compile_cache.cache_key(_cache_key_fields(text, backend, devices, len(host_callbacks), *settings))
        executable = compile_cache.lookup(cache_root, key,
                                          lambda blob: deserialize(blob, backend, devices, host_callbacks),
                                          backend.loads_serialized_executables())
        if executable is not None:
            monitoring.record_event(monitoring.CACHE_HIT_EVENT)
            _record_compile_time(log_as, time.perf_counter() - start, wall_start)
            if config.log_compiles:
                compile_cache.log_hit(text, key, time.perf_counter() - start, log_as)
            return executable
        monitoring.record_event(monitoring.CACHE_MISS_EVENT)
        start = time.perf_counter()
    executable = _compile(text, backend, devices, host_callbacks, *settings)
    seconds = time.perf_counter() - start
    _record_compile_time(log_as, seconds, wall_start)
    if cache_root:
        compile_cache.remember(cache_root, key, seconds, executable.serialize)
    if config.log_compiles and log_as is not None:
        what, reason = log_as
        print(f"numax: compiled {what} in {1e3 * seconds:.1f} ms" + (f" ({reason})" if reason else ""),
              file=sys.stderr)
    return executable


def _record_compile_time(log_as, seconds, wall_start):
    """jax.monitoring's backend-compile event (as jax records it, cache hits included), for its listeners;
    `fun_name` is the program's name."""
    from ...core import monitoring

    if monitoring.timing_listened():
        fun_name = log_as[0].split(" for ")[0] if log_as else "main"
        monitoring.record_event_duration_secs(monitoring.BACKEND_COMPILE_EVENT, seconds, fun_name=fun_name)
        monitoring.record_event_time_span(monitoring.BACKEND_COMPILE_EVENT, wall_start, time.time(),
                                          fun_name=fun_name)


def _compile_cache():
    """The persistent cache's module, imported on first use: its imports (hashlib, json, tempfile) would add
    about 9 ms to `import numax` for every program that leaves the cache off."""
    from .. import compile_cache

    return compile_cache


def _compile(text, backend, devices, host_callbacks, num_replicas, num_partitions, compiler_options, spmd):
    module = compilable_module(text)
    options = xc.CompileOptions()
    options.num_replicas = num_replicas
    options.num_partitions = num_partitions
    if spmd:
        options.executable_build_options.use_spmd_partitioning = True
        options.executable_build_options.use_shardy_partitioner = True
    if compiler_options:
        options.env_option_overrides = [(str(name), _option_value(value)) for name, value in compiler_options.items()]
    # Always assigned: without it XLA runs a one-device program on device 0, whatever `devices` says.
    ids = np.array([d.id for d in devices], dtype=np.int32).reshape(num_replicas, num_partitions)
    options.device_assignment = xc.DeviceAssignment.create(ids)
    return backend_compile_and_load(backend, module, backend.device_list(devices), options, list(host_callbacks))


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks):
    """XLA's compile of a parsed module: every program numax compiles goes through this one function, called
    through this module's attribute (as `jax._src.compiler.backend_compile_and_load`, which tools such as chex's
    `restrict_backends` wrap to watch or refuse compiles for a platform)."""
    return backend.client.compile_and_load(module, executable_devices, options, host_callbacks)


# Environment variables read when XLA compiles that change the code it makes (XLA_FLAGS holds XLA's own
# options; the rest of the environment numax reads reaches the program through the module text).
_CODEGEN_ENVIRONMENT = ("XLA_FLAGS",)


def _cache_key_fields(text, backend, devices, callback_count, num_replicas, num_partitions, compiler_options, spmd):
    """Everything that changes the executable compiled from `text`, for the persistent cache's key.

    Programs with host callbacks are cached too: the module calls each callback by its position in the list
    given to compile (the `index` attribute of its custom call, part of the text), and a loaded executable
    is given this process's list, built by lowering the same program, in the same order. So an executable is
    only ever loaded with the callbacks of a module with the same text; the count is part of the key as well,
    so that one is never loaded with more or fewer callbacks than it was compiled for."""
    return {
        "module": _compile_cache().text_digest(text),
        "replicas": num_replicas,
        "partitions": num_partitions,
        "spmd": spmd,
        "compiler_options": sorted((str(name), repr(_option_value(value)))
                                   for name, value in (compiler_options or {}).items()),
        "device_ids": [device.id for device in devices],
        "device_kinds": [device.device_kind for device in devices],
        "platform": [backend.platform, backend.client.platform_version, backend.client_kind],
        "processes": [backend.process_index, len(backend.global_devices)],
        "versions": [_jaxlib.jaxlib_version(), sys.modules["numax"].__version__],
        "environment": {name: os.environ.get(name) for name in _CODEGEN_ENVIRONMENT},
        "host_callbacks": callback_count,
    }


def _option_value(value):
    """An XLA option value as CompileOptions takes it: bool, int, float or str."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"compiler_options values must be bool, int, float or str, got {type(value).__name__}: {value!r}")


def _check_host_callback_indices(text, host_callbacks):
    """A Python-callback custom call whose index is past the end of `host_callbacks` segfaults in XLA."""
    if "_python_" not in text:
        return
    for index in re.findall(r"python_(?:cpu|gpu)_callback\".*?index = (\d+) : ui64", text):
        if int(index) >= len(host_callbacks):
            raise LoweringError(f"module calls host callback {index}, but only {len(host_callbacks)} were given "
                                "(this is a numax bug)")


# --- custom call targets (LAPACK on the CPU) -------------------------------------------------------
_lapack_ready = False


def _ensure_custom_call_targets(text, backend):
    """Registers and initializes LAPACK kernels before the first module that calls one compiles."""
    global _lapack_ready
    if backend.platform != "cpu" or _lapack_ready or "lapack_" not in text:
        return
    with _jaxlib.lock:  # once, even when threads compile their first linalg programs together
        if _lapack_ready:
            return
        from jaxlib.cpu import _lapack

        _lapack.initialize()  # must precede execution: registered but uninitialized kernels segfault
        for name, capsule in _lapack.registrations().items():
            xc.register_custom_call_target(name, capsule, platform="cpu", api_version=1)
        _lapack_ready = True


# --- serialized executables (the persistent cache's entries) ---------------------------------------
def serialize(executable) -> bytes:
    return executable.serialize()


def deserialize(blob: bytes, backend: Backend, devices, host_callbacks=()):
    return backend.client.deserialize_executable(blob, backend.device_list(devices), None, list(host_callbacks))


# --- HLO shardings (programs over several devices) -------------------------------------------------
def tiled_hlo_sharding(blocks, tile_devices, copies):
    """The HLO sharding of an array split into `blocks` (per dimension), each block on `copies` devices;
    `tile_devices` lists the devices' positions in the program's device order, tile by tile (row-major,
    the copies of one block adjacent)."""
    if copies == len(tile_devices):
        return xc.HloSharding.replicate()
    dims = list(blocks) + ([copies] if copies > 1 else [])
    replicated = " last_tile_dim_replicate" if copies > 1 else ""
    return xc.HloSharding.from_string(
        f"{{devices=[{','.join(map(str, dims))}]{','.join(map(str, tile_devices))}{replicated}}}")


def hlo_sharding_layout(sharding, ndim):
    """(blocks per dimension, block coordinates of each device in the program's device order) of an HLO
    sharding a compiled program reports for one of its outputs."""
    hlo = sharding if isinstance(sharding, xc.HloSharding) else xc.HloSharding.from_proto(sharding)
    if hlo.is_replicated():
        return (1,) * ndim, None
    if hlo.is_maximal() or hlo.is_manual() or hlo.tuple_elements():
        raise NotImplementedError(f"an output sharding numax cannot describe: {hlo}")
    dims = hlo.tile_assignment_dimensions()
    coordinates = {}
    for position, device in enumerate(hlo.tile_assignment_devices()):
        coordinates[device] = np.unravel_index(position, dims)[:ndim]
    return tuple(dims[:ndim]), [tuple(int(c) for c in coordinates[k]) for k in range(len(coordinates))]


def same_hlo_sharding(hlo, reported):
    """Whether an HLO sharding equals one a compiled program reports (an OpSharding proto or an HloSharding)."""
    other = reported if isinstance(reported, xc.HloSharding) else xc.HloSharding.from_proto(reported)
    return hlo == other


def output_shardings(executable):
    """The HLO shardings XLA chose for a partitioned program's outputs (None for a one-device program)."""
    return executable.get_output_shardings()


def parameter_shardings(executable):
    """The HLO shardings XLA chose for a partitioned program's arguments (None for a one-device program)."""
    return executable.get_parameter_shardings()


# --- running executables -----------------------------------------------------------------------
def execute(executable, buffers, handlers):
    """Runs a compiled program on device buffers; returns raw output buffers (asynchronously)."""
    return executable.execute_sharded(buffers).consume_with_handlers(handlers)


# The runtime token of the latest program with host callbacks launched on each device: programs on one device
# run in launch order, so once that one is done, every callback launched before it has run. A program without
# outputs leaves nothing else to wait for.
_latest_effect_tokens = {}
_effect_tokens_lock = threading.Lock()


def execute_with_effects(executable, buffers, handlers):
    """`execute` for a program that calls host callbacks: its token is kept for `wait_for_effects`."""
    results = executable.execute_sharded(buffers, with_tokens=True)
    token = results.consume_token()
    with _effect_tokens_lock:
        for device in executable.local_devices():
            _latest_effect_tokens[device] = token
    return results.consume_with_handlers(handlers)


def executor(host_callbacks):
    """How to run a program: `execute_with_effects` when it calls host callbacks, else `execute`."""
    return execute_with_effects if host_callbacks else execute


def wait_for_effects():
    """Waits until every program with host callbacks launched so far has finished."""
    with _effect_tokens_lock:
        tokens = list(_latest_effect_tokens.values())
        _latest_effect_tokens.clear()
    for token in tokens:
        token.block_until_ready()
