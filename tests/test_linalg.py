"""numax.lax.linalg, numax.numpy.linalg and numax.scipy.linalg against numpy, scipy and jax.

Inputs are random well-conditioned matrices (diagonally dominated; Hermitian positive definite where
needed). Values are checked against numpy/scipy (no compilation), shapes and dtypes against jax through
`jax.eval_shape`, and inf/NaN patterns of singular inputs against jax itself. Factorizations are also
checked through reconstruction identities. Compilation dominates the cost here, so most cases run under
numax.jit only; single primitives and a set of numpy functions also run eagerly.
"""

import numpy as np
import pytest
import scipy.linalg
from harness import assert_close, jax, jnp
from numax.lax import linalg as xlinalg

import numax
import numax.numpy as xnp
import numax.scipy.linalg as xsl

jsl = jax.scipy.linalg
DTYPES = [np.float32, np.complex64]
EPS32 = float(np.finfo(np.float32).eps)


def _rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _well_conditioned(rng, shape, dtype):
    """A square matrix with a dominant diagonal, so that solves and inverses are accurate."""
    n = shape[-1]
    return (_rand(rng, shape, dtype) + 2 * n * np.eye(n)).astype(dtype)


def _hermitian_pd(rng, shape, dtype):
    x = _rand(rng, shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _adjoint(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def _run(fn, *args, eager=False):
    """fn's results under numax.jit, and eagerly too (the two must agree) when `eager`."""
    jitted = _leaves(numax.jit(fn)(*args))
    if eager:
        for e, j in zip(_leaves(fn(*args)), jitted, strict=True):
            np.testing.assert_allclose(e, j, rtol=1e-5, atol=1e-5)
    return jitted


def _check_avals(actual_leaves, jax_fn, *args):
    """Shapes and dtypes as jax gives them (by abstract evaluation: nothing compiles)."""
    expected = jax.tree_util.tree_leaves(jax.eval_shape(jax_fn, *args))
    assert [(a.shape, a.dtype) for a in actual_leaves] == [(e.shape, e.dtype) for e in expected]


def _close(actual, expected, scale=100.0):
    """Values within a tolerance fitting numax's dtype (references may be computed in float64)."""
    actual = np.asarray(actual)
    assert_close(actual, np.asarray(expected), dtype=actual.dtype, scale=scale, check_dtype=False)


def _eye_like(x):
    x = np.asarray(x)
    return np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)


def _check_orthonormal_columns(x):
    gram = _adjoint(x) @ x
    _close(gram, _eye_like(gram))


# --- lax.linalg -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 1, 4, 4)])
def test_cholesky(rng, shape, dtype):
    a = _hermitian_pd(rng, shape, dtype)
    (lower,) = _run(xlinalg.cholesky, a, eager=True)
    _check_avals([lower], jax.lax.linalg.cholesky, a)
    _close(lower, np.linalg.cholesky(a))
    assert np.all(np.triu(lower, 1) == 0)
    _close(lower @ _adjoint(lower), a, scale=300)


def test_cholesky_not_positive_definite_gives_nan():
    a = np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]], np.float32)
    out = np.asarray(xlinalg.cholesky(a))
    np.testing.assert_array_equal(out, np.asarray(jax.lax.linalg.cholesky(a)))
    assert np.isnan(out[0][np.tril_indices(2)]).all() and np.isfinite(out[1]).all()


def test_cholesky_symmetrize_input_false_reads_lower_triangle_only(rng):
    a = _hermitian_pd(rng, (4, 4), np.float32)
    garbage_upper = np.tril(a) + np.triu(np.full_like(a, 7.0), 1)
    _close(xlinalg.cholesky(garbage_upper, symmetrize_input=False), np.linalg.cholesky(a))


