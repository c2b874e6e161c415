"""`reduce`: reductions with a user computation over several operands (the `reduce` primitive).

`reduce_p` takes n operands of one shape and n scalar initial values and holds the computation as a
closed program on 2n scalars (the accumulators, then the elements) returning n scalars; it lowers to one
`stablehlo.reduce`. As in JAX, a single operand reduced with `add`, `mul`, `max`, `min` (and the bitwise
ones on booleans) from the operation's identity becomes the matching monoid reduction, which has
derivative rules of its own. The generic primitive is differentiated as JAX does: the reduction is
written as a tree of pairwise applications of the computation, whose JVP comes from the primitives in it.
"""

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import ShapedArray
from ..core.evaluation import eval_closed_program
from ..core.ir import ClosedProgram
from ..core.primitives import Primitive, batching_rules, jvp_rules
from ..core.trace import Tracer, get_aval_of
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type, i64_array
from . import reductions
from . import typing as T
from .conditionals import intern_program, trace_callable
from .elementwise import add, bitwise_and, bitwise_or, bitwise_xor, max, min, mul
from .shapes import as_array, concatenate, reshape, transpose
from .slicing import slice_in_dim

__all__ = ["reduce", "reduce_p"]


# --- the primitive ------------------------------------------------------------------------------------------
reduce_p = Primitive("reduce", multiple_results=True)


def _reduce_abstract_eval(*avals, computation, dimensions):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    shape = operands[0].shape
    for x, init in zip(operands, inits):
        if x.shape != shape:
            raise ValueError(f"reduce operands must have the same shape, got {[a.shape for a in operands]}")
        if init.shape != ():
            raise ValueError(f"reduce found non-scalar initial value: {init.shape}")
        if x.dtype != init.dtype:
            raise TypeError(f"reduce operand dtypes should match corresponding initial value dtypes, got operands="
                            f"{[str(a.dtype) for a in operands]} and initial_values={[str(a.dtype) for a in inits]}")
    out_shape = reductions.reduced_shape("reduce", operands[0], dimensions)
    results = computation.out_avals
    if len(results) != n or any(r.shape != () or r.dtype != x.dtype for r, x in zip(results, operands)):
        raise TypeError(f"reduce computation must return {n} scalars of the operand dtypes "
                        f"{[str(a.dtype) for a in operands]}, got {[r.str_short() for r in results]}")
    return [ShapedArray(out_shape, x.dtype, x.weak_type and init.weak_type) for x, init in zip(operands, inits)]


reduce_p.def_abstract_eval(_reduce_abstract_eval)


def _reduce_lowering(ctx, *values, computation, dimensions):
    builder = ctx.builder
    scalars = [aval_type(ShapedArray((), a.dtype)) for a in ctx.avals_in]
    region = builder.region(scalars, lambda inner, args: lower_program_body(
        ctx.module, inner, computation.program, computation.consts, args))
    return builder.op("stablehlo.reduce", list(values), [aval_type(a) for a in ctx.avals_out],
                      {"dimensions": i64_array(dimensions)}, [region])


register_lowering(reduce_p, _reduce_lowering)


def _apply_elementwise(computation, accumulators, elements):
    """The scalar computation applied to arrays of one shape, element by element (through vmap)."""
    from ..transforms.vmap import AxisData, batch_program

    shape = get_aval_of(accumulators[0]).shape
    size = int(np.prod(shape, dtype=np.int64))
    flat = [reshape(v, (size,)) for v in list(accumulators) + list(elements)]
    batched, _ = batch_program(computation, [0] * len(flat), AxisData(size, None), force_batched=True)
    return [reshape(v, shape) for v in eval_closed_program(batched, *flat)]


def _pairwise_reduce(operands, inits, computation, dimensions):
    """The reduction as a tree of pairwise applications of the computation (differentiable by its parts)."""
    aval = get_aval_of(operands[0])
    kept = [d for d in range(aval.ndim) if d not in dimensions]
    kept_shape = tuple(aval.shape[d] for d in kept)
    count = int(np.prod([aval.shape[d] for d in dimensions], dtype=np.int64))
    values = [reshape(transpose(x, tuple(kept) + tuple(dimensions)), kept_shape + (count,)) for x in operands]
    fill = [_broadcast_scalar(init, kept_shape + (1,)) for init in inits]
    axis = len(kept_shape)
    while count > 1:
        if count % 2:
            values = [concatenate([v, f], axis) for v, f in zip(values, fill)]
            count += 1
        half = count // 2
        left = [slice_in_dim(v, 0, half, axis=axis) for v in values]
        right = [slice_in_dim(v, half, count, axis=axis) for v in values]
        values, count = _apply_elementwise(computation, left, right), half
    starts = [_broadcast_scalar(init, kept_shape) for init in inits]
    if count == 0:
        return starts
    return _apply_elementwise(computation, starts, [reshape(v, kept_shape) for v in values])


