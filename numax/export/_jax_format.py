"""jax.export's serialization format for `Exported`, read and written without jax (or the flatbuffers package).

jax serializes an `Exported` as a FlatBuffer (schema jax/_src/export/serialization.fbs; codec in
`_flatbuffer.py`) with no file identifier. numax reads what jax 0.10.2 reads (serialization versions 1 to 11;
jax still stores 3 in the version field for older readers) and writes what it writes (version 11 layout,
version field 3, calling convention 10):

- avals are listed in full (`in_avals`, `out_avals`) and again as indices into `unique_avals`; a dimension is
  a string (an integer, or a symbolic expression in jax's syntax);
- shardings are indices into `unique_named_shardings`, 0 meaning unspecified (jax wrote a `Sharding` table per
  leaf before version 10: numax reads its named sharding, and writes empty ones for older readers); a
  NamedSharding holds its AbstractMesh (and, since version 10, its index in `unique_abstract_meshes`);
- the module is a StableHLO portable artifact whose `main` takes only the argument leaves listed in
  `module_kept_var_idx` (jax drops unused ones);
- the VJP is a nested `Exported` taking (primal leaves..., output cotangent leaves...).

Deserializing compiles the module: load only blobs you trust.
"""

import base64

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec
from ..lowering import xla
from . import _flatbuffer as fb
from ._exported import Exported, serializers, vjp_for_serialization
from ._pytree_serialization import describe_tree, tree_of
from ._shape_poly import parse_dim

JAX_SERIALIZATION_VERSION = 11  # the schema version whose layout numax writes
_STORED_VERSION = 3  # what jax writes in the version field, for readers that accepted only 2 and 3
_CALLING_CONVENTIONS = (9, 10)  # those jax 0.10.2 runs


class _Slot:
    """Field slots of the schema's tables (their index in serialization.fbs)."""

    class Exported:
        (serialization_version, function_name, in_tree, in_avals, out_tree, out_avals, nr_devices_short,
         in_shardings, out_shardings, platforms, ordered_effects, unordered_effects, disabled_checks,
         mlir_module_serialized, calling_convention_version, module_kept_var_idx, uses_global_constants, vjp,
         nr_devices, unique_avals, unique_abstract_meshes, unique_named_shardings, in_avals_idxs,
         out_avals_idxs, in_shardings_idxs, out_shardings_idxs) = range(26)

    class PyTreeDef:
        kind, children, children_names, custom_name, custom_auxdata = range(5)

    class AbstractValue:
        kind, shape, dtype, memory_space = range(4)

    class Sharding:
        kind, hlo_sharding_proto, named_sharding = range(3)

    class NamedSharding:
        mesh, spec, memory_kind, abstract_mesh_idx = range(4)

    class AbstractMesh:
        axis_sizes, axis_names, axis_types, abstract_device = range(4)

    class PartitionSpec:
        partitions, reduced, unreduced = range(3)

    class PartitionSpecOneAxis:
        axes = 0

    class DisabledSafetyCheck:
        kind, custom_call_target = range(2)


_TREE_KINDS = ["leaf", "none", "tuple", "list", "dict", "custom"]
_SHAPED_ARRAY = 0  # AbstractValueKind; 1 is a token
_MEMORY_SPACES = {0: "device", 1: "device", 2: "host", 3: "any"}  # 0: written before memory spaces existed
_SAFETY_CHECK_KINDS = ["platform", "custom_call", "shape_assertions"]
_AXIS_TYPES = {0: AxisType.Auto, 1: AxisType.Auto, 2: AxisType.Explicit, 3: AxisType.Manual}  # 0: written before
_ENUM_OF_AXIS_TYPE = {AxisType.Auto: 1, AxisType.Explicit: 2, AxisType.Manual: 3}  # axis types existed

# jax's DType enum, in enum order; the key types (27-29) have no numax dtype.
_DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "complex64", "complex128", "bfloat16", "int4", "uint4", "float8_e4m3b11fnuz",
                "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float0", "float8_e4m3",
                "float8_e3m4", "float8_e8m0fnu", "float4_e2m1fn"]
_JAX_KEY_DTYPES = {27: "key<fry>", 28: "key<rbg>", 29: "key<unsafe_rbg>"}


def _dtype_of_name(name):
    if name == "float0":
        return dtypes.float0
    if name in np.sctypeDict:
        return np.dtype(name)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


_DTYPE_OF_ENUM = dict(enumerate(map(_dtype_of_name, _DTYPE_NAMES)))
_ENUM_OF_DTYPE = {dtype: enum for enum, dtype in _DTYPE_OF_ENUM.items()}


