"""numax: a JAX-style functional array language.

Write pure numpy-like functions with `numax.numpy`, and compose `jit`, `grad`, `vmap`: numax traces
them into its own IR, transforms them, lowers them to StableHLO and runs them with XLA.

`import numax` loads what every program needs; `numax.random`, `numax.nn`, `numax.scipy`, the rarer
`numax.lax` families and jaxlib's XLA runtime load on first use.
"""

from numax import (  # noqa: F401
    errors,
    numpy,  # installs array operators
    tree,  # jax.tree: a module of short names
    tree_util,
)
from numax._api_extras import (  # noqa: F401, E402
    clear_caches,
    copy_to_host_async,
    custom_gradient,
    default_device,
    disable_jit,
    effects_barrier,
    enable_x64,
    ensure_compile_time_eval,
    float0,
    jacobian,
    linear_transpose,
    live_arrays,
    named_call,
    named_scope,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    typeof,
)
from numax._config_contexts import *  # noqa: F401, F403, E402  (jax's config context managers)
from numax._runtime import (  # noqa: F401, E402
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_device_count,
    local_devices,
    print_environment_info,
    process_count,
    process_index,
    process_indices,
)
from numax.core import pytree as _pytree
from numax.core.array_type import Array  # noqa: F401
from numax.core.config import config  # noqa: F401
from numax.core.errors import ConcretizationTypeError  # noqa: F401
from numax.core.lazy_imports import defer_imports as _defer_imports
from numax.lowering import dispatch as _dispatch  # noqa: F401  (installs eager execution)
from numax.transforms.autodiff import (  # noqa: F401
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from numax.transforms.custom_derivatives import closure_convert, custom_jvp, custom_vjp  # noqa: F401, E402
from numax.transforms.jit import ShapeDtypeStruct, eval_shape, jit, make_jaxpr  # noqa: F401, E402
from numax.transforms.recompiles import JitStatistics, RecompileWarning, jit_statistics  # noqa: F401, E402
from numax.transforms.vmap import vmap  # noqa: F401

tree_map = _pytree.tree_map
tree_leaves = _pytree.tree_leaves
tree_structure = _pytree.tree_structure
tree_flatten = _pytree.tree_flatten
tree_unflatten = _pytree.tree_unflatten

__version__ = "0.1.0"

# Loaded on first use (`numax.random.key`, `from numax import nn`, `numax.distributed.initialize`,
# `import numax.scipy.special`, `numax.remat`).
_defer_imports(globals(), {"_device": ("Device",), "debug": ("pure_callback",), "distributed": (), "dtypes": (),
                          "export": (), "extend": (), "interpreters": (), "nn": (), "experimental": (), "random": (),
                          "scipy": (), "typing": (), "version": (), "flatten_util": (),
                          "custom_derivatives": (), "stages": (),
                          "api_util": (), "monitoring": (), "ref": ("Ref", "new_ref", "freeze"),
                          "transforms.checkpoint": ("checkpoint", "checkpoint_policies", "remat"),
                          "transforms.pmap": ("pmap",), "transforms.shard_map": ("shard_map",),
                          "sharding": ("make_mesh", "P", "NamedSharding", "set_mesh", "reshard"),
                          "triton": ("triton_call",),
                          "_global_arrays": ("make_array_from_callback", "make_array_from_single_device_arrays",
                                             "make_array_from_process_local_data")})