TRIANGULAR_FLAGS = [dict(left_side=side, lower=lower, transpose_a=transpose, conjugate_a=conjugate)
                    for side in (True, False) for lower in (True, False)
                    for transpose, conjugate in ((False, False), (True, False), (True, True), (False, True))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_solve(rng, dtype):
    a = _well_conditioned(rng, (2, 3, 3), dtype)
    b_left, b_right = _rand(rng, (2, 3, 4), dtype), _rand(rng, (2, 4, 3), dtype)
    solve_all = lambda a, bl, br: [xlinalg.triangular_solve(a, bl if f["left_side"] else br, **f)
                                   for f in TRIANGULAR_FLAGS]
    outs = _run(solve_all, a, b_left, b_right)
    for flags, x in zip(TRIANGULAR_FLAGS, outs, strict=True):
        tri = np.tril(a) if flags["lower"] else np.triu(a)
        op = np.swapaxes(tri, -1, -2) if flags["transpose_a"] else tri
        op = np.conj(op) if flags["conjugate_a"] else op
        product = op @ x if flags["left_side"] else x @ op
        _close(product, b_left if flags["left_side"] else b_right, scale=300)
    eager = xlinalg.triangular_solve(a, b_left, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    np.testing.assert_allclose(np.asarray(eager), outs[2], rtol=1e-6, atol=1e-6)


def test_triangular_solve_unit_diagonal(rng):
    a = _well_conditioned(rng, (4, 4), np.float32)
    b = _rand(rng, (4, 2), np.float32)
    x = xlinalg.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True)
    _close(x, scipy.linalg.solve_triangular(a, b, lower=True, unit_diagonal=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 1, 3, 3)])
def test_lu(rng, shape, dtype):
    a = _rand(rng, shape, dtype)
    lu, pivots, perm = _run(xlinalg.lu, a, eager=True)
    _check_avals([lu, pivots, perm], jax.lax.linalg.lu, a)
    m, n = shape[-2:]
    k = min(m, n)
    flat_a, flat_lu, flat_pivots = a.reshape(-1, m, n), lu.reshape(-1, m, n), pivots.reshape(-1, k)
    for matrix, factors, piv in zip(flat_a, flat_lu, flat_pivots):
        expected_lu, expected_piv = scipy.linalg.lu_factor(matrix) if m == n else _scipy_getrf(matrix)
        np.testing.assert_array_equal(piv, expected_piv)
        _close(factors, expected_lu)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
    upper = np.triu(lu[..., :k, :])
    permuted = np.take_along_axis(a, perm[..., None], axis=-2)
    _close(lower @ upper, permuted)


def _scipy_getrf(matrix):
    getrf = scipy.linalg.get_lapack_funcs("getrf", (matrix,))
    factors, piv, _ = getrf(matrix)
    return factors, piv


def test_lu_pivots_to_permutation():
    pivots = np.array([[2, 2, 3, 3], [0, 3, 2, 3]], np.int32)
    (out,) = _run(lambda p: xlinalg.lu_pivots_to_permutation(p, 5), pivots, eager=True)
    np.testing.assert_array_equal(out, np.array([[2, 0, 3, 1, 4], [0, 3, 2, 1, 4]]))


def test_lu_of_singular_matrix_keeps_factors():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    lu, pivots, perm = (np.asarray(x) for x in xlinalg.lu(a))
    assert np.isfinite(lu).all() and lu[1, 1] == 0
    np.testing.assert_array_equal(perm, [1, 0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr(rng, shape, dtype):
    a = _rand(rng, shape, dtype)
    outs = _run(lambda x: xlinalg.qr(x, full_matrices=True) + xlinalg.qr(x, full_matrices=False), a)
    _check_avals(outs, lambda x: jax.lax.linalg.qr(x, full_matrices=True) + jax.lax.linalg.qr(x, full_matrices=False),
                 a)
    for (q, r), mode in ((outs[:2], "complete"), (outs[2:], "reduced")):
        expected_q, expected_r = np.linalg.qr(a, mode=mode)
        _close(np.abs(q), np.abs(expected_q))  # columns of q and rows of r are unique up to sign (phase)
        _close(np.abs(r), np.abs(expected_r))
        assert np.all(np.tril(r, -1) == 0)
        _close(q @ r, a)
        _check_orthonormal_columns(q)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 1, 4, 4)])
