"""Products and matrix helpers: matmul, dot, vdot, inner, outer, tensordot, kron, trace, diagonal."""

import builtins

from numax import lax
from numax.core import dtypes
from numax.core.config import config
from numax.lax.linear import eager_dot_general
from numax.lowering.array import Array

from ._util import aval, canonicalize_axis, check_arraylike, promote_args, promote_dtypes, shape, to_array


def _preferred(x):
    return aval(x).dtype


# dot_general's dimension numbers for matmul of operands of rank 1 or 2: a's last dimension with b's first.
_small_matmul_numbers = {(a_rank, b_rank): (((a_rank - 1,), (0,)), ((), ())) for a_rank in (1, 2) for b_rank in (1, 2)}
# Without x64, arrays of these dtypes (made while it was on) are converted by promotion.
_x64_dtypes = frozenset((dtypes.int64, dtypes.uint64, dtypes.float64, dtypes.complex128))


def eager_small_matmul(a, b):
    """The fast path of eager matmul (and dot) of two Arrays of one dtype and rank 1 or 2, whose core dimensions
    match: one dot_general, nothing to promote or broadcast. None when it does not apply."""
    a_aval, b_aval = a.aval, b.aval
    numbers = _small_matmul_numbers.get((len(a_aval.shape), len(b_aval.shape)))
    dtype = a_aval.dtype
    if (numbers is None or b_aval.dtype is not dtype or a_aval.shape[-1] != b_aval.shape[0]
            or (dtype in _x64_dtypes and not config.enable_x64)
            or (a_aval.weak_type and dtype == dtypes.bool_)):  # promotion makes booleans strongly typed
        return None
    return eager_dot_general(a, b, numbers)


def laid_out(result, out_sharding):
    """`result` resharded to the `out_sharding=` keyword of JAX's products (a Sharding or a PartitionSpec over
    the mesh in context), when one is given."""
    if out_sharding is None:
        return result
    from numax.lax.sharding_constraint import reshard  # (the sharding machinery only when asked for)

    return reshard(result, out_sharding)


def matmul(a, b, /, *, precision=None, preferred_element_type=None, out_sharding=None):
    """numpy's matmul: vectors are promoted to matrices, leading dimensions broadcast."""
    if out_sharding is not None:
        return laid_out(matmul(a, b, precision=precision, preferred_element_type=preferred_element_type),
                        out_sharding)
    if type(a) is Array and type(b) is Array and precision is None and preferred_element_type is None:
        result = eager_small_matmul(a, b)
        if result is not None:
            return result
    return general_matmul(a, b, precision, preferred_element_type)


def general_matmul(a, b, precision=None, preferred_element_type=None):
    """matmul without its fast path: promotion, broadcasting, one dot_general."""
    a, b = promote_dtypes(to_array(a), to_array(b))
    a_shape, b_shape = shape(a), shape(b)
    if not a_shape or not b_shape:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes {a_shape} and {b_shape}")
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    a_core = a_shape[-1]
    b_core = b_shape[0] if b_vector else b_shape[-2]
    if a_core != b_core:
        raise TypeError(f"matmul: input operand 1 has a mismatch in its core dimension 0 (size {b_core} "
                         f"is different from {a_core}); shapes {a_shape} and {b_shape}")
    if a_vector or b_vector:
        # A vector operand is contracted directly: its partner's other dimensions come out in order.
        contract = ((len(a_shape) - 1,), (0 if b_vector else len(b_shape) - 2,))
        return lax.dot_general(a, b, (contract, ((), ())), precision, preferred_element_type)
    from ._util import broadcast_shapes

    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    return _batched_matmul(a, b, batch, precision, preferred_element_type)


