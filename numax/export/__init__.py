"""numax.export: a jitted function exported as a StableHLO artifact, serialized, and run without its source.

`export(numax.jit(f))(*args_or_ShapeDtypeStructs)` traces and lowers `f` into an `Exported`;
`exported.serialize()` gives bytes (numax's versioned format, see `_format.py`), and `deserialize(blob)` gives
back an `Exported` whose `.call(*args)` runs the module, eagerly or inside jit, vmap and (when exported with
`vjp_order`) grad. `deserialize` also reads blobs that `jax.export` serialized, and
`exported.serialize(format="jax")` writes jax.export's format (`_jax_format.py`), so that
`jax.export.deserialize(blob).call(...)` runs a numax export; numax's own format stays the default (it keeps weak
types). The JAX API: `jax.export.export`, `jax.export.deserialize`, `jax.export.Exported`,
`jax.export.symbolic_shape`: `ShapeDtypeStruct(symbolic_shape("b, 784"), f32)` exports for every batch size `b`
(see `_shape_poly.py`; the module's dynamic shapes are refined to the caller's static ones before compiling).
"""

from ._exported import Exported, export  # noqa: F401
from ._format import SERIALIZATION_VERSION, deserialize  # noqa: F401
from ._shape_poly import InconclusiveDimensionOperation, symbolic_shape  # noqa: F401

__all__ = ["Exported", "export", "deserialize", "SERIALIZATION_VERSION", "symbolic_shape",
           "InconclusiveDimensionOperation"]