def test_eigh(rng, shape, dtype):
    a = _hermitian_pd(rng, shape, dtype)
    v, w = _run(xlinalg.eigh, a, eager=True)
    _check_avals([v, w], jax.lax.linalg.eigh, a)
    _close(w, np.linalg.eigvalsh(a))
    assert np.all(np.diff(w, axis=-1) >= 0)
    _close((v * w[..., None, :]) @ _adjoint(v), a, scale=300)
    _check_orthonormal_columns(v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig(rng, dtype):
    a = _rand(rng, (2, 4, 4), dtype)
    if numax.default_backend() != "cpu":
        # As in jax, the nonsymmetric eigendecomposition has only a CPU (LAPACK geev) kernel.
        with pytest.raises(NotImplementedError, match="only implemented on the CPU"):
            xlinalg.eig(xnp.asarray(a))
        return
    outs = _run(lambda x: (xlinalg.eig(x), xlinalg.eig(x, compute_left_eigenvectors=False,
                                                        compute_right_eigenvectors=False)), a, eager=True)
    _check_avals(outs, lambda x: (jax.lax.linalg.eig(x), jax.lax.linalg.eig(
        x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)), a)
    w, vl, vr, w_only = outs
    _close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)))
    np.testing.assert_allclose(w_only, w, rtol=1e-6, atol=1e-6)
    _close(a @ vr, vr * w[..., None, :])
    _close(_adjoint(vl) @ a, w[..., :, None] * _adjoint(vl))
    outs = _run(lambda x: [xnp.linalg.eig(x), xnp.linalg.eigvals(x)], a)
    _check_avals(outs, lambda x: [jnp.linalg.eig(x), jnp.linalg.eigvals(x)], a)
    np.testing.assert_allclose(outs[0], w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[2], w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 1, 3, 3)])
def test_svd(rng, shape, dtype):
    a = _rand(rng, shape, dtype)
    both = lambda x: (xlinalg.svd(x, full_matrices=True), xlinalg.svd(x, full_matrices=False),
                      xlinalg.svd(x, compute_uv=False))
    outs = _run(both, a)
    jax_both = lambda x: (jax.lax.linalg.svd(x, full_matrices=True), jax.lax.linalg.svd(x, full_matrices=False),
                          jax.lax.linalg.svd(x, compute_uv=False))
    _check_avals(outs, jax_both, a)
    k = min(shape[-2:])
    expected_s = np.linalg.svd(a, compute_uv=False)
    for u, s, vh in (outs[0:3], outs[3:6]):
        _close(s, expected_s)
        _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a)
        _check_orthonormal_columns(u)
        _check_orthonormal_columns(_adjoint(vh))
    _close(outs[6], expected_s)


def test_linalg_primitives_reject_bad_inputs():
    with pytest.raises(ValueError, match=r"cholesky requires square matrices.*\(2, 3\)"):
        xlinalg.cholesky(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="lu requires an array of rank >= 2"):
        xlinalg.lu(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="lu does not accept dtype int32"):
        xlinalg.lu(np.ones((3, 3), np.int32))
    with pytest.raises(TypeError, match="svd does not accept dtype float16"):
        xlinalg.svd(np.ones((3, 3), np.float16))
    with pytest.raises(ValueError, match="eigh requires square matrices"):
        xlinalg.eigh(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="must match a's size"):
        xlinalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((4, 2), np.float32), left_side=True)
    with pytest.raises(TypeError, match="same dtype"):
        xlinalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((3, 3), np.complex64))
    with pytest.raises(ValueError, match="equal batch dimensions"):
        xlinalg.triangular_solve(np.ones((2, 3, 3), np.float32), np.ones((4, 3, 3), np.float32))
    with pytest.raises(TypeError, match="lu does not accept"):
        numax.jit(xlinalg.lu)(np.ones((3, 3), np.int32))


def test_empty_matrices():
    x = np.zeros((2, 0, 0), np.float32)
    fns = [xlinalg.cholesky, lambda x: xlinalg.lu(x)[0], lambda x: xlinalg.eigh(x)[0], lambda x: xlinalg.qr(x)[0],
           lambda x: xlinalg.svd(x)[0]]
    for fn in fns:
        assert np.asarray(fn(x)).shape == (2, 0, 0)
    u, s, vh = (np.asarray(t) for t in xlinalg.svd(np.zeros((3, 0), np.float32)))
    np.testing.assert_array_equal(u, np.eye(3))
    assert s.shape == (0,) and vh.shape == (0, 0)


# --- numpy.linalg --------------------------------------------------------------------------------------------------
def _lstsq_reference(a, b):
    m, n = a.shape
    x, _, rank, s = np.linalg.lstsq(a, b, rcond=EPS32 * max(m, n))
    resid = np.sum(np.abs(b - a @ x) ** 2, axis=0)
    return x, np.atleast_1d(resid), rank, s


def _rank_deficient(rng, dtype):
    return np.outer(_rand(rng, (4,), dtype), _rand(rng, (3,), dtype)).astype(dtype)


