"""Writes the committed export artifacts that tests/test_export_artifacts.py reads back: one blob per numax
export format version, each written by the numax of that version (run it when the version changes: it writes
only the missing file of the current version, and never rewrites an older one).

    python tests/data/make_export_artifacts.py
"""

import collections
import os
import pathlib

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")  # (as tests/conftest.py)

import numpy as np  # noqa: E402

import numax  # noqa: E402
import numax.numpy as jnp  # noqa: E402
from numax import export  # noqa: E402
from numax.sharding import Mesh, NamedSharding  # noqa: E402
from numax.sharding import PartitionSpec as P  # noqa: E402

DATA = pathlib.Path(__file__).parent


def ordered_layer(x, params):
    """Version 3's artifact: a dense layer whose parameters and results are OrderedDicts (custom tree nodes,
    what version 3 added)."""
    y = jnp.tanh(x @ params["w"] + params["b"])
    return collections.OrderedDict([("y", y), ("total", y.sum())])


def ordered_layer_args():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    params = collections.OrderedDict([("w", rng.standard_normal((3, 2)).astype(np.float32)),
                                      ("b", rng.standard_normal((2,)).astype(np.float32))])
    return x, params


def write_v3():
    x, params = ordered_layer_args()
    return export.export(numax.jit(ordered_layer))(x, params).serialize(vjp_order=1)


def sharded_layer_mesh():
    """Version 4's artifact is exported over this mesh: devices 0 and 1 as axis "d"."""
    return Mesh(np.array(numax.devices()[:2], dtype=object), ("d",))


def sharded_layer(x, w):
    """Version 4's artifact: a layer whose input rows and output columns are split over two devices (what
    version 4 added)."""
    return jnp.tanh(x @ w)


def sharded_layer_args():
    rng = np.random.default_rng(4)
    return rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)


def write_v4():
    mesh = sharded_layer_mesh()
    fun = numax.jit(sharded_layer, in_shardings=(NamedSharding(mesh, P("d", None)), NamedSharding(mesh, P())),
                    out_shardings=NamedSharding(mesh, P(None, "d")))
    return export.export(fun)(*sharded_layer_args()).serialize(vjp_order=1)


WRITERS = {3: write_v3, 4: write_v4}

if __name__ == "__main__":
    version = export.SERIALIZATION_VERSION
    path = DATA / f"export_v{version}.bin"
    if not path.exists():
        path.write_bytes(WRITERS[version]())
        print(f"wrote {path}")
