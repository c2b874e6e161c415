"""`numax.numpy.linalg`: numpy's linear algebra with JAX's semantics, written over `numax.lax.linalg`.

Matrices are the last two axes of an array; leading axes are batch axes and broadcast where numpy does.
Integer and boolean inputs are promoted to the default floating dtype. Singular inputs give inf or NaN
values rather than errors (JAX's behaviour): nothing here inspects values on the host.
"""

import builtins
import functools
import operator
from typing import NamedTuple

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.lax import linalg as lax_linalg
from numax.transforms.custom_derivatives import custom_jvp

from . import _linalg_ops
from ._creation import eye
from ._cumulative import cumprod
from ._linalg_ops import matmul, vecdot  # noqa: F401  (re-exports: the array API's forms)
from ._logic import where
from ._reductions import amax, amin, any, sum
from ._shape import broadcast_to, expand_dims, matrix_transpose, moveaxis, reshape  # noqa: F401
from ._take import take_along_axis
from ._ufuncs import (
    abs,
    conjugate,
    divide,
    greater,
    isinf,
    isnan,
    log,
    logical_not,
    logical_or,
    multiply,
    power,
    real,
    sign,
    sqrt,
)
from ._util import aval, check_arraylike, promote_dtypes_inexact, shape, to_array

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace",
           "vecdot", "vector_norm"]


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


# --- helpers ------------------------------------------------------------------------------------------------
def _inexact(name, *args):
    check_arraylike(name, *args)
    return promote_dtypes_inexact(*[to_array(a) for a in args])


def _square(name, a, error=ValueError):
    """The shape of `a`, a (stack of) square matrices; `error` is the class jax raises for `name` otherwise."""
    a_shape = shape(a)
    if len(a_shape) < 2 or a_shape[-1] != a_shape[-2]:
        raise error(f"{name}: argument must be a square matrix or a stack of them (shape [..., n, n]), "
                         f"got shape {a_shape}")
    return a_shape


def _matrix(name, a, error=ValueError):
    a_shape = shape(a)
    if len(a_shape) < 2:
        raise error(f"{name}: argument must have at least two dimensions (shape [..., m, n]), got {a_shape}")
    return a_shape


def _adjoint(x):
    return conjugate(matrix_transpose(x))


def _eps(dtype):
    return float(dtypes.finfo(real_dtype(dtype)).eps)


def real_dtype(dtype):
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(np.dtype(dtype), np.dtype(dtype))


def _broadcast_batch(x, batch):
    x_shape = shape(x)
    return broadcast_to(x, tuple(batch) + x_shape[-2:]) if x_shape[:-2] != tuple(batch) else x


def _lu_parity_sign(pivots, dtype):
    """(-1) ** (number of row swaps) for each matrix of the batch."""
    k = shape(pivots)[-1]
    swapped = lax.ne(pivots, lax.broadcasted_iota(dtypes.int32, shape(pivots), len(shape(pivots)) - 1))
    odd = lax.rem(sum(swapped, axis=-1, dtype=dtypes.int32), np.int32(2)) if k else None
    if odd is None:
        return lax.full(shape(pivots)[:-1], 1, dtype)
    return lax.convert_element_type(lax.sub(np.int32(1), lax.mul(np.int32(2), odd)), dtype)


# --- factorizations -----------------------------------------------------------------------------------------
def cholesky(a, *, upper=False, symmetrize_input=True):
    """The Cholesky factor of Hermitian positive-definite matrices: lower L (a = L @ L^H) or, if `upper`, U = L^H.
    Matrices that are not positive definite give NaNs."""
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a, TypeError)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _adjoint(factor) if upper else factor


