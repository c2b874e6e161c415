"""numax.numpy statistics (cov, corrcoef, gradient, trapezoid, unwrap, histogramdd, histogram2d,
mask_indices) and polynomials (poly, polyadd, polysub, polymul, polydiv, polyder, polyint, polyfit, roots)
against jax.numpy (values, dtypes, weak types) and numpy (values), eagerly, under numax.jit and numax.grad."""

import numpy as np
import pytest
from harness import jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.core import dtypes

import numax
import numax.numpy as xnp

_rng = np.random.default_rng(1)
M = _rng.normal(size=(3, 6)).astype(np.float32)
Y2 = _rng.normal(size=(2, 6)).astype(np.float32)
FW = np.array([1, 2, 1, 3, 1, 2], np.int32)
AW = _rng.uniform(0.5, 2.0, 6).astype(np.float32)
MC = (M + 1j * M[::-1]).astype(np.complex64)
F = _rng.normal(size=(4, 6)).astype(np.float32)
XS = np.cumsum(_rng.uniform(0.5, 1.0, 6)).astype(np.float32)
PHASE = _rng.uniform(-10, 10, (3, 6)).astype(np.float32)
SAMPLE = _rng.normal(size=(20, 3)).astype(np.float32)
WEIGHTS = _rng.uniform(size=20).astype(np.float32)
A5 = _rng.normal(size=5).astype(np.float32)
B3 = _rng.normal(size=3).astype(np.float32)
FIT_X = np.linspace(-1, 1, 10).astype(np.float32)
FIT_Y = (FIT_X**2 + 0.1 * _rng.normal(size=10)).astype(np.float32)
FIT_W = _rng.uniform(0.5, 1.5, 10).astype(np.float32)


ON_CPU = numax.default_backend() == "cpu"
# Functions built on the nonsymmetric eigensolver, which (as in jax) has only a CPU kernel.
NEEDS_EIG = {"poly_matrix", "roots_no_strip", "roots"}
# On GPUs, XLA's default matmul precision (jax's too) is TF32-like: products against exact references
# carry ~1e-3 relative error there.
GPU_MATMUL_RTOL = 2e-3


def _expect_eig_error():
    return pytest.raises(NotImplementedError, match="only implemented on the CPU")


def _weak(value):
    return getattr(getattr(value, "aval", value), "weak_type", False)


def check(actual, expected, rtol=1e-5, atol=1e-5):
    """Same structure, shapes, dtypes, weak types and (nan-aware) values as jax's result."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), (type(actual), len(actual))
        for a, e in zip(actual, expected):
            check(a, e, rtol, atol)
        return
    assert isinstance(actual, numax.Array), type(actual)
    assert _weak(actual) == _weak(expected), (_weak(actual), _weak(expected))
    actual_np, expected_np = np.asarray(actual), np.asarray(expected)
    assert actual_np.dtype == expected_np.dtype, (actual_np.dtype, expected_np.dtype)
    assert actual_np.shape == expected_np.shape, (actual_np.shape, expected_np.shape)
    if actual_np.dtype in (dtypes.bfloat16, np.float16):
        actual_np, expected_np = actual_np.astype(np.float32), expected_np.astype(np.float32)
    np.testing.assert_allclose(actual_np, expected_np, rtol=rtol, atol=atol, equal_nan=True)


def check_avals(actual, expected):
    """Same structure, shapes, dtypes and weak types as jax's abstract result."""
    actual, expected = _flatten(actual), _flatten(expected)
    assert len(actual) == len(expected), (len(actual), len(expected))
    for a, e in zip(actual, expected):
        assert isinstance(a, numax.Array), type(a)
        assert (a.shape, np.dtype(a.dtype), _weak(a)) == (e.shape, np.dtype(e.dtype), e.weak_type), (a.aval, e)


