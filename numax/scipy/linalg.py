"""`numax.scipy.linalg`: scipy.linalg's factorizations and solvers with JAX's semantics.

Written over `numax.lax.linalg` and `numax.numpy.linalg`. The `overwrite_*` and `check_finite` flags are
accepted for compatibility and have no effect (numax arrays are immutable and nothing inspects values).
"""

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.lax import linalg as lax_linalg
from numax.numpy import linalg as np_linalg
from numax.numpy._linalg_ops import matmul
from numax.numpy._shape import broadcast_to, matrix_transpose, reshape
from numax.numpy._util import aval, shape
from numax.numpy.linalg import _adjoint, _inexact
from numax.scipy._special_matrices import (
    block_diag,
    circulant,
    companion,
    fiedler,
    hadamard,
    hankel,
    helmert,
    hilbert,
    leslie,
    toeplitz,
)

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "det", "eigh", "fiedler",
           "hadamard", "hankel", "helmert", "hilbert", "inv", "leslie", "lu", "lu_factor", "lu_solve", "qr", "solve",
           "solve_triangular", "svd", "toeplitz"]


def _as_columns(name, a, b):
    """b as a batch of column blocks matching a (..., n, n): returns (b, was_vector)."""
    a_shape, b_shape = shape(a), shape(b)
    n = a_shape[-1]
    vector = len(b_shape) == len(a_shape) - 1
    if vector:
        b = reshape(b, b_shape + (1,))
    if len(shape(b)) < 2 or shape(b)[-2] != n:
        raise ValueError(f"{name}: b of shape {b_shape} does not match a of shape {a_shape}")
    batch = np.broadcast_shapes(a_shape[:-2], shape(b)[:-2])
    return _with_batch(b, batch), vector


def _restore_vector(x, vector):
    return reshape(x, shape(x)[:-1]) if vector else x


def _with_batch(x, batch):
    """x's leading (batch) dimensions broadcast to `batch`."""
    x_shape = shape(x)
    return x if x_shape[:-2] == tuple(batch) else broadcast_to(x, tuple(batch) + x_shape[-2:])


def _broadcast_like(a, b):
    """a's batch dimensions broadcast to b's."""
    return _with_batch(a, shape(b)[:-2])


def _check_square(name, a):
    a_shape = shape(a)
    if len(a_shape) < 2 or a_shape[-1] != a_shape[-2]:
        raise ValueError(f"{name}: expected a square matrix or a stack of them (shape [..., n, n]), got {a_shape}")


# --- Cholesky -----------------------------------------------------------------------------------------------
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of Hermitian positive-definite matrices: upper U (a = U^H @ U) unless `lower`."""
    (a,) = _inexact("cholesky", a)
    _check_square("cholesky", a)
    # As in JAX, the triangle `lower` names is factored as it is (not symmetrized first): only that
    # triangle of `a` is read, and only it gets a gradient.
    factor = lax_linalg.cholesky(a if lower else _adjoint(a), symmetrize_input=False)
    return factor if lower else _adjoint(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(factor, lower) for cho_solve; the factor's other triangle holds zeros."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solves a @ x = b given cho_factor(a)."""
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    _check_square("cho_solve", c)
    b, vector = _as_columns("cho_solve", c, b)
    c = _broadcast_like(c, b)
    # a = L L^H: solve L y = b, then L^H x = y (with U = L^H when the upper factor is given).
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                    conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower, conjugate_a=lower)
    return _restore_vector(x, vector)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None,
                     check_finite=True):
    """Solves op(a) @ x = b for triangular a; `trans` is 0/'N' (a), 1/'T' (a^T) or 2/'C' (a^H)."""
    a, b = _inexact("solve_triangular", a, b)
    _check_square("solve_triangular", a)
    modes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False), 2: (True, True),
             "C": (True, True)}
    if trans not in modes:
        raise ValueError(f"solve_triangular: invalid trans {trans!r}; use 0/'N', 1/'T' or 2/'C'")
    transpose_a, conjugate_a = modes[trans]
    b, vector = _as_columns("solve_triangular", a, b)
    a = _broadcast_like(a, b)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    return _restore_vector(x, vector)


# --- LU -------------------------------------------------------------------------------------------------------
def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p @ l @ u: p a permutation matrix, l unit lower (m x k), u upper (k x n); with
    `permute_l`, (p @ l, u)."""
    (a,) = _inexact("lu", a)
    a_shape = shape(a)
    if len(a_shape) < 2:
        raise ValueError(f"lu: expected a matrix or a stack of them (shape [..., m, n]), got {a_shape}")
    m, n = a_shape[-2:]
    k = min(m, n)
    dtype = aval(a).dtype
    factors, _, permutation = lax_linalg.lu(a)
    batch = a_shape[:-2]
    rank = len(a_shape)
    l_part = lax.slice(factors, (0,) * rank, batch + (m, k))
    lower = lax.add(lax_linalg.tril(l_part, -1), lax_linalg.identity_columns(batch + (m, k), dtype))
    upper = lax_linalg.triu(lax.slice(factors, (0,) * rank, batch + (k, n)))
    # p[i, j] = 1 where row i of a moved to row j: a[permutation] = l @ u, so a = p @ l @ u with p = P^T.
    positions = lax.broadcasted_iota(dtypes.int32, batch + (m, m), rank - 2)
    chosen = lax.broadcast_in_dim(permutation, batch + (m, m), tuple(range(rank - 2)) + (rank - 1,))
    p = lax.convert_element_type(lax.eq(positions, chosen), np_linalg.real_dtype(dtype))
    if permute_l:
        return np_linalg.matmul(p, lower), upper
    return p, lower, upper


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): L and U packed in one matrix, and 0-based row-swap pivots, for lu_solve."""
    (a,) = _inexact("lu_factor", a)
    factors, pivots, _ = lax_linalg.lu(a)
    return factors, pivots