def qr(a, mode="reduced"):
    """QR decomposition. `mode`: 'reduced' (Q is m x k), 'complete' (Q is m x m), 'r' (R only), or 'raw'
    (LAPACK's Householder form: (h, tau) with h transposed, as numpy returns it)."""
    (a,) = _inexact("qr", a)
    _matrix("qr", a, TypeError)
    if mode == "raw":
        h, taus = lax_linalg.geqrf(a)
        return QRResult(matrix_transpose(h), taus)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; use 'reduced', 'complete', 'r' or 'raw'")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors (columns) of Hermitian matrices, reading the 'L' (default) or
    'U' triangle."""
    (a,) = _inexact("eigh", a)
    _square("eigh", a, TypeError)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eig(a):
    """Eigenvalues and right eigenvectors (columns) of general square matrices, complex (CPU only)."""
    (a,) = _inexact("eig", a)
    _square("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The (complex) eigenvalues of general square matrices (CPU only)."""
    (a,) = _inexact("eigvals", a)
    _square("eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    """The eigenvalues (ascending) of Hermitian matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """Singular value decomposition a = U @ diag(S) @ Vh, S descending. `hermitian` is accepted and computed
    by the general algorithm (the same factorization up to the signs of singular vectors)."""
    (a,) = _inexact("svd", a)
    _matrix("svd", a, TypeError)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False, subset_by_index=subset_by_index)
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True, subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)


def svdvals(x, /):
    """The singular values of matrices, descending."""
    return svd(x, compute_uv=False)


