"""`shard_map`: per-shard code over a mesh of devices, with explicit collectives over the mesh's axis names.

Owns the `shard_map` call primitive and `numax.shard_map`. The function is traced once per signature into
a per-shard program (each argument's dimensions divided by the mesh axes its PartitionSpec names), with the
mesh axes bound (`lax.collectives.extend_axis_env`) so that collectives over them are staged as equations.
The primitive holds that program, the mesh and one spec per input and output; its params name the mesh, so
a program holding it is compiled once for the mesh's devices (lowering/sharded.py), eagerly or under jit.
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

import contextlib
import functools
import math

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.config import config
from ..core.evaluation import eval_closed_program
from ..core.ir import Equation, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.sharding import AxisType, Mesh, NamedSharding, P, current_mesh
from ..core.staging import hoist_tracer_consts, trace_to_closed_program, trace_to_program
from ..core.trace import Tracer, get_aval_of
from ..lax import collectives
from ..lax.collectives import extend_axis_env
from ..lax.elementwise import div
from ..lax.shapes import reshape
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.sharded import sdy_sharding
from ..lowering.sharded_array import ShardedArray
from ..lowering.stablehlo import aval_type
from .jvp import jvp_program
from .partial_eval import partial_eval_program, partial_eval_rules
from .transpose import transpose_program

__all__ = ["shard_map", "Infer"]


class ShardMapPrimitive(Primitive):
    """The shard_map call: the axes its program's collectives name, less the mesh axes it binds itself, are
    the ones an enclosing vmap must see."""

    def named_axes(self, params):
        return super().named_axes(params) - frozenset(params["mesh"].axis_names)


shard_map_p = ShardMapPrimitive("shard_map", multiple_results=True)


# --- specs and avals --------------------------------------------------------------------------------------
def _dimension_axes(spec, ndim):
    """Per dimension of a rank-`ndim` value, the mesh axes that `spec` splits it over (major first)."""
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    return [() if entry is None else entry if isinstance(entry, tuple) else (entry,) for entry in entries]


def _named_axes_of(spec):
    return {axis for axes in _dimension_axes(spec, len(spec)) for axis in axes}


def _blocks_per_dimension(mesh, spec, ndim):
    return [math.prod(mesh.shape[axis] for axis in axes) for axes in _dimension_axes(spec, ndim)]


def _shard_aval(mesh, spec, aval, check_vma):
    """The aval of one device's block of a global value laid out by `spec` (typed as varying over the axes
    `spec` names, with `check_vma`)."""
    blocks = _blocks_per_dimension(mesh, spec, aval.ndim)
    return aval.update(shape=tuple(size // count for size, count in zip(aval.shape, blocks)),
                       vma=frozenset(_named_axes_of(spec)) if check_vma else frozenset())


def _unshard_aval(mesh, spec, aval):
    """The aval of the global value whose blocks (one per device, laid out by `spec`) have `aval`."""
    blocks = _blocks_per_dimension(mesh, spec, aval.ndim)
    return aval.update(shape=tuple(size * count for size, count in zip(aval.shape, blocks)), vma=frozenset())


def _unmentioned(manual_axes, spec):
    """The manual axes along which a value laid out by `spec` is the same on every device."""
    named = _named_axes_of(spec)
    return tuple(axis for axis in manual_axes if axis not in named)


def _spec_with_dimension(spec, ndim, position, entry=None):
    """`spec` (of a rank-`ndim` value) with a new dimension at `position`, split over `entry`."""
    entries = list(spec) + [None] * (ndim - len(spec))
    entries.insert(position, entry)
    return P(*entries)


@contextlib.contextmanager
def _mesh_axes_bound(mesh, check_vma):
    """Binds every axis of `mesh` for collectives traced or transformed in the block (values typed by the axes
    they vary over, with `check_vma`)."""
    with contextlib.ExitStack() as stack:
        for name, size in mesh.shape.items():
            stack.enter_context(extend_axis_env(name, size, varying_types=check_vma))
        yield


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
def _residual_spec(manual_axes):
    """Each device's own residual, the blocks concatenated along dimension 0 over every manual axis."""
    return P(manual_axes[0] if len(manual_axes) == 1 else tuple(manual_axes))