# (name, numax fn, reference fn on numpy arrays, the jax fn (for shapes and dtypes), inputs, test complex too)
NUMPY_CASES = [
    ("solve", xnp.linalg.solve, np.linalg.solve, jnp.linalg.solve,
     lambda rng, dt: (_well_conditioned(rng, (2, 3, 3), dt), _rand(rng, (2, 3, 2), dt)), True),
    ("solve_vector", xnp.linalg.solve, np.linalg.solve, jnp.linalg.solve,
     lambda rng, dt: (_well_conditioned(rng, (2, 3, 3), dt), _rand(rng, (3,), dt)), False),
    ("solve_broadcast", xnp.linalg.solve, np.linalg.solve, jnp.linalg.solve,
     lambda rng, dt: (_well_conditioned(rng, (3, 3), dt), _rand(rng, (4, 3, 2), dt)), False),
    ("inv", xnp.linalg.inv, np.linalg.inv, jnp.linalg.inv, lambda rng, dt: (_well_conditioned(rng, (2, 3, 3), dt),),
     True),
    ("det", xnp.linalg.det, np.linalg.det, jnp.linalg.det, lambda rng, dt: (_rand(rng, (3, 4, 4), dt),), True),
    ("slogdet", xnp.linalg.slogdet, np.linalg.slogdet, jnp.linalg.slogdet, lambda rng, dt: (_rand(rng, (3, 4, 4), dt),),
     True),
    ("matrix_power", lambda a: [xnp.linalg.matrix_power(a, n) for n in (0, 1, 3, -2)],
     lambda a: [np.linalg.matrix_power(a, n) for n in (0, 1, 3, -2)],
     lambda a: [jnp.linalg.matrix_power(a, n) for n in (0, 1, 3, -2)],
     lambda rng, dt: (_well_conditioned(rng, (2, 3, 3), dt) / 6,), False),
    ("cholesky_upper", lambda a: xnp.linalg.cholesky(a, upper=True), lambda a: np.linalg.cholesky(a, upper=True),
     lambda a: jnp.linalg.cholesky(a, upper=True), lambda rng, dt: (_hermitian_pd(rng, (2, 3, 3), dt),), True),
    ("eigvalsh", lambda a: [xnp.linalg.eigvalsh(a), xnp.linalg.eigh(a, UPLO="U").eigenvalues],
     lambda a: [np.linalg.eigvalsh(a), np.linalg.eigh(a, UPLO="U").eigenvalues],
     lambda a: [jnp.linalg.eigvalsh(a), jnp.linalg.eigh(a, UPLO="U").eigenvalues],
     lambda rng, dt: (_hermitian_pd(rng, (3, 3), dt),), True),
    ("svdvals", xnp.linalg.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), jnp.linalg.svdvals,
     lambda rng, dt: (_rand(rng, (2, 4, 3), dt),), True),
    ("pinv", xnp.linalg.pinv, lambda a: np.linalg.pinv(a, rcond=10 * max(a.shape[-2:]) * EPS32), jnp.linalg.pinv,
     lambda rng, dt: (_rand(rng, (2, 4, 3), dt),), True),
    ("pinv_rank_deficient", xnp.linalg.pinv, lambda a: np.linalg.pinv(a, rcond=40 * EPS32), jnp.linalg.pinv,
     lambda rng, dt: (_rank_deficient(rng, dt),), False),
    ("lstsq", xnp.linalg.lstsq, _lstsq_reference, jnp.linalg.lstsq,
     lambda rng, dt: (_rand(rng, (5, 3), dt), _rand(rng, (5, 2), dt)), True),
    ("lstsq_vector", xnp.linalg.lstsq, _lstsq_reference, jnp.linalg.lstsq,
     lambda rng, dt: (_rand(rng, (3, 5), dt), _rand(rng, (3,), dt)), False),
    ("matrix_rank", xnp.linalg.matrix_rank, np.linalg.matrix_rank, jnp.linalg.matrix_rank,
     lambda rng, dt: (np.stack([_rand(rng, (4, 3), dt), _rank_deficient(rng, dt)]),), True),
    ("cond", lambda a: [xnp.linalg.cond(a, p) for p in (None, -2, "fro", 1, np.inf)],
     lambda a: [np.linalg.cond(a, p) for p in (None, -2, "fro", 1, np.inf)],
     lambda a: [jnp.linalg.cond(a, p) for p in (None, -2, "fro", 1, np.inf)],
     lambda rng, dt: (_well_conditioned(rng, (2, 3, 3), dt),), True),
    ("multi_dot", lambda *xs: xnp.linalg.multi_dot(xs), lambda *xs: np.linalg.multi_dot(xs),
     lambda *xs: jnp.linalg.multi_dot(xs), lambda rng, dt: (_rand(rng, (3,), dt), _rand(rng, (3, 4), dt),
                                                            _rand(rng, (4, 2), dt)), False),
    ("tensorinv", lambda a: xnp.linalg.tensorinv(a, 1), lambda a: np.linalg.tensorinv(a, 1),
     lambda a: jnp.linalg.tensorinv(a, 1), lambda rng, dt: (_well_conditioned(rng, (4, 4), dt).reshape(4, 2, 2),),
     False),
    ("tensorsolve", xnp.linalg.tensorsolve, np.linalg.tensorsolve, jnp.linalg.tensorsolve,
     lambda rng, dt: (_well_conditioned(rng, (6, 6), dt).reshape(6, 2, 3), _rand(rng, (6,), dt)), False),
    ("vector_norms", lambda x: [xnp.linalg.norm(x, o, axis=1) for o in (None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1)],
     lambda x: [np.linalg.norm(x, o, axis=1) for o in (None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1)],
     lambda x: [jnp.linalg.norm(x, o, axis=1) for o in (None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1)],
     lambda rng, dt: (_rand(rng, (3, 4), dt),), True),
    ("vector_norm_api", lambda x: [xnp.linalg.vector_norm(x, ord=3), xnp.linalg.vector_norm(x, axis=(0, 2),
                                                                                            keepdims=True),
                                   xnp.linalg.norm(x[0, :, 0], np.inf, keepdims=True), xnp.linalg.norm(x)],
     lambda x: [np.linalg.vector_norm(x, ord=3), np.linalg.vector_norm(x, axis=(0, 2), keepdims=True),
                np.linalg.norm(x[0, :, 0], np.inf, keepdims=True), np.linalg.norm(x)],
     lambda x: [jnp.linalg.vector_norm(x, ord=3), jnp.linalg.vector_norm(x, axis=(0, 2), keepdims=True),
                jnp.linalg.norm(x[0, :, 0], np.inf, keepdims=True), jnp.linalg.norm(x)],
     lambda rng, dt: (_rand(rng, (2, 3, 2), dt),), False),
    ("matrix_norms", lambda x: [xnp.linalg.norm(x, o, axis=ax, keepdims=k) for o in MATRIX_ORDS
                                for ax, k in (((1, 2), False), ((2, 0), True))],
     lambda x: [np.linalg.norm(x, o, axis=ax, keepdims=k) for o in MATRIX_ORDS
                for ax, k in (((1, 2), False), ((2, 0), True))],
     lambda x: [jnp.linalg.norm(x, o, axis=ax, keepdims=k) for o in MATRIX_ORDS
                for ax, k in (((1, 2), False), ((2, 0), True))],
     lambda rng, dt: (_rand(rng, (2, 3, 4), dt),), True),
    ("matrix_norm_api", lambda x: [xnp.linalg.matrix_norm(x), xnp.linalg.matrix_norm(x, ord="nuc", keepdims=True)],
     lambda x: [np.linalg.matrix_norm(x), np.linalg.matrix_norm(x, ord="nuc", keepdims=True)],
     lambda x: [jnp.linalg.matrix_norm(x), jnp.linalg.matrix_norm(x, ord="nuc", keepdims=True)],
     lambda rng, dt: (_rand(rng, (2, 3, 4), dt),), False),
]
MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
NUMPY_PARAMS = [pytest.param(case, dtype, id=f"{case[0]}-{np.dtype(dtype).name}")
                for case in NUMPY_CASES for dtype in DTYPES if dtype == np.float32 or case[5]]