def _broadcast_scalar(value, shape):
    from .shapes import broadcast_in_dim

    return broadcast_in_dim(value, shape, ())


def _reduce_jvp(primals, tangents, computation, dimensions):
    from ..transforms.jvp import jvp_flat

    n = len(primals) // 2
    outs = reduce_p.bind(*primals, computation=computation, dimensions=dimensions)
    _, tangent_out = jvp_flat(lambda *args: _pairwise_reduce(args[:n], args[n:], computation, dimensions),
                              primals, tangents)
    return outs, tangent_out


jvp_rules[reduce_p] = _reduce_jvp


def _reduce_batch(values, dims, computation, dimensions):
    from .batching import axis_size_of, batch_at_front

    n = len(values) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce: batching over the initial values is not implemented (as in JAX)")
    size = axis_size_of(values, dims)
    operands = [batch_at_front(v, d, size) for v, d in zip(values[:n], dims[:n])]
    outs = reduce_p.bind(*operands, *values[n:], computation=computation,
                         dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


batching_rules[reduce_p] = _reduce_batch


# --- the public wrapper -------------------------------------------------------------------------------------
# (operation, reduction kind, whether only booleans and integers are recognised)
_MONOIDS = ((add, "sum", False), (mul, "prod", False), (max, "max", False), (min, "min", False),
            (bitwise_or, "or", True), (bitwise_and, "and", True), (bitwise_xor, "xor", True))


def _monoid_reducer(computation, inits):
    """The monoid reduction `computation` stands for, when it is one of lax's and the initial value is its
    identity (JAX's `_get_monoid_reducer`), else None."""
    if len(inits) != 1:
        return None
    (init,) = inits
    if isinstance(init, Tracer):
        init = init.to_concrete_value()
        if init is None:
            return None
    value = np.asarray(init)
    if value.shape != ():
        return None
    integer_like = value.dtype == dtypes.bool_ or value.dtype.kind in "iu"
    for op, kind, integers_only in _MONOIDS:
        if computation is op and (integer_like or not integers_only):
            if np.equal(value, reductions.identity_of(kind, value.dtype)):
                return getattr(reductions, f"reduce_{kind}")
            return None
    return None


def reduce(operands, init_values, computation, dimensions):
    """Reduces `operands` (a pytree of arrays of one shape) over `dimensions` with `computation`, a function
    of two pytrees shaped like `init_values` (the accumulated values and the elements) returning one; it
    should be associative and commutative, as XLA may apply it in any order."""
    flat_operands, operand_tree = tree.tree_flatten(operands)
    flat_inits, init_tree = tree.tree_flatten(init_values)
    if operand_tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {operand_tree} vs. {init_tree}")
    if len(flat_operands) != len(flat_inits):
        raise ValueError("Must have same total number of operands as init_values: "
                         f"{len(flat_operands)} vs. {len(flat_inits)}")
    flat_operands = [as_array(x) for x in flat_operands]
    flat_inits = [as_array(v) for v in flat_inits]
    ndim = get_aval_of(flat_operands[0]).ndim if flat_operands else 0
    dimensions = tuple(T.normalize_axis(d, ndim) for d in dimensions)
    monoid = _monoid_reducer(computation, flat_inits)
    if monoid is not None:
        return operand_tree.unflatten([monoid(flat_operands[0], dimensions)])
    scalar_avals = [ShapedArray((), get_aval_of(v).dtype, get_aval_of(v).weak_type) for v in flat_inits]
    pair_tree = tree.tree_structure((init_values, init_values))
    program, consts, out_tree = trace_callable(computation, pair_tree, scalar_avals * 2)
    if out_tree != init_tree:
        raise TypeError(f"reduce computation must return a pytree shaped like init_values ({init_tree}), "
                        f"got {out_tree}")
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError("reduce computation must not capture traced values: pass them as operands instead")
    closed = intern_program(ClosedProgram(program, list(consts)))
    outs = reduce_p.bind(*flat_operands, *flat_inits, computation=closed, dimensions=dimensions)
    return operand_tree.unflatten(outs)
