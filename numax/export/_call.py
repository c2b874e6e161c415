"""The `call_exported` primitive: a deserialized module applied to arrays.

It is lowered by pasting the module's functions into the enclosing module as private functions and calling
its `main`, so eager calls (the primitive compiled alone) and calls inside jit share one path. Under vmap it
runs once per example (the module has fixed shapes); it has no JVP rule: `Exported.call` wraps it in a
`custom_vjp` whose backward pass calls the exported VJP. It takes and returns the module's types (`i1` where the
`Exported` has float0). A sharded export's arguments and results are constrained to its shardings around the
call (`_shardings.py`).
"""

import itertools

from ..core.avals import is_static_shape
from ..core.primitives import Primitive, batching_rules
from ..lowering import dynamic_shapes, xla
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from ._platforms import NUMAX_PLATFORMS, platform_index_operands
from ._shape_binding import bind_dimensions, substitute_shape
from ._shardings import check_device_count, constrained, paste_meshes

call_exported_p = Primitive("call_exported", multiple_results=True)


def _call_exported_abstract_eval(*avals, exported):
    if all(is_static_shape(a.shape) for a in exported.in_avals):
        return list(exported._module_out_avals)
    bindings = bind_dimensions(exported._module_in_avals, avals, exported.in_tree)  # a shape-polymorphic export
    return [a.update(shape=substitute_shape(a.shape, bindings)) for a in exported._module_out_avals]


call_exported_p.def_abstract_eval(_call_exported_abstract_eval)

_symbol_counter = itertools.count()


def symbol_prefix(fun_name):
    """A module-unique prefix for one Exported's functions."""
    cleaned = "".join(c if c.isalnum() else "_" for c in fun_name)
    return f"exported_{next(_symbol_counter)}_{cleaned}_"


def _lower_call_exported(ctx, *args, exported):
    platform = NUMAX_PLATFORMS.get(ctx.module.platform, ctx.module.platform)
    if platform not in exported.platforms and "platform" in map(str, exported.disabled_safety_checks):
        platform = exported.platforms[0]  # the platform check disabled: run the first platform's lowering
    if platform not in exported.platforms:
        raise ValueError(f"Function {exported.fun_name!r} was exported for platforms {exported.platforms} and "
                         f"cannot run on {platform!r}: export it with platforms=({platform!r},)")
    check_device_count(exported, ctx.module)
    static = all(is_static_shape(a.shape) for a in exported.in_avals)
    # A shape-polymorphic module gets a copy per call: refining its shapes specializes it to the call's.
    prefix = exported.symbol_prefix if static else symbol_prefix(exported.fun_name)
    main = prefix + "main"
    if main not in ctx.module.functions:
        text = exported.mlir_module()
        ctx.module.functions[main] = paste_meshes(ctx.module, text, xla.private_functions(text, prefix), prefix)
    args = constrained(ctx, args, ctx.avals_in, exported._in_named_shardings)
    kept = exported.module_kept_var_idx  # jax drops unused arguments from `main`
    args, kept_avals = [args[i] for i in kept], [exported._module_in_avals[i] for i in kept]
    index = platform_index_operands(ctx, exported, platform)
    if static:
        outs = ctx.builder.op("func.call", index + args, [aval_type(a) for a in ctx.avals_out], {"callee": f"@{main}"})
    else:
        # As JAX does: static arguments converted to the module's dynamic types, results back to static ones.
        args = [_converted(ctx.builder, x, aval_type(a)) for x, a in zip(args, kept_avals)]
        outs = ctx.builder.op("func.call", index + args, [aval_type(a) for a in exported._module_out_avals],
                              {"callee": f"@{main}"})
        outs = [_converted(ctx.builder, x, aval_type(a)) for x, a in zip(outs, ctx.avals_out)]
    return constrained(ctx, outs, ctx.avals_out, exported._out_named_shardings)


def _converted(builder, value, type_text):
    return value if builder.types[value] == type_text else builder.op1("stablehlo.convert", [value], type_text)


def _batch_call_exported(values, dims, exported):
    """One call per example: the module's shapes are fixed."""
    import numax.numpy as jnp

    size = next(v.shape[d] for v, d in zip(values, dims) if d is not None)
    per_example = []
    for i in range(size):
        example = [v if d is None else jnp.take(v, i, axis=d) for v, d in zip(values, dims)]
        per_example.append(call_exported_p.bind(*example, exported=exported))
    outs = [jnp.stack(results) for results in zip(*per_example)]
    return outs, [0] * len(outs)


register_lowering(call_exported_p, _lower_call_exported)
# An export called inside a shape-polymorphic export: its module takes the caller's dynamic types as they are.
dynamic_shapes.polymorphic_primitives.add(call_exported_p)
batching_rules[call_exported_p] = _batch_call_exported
