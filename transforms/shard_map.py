"""`shard_map`: per-shard code over a mesh of devices, with explicit collectives over the mesh's axis names.

Owns the rules of the `shard_map` call primitive (declared with its specs in shard_map_specs.py) and
`numax.shard_map`. The function is traced once per signature into
a per-shard program (each argument's dimensions divided by the mesh axes its PartitionSpec names), with the
mesh axes bound (`lax.collectives.extend_axis_env`) so that collectives over them are staged as equations.
The primitive holds that program, the mesh and one spec per input and output; its params name the mesh, so
a program holding it is compiled once for the mesh's devices (lowering/sharded.py), eagerly or under jit.
Called outside every transformation, as in JAX, the function instead runs once in Python on per-device values
(transforms/shard_map_eager.py), each operation compiled as such a primitive: `print(x)` in it shows each
device's block.
It lowers to an `sdy.manual_computation` whose body is the per-shard program, with the mesh axes in
`module.axis_env` so that collectives lower to groups of partition ids in the mesh's device order.

An output spec that leaves a mesh axis out promises that the value is the same on every device along it.
With `check_vma=True` (the default) the per-shard program's values are typed, as JAX's are, by the mesh axes
they may vary over (`numax.typeof(x).manual_axis_type.varying`; lax/collectives.py has the rules): an argument
varies over the axes its in_spec names, and an output's type must not vary over an axis its out_spec leaves
out. Differentiation then follows the types: an invariant value used with varying ones was pvary'd, whose
transpose sums the cotangents over the devices, so a gradient with respect to an invariant value is the sum over
the devices, inside the body as at its boundary. With `check_vma=False` the values are untyped, and
differentiation follows JAX's rules for it: an output cotangent is split evenly over the devices along the axes
its spec leaves out, and the cotangent of an input replicated along axes is summed over them (psum) at the
boundary; inside the body, a gradient with respect to a replicated value is each device's own.
"""

import functools
import math

import numpy as np

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.config import trace_context
from ..core.evaluation import eval_closed_program
from ..core.ir import Equation, Var
from ..core.primitives import batching_rules, jvp_rules, transpose_rules
from ..core.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, P, current_mesh
from ..core.staging import hoist_tracer_consts, trace_to_closed_program, trace_to_program
from ..core.trace import Tracer, get_aval_of, is_tracing, trace_state
from ..lax import collectives
from ..lax.elementwise import div
from ..lax.shapes import reshape
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.sharded import sdy_sharding
from ..lowering.sharded_array import ShardedArray
from ..lowering.stablehlo import aval_type
from .jvp import jvp_program
from .partial_eval import partial_eval_program, partial_eval_rules
from .shard_map_eager import run_eager
from .shard_map_specs import (
    _blocks_per_dimension,
    _dimension_axes,
    _mesh_axes_bound,
    _named_axes_of,
    _shard_aval,
    _spec_with_dimension,
    _unmentioned,
    _unshard_aval,
    shard_map_p,
)
from .transpose import transpose_program

__all__ = ["shard_map", "Infer"]