def _inverse_permutation(permutation):
    """inverse[..., permutation[..., i]] = i, with one-hot masks (no scatter needed)."""
    perm_shape = shape(permutation)
    rank = len(perm_shape)
    grid = perm_shape + (perm_shape[-1],)
    targets = lax.broadcast_in_dim(permutation, grid, tuple(range(rank)))
    positions = lax.broadcasted_iota(dtypes.int32, grid, rank)
    sources = lax.broadcasted_iota(dtypes.int32, grid, rank - 1)
    hits = lax.select(lax.eq(targets, positions), sources, lax.full_like(sources, 0))
    return lax.reduce_sum(hits, (rank - 1,))


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solves op(a) @ x = b given lu_factor(a); `trans` is 0 (a), 1 (a^T) or 2 (a^H)."""
    factors, pivots = lu_and_piv
    factors, b = _inexact("lu_solve", factors, b)
    _check_square("lu_solve", factors)
    m = shape(factors)[-1]
    permutation = lax_linalg.lu_pivots_to_permutation(pivots, m)
    b, vector = _as_columns("lu_solve", factors, b)
    factors = _broadcast_like(factors, b)
    if shape(permutation)[:-1] != shape(b)[:-2]:
        permutation = broadcast_to(permutation, shape(b)[:-2] + (m,))
    if trans == 0:
        x = lax_linalg.permute_rows(b, permutation)
        x = lax_linalg.triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
        x = lax_linalg.triangular_solve(factors, x, left_side=True, lower=False)
    elif trans in (1, 2):
        # a = P^T L U, so op(a) = op(U) op(L) P: solve with op(U), then op(L), then undo the permutation.
        conj = trans == 2
        x = lax_linalg.triangular_solve(factors, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
        x = lax_linalg.triangular_solve(factors, x, left_side=True, lower=True, transpose_a=True, conjugate_a=conj,
                                        unit_diagonal=True)
        x = lax_linalg.permute_rows(x, _inverse_permutation(permutation))
    else:
        raise ValueError(f"lu_solve: invalid trans {trans!r}; use 0, 1 or 2")
    return _restore_vector(x, vector)


# --- QR, eigh, SVD ----------------------------------------------------------------------------------------------
def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition. `mode`: 'full' ((q, r), q m x m), 'economic' (q m x k), 'r' ((r,)), 'raw'."""
    if pivoting:
        raise NotImplementedError("qr(pivoting=True) is not supported by numax yet")
    (a,) = _inexact("qr", a)
    if mode == "raw":
        return lax_linalg.geqrf(a)
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; use 'full', 'economic', 'r' or 'raw'")
    q, r = lax_linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, turbo=True,
         eigvals=None, type=1, check_finite=True, subset_by_index=None):
    """(w, v) of a Hermitian matrix (w ascending, eigenvectors in v's columns), or w if `eigvals_only`."""
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (b) is not supported by numax yet")
    if eigvals is not None or subset_by_index is not None:
        raise NotImplementedError("eigh: eigenvalue subsets are not supported by numax yet")
    (a,) = _inexact("eigh", a)
    _check_square("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    """(u, s, vh) with a = u @ diag(s) @ vh, or s alone without `compute_uv`."""
    (a,) = _inexact("svd", a)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


# --- inverse, determinant, solve -----------------------------------------------------------------------------
def _positive_definite_solve(a, b, lower):
    """Solves a @ x = b from the Cholesky factor of a's `lower` (or upper) triangle. As in JAX, through
    custom_linear_solve: derivatives reuse the factorization (dx = solve(a, db - da @ x), with all of da) and
    are themselves differentiable, so higher derivatives match JAX's."""
    factors = cho_factor(lax.stop_gradient(a), lower=lower)
    return lax.custom_linear_solve(lambda x: matmul(a, x), b, solve=lambda _, x: cho_solve(factors, x),
                                   symmetric=True)


def inv(a, overwrite_a=False, check_finite=True):
    return np_linalg.inv(a)


def det(a, overwrite_a=False, check_finite=True):
    return np_linalg.det(a)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True, assume_a="gen",
          transposed=False):
    """Solves a @ x = b; `assume_a='pos'` uses a Cholesky factorization (reading the `lower` triangle),
    'gen', 'sym' and 'her' an LU factorization."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: unsupported assume_a {assume_a!r}; use 'gen', 'sym', 'her' or 'pos'")
    a, b = _inexact("solve", a, b)
    _check_square("solve", a)
    if transposed:
        a = matrix_transpose(a)
    b, vector = _as_columns("solve", a, b)
    if assume_a == "pos":
        return _restore_vector(_positive_definite_solve(_broadcast_like(a, b), b, lower), vector)
    return _restore_vector(np_linalg.solve(_broadcast_like(a, b), b), vector)