# --- reading ---------------------------------------------------------------------------------------------

def deserialize(blob: bytes) -> Exported:
    """The `Exported` of a blob that `jax.export.Exported.serialize` wrote."""
    try:
        root = fb.root_table(blob)
        version = root.scalar(_Slot.Exported.serialization_version, "H")
        function_name = root.string(_Slot.Exported.function_name)
        if function_name is None or not root.has(_Slot.Exported.mlir_module_serialized):
            raise fb.FlatBufferError("it has no function name or no module")
    except fb.FlatBufferError as error:
        raise ValueError("the blob is neither a numax export (it does not start with numax's magic bytes "
                         f"b'NUMAXEXP') nor a jax.export serialization ({error})") from None
    if not 1 <= version <= JAX_SERIALIZATION_VERSION:
        raise ValueError(f"jax.export serialization version {version} is not one numax reads "
                         f"(1 to {JAX_SERIALIZATION_VERSION}): re-export with a jax that writes one of those")
    try:
        return _read_exported(root)
    except fb.FlatBufferError as error:
        raise ValueError(f"corrupt jax.export serialization: {error}") from None


def _read_exported(root):
    slot = _Slot.Exported
    fun_name = root.string(slot.function_name)
    _check_supported(root, fun_name)
    in_avals = _read_avals(root, slot.in_avals_idxs, slot.in_avals, fun_name)
    out_avals = _read_avals(root, slot.out_avals_idxs, slot.out_avals, fun_name)
    vjp_table = root.table(slot.vjp)
    exported = Exported(
        fun_name, tree_of(_read_tree(_required_table(root, slot.in_tree, "in_tree")), in_avals), in_avals,
        tree_of(_read_tree(_required_table(root, slot.out_tree, "out_tree")), out_avals), out_avals,
        root.strings(slot.platforms),
        xla.deserialize_portable_artifact(root.byte_vector(slot.mlir_module_serialized)),
        module_kept_var_idx=root.scalar_vector(slot.module_kept_var_idx, "u2").tolist(),
        calling_convention_version=root.scalar(slot.calling_convention_version, "H"),
        nr_devices=_nr_devices(root), uses_global_constants=root.scalar(slot.uses_global_constants, "?", False),
        disabled_safety_checks=[_read_safety_check(t) for t in root.tables(slot.disabled_checks)],
        in_shardings=_read_shardings(root, slot.in_shardings_idxs, slot.in_shardings, len(in_avals)),
        out_shardings=_read_shardings(root, slot.out_shardings_idxs, slot.out_shardings, len(out_avals)))
    if vjp_table is not None:
        exported._vjp = _read_exported(vjp_table)
    return exported


def _required_table(root, slot, name):
    table = root.table(slot)
    if table is None:
        raise fb.FlatBufferError(f"it has no {name}")
    return table


def _nr_devices(root):
    # jax wrote the device count as an int16 before version 5 and as a uint32 since
    return root.scalar(_Slot.Exported.nr_devices, "I") or root.scalar(_Slot.Exported.nr_devices_short, "h")


def _check_supported(root, fun_name):
    """Clear errors for what numax does not run yet."""
    slot = _Slot.Exported
    version = root.scalar(slot.calling_convention_version, "H")
    if version not in _CALLING_CONVENTIONS:
        raise NotImplementedError(f"jax.export of {fun_name!r}: calling convention version {version} is not one "
                                  f"numax runs ({', '.join(map(str, _CALLING_CONVENTIONS))})")
    for effects_slot, kind in ((slot.ordered_effects, "ordered"), (slot.unordered_effects, "unordered")):
        if root.tables(effects_slot):
            names = [effect.string(0) for effect in root.tables(effects_slot)]
            raise NotImplementedError(f"jax.export of {fun_name!r} has {kind} effects {names}, which numax "
                                      "cannot run: export a function without side effects")
    named = root.tables(slot.unique_named_shardings) + [
        sharding.table(_Slot.Sharding.named_sharding) for sharding in root.tables(slot.in_shardings)
        + root.tables(slot.out_shardings) if sharding.has(_Slot.Sharding.named_sharding)]
    for named_sharding in named:
        memory_kind = named_sharding.string(_Slot.NamedSharding.memory_kind)
        if memory_kind not in (None, "device"):
            raise NotImplementedError(f"jax.export of {fun_name!r} places a value in memory kind {memory_kind!r}; "
                                      "numax runs exports whose values live in device memory only")
    if _nr_devices(root) > 1 and not named:
        raise NotImplementedError(f"jax.export of {fun_name!r} was exported for {_nr_devices(root)} devices with "
                                  "its shardings as HLO sharding protos (before 2026), which numax cannot read: "
                                  "re-export it with jax 0.10")