@pytest.mark.parametrize("case,dtype", NUMPY_PARAMS)
def test_numpy_linalg(rng, case, dtype):
    name, fn, reference, jax_fn, make, _ = case
    args = make(rng, dtype)
    outs = _run(fn, *args)
    _check_avals(outs, jax_fn, *args)
    expected = _leaves(reference(*args))
    assert len(outs) == len(expected)
    for actual, wanted in zip(outs, expected):
        _close(actual, wanted, scale=300)


def test_numpy_linalg_eager(rng):
    a = _well_conditioned(rng, (3, 3), np.float32)
    b = _rand(rng, (3,), np.float32)
    fns = [xnp.linalg.solve, lambda a, b: xnp.linalg.slogdet(a), lambda a, b: xnp.linalg.norm(a, 2)]
    for fn in fns:
        _run(fn, a, b, eager=True)


def test_singular_matrices_match_jax():
    singular = np.ones((3, 3), np.float32)
    b = np.ones(3, np.float32)
    ours = numax.jit(lambda a, b: (xnp.linalg.inv(a), xnp.linalg.det(a), xnp.linalg.slogdet(a),
                                   xnp.linalg.solve(a, b)))(singular, b)
    theirs = jax.jit(lambda a, b: (jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.slogdet(a),
                                   jnp.linalg.solve(a, b)))(singular, b)
    for actual, wanted in zip(_leaves(ours), _leaves(theirs), strict=True):
        np.testing.assert_array_equal(actual, wanted)
    assert np.isinf(np.asarray(xnp.linalg.cond(singular, 1)))
    sign, logdet = xnp.linalg.slogdet(np.zeros((2, 2), np.float32))
    assert float(sign) == 0.0 and float(logdet) == -np.inf


