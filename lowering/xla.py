"""The XLA runtime: the one module that touches jaxlib.

Owns the PJRT clients (CPU, and CUDA through the PJRT plugin, loaded without jax), devices, XLA's
distributed runtime (the coordination service and client of a multi-process run), parsing and verifying
StableHLO, compiling, host<->device transfers, executing, host callbacks and the LAPACK/cuSOLVER kernel
registrations. Everything here is jax-free: see ../shared/RUNTIME.md for the
API facts and the traps this module guards against.
"""

import _imp
import contextlib
import ctypes
import functools
import gc
import glob
import importlib.util
import os
import re
import sys
import threading
import time

import numpy as np

from ..core.config import config

_lock = threading.RLock()

# jaxlib's runtime costs about a third of `import jax`, so it loads on first need: when the first backend is
# made, which every transfer, compile and device query goes through (`load_jaxlib`). Until then these are None.
# (No module `__getattr__` stands in for them: it would slow every `xla.` read on the dispatch path.)
_jax = None
xc = None


def load_jaxlib():
    """Imports jaxlib's XLA runtime (once)."""
    global _jax, xc
    if xc is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # read when jaxlib loads
        from jaxlib import _jax
        from jaxlib import xla_client as xc

        gc.callbacks.append(collect_runtime_garbage)


def jaxlib_version() -> str:
    """The installed jaxlib's version string."""
    from jaxlib import version

    return version.__version__


