"""numax.export: a jitted function exported as a StableHLO artifact, serialized, and run without its source.

`export(numax.jit(f))(*args_or_ShapeDtypeStructs)` traces and lowers `f` into an `Exported`;
`exported.serialize()` gives bytes (numax's versioned format, see `_format.py`), and `deserialize(blob)` gives
back an `Exported` whose `.call(*args)` runs the module, eagerly or inside jit, vmap and grad (as many orders
as the `vjp_order` it was serialized with; any number before serialization). `deserialize` also reads blobs
that `jax.export` serialized, and `exported.serialize(format="jax")` writes jax.export's format
(`_jax_format.py`), so that `jax.export.deserialize(blob).call(...)` runs a numax export; numax's own format
stays the default (it keeps weak types).

The JAX API: `jax.export.export`, `deserialize`, `Exported`, `DisabledSafetyCheck`, `default_export_platform`,
the supported calling convention versions, and `symbolic_shape`:
`ShapeDtypeStruct(symbolic_shape("b, 784"), f32)` exports for every batch size `b` (see `_shape_poly.py`; the
module's dynamic shapes are refined to the caller's static ones before compiling); `symbolic_args_specs`
builds such structs for a pytree of arguments; `register_pytree_node_serialization` and
`register_namedtuple_serialization` let other pytree node types cross serialization.

A sharded function (jit's `in_shardings`/`out_shardings`, arrays laid out over devices, `ShapeDtypeStruct`s with a
`sharding`) exports for `exported.nr_devices` devices; `exported.in_shardings_jax(mesh)` gives the shardings to
place its arguments with on any mesh of the same shape (`_shardings.py`), and a call in a program over another
number of devices raises jax's ValueError. numax library functions (`numax.numpy.cos`) export without `jit`, as
jax's jitted ones do.
"""

from ._exported import (  # noqa: F401
    DisabledSafetyCheck,
    Exported,
    default_export_platform,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)
from ._format import SERIALIZATION_VERSION, deserialize  # noqa: F401
from ._pytree_serialization import (  # noqa: F401
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from ._shape_poly import (  # noqa: F401
    InconclusiveDimensionOperation,
    SymbolicScope,
    is_symbolic_dim,
    symbolic_args_specs,
    symbolic_shape,
)

__all__ = ["Exported", "export", "deserialize", "DisabledSafetyCheck", "default_export_platform",
           "minimum_supported_calling_convention_version", "maximum_supported_calling_convention_version",
           "SERIALIZATION_VERSION", "symbolic_shape", "symbolic_args_specs", "SymbolicScope",
           "InconclusiveDimensionOperation", "is_symbolic_dim", "register_namedtuple_serialization",
           "register_pytree_node_serialization"]