# --- results against jax.numpy: (name, function of the namespace, numpy reference or None, tolerance) ---
def _cases():
    """(name, function of the namespace, numpy reference or None, tolerance). Related calls are grouped into
    one case (a tuple of results) so that each case is one compilation."""
    i23 = np.arange(6, dtype=np.int32).reshape(2, 3)
    f16, bf16 = M.astype(np.float16), M.astype(dtypes.bfloat16)
    edges = np.float32([-2, -1, 0, 1, 2])
    two_columns = np.stack([FIT_Y, FIT_X - FIT_Y], 1)
    phase_int = np.array([0, 5, 13, 2, -9, 30], np.int32)
    return [
        ("cov_options", lambda n: (n.cov(M), n.cov(M, bias=True), n.cov(M, ddof=2), n.cov(M.T, rowvar=False),
                                   n.cov(M, Y2), n.cov(M.T, Y2.T, rowvar=False), n.cov(M[0]), n.cov(M[0], M[1])),
         lambda: (np.cov(M), np.cov(M, bias=True), np.cov(M, ddof=2), np.cov(M.T, rowvar=False), np.cov(M, Y2),
                  np.cov(M.T, Y2.T, rowvar=False), np.cov(M[0]), np.cov(M[0], M[1])), 1e-5),
        ("cov_weights", lambda n: (n.cov(M, fweights=FW), n.cov(M, aweights=AW), n.cov(M, fweights=FW, aweights=AW),
                                   n.cov(M, fweights=FW, aweights=AW, ddof=0)),
         lambda: (np.cov(M, fweights=FW), np.cov(M, aweights=AW), np.cov(M, fweights=FW, aweights=AW),
                  np.cov(M, fweights=FW, aweights=AW, ddof=0)), 1e-5),
        ("cov_int_complex", lambda n: (n.cov(i23), n.cov(MC)), lambda: (np.cov(i23), np.cov(MC)), 1e-5),
        ("cov_low_precision", lambda n: (n.cov(f16), n.cov(bf16), n.cov(i23, dtype=np.float16)), None, 5e-2),
        ("cov_empty_nan", lambda n: (n.cov(np.zeros((2, 0), np.float32)), n.cov(np.zeros((1, 0), np.float32)),
                                     n.cov(np.zeros((0, 3), np.float32)),
                                     n.cov(np.float32([[1, np.nan, 2], [1, 2, 4]]))), None, 1e-6),
        ("corrcoef", lambda n: (n.corrcoef(M), n.corrcoef(M, Y2), n.corrcoef(M.T, rowvar=False), n.corrcoef(M[0]),
                                n.corrcoef(MC), n.corrcoef(i23 * i23)),
         lambda: (np.corrcoef(M), np.corrcoef(M, Y2), np.corrcoef(M.T, rowvar=False), np.corrcoef(M[0]),
                  np.corrcoef(MC), np.corrcoef(i23 * i23)), 1e-5),
        ("corrcoef_constant", lambda n: n.corrcoef(np.ones(4, np.float32)), None, 0),
        ("gradient", lambda n: (n.gradient(F), n.gradient(F, 0.5), n.gradient(F, 2.0, XS), n.gradient(F, XS, axis=1),
                                n.gradient(F, axis=(-1, 0)), n.gradient(F[:2], axis=0)),
         lambda: (np.gradient(F), np.gradient(F, 0.5), np.gradient(F, 2.0, XS), np.gradient(F, XS, axis=1),
                  np.gradient(F, axis=(-1, 0)), np.gradient(F[:2], axis=0)), 1e-4),
        ("gradient_edge_order_int", lambda n: (n.gradient(F[0], **({} if n is jnp else {"edge_order": 1})),
                                               n.gradient(np.int32([1, 4, 9, 16, 25]))),
         lambda: (np.gradient(F[0], edge_order=1), np.gradient(np.array([1, 4, 9, 16, 25]))), 1e-5),
        ("gradient_no_axes", lambda n: n.gradient(F, axis=()), None, 0),
        ("gradient_float16", lambda n: (n.gradient(F.astype(np.float16), XS.astype(np.float16), axis=1),
                                        n.gradient(F[0].astype(np.float16), 0.5)), None, 2e-2),
        ("trapezoid", lambda n: (n.trapezoid(F), n.trapezoid(F, dx=0.3, axis=0), n.trapezoid(F, XS),
                                 n.trapezoid(F, np.broadcast_to(XS, F.shape)), n.trapezoid(F.T, XS, axis=0),
                                 n.trapezoid(np.arange(5, dtype=np.int32))),
         lambda: (np.trapezoid(F), np.trapezoid(F, dx=0.3, axis=0), np.trapezoid(F, XS),
                  np.trapezoid(F, np.broadcast_to(XS, F.shape)), np.trapezoid(F.T, XS, axis=0),
                  np.trapezoid(np.arange(5))), 1e-5),
        ("trapezoid_jax_only", lambda n: (n.trapezoid(F, dx=XS[:4, None], axis=1), n.trapezoid(np.ones(1, np.float32)),
                                          n.trapezoid(F.astype(np.float16), dx=0.5)), None, 1e-2),
        ("unwrap", lambda n: (n.unwrap(PHASE), n.unwrap(PHASE, axis=0, period=3.0), n.unwrap(PHASE, discont=4.0),
                              n.unwrap(phase_int, period=8)),
         lambda: (np.unwrap(PHASE), np.unwrap(PHASE, axis=0, period=3.0), np.unwrap(PHASE, discont=4.0),
                  np.unwrap(phase_int, period=8)), 1e-4),
        # An odd integer period: JAX (followed here) maps a step of +period//2 + 1 past the boundary, unlike numpy;
        # an int input with the default float period is float32 (not weakly typed), as in JAX.
        ("unwrap_jax_only", lambda n: (n.unwrap(phase_int, period=7), n.unwrap(phase_int[:4]),
                                       n.unwrap(np.float32([0.0, np.pi, 0.0, -np.pi])),
                                       n.unwrap(np.zeros((2, 0), np.float32))), None, 1e-5),
        ("unwrap_float16", lambda n: n.unwrap(PHASE.astype(np.float16)), None, 2e-2),
        ("histogramdd", lambda n: (n.histogramdd(SAMPLE),
                                   n.histogramdd(SAMPLE, bins=(3, 4, 5), weights=WEIGHTS, density=True),
                                   n.histogramdd(SAMPLE, bins=4, range=[(-1, 1), None, (0, 2)])),
         lambda: (np.histogramdd(SAMPLE), np.histogramdd(SAMPLE, bins=(3, 4, 5), weights=WEIGHTS, density=True),
                  np.histogramdd(SAMPLE, bins=4, range=[(-1, 1), None, (0, 2)])), 1e-4),
        ("histogramdd_int", lambda n: n.histogramdd(np.int32([[0, 1], [2, 3], [4, 4], [1, 0]]), bins=2), None, 1e-6),
        ("histogram2d", lambda n: (n.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1]),
                                   n.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1], bins=edges),
                                   n.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1], bins=[3, edges[::2]], weights=WEIGHTS,
                                                 density=True)),
         lambda: (np.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1]), np.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1], bins=edges),
                  np.histogram2d(SAMPLE[:, 0], SAMPLE[:, 1], bins=[3, edges[::2]], weights=WEIGHTS, density=True)),
         1e-4),
        ("mask_indices_triu", lambda n: n.mask_indices(4, n.triu, 1), lambda: np.mask_indices(4, np.triu, 1), 0),
        ("mask_indices_tril_size", lambda n: n.mask_indices(3, n.tril, size=8), None, 0),
        ("poly", lambda n: (n.poly(A5), n.poly(np.int32([1, 2, 3])), n.poly(np.zeros(0, np.float32)),
                            n.poly(MC[0, :3])),
         lambda: (np.poly(A5), np.poly([1, 2, 3]), np.poly(np.zeros(0)), np.poly(MC[0, :3])), 1e-4),
        ("poly_matrix", lambda n: n.poly(M[:, :3]), None, 1e-4),
        ("polyadd_polysub", lambda n: (n.polyadd(A5, B3), n.polyadd(B3, A5), n.polyadd(np.int32([1, 2, 3]),
                                                                                    np.int32([4, 5])),
                                       n.polysub(A5, B3), n.polysub(np.int32([4, 5]), np.int32([1, 2, 3]))),
         lambda: (np.polyadd(A5, B3), np.polyadd(B3, A5), np.polyadd([1, 2, 3], [4, 5]), np.polysub(A5, B3),
                  np.polysub([4, 5], [1, 2, 3])), 1e-6),
        ("polyadd_mixed", lambda n: n.polyadd(np.int32([1, 2, 3]), B3.astype(np.float16)), None, 1e-3),
        ("polymul", lambda n: (n.polymul(A5, B3), n.polymul(np.int32([1, 2]), np.int32([1, 3, 1]))),
         lambda: (np.polymul(A5, B3), np.polymul([1, 2], [1, 3, 1])), 1e-5),
        ("polymul_trim", lambda n: n.polymul(np.float32([0, 0, 1, 2]), B3, trim_leading_zeros=True),
         lambda: np.polymul(np.float32([0, 0, 1, 2]), B3), 1e-5),
        ("polymul_untrimmed", lambda n: n.polymul(np.float32([0, 0, 1, 2]), B3), None, 1e-5),
        ("polydiv", lambda n: n.polydiv(A5, B3), lambda: np.polydiv(A5, B3), 1e-4),
        ("polydiv_jax_only", lambda n: (n.polydiv(B3, A5), n.polydiv(np.int32([1, 3, 5, 3]), np.int32([1, 1]))),
         None, 1e-5),
        # JAX trims an all-zero remainder to length 0 (numpy keeps one zero).
        ("polydiv_trim", lambda n: n.polydiv(np.float32([1, 3, 5, 3]), np.float32([1, 1]), trim_leading_zeros=True),
         None, 1e-5),
        ("polyder_polyint", lambda n: (n.polyder(A5), n.polyder(A5, 3), n.polyder(A5, 0),
                                       n.polyder(np.int32([1, 2, 3, 4]), 2), n.polyint(A5), n.polyint(A5, 3, k=2.0),
                                       n.polyint(A5, 2, k=np.float32([1, 2])), n.polyint(np.int32([3, 2, 1]))),
         lambda: (np.polyder(A5), np.polyder(A5, 3), np.polyder(A5, 0), np.polyder([1, 2, 3, 4], 2), np.polyint(A5),
                  np.polyint(A5, 3, k=2.0), np.polyint(A5, 2, k=[1, 2]), np.polyint([3, 2, 1])), 1e-5),
        ("polyder_polyint_jax_only", lambda n: (n.polyder(B3, 3), n.polyint(A5, 0), n.polyint(A5, 1, k=3)), None, 1e-6),
        ("polyfit", lambda n: (n.polyfit(FIT_X, FIT_Y, 2), n.polyfit(FIT_X, FIT_Y, 3, w=FIT_W),
                               n.polyfit(FIT_X, two_columns, 2, w=FIT_W)),
         lambda: (np.polyfit(FIT_X, FIT_Y, 2), np.polyfit(FIT_X, FIT_Y, 3, w=FIT_W),
                  np.polyfit(FIT_X, two_columns, 2, w=FIT_W)), 1e-3),
        ("polyfit_full_cov", lambda n: (n.polyfit(FIT_X, FIT_Y, 2, rcond=0.5, full=True),
                                        n.polyfit(FIT_X, FIT_Y, 2, cov="unscaled"),
                                        n.polyfit(FIT_X, two_columns, 2, cov=True)), None, 1e-4),
        ("roots_no_strip", lambda n: (n.roots(np.float32([0, 0, 1, -3, 2]), strip_zeros=False),
                                      n.roots(np.zeros(3, np.float32), strip_zeros=False)), None, 1e-4),
        ("roots_constant", lambda n: (n.roots(np.float32([2])), n.roots(np.float32(2))),
         lambda: (np.roots(np.float32([2])), np.roots(np.float32([2]))), 0),
    ]


