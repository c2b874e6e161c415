"""numax's serialization format for `Exported` (format version 4).

A blob is a fixed header, a JSON metadata block, then StableHLO portable artifacts, all little-endian:

    bytes 0-7    magic b"NUMAXEXP"
    bytes 8-11   format version (uint32): 4
    bytes 12-15  metadata length in bytes (uint32)
    bytes 16-19  CRC-32 of everything after the header (uint32)
    metadata     UTF-8 JSON: {"functions": [function, ...]}; functions[0] is the exported function and
                 functions[k] its k-th order VJP. A function is {"fun_name", "platforms", "in_tree", "in_avals",
                 "out_tree", "out_avals", "artifact_size"} and, for a module that drops unused arguments (as
                 jax's do), "module_kept_var_idx" (the argument leaves `main` takes), and, when the export
                 skips safety checks, "disabled_checks" (as jax names them: "platform", "custom_call:<target>"),
                 and, for a sharded export, "nr_devices" and "in_shardings"/"out_shardings" (one per leaf: null,
                 unspecified, or {"mesh": [axis sizes, axis names, axis type names], "spec": [entry, ...]}, an
                 entry null, an axis name or a list of them; see `_shardings.py`).
                 An aval is [shape, dtype name ("float0" for the cotangents of integers in a VJP), weak_type],
                 where a symbolic dimension of a shape-polymorphic export is a string ("b", "2*b"). A tree is
                 "leaf", null (None), {"tuple": [tree, ...]}, {"list": [...]}, {"dict": [[keys], [...]]}
                 (string keys, sorted) or {"custom": [serialized name, auxiliary data in base64, [...]]} (a
                 node type registered with `register_pytree_node_serialization`, `_pytree_serialization.py`).
    artifacts    each function's StableHLO portable artifact (MLIR bytecode), in order, `artifact_size` each
                 (a module with Shardy meshes holds the Shardy dialect beside VHLO, as jax's do).

Version 2 added symbolic dimensions (strings in shapes), "module_kept_var_idx", and modules for several
platforms (whose `main` takes a platform index first); version 3 added "custom" tree nodes; version 4 added
shardings and Shardy in the artifacts. A blob using none of what a version added reads as in the version before,
so numax reads them all (tests/data/export_v<N>.bin check it), and an older numax refuses a newer blob by its
version instead of failing on a field it does not know. StableHLO reads artifacts of older StableHLO versions.
`deserialize` also reads jax.export's format (`_jax_format.py`). Deserializing compiles the module: load only
blobs you trust.
"""

import json
import struct
import zlib

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..lowering import xla
from . import _jax_format, _shardings
from ._exported import Exported, serializers, vjp_for_serialization
from ._pytree_serialization import describe_tree, tree_of
from ._shape_poly import parse_dim

MAGIC = b"NUMAXEXP"
SERIALIZATION_VERSION = 4
_HEADER = struct.Struct("<8sIII")


def serialize(exported, vjp_order=0) -> bytes:
    functions = [exported]
    for _ in range(vjp_order):
        functions.append(vjp_for_serialization(functions[-1]))
    artifacts = [f.mlir_module_serialized for f in functions]
    metadata = json.dumps({"functions": [_describe_function(f, len(a)) for f, a in zip(functions, artifacts)]},
                          sort_keys=True).encode()
    payload = metadata + b"".join(artifacts)
    return _HEADER.pack(MAGIC, SERIALIZATION_VERSION, len(metadata), zlib.crc32(payload)) + payload