def _installed_jaxlib_release():
    """(major, minor, patch) of the installed jaxlib, from its distribution's metadata directory
    (`jaxlib-<version>.dist-info`): importing jaxlib to ask would import subprocess and more."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is not None and spec.submodule_search_locations:
        site_packages = os.path.dirname(next(iter(spec.submodule_search_locations)))
        for entry in os.listdir(site_packages):
            found = re.fullmatch(r"jaxlib-(\d+)\.(\d+)\.(\d+)[^-]*\.dist-info", entry)
            if found:
                return found.groups()
    return re.findall(r"\d+", jaxlib_version())[:3]


# Where jax releases differ, numax follows the one matching this jaxlib (config.jax_semantics).
config.set_jax_semantics(_installed_jaxlib_release())


def is_device(value) -> bool:
    """True for a jaxlib Device (none can exist before jaxlib loads)."""
    return xc is not None and isinstance(value, xc.Device)


class LoweringError(Exception):
    """numax produced a StableHLO module that does not verify: a numax bug, reported with the module."""


# --- backends ----------------------------------------------------------------------------------
class Backend:
    """One PJRT client and its devices."""

    def __init__(self, platform, client, client_kind=""):
        self.platform = platform
        self.client = client
        self.client_kind = client_kind  # which of a platform's clients (numax_gpu_client): its executables differ
        self.polls_waits = platform != "cpu"  # see SPIN_WAIT_SECONDS
        self.devices = client.local_devices()  # this process's (addressable) devices
        self.global_devices = client.devices()  # every process's, in the order of their ids
        self.device_set = frozenset(self.global_devices)
        self.process_index = client.process_index()
        self.default_device = self.devices[0]
        self.device_lists = {}
        self.shardings = {}

    def loads_serialized_executables(self):
        """Whether the client can load a serialized executable (the persistent cache's entries). jaxlib loads a
        GPU executable only while a GPU plugin is initialized under its platform's own name ("cuda", "rocm"),
        and fails with "Supported GPU plugins not found" otherwise (bench/gpu_cache_probe.py). numax registers
        its plugin under another name, so that jax in the same process can still register its own: a GPU entry
        loads in a process where jax has made its GPU client, and is compiled afresh elsewhere."""
        return self.platform == "cpu" or any(xc.pjrt_plugin_loaded(name) and xc.pjrt_plugin_initialized(name)
                                             for name in ("cuda", "rocm"))

    def device_list(self, devices):
        key = tuple(devices)
        found = self.device_lists.get(key)
        if found is None:
            found = self.device_lists[key] = xc.DeviceList(key)
        return found

    def sharding(self, device):
        """The single-device sharding of `device` (replicated over one device)."""
        found = self.shardings.get(device)
        if found is None:
            found = self.shardings[device] = _jax.GSPMDSharding([device], xc.HloSharding.replicate())
        return found

    def __repr__(self):
        return f"Backend({self.platform}, {len(self.devices)} devices)"


_backends = {}


def _make_cpu_backend():
    runtime = _distributed_runtime
    # jax_num_cpu_devices (JAX's sharding tutorials set it first thing) asks for that many CPU devices, as the
    # XLA_FLAGS device count does; it counts when set before the CPU backend starts, as in jax.
    num_devices = config.num_cpu_devices if config.num_cpu_devices > 0 else None
    _size_cpu_thread_pool(across_processes=runtime is not None, num_devices=num_devices)
    if runtime is None:
        return Backend("cpu", xc.make_cpu_client(num_devices=num_devices))
    # Across processes, CPU collectives go through gloo over TCP; peers find each other through the
    # coordination service's key-value store.
    collectives = _jax.make_gloo_tcp_collectives(distributed_client=runtime.client)
    client = xc.make_cpu_client(distributed_client=runtime.client, node_id=runtime.process_id,
                                num_nodes=runtime.num_processes, collectives=collectives,
                                get_local_topology_timeout_minutes=runtime.topology_timeout_minutes,
                                get_global_topology_timeout_minutes=runtime.topology_timeout_minutes)
    return Backend("cpu", client)


def _size_cpu_thread_pool(across_processes=False, num_devices=None):
    """XLA's CPU client sizes its thread pool from the core count. With more (forced) devices than cores, a
    program with collectives enqueued while another still runs waits for threads that never come, and XLA
    aborts the process after 40 s (a pmap training loop does exactly this). Across processes it is worse:
    gloo collectives hold a pool thread while they wait for the other processes, and a loop of pmap steps
    over 2 devices per process on 2 cores hangs for good. A pool of at least 32 threads, or 4 per device,
    avoids both; numax sets PJRT_NPROC so before the client starts, unless the user set it."""
    found = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    devices = num_devices or (int(found.group(1)) if found else 1)
    if (across_processes or devices > (os.cpu_count() or 1)) and "PJRT_NPROC" not in os.environ:
        os.environ["PJRT_NPROC"] = str(max(32, 4 * devices))


def _preload_nvidia_libraries():
    """Loads the CUDA libraries shipped as `nvidia-*` wheels, as the CUDA plugin expects."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return
    for root in spec.submodule_search_locations:
        for pattern in ("cu*/lib/libcudart.so*", "cuda_runtime/lib/libcudart.so*", "*/lib/libcublasLt.so*",
                        "*/lib/libcublas.so*", "*/lib/libcusparse.so*", "*/lib/libcusolver.so*",
                        "*/lib/libcufft.so*", "*/lib/libnvJitLink.so*", "*/lib/libcudnn.so*",
                        "*/lib/libnccl.so*", "*/lib/libcupti.so*", "cu*/lib/libcu*.so*"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                try:
                    ctypes.cdll.LoadLibrary(path)
                except OSError:
                    pass


def _find_cuda_plugin():
    """(plugin .so path, kernels extension module name) for the installed CUDA PJRT plugin, or None."""
    for entry in sys.path:
        for version in ("13", "12"):
            so_path = os.path.join(entry, "jax_plugins", f"xla_cuda{version}", "xla_cuda_plugin.so")
            if os.path.exists(so_path):
                return so_path, f"jax_cuda{version}_plugin"
    return None


# Registered under numax's own name so that jax (the tests' oracle) can still load its own copy.
_CUDA_PLUGIN_NAME = "numax_cuda"


def _make_cuda_backend():
    found = _find_cuda_plugin()
    if found is None:
        return None
    so_path, kernels_package = found
    _preload_nvidia_libraries()
    if not xc.pjrt_plugin_loaded(_CUDA_PLUGIN_NAME):
        c_api = xc.load_pjrt_plugin_dynamically(_CUDA_PLUGIN_NAME, so_path)
    else:
        c_api = None
    if not xc.pjrt_plugin_initialized(_CUDA_PLUGIN_NAME):
        xc.initialize_pjrt_plugin(_CUDA_PLUGIN_NAME)
    options = {"platform_name": "cuda", "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"),
               "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false").lower() == "true"}
    if config.gpu_client == "tfrt":
        options["use_tfrt_gpu_client"] = True  # (a plugin without the option refuses it, naming it)
    runtime = _distributed_runtime
    if runtime is None:
        client = xc.make_c_api_client(_CUDA_PLUGIN_NAME, options)
    else:  # across processes the plugin runs NCCL, set up through the coordination service (untested here)
        options.update(node_id=runtime.process_id, num_nodes=runtime.num_processes)
        if runtime.local_device_ids is not None:
            options["visible_devices"] = list(runtime.local_device_ids)
        client = xc.make_c_api_client(_CUDA_PLUGIN_NAME, options, runtime.client)
    _register_gpu_kernels(c_api, kernels_package)
    return Backend("gpu", client, config.gpu_client)