def _shard_map_abstract_eval(*avals, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    return [_unshard_aval(mesh, spec, aval) for spec, aval in zip(out_specs, program.out_avals)]


shard_map_p.def_abstract_eval(_shard_map_abstract_eval)


# --- lowering: a manual computation over the mesh -----------------------------------------------------------
def _per_value(symbol, mesh, specs, avals):
    return "#sdy.sharding_per_value<[" + ", ".join(
        sdy_sharding(symbol, NamedSharding(mesh, spec), aval.ndim) for spec, aval in zip(specs, avals)) + "]>"


def _shard_map_lowering(ctx, *args, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    module = ctx.module
    if module.axis_env:
        raise NotImplementedError("shard_map inside a pmap or another shard_map is not supported yet")
    devices = list(mesh.devices.flat)
    if module.devices is None or list(module.devices) != devices:
        # Collectives number devices by their place in the program's device order, which must be the mesh's.
        raise NotImplementedError("a shard_map in a program whose other shardings order the devices differently "
                                  "from the shard_map's mesh; use one mesh throughout")

    def body(builder, blocks):
        saved, module.axis_env = module.axis_env, tuple(mesh.shape.items())
        try:
            with _mesh_axes_bound(mesh, check_vma):  # rules that trace sub-programs bind collectives
                return lower_program_body(module, builder, program.program, program.consts, blocks)
        finally:
            module.axis_env = saved

    if mesh.size == 1:  # the one device runs the body on the whole arrays
        return body(ctx.builder, list(args))
    symbol = module.mesh_symbol(mesh)
    region = ctx.builder.region([aval_type(a) for a in program.in_avals], body, terminator="sdy.return")
    attributes = {"in_shardings": _per_value(symbol, mesh, in_specs, ctx.avals_in),
                  "out_shardings": _per_value(symbol, mesh, out_specs, ctx.avals_out),
                  "manual_axes": "#sdy<manual_axes{" + ", ".join(f'"{axis}"' for axis in manual_axes) + "}>"}
    return ctx.builder.op("sdy.manual_computation", list(args), [aval_type(a) for a in ctx.avals_out], attributes,
                          [region])


register_lowering(shard_map_p, _shard_map_lowering)


# --- residuals: values a forward shard_map hands to a later one ---------------------------------------------
def _except_spmd(manual_axes):
    """The manual axes less those that an enclosing vmap splits its batch over (its spmd_axis_name): along those,
    devices hold different batch elements, so the per-shard program's values are not to be laid out or summed
    over them."""
    from .vmap import BatchTrace

    spmd = set()
    for main in trace_state.stack:
        if main.trace_type is BatchTrace and (name := main.global_data.spmd_name) is not None:
            spmd.update(name if isinstance(name, tuple | list) else (name,))
    return tuple(axis for axis in manual_axes if axis not in spmd)


def _residual_spec(manual_axes, aval, check_vma):
    """A residual's layout: its blocks concatenated along dimension 0 over the manual axes it varies over (its type's,
    with check_vma; else every manual axis but an enclosing vmap's spmd axes, which the batch dimension it adds
    splits), and the same along the others."""
    axes = tuple(a for a in manual_axes if a in aval.vma) if check_vma else _except_spmd(manual_axes)
    return P(axes)  # (P keeps a 1-tuple as its axis, an empty one as None)


def _split_by_residuals(closed, mesh, unknowns, instantiate, manual_axes, check_vma):
    """Partial evaluation of a per-shard program, with rank-0 residuals given a dimension of size 1 (so that they
    can be laid out per device). Returns (known, unknown, out_unknowns, residual specs, residual global avals)."""
    with _mesh_axes_bound(mesh, check_vma):
        known, unknown, out_unknowns, num_res = partial_eval_program(closed, unknowns, instantiate)
        n_known = len(known.out_avals) - num_res
        scalars = [aval.ndim == 0 for aval in known.out_avals[n_known:]]
        if any(scalars):
            def known_with_vectors(*values):
                outs = eval_closed_program(known, *values)
                return outs[:n_known] + [reshape(r, (1,)) if s else r for r, s in zip(outs[n_known:], scalars)]

            def unknown_from_vectors(*values):
                residuals = [reshape(r, ()) if s else r for r, s in zip(values[:num_res], scalars)]
                return eval_closed_program(unknown, *residuals, *values[num_res:])

            residual_avals = [a.update(shape=(1,)) if s else a for a, s in zip(known.out_avals[n_known:], scalars)]
            known = trace_to_closed_program(known_with_vectors, known.in_avals)
            unknown = trace_to_closed_program(unknown_from_vectors, residual_avals + unknown.in_avals[num_res:])
    block_avals = known.out_avals[len(known.out_avals) - num_res:]
    specs = tuple(_residual_spec(manual_axes, aval, check_vma) for aval in block_avals)
    return known, unknown, out_unknowns, specs, [_unshard_aval(mesh, s, a) for s, a in zip(specs, block_avals)]


# --- transformation rules -------------------------------------------------------------------------------------
def _kept(values, mask, keep=True):
    return tuple(v for v, m in zip(values, mask) if m == keep)


def _shard_map_jvp(primals, tangents, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    """Split by partial evaluation into two shard_maps, as a jit's JVP is: the primal one (also returning the
    residuals, each device its own) and the tangent one, so that under linearize only the second is staged."""
    nonzeros = [type(t) is not Zero for t in tangents]
    n_in, n_out = len(primals), len(program.out_avals)
    with _mesh_axes_bound(mesh, check_vma):
        jvp_closed, out_nonzeros = jvp_program(program, nonzeros)
    known, unknown, _, residual_specs, _ = _split_by_residuals(
        jvp_closed, mesh, [False] * n_in + [True] * sum(nonzeros), [False] * n_out + [True] * sum(out_nonzeros),
        manual_axes, check_vma)
    common = dict(mesh=mesh, manual_axes=manual_axes, check_vma=check_vma)
    outs = shard_map_p.bind(*primals, program=known, in_specs=in_specs, out_specs=out_specs + residual_specs,
                            **common)
    primal_out, residuals = outs[:n_out], outs[n_out:]
    avals_out = _shard_map_abstract_eval(program=program, out_specs=out_specs, **common, in_specs=in_specs)
    if not any(out_nonzeros):
        return primal_out, [Zero(tangent_aval(a)) for a in avals_out]
    tangent_out = iter(shard_map_p.bind(
        *residuals, *_kept(tangents, nonzeros), program=unknown, in_specs=residual_specs + _kept(in_specs, nonzeros),
        out_specs=_kept(out_specs, out_nonzeros), **common))
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals_out, out_nonzeros)]


def _shard_map_partial_eval(eqn, in_unknowns):
    """A shard_map with some unknown inputs: a known shard_map that also returns the residuals (each device its
    own) and an unknown shard_map that takes them back."""
    params = dict(eqn.params)
    program, in_specs, out_specs = params.pop("program"), params.pop("in_specs"), params.pop("out_specs")
    known, unknown, out_unknowns, residual_specs, residual_avals = _split_by_residuals(
        program, params["mesh"], in_unknowns, False, params["manual_axes"], params["check_vma"])
    residuals = [Var(a) for a in residual_avals]
    known_eqn = Equation(shard_map_p, list(_kept(eqn.inputs, in_unknowns, False)),
                         list(_kept(eqn.outvars, out_unknowns, False)) + residuals,
                         dict(params, program=known, in_specs=_kept(in_specs, in_unknowns, False),
                              out_specs=_kept(out_specs, out_unknowns, False) + residual_specs))
    unknown_eqn = Equation(shard_map_p, residuals + list(_kept(eqn.inputs, in_unknowns)),
                           list(_kept(eqn.outvars, out_unknowns)),
                           dict(params, program=unknown, in_specs=residual_specs + _kept(in_specs, in_unknowns),
                                out_specs=_kept(out_specs, out_unknowns)))
    return known_eqn, unknown_eqn, out_unknowns, residuals


def _share_of(ct, mesh, axes):
    """One device's share of a cotangent that every device along `axes` holds whole."""
    count = math.prod(mesh.shape[axis] for axis in axes)
    dtype = get_aval_of(ct).dtype
    if count == 1 or not dtypes.is_inexact(dtype):
        return ct
    return div(ct, np.array(count, dtype))


def _shard_map_transpose(cts, *args, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    """A shard_map of the transposed per-shard program. With check_vma, the types did the work (the cotangent of
    an invariant value is already summed over the devices). Without, an output the same along some axes passes
    each device its share of the cotangent, and an input the same along some axes gets the sum of its devices'
    cotangents."""
    linear = [is_undefined(a) for a in args]
    nonzero_cts = [type(ct) is not Zero for ct in cts]
    reduced_axes = _except_spmd(manual_axes)
    given = [ct if check_vma else _share_of(ct, mesh, _unmentioned(reduced_axes, spec))
             for ct, spec, nz in zip(cts, out_specs, nonzero_cts) if nz]
    linear_specs = _kept(in_specs, linear)
    with _mesh_axes_bound(mesh, check_vma):
        transposed = transpose_program(program, linear, nonzero_cts)
        if check_vma:
            transposed = _fanout_cotangents_summed(transposed, program, out_specs, nonzero_cts, manual_axes)
            return _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs,
                                    manual_axes, check_vma)

        def summed_over_replicas(*values):
            outs = eval_closed_program(transposed, *values)
            return [collectives.psum(ct, axes) if (axes := _unmentioned(reduced_axes, spec)) else ct
                    for ct, spec in zip(outs, linear_specs)]

        transposed = trace_to_closed_program(summed_over_replicas, transposed.in_avals)
    return _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs, manual_axes,
                            check_vma)