def _batched_matmul(a, b, batch, precision, preferred_element_type):
    """One dot_general for broadcast matmul. A batch dimension only one operand really has (the other
    lacks it or has size 1) becomes a free dimension of that operand instead of being broadcast into a
    copy of the other: `(8, 64, 128) @ (128, 512)` is one (512x128)x(128x512) product, not eight."""
    a_shape, b_shape = shape(a), shape(b)
    a_offset, b_offset = len(batch) - (len(a_shape) - 2), len(batch) - (len(b_shape) - 2)
    a_squeeze, b_squeeze = [], []
    a_batch, b_batch, a_free, b_free = [], [], [], []  # dimension indices before squeezing
    kinds = []
    for i in range(len(batch)):
        a_dim, b_dim = i - a_offset, i - b_offset
        a_has = a_dim >= 0 and a_shape[a_dim] != 1
        b_has = b_dim >= 0 and b_shape[b_dim] != 1
        if a_has and b_has:
            a_batch.append(a_dim)
            b_batch.append(b_dim)
            kinds.append("batch")
            continue
        if a_dim >= 0 and not a_has:
            a_squeeze.append(a_dim)
        if b_dim >= 0 and not b_has:
            b_squeeze.append(b_dim)
        if a_has:
            a_free.append(a_dim)
            kinds.append("a")
        elif b_has:
            b_free.append(b_dim)
            kinds.append("b")
        else:
            kinds.append("one")
    a = lax.squeeze(a, a_squeeze) if a_squeeze else a
    b = lax.squeeze(b, b_squeeze) if b_squeeze else b
    a_index = _after_squeeze(a_squeeze)
    b_index = _after_squeeze(b_squeeze)
    a_rank, b_rank = len(a_shape) - len(a_squeeze), len(b_shape) - len(b_squeeze)
    dimension_numbers = (((a_rank - 1,), (b_rank - 2,)),
                         (tuple(a_index(d) for d in a_batch), tuple(b_index(d) for d in b_batch)))
    out = lax.dot_general(a, b, dimension_numbers, precision, preferred_element_type)
    # dot_general's output: batch dims, a's free dims (its batch-like ones, then m), b's (then n).
    n_batch, n_a_free = len(a_batch), len(a_free)
    position = {"batch": iter(range(n_batch)), "a": iter(range(n_batch, n_batch + n_a_free)),
                "b": iter(range(n_batch + n_a_free + 1, n_batch + n_a_free + 1 + len(b_free)))}
    order = [next(position[k]) for k in kinds if k != "one"]
    m_dim, n_dim = n_batch + n_a_free, n_batch + n_a_free + 1 + len(b_free)
    permutation = tuple(order) + (m_dim, n_dim)
    if permutation != tuple(range(len(permutation))):
        out = lax.transpose(out, permutation)
    if "one" in kinds:
        out = lax.reshape(out, tuple(batch) + shape(out)[-2:])
    return out


def _after_squeeze(squeezed):
    """Maps a dimension index to its index once the dimensions in `squeezed` are removed."""
    return lambda d: d - sum(1 for s in squeezed if s < d)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """numpy's dot: scalars multiply, 1-d/2-d follow matmul, N-d contracts a's last with b's second-to-last."""
    if out_sharding is not None:
        return laid_out(dot(a, b, precision=precision, preferred_element_type=preferred_element_type), out_sharding)
    if type(a) is Array and type(b) is Array and precision is None and preferred_element_type is None:
        result = eager_small_matmul(a, b)
        if result is not None:
            return result
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(a, b)  # contracted operands are not broadcast against each other
    a_shape, b_shape = shape(a), shape(b)
    if not a_shape or not b_shape:
        return lax.mul(a, b)
    if len(b_shape) <= 2:
        return matmul(a, b, precision=precision, preferred_element_type=preferred_element_type)
    return lax.dot_general(a, b, (((len(a_shape) - 1,), (len(b_shape) - 2,)), ((), ())), precision,
                           preferred_element_type)


def vdot(a, b, *, precision=None):
    from ._shape import ravel
    from ._ufuncs import conjugate

    return dot(ravel(conjugate(a)), ravel(b), precision=precision)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """The dot products of the vectors along `axis` (an axis of each operand, counted from the end), over
    the broadcast other axes; complex `x1` is conjugated. The result keeps the promoted dtype (as jax's)."""
    from ._shape import broadcast_to, moveaxis
    from ._ufuncs import conjugate
    from ._util import broadcast_shapes

    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    if shape(x1)[axis] != shape(x2)[axis]:
        raise ValueError(f"axes must match; got shapes {shape(x1)} and {shape(x2)} with axis={axis}")
    if dtypes.is_complex(aval(x1).dtype):
        x1 = conjugate(x1)
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    batch = broadcast_shapes(shape(x1)[:-1], shape(x2)[:-1])
    x1, x2 = broadcast_to(x1, batch + shape(x1)[-1:]), broadcast_to(x2, batch + shape(x2)[-1:])
    batch_dims = tuple(range(len(batch)))
    return lax.dot_general(x1, x2, (((len(batch),), (len(batch),)), (batch_dims, batch_dims)), precision,
                           preferred_element_type)


def inner(a, b, *, precision=None):
    check_arraylike("inner", a, b)
    a, b = promote_dtypes(a, b)
    a_shape, b_shape = shape(a), shape(b)
    if not a_shape or not b_shape:
        return lax.mul(a, b)
    return lax.dot_general(a, b, (((len(a_shape) - 1,), (len(b_shape) - 1,)), ((), ())), precision)