def _split_by_residuals(closed, mesh, unknowns, instantiate, manual_axes, check_vma):
    """Partial evaluation of a per-shard program, with rank-0 residuals given a dimension of size 1 (so that they
    can be laid out per device). Returns (known, unknown, out_unknowns, residual global avals)."""
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
    spec = _residual_spec(manual_axes)
    residual_avals = [_unshard_aval(mesh, spec, a) for a in known.out_avals[len(known.out_avals) - num_res:]]
    return known, unknown, out_unknowns, residual_avals


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
    known, unknown, _, residual_avals = _split_by_residuals(
        jvp_closed, mesh, [False] * n_in + [True] * sum(nonzeros), [False] * n_out + [True] * sum(out_nonzeros),
        manual_axes, check_vma)
    common = dict(mesh=mesh, manual_axes=manual_axes, check_vma=check_vma)
    residual_specs = (_residual_spec(manual_axes),) * len(residual_avals)
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
    known, unknown, out_unknowns, residual_avals = _split_by_residuals(
        program, params["mesh"], in_unknowns, False, params["manual_axes"], params["check_vma"])
    residuals = [Var(a) for a in residual_avals]
    residual_specs = (_residual_spec(params["manual_axes"]),) * len(residuals)
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
    if count == 1 or not dtypes.is_inexact(get_aval_of(ct).dtype):
        return ct
    return div(ct, count)


def _shard_map_transpose(cts, *args, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    """A shard_map of the transposed per-shard program. With check_vma, the types did the work (the cotangent of
    an invariant value is already summed over the devices). Without, an output the same along some axes passes
    each device its share of the cotangent, and an input the same along some axes gets the sum of its devices'
    cotangents."""
    linear = [is_undefined(a) for a in args]
    nonzero_cts = [type(ct) is not Zero for ct in cts]
    given = [ct if check_vma else _share_of(ct, mesh, _unmentioned(manual_axes, spec))
             for ct, spec, nz in zip(cts, out_specs, nonzero_cts) if nz]
    linear_specs = _kept(in_specs, linear)
    with _mesh_axes_bound(mesh, check_vma):
        transposed = transpose_program(program, linear, nonzero_cts)
        if check_vma:
            return _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs,
                                    manual_axes, check_vma)

        def summed_over_replicas(*values):
            outs = eval_closed_program(transposed, *values)
            return [collectives.psum(ct, axes) if (axes := _unmentioned(manual_axes, spec)) else ct
                    for ct, spec in zip(outs, linear_specs)]

        transposed = trace_to_closed_program(summed_over_replicas, transposed.in_avals)
    return _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs, manual_axes,
                            check_vma)


def _bind_transposed(transposed, args, linear, nonzero_cts, given, mesh, in_specs, out_specs, manual_axes, check_vma):
    outs = iter(shard_map_p.bind(
        *_kept(args, linear, False), *given, program=transposed, mesh=mesh,
        in_specs=_kept(in_specs, linear, False) + _kept(out_specs, nonzero_cts), out_specs=_kept(in_specs, linear),
        manual_axes=manual_axes, check_vma=check_vma))
    return [next(outs) if is_linear else None for is_linear in linear]


def _shard_map_batch(values, dims, axis, program, mesh, in_specs, out_specs, manual_axes, check_vma):
    """vmap of a shard_map: a shard_map of the batched per-shard program, the batch dimension not split (or, with
    vmap's spmd_axis_name, split over those mesh axes)."""
    from .vmap import AxisData, batch_program

    spmd = axis.spmd_name
    spmd_axes = () if spmd is None else tuple(spmd) if isinstance(spmd, tuple | list) else (spmd,)
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
    try:
        return tree.broadcast_prefix_leaves(specs, values, is_leaf=lambda x: x is None or isinstance(x, P))
    except ValueError as error:
        values_name = "arguments" if what == "in_specs" else "outputs"
        raise ValueError(f"shard_map {what} must be a tree prefix of the {values_name}: {error}") from None


