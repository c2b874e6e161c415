"""`with_sharding_constraint` (and `reshard`): a value's layout over a mesh, pinned inside a program.

The primitive is the identity on values; lowered, it is an `sdy.sharding_constraint` that tells XLA's
partitioner how the value must be split at that point (the partitioner inserts the communication). It is
linear, so its JVP and transpose constrain the tangent and cotangent the same way; under vmap the batch
dimension is left unsplit. Applied to a concrete array it lays the array out so (a device_put).
"""

from ..core import pytree as tree
from ..core.ad_util import Zero
from ..core.primitives import Primitive, batching_rules
from ..core.sharding import AbstractMesh, AxisType, NamedSharding, P, Sharding, as_sharding
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.sharded import put_sharded, sdy_sharding
from ..lowering.stablehlo import aval_type
from .ad import deflinear

__all__ = ["with_sharding_constraint", "reshard"]

sharding_constraint_p = Primitive("sharding_constraint")


def _abstract_eval(x, sharding):
    sharding.shard_shape(x.shape)  # the dimensions must split evenly (an IndivisibleError names them)
    return x


sharding_constraint_p.def_abstract_eval(_abstract_eval)
sharding_constraint_p.def_impl(lambda x, sharding: put_sharded(x, sharding, get_aval_of(x)))


def _transpose(ct, x, sharding):
    return [None if type(ct) is Zero else sharding_constraint_p.bind(ct, sharding=sharding)]


deflinear(sharding_constraint_p, _transpose)


def _batching(values, dims, sharding):
    (x,), (dim,) = values, dims
    spec = list(sharding.spec) + [None] * (get_aval_of(x).ndim - 1 - len(sharding.spec))
    spec.insert(dim, None)
    return sharding_constraint_p.bind(x, sharding=NamedSharding(sharding.mesh, P(*spec))), dim


batching_rules[sharding_constraint_p] = _batching


def _lowering(ctx, x, sharding):
    symbol = ctx.module.mesh_symbol(sharding.mesh)
    return ctx.builder.op1("sdy.sharding_constraint", [x], aval_type(ctx.aval_out),
                           {"sharding": "#sdy.sharding" + sdy_sharding(symbol, sharding, ctx.aval_out.ndim)})


register_lowering(sharding_constraint_p, _lowering)


def with_sharding_constraint(x, shardings):
    """Each array leaf of `x` laid out by its sharding (one Sharding or PartitionSpec for all, or a tree prefix
    of `x`) over Auto mesh axes: inside jit a constraint for XLA's partitioner, on concrete arrays a device_put."""
    return _constrain(x, shardings, "with_sharding_constraint")


def _constrain(x, shardings, what):
    leaves, treedef = tree.tree_flatten(x)
    if _is_spec(shardings):
        per_leaf = [shardings] * len(leaves)
    else:
        per_leaf = tree.broadcast_prefix_leaves(shardings, x, is_leaf=_is_spec)
    out = []
    for leaf, sharding in zip(leaves, per_leaf):
        sharding = as_sharding(sharding, what)
        if not isinstance(sharding, NamedSharding):
            raise TypeError(f"{what} takes NamedShardings or PartitionSpecs, got {sharding!r}")
        if what == "with_sharding_constraint":
            _check_auto_axes(sharding)
        if isinstance(sharding.mesh, AbstractMesh) and sharding.mesh.empty:
            out.append(leaf)  # a type's sharding outside any mesh (`typeof(x).sharding`): nothing to lay out
            continue
        out.append(sharding_constraint_p.bind(leaf, sharding=sharding))
    return treedef.unflatten(out)


def reshard(x, shardings):
    """`x` laid out by `shardings`, over any axis types (with_sharding_constraint takes Auto axes only). numax
    propagates shardings through XLA's partitioner for Explicit axes as for Auto ones, so inside jit this is
    the same constraint."""
    return _constrain(x, shardings, "reshard")


def _check_auto_axes(sharding):
    types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))
    named = [axis for entry in sharding.spec if entry is not None and entry is not P.UNCONSTRAINED
             for axis in (entry if isinstance(entry, tuple) else (entry,))]
    if any(types[axis] is not AxisType.Auto for axis in named):
        raise ValueError(f"with_sharding_constraint can only split over Auto mesh axes, but {sharding.spec} names "
                         f"axes of types {sharding.mesh.axis_types}; use numax.reshard for Explicit axes, or make the "
                         f"mesh with axis_types=(AxisType.Auto, ...)")


def _is_spec(value):
    return isinstance(value, Sharding | P)