def outer(a, b):
    from ._shape import ravel

    a, b = promote_dtypes(ravel(a), ravel(b))
    n, m = shape(a)[0], shape(b)[0]
    product = lax.bitwise_and if aval(a).dtype == dtypes.bool_ else lax.mul  # of bools: logical and, as jax's
    return product(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
    if out_sharding is not None:
        return laid_out(tensordot(a, b, axes, precision=precision, preferred_element_type=preferred_element_type),
                        out_sharding)
    a, b = promote_dtypes(to_array(a), to_array(b))
    a_rank, b_rank = len(shape(a)), len(shape(b))
    if isinstance(axes, int):
        if axes > builtins.min(a_rank, b_rank):
            raise TypeError(f"tensordot: axes={axes} exceeds the ranks of the operands ({a_rank}, {b_rank})")
        a_axes = tuple(range(a_rank - axes, a_rank))
        b_axes = tuple(range(axes))
    else:
        a_axes, b_axes = axes
        a_axes = (a_axes,) if isinstance(a_axes, int) else tuple(a_axes)
        b_axes = (b_axes,) if isinstance(b_axes, int) else tuple(b_axes)
        if len(a_axes) != len(b_axes):
            raise TypeError(f"tensordot: axes lists must have the same length, got {a_axes} and {b_axes}")
        a_axes = tuple(canonicalize_axis(i, a_rank) for i in a_axes)
        b_axes = tuple(canonicalize_axis(i, b_rank) for i in b_axes)
    return lax.dot_general(a, b, ((a_axes, b_axes), ((), ())), precision, preferred_element_type)


def kron(a, b):
    a, b = promote_dtypes(to_array(a), to_array(b))
    a_shape, b_shape = shape(a), shape(b)
    rank = builtins.max(len(a_shape), len(b_shape))
    a = lax.reshape(a, (1,) * (rank - len(a_shape)) + a_shape)
    b = lax.reshape(b, (1,) * (rank - len(b_shape)) + b_shape)
    a_shape, b_shape = shape(a), shape(b)
    pairs = [d for pair in zip(a_shape, b_shape) for d in pair]
    a_big = lax.broadcast_in_dim(a, pairs, [2 * i for i in range(rank)])
    b_big = lax.broadcast_in_dim(b, pairs, [2 * i + 1 for i in range(rank)])
    return lax.reshape(lax.mul(a_big, b_big), [x * y for x, y in zip(a_shape, b_shape)])


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes, as the last axis; done with a strided slice."""
    a = to_array(a)
    a_shape = shape(a)
    rank = len(a_shape)
    axis1, axis2 = canonicalize_axis(axis1, rank), canonicalize_axis(axis2, rank)
    if axis1 == axis2:
        raise TypeError("axis1 and axis2 cannot be the same")  # (JAX's class)
    rest = [i for i in range(rank) if i not in (axis1, axis2)]
    a = lax.transpose(a, rest + [axis1, axis2])
    n, m = a_shape[axis1], a_shape[axis2]
    batch = [a_shape[i] for i in rest]
    if offset >= 0:
        length = builtins.max(0, builtins.min(n, m - offset))
        start = offset
    else:
        length = builtins.max(0, builtins.min(n + offset, m))
        start = -offset * m
    flat = lax.reshape(a, batch + [n * m])
    if length == 0:
        return lax.full(batch + [0], 0, aval(a).dtype)
    stop = start + (length - 1) * (m + 1) + 1
    return lax.slice_in_dim(flat, start, stop, m + 1, len(batch))


def diag(v, k=0):
    v = to_array(v)
    v_shape = shape(v)
    if len(v_shape) == 2:
        return diagonal(v, k)
    if len(v_shape) != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {v_shape}")
    n = v_shape[0] + builtins.abs(k)
    from ._creation import eye

    mask = eye(n, k=k, dtype=dtypes.bool_)
    padded = lax.pad(v, lax.convert_element_type(0, aval(v).dtype),
                     [(builtins.abs(k), 0, 0)])
    # Place (i, i + k) holds v[min(i, i + k)]: padded along columns (k >= 0) or rows (k < 0).
    values = lax.broadcast_in_dim(padded, (n, n), (1,) if k >= 0 else (0,))
    return lax.select(mask, values, lax.full_like(values, 0))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    from ._reductions import sum as sum_

    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    from ._shape import moveaxis, stack

    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_args("cross", a, b)
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    if shape(a)[-1] not in (2, 3) or shape(b)[-1] not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension must be 2 or 3)")
    def component(x, i):
        return lax.index_in_dim(x, i, len(shape(x)) - 1, keepdims=False) if i < shape(x)[-1] else None

    a0, a1, a2 = component(a, 0), component(a, 1), component(a, 2)
    b0, b1, b2 = component(b, 0), component(b, 1), component(b, 2)
    from ._ufuncs import multiply, subtract

    if a2 is None and b2 is None:
        return subtract(multiply(a0, b1), multiply(a1, b0))
    zero_a = a2 if a2 is not None else lax.full_like(a0, 0)
    zero_b = b2 if b2 is not None else lax.full_like(b0, 0)
    c0 = subtract(multiply(a1, zero_b), multiply(zero_a, b1))
    c1 = subtract(multiply(zero_a, b0), multiply(a0, zero_b))
    c2 = subtract(multiply(a0, b1), multiply(a1, b0))
    return moveaxis(stack([c0, c1, c2], axis=-1), -1, axisc)


def polyval(p, x, *, unroll=16):
    """p[0] * x**(n-1) + ... + p[n-1], by Horner's rule (unrolled over the concrete number of coefficients)."""
    from ._ufuncs import add, multiply

    p, x = promote_dtypes(to_array(p), to_array(x))
    if len(shape(p)) != 1:
        raise ValueError(f"polyval takes 1-d coefficients, got shape {shape(p)}")
    result = lax.full_like(x, 0)
    for i in range(shape(p)[0]):
        result = add(multiply(result, x), lax.index_in_dim(p, i, 0, keepdims=False))
    return result