def deserialize(blob: bytes) -> Exported:
    """The `Exported` that `Exported.serialize` wrote into `blob`, in numax's format or jax.export's
    (ValueError for bytes in neither)."""
    blob = bytes(blob)
    if blob[:len(MAGIC)] != MAGIC:
        return _jax_format.deserialize(blob)
    if len(blob) < _HEADER.size:
        raise ValueError("truncated numax export: the blob starts with numax's magic bytes but is shorter "
                         "than its header")
    _, version, metadata_size, checksum = _HEADER.unpack_from(blob)
    if version > SERIALIZATION_VERSION:
        raise ValueError(f"numax export format version {version} is newer than this numax reads "
                         f"({SERIALIZATION_VERSION}): upgrade numax")
    payload = blob[_HEADER.size:]
    if len(payload) < metadata_size or zlib.crc32(payload) != checksum:
        raise ValueError("corrupt numax export: the blob is truncated or its bytes changed (checksum mismatch)")
    functions = json.loads(payload[:metadata_size])["functions"]
    offset = metadata_size
    exported = []
    for description in functions:
        size = description["artifact_size"]
        exported.append(_function_of(description, payload[offset:offset + size]))
        offset += size
    for function, its_vjp in zip(exported, exported[1:]):
        function._vjp = its_vjp
    return exported[0]


def _describe_function(exported, artifact_size):
    return {"fun_name": exported.fun_name, "platforms": list(exported.platforms),
            "in_tree": describe_tree(exported.in_tree), "in_avals": [_describe_aval(a) for a in exported.in_avals],
            "out_tree": describe_tree(exported.out_tree),
            "out_avals": [_describe_aval(a) for a in exported.out_avals], "artifact_size": artifact_size,
            **_describe_kept_vars(exported), **_describe_disabled_checks(exported), **_describe_shardings(exported)}


def _describe_kept_vars(exported):
    """The key "module_kept_var_idx", only for a module that drops arguments (one read from jax's format)."""
    if exported.module_kept_var_idx == tuple(range(len(exported.in_avals))):
        return {}
    return {"module_kept_var_idx": list(exported.module_kept_var_idx)}


def _describe_disabled_checks(exported):
    """The key "disabled_checks" ("platform", "custom_call:<target>", ...), only when some are disabled: an older
    numax ignores it, and so refuses what the blob allows rather than allowing more."""
    return {"disabled_checks": list(map(str, exported.disabled_safety_checks))} if exported.disabled_safety_checks \
        else {}


def _describe_shardings(exported):
    """The keys "nr_devices", "in_shardings" and "out_shardings", only for a sharded export."""
    described = {}
    if exported.nr_devices != 1:
        described["nr_devices"] = exported.nr_devices
    for key, recorded in (("in_shardings", exported._in_named_shardings),
                          ("out_shardings", exported._out_named_shardings)):
        if any(s is not None for s in recorded):
            described[key] = [_shardings.describe(s) for s in recorded]
    return described


def _function_of(description, artifact):
    text = xla.deserialize_portable_artifact(artifact)
    in_avals = [_aval_of(a) for a in description["in_avals"]]
    out_avals = [_aval_of(a) for a in description["out_avals"]]
    return Exported(description["fun_name"], tree_of(description["in_tree"], in_avals), in_avals,
                    tree_of(description["out_tree"], out_avals), out_avals, description["platforms"], text,
                    module_kept_var_idx=description.get("module_kept_var_idx"),
                    disabled_safety_checks=description.get("disabled_checks", ()),
                    nr_devices=description.get("nr_devices", 1),
                    in_shardings=_shardings_of(description, "in_shardings"),
                    out_shardings=_shardings_of(description, "out_shardings"))


def _shardings_of(description, key):
    return [_shardings.parse(s) for s in description[key]] if key in description else None


def _describe_aval(aval):
    shape = [d if isinstance(d, int) else str(d) for d in aval.shape]  # symbolic dimensions in JAX's syntax
    dtype_name = "float0" if aval.dtype == dtypes.float0 else np.dtype(aval.dtype).name  # numpy names it "void"
    return [shape, dtype_name, bool(aval.weak_type)]


def _aval_of(description):
    shape, dtype_name, weak_type = description
    shape = tuple(parse_dim(d) if isinstance(d, str) else d for d in shape)
    return ShapedArray(shape, dtypes.float0 if dtype_name == "float0" else np.dtype(dtype_name), weak_type)


serializers["numax"] = serialize
