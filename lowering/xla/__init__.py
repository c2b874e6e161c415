"""The XLA runtime: the one package of numax that touches jaxlib, which numax uses as its XLA runtime and nothing
more (numax never imports jax). ../shared/RUNTIME.md has the API facts and the traps these modules guard against.

One job per module:
- `_jaxlib`: imports jaxlib's runtime on first need (`load_jaxlib`, which then sets `_jax` and `xc` in this package
  and in each module below) and reads the installed jaxlib's version
- `backends`: backends and plugins: the PJRT clients (the CUDA one through its plugin, loaded without jax), their
  devices, where values and programs go when nothing places them, and the distributed runtime of a
  multi-process run
- `hlo`: StableHLO modules through jaxlib's MLIR bindings: verifying, refining, HLO text and costs, portable
  artifacts
- `compiler`: compile and executables: compiling (through the persistent compilation cache when it is on),
  serialized executables, HLO shardings, running an executable
- `transfers`: transfers and readback: host <-> device copies, readback, DLPack, waits, result handlers, the
  arrays of programs over several devices

The rest of numax reads this package's names (`xla.get_backend`, `xla.compile_module`, `xla.device_put`), each
when it calls, so that a test can replace one here. `xc` and `_jax` are None until jaxlib loads. Under
numax.compat, jax's `jax._src.compiler` is `compiler` (a tool that wraps its `backend_compile_and_load` sees every
compile) and `jax._src.xla_bridge` is `backends`.
"""

from ._jaxlib import _jax, jaxlib_version, load_jaxlib, xc  # noqa: F401  (xc, _jax: set again when jaxlib loads)
from .backends import (  # noqa: F401
    Backend,
    _backends,
    backend_of_device,
    backends_exist,
    default_backend,
    default_placement,
    distributed_runtime,
    get_backend,
    gpu_compute_capability,
    gpu_triton_module,
    is_addressable,
    is_device,
    join_distributed_runtime,
    leave_distributed_runtime,
)
from .compiler import (  # noqa: F401
    _cache_key_fields,
    _latest_effect_tokens,
    compile_module,
    deserialize,
    execute,
    executor,
    hlo_sharding_layout,
    output_shardings,
    parameter_shardings,
    same_hlo_sharding,
    serialize,
    tiled_hlo_sharding,
    wait_for_effects,
)
from .hlo import (  # noqa: F401
    ArtifactError,
    LoweringError,
    deserialize_portable_artifact,
    hlo_computation,
    hlo_cost_analysis,
    hlo_text,
    parse_module,
    private_functions,
    refined_module,
    serialize_portable_artifact,
)
from .transfers import HostAval as _HostAval  # noqa: F401
from .transfers import (  # noqa: F401
    assemble,
    block_until_ready,
    buffer_device,
    copy_to_device,
    copy_to_host_async,
    delete,
    device_put,
    dlpack_capsule,
    is_deleted,
    multi_device_result_handler,
    result_handler,
    split,
    to_numpy,
    to_numpy_via_host_copy,
    wait,
)