def _fanout_cotangents_summed(transposed, program, out_specs, nonzero_cts, manual_axes):
    """With check_vma, an output whose out_spec names axes its type does not vary over was implicitly pvary'd
    (its one value fanned out to every device along them); the transpose of that fan-out sums the devices'
    cotangents over those axes before they enter the transposed body."""
    fanned = [tuple(axis for axis in manual_axes if axis in _named_axes_of(spec) and axis not in aval.vma)
              for spec, aval, nonzero in zip(out_specs, program.out_avals, nonzero_cts) if nonzero]
    if not any(fanned):
        return transposed
    n_other = len(transposed.in_avals) - len(fanned)

    def summed(*values):
        cts = [collectives.psum(ct, axes) if axes else ct for ct, axes in zip(values[n_other:], fanned)]
        return eval_closed_program(transposed, *values[:n_other], *cts)

    ct_avals = [aval.update(vma=aval.vma | frozenset(axes))
                for aval, axes in zip(transposed.in_avals[n_other:], fanned)]
    return trace_to_closed_program(summed, list(transposed.in_avals[:n_other]) + ct_avals)


def _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs, manual_axes, check_vma):
    outs = iter(shard_map_p.bind(
        *_kept(args, linear, False), *given, program=transposed, mesh=mesh,
        in_specs=_kept(in_specs, linear, False) + _kept(out_specs, nonzero_cts), out_specs=_kept(in_specs, linear),
        manual_axes=manual_axes, check_vma=check_vma))
    return [next(outs) if is_linear else None for is_linear in linear]


