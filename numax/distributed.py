"""`numax.distributed`: one numax program run by several processes, on XLA's distributed runtime.

`initialize()` joins this process to the run before any computation: process 0 starts the coordination
service, every process connects to it, and the backends made afterwards span all processes' devices
(`numax.devices()` is global, `numax.local_devices()` this process's; CPU collectives between processes
go through gloo, GPU ones through NCCL). The runtime itself lives in `numax.lowering.xla`; this module
checks the arguments as `jax.distributed` does and keeps no state of its own.
"""

import atexit
import logging
import os

from numax.lowering import xla

logger = logging.getLogger(__name__)


def initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None,
               cluster_detection_method=None, initialization_timeout=300, heartbeat_timeout_seconds=100,
               shutdown_timeout_seconds=300, coordinator_bind_address=None, slice_index=None, partition_index=None):
    """Joins this process to a multi-process run (call it first, in every process, with the same
    `coordinator_address` and `num_processes` and each its own `process_id` in 0..num_processes-1).

    `coordinator_address` ("host:port" of process 0; default: the JAX_COORDINATOR_ADDRESS variable) is
    where process 0 serves the coordination service, bound to `coordinator_bind_address` (default
    JAX_COORDINATOR_BIND_ADDRESS, else every interface on that port). `local_device_ids` (or
    JAX_LOCAL_DEVICE_IDS) restricts the GPUs this process sees. Connecting waits at most
    `initialization_timeout` seconds for every process; a process silent for `heartbeat_timeout_seconds`
    is taken for dead, and the others then end with an error rather than wait; at shutdown a process
    waits at most `shutdown_timeout_seconds` for the others. Automatic cluster detection (Slurm, Open MPI,
    TPU pods) is not supported: pass the three arguments.
    """
    if xla.backends_exist():
        raise RuntimeError("numax.distributed.initialize() must be called before any numax computation that "
                           "starts the XLA backend. This includes any computation, but also calls to "
                           "numax.devices, numax.device_put, and others.")
    if is_initialized():
        raise RuntimeError("distributed.initialize should only be called once.")
    if cluster_detection_method not in (None, "deactivate"):
        raise NotImplementedError(f"cluster_detection_method={cluster_detection_method!r}: numax does not detect "
                                  "clusters; pass coordinator_address, num_processes and process_id")
    if slice_index is not None or partition_index is not None:
        raise NotImplementedError("partition_index (slices of a TPU or multi-slice job) is not supported")
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if isinstance(local_device_ids, int):
        local_device_ids = [local_device_ids]
    if local_device_ids is None and os.environ.get("JAX_LOCAL_DEVICE_IDS"):
        local_device_ids = [int(i) for i in os.environ["JAX_LOCAL_DEVICE_IDS"].split(",")]
    _check_arguments(coordinator_address, num_processes, process_id)
    port = coordinator_address.rsplit(":", 1)[1]
    bind_address = coordinator_bind_address or os.environ.get("JAX_COORDINATOR_BIND_ADDRESS", f"[::]:{port}")
    proxies = [name for name in os.environ if "_proxy" in name.lower()]
    if proxies:  # gRPC honours them, and a proxy that cannot reach the coordinator stalls the connection
        logger.warning("proxy variables in the environment (%s) may make numax.distributed.initialize hang; "
                       "unset them if it does", " ".join(proxies))
    xla.join_distributed_runtime(coordinator_address, bind_address, num_processes, process_id,
                                 None if local_device_ids is None else tuple(local_device_ids),
                                 init_timeout=int(initialization_timeout),
                                 heartbeat_timeout=int(heartbeat_timeout_seconds),
                                 shutdown_timeout=int(shutdown_timeout_seconds))


def _check_arguments(coordinator_address, num_processes, process_id):
    missing = [name for name, value in (("coordinator_address", coordinator_address), ("num_processes", num_processes),
                                        ("process_id", process_id)) if value is None]
    if missing:
        raise ValueError(f"numax.distributed.initialize needs {', '.join(missing)} (numax does not detect clusters; "
                         "coordinator_address may also come from JAX_COORDINATOR_ADDRESS)")
    if not isinstance(process_id, int) or isinstance(process_id, bool):
        raise TypeError(f"process_id must be a nonnegative int. Got process_id={process_id!r} of type "
                        f"{type(process_id)}.")
    if not isinstance(num_processes, int) or isinstance(num_processes, bool):
        raise TypeError(f"num_processes must be a positive int. Got num_processes={num_processes!r} of type "
                        f"{type(num_processes)}.")
    if not 0 <= process_id < num_processes:
        raise ValueError("process_id and num_processes must be nonnegative, with process_id < num_processes. "
                         f"Got process_id={process_id}, num_processes={num_processes}.")
    if not isinstance(coordinator_address, str) or ":" not in coordinator_address:
        raise ValueError(f"coordinator_address must be 'host:port', got {coordinator_address!r}")


def is_initialized() -> bool:
    """Whether this process has joined a multi-process run (and not shut it down)."""
    return xla.distributed_runtime() is not None


def shutdown():
    """Leaves the multi-process run (waiting for the other processes to leave too, at most the shutdown
    timeout); nothing happens when none was joined. Runs by itself when the interpreter exits."""
    xla.leave_distributed_runtime()


atexit.register(shutdown)
