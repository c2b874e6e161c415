"""What every primitive's batching rule is written with: helpers that register rules in
`core.primitives.batching_rules`, and the moves of batch dimensions they share.

A batching rule is `rule(values, dims, **params) -> (out, out_dim)` (lists for multiple results), where
`dims[i]` is the position of operand i's batch dimension or None when the operand is not batched, and
`out_dim` is where the result's batch dimension sits (None: the result is the same for every example).
Rules move batch dimensions only when they must: an op that can carry the batch dimension where it is
keeps it there.
"""

from ..core.primitives import batching_rules
from ..core.trace import get_aval_of

not_mapped = None


def move_axis(x, source, destination):
    """`x` with its dimension `source` moved to `destination` (a transpose, or `x` itself)."""
    from .shapes import transpose

    if source == destination:
        return x
    ndim = get_aval_of(x).ndim
    order = [d for d in range(ndim) if d != source]
    order.insert(destination, source)
    return transpose(x, tuple(order))


def batch_at_front(x, dim, size):
    """`x` with its batch dimension first; an unbatched `x` is broadcast to `size` examples."""
    from .shapes import broadcast_in_dim

    if dim is None:
        aval = get_aval_of(x)
        return broadcast_in_dim(x, (size,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return move_axis(x, dim, 0)


def batch_at(x, dim, size, destination):
    """`x` with its batch dimension at `destination` (broadcast there when unbatched)."""
    if dim is not None:
        return move_axis(x, dim, destination)
    return move_axis(batch_at_front(x, dim, size), 0, destination)


def axis_size_of(values, dims):
    return next(get_aval_of(v).shape[d] for v, d in zip(values, dims) if d is not None)


def defvectorized(primitive):
    """A unary elementwise primitive: applied to the batched operand as it is."""

    def rule(values, dims, **params):
        (x,), (dim,) = values, dims
        return primitive.bind(x, **params), dim

    batching_rules[primitive] = rule


def broadcast_batched(values, dims):
    """Elementwise operands aligned for one batched application, and the result's batch dimension.

    When every batched operand has full rank and its batch dimension at one place, that place is kept:
    unbatched operands get a size-1 dimension there (rank-0 ones stay rank 0, as lax allows). Otherwise
    batched operands move their batch dimension to the front."""
    from .shapes import reshape

    ranks = [get_aval_of(v).ndim - (d is not None) for v, d in zip(values, dims)]
    rank = max(ranks)
    batched = {d for d in dims if d is not None}
    keep = len(batched) == 1 and all(r == rank for r, d in zip(ranks, dims) if d is not None)
    out_dim = batched.pop() if keep else 0
    out = []
    for value, dim, r in zip(values, dims, ranks):
        shape = get_aval_of(value).shape
        if dim is None:
            out.append(reshape(value, shape[:out_dim] + (1,) + shape[out_dim:]) if r else value)
            continue
        if not keep:
            value = move_axis(value, dim, 0)
            if r < rank:  # a batched scalar meets operands of higher rank
                value = reshape(value, (shape[dim],) + (1,) * rank)
        out.append(value)
    return out, out_dim


def defbroadcasting(primitive):
    """An n-ary elementwise primitive: operands aligned by `broadcast_batched`, applied once."""

    def rule(values, dims, **params):
        operands, out_dim = broadcast_batched(values, dims)
        return primitive.bind(*operands, **params), out_dim

    batching_rules[primitive] = rule