# --- solving ------------------------------------------------------------------------------------------------
def _lu_solve(lu, permutation, b):
    """Solves with an LU factorization: b of shape batch + (m, n), batch equal to lu's."""
    b = lax_linalg.permute_rows(b, permutation)
    y = lax_linalg.triangular_solve(lu, b, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """Solves a @ x = b. b is a vector (shape [m]) or a stack of matrices ([..., m, n]); batch axes broadcast."""
    a, b = _inexact("solve", a, b)
    a_shape = _square("solve", a)
    b_shape = shape(b)
    m = a_shape[-1]
    vector = len(b_shape) == 1
    if vector:
        if b_shape[0] != m:
            raise ValueError(f"solve: b of shape {b_shape} does not match a of shape {a_shape}")
        b = reshape(b, (m, 1))
    elif len(b_shape) < 2 or b_shape[-2] != m:
        raise ValueError(f"solve: b must have shape [{m}] or [..., {m}, n] to match a of shape {a_shape}, "
                         f"got {b_shape}")
    batch = np.broadcast_shapes(a_shape[:-2], shape(b)[:-2])
    a, b = _broadcast_batch(a, batch), _broadcast_batch(b, batch)
    lu, _, permutation = lax_linalg.lu(a)
    x = _lu_solve(lu, permutation, b)
    return reshape(x, shape(x)[:-1]) if vector else x


def inv(a):
    """The inverse of square matrices (inf/NaN entries for singular ones)."""
    (a,) = _inexact("inv", a)
    a_shape = _square("inv", a)
    identity = broadcast_to(eye(a_shape[-1], dtype=aval(a).dtype), a_shape)
    return solve(a, identity)


def det(a):
    """The determinant of square matrices: JAX's formulas (explicit for 2x2 and 3x3, sign * exp(logdet)
    otherwise) and JAX's derivative, the adjugate, which stays finite at singular matrices."""
    (a,) = _inexact("det", a)
    a_shape = _square("det", a)
    n = a_shape[-1]
    if n == 0:
        return lax.full(a_shape[:-2], 1, aval(a).dtype)
    if n in (2, 3):
        return _det_small(a, n)
    return _det(a)


def _entry(a, i, j):
    return lax.squeeze(lax.slice_in_dim(lax.slice_in_dim(a, i, i + 1, axis=-2), j, j + 1, axis=-1), (-2, -1))


def _det_small(a, n):
    """The Leibniz formula for 2x2 and 3x3 matrices (differentiated as written)."""
    e = [[_entry(a, i, j) for j in range(n)] for i in range(n)]
    if n == 2:
        return e[0][0] * e[1][1] - e[0][1] * e[1][0]
    return (e[0][0] * e[1][1] * e[2][2] + e[0][1] * e[1][2] * e[2][0] + e[0][2] * e[1][0] * e[2][1]
            - e[0][2] * e[1][1] * e[2][0] - e[0][0] * e[1][2] * e[2][1] - e[0][1] * e[1][0] * e[2][2])


@custom_jvp
def _det(a):
    sign, logdet = slogdet(a)
    return sign * lax.convert_element_type(lax.exp(logdet), aval(sign).dtype)


@_det.defjvp
def _det_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    determinant, adjugate_times_tangent = _cofactor_solve(a, a_dot)
    return determinant, trace(adjugate_times_tangent)


def _cofactor_solve(a, b):
    """(det(a), adjugate(a) @ b), finite for singular `a` too (JAX's construction).

    With a = P L U, det(a) solve(a, b) = prod(diag U) U^-1 L^-1 P^-1 b. Replacing U's last diagonal entry
    by 1 / prod(its other diagonal entries) keeps the triangular solve finite when a has rank n - 1 (the
    adjugate's exact value there); for lower ranks the adjugate is 0, detected by a solve that overflows."""
    a_shape = shape(a)
    n = a_shape[-1]
    dtype = aval(a).dtype
    if n == 1:
        return lax.squeeze(a, (-2, -1)), b
    batch = a_shape[:-2]
    lu, pivots, permutation = lax_linalg.lu(a)
    diag = diagonal(lu)
    partial_det = cumprod(diag, axis=-1) * lax.expand_dims(_lu_parity_sign(pivots, dtype), (len(batch),))
    lu = lu.at[..., -1, -1].set(1.0 / partial_det[..., -2])
    ones = lax.full(batch + (n, 1), 1, dtype)
    probe = lax_linalg.triangular_solve(lu, ones, left_side=True, lower=False)
    low_rank = any(logical_or(isnan(probe), isinf(probe)), axis=(-2, -1))
    low_rank = lax.broadcast_in_dim(low_rank, a_shape, tuple(range(len(batch))))
    zeros = lax.full(a_shape, 0, dtype)
    x = where(low_rank, zeros, b)
    rows = broadcast_to(lax.expand_dims(permutation, (len(batch) + 1,)), a_shape)
    x = take_along_axis(x, rows, axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    scale = lax.expand_dims(partial_det[..., -1], (len(batch), len(batch) + 1))
    x = lax.concatenate([x[..., :-1, :] * scale, x[..., -1:, :]], len(batch))
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return partial_det[..., -1], where(low_rank, zeros, x)


def slogdet(a, *, method=None):
    """(sign, log|det|) of square matrices; a singular matrix gives (0, -inf). Differentiated as JAX does:
    the sign has derivative 0 (real) and log|det| has trace(solve(a, da))."""
    (a,) = _inexact("slogdet", a)
    a_shape = _square("slogdet", a)
    if method not in (None, "lu"):
        raise ValueError(f"slogdet: unsupported method {method!r}; numax supports 'lu'")
    dtype = aval(a).dtype
    if a_shape[-1] == 0:
        return SlogdetResult(lax.full(a_shape[:-2], 1, dtype), lax.full(a_shape[:-2], 0, real_dtype(dtype)))
    if a_shape[-1] <= 2:
        return SlogdetResult(*_slogdet_small(a))
    return SlogdetResult(*_slogdet_lu(a))


def _small_det(a):
    n = shape(a)[-1]
    return _entry(a, 0, 0) if n == 1 else _det_small(a, 2)


@custom_jvp
def _slogdet_small(a):
    """slogdet of 1x1 and 2x2 matrices from the explicit determinant (JAX's analytic path)."""
    determinant = _small_det(a)
    return sign(determinant), log(abs(determinant))


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    sign_value, logdet = _slogdet_small(a)
    if shape(a)[-1] == 1:
        logdet_dot = _entry(a_dot, 0, 0) / _entry(a, 0, 0)
    else:
        e, t = (lambda i, j: _entry(a, i, j)), (lambda i, j: _entry(a_dot, i, j))
        logdet_dot = (t(0, 0) * e(1, 1) - t(0, 1) * e(1, 0) - t(1, 0) * e(0, 1) + t(1, 1) * e(0, 0)) / _small_det(a)
    return (sign_value, logdet), _slogdet_tangents(a, sign_value, logdet_dot)


def _slogdet_tangents(a, sign_value, logdet_dot):
    """(sign's tangent, log|det|'s) from d log det: the sign is constant for real matrices."""
    if dtypes.is_complex(aval(a).dtype):
        sign_dot = (logdet_dot - lax.convert_element_type(real(logdet_dot), aval(logdet_dot).dtype)) * sign_value
        return sign_dot, real(logdet_dot)
    return lax.full_like(sign_value, 0), logdet_dot


@custom_jvp
def _slogdet_lu(a):
    a_shape = shape(a)
    dtype = aval(a).dtype
    lu, pivots, _ = lax_linalg.lu(a)
    diag = diagonal(lu)
    magnitude = abs(diag)
    is_zero = any(lax.eq(diag, lax.full_like(diag, 0)), axis=-1)
    units = lax.div(diag, lax.convert_element_type(where(lax.eq(magnitude, lax.full_like(magnitude, 0)),
                                                         lax.full_like(magnitude, 1), magnitude), dtype))
    sign = lax.mul(_lu_parity_sign(pivots, dtype), lax.reduce_prod(units, (len(a_shape) - 2,)))
    logdet = sum(log(magnitude), axis=-1)
    sign = where(is_zero, lax.full_like(sign, 0), sign)
    logdet = where(is_zero, lax.full_like(logdet, -np.inf), logdet)
    return sign, logdet


@_slogdet_lu.defjvp
def _slogdet_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    sign, logdet = _slogdet_lu(a)
    logdet_dot = trace(solve(a, a_dot))
    return (sign, logdet), _slogdet_tangents(a, sign, logdet_dot)


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(a)."""
    check_arraylike("matrix_power", a)
    a = to_array(a)
    a_shape = _square("matrix_power", a, TypeError)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from None
    if n == 0:
        return broadcast_to(eye(a_shape[-1], dtype=aval(a).dtype), a_shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    power_of_a = a
    while n:
        if n & 1:
            result = power_of_a if result is None else matmul(result, power_of_a)
        n >>= 1
        if n:
            power_of_a = matmul(power_of_a, power_of_a)
    return result


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse, from the SVD; singular values below rtol * max(s) are dropped
    (rtol defaults to 10 * max(m, n) * eps)."""
    (a,) = _inexact("pinv", a)
    a_shape = _matrix("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass only one of rtol and rcond")
        rtol = rcond
    m, n = a_shape[-2:]
    dtype = aval(a).dtype
    if m == 0 or n == 0:
        return lax.full(a_shape[:-2] + (n, m), 0, dtype)
    if rtol is None:
        rtol = 10 * builtins.max(m, n) * _eps(dtype)
    return _pinv(a, rtol, hermitian)


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a, rtol, hermitian):
    """The pseudo-inverse from the SVD, differentiated by Golub and Pereyra's formula (JAX's rule), which
    stays finite where the SVD's own derivative does not (repeated singular values)."""
    dtype = aval(a).dtype
    u, s, vh = svd(a, full_matrices=False)
    rtol = to_array(rtol)
    cutoff = multiply(expand_dims(rtol, -1) if shape(rtol) else rtol, amax(s, axis=-1, keepdims=True, initial=0.0))
    s = where(greater(s, cutoff), s, lax.full_like(s, np.inf))
    return matmul(_adjoint(vh), divide(_adjoint(u), expand_dims(lax.convert_element_type(s, dtype), -1)))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    if hermitian:
        a, a_dot = (a + _adjoint(a)) / 2, (a_dot + _adjoint(a_dot)) / 2
    m, n = shape(a)[-2:]
    if m >= n:
        s = matmul(matmul(p, _adjoint(p)), _adjoint(a_dot))
        t = matmul(matmul(_adjoint(a_dot), _adjoint(p)), p)
        p_dot = (-matmul(matmul(p, a_dot), p) + s - matmul(matmul(s, a), p) + t - matmul(matmul(p, a), t))
    else:
        s = matmul(p, matmul(_adjoint(p), _adjoint(a_dot)))
        t = matmul(_adjoint(a_dot), matmul(_adjoint(p), p))
        p_dot = -matmul(p, matmul(a_dot, p)) + s - matmul(s, matmul(a, p)) + t - matmul(p, matmul(a, t))
    return p, p_dot


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """Least squares solution of a @ x = b via the SVD: returns (x, residuals, rank, singular values).

    Residuals are always the squared norms of b - a @ x (numpy returns an empty array in some cases; pass
    `numpy_resid=True` for that, which needs concrete sizes only)."""
    a, b = _inexact("lstsq", a, b)
    a_shape, b_shape = shape(a), shape(b)
    if len(a_shape) != 2:
        raise TypeError(f"lstsq: {len(a_shape)}-dimensional array given; a must be two-dimensional")
    if len(b_shape) not in (1, 2):
        raise TypeError(f"lstsq: {len(b_shape)}-dimensional array given; b must be one or two-dimensional")
    if a_shape[0] != b_shape[0]:
        raise ValueError(f"lstsq: leading dimensions of a {a_shape} and b {b_shape} must match")
    vector = len(b_shape) == 1
    if vector:
        b = reshape(b, (b_shape[0], 1))
    m, n = a_shape
    dtype = aval(a).dtype
    if m == 0 or n == 0:
        s = lax.full((0,), 0, real_dtype(dtype))
        rank = lax.full((), 0, dtypes.default_int_dtype())
        x = lax.full((n, shape(b)[1]), 0, dtype)
    else:
        if rcond is None:
            rcond = _eps(dtype) * builtins.max(m, n)
        u, s, vh = svd(a, full_matrices=False)
        rcond = to_array(rcond)
        rcond = where(lax.lt(rcond, lax.full_like(rcond, 0)), lax.full_like(rcond, _eps(dtype)), rcond)
        threshold = lax.mul(lax.convert_element_type(rcond, aval(s).dtype), lax.slice(s, (0,), (1,)))
        keep = lax.bitwise_and(lax.gt(s, lax.full_like(s, 0)), lax.ge(s, threshold))
        rank = sum(keep, dtype=dtypes.default_int_dtype())
        s_inv = where(keep, lax.div(lax.full_like(s, 1), where(keep, s, lax.full_like(s, 1))), lax.full_like(s, 0))
        projected = matmul(_adjoint(u), b)
        x = matmul(_adjoint(vh), lax.mul(projected, lax.convert_element_type(expand_dims(s_inv, -1), dtype)))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = lax.full((0,), 0, real_dtype(dtype))
    else:
        resid = power(norm(lax.sub(b, matmul(a, x)), axis=0), 2)
    if vector:
        x = reshape(x, (n,))
    return x, resid, rank, s


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    """The number of singular values above a tolerance: by default max(s) * max(m, n) * eps.

    As in JAX, a given `rtol` (or `tol`) is compared with the singular values directly (it is not
    scaled by the largest one)."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified")
        rtol = tol
    (M,) = _inexact("matrix_rank", M)
    m_shape = shape(M)
    if len(m_shape) < 2:
        return lax.convert_element_type(any(lax.ne(M, lax.full_like(M, 0))), dtypes.int32)
    s = svd(M, compute_uv=False)
    if rtol is None:
        rtol = multiply(amax(s, axis=-1, initial=0.0), builtins.max(m_shape[-2:]) * _eps(aval(M).dtype))
    rtol = to_array(rtol)
    return sum(greater(s, expand_dims(rtol, -1) if shape(rtol) else rtol), axis=-1, dtype=dtypes.int32)


def cond(x, p=None):
    """The condition number of matrices in norm `p` (None or 2 from the singular values)."""
    (x,) = _inexact("cond", x)
    x_shape = _matrix("cond", x)
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        first, last = lax.index_in_dim(s, 0, len(x_shape) - 2, False), lax.index_in_dim(s, -1, len(x_shape) - 2, False)
        return lax.div(first, last) if p != -2 else lax.div(last, first)
    _square("cond", x)
    r = lax.mul(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
    # A singular matrix gives an infinite condition number, not the NaN inv's infs produce.
    input_nan = any(isnan(x), axis=(-2, -1))
    return where(lax.bitwise_and(isnan(r), logical_not(input_nan)), lax.full_like(r, np.inf), r)


# --- norms --------------------------------------------------------------------------------------------------
def _abs_squared_sum(x, axis, keepdims):
    return sum(real(lax.mul(x, conjugate(x))), axis=axis, keepdims=keepdims)


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return sqrt(_abs_squared_sum(x, axis, keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid order {ord!r} for a vector norm")
    # JAX's max-type norms reduce with initial=0: at all-zero input the tie with 0 halves the gradient.
    if ord == np.inf:
        return amax(abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return amin(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = lax.ne(x, lax.full_like(x, 0))
        return sum(nonzero, axis=axis, keepdims=keepdims, dtype=real_dtype(aval(x).dtype))
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    magnitude = abs(x)
    real_type = aval(magnitude).dtype
    total = sum(power(magnitude, np.asarray(ord, real_type)), axis=axis, keepdims=keepdims)
    return power(total, np.asarray(1.0 / ord, real_type))


def _matrix_norm(x, ord, axes, keepdims):
    row_axis, col_axis = axes
    if ord is None or ord == "fro":
        return sqrt(_abs_squared_sum(x, axes, keepdims))
    if ord in (1, -1):
        reducer = functools.partial(amax, initial=0) if ord == 1 else amin
        if not keepdims and col_axis > row_axis:
            col_axis -= 1
        return reducer(sum(abs(x), axis=row_axis, keepdims=keepdims), axis=col_axis, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        reducer = functools.partial(amax, initial=0) if ord == np.inf else amin
        if not keepdims and row_axis > col_axis:
            row_axis -= 1
        return reducer(sum(abs(x), axis=col_axis, keepdims=keepdims), axis=row_axis, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        moved = moveaxis(x, (row_axis, col_axis), (-2, -1))
        s = svd(moved, compute_uv=False)
        out = {2: functools.partial(amax, initial=0), -2: amin, "nuc": sum}[ord](s, axis=-1)
        return expand_dims(out, axes) if keepdims else out
    raise ValueError(f"norm: invalid order {ord!r} for a matrix norm")


def _normalize_axes(axis, rank):
    def one(ax):
        ax = operator.index(ax)
        if not -rank <= ax < rank:
            raise ValueError(f"norm: axis {ax} is out of bounds for an array of rank {rank}")
        return ax % rank

    axes = tuple(one(a) for a in axis) if isinstance(axis, (tuple, list)) else (one(axis),)
    if len(set(axes)) != len(axes):
        raise ValueError(f"norm: duplicate axes in {axis}")
    return axes


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms (ord None/2, 1, inf, -inf, 0, any p) over one axis, matrix norms ('fro', 'nuc', 1, -1,
    2, -2, inf, -inf) over two; with axis None, the 2-norm of the flattened array (ord None) or the norm of
    a vector or matrix."""
    (x,) = _inexact("norm", x)
    rank = len(shape(x))
    if axis is None:
        if ord is None:
            return sqrt(_abs_squared_sum(x, None, keepdims))
        axis = tuple(range(rank))
    axes = _normalize_axes(axis, rank)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"norm: improper number of axes ({len(axes)}); give one axis (vector norm) or two "
                     "(matrix norm)")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector norm over `axis` (all axes, flattened, by default)."""
    (x,) = _inexact("vector_norm", x)
    if axis is None:
        out = _vector_norm(reshape(x, (-1,)), ord, (0,), False)
        return reshape(out, (1,) * len(shape(x))) if keepdims else out
    return _vector_norm(x, ord, _normalize_axes(axis, len(shape(x))), keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The matrix norm over the last two axes."""
    (x,) = _inexact("matrix_norm", x)
    rank = len(_matrix("matrix_norm", x))
    return _matrix_norm(x, ord, (rank - 2, rank - 1), keepdims)