def _inferred_spec(leaf, mesh):
    if isinstance(leaf, Tracer):
        raise NotImplementedError("shard_map with in_specs inferred from traced arguments: numax does not keep "
                                  "shardings in the types of traced values; pass in_specs")
    sharding = getattr(leaf, "sharding", None) if type(leaf) is ShardedArray else None
    if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
        return sharding.spec
    return P()


def _check_arguments(fun, mesh, specs, avals):
    for k, (spec, aval) in enumerate(zip(specs, avals)):
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map applied to the function '{_name(fun)}' was given an in_specs entry which is too long to "
                f"be compatible with the corresponding input value: in_specs {spec} has length {len(spec)}, but "
                f"argument {k} has shape {aval.str_short()}, which has rank {aval.ndim}. Entries in in_specs must be "
                f"of length no greater than the number of axes in the corresponding input value"
                + (" (for scalar values use P())." if aval.ndim == 0 else "."))
        for dim, (size, count) in enumerate(zip(aval.shape, _blocks_per_dimension(mesh, spec, aval.ndim))):
            if size % count:
                raise ValueError(
                    f"shard_map applied to the function '{_name(fun)}' was given argument arrays with axis sizes that "
                    f"are not evenly divisible by the corresponding mesh axis sizes: argument {k} of shape "
                    f"{aval.str_short()} corresponds to in_specs {spec}, which maps array axis {dim} (of size {size}) "
                    f"to mesh axes {_dimension_axes(spec, aval.ndim)[dim]} (of total size {count}), but {count} does "
                    f"not evenly divide {size}. The mesh has shape {dict(mesh.shape)}.")


class ShardMapFunction:
    """The callable `numax.shard_map(f, ...)` returns."""

    def __init__(self, fun, mesh, in_specs, out_specs, axis_names, check_vma):
        self.fun = fun
        functools.update_wrapper(self, fun, updated=())
        self.mesh, self.in_specs, self.out_specs = mesh, in_specs, out_specs
        self.axis_names, self.check_vma = axis_names, check_vma
        self.traced = caches.ComputeOnceCache()

    def __call__(self, *args):
        mesh = _context_mesh(self.mesh)
        manual_axes = _manual_axes(mesh, self.axis_names)
        leaves, in_tree = tree.tree_flatten(args)
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
        static = _kept(leaves, dynamic, False)
        key = (in_tree, avals, in_specs, tuple(dynamic), mesh, config.enable_x64)
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
        for k, (spec, aval) in enumerate(zip(out_specs, closed.out_avals)):
            if len(spec) > aval.ndim:
                raise ValueError(
                    f"shard_map applied to the function '{_name(self.fun)}' was given an out_specs entry which is too "
                    f"long to be compatible with the corresponding output value: out_specs {spec} has length "
                    f"{len(spec)}, but output {k} has shape {aval.str_short()}, which has rank {aval.ndim}"
                    + (". For rank 0 outputs which are not constant over the mesh, add at least one (singleton) "
                       "axis to them so that they can be concatenated using out_specs." if aval.ndim == 0 else "."))
        if self.check_vma:
            _check_output_types(self.fun, mesh, closed.out_avals, out_specs)
        return closed, out_info["tree"], out_specs, tuple(hoisted)

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
    the devices. `check_vma=False` trusts the promise, and such gradients are each device's own. `mesh` defaults
    to the one `numax.set_mesh` set; `in_specs` left out are read from the arguments' shardings (mesh axes of
    type Explicit only). Used as `@shard_map(out_specs=..., ...)` when `f` is not given.
    """
    if f is None:
        return lambda fun: shard_map(fun, out_specs=out_specs, in_specs=in_specs, mesh=mesh, axis_names=axis_names,
                                     check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f} of type {type(f)}.")
    return ShardMapFunction(f, mesh, in_specs, out_specs, axis_names, check_vma)
