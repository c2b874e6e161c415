"""scipy.linalg's special matrices, as `jax.scipy.linalg` has them: `block_diag`, `toeplitz`, `hankel`,
`circulant`, `companion`, `leslie`, `fiedler`, `hadamard`, `helmert` and `hilbert`. Each entry of a Toeplitz,
Hankel or circulant matrix is read from its defining vector at an index known from the shapes alone (one gather);
leading dimensions of the vectors are batch dimensions."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.core import dtypes
from numax.numpy._util import check_arraylike, promote_dtypes, promote_dtypes_inexact

__all__ = ["block_diag", "circulant", "companion", "fiedler", "hadamard", "hankel", "helmert", "hilbert", "leslie",
           "toeplitz"]


def block_diag(*arrs):
    """The block-diagonal matrix of the given arrays (each at most 2-D; scalars and vectors are rows), in
    their promoted dtype; with no arrays, a 1 x 0 matrix."""
    if not arrs:
        arrs = (xnp.zeros((1, 0)),)
    arrs = promote_dtypes(*arrs)
    for position, a in enumerate(arrs):
        if np.ndim(a) > 2:
            raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions, got "
                             f"{a} at argument {position}.")
    blocks = [xnp.atleast_2d(a) for a in arrs]
    total_cols, rows, start = sum(b.shape[1] for b in blocks), [], 0
    for block in blocks:
        cols = block.shape[1]
        rows.append(lax.pad(block, xnp.zeros((), block.dtype), ((0, 0, 0), (start, total_cols - start - cols, 0))))
        start += cols
    return xnp.concatenate(rows, axis=0)


def _batched(c, r):
    """c (..., m) and r (..., n) with their batch dimensions broadcast together, in their promoted dtype."""
    c, r = promote_dtypes(c, r)
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    return xnp.broadcast_to(c, batch + c.shape[-1:]), xnp.broadcast_to(r, batch + r.shape[-1:])


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r` (default: conj(c)); `r[0]` is ignored.
    Leading dimensions of `c` and `r` are batch dimensions."""
    if r is None:
        check_arraylike("toeplitz", c)
        r = xnp.conjugate(xnp.asarray(c))
    else:
        check_arraylike("toeplitz", c, r)
    c, r = _batched(xnp.atleast_1d(xnp.asarray(c)), xnp.atleast_1d(xnp.asarray(r)))
    m, n = c.shape[-1], r.shape[-1]
    if m == 0 or n == 0:
        return xnp.empty(c.shape[:-1] + (m, n), c.dtype)
    # entry (i, j) is c[i - j] below the diagonal and r[j - i] above: both read from c reversed, then r[1:]
    values = xnp.concatenate([xnp.flip(c, -1), r[..., 1:]], axis=-1)
    return values[..., (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]]


def hankel(c, r=None):
    """The Hankel matrix with first column `c` and last row `r` (default: zeros); `r[0]` is ignored. Leading
    dimensions of `c` and `r` are batch dimensions."""
    if r is None:
        check_arraylike("hankel", c)
        c = xnp.asarray(c)
        r = xnp.zeros_like(c)
    else:
        check_arraylike("hankel", c, r)
        c, r = xnp.asarray(c), xnp.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    c, r = _batched(c, r)
    m, n = c.shape[-1], r.shape[-1]
    if m == 0 or n == 0:
        return xnp.empty(c.shape[:-1] + (m, n), c.dtype)
    values = xnp.concatenate([c, r[..., 1:]], axis=-1)  # entry (i, j) is values[i + j]
    return values[..., np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c):
    """The circulant matrix with first column `c`: entry (i, j) is c[(i - j) mod n]. Leading dimensions of `c`
    are batch dimensions."""
    check_arraylike("circulant", c)
    c = xnp.atleast_1d(xnp.asarray(c))
    n = c.shape[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def hilbert(n):
    """The n x n Hilbert matrix, 1 / (i + j + 1), in the default float dtype."""
    index = np.arange(n, dtype=dtypes.default_float_dtype())  # (computed in that dtype, as jax does)
    return xnp.asarray(1 / (index[:, None] + index[None, :] + 1))


def companion(a):
    """The companion matrix of the polynomial with coefficients `a` (highest degree first, at least 2): first
    row -a[1:] / a[0], ones below the diagonal. Leading dimensions of `a` are batch dimensions."""
    (a,) = promote_dtypes_inexact(a)
    a = xnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {a.shape}.")
    m = a.shape[-1] - 1
    first_row = -a[..., 1:] / a[..., :1]
    below = xnp.broadcast_to(xnp.eye(m, m, k=-1, dtype=first_row.dtype), a.shape[:-1] + (m, m))
    return below.at[..., 0, :].set(first_row)


def leslie(f, s):
    """The Leslie matrix of fecundities `f` (first row, at least 2) and survival rates `s` (one fewer, below the
    diagonal). Leading dimensions are batch dimensions."""
    check_arraylike("leslie", f, s)
    f, s = xnp.atleast_1d(f), xnp.atleast_1d(s)
    if f.shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape {f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must be one less than "
                         f"the length of f; got f shape {f.shape} and s shape {s.shape}.")
    f, s = _batched(f, s)
    n = f.shape[-1]
    rows = np.arange(1, n)
    out = xnp.zeros(f.shape[:-1] + (n, n), f.dtype).at[..., rows, rows - 1].set(s)
    return out.at[..., 0, :].set(f)


def fiedler(a):
    """The symmetric Fiedler matrix |a[i] - a[j]|. Leading dimensions of `a` are batch dimensions."""
    check_arraylike("fiedler", a)
    a = xnp.atleast_1d(a)
    return xnp.abs(a[..., :, None] - a[..., None, :])


def hadamard(n, dtype=int):
    """The n x n Hadamard matrix of Sylvester's construction (n a power of 2), entries +-1 in `dtype`."""
    if n < 1 or not np.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    matrix = np.ones((1, 1), np.int8)
    while matrix.shape[0] < n:
        matrix = np.block([[matrix, matrix], [matrix, -matrix]])
    return xnp.asarray(matrix, dtype=dtype)


def helmert(n, full=False):
    """The (n - 1) x n Helmert matrix (n x n with `full`: first row 1 / sqrt(n)), in the default float dtype:
    row k - 1 holds 1 / sqrt(k (k + 1)) in its first k columns and -k / sqrt(k (k + 1)) in column k."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    k = xnp.arange(1, n, dtype=dtypes.default_float_dtype())[:, None]
    column = np.arange(n)[None, :]
    scale = xnp.sqrt(k * (k + 1))
    matrix = xnp.where(column < k, 1.0 / scale, xnp.where(column == k, -k / scale, xnp.zeros_like(scale)))
    if full:
        matrix = xnp.concatenate([xnp.full((1, n), 1.0 / xnp.sqrt(n), dtype=matrix.dtype), matrix], axis=0)
    return matrix
