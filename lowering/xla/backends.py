"""Backends and plugins: numax's PJRT clients, one per platform (the CPU's, and the GPU's through the CUDA PJRT
plugin, loaded without jax), their devices, which backend and device a computation runs on, which devices are
numax's, and XLA's distributed runtime (this process's part in a multi-process run, which every backend made
while it is joined spans). jax's `jax._src.xla_bridge` under numax.compat is this module (`get_backend`,
`default_backend`, `_backends`)."""

import ctypes
import functools
import importlib
import importlib.util
import os
import re
import sys

from ...core.config import config
from . import _jaxlib

_jax = xc = None  # jaxlib's runtime, set when it loads (_jaxlib.load_jaxlib)


# --- backends ----------------------------------------------------------------------------------
class Backend:
    """One PJRT client and its devices."""

    def __init__(self, platform, client, client_kind=""):
        self.platform = platform
        self.client = client
        self.client_kind = client_kind  # which of a platform's clients (numax_gpu_client): its executables differ
        self.polls_waits = platform != "cpu"  # see transfers.SPIN_WAIT_SECONDS
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
        and fails with "Supported GPU plugins not found" otherwise (bench/probes/gpu_cache_probe.py). numax
        registers its plugin under another name, so that jax in the same process can still register its own: a GPU
        entry loads in a process where jax has made its GPU client, and is compiled afresh elsewhere."""
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
_distributed_runtime = None  # the DistributedRuntime joined (join_distributed_runtime, below)


def backends_exist() -> bool:
    return bool(_backends)


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


def available_platforms():
    """The platforms asked for, in order of preference: `config.platform_name`, from NUMAX_PLATFORMS or
    JAX_PLATFORMS (or `config.update('jax_platforms', ...)` before the first computation); empty: any."""
    wanted = config.platform_name or ""
    return [p.strip() for p in wanted.split(",") if p.strip()]


def get_backend(platform=None):
    """The backend for `platform` ('cpu', 'gpu'), or the default: the GPU when one is present."""
    with _jaxlib.lock:
        if platform is None:
            return default_backend()
        platform = "gpu" if platform in ("cuda", "gpu") else platform
        backend = _backends.get(platform)
        if backend is None:
            _jaxlib.load_jaxlib()
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


def is_device(value) -> bool:
    """True for a jaxlib Device (none can exist before jaxlib loads)."""
    return xc is not None and isinstance(value, xc.Device)


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


def gpu_compute_capability(device=None) -> int:
    """The compute capability of a CUDA device (default: the GPU backend's first) as 10 * major + minor."""
    if device is None:
        device = get_backend("gpu").devices[0]
    capability = getattr(device, "compute_capability", None)  # a PJRT device attribute: "9.0"
    if capability is None:
        return int(gpu_triton_module().get_compute_capability(device.local_hardware_id or 0))
    major, minor = str(capability).split(".")
    return 10 * int(major) + int(minor)


# --- the CUDA PJRT plugin, loaded as jax's `jax_plugins.xla_cuda*` loads it, without jax (RUNTIME.md, section 1) ---
# Registered under numax's own name so that jax (the tests' oracle) can still load its own copy.
_CUDA_PLUGIN_NAME = "numax_cuda"


def _find_cuda_plugin():
    """(plugin .so path, kernels extension module name) for the installed CUDA PJRT plugin, or None."""
    for entry in sys.path:
        for version in ("13", "12"):
            so_path = os.path.join(entry, "jax_plugins", f"xla_cuda{version}", "xla_cuda_plugin.so")
            if os.path.exists(so_path):
                return so_path, f"jax_cuda{version}_plugin"
    return None


def _preload_nvidia_libraries():
    """Loads the CUDA libraries shipped as `nvidia-*` wheels, as the CUDA plugin expects."""
    import glob  # (imported here, on a GPU only: nothing else in `import numax` needs it)

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
    _jaxlib.load_jaxlib()  # the extension's types refer to jaxlib's
    try:
        return importlib.import_module(f"{found[1]}._triton")
    except ImportError:
        return None


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


def join_distributed_runtime(coordinator_address, bind_address, num_processes, process_id, local_device_ids, *,
                             init_timeout, heartbeat_timeout, shutdown_timeout):
    """Starts the coordination service (process 0, listening on `bind_address`) and connects this process's
    client to it (blocking until every process has connected, at most `init_timeout` seconds). A process
    that stops sending heartbeats for `heartbeat_timeout` seconds is declared dead, and the coordination
    service then ends every other process with an error instead of leaving it waiting in a collective."""
    global _distributed_runtime
    with _jaxlib.lock:
        _jaxlib.load_jaxlib()
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
    with _jaxlib.lock:
        runtime, _distributed_runtime = _distributed_runtime, None
    if runtime is not None:
        runtime.client.shutdown()
        if runtime.service is not None:
            runtime.service.shutdown()


def distributed_runtime():
    """The DistributedRuntime this process joined, or None."""
    return _distributed_runtime