def _read_shardings(root, idxs_slot, tables_slot, count):
    """Each leaf's sharding (a NamedSharding over an AbstractMesh, or None), or None when all are unspecified."""
    slot = _Slot.Exported
    if root.has(idxs_slot):
        meshes = [_read_mesh(table) for table in root.tables(slot.unique_abstract_meshes)]
        unique = [_read_named_sharding(table, meshes) for table in root.tables(slot.unique_named_shardings)]
        indices = root.scalar_vector(idxs_slot, "u4").tolist()
        if any(index > len(unique) for index in indices):
            raise fb.FlatBufferError("a sharding index is out of range")
        shardings = [unique[index - 1] if index else None for index in indices]
    else:  # written before version 10: a Sharding table per leaf
        shardings = [_read_named_sharding(table.table(_Slot.Sharding.named_sharding), [])
                     if table.has(_Slot.Sharding.named_sharding) else None for table in root.tables(tables_slot)]
    if len(shardings) != count and any(shardings):
        raise fb.FlatBufferError(f"{len(shardings)} shardings for {count} values")
    return shardings if any(s is not None for s in shardings) else None


def _read_named_sharding(table, meshes):
    slot = _Slot.NamedSharding
    if meshes:
        index = table.scalar(slot.abstract_mesh_idx, "I")
        if index >= len(meshes):
            raise fb.FlatBufferError("an abstract mesh index is out of range")
        mesh = meshes[index]
    else:
        mesh = _read_mesh(_required_table(table, slot.mesh, "mesh"))
    spec = _required_table(table, slot.spec, "spec")
    # (PartitionSpec keeps an empty entry as None and a one-axis entry as that axis)
    partitions = [tuple(axis.strings(_Slot.PartitionSpecOneAxis.axes))
                  for axis in spec.tables(_Slot.PartitionSpec.partitions)]
    return NamedSharding(mesh, PartitionSpec(*partitions, reduced=frozenset(spec.strings(_Slot.PartitionSpec.reduced)),
                                             unreduced=frozenset(spec.strings(_Slot.PartitionSpec.unreduced))))


def _read_mesh(table):
    slot = _Slot.AbstractMesh
    kinds = table.scalar_vector(slot.axis_types, "i1").tolist()
    if any(kind not in _AXIS_TYPES for kind in kinds):
        raise fb.FlatBufferError(f"unknown axis types {kinds}")
    return AbstractMesh(table.scalar_vector(slot.axis_sizes, "u4").tolist(), table.strings(slot.axis_names),
                        tuple(_AXIS_TYPES[kind] for kind in kinds) or None)


def _read_avals(root, idxs_slot, full_slot, fun_name):
    if root.has(idxs_slot):
        unique = [_read_aval(table, fun_name) for table in root.tables(_Slot.Exported.unique_avals)]
        indices = root.scalar_vector(idxs_slot, "u4").tolist()
        if any(index >= len(unique) for index in indices):
            raise fb.FlatBufferError("an aval index is out of range")
        return [unique[index] for index in indices]
    return [_read_aval(table, fun_name) for table in root.tables(full_slot)]


def _read_aval(table, fun_name):
    slot = _Slot.AbstractValue
    if table.scalar(slot.kind, "b") != _SHAPED_ARRAY:
        raise NotImplementedError(f"jax.export of {fun_name!r} takes or returns a token, which numax cannot pass")
    dtype_enum = table.scalar(slot.dtype, "b")
    if dtype_enum in _JAX_KEY_DTYPES:
        raise NotImplementedError(f"jax.export of {fun_name!r} uses PRNG keys of type "
                                  f"{_JAX_KEY_DTYPES[dtype_enum]}, which numax cannot read yet")
    if dtype_enum not in _DTYPE_OF_ENUM:
        raise fb.FlatBufferError(f"unknown dtype number {dtype_enum}")
    memory_space = _MEMORY_SPACES.get(table.scalar(slot.memory_space, "b"))
    if memory_space != "device":
        raise NotImplementedError(f"jax.export of {fun_name!r} has a value in {memory_space} memory; numax runs "
                                  "exports whose values live in device memory only")
    return ShapedArray(tuple(_dimension(d, fun_name) for d in table.strings(slot.shape)), _DTYPE_OF_ENUM[dtype_enum])