def _explicit_batch_axes(values, dims, mesh):
    """The Explicit mesh axes that the batch dimension of the vmapped arguments is split over: vmap then splits the
    shard_map's batch over them, as with spmd_axis_name, so that the batch keeps its layout."""
    from .jit import explicit_sharding_of

    found = set()
    for value, dim in zip(values, dims):
        sharding = None if dim is None else explicit_sharding_of(value)
        if sharding is None or dim >= len(sharding.spec) or sharding.spec[dim] is None:
            continue
        entry = sharding.spec[dim]
        axes = tuple(entry) if isinstance(entry, tuple) else (entry,)
        types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))
        if all(a in mesh.axis_names and types.get(a) == AxisType.Explicit for a in axes):
            found.add(axes)
    return found.pop() if len(found) == 1 else ()


def _shard_map_batch(values, dims, axis, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    """vmap of a shard_map: a shard_map of the batched per-shard program, the batch dimension not split (or, with
    vmap's spmd_axis_name, split over those mesh axes)."""
    from .vmap import AxisData, batch_program

    spmd = axis.spmd_name
    spmd_axes = () if spmd is None else tuple(spmd) if isinstance(spmd, tuple | list) else (spmd,)
    explicit = _explicit_batch_axes(values, dims, mesh)
    if explicit and spmd_axes and explicit != spmd_axes:
        raise ValueError(f"Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type is allowed. Got "
                         f"spmd_axis_name={spmd!r} and arrays sharded on {explicit}")
    spmd_axes = spmd_axes or explicit
    entry = None if not spmd_axes else spmd_axes[0] if len(spmd_axes) == 1 else spmd_axes
    if set(spmd_axes) & set().union(*map(_named_axes_of, in_specs + out_specs)):
        raise ValueError("vmap spmd_axis_name cannot appear in shard_map in_specs or out_specs")
    split = math.prod(mesh.shape[name] for name in spmd_axes)
    if axis.size % split:
        raise ValueError(f"vmap of shard_map with spmd_axis_name={spmd!r}: the batch size {axis.size} does not split "
                         f"evenly over those mesh axes (size {split})")
    new_in_specs = tuple(spec if dim is None else _spec_with_dimension(spec, len(aval.shape), dim, entry)
                         for spec, dim, aval in zip(in_specs, dims, program.in_avals))
    with _mesh_axes_bound(mesh, check_vma):
        batched, out_dims = batch_program(program, dims, AxisData(axis.size // split, axis.name, axis.spmd_name))
    new_out_specs = tuple(spec if dim is None else _spec_with_dimension(spec, aval.ndim, dim, entry)
                          for spec, dim, aval in zip(out_specs, out_dims, program.out_avals))
    outs = shard_map_p.bind(*values, program=batched, mesh=mesh, in_specs=new_in_specs, out_specs=new_out_specs,
                            manual_axes=manual_axes, check_vma=check_vma)
    return outs, out_dims


_shard_map_batch.needs_axis = True
jvp_rules[shard_map_p] = _shard_map_jvp
transpose_rules[shard_map_p] = _shard_map_transpose
batching_rules[shard_map_p] = _shard_map_batch
partial_eval_rules[shard_map_p] = _shard_map_partial_eval


# --- check_vma: an output must not vary over the mesh axes its out_spec leaves out ----------------------------
def _check_output_types(fun, mesh, out_avals, out_specs):
    """JAX's check_vma error: the outputs whose types vary over a mesh axis their out_specs entry leaves out (named
    by their spec alone, as JAX names them)."""
    problems = []
    for aval, spec in zip(out_avals, out_specs):
        unmentioned = [axis for axis in mesh.axis_names if axis not in _named_axes_of(spec)]
        wrong = [axis for axis in unmentioned if axis in aval.vma]
        if not wrong:
            continue
        if len(unmentioned) > 1:
            named = ",".join(str(a) for a in mesh.axis_names if a in _named_axes_of(spec))
            varying = ",".join(str(a) for a in mesh.axis_names if a in aval.vma)
            problems.append(f"* out_specs is {spec} which implies that the corresponding output value is "
                            f"only varying across mesh axes {{{named}}} and not {{{','.join(map(str, wrong))}}}, but "
                            f"it was inferred to be possibly varying over {{{varying}}}")
        else:
            problems.append(f"* out_specs is {spec} which implies that the corresponding output value is "
                            f"replicated across mesh axis '{unmentioned[0]}', but could not infer replication over "
                            "any axes")
    if problems:
        if len(problems) == 1:
            problems = [problems[0][2:]]
        raise ValueError(
            f"shard_map applied to the function '{_name(fun)}' was given out_specs which require replication which "
            f"can't be statically inferred given the mesh:\n\nThe mesh given has shape {tuple(mesh.shape.values())} "
            f"with corresponding axis names {mesh.axis_names}.\n\n" + "\n\n".join(problems) + "\n\nCheck if these "
            "output values are meant to be replicated over those mesh axes. If not, consider revising the "
            "corresponding out_specs entries. If so, consider disabling the check by passing the check_vma=False "
            "argument to `numax.shard_map`.")


# --- numax.shard_map ----------------------------------------------------------------------------------------
class InferFromArgs:
    """The default in_specs: read from the arguments' own shardings (mesh axes of type Explicit only)."""

    def __repr__(self):
        return "numax.sharding.Infer"


Infer = InferFromArgs()


def _name(fun):
    return getattr(fun, "__name__", repr(fun))


def _context_mesh(mesh):
    """The mesh a call runs over: `mesh`, or the one `numax.set_mesh` set (which `mesh` must then match)."""
    context = current_mesh()
    if mesh is None:
        if context is None or context.empty:
            raise ValueError("The context mesh cannot be empty. Pass shard_map a mesh, or use "
                             "`numax.set_mesh(mesh)` to enter a mesh context")
        return context
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map requires a `numax.sharding.Mesh` instance for its mesh argument, but got {mesh} "
                        f"of type {type(mesh)}.")
    if context is not None and not context.empty and (context.shape, context.axis_types) != (mesh.shape,
                                                                                            mesh.axis_types):
        raise ValueError(f"The context mesh {context} should match the mesh passed to shard_map {mesh}")
    if mesh.empty:
        raise ValueError(f"shard_map requires a non-empty mesh. Got {mesh}")
    return mesh


def _mesh_of_arguments(abstract, leaves):
    """The concrete mesh a shard_map given an AbstractMesh runs over: the one its arguments are laid out on."""
    meshes = []
    for leaf in leaves:
        sharding = (getattr(leaf, "explicit_sharding", None) if isinstance(leaf, Tracer)
                    else getattr(leaf, "sharding", None) if type(leaf) is ShardedArray else None)
        if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, Mesh):
            meshes.append(sharding.mesh)
    if not meshes:
        raise ValueError("Please pass `numax.Array`s with a `NamedSharding` as input to `shard_map` when passing "
                         "`AbstractMesh` to the mesh argument.")
    for mesh in meshes:
        if tuple(mesh.shape.items()) != abstract.shape_tuple:
            raise ValueError(f"Mesh shape of the input {tuple(mesh.shape.items())} does not match the mesh shape "
                             f"passed to shard_map {abstract.shape_tuple}")
    return meshes[0]


def _manual_axes(mesh, axis_names):
    if not isinstance(axis_names, frozenset | set):
        raise TypeError(f"`axis_names` argument of shard_map should be of type `frozenset` or `set`. Got type: "
                        f"{type(axis_names)}")
    if not set(axis_names) <= set(mesh.axis_names):
        raise ValueError(f"numax.shard_map requires axis_names={set(axis_names)} to be a subset of "
                         f"mesh.axis_names={mesh.axis_names}")
    if axis_names and set(axis_names) != set(mesh.axis_names):
        raise NotImplementedError(f"shard_map manual over some mesh axes only (axis_names={set(axis_names)} of "
                                  f"{mesh.axis_names}) is not supported yet; make it manual over all of them "
                                  f"(axis_names=frozenset()), or use a mesh of the manual axes alone")
    return tuple(mesh.axis_names)


def _check_specs(what, specs, manual_axes):
    """JAX's checks of in_specs / out_specs: a tree of PartitionSpecs naming manual axes only (None leaves, or
    in_specs=None, mark static arguments)."""
    leaves = tree.tree_leaves(specs)
    wrong = [leaf for leaf in leaves if not isinstance(leaf, P)]
    if wrong:
        raise TypeError(f"shard_map {what} argument must be a pytree of `numax.sharding.PartitionSpec` instances, "
                        f"but it holds {wrong[0]!r} of type {type(wrong[0]).__name__}")
    unknown = sorted({str(axis) for spec in leaves for axis in _named_axes_of(spec) if axis not in manual_axes})
    if unknown:
        raise ValueError(f"shard_map {what} argument must refer to an axis marked as manual "
                         f"({set(manual_axes)}), but it refers to {', '.join(map(repr, unknown))}. Check the "
                         f"{what} values passed to shard_map.")


def _specs_per_leaf(specs, values, what):
    is_leaf = lambda x: x is None or isinstance(x, P)  # noqa: E731
    try:
        return tree.broadcast_prefix_leaves(specs, values, is_leaf=is_leaf)
    except ValueError as error:
        where, problem = what, error
        if what == "in_specs" and isinstance(specs, tuple) and len(specs) == len(values):  # name the argument
            for k, (spec, value) in enumerate(zip(specs, values)):
                try:
                    tree.broadcast_prefix_leaves(spec, value, is_leaf=is_leaf)
                except ValueError as inner:
                    where, problem = f"{what}[{k}]", inner
                    break
        values_name = "arguments" if what == "in_specs" else "outputs"
        raise ValueError(f"shard_map {where} must be a tree prefix of the {values_name}: {problem}") from None


def _inferred_spec(leaf, mesh):
    if isinstance(leaf, Tracer):
        sharding = getattr(leaf, "explicit_sharding", None)
        if sharding is None:
            raise NotImplementedError("shard_map with in_specs inferred from a traced value: numax keeps the layout "
                                      "of a jit's arguments in their types, not of values computed from them; pass "
                                      "in_specs")
    else:
        sharding = getattr(leaf, "sharding", None) if type(leaf) is ShardedArray else None
    if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
        return sharding.spec
    return P()


def _check_arguments(fun, mesh, specs, avals):
    for k, (spec, aval) in enumerate(zip(specs, avals)):
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map applied to the function '{_name(fun)}' was given an in_specs entry which is too long to "
                f"be compatible with the corresponding input value: in_specs[{k}] is {spec} which has length "
                f"{len(spec)}, but argument {k} has shape {aval.str_short()}, which has rank {aval.ndim}. Entries in "
                f"in_specs must be of length no greater than the number of axes in the corresponding input value."
                + (" For scalar values (rank 0), consider using an in_specs entry of `P()`, where "
                   "`P = numax.sharding.PartitionSpec`." if aval.ndim == 0 else ""))
        for dim, (size, count) in enumerate(zip(aval.shape, _blocks_per_dimension(mesh, spec, aval.ndim))):
            if size % count:
                raise ValueError(
                    f"shard_map applied to the function '{_name(fun)}' was given argument arrays with axis sizes that "
                    f"are not evenly divisible by the corresponding mesh axis sizes: argument {k} of shape "
                    f"{aval.str_short()} corresponds to in_specs {spec}, which maps array axis {dim} (of size {size}) "
                    f"to mesh axes {_dimension_axes(spec, aval.ndim)[dim]} (of total size {count}), but {count} does "
                    f"not evenly divide {size}. The mesh has shape {dict(mesh.shape)}.")