def test_integer_inputs_promote_like_jax():
    a = np.array([[2, 1], [1, 3]], np.int32)
    outs = _run(lambda a: [xnp.linalg.inv(a), xnp.linalg.det(a), xnp.linalg.cholesky(a), xnp.linalg.eigvalsh(a),
                           xnp.linalg.matrix_power(a, 2), xnp.linalg.norm(a)], a)
    _check_avals(outs, lambda a: [jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.cholesky(a),
                                  jnp.linalg.eigvalsh(a), jnp.linalg.matrix_power(a, 2), jnp.linalg.norm(a)], a)
    af = a.astype(np.float64)
    for actual, wanted in zip(outs, [np.linalg.inv(af), np.linalg.det(af), np.linalg.cholesky(af),
                                     np.linalg.eigvalsh(af), a @ a, np.linalg.norm(af)]):
        _close(actual, wanted.astype(actual.dtype))


def test_numpy_linalg_errors():
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"inv: argument must be a square matrix.*\(2, 3\)"):
        xnp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="det: argument must be a square matrix"):
        xnp.linalg.det(np.ones(3, np.float32))
    # (jax's classes: TypeErrors for cholesky and eigh, whose inputs jax symmetrizes first.)
    with pytest.raises(TypeError, match="cholesky: argument must be a square matrix"):
        xnp.linalg.cholesky(np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="eigh: argument must be a square matrix"):
        xnp.linalg.eigh(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="solve: b must have shape"):
        xnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="qr: unsupported mode"):
        xnp.linalg.qr(np.eye(3, dtype=np.float32), "bogus")
    with pytest.raises(TypeError, match="exponent must be an integer"):
        xnp.linalg.matrix_power(np.eye(3, dtype=np.float32), 1.5)
    with pytest.raises(ValueError, match="multi_dot: expecting at least 2 arrays"):
        xnp.linalg.multi_dot([np.eye(3)])
    with pytest.raises(ValueError, match="improper number of axes"):
        xnp.linalg.norm(x, 2)
    with pytest.raises(ValueError, match="invalid order 'fro' for a vector norm"):
        xnp.linalg.norm(x[0, 0], "fro")
    with pytest.raises(ValueError, match="invalid order 3 for a matrix norm"):
        xnp.linalg.norm(x[0], 3)
    with pytest.raises(ValueError, match="axis 5 is out of bounds"):
        xnp.linalg.norm(x, axis=5)


def test_empty_numpy_linalg():
    empty = np.zeros((2, 0, 0), np.float32)
    for name in ("inv", "det", "slogdet", "cholesky", "eigvalsh", "pinv"):
        ours = _leaves(getattr(xnp.linalg, name)(empty))
        theirs = _leaves(getattr(jnp.linalg, name)(empty))
        for actual, wanted in zip(ours, theirs, strict=True):
            assert actual.shape == wanted.shape and actual.dtype == wanted.dtype, name
            np.testing.assert_array_equal(actual, wanted)


def test_namespace():
    for name in ("outer", "cross", "tensordot", "trace", "diagonal"):  # the array API's forms, not numpy's
        assert getattr(jnp.linalg, name) is not getattr(jnp, name)
        assert getattr(xnp.linalg, name) is not getattr(xnp, name)
    assert xnp.linalg.matmul is xnp.matmul and xnp.linalg.vecdot is xnp.vecdot
    assert set(xnp.linalg.__all__) <= set(dir(jnp.linalg))
    assert numax.lax.linalg is xlinalg and numax.lax.cholesky is xlinalg.cholesky
    assert set(xlinalg.__all__) <= set(dir(jax.lax.linalg))


