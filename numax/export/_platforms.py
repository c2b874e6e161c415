"""Multi-platform export: one StableHLO module for several platforms, dispatching on a platform index.

JAX's convention (jax.export), which numax follows so that either can call the other's modules: a module
exported for more than one platform takes a first argument `platform_index: tensor<i32>`, the position of the
platform it runs on in `Exported.platforms`; a module for one platform has no such argument. numax lowers the
program once per platform, keeps each distinct lowering as a private function (`@cpu_main`, `@cuda_main`, or
`@cpu_cuda_main` when both lower alike) and makes `main` a `stablehlo.case` on the index between them.

A caller passes the index as a constant (`platform_index_operands`), so XLA folds the case before it looks
for the custom calls of the other platforms' branches (cuSOLVER's, say, which a CPU has no handler for).

numax has lowering rules for "cpu" and "cuda" only; it also exports for jax's other platforms ("tpu", "rocm")
a program whose lowering is plain StableHLO (no custom call, which would be another platform's), as jax
would lower it there, and refuses one that needs platform-specific code.
"""

import numpy as np

from ..lowering import xla
from ..lowering.lower import lower_to_module
from ..lowering.stablehlo import FunctionBuilder, aval_type, tensor_type
from ._shardings import mesh_declarations

NUMAX_PLATFORMS = {"cpu": "cpu", "gpu": "cuda"}  # numax's backend platform -> the name exports use (JAX's)
_BACKEND_PLATFORMS = {export_name: numax_name for numax_name, export_name in NUMAX_PLATFORMS.items()}
GENERIC_PLATFORMS = ("tpu", "rocm")  # jax's platforms numax exports plain StableHLO for
# The attribute JAX puts on the index argument: a value its shape refinement may specialize callees on.
_INDEX_ATTRIBUTE = '{jax.global_constant = "_platform_index"}'


def lower_for_platforms(closed, name, platforms, devices=None):
    """(module text, [ModuleContext of each platform's lowering]) of a closed program for `platforms` (export
    names: "cpu", "cuda", or a generic platform): one platform's plain module, or several platforms' module with an
    index argument. `devices`: those of the mesh a sharded program is lowered over (its Shardy meshes count
    positions in them)."""
    lowerings = [_lower_for(closed, name, platform, devices) for platform in platforms]
    contexts = [context for _, context in lowerings]
    if len(platforms) == 1:
        return lowerings[0][0], contexts
    bodies = {}  # module text -> the platforms lowering to it, in order
    for platform, (text, _) in zip(platforms, lowerings):
        bodies.setdefault(text, []).append(platform)
    callees = {}  # platform -> the private function holding its lowering
    functions = []
    for text, sharing in bodies.items():
        prefix = "_".join(sharing) + "_"
        functions.append(xla.private_functions(text, prefix))
        callees.update((platform, f"@{prefix}main") for platform in sharing)
    program = closed.program
    main = _dispatching_main(program.in_avals, program.out_avals, [callees[p] for p in platforms])
    meshes = mesh_declarations(lowerings[0][0])  # (the private functions refer to them)
    return "\n".join([_module_header(lowerings[0][0]), *meshes, main, *functions, "}"]), contexts


def _lower_for(closed, name, platform, devices):
    """Lowering only writes text, so it needs no device of `platform`, except where a rule asks one (a Triton
    kernel call is compiled for the compute capability of the GPU it is lowered on)."""
    try:
        text, context = lower_to_module(closed, name, _BACKEND_PLATFORMS.get(platform, platform), devices=devices,
                                        num_partitions=1 if devices is None else len(devices))
    except NotImplementedError:  # a RuntimeError that says itself what the platform lacks (eig on a GPU)
        raise
    except RuntimeError as error:
        raise RuntimeError(f"export: lowering {name!r} for {platform!r} failed on this machine ({error}); a "
                           "program whose lowering needs a device of that platform (a Triton kernel call is "
                           "compiled for its GPU) must be exported where one is") from error
    if platform in GENERIC_PLATFORMS and ("stablehlo.custom_call" in text or context.host_callbacks):
        raise NotImplementedError(f"export: {name!r} needs code specific to a platform (a custom call or a host "
                                  f"callback) to run on {platform!r}, for which numax has no lowering rules; numax "
                                  "exports for it only programs of plain StableHLO")
    return text, context


def _dispatching_main(in_avals, out_avals, callees):
    """`func.func public @main(%platform_index, args...)` calling `callees[platform_index]` (one call when all
    platforms share a callee)."""
    builder = FunctionBuilder()
    index = builder.fresh().replace("%", "%arg")
    builder.types[index] = tensor_type((), np.dtype(np.int32))
    args = []
    for aval in in_avals:
        arg = builder.fresh().replace("%", "%arg")
        builder.types[arg] = aval_type(aval)
        args.append(arg)
    out_types = [aval_type(a) for a in out_avals]

    def call(target_builder, callee):
        return target_builder.op("func.call", args, out_types, {"callee": callee})

    if len(set(callees)) == 1:
        outs = call(builder, callees[0])
    else:
        branches = [builder.region([], lambda inner, _, callee=callee: call(inner, callee)) for callee in callees]
        outs = builder.op("stablehlo.case", [index], out_types, None, branches)
    signature = ", ".join([f"{index}: {builder.types[index]} {_INDEX_ATTRIBUTE}",
                           *(f"{a}: {builder.types[a]}" for a in args)])
    ret = f"    return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    return"
    return "\n".join([f"  func.func public @main({signature}) -> ({', '.join(out_types)}) {{", *builder.lines,
                      ret, "  }"])


def _module_header(text):
    """The `module @name attributes {...} {` line of a lowered module (its name and replica counts), marked as
    JAX marks a module with a platform index: one whose global constants a caller must refine before compiling."""
    header = text.split("\n", 1)[0]
    assert header.startswith("module @") and " attributes {" in header, header
    if "jax.uses_shape_polymorphism" in header:  # already so marked: a module with symbolic shapes
        return header
    return header.replace(" attributes {", " attributes {jax.uses_shape_polymorphism = true, ", 1)


def platform_index_operands(ctx, exported, platform):
    """The leading operands of a call to `exported`'s main from a module lowered for `platform` (an export
    name): the constant index of `platform` when the module was exported for several platforms, else none."""
    if len(exported.platforms) == 1:
        return []
    return [ctx.builder.constant(np.int32(exported.platforms.index(platform)))]
