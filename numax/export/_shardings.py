"""The shardings of a sharded export: what `Exported` records of them, and how a call applies them.

As in jax.export, an `Exported` keeps the sharding of each argument and result leaf as a `NamedSharding` over
an `AbstractMesh` (axis sizes, names and types, no devices) or None (unspecified), and `nr_devices`, the number
of devices the module was lowered for. A `SingleDeviceSharding` is kept as jax keeps it: replicated over the
empty mesh. `in_shardings_jax(mesh)` puts them back on a concrete mesh of the same shape and names.

A call applies them at the call's boundary: each argument and result is constrained to its sharding over the
calling program's devices, in their order (so an export made on one set of devices runs on any other of the
same count). A module lowered with sharding constraints inside declares Shardy meshes (`sdy.mesh`): they are
declared again, renamed for the call, in the calling module.
"""

import re

import numpy as np

from ..core.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, P, SingleDeviceSharding
from ..lowering.sharded import meshes_of_program, program_mesh, sdy_sharding
from ..lowering.stablehlo import aval_type

_EMPTY_MESH = AbstractMesh((), ())


# --- at export ---------------------------------------------------------------------------------------------
def export_mesh(program, in_shardings, out_shardings):
    """(the concrete Mesh the program is lowered over or None, nr_devices) of a program with these leaf
    shardings (None: unspecified; a NamedSharding over an AbstractMesh has no devices but counts them)."""
    concrete_in, concrete_out = ([None if _is_abstract(s) else s for s in shardings]
                                 for shardings in (in_shardings, out_shardings))
    if any(s is not None for s in concrete_in + concrete_out) or meshes_of_program(program):
        mesh = program_mesh(program, concrete_in, concrete_out)
        return mesh, mesh.size
    abstract = [s.mesh.size for s in (*in_shardings, *out_shardings) if _is_abstract(s)]
    return None, max(abstract, default=1)


def _is_abstract(sharding):
    return isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh)


def abstract_sharding(sharding, aval):
    """The sharding an Exported records for a leaf of `aval` (None: unspecified)."""
    if sharding is None:
        return None
    if isinstance(sharding, SingleDeviceSharding):
        return NamedSharding(_EMPTY_MESH, P(*[None] * aval.ndim))
    if isinstance(sharding, NamedSharding):
        mesh = sharding.mesh.abstract_mesh if isinstance(sharding.mesh, Mesh) else sharding.mesh
        return NamedSharding(mesh, sharding.spec)
    raise NotImplementedError(f"export: numax exports NamedShardings and single-device shardings; the sharding "
                              f"{sharding} of a {aval.str_short()} value has no PartitionSpec over a mesh")


def on_mesh(sharding, mesh):
    """jax's `Exported.in_shardings_jax` for one leaf: `sharding` (recorded, or None) over `mesh`, which must
    have the export mesh's axis sizes, names and types."""
    if sharding is None:
        return None
    abstract = mesh.abstract_mesh if isinstance(mesh, Mesh) else mesh
    exported = sharding.mesh
    if (abstract.axis_sizes, abstract.axis_names, abstract.axis_types) != (
            exported.axis_sizes, exported.axis_names, exported.axis_types):
        raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for export {exported}.")
    return NamedSharding(mesh, sharding.spec)


# --- in serialized metadata ----------------------------------------------------------------------------------
def describe(sharding):
    """JSON of a recorded sharding: null, or {"mesh": [sizes, names, axis types], "spec": [entry, ...]}, an
    entry null, an axis name or a list of axis names."""
    if sharding is None:
        return None
    mesh, spec = sharding.mesh, sharding.spec
    if spec.unreduced or spec.reduced or any(entry is P.UNCONSTRAINED for entry in spec):
        raise NotImplementedError(f"serialize: numax cannot serialize the PartitionSpec {spec} (unreduced, reduced "
                                  "or unconstrained entries)")
    entries = [list(entry) if isinstance(entry, tuple) else entry for entry in spec]
    return {"mesh": [list(mesh.axis_sizes), list(mesh.axis_names), [t.name for t in mesh.axis_types]],
            "spec": entries}


def parse(description):
    if description is None:
        return None
    sizes, names, types = description["mesh"]
    entries = [tuple(entry) if isinstance(entry, list) else entry for entry in description["spec"]]
    return NamedSharding(AbstractMesh(sizes, names, tuple(AxisType[t] for t in types)), P(*entries))


# --- at a call -----------------------------------------------------------------------------------------------
def check_device_count(exported, module):
    """jax's ValueError for a call in a program over another number of devices than the export's (an export
    for one device runs anywhere)."""
    num_devices = module.num_partitions
    if exported.nr_devices != 1 and exported.nr_devices != num_devices:
        raise ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} devices and is "
                         f"called in a context with {num_devices} devices, which is not allowed.")


def constrained(ctx, values, avals, shardings):
    """`values` constrained to the recorded `shardings` over the calling module's devices, in their order."""
    module = ctx.module
    if module.devices is None or module.num_partitions == 1:
        return list(values)  # a program for one device: every sharding is replication
    out = []
    for value, aval, sharding in zip(values, avals, shardings):
        if sharding is not None and sharding.mesh.size > 1:  # (over one device, a sharding is replication)
            mesh = Mesh(np.array(module.devices, dtype=object).reshape(sharding.mesh.axis_sizes),
                        sharding.mesh.axis_names, sharding.mesh.axis_types)
            spec = sdy_sharding(module.mesh_symbol(mesh), NamedSharding(mesh, sharding.spec), aval.ndim)
            value = ctx.builder.op1("sdy.sharding_constraint", [value], aval_type(aval),
                                    {"sharding": "#sdy.sharding" + spec})
        out.append(value)
    return out


_MESH_DECLARATION = re.compile(r"^\s*sdy\.mesh @([\w$.]+) = (.*)$", re.MULTILINE)


def paste_meshes(module, module_text, functions_text, prefix):
    """`functions_text` (an exported module's functions, renamed with `prefix`) with the Shardy meshes the
    exported module declares renamed with `prefix` too, and declared in the calling `module`."""
    for name, body in _MESH_DECLARATION.findall(module_text):
        module.meshes[prefix + name] = body
        functions_text = re.sub(rf"@{re.escape(name)}(?![\w$.])", f"@{prefix}{name}", functions_text)
    return functions_text


def mesh_declarations(module_text):
    """The `sdy.mesh` lines of a module's text."""
    return [line for line in module_text.split("\n") if _MESH_DECLARATION.match(line)]
