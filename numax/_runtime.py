"""Devices and transfers: `devices()`, `default_backend()`, `device_put`, `device_get`, `block_until_ready`."""

import numpy as np

from numax.core import pytree
from numax.core.avals import get_aval
from numax.core.trace import Tracer
from numax.lowering import xla
from numax.lowering.array import Array, put


def devices(backend=None):
    return list(xla.get_backend(backend).devices)


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices attached to this process: all of them (numax runs in one process)."""
    return devices(backend)


def local_device_count(backend=None):
    return len(devices(backend))


def device_count(backend=None):
    return len(devices(backend))


def default_backend():
    return xla.default_backend().platform


def device_put(x, device=None):
    """Puts every leaf of `x` on `device` (the default device if None) as numax Arrays."""

    def put_leaf(leaf):
        if isinstance(leaf, Tracer):
            return leaf
        if isinstance(leaf, Array) and (device is None or leaf.device is device):
            return leaf
        return put(np.asarray(leaf, get_aval(leaf).dtype), device=device, weak_type=get_aval(leaf).weak_type)

    return pytree.tree_map(put_leaf, x)


def device_get(x):
    """Every Array leaf of `x` read back as a numpy array."""
    return pytree.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x):
    for leaf in pytree.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
