"""numax's serialization format for `Exported` (format version 2).

A blob is a fixed header, a JSON metadata block, then StableHLO portable artifacts, all little-endian:

    bytes 0-7    magic b"NUMAXEXP"
    bytes 8-11   format version (uint32): 2
    bytes 12-15  metadata length in bytes (uint32)
    bytes 16-19  CRC-32 of everything after the header (uint32)
    metadata     UTF-8 JSON: {"functions": [function, ...]}; functions[0] is the exported function and
                 functions[k] its k-th order VJP. A function is {"fun_name", "platforms", "in_tree", "in_avals",
                 "out_tree", "out_avals", "artifact_size"} and, for a module that drops unused arguments (as
                 jax's do), "module_kept_var_idx" (the argument leaves `main` takes); an aval is [shape, dtype
                 name, weak_type], where a symbolic dimension of a shape-polymorphic export is a string ("b",
                 "2*b"); a tree is "leaf", null (None), {"tuple": [tree, ...]}, {"list": [...]} or
                 {"dict": [[keys], [...]]} (string keys, sorted).
    artifacts    each function's StableHLO portable artifact (MLIR bytecode), in order, `artifact_size` each.

Version 2 added symbolic dimensions (strings in shapes), "module_kept_var_idx", and modules for several
platforms (whose `main` takes a platform index first); a blob using none of them reads as in version 1, so
numax reads both (tests/data/export_v1.bin and export_v2.bin check it), and an older numax refuses a version 2
blob by its version instead of failing on a field it does not know. StableHLO reads artifacts of older
StableHLO versions. `deserialize` also reads jax.export's format (`_jax_format.py`). Deserializing
compiles the module: load only blobs you trust.
"""

import json
import struct
import zlib

import numpy as np

from ..core import pytree as tree
from ..core.avals import ShapedArray
from ..lowering import xla
from ._exported import Exported
from ._shape_poly import parse_dim

MAGIC = b"NUMAXEXP"
SERIALIZATION_VERSION = 2
_HEADER = struct.Struct("<8sIII")


def serialize(exported, vjp_order=0) -> bytes:
    functions = [exported]
    for _ in range(vjp_order):
        functions.append(functions[-1].vjp())
    artifacts = [xla.serialize_portable_artifact(f.mlir_module()) for f in functions]
    metadata = json.dumps({"functions": [_describe_function(f, len(a)) for f, a in zip(functions, artifacts)]},
                          sort_keys=True).encode()
    payload = metadata + b"".join(artifacts)
    return _HEADER.pack(MAGIC, SERIALIZATION_VERSION, len(metadata), zlib.crc32(payload)) + payload


def deserialize(blob: bytes) -> Exported:
    """The `Exported` that `Exported.serialize` wrote into `blob`, in numax's format or jax.export's
    (ValueError for bytes in neither)."""
    blob = bytes(blob)
    if blob[:len(MAGIC)] != MAGIC:
        from ._jax_format import deserialize as deserialize_jax

        return deserialize_jax(blob)
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
            "in_tree": _describe_tree(exported.in_tree), "in_avals": [_describe_aval(a) for a in exported.in_avals],
            "out_tree": _describe_tree(exported.out_tree),
            "out_avals": [_describe_aval(a) for a in exported.out_avals], "artifact_size": artifact_size,
            **_describe_kept_vars(exported)}


def _describe_kept_vars(exported):
    """The key "module_kept_var_idx", only for a module that drops arguments (one read from jax's format)."""
    if exported.module_kept_var_idx == tuple(range(len(exported.in_avals))):
        return {}
    return {"module_kept_var_idx": list(exported.module_kept_var_idx)}


def _function_of(description, artifact):
    text = xla.deserialize_portable_artifact(artifact)
    return Exported(description["fun_name"], _tree_of(description["in_tree"]),
                    [_aval_of(a) for a in description["in_avals"]], _tree_of(description["out_tree"]),
                    [_aval_of(a) for a in description["out_avals"]], description["platforms"], text,
                    module_kept_var_idx=description.get("module_kept_var_idx"))


def _describe_aval(aval):
    shape = [d if isinstance(d, int) else str(d) for d in aval.shape]  # symbolic dimensions in JAX's syntax
    return [shape, np.dtype(aval.dtype).name, bool(aval.weak_type)]


def _aval_of(description):
    shape, dtype_name, weak_type = description
    shape = tuple(parse_dim(d) if isinstance(d, str) else d for d in shape)
    return ShapedArray(shape, np.dtype(dtype_name), weak_type)


def _describe_tree(treedef):
    node = treedef.node_data()
    if node is None:
        return "leaf"
    node_type, aux = node
    children = [_describe_tree(child) for child in treedef.children()]
    if node_type is type(None):
        return None
    if node_type in (tuple, list):
        return {node_type.__name__: children}
    if node_type is dict and all(isinstance(key, str) for key in aux):
        return {"dict": [list(aux), children]}
    raise ValueError(f"export: cannot serialize the pytree node {node_type.__name__} (numax serializes tuples, "
                     "lists, dicts with string keys and None); pass plain containers to the exported function")


def _tree_of(description):
    return tree.tree_structure(_example_tree(description))


def _example_tree(description):
    """A tree of the described structure, with 0 at each leaf."""
    if description == "leaf":
        return 0
    if description is None:
        return None
    (kind, content), = description.items()
    if kind == "dict":
        keys, children = content
        return dict(zip(keys, map(_example_tree, children)))
    return {"tuple": tuple, "list": list}[kind](map(_example_tree, content))