# Cases whose result size depends on values run eagerly (jax.jit rejects them too); the others run under
# numax.jit (one compile per case).
_EAGER = {"mask_indices_triu", "polydiv_trim", "polymul_trim"}


def _flatten(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


@pytest.mark.parametrize("name,fn,reference,tol", _cases(), ids=[c[0] for c in _cases()])
def test_matches_jax_and_numpy(name, fn, reference, tol):
    """Structure, dtypes and weak types as jax.numpy's; values as numpy's where they agree with JAX, else as
    jax.numpy's."""
    if not ON_CPU:
        if name in NEEDS_EIG:
            with _expect_eig_error():
                numax.jit(lambda: fn(xnp))()
            return
        if name in ("cov_int_complex", "corrcoef"):
            tol = max(tol, GPU_MATMUL_RTOL)
    if name in _EAGER:
        actual = fn(xnp)
        check(actual, fn(jnp), rtol=tol, atol=tol)
    else:
        actual = numax.jit(lambda: fn(xnp))()
        if reference is None:
            check(actual, jax.jit(lambda: fn(jnp))(), rtol=tol, atol=tol)
        else:
            check_avals(actual, jax.eval_shape(lambda: fn(jnp)))
    if reference is not None:
        actual, expected = _flatten(actual), _flatten(reference())
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(np.asarray(a), e, rtol=max(tol, 1e-6), atol=max(tol, 1e-6))


def _sorted_roots(values):
    values = np.asarray(values)
    return values[np.lexsort((np.round(values.imag, 3), np.round(values.real, 3)))]


@pytest.mark.parametrize("coefficients", [
    np.float32([0, 0, 2, 0, -8, 1]),
    np.complex64([1, 1j, 2]),
], ids=["leading_zeros", "complex"])
def test_roots(coefficients):
    if not ON_CPU:
        with _expect_eig_error():
            xnp.roots(coefficients)
        return
    actual, expected = xnp.roots(coefficients), jnp.roots(coefficients)
    assert np.asarray(actual).dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(_sorted_roots(actual), _sorted_roots(expected), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_sorted_roots(actual), _sorted_roots(np.roots(coefficients)), rtol=1e-4, atol=1e-4)
    # Each root is a root: the polynomial vanishes there.
    np.testing.assert_allclose(np.polyval(coefficients, np.asarray(actual)), 0, atol=1e-3)


# --- traced arguments under numax.jit, and eager execution ---
def _poly_arithmetic(n, a):
    return (n.polysub(n.polyadd(a, B3), A5), n.polymul(a, B3), n.polydiv(a, B3),
            n.polyder(n.polyint(a, 2, k=1.5), 1))


# Traced (not constant) inputs; test_vmap_under_jit covers the other functions with traced inputs.
_jit_cases = [
    ("cov_weights", lambda n, a: n.cov(a, fweights=FW, aweights=AW), M),
    ("histogramdd", lambda n, a: n.histogramdd(a, bins=3, weights=WEIGHTS, density=True), SAMPLE),
    ("mask_indices", lambda n, a: n.mask_indices(4, n.triu, -1, size=12), M),
    ("poly", lambda n, a: n.poly(a), A5),
    ("poly_arithmetic", _poly_arithmetic, A5),
    ("polyfit", lambda n, a: n.polyfit(FIT_X, a, 2, cov=True), FIT_Y),
    ("roots", lambda n, a: n.roots(a, strip_zeros=False), np.float32([0, 1, -3, 2])),
]


@pytest.mark.parametrize("name,fn,arg", _jit_cases, ids=[c[0] for c in _jit_cases])
def test_traced_arguments_under_jit(name, fn, arg):
    if not ON_CPU and name in NEEDS_EIG:
        with _expect_eig_error():
            numax.jit(lambda a: fn(xnp, a))(arg)
        return
    check(numax.jit(lambda a: fn(xnp, a))(arg), jax.jit(lambda a: fn(jnp, a))(arg), 1e-4, 1e-4)


# Eager execution compiles every primitive alone: a few cases cover that path.
_eager_cases = [c for c in _jit_cases if c[0] in ("cov_weights", "poly_arithmetic")]


@pytest.mark.parametrize("name,fn,arg", _eager_cases, ids=[c[0] for c in _eager_cases])
def test_eager(name, fn, arg):
    check(fn(xnp, arg), jax.jit(lambda a: fn(jnp, a))(arg), 1e-4, 1e-4)


def test_vmap_under_jit():
    batch = np.random.default_rng(2).normal(size=(4, 3, 6)).astype(np.float32)
    grid = np.linspace(0, 1, 6).astype(np.float32)

    def several(n, a):
        return (n.cov(a), n.corrcoef(a), n.gradient(a, axis=1), n.trapezoid(a, grid), n.unwrap(5 * a),
                n.polyfit(grid, a.T, 2), n.histogram2d(a[0], a[1], bins=3)[0], n.polydiv(a[0], a[1, :3]))

    check(numax.jit(numax.vmap(lambda a: several(xnp, a)))(batch), jax.jit(jax.vmap(lambda a: several(jnp, a)))(batch),
          1e-3, 1e-3)


def test_jit_needs_static_sizes():
    with pytest.raises(numax.ConcretizationTypeError, match="strip_zeros=False"):
        numax.jit(xnp.roots)(np.float32([1, 2, 3]))
    with pytest.raises(numax.ConcretizationTypeError, match="trim_leading_zeros"):
        numax.jit(lambda u: xnp.polydiv(u, B3, trim_leading_zeros=True))(A5)
    with pytest.raises(numax.ConcretizationTypeError, match="size"):
        numax.jit(lambda a: xnp.mask_indices(3, lambda m, k: xnp.triu(m * a[0], k)))(A5)


# --- gradients against jax.grad ---
_COEFFS = np.arange(9, dtype=np.float32).reshape(3, 3)
_grad_cases = [
    ("cov_corrcoef", lambda n, a: ((n.cov(a, aweights=AW) ** 2).sum() + (n.corrcoef(a) * _COEFFS).sum()
                                   + (n.cov(a.T, rowvar=False, fweights=FW) * _COEFFS).sum()), M),
    ("gradient", lambda n, a: (n.gradient(a, 1.0, XS)[1] ** 2).sum(), F),
    ("gradient_coordinates", lambda n, a: (n.gradient(F, a, axis=1) ** 2).sum(), XS),
    ("trapezoid", lambda n, a: (n.trapezoid(a, XS) ** 2).sum(), F),
    ("trapezoid_x", lambda n, a: n.trapezoid(F, a).sum(), XS),
    ("polyfit_x_y", lambda n, a: (n.polyfit(a[:10], a[10:], 2, w=FIT_W) ** 2).sum(), np.concatenate([FIT_X, FIT_Y])),
    ("unwrap_poly_polydiv", lambda n, a: ((n.unwrap(a * 3) * np.arange(5)).sum() + (n.poly(a) ** 2).sum()
                                          + (n.polydiv(a, B3)[1] ** 2).sum()), A5),
]


@pytest.mark.parametrize("name,fn,arg", _grad_cases, ids=[c[0] for c in _grad_cases])
def test_grad_matches_jax(name, fn, arg):
    actual = numax.jit(numax.grad(lambda a: fn(xnp, a)))(arg)
    expected = jax.jit(jax.grad(lambda a: fn(jnp, a)))(arg)
    check(actual, expected, 1e-3, 1e-3)


def test_grad_float64(x64):
    # The same derivatives in float64 agree with central finite differences.
    data = np.random.default_rng(3).normal(size=(2, 5))

    @numax.jit
    def loss(a):
        return (xnp.corrcoef(a) * np.float64([[0, 1], [2, 0]])).sum() + xnp.trapezoid(a, np.arange(5.0) ** 2).sum()

    grad = np.asarray(numax.jit(numax.grad(loss))(data))
    assert grad.dtype == np.float64
    step, numeric = 1e-6, np.zeros_like(data)
    for index in np.ndindex(data.shape):
        bump = np.zeros_like(data)
        bump[index] = step
        numeric[index] = (float(loss(data + bump)) - float(loss(data - bump))) / (2 * step)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


@settings(max_examples=4)
@given(n_vars=st.integers(1, 3), n_obs=st.integers(2, 5), rowvar=st.booleans(), bias=st.booleans())
def test_cov_corrcoef_shapes(n_vars, n_obs, rowvar, bias):
    data = np.random.default_rng(n_vars * 10 + n_obs).normal(size=(n_vars, n_obs)).astype(np.float32)
    data = data if rowvar else data.T
    cov, corrcoef = numax.jit(lambda d: (xnp.cov(d, rowvar=rowvar, bias=bias), xnp.corrcoef(d, rowvar=rowvar)))(data)
    np.testing.assert_allclose(cov, np.cov(data, rowvar=rowvar, bias=bias), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(corrcoef, np.corrcoef(data, rowvar=rowvar), rtol=1e-5, atol=1e-5)
    assert cov.shape == corrcoef.shape == (() if n_vars == 1 else (n_vars, n_vars))


# --- errors ---
_error_cases = [
    (lambda: xnp.cov(np.zeros((2, 2, 2))), ValueError, "m has more than 2 dimensions"),
    (lambda: xnp.cov(M, np.zeros((1, 2, 6))), ValueError, "y has more than 2 dimensions"),
    (lambda: xnp.cov(M, fweights=AW), TypeError, "fweights must be integer"),
    (lambda: xnp.cov(M, fweights=FW[:3]), RuntimeError, "incompatible numbers of samples and fweights"),
    (lambda: xnp.cov(M, aweights=np.ones((2, 6))), RuntimeError, "cannot handle multidimensional aweights"),
    (lambda: xnp.cov(M, dtype=np.int32), ValueError, "dtype must be a subclass of float or complex"),
    (lambda: xnp.cov([[1.0, 2.0]]), TypeError, "requires ndarray or scalar arguments"),
    (lambda: xnp.corrcoef(M, dtype=np.int32), ValueError, "dtype must be a subclass of float or complex"),
    (lambda: xnp.gradient(F, edge_order=2), NotImplementedError, "edge_order=1"),
    (lambda: xnp.gradient(F[:1]), ValueError, "at least 2 elements are required"),
    (lambda: xnp.gradient(F, XS[:3], axis=1), ValueError, "same length as the dimension"),
    (lambda: xnp.gradient(F, np.ones((6, 1)), axis=1), ValueError, "Spacing arrays must be 1D arrays or scalars"),
    (lambda: xnp.gradient(F, 1.0, 2.0, 3.0), TypeError, "Invalid number of spacing arguments 3"),
    (lambda: xnp.gradient(F, axis=2), ValueError, "out of bounds"),
    (lambda: xnp.unwrap(MC), ValueError, "does not support complex inputs"),
    (lambda: xnp.histogramdd(SAMPLE, weights=WEIGHTS[:5]), ValueError, "one weight for each sample"),
    (lambda: xnp.histogramdd(SAMPLE, bins=(2, 3)), ValueError, "a bin for each dimension"),
    (lambda: xnp.histogramdd(SAMPLE, range=[(0, 1)]), ValueError, "range must be a sequence of 3 pairs"),
    (lambda: xnp.poly(np.zeros((2, 3), np.float32)), ValueError, "1d or non-empty square 2d"),
    (lambda: xnp.polyder(A5, -1), ValueError, "Order of derivative must be positive"),
    (lambda: xnp.polyint(A5, -1), ValueError, "Order of integral must be positive"),
    (lambda: xnp.polyint(A5, 3, k=np.float32([1, 2])), ValueError, "k must be a scalar or a rank-1 array"),
    (lambda: xnp.polyfit(FIT_X, FIT_Y, -1), ValueError, "expected deg >= 0"),
    (lambda: xnp.polyfit(FIT_X[:, None], FIT_Y, 1), TypeError, "expected 1D vector for x"),
    (lambda: xnp.polyfit(FIT_X[:0], FIT_Y[:0], 1), TypeError, "non-empty vector for x"),
    (lambda: xnp.polyfit(FIT_X, FIT_Y[:5], 1), TypeError, "same length"),
    (lambda: xnp.polyfit(FIT_X, np.zeros((10, 1, 1)), 1), TypeError, "1D or 2D array for y"),
    (lambda: xnp.polyfit(FIT_X, FIT_Y, 1, w=FIT_W[:4]), TypeError, "w and y to have the same length"),
    (lambda: xnp.polyfit(FIT_X[:3], FIT_Y[:3], 2, cov=True), ValueError, "must exceed order"),
    (lambda: xnp.roots(np.zeros((2, 2), np.float32)), ValueError, "rank-1"),
    (lambda: xnp.mask_indices(2.5, xnp.triu), TypeError, "integer"),
]


@pytest.mark.parametrize("fn,error,message", _error_cases, ids=[f"{c[1].__name__}:{c[2][:30]}" for c in _error_cases])
def test_errors(fn, error, message):
    with pytest.raises(error, match=message):
        fn()