def _dimension(text, fun_name):
    """A dimension as jax writes it: an integer, or a symbolic expression in jax's syntax ("b", "2*b + 1")."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return parse_dim(text)
    except ValueError as error:
        raise ValueError(f"jax.export of {fun_name!r} has the dimension {text!r}, which numax cannot parse "
                         f"({error})") from None


def _read_tree(table):
    """The tree description (the form `tree_of` reads) of a serialized PyTreeDef."""
    slot = _Slot.PyTreeDef
    kind_number = table.scalar(slot.kind, "b")
    if not 0 <= kind_number < len(_TREE_KINDS):
        raise fb.FlatBufferError(f"unknown pytree node kind {kind_number}")
    kind = _TREE_KINDS[kind_number]
    children = [_read_tree(child) for child in table.tables(slot.children)]
    if kind == "leaf":
        return "leaf"
    if kind == "none":
        return None
    if kind == "custom":
        data = base64.b64encode(table.byte_vector(slot.custom_auxdata)).decode()
        return {"custom": [table.string(slot.custom_name), data, children]}
    if kind == "dict":
        keys = table.strings(slot.children_names)
        if len(keys) != len(children):
            raise fb.FlatBufferError("a dict node has a different number of keys and children")
        return {"dict": [keys, children]}
    return {kind: children}


def _read_safety_check(table):
    kind_number = table.scalar(_Slot.DisabledSafetyCheck.kind, "b")
    if not 0 <= kind_number < len(_SAFETY_CHECK_KINDS):
        raise fb.FlatBufferError(f"unknown disabled safety check kind {kind_number}")
    kind = _SAFETY_CHECK_KINDS[kind_number]
    if kind == "custom_call":
        return f"custom_call:{table.string(_Slot.DisabledSafetyCheck.custom_call_target)}"
    return kind


# --- writing ---------------------------------------------------------------------------------------------

def serialize(exported, vjp_order=0) -> bytes:
    """Bytes that `jax.export.deserialize` reads: `exported` with `vjp_order` orders of VJP."""
    builder = fb.Builder()
    return builder.finish(_write_exported(builder, exported, vjp_order))


def _write_exported(builder, exported, vjp_order):
    slot = _Slot.Exported
    avals = [*exported.in_avals, *exported.out_avals]
    unique_avals = list(dict.fromkeys((a.shape, np.dtype(a.dtype)) for a in avals))
    aval_index = {aval: i for i, aval in enumerate(unique_avals)}
    unspecified_sharding = builder.table()
    shardings = [*exported._in_named_shardings, *exported._out_named_shardings]
    unique_shardings = list(dict.fromkeys(s for s in shardings if s is not None))
    unique_meshes = list(dict.fromkeys(s.mesh for s in unique_shardings))
    sharding_index = {s: i + 1 for i, s in enumerate(unique_shardings)}  # 0: unspecified
    leaf_count = len(exported.in_avals), len(exported.out_avals)
    references = {
        slot.function_name: builder.string(exported.fun_name),
        slot.in_tree: _write_tree(builder, describe_tree(exported.in_tree)),
        slot.in_avals: builder.offset_vector([_write_aval(builder, a.shape, a.dtype) for a in exported.in_avals]),
        slot.out_tree: _write_tree(builder, describe_tree(exported.out_tree)),
        slot.out_avals: builder.offset_vector([_write_aval(builder, a.shape, a.dtype)
                                               for a in exported.out_avals]),
        slot.in_shardings: builder.offset_vector([unspecified_sharding] * leaf_count[0]),
        slot.out_shardings: builder.offset_vector([unspecified_sharding] * leaf_count[1]),
        slot.platforms: builder.offset_vector([builder.string(p) for p in exported.platforms]),
        slot.ordered_effects: builder.offset_vector([]),
        slot.unordered_effects: builder.offset_vector([]),
        slot.disabled_checks: builder.offset_vector([_write_safety_check(builder, check)
                                                     for check in exported.disabled_safety_checks]),
        slot.mlir_module_serialized: builder.byte_vector(exported.mlir_module_serialized),
        slot.module_kept_var_idx: builder.scalar_vector("u2", exported.module_kept_var_idx),
    }
    if vjp_order > 0:
        references[slot.vjp] = _write_exported(builder, vjp_for_serialization(exported), vjp_order - 1)
    references.update({
        slot.unique_avals: builder.offset_vector([_write_aval(builder, *aval) for aval in unique_avals]),
        slot.unique_abstract_meshes: builder.offset_vector([_write_mesh(builder, m) for m in unique_meshes]),
        slot.unique_named_shardings: builder.offset_vector([_write_named_sharding(builder, s, unique_meshes)
                                                            for s in unique_shardings]),
        slot.in_avals_idxs: builder.scalar_vector("u4", [aval_index[a.shape, np.dtype(a.dtype)]
                                                         for a in exported.in_avals]),
        slot.out_avals_idxs: builder.scalar_vector("u4", [aval_index[a.shape, np.dtype(a.dtype)]
                                                          for a in exported.out_avals]),
        slot.in_shardings_idxs: builder.scalar_vector("u4", [sharding_index.get(s, 0)
                                                             for s in exported._in_named_shardings]),
        slot.out_shardings_idxs: builder.scalar_vector("u4", [sharding_index.get(s, 0)
                                                              for s in exported._out_named_shardings]),
    })
    scalars = [(slot.serialization_version, "H", _STORED_VERSION, 0),
               (slot.calling_convention_version, "H", exported.calling_convention_version, 0),
               (slot.uses_global_constants, "?", exported.uses_global_constants, False),
               (slot.nr_devices, "I", exported.nr_devices, 0)]
    return builder.table(scalars, references.items())


def _write_mesh(builder, mesh):
    slot = _Slot.AbstractMesh
    return builder.table([], [
        (slot.axis_sizes, builder.scalar_vector("u4", mesh.axis_sizes)),
        (slot.axis_names, builder.offset_vector([builder.string(name) for name in mesh.axis_names])),
        (slot.axis_types, builder.scalar_vector("i1", [_ENUM_OF_AXIS_TYPE[t] for t in mesh.axis_types]))])


def _write_named_sharding(builder, sharding, unique_meshes):
    slot, spec = _Slot.NamedSharding, sharding.spec
    axes = [() if entry is None else (entry,) if isinstance(entry, str) else tuple(entry) for entry in spec]
    partitions = [builder.table([], [(_Slot.PartitionSpecOneAxis.axes, builder.offset_vector(
        [builder.string(a) for a in entry]))]) for entry in axes]
    spec_table = builder.table([], [
        (_Slot.PartitionSpec.partitions, builder.offset_vector(partitions)),
        (_Slot.PartitionSpec.reduced, builder.offset_vector([builder.string(a) for a in sorted(spec.reduced)])),
        (_Slot.PartitionSpec.unreduced, builder.offset_vector([builder.string(a) for a in sorted(spec.unreduced)]))])
    return builder.table([(slot.abstract_mesh_idx, "I", unique_meshes.index(sharding.mesh), 0)],
                         [(slot.mesh, _write_mesh(builder, sharding.mesh)), (slot.spec, spec_table)])


def _write_aval(builder, shape, dtype):
    slot = _Slot.AbstractValue
    dtype = np.dtype(dtype)
    if dtype not in _ENUM_OF_DTYPE:
        raise NotImplementedError(f"serialize(format='jax'): jax's format has no dtype {dtype}")
    shape_vector = builder.offset_vector([builder.string(str(d)) for d in shape])
    scalars = [(slot.kind, "b", _SHAPED_ARRAY, 0), (slot.dtype, "b", _ENUM_OF_DTYPE[dtype], 0),
               (slot.memory_space, "b", 1, 0)]  # 1: device memory
    return builder.table(scalars, [(slot.shape, shape_vector)])


def _write_tree(builder, description):
    slot = _Slot.PyTreeDef
    references = []
    if description == "leaf":
        kind = "leaf"
    elif description is None:
        kind = "none"
    else:
        (kind, content), = description.items()
        if kind == "dict":
            keys, content = content
            references.append((slot.children_names, builder.offset_vector([builder.string(k) for k in keys])))
        elif kind == "custom":
            name, data, content = content
            references += [(slot.custom_name, builder.string(name)),
                           (slot.custom_auxdata, builder.byte_vector(base64.b64decode(data)))]
        if content:
            references.append((slot.children, builder.offset_vector([_write_tree(builder, child)
                                                                      for child in content])))
    return builder.table([(slot.kind, "b", _TREE_KINDS.index(kind), 0)], references)


def _write_safety_check(builder, check):
    slot = _Slot.DisabledSafetyCheck
    kind, _, target = str(check).partition(":")
    references = [(slot.custom_call_target, builder.string(target))] if kind == "custom_call" else []
    return builder.table([(slot.kind, "b", _SAFETY_CHECK_KINDS.index(kind), 0)], references)


serializers["jax"] = serialize