# --- the array API's forms of numpy functions: matrices are the last two axes ---------------------------------
def diagonal(x, /, *, offset=0):
    """The diagonal (`offset` above the main one, below when negative) of each matrix of `x`."""
    check_arraylike("diagonal", x)
    return _linalg_ops.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of each matrix's diagonal (`offset` as in `diagonal`), in `dtype` (default: as `sum` gives)."""
    check_arraylike("trace", x)
    return _linalg_ops.trace(x, offset, -2, -1, dtype)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    check_arraylike("outer", x1, x2)
    if aval(x1).ndim != 1 or aval(x2).ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={aval(x1).ndim} "
                         f"x2.ndim={aval(x2).ndim}")
    return multiply(expand_dims(x1, 1), expand_dims(x2, 0))  # multiply, not lax.mul: bools are allowed


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along `axis` (leading axes broadcast)."""
    check_arraylike("cross", x1, x2)
    x1, x2 = to_array(x1), to_array(x2)
    if shape(x1)[axis] != 3 or shape(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                         f"x1.shape[axis]={shape(x1)[axis]} and x2.shape[axis]={shape(x2)[axis]}")
    return _linalg_ops.cross(x1, x2, axis=axis)


def tensordot(x1, x2, /, *, axes=2, precision=None):
    """Contracts the last `axes` axes of x1 with the first of x2 (or the axis lists `axes` names)."""
    return _linalg_ops.tensordot(x1, x2, axes, precision=precision)


# --- products and tensor equations ----------------------------------------------------------------------------
def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first may be a row vector, the last a column vector)."""
    arrays = [to_array(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expecting at least 2 arrays, got {len(arrays)}")
    for i, a in enumerate(arrays):
        a_rank = len(shape(a))
        allowed = (1, 2) if i in (0, len(arrays) - 1) else (2,)
        if a_rank not in allowed:
            raise ValueError(f"multi_dot: array {i} has rank {a_rank}; the first and last may be 1-d or 2-d, "
                             "the others must be 2-d")
    for i, (a, b) in enumerate(zip(arrays, arrays[1:])):
        if shape(a)[-1] != shape(b)[0]:
            raise ValueError(f"multi_dot: the last dimension of array {i} {shape(a)} must match the first of array "
                             f"{i + 1} {shape(b)}")
    result = arrays[0]
    for a in arrays[1:]:
        result = matmul(result, a, precision=precision)
    return result


def tensorinv(a, ind=2):
    """The inverse of a tensor seen as a matrix: shape a.shape[ind:] + a.shape[:ind]."""
    a = to_array(a)
    a_shape = shape(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    rows, cols = a_shape[:ind], a_shape[ind:]
    rows_size, cols_size = int(np.prod(rows)), int(np.prod(cols))
    if rows_size != cols_size:
        raise ValueError(f"tensorinv: a.shape[:ind] {rows} and a.shape[ind:] {cols} must have equal products")
    return reshape(inv(reshape(a, (rows_size, cols_size))), cols + rows)


def tensorsolve(a, b, axes=None):
    """Solves tensordot(a, x, x.ndim) = b for x, of shape a.shape[b.ndim:]."""
    a, b = _inexact("tensorsolve", a, b)
    a_rank = len(shape(a))
    if axes is not None:
        axes = [operator.index(ax) % a_rank for ax in axes]
        a = moveaxis(a, axes, list(range(a_rank - len(axes), a_rank)))
    a_shape, b_shape = shape(a), shape(b)
    out_shape = a_shape[len(b_shape):]
    rows, cols = int(np.prod(a_shape[:len(b_shape)])), int(np.prod(out_shape))
    if a_shape[:len(b_shape)] != b_shape or rows != cols:
        raise ValueError(f"tensorsolve: shapes {a_shape} and {b_shape} do not describe a square system")
    return reshape(solve(reshape(a, (rows, cols)), reshape(b, (rows,))), out_shape)