# --- scipy.linalg ---------------------------------------------------------------------------------------------------
def _scipy_lu_solve(trans):
    return lambda a, b: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=trans)


# (name, numax fn, reference fn (scipy), jax fn, inputs, test complex too)
SCIPY_CASES = [
    ("cholesky", lambda a: [xsl.cholesky(a), xsl.cholesky(a, lower=True)],
     lambda a: [scipy.linalg.cholesky(a), scipy.linalg.cholesky(a, lower=True)],
     lambda a: [jsl.cholesky(a), jsl.cholesky(a, lower=True)], lambda rng, dt: (_hermitian_pd(rng, (3, 3), dt),), True),
    ("cho_solve", lambda a, b: [xsl.cho_solve(xsl.cho_factor(a), b), xsl.cho_solve(xsl.cho_factor(a, True), b[:, 0])],
     lambda a, b: [scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b),
                   scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, True), b[:, 0])],
     lambda a, b: [jsl.cho_solve(jsl.cho_factor(a), b), jsl.cho_solve(jsl.cho_factor(a, True), b[:, 0])],
     lambda rng, dt: (_hermitian_pd(rng, (3, 3), dt), _rand(rng, (3, 2), dt)), True),
    ("solve_triangular", lambda a, b: [xsl.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=lo)
                                       for t in (0, "T", 2) for lo in (True, False)],
     lambda a, b: [scipy.linalg.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=lo)
                   for t in (0, "T", 2) for lo in (True, False)],
     lambda a, b: [jsl.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=lo)
                   for t in (0, "T", 2) for lo in (True, False)],
     lambda rng, dt: (_well_conditioned(rng, (3, 3), dt), _rand(rng, (3,), dt)), True),
    ("lu", lambda a: [xsl.lu(a), xsl.lu(a.T, permute_l=True)],
     lambda a: [scipy.linalg.lu(a), scipy.linalg.lu(a.T, permute_l=True)],
     lambda a: [jsl.lu(a), jsl.lu(a.T, permute_l=True)], lambda rng, dt: (_rand(rng, (4, 3), dt),), True),
    ("lu_factor", lambda a: xsl.lu_factor(a), scipy.linalg.lu_factor, jsl.lu_factor,
     lambda rng, dt: (_rand(rng, (4, 4), dt),), False),
    ("lu_solve", lambda a, b: [xsl.lu_solve(xsl.lu_factor(a), b, trans=t) for t in (0, 1, 2)],
     lambda a, b: [_scipy_lu_solve(t)(a, b) for t in (0, 1, 2)],
     lambda a, b: [jsl.lu_solve(jsl.lu_factor(a), b, trans=t) for t in (0, 1, 2)],
     lambda rng, dt: (_well_conditioned(rng, (4, 4), dt), _rand(rng, (4, 2), dt)), True),
    ("qr_r", lambda a: [xsl.qr(a, mode="r")[0], xsl.qr(a.T, mode="economic")[1]],
     lambda a: [np.abs(scipy.linalg.qr(a, mode="r")[0]), np.abs(scipy.linalg.qr(a.T, mode="economic")[1])],
     lambda a: [jsl.qr(a, mode="r")[0], jsl.qr(a.T, mode="economic")[1]], lambda rng, dt: (_rand(rng, (3, 4), dt),),
     False),
    ("eigvals", lambda a: xsl.eigh(a, eigvals_only=True), lambda a: scipy.linalg.eigh(a, eigvals_only=True),
     lambda a: jsl.eigh(a, eigvals_only=True), lambda rng, dt: (_hermitian_pd(rng, (3, 3), dt),), True),
    ("svdvals", lambda a: xsl.svd(a, compute_uv=False), lambda a: scipy.linalg.svd(a, compute_uv=False),
     lambda a: jsl.svd(a, compute_uv=False), lambda rng, dt: (_rand(rng, (3, 4), dt),), False),
    ("inv_det", lambda a: [xsl.inv(a), xsl.det(a)], lambda a: [scipy.linalg.inv(a), scipy.linalg.det(a)],
     lambda a: [jsl.inv(a), jsl.det(a)], lambda rng, dt: (_well_conditioned(rng, (3, 3), dt),), True),
    ("solve", lambda a, b: [xsl.solve(a, b), xsl.solve(a, b, assume_a="pos"),
                            xsl.solve(xnp.tril(a), b, assume_a="pos", lower=True)],
     lambda a, b: [scipy.linalg.solve(a, b), scipy.linalg.solve(a, b, assume_a="pos"),
                   scipy.linalg.solve(np.tril(a), b, assume_a="pos", lower=True)],
     lambda a, b: [jsl.solve(a, b), jsl.solve(a, b, assume_a="pos"),
                   jsl.solve(jnp.tril(a), b, assume_a="pos", lower=True)],
     lambda rng, dt: (_hermitian_pd(rng, (3, 3), dt), _rand(rng, (3, 2), dt)), True),
]
SCIPY_PARAMS = [pytest.param(case, dtype, id=f"{case[0]}-{np.dtype(dtype).name}")
                for case in SCIPY_CASES for dtype in DTYPES if dtype == np.float32 or case[5]]


