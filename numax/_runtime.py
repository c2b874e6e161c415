"""Devices and transfers: `devices()`, `default_backend()`, `device_put`, `device_get`, `block_until_ready`.

In a multi-process run (`numax.distributed.initialize`), `devices()` and `device_count()` count every
process's devices, `local_devices()` and `local_device_count()` this process's, as in JAX.
"""

import numpy as np

from numax.core import pytree
from numax.core.avals import get_aval
from numax.core.sharding import PartitionSpec, Sharding, SingleDeviceSharding, as_sharding
from numax.core.trace import Tracer
from numax.lowering import sharded, xla
from numax.lowering.array import Array, is_committed, put
from numax.lowering.sharded_array import ShardedArray


def devices(backend=None):
    """Every device of the backend, over all processes."""
    return list(xla.get_backend(backend).global_devices)


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices attached to process `process_index` (default: this process)."""
    if host_id is not None:
        process_index = host_id
    runtime = xla.get_backend(backend)
    if process_index is None or process_index == runtime.process_index:
        return list(runtime.devices)
    return [d for d in runtime.global_devices if d.process_index == process_index]


def local_device_count(backend=None):
    return len(xla.get_backend(backend).devices)


def device_count(backend=None):
    return len(xla.get_backend(backend).global_devices)


def process_index(backend=None):
    """This process's index among `process_count()` (0 unless numax.distributed.initialize was called)."""
    return xla.get_backend(backend).process_index


def process_count(backend=None):
    """How many processes take part in the computation."""
    return max(d.process_index for d in xla.get_backend(backend).global_devices) + 1


def process_indices(backend=None):
    """The indices of all processes taking part: `[0, ..., process_count() - 1]`."""
    return list(range(process_count(backend)))


def print_environment_info(return_string=False):
    """numax's version (and the jax API version it follows), jaxlib's, numpy's, Python's, the devices, the
    process count, the platform and the JAX_/XLA_/NUMAX_ environment variables set, as `jax.print_environment_info`
    reports them: printed, or returned with `return_string=True`."""
    import os
    import platform
    import sys

    from numax import version

    runtime = xla.get_backend()
    lines = [f"numax:  {version.numax_version} (jax API {version.__version__})",
             f"jaxlib: {xla.jaxlib_version()}",
             f"numpy:  {np.__version__}",
             f"python: {sys.version.replace(chr(10), ' ')}",
             f"device info: {runtime.global_devices[0].device_kind}-{device_count()}, {local_device_count()} local "
             "devices",
             f"process_count: {process_count()}",
             f"platform: {platform.uname()}"]
    lines += [f"{key}={value}" for key, value in os.environ.items() if key.startswith(("JAX_", "XLA_", "NUMAX_"))]
    info = "\n".join(lines)
    if return_string:
        return info
    print(info)


def default_backend():
    return xla.default_backend().platform


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Puts every leaf of `x` on `device` (a Device, a Sharding: laid out over its devices, or None: arrays
    stay where they are, host values go to the default device) as numax Arrays. `device`, `donate` and
    `may_alias` may each be one value or a tree prefix of `x`, as in JAX; a PartitionSpec places over the mesh
    that `numax.set_mesh` set. `may_alias=False` always copies;
    `donate=True` deletes an input array once it is copied (both True is an error). `src` is accepted for
    JAX's signature: numax arrays know their device."""
    leaves, treedef = pytree.tree_flatten(x)
    devices = _per_leaf(device, x, treedef, "device", _is_placement)
    donates = _per_leaf(donate, x, treedef, "donate", lambda d: isinstance(d, bool))
    aliases = _per_leaf(may_alias, x, treedef, "may_alias", lambda m: m is None or isinstance(m, bool))
    return treedef.unflatten([_put_leaf(*args) for args in zip(leaves, devices, donates, aliases)])


def _is_placement(value):
    return value is None or xla.is_device(value) or isinstance(value, Sharding | PartitionSpec)


def _per_leaf(value, x, treedef, what, is_single):
    """`value` for each leaf of `x`: one value for all, or a tree prefix of `x` with one per subtree."""
    if is_single(value):
        return [value] * treedef.num_leaves
    try:
        return pytree.broadcast_prefix_leaves(value, x, is_leaf=is_single)
    except (TypeError, ValueError) as error:
        raise ValueError(f"device_put {what} must be one value or a tree prefix of the argument: {error}") from None


def _put_leaf(leaf, device, donate, may_alias):
    if may_alias and donate:
        raise ValueError("may_alias and donate cannot be True at the same time.")
    if may_alias is None:
        may_alias = not donate
    if isinstance(leaf, Tracer):
        return leaf
    if isinstance(device, PartitionSpec):
        device = as_sharding(device, "device_put")
    if isinstance(device, SingleDeviceSharding):
        device = next(iter(device.device_set))
    elif isinstance(device, Sharding):
        aval = leaf.aval if isinstance(leaf, Array) else get_aval(leaf)
        placed = sharded.put_sharded(leaf, device, aval)
        if donate and placed is not leaf:
            leaf.delete()
        return placed
    if not isinstance(leaf, Array):
        aval = get_aval(leaf)
        placed = put(np.asarray(leaf, aval.dtype), device=device, weak_type=aval.weak_type)
        placed._committed = device is not None  # jax: placed where asked, or on the default device
        return placed
    if isinstance(leaf, ShardedArray):
        if device is None:
            return leaf if may_alias else sharded.put_sharded(np.asarray(leaf), leaf.sharding, leaf.aval)
        moved = _copy(leaf, device)
    elif device is None or device is leaf.device:
        if may_alias:  # the same buffer, committed to its device when one was named (as jax does)
            return leaf if device is None or is_committed(leaf) else Array(
                leaf.aval, leaf._buffer, leaf._backend, device, committed=True)
        moved = _copy(leaf, leaf.device)
        moved._committed = device is not None or is_committed(leaf)
    else:
        moved = _copy(leaf, device)
    if donate:
        leaf.delete()
    return moved


def _copy(array, device):
    """A copy of `array` on `device`, committed to it."""
    backend = xla.backend_of_device(device)
    if backend is array._backend and type(array) is Array:
        buffer = xla.copy_to_device(array._buffer, array.shape, array.dtype, backend, device)
    else:  # another platform's client, or blocks on several devices: through the host
        buffer = xla.device_put(array._value(), backend, device)
    return Array(array.aval, buffer, backend, device, committed=True)


def device_get(x):
    """Every Array leaf of `x` read back as a numpy array."""
    return pytree.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x):
    pytree.for_each_leaf(x, _wait)
    return x


def _wait(leaf):
    if isinstance(leaf, Array):
        leaf.block_until_ready()

