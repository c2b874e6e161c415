"""Operations on batches of matrices shared by the linear algebra primitives, written with lax ops.

Every array here is a batch of matrices: the last two dimensions are rows and columns, the leading ones a
batch. This module owns the argument check of the factorizations (`check_matrix`), triangles, adjoints and
identities, the products and slices their derivative rules are written with, and the batching rule they
share (`batch_leading`). It defines no primitive.
"""

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval_of
from .batching import axis_size_of, batch_at_front
from .elementwise import add, conj, div, eq, mul, select, sub
from .linear import dot_general
from .reductions import reduce_sum
from .shapes import broadcast_in_dim, broadcasted_iota, full, full_like, transpose
from .slicing import slice as slice_

_LINALG_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def check_matrix(name, x, square=False):
    """Validates a batch of matrices of a LAPACK dtype; returns (batch shape, rows, columns)."""
    if x.dtype not in _LINALG_DTYPES:
        raise TypeError(f"{name} does not accept dtype {x.dtype.name}; accepted: float32, float64, complex64, "
                        "complex128 (convert integer inputs to a floating dtype first)")
    if x.ndim < 2:
        raise ValueError(f"{name} requires an array of rank >= 2 (a batch of matrices), got shape {x.shape}")
    m, n = x.shape[-2:]
    if square and m != n:
        raise ValueError(f"{name} requires square matrices (shape [..., n, n]), got shape {x.shape}")
    return x.shape[:-2], m, n


# --- triangles, adjoints, identities ----------------------------------------------------------------------
def _triangle_mask(shape, k, lower):
    # A host constant: the mask depends on shapes only.
    m, n = shape[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


def tril(x, k=0):
    """The lower triangle of each matrix (on and below diagonal `k`), zeros above."""
    shape = get_aval_of(x).shape
    return select(_triangle_mask(shape, k, True), x, full_like(x, 0))


def triu(x, k=0):
    """The upper triangle of each matrix (on and above diagonal `k`), zeros below."""
    shape = get_aval_of(x).shape
    return select(_triangle_mask(shape, k, False), x, full_like(x, 0))


def is_complex(x):
    return dtypes.is_complex(get_aval_of(x).dtype)


def swap_last_two(x):
    """Each matrix transposed (no conjugation)."""
    rank = get_aval_of(x).ndim
    return transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def adjoint(x):
    """The conjugate transpose of each matrix."""
    x = swap_last_two(x)
    return conj(x) if is_complex(x) else x


def hermitian_from_lower(x):
    """The Hermitian matrices whose lower triangles are x's (a diagonal's imaginary part dropped)."""
    strict = tril(x, -1)
    diagonal = sub(tril(x), strict)
    if is_complex(x):
        diagonal = div(add(diagonal, conj(diagonal)), np.asarray(2, get_aval_of(x).dtype))
    return add(add(strict, adjoint(strict)), diagonal)


def symmetrize(x):
    """(x + x^H) / 2: the Hermitian part, which the symmetric solvers assume they are given."""
    dtype = get_aval_of(x).dtype
    return div(add(x, adjoint(x)), np.asarray(2, dtype))


def identity_columns(shape, dtype):
    """Ones on the main diagonal of each (possibly rectangular) matrix of `shape`, zeros elsewhere."""
    rank = len(shape)
    ones = eq(broadcasted_iota(dtypes.int32, shape, rank - 2), broadcasted_iota(dtypes.int32, shape, rank - 1))
    return select(ones, full(shape, 1, dtype), full(shape, 0, dtype))


# --- what the derivative rules are written with ------------------------------------------------------------
def matmul(a, b):
    """Batched matrix product over the leading dimensions, at full precision (as JAX's rules use)."""
    rank = get_aval_of(a).ndim
    batch = tuple(range(rank - 2))
    return dot_general(a, b, (((rank - 1,), (rank - 2,)), (batch, batch)), precision=("HIGHEST", "HIGHEST"))


def constant_matrix(value, like):
    """A host matrix broadcast to the batch shape of `like` (a batch of matrices), in `like`'s dtype."""
    aval = get_aval_of(like)
    batch = aval.shape[:-2]
    return broadcast_in_dim(np.asarray(value, aval.dtype), batch + value.shape, (len(batch), len(batch) + 1))


def eye(n, like, start=0):
    """Identity matrices (n, n) of `like`'s batch shape and dtype; ones from diagonal entry `start` on."""
    return constant_matrix(np.diag((np.arange(n) >= start).astype(np.float64)), like)


def diagonal(x):
    """The main diagonals of a batch of square matrices, shape (..., n)."""
    n = get_aval_of(x).shape[-1]
    return reduce_sum(mul(x, eye(n, x)), (get_aval_of(x).ndim - 1,))


def slice_last_two(x, rows, cols):
    """The block rows[0]:rows[1], cols[0]:cols[1] of each matrix."""
    aval = get_aval_of(x)
    batch = aval.shape[:-2]
    return slice_(x, (0,) * len(batch) + (rows[0], cols[0]), batch + (rows[1], cols[1]))


def pairwise_gaps_inverse(values, like):
    """F[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it, in `like`'s dtype: the factor of
    first-order perturbation theory for distinct eigenvalues (eigh, eig)."""
    aval = get_aval_of(like)
    rank, n = aval.ndim, aval.shape[-1]
    matrix_shape = aval.shape[:-2] + (n, n)
    columns = broadcast_in_dim(values, matrix_shape, tuple(range(rank - 2)) + (rank - 1,))  # [i, j] = values[j]
    rows = broadcast_in_dim(values, matrix_shape, tuple(range(rank - 1)))  # [i, j] = values[i]
    identity = eye(n, like)
    return sub(div(np.asarray(1, aval.dtype), add(identity, sub(columns, rows))), identity)


# --- batching -----------------------------------------------------------------------------------------------
def batch_leading(primitive):
    """The batching rule of a primitive that already maps over leading batch dimensions: the vmapped dimension
    moves to the front (unbatched operands are broadcast) and the primitive runs once on the whole batch."""

    def rule(values, dims, **params):
        size = axis_size_of(values, dims)
        out = primitive.bind(*(batch_at_front(v, d, size) for v, d in zip(values, dims)), **params)
        return out, ([0] * len(out) if primitive.multiple_results else 0)

    rule.__name__ = f"_{primitive.name}_batching"
    return rule