@pytest.mark.parametrize("case,dtype", SCIPY_PARAMS)
def test_scipy_linalg(rng, case, dtype):
    name, fn, reference, jax_fn, make, _ = case
    args = make(rng, dtype)
    outs = _run(fn, *args)
    _check_avals(outs, jax_fn, *args)
    expected = _leaves(reference(*args))
    if name == "qr_r":
        outs = [np.abs(x) for x in outs]
    assert len(outs) == len(expected)
    for actual, wanted in zip(outs, expected):
        _close(actual, wanted, scale=300)


def test_scipy_factorizations_reconstruct(rng):
    a = _rand(rng, (5, 3), np.complex64)
    outs = _run(lambda a: [xsl.qr(a), xsl.eigh(a.T @ a.conj()), xsl.svd(a)], a)
    q, r, w, v, u, s, vh = outs
    _close(q @ r, a)
    _close((v * w) @ _adjoint(v), np.asarray(a).T @ np.conj(a))
    _close((u[:, :3] * s) @ vh, a)


def test_scipy_linalg_errors():
    with pytest.raises(ValueError, match="solve_triangular: invalid trans"):
        xsl.solve_triangular(np.eye(2, dtype=np.float32), np.ones(2, np.float32), trans=3)
    with pytest.raises(ValueError, match="solve: unsupported assume_a"):
        xsl.solve(np.eye(2, dtype=np.float32), np.ones(2, np.float32), assume_a="tridiagonal")
    with pytest.raises(ValueError, match="cholesky: expected a square matrix"):
        xsl.cholesky(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="cho_solve: b of shape"):
        xsl.cho_solve((np.eye(2, dtype=np.float32), False), np.ones(3, np.float32))


# --- 64-bit ------------------------------------------------------------------------------------------------------
def test_float64_and_complex128_under_x64(rng):
    numax.config.update("numax_enable_x64", True)
    try:
        for dtype in (np.float64, np.complex128):
            a = _well_conditioned(rng, (2, 4, 4), dtype)
            spd = _hermitian_pd(rng, (4, 4), dtype)
            b = _rand(rng, (2, 4, 2), dtype)
            outs = _run(lambda a, spd, b: [xnp.linalg.solve(a, b), xnp.linalg.det(a), xnp.linalg.cholesky(spd),
                                           xnp.linalg.eigvalsh(spd), xnp.linalg.svdvals(a), xnp.linalg.qr(a)[1],
                                           xlinalg.lu(a)[0]], a, spd, b)
            expected = [np.linalg.solve(a, b), np.linalg.det(a), np.linalg.cholesky(spd), np.linalg.eigvalsh(spd),
                        np.linalg.svd(a, compute_uv=False), np.abs(np.linalg.qr(a)[1]), None]
            for i, (actual, wanted) in enumerate(zip(outs, expected)):
                assert actual.dtype in (dtype, np.float64), (i, actual.dtype)
                if wanted is not None:
                    _close(np.abs(actual) if i == 5 else actual, wanted, scale=1e3)
            assert outs[0].dtype == dtype and outs[3].dtype == np.float64
    finally:
        numax.config.update("numax_enable_x64", False)


def test_lowered_module_uses_the_platform_kernels():
    text = numax.jit(xnp.linalg.solve).lower(np.eye(3, dtype=np.float32), np.ones(3, np.float32)).as_text()
    if numax.default_backend() == "cpu":
        assert "lapack_sgetrf_ffi" in text and "lapack_strsm_ffi" in text and "stablehlo.while" in text
    else:
        assert "cusolver_getrf_ffi" in text and "stablehlo.triangular_solve" in text