def _register_gpu_kernels(c_api, kernels_package):
    """Registers the CUDA plugin's FFI handlers (host callbacks) and cuSOLVER kernels with XLA."""
    if c_api is None:
        return
    try:
        extension = importlib.import_module(f"{kernels_package}.cuda_plugin_extension")
    except ImportError:
        return
    xc.register_custom_call_handler("CUDA", functools.partial(extension.register_custom_call_target, c_api))
    # FFI type ids the GPU handlers use; without them compiling a host callback fails ("Type id ... is not
    # registered with a static registry").
    if hasattr(extension, "register_custom_type") and hasattr(xc, "register_custom_type_handler"):
        xc.register_custom_type_handler("CUDA", functools.partial(extension.register_custom_type, c_api))
        for name, type_id in extension.ffi_types().items():
            xc.register_custom_type(name, type_id, platform="CUDA")
    registrations = dict(extension.ffi_handlers()) if hasattr(extension, "ffi_handlers") else {}
    triton = gpu_triton_module()
    if triton is not None:
        # the legacy target (api_version 2: the opaque bytes are the backend_config), which numax no longer emits
        # (triton_gpu.py says why) but modules written by older numax or other tools may call
        xc.register_custom_call_target("triton_kernel_call", triton.get_custom_call(), platform="CUDA")
        registrations.update(triton.registrations())  # triton_kernel_call_ffi
    for module_name in ("_solver", "_linalg"):
        try:
            registrations.update(importlib.import_module(f"{kernels_package}.{module_name}").registrations())
        except ImportError:
            continue
    for name, capsule in registrations.items():
        xc.register_custom_call_target(name, capsule, platform="CUDA", api_version=1)


def gpu_triton_module():
    """The CUDA plugin's Triton kernel-call builder (`TritonKernel`, `TritonKernelCall`,
    `create_array_parameter`, ...; what `jaxlib.gpu_triton` re-exports), or None without the plugin."""
    found = _find_cuda_plugin()
    if found is None:
        return None
    load_jaxlib()  # the extension's types refer to jaxlib's
    try:
        return importlib.import_module(f"{found[1]}._triton")
    except ImportError:
        return None


def gpu_compute_capability(device=None) -> int:
    """The compute capability of a CUDA device (default: the GPU backend's first) as 10 * major + minor."""
    if device is None:
        device = get_backend("gpu").devices[0]
    capability = getattr(device, "compute_capability", None)  # a PJRT device attribute: "9.0"
    if capability is None:
        return int(gpu_triton_module().get_compute_capability(device.local_hardware_id or 0))
    major, minor = str(capability).split(".")
    return 10 * int(major) + int(minor)


# --- the distributed runtime (one process of several) ----------------------------------------------------
class DistributedRuntime:
    """This process's membership in a multi-process run: its coordination client and, on process 0, the
    coordination service. Backends made while it is set span every process's devices."""

    def __init__(self, client, service, process_id, num_processes, local_device_ids, topology_timeout_minutes):
        self.client = client
        self.service = service
        self.process_id = process_id
        self.num_processes = num_processes
        self.local_device_ids = local_device_ids
        self.topology_timeout_minutes = topology_timeout_minutes