def _padded(spec, ndim):
    return P(*(tuple(spec) + (None,) * (ndim - len(spec))))


def _check_specs_match_layouts(in_specs, arguments, avals):
    """On a mesh of Explicit axes an argument's layout is part of its type: JAX's ValueError when an in_spec asks
    for another one (numax's traced values carry no layout, so only arrays are checked)."""
    for spec, value, aval in zip(in_specs, arguments, avals):
        if isinstance(value, Tracer):
            continue
        sharding = getattr(value, "sharding", None) if type(value) is ShardedArray else None
        own = _padded(sharding.spec if isinstance(sharding, NamedSharding) else P(), aval.ndim)
        asked = _padded(spec, aval.ndim)
        if own != asked:
            raise ValueError(
                f"in_specs passed to shard_map: {asked} does not match the specs of the input: {own} for arg: "
                f"{aval.str_short()}. `in_specs` is an optional argument so you can omit specifying it and shard_map "
                "will infer the in_specs from the arguments. If you want to reshard your inputs, you can use "
                "`numax.reshard` on the arguments and then pass those args to shard_map.")


class ShardMapFunction:
    """The callable `numax.shard_map(f, ...)` returns."""

    def __init__(self, fun, mesh, in_specs, out_specs, axis_names, check_vma):
        self.fun = fun
        functools.update_wrapper(self, fun, updated=())
        self.mesh, self.in_specs, self.out_specs = mesh, in_specs, out_specs
        self.axis_names, self.check_vma = axis_names, check_vma
        self.traced = caches.ComputeOnceCache()

    def __call__(self, *args):
        leaves, in_tree = tree.tree_flatten(args)
        mesh = _context_mesh(_mesh_of_arguments(self.mesh, leaves) if isinstance(self.mesh, AbstractMesh)
                             else self.mesh)
        manual_axes = _manual_axes(mesh, self.axis_names)
        if self.in_specs is Infer:
            if not all(t == AxisType.Explicit for t in mesh.axis_types):
                raise TypeError(f"shard_map in_specs argument must be a pytree of `numax.sharding.PartitionSpec` "
                                f"instances, but it was not given (Infer) when the mesh axes {mesh.axis_names} are of "
                                f"types {mesh.axis_types}; in_specs can be inferred only on Explicit axes")
            specs = [_inferred_spec(leaf, mesh) for leaf in leaves]
        else:
            _check_specs("in_specs", self.in_specs, manual_axes)
            specs = _specs_per_leaf(self.in_specs, args, "in_specs")
        _check_specs("out_specs", self.out_specs, manual_axes)
        dynamic = [spec is not None for spec in specs]  # a None spec: the argument is static, closed over as it is
        in_specs = _kept(specs, dynamic)
        arguments = _kept(leaves, dynamic)
        avals = tuple(get_aval_of(leaf) for leaf in arguments)
        _check_arguments(self.fun, mesh, in_specs, avals)
        if self.in_specs is not Infer and all(t == AxisType.Explicit for t in mesh.axis_types):
            _check_specs_match_layouts(in_specs, arguments, avals)
        static = _kept(leaves, dynamic, False)
        if not is_tracing() and not any(isinstance(leaf, Tracer) for leaf in leaves):
            # Called outside every transformation: the body runs now, on each device's blocks, as in JAX.
            return run_eager(self.fun, mesh, manual_axes, self.check_vma, in_tree, dynamic, static, in_specs,
                             arguments, lambda out: tuple(_specs_per_leaf(self.out_specs, out, "out_specs")),
                             functools.partial(self._check_outputs, mesh))
        key = (in_tree, avals, in_specs, tuple(dynamic), mesh, *trace_context())
        traced = []

        def trace():
            entry = self._trace(mesh, manual_axes, in_tree, dynamic, static, in_specs, avals)
            traced.append(entry)
            return None if entry[3] else entry  # a trace closing over outer tracers is not kept

        try:
            hash(static)
            entry = self.traced.get((key, static), trace)
        except TypeError:  # unhashable static arguments: traced on every call
            entry = trace()
        closed, out_tree, out_specs, hoisted = traced[0] if traced else entry
        outs = shard_map_p.bind(*hoisted, *arguments, program=closed, mesh=mesh,
                                in_specs=(P(),) * len(hoisted) + in_specs, out_specs=out_specs,
                                manual_axes=manual_axes, check_vma=self.check_vma)
        return out_tree.unflatten(outs)

    def _trace(self, mesh, manual_axes, in_tree, dynamic, static, in_specs, avals):
        out_info = {}

        def flat_fun(*blocks):
            blocks, constants = iter(blocks), iter(static)
            leaves = [next(blocks) if is_dynamic else next(constants) for is_dynamic in dynamic]
            out = self.fun(*in_tree.unflatten(leaves))
            out_leaves, out_info["tree"] = tree.tree_flatten(out)
            out_info["specs"] = _specs_per_leaf(self.out_specs, out, "out_specs")
            return out_leaves

        with _mesh_axes_bound(mesh, self.check_vma):
            program, consts = trace_to_program(flat_fun, [_shard_aval(mesh, spec, aval, self.check_vma)
                                                          for spec, aval in zip(in_specs, avals)])
        closed, hoisted = hoist_tracer_consts(program, consts)
        out_specs = tuple(out_info["specs"])
        self._check_outputs(mesh, closed.out_avals, out_specs)
        return closed, out_info["tree"], out_specs, tuple(hoisted)

    def _check_outputs(self, mesh, avals, out_specs):
        """shard_map's errors for outputs (of per-device types `avals`) that do not fit their out specs."""
        for k, (spec, aval) in enumerate(zip(out_specs, avals)):
            if len(spec) > aval.ndim:
                raise ValueError(
                    f"shard_map applied to the function '{_name(self.fun)}' was given an out_specs entry which is too "
                    f"long to be compatible with the corresponding output value: out_specs entry {k} is {spec} which "
                    f"has length {len(spec)}, but output {k} has shape {aval.str_short()}, which has rank {aval.ndim}"
                    + (". For scalar values (rank 0), consider using an out_specs entry of `P()`, where "
                       "`P = numax.sharding.PartitionSpec`. In particular, for rank 0 outputs which are not constant "
                       "over the mesh, add at least one (singleton) axis to them so that they can be concatenated "
                       "using out_specs." if aval.ndim == 0 else "."))
        if self.check_vma:
            _check_output_types(self.fun, mesh, avals, out_specs)

    def __repr__(self):
        return f"<numax.shard_map of {_name(self.fun)}>"


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(), check_vma=True):
    """Maps `f` over the shards of its arguments on a mesh of devices (JAX's `jax.shard_map`).

    Each argument is split into blocks by its PartitionSpec in `in_specs` (a tree prefix of the arguments; mesh
    axes a spec leaves out hold copies), and every device runs `f` on its blocks, with collectives (`lax.psum`,
    `all_gather`, `ppermute`, ...) over the mesh's axis names between them. The outputs' blocks are put together
    by `out_specs`: a mesh axis an output spec leaves out promises that the output is the same along it.
    `check_vma=True` types the values of `f` by the mesh axes they may vary over (`numax.typeof(x)`'s
    `manual_axis_type.varying`, changed by collectives and `lax.pcast`) and checks that promise when `f` is
    traced (a ValueError names the output); gradients with respect to invariant values are then summed over
    the devices. `check_vma=False` trusts the promise, and such gradients are each device's own. Called outside
    jit (and every other transformation), `f` runs eagerly, as in JAX: its values are each device's blocks, which
    `print` shows, and a value the same on every device is concrete (Python control flow may read it). On a mesh
    of Explicit axes an argument's in_spec must match its layout (jax's ValueError). `mesh` defaults to the one
    `numax.set_mesh` set; given an `AbstractMesh`, the call runs over the mesh of its arguments' NamedShardings
    (which must have that shape); `in_specs` left out are read from the arguments' shardings (mesh axes of type Explicit
    only). Used as `@shard_map(out_specs=..., ...)` when `f` is not given.
    """
    if f is None:
        return lambda fun: shard_map(fun, out_specs=out_specs, in_specs=in_specs, mesh=mesh, axis_names=axis_names,
                                     check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f} of type {type(f)}.")
    return ShardMapFunction(f, mesh, in_specs, out_specs, axis_names, check_vma)