_distributed_runtime = None


def backends_exist() -> bool:
    return bool(_backends)


def join_distributed_runtime(coordinator_address, bind_address, num_processes, process_id, local_device_ids, *,
                             init_timeout, heartbeat_timeout, shutdown_timeout):
    """Starts the coordination service (process 0, listening on `bind_address`) and connects this process's
    client to it (blocking until every process has connected, at most `init_timeout` seconds). A process
    that stops sending heartbeats for `heartbeat_timeout` seconds is declared dead, and the coordination
    service then ends every other process with an error instead of leaving it waiting in a collective."""
    global _distributed_runtime
    with _lock:
        load_jaxlib()
        service = None
        if process_id == 0:
            service = _jax.get_distributed_runtime_service(bind_address, num_processes,
                                                           heartbeat_timeout=heartbeat_timeout,
                                                           shutdown_timeout=shutdown_timeout)
        try:
            client = _jax.get_distributed_runtime_client(coordinator_address, process_id, init_timeout=init_timeout,
                                                         heartbeat_timeout=heartbeat_timeout,
                                                         shutdown_timeout=shutdown_timeout, use_compression=True)
            client.connect()
        except BaseException:
            if service is not None:
                service.shutdown()
            raise
        # The device topology is exchanged when the first backend starts: bounded like the connection.
        _distributed_runtime = DistributedRuntime(client, service, process_id, num_processes, local_device_ids,
                                                  topology_timeout_minutes=max(1, -(-init_timeout // 60)))


def leave_distributed_runtime():
    """Shuts down this process's client (waiting for the other processes, at most the shutdown timeout), then
    the service on process 0. Backends made before keep their devices."""
    global _distributed_runtime
    with _lock:
        runtime, _distributed_runtime = _distributed_runtime, None
    if runtime is not None:
        runtime.client.shutdown()
        if runtime.service is not None:
            runtime.service.shutdown()


def distributed_runtime():
    """The DistributedRuntime this process joined, or None."""
    return _distributed_runtime


def available_platforms():
    """The platforms asked for, in order of preference: `config.platform_name`, from NUMAX_PLATFORMS or
    JAX_PLATFORMS (or `config.update('jax_platforms', ...)` before the first computation); empty: any."""
    wanted = config.platform_name or ""
    return [p.strip() for p in wanted.split(",") if p.strip()]


def get_backend(platform=None):
    """The backend for `platform` ('cpu', 'gpu'), or the default: the GPU when one is present."""
    with _lock:
        if platform is None:
            return default_backend()
        platform = "gpu" if platform in ("cuda", "gpu") else platform
        backend = _backends.get(platform)
        if backend is None:
            load_jaxlib()
            if platform == "cpu":
                backend = _make_cpu_backend()
            elif platform == "gpu":
                backend = _make_cuda_backend()
                if backend is None:  # jax's wording, which code matches
                    raise RuntimeError("Unknown backend: 'gpu' requested, but no platforms that are instances of gpu "
                                       "are present (the CUDA PJRT plugin jax-cuda13-pjrt is not installed). "
                                       "Platforms present are: cpu")
            else:
                raise RuntimeError(f"Unknown backend {platform}. Available backends are {sorted({'cpu', *_backends})} "
                                   "(numax runs on 'cpu' and 'gpu')")
            _backends[platform] = backend
        return backend


@functools.lru_cache(maxsize=1)
def _default_platform():
    wanted = available_platforms()
    for platform in wanted or ["gpu", "cpu"]:
        platform = "gpu" if platform == "cuda" else platform
        if platform == "gpu":
            if _find_cuda_plugin() is None:
                continue
            try:
                get_backend("gpu")
            except Exception:  # no GPU driver or device: fall back, as jax does
                if wanted:
                    raise
                continue
        return platform
    return "cpu"


def default_backend():
    return get_backend(_default_platform())


def is_addressable(device) -> bool:
    """Whether `device` belongs to this process (in a multi-process run, others' devices are visible too)."""
    return device.process_index == device.client.process_index()


def backend_of_device(device) -> Backend:
    """The backend whose device `device` is. A device of another runtime (jax's, say) looks the same but belongs
    to another client: XLA rejects numax's buffers and programs on it, and jaxlib can crash the process after
    that failure, so it is refused here, where every placement on a given device starts."""
    platform = getattr(device, "platform", None)
    try:
        backend = None if platform is None else get_backend("cpu" if platform == "cpu" else "gpu")
    except RuntimeError:  # numax has no backend of that platform in this process
        backend = None
    if backend is None or device not in backend.device_set:
        raise ValueError(f"{device!r} is not a numax device (a device of another runtime, such as jax's, cannot "
                         "hold numax's arrays or run its programs): use numax.devices()")
    return backend


def default_placement():
    """(backend, device) for values and computations that no argument places: `config.default_device`
    (set by `numax.default_device`), else the default backend's first device."""
    device = config.default_device
    if device is None:
        backend = default_backend()
        return backend, backend.default_device
    return backend_of_device(device), device


# --- StableHLO parsing and compiling --------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _mlir_context():
    with _lock:  # one context for every thread
        return _make_mlir_context()


def _make_mlir_context():
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, sdy, stablehlo

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    stablehlo.register_dialect(context)
    chlo.register_dialect(context)
    sdy.register_dialect(context)
    return context


def hlo_computation(text: str):
    """The StableHLO module `text` converted to an XLA HLO computation (jaxlib's XlaComputation: `as_hlo_text()`,
    `as_hlo_module()`), what jax's `Lowered.compiler_ir(dialect="hlo")` returns."""
    load_jaxlib()
    return _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False)


def hlo_cost_analysis(backend, text: str):
    """XLA's cost estimates of the StableHLO module `text` before optimization (a dict: 'flops',
    'transcendentals', 'bytes accessed', ...), as jax's `Lowered.cost_analysis()`; None on a runtime reached
    through the PJRT C API (jax's gives none there either: compile and ask the executable)."""
    if "PJRT C API" in backend.client.platform_version:
        return None
    module = hlo_computation(text).as_hlo_module()  # (loads jaxlib's runtime module first)
    return _jax.hlo_module_cost_analysis(backend.client, module)


def hlo_text(text: str, debug_info=False):
    """The HLO text of the StableHLO module `text`, printed with XLA's short parsable options as jax's
    `Lowered.as_text(dialect="hlo")`."""
    computation = hlo_computation(text)
    try:
        from jaxlib import _hlo as hlo
    except ImportError:  # older jaxlib: the printing options live in the runtime module
        hlo = _jax
    options = hlo.HloPrintOptions.short_parsable()
    options.print_metadata = debug_info
    return computation.as_hlo_module().to_string(options)


def parse_module(text: str):
    """Parses and verifies a StableHLO module; a failure is a numax bug, raised with the module text."""
    from jaxlib.mlir import ir

    context = _mlir_context()
    with context:
        try:
            return ir.Module.parse(text)
        except ir.MLIRError as error:
            details = "\n".join(str(d) for d in error.error_diagnostics)
            raise LoweringError(
                f"numax generated an invalid StableHLO module (this is a numax bug): {details}\n{_numbered(text)}"
            ) from None


def _numbered(text):
    return "\n".join(f"{i + 1:4d} {line}" for i, line in enumerate(text.splitlines()))


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
        from ..core import monitoring  # (loaded by the first compile, not by `import numax`)

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
    from ..core import monitoring

    if monitoring.timing_listened():
        fun_name = log_as[0].split(" for ")[0] if log_as else "main"
        monitoring.record_event_duration_secs(monitoring.BACKEND_COMPILE_EVENT, seconds, fun_name=fun_name)
        monitoring.record_event_time_span(monitoring.BACKEND_COMPILE_EVENT, wall_start, time.time(),
                                          fun_name=fun_name)


def _compile_cache():
    """The persistent cache's module, imported on first use: its imports (hashlib, json, tempfile) would add
    about 9 ms to `import numax` for every program that leaves the cache off."""
    from . import compile_cache

    return compile_cache


def _compile(text, backend, devices, host_callbacks, num_replicas, num_partitions, compiler_options, spmd):
    module = parse_module(text) if not _DYNAMIC_TENSOR.search(text) else refined_module(text)
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
    through the module's attribute (as `jax._src.compiler.backend_compile_and_load`, which tools such as chex's
    `restrict_backends` wrap to watch or refuse compiles for a platform)."""
    return backend.client.compile_and_load(module, executable_devices, options, host_callbacks)


_DYNAMIC_TENSOR = re.compile(r"tensor<(?:\d+x)*\?")  # a type with a dynamic dimension


def refined_module(text: str):
    """The parsed module with every dynamic shape refined to a static one, from the static types of `main`'s
    arguments (a module that calls a shape-polymorphic export): what XLA can compile."""
    from jaxlib.mlir import ir

    parse_module(text)  # verifies, with numax's error for an invalid module
    refined = _jax.mlir.refine_polymorphic_shapes(text.encode(), enable_shape_assertions=True,
                                                  validate_static_shapes=True)
    with _mlir_context():
        return ir.Module.parse(refined)


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
        "versions": [jaxlib_version(), sys.modules["numax"].__version__],
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
    with _lock:  # once, even when threads compile their first linalg programs together
        if _lapack_ready:
            return
        from jaxlib.cpu import _lapack

        _lapack.initialize()  # must precede execution: registered but uninitialized kernels segfault
        for name, capsule in _lapack.registrations().items():
            xc.register_custom_call_target(name, capsule, platform="cpu", api_version=1)
        _lapack_ready = True


# --- transfers -------------------------------------------------------------------------------------
class _HostAval:
    """The minimal aval jaxlib wants for a transfer or a result handler."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = False


_HANDLER_TAKES_SKIP_CHECKS = True


def result_handler(shape, dtype, backend, device):
    """A handler turning an executable's output into a raw jaxlib array (built once per executable)."""
    return _array_handler(_HostAval(shape, dtype), backend.sharding(device))


def multi_device_result_handler(shape, dtype, devices, sharding):
    """A handler turning a multi-device program's output into one raw array over `devices` (the program's
    device order) laid out by the HLO `sharding` (built once per executable)."""
    return _array_handler(_HostAval(shape, dtype), _jax.GSPMDSharding(list(devices), sharding))


def _array_handler(aval, sharding):
    global _HANDLER_TAKES_SKIP_CHECKS
    if _HANDLER_TAKES_SKIP_CHECKS:
        try:
            return _jax.array_result_handler(aval, sharding, True, _skip_checks=True)
        except TypeError:  # jaxlib >= 0.11 dropped the keyword
            _HANDLER_TAKES_SKIP_CHECKS = False
    return _jax.array_result_handler(aval, sharding, True)


def device_put(value: np.ndarray, backend: Backend, device):
    """Copies a host array to `device` (always a copy: the host array may change later)."""
    aval = _HostAval(value.shape, value.dtype)
    return _jax.batched_device_put(aval, backend.sharding(device), [value], [device], True, True,
                                   enable_x64=True)


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


# --- programs over several devices -----------------------------------------------------------------
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


def assemble(shape, dtype, devices, sharding, shards):
    """One raw array over `devices` (the program's device order) from single-device buffers (one per device,
    in that order) laid out by the HLO `sharding`, as a multi-device program takes its arguments."""
    return _jax.ArrayImpl(_HostAval(shape, dtype), _jax.GSPMDSharding(list(devices), sharding), list(shards), True,
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
    into a host array of its own), that read-only array is the caller's and is not copied again
    (bench/gpu_readback_probe.py: np.asarray then costs what jaxlib's copy costs). A view of memory the runtime
    still owns is copied.

    jaxlib keeps a reference to a copy's destination until the copy is done, and drops it only when its deferred
    garbage is next collected; it is collected here, so that a dropped readback frees its memory at once."""
    array, did_copy = buffer._single_device_array_to_np_array_did_copy()
    if did_copy:
        collect_runtime_garbage()
        return array
    return np.array(array, copy=True)


def copy_to_host_async(buffer, backend):
    """Starts jaxlib's host copy of a buffer that a later `to_numpy_via_host_copy` returns. On a CPU, where a
    readback is a view of the buffer's memory, there is nothing to start (and jaxlib's call would import jax)."""
    if backend.platform != "cpu":
        buffer._copy_single_device_array_to_host_async()


def collect_runtime_garbage(*_gc_callback_arguments):
    """Drops the Python references that jaxlib's own threads let go of: it defers them (the destination of a
    finished host copy, a source array kept alive until its transfer is done, a host callback's arguments) until
    this is called. jax calls it on every jitted call and at each garbage collection; numax after a readback and,
    as jax does, whenever Python collects garbage (registered when jaxlib loads)."""
    _jax.collect_garbage()


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


def buffer_device(buffer):
    return buffer._sharding._internal_device_list[0]


def is_deleted(buffer):
    return buffer.is_deleted()


def delete(buffer):
    buffer.delete()


def on_device_size(buffer):
    return buffer.on_device_size_in_bytes()


def copy_to_device(buffer, shape, dtype, backend, device):
    """Moves a buffer to another device of the same backend (a RuntimeError for a deleted one, whose copy would
    crash the process)."""
    if buffer.is_deleted():
        raise RuntimeError("this array was deleted (donated to a jitted function, or deleted explicitly)")
    sharding = backend.sharding(device)
    copy_semantics = _jax.ArrayCopySemantics.ALWAYS_COPY
    return _jax.batched_copy_array_to_devices_with_sharding(
        [buffer], [backend.device_list([device])], [sharding], [copy_semantics])[0]


def serialize(executable) -> bytes:
    return executable.serialize()


def deserialize(blob: bytes, backend: Backend, devices, host_callbacks=()):
    return backend.client.deserialize_executable(blob, backend.device_list(devices), None, list(host_callbacks))


# --- StableHLO portable artifacts (numax.export) ----------------------------------------------------
class ArtifactError(ValueError):
    """Bytes that are not a StableHLO portable artifact this jaxlib can read."""


def serialize_portable_artifact(text: str) -> bytes:
    """A module's StableHLO portable artifact (versioned MLIR bytecode), targeting this jaxlib's StableHLO
    version: later jaxlibs read it (StableHLO keeps backward compatibility for years). A module with Shardy meshes
    is serialized as jax serializes one, with the Shardy dialect beside VHLO (which the plain serializer refuses
    and `deserialize_portable_artifact` reads)."""
    from jaxlib.mlir.dialects import stablehlo

    if "sdy.mesh" in text:
        load_jaxlib()
        return bytes(_jax.mlir.serialize_portable_artifact(text, stablehlo.get_current_version(), True))
    module = parse_module(text)
    with _mlir_context():
        return bytes(stablehlo.serialize_portable_artifact_str(str(module), stablehlo.get_current_version()))


def deserialize_portable_artifact(artifact: bytes) -> str:
    """The module text of a portable artifact, upgraded to this jaxlib's StableHLO."""
    from jaxlib.mlir.dialects import stablehlo

    context = _mlir_context()
    with context:
        try:
            return str(stablehlo.deserialize_portable_artifact(context, artifact))
        except Exception as error:  # jaxlib raises a bare exception type for unreadable bytecode
            raise ArtifactError(f"not a readable StableHLO portable artifact: {error}") from None


def private_functions(text: str, prefix: str) -> str:
    """The functions of a module as private functions named `prefix` + their name (calls inside renamed too),
    to be pasted into another module and called from it."""
    from jaxlib.mlir import ir

    module = parse_module(text)
    with _mlir_context():
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]
        for function in functions:
            old = ir.StringAttr(function.attributes["sym_name"]).value
            ir.SymbolTable.replace_all_symbol_uses(old, prefix + old, module.operation)
            ir.SymbolTable.set_symbol_name(function, prefix + old)
            function.attributes["sym_visibility"] = ir.StringAttr.get("private")
        return "\n".join(str(function) for function in functions)
