"""Derivatives of contractions, convolutions, linear algebra and host callbacks.

dot_general and conv_general_dilated are bilinear: their JVPs and transposes are checked against finite
differences (check_grads, float64) and against jax.vjp of the same jax.lax op (float32), over dimension
numbers, strides, padding, dilations and feature / batch groups. The factorizations (cholesky, lu, qr, eigh,
svd, eig, triangular_solve) and numpy.linalg's solve, inv, det and slogdet are checked the same way, real and
complex; eigenvectors and singular vectors only through quantities that do not depend on their phase (eig's
eigenvectors only with enable_eigvec_derivs, as in JAX). Last: debug_callback runs under differentiation,
pure_callback refuses it with JAX's message.
"""

import functools

import numpy as np
import pytest
from harness import jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax as jlax
from oracle import jit_all

import numax
import numax.numpy as xnp
from numax import lax
from numax.test_util import check_grads

xlinalg = lax.linalg


def assert_tree_close(actual, expected, tol):
    actual, expected = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        wide = np.complex128 if np.iscomplexobj(e) else np.float64
        np.testing.assert_allclose(a.astype(wide), e.astype(wide), rtol=tol, atol=tol)


def random_like(rng, x):
    x = np.asarray(x)
    value = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        value = value + 1j * rng.standard_normal(x.shape)
    return value.astype(x.dtype)


def derivative_inputs(jax_fn, args, rng):
    """(args, random output cotangents, random tangents), drawn from `rng`."""
    out_shapes = jax.eval_shape(jax_fn, *args)
    cotangent = jax.tree_util.tree_map(lambda x: random_like(rng, np.zeros(x.shape, x.dtype)), out_shapes)
    return args, cotangent, tuple(random_like(rng, a) for a in args)


def derivatives(vjp, jvp, fn):
    def run(args, cotangent, tangents):
        out, pullback = vjp(fn, *args)
        return out, pullback(cotangent), jvp(fn, args, tangents)[1]
    return run


def jax_derivatives(cases):
    """JAX's side of compare_vjp_with_jax for each (jax_fn, args, rng) of a table, from one jax.jit program."""
    return jit_all([derivatives(jax.vjp, jax.jvp, fn) for fn, _, _ in cases],
                   [derivative_inputs(fn, args, rng) for fn, args, rng in cases])


def compare_vjp_with_jax(numax_fn, jax_fn, args, rng, tol=2e-4, jit=True, expected=None):
    """numax.vjp against jax.vjp for random output cotangents, and numax.jvp against jax.jvp.

    With `jit`, numax's side runs as one compiled program (the rules traced into it), which costs one
    compilation instead of one per primitive; check_grads covers eager execution. `expected`: JAX's
    results when a table computed them already (jax_derivatives, from the same draws of `rng`)."""
    inputs = derivative_inputs(jax_fn, args, rng)
    if expected is None:
        expected = jax.jit(derivatives(jax.vjp, jax.jvp, jax_fn))(*inputs)
    run = derivatives(numax.vjp, numax.jvp, numax_fn)
    actual = (numax.jit(run) if jit else run)(*inputs)
    assert_tree_close(actual, expected, tol)


# --- dot_general -------------------------------------------------------------------------------------------
# (lhs shape, rhs shape, ((lhs contracting, rhs contracting), (lhs batch, rhs batch)))
DOT_CASES = [
    ((3,), (3,), (((0,), (0,)), ((), ()))),
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((3, 2), (4, 3), (((0,), (1,)), ((), ()))),
    ((2, 3), (4,), (((), ()), ((), ()))),  # outer product
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),  # batch dims not leading
    ((2, 3, 4, 5), (4, 2, 3, 6), (((1, 2), (2, 0)), ((0,), (1,)))),  # contracting pairs in crossed order
    ((2, 5, 3, 4), (4, 3, 2), (((3, 2), (0, 1)), ((0,), (2,)))),
    ((2, 3, 4), (3, 2, 4), (((), ()), ((0, 1), (1, 0)))),  # batch only
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,numbers", DOT_CASES)
def test_dot_general_check_grads(lhs_shape, rhs_shape, numbers, x64, rng):
    x, y = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
    check_grads(lambda a, b: lax.dot_general(a, b, numbers), (x, y), order=2, modes=("fwd", "rev"))


def float32_pair(rng, lhs_shape, rhs_shape):
    return rng.standard_normal(lhs_shape).astype(np.float32), rng.standard_normal(rhs_shape).astype(np.float32)


# Each table below has its JAX side computed by one program, with the draws of a fresh rng fixture
# (np.random.default_rng(0)) per case, as the test makes them.
@functools.cache
def expected_dot_general():
    cases = []
    for lhs_shape, rhs_shape, numbers in DOT_CASES:
        rng = np.random.default_rng(0)
        cases.append((lambda a, b, numbers=numbers: jlax.dot_general(a, b, numbers),
                      float32_pair(rng, lhs_shape, rhs_shape), rng))
    return jax_derivatives(cases)


@pytest.mark.parametrize("lhs_shape,rhs_shape,numbers", DOT_CASES)
def test_dot_general_matches_jax(lhs_shape, rhs_shape, numbers, rng):
    expected = expected_dot_general()[DOT_CASES.index((lhs_shape, rhs_shape, numbers))]
    compare_vjp_with_jax(lambda a, b: lax.dot_general(a, b, numbers), lambda a, b: jlax.dot_general(a, b, numbers),
                         float32_pair(rng, lhs_shape, rhs_shape), rng, expected=expected)


@st.composite
def dot_problems(draw):
    """Random shapes and dimension numbers: batch, contracting and free dimensions shuffled in each operand."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    contract = draw(st.lists(st.integers(1, 3), max_size=2))
    lhs_free = draw(st.lists(st.integers(1, 3), max_size=2))
    rhs_free = draw(st.lists(st.integers(1, 3), max_size=1))

    def layout(free):
        kinds = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + [
            ("f", i) for i in range(len(free))]
        order = draw(st.permutations(kinds))
        sizes = {"b": batch, "c": contract, "f": free}
        shape = tuple(sizes[kind][i] for kind, i in order)
        return shape, {item: position for position, item in enumerate(order)}

    (lhs_shape, lhs_at), (rhs_shape, rhs_at) = layout(lhs_free), layout(rhs_free)
    numbers = ((tuple(lhs_at[("c", i)] for i in range(len(contract))),
                tuple(rhs_at[("c", i)] for i in range(len(contract)))),
               (tuple(lhs_at[("b", i)] for i in range(len(batch))), tuple(rhs_at[("b", i)] for i in range(len(batch)))))
    return lhs_shape, rhs_shape, numbers


@settings(max_examples=6)
@given(dot_problems())
def test_dot_general_hypothesis(problem):
    lhs_shape, rhs_shape, numbers = problem
    rng = np.random.default_rng(len(lhs_shape) * 7 + len(rhs_shape))
    x = rng.standard_normal(lhs_shape).astype(np.float32)
    y = rng.standard_normal(rhs_shape).astype(np.float32)
    compare_vjp_with_jax(lambda a, b: lax.dot_general(a, b, numbers),
                         lambda a, b: jlax.dot_general(a, b, numbers), (x, y), rng)


def test_dot_general_preferred_element_type(rng):
    # bfloat16 operands accumulated in float32: tangents are float32, cotangents come back as bfloat16.
    x = rng.standard_normal((3, 4)).astype(jnp.bfloat16)
    y = rng.standard_normal((4, 2)).astype(jnp.bfloat16)
    numbers = (((1,), (0,)), ((), ()))
    numax_fn = lambda a, b: lax.dot_general(a, b, numbers, preferred_element_type=np.float32)
    jax_fn = lambda a, b: jlax.dot_general(a, b, numbers, preferred_element_type=np.float32)
    compare_vjp_with_jax(numax_fn, jax_fn, (x, y), rng, tol=3e-2)
    grads = numax.grad(lambda a, b: numax_fn(a, b).sum(), argnums=(0, 1))(x, y)
    assert [np.asarray(g).dtype for g in grads] == [jnp.bfloat16, jnp.bfloat16]
    # Integer operands have no tangent: only float0 zeros come back.
    xi, yi = np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((3, 2), np.int32)
    grad = numax.grad(lambda a: lax.dot_general(a, yi, numbers, preferred_element_type=np.float32).sum(),
                      allow_int=True)(xi)
    assert np.asarray(grad).dtype == jax.dtypes.float0


def test_dot_general_complex(rng):
    # Transposes are plain transposes (no conjugation), as in JAX.
    x = (rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))).astype(np.complex64)
    y = (rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))).astype(np.complex64)
    numbers = (((2,), (1,)), ((0,), (0,)))
    compare_vjp_with_jax(lambda a, b: lax.dot_general(a, b, numbers), lambda a, b: jlax.dot_general(a, b, numbers),
                         (x, y), rng, jit=False)


def test_dot_general_under_jit(rng):
    x, y = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    numbers = (((2,), (1,)), ((0,), (0,)))
    loss = lambda a, b: (lax.dot_general(a, b, numbers) ** 2).sum()
    expected = jax.jit(jax.grad(lambda a, b: (jlax.dot_general(a, b, numbers) ** 2).sum(), argnums=(0, 1)))(x, y)
    for fn in (numax.jit(numax.grad(loss, argnums=(0, 1))), numax.grad(numax.jit(loss), argnums=(0, 1))):
        assert_tree_close(fn(x, y), expected, 1e-4)


# --- numpy contractions ----------------------------------------------------------------------------------
NUMPY_CONTRACTIONS = [
    ("matmul", lambda np_, a, b: np_.matmul(a, b), (2, 3, 4), (4, 5)),
    ("matmul_vector", lambda np_, a, b: np_.matmul(a, b), (3, 4), (4,)),
    ("matmul_batched", lambda np_, a, b: a @ b, (2, 1, 3, 4), (3, 4, 2)),
    ("einsum", lambda np_, a, b: np_.einsum("bij,bjk->bik", a, b), (2, 3, 4), (2, 4, 5)),
    ("einsum_trace", lambda np_, a, b: np_.einsum("ii,jk->jk", a, b), (3, 3), (2, 2)),
    ("einsum_three", lambda np_, a, b: np_.einsum("ij,jk,kl->il", a, b, b.T), (2, 3), (3, 3)),
    ("tensordot", lambda np_, a, b: np_.tensordot(a, b, axes=([1, 2], [0, 2])), (2, 3, 4), (3, 5, 4)),
    ("tensordot_int", lambda np_, a, b: np_.tensordot(a, b, axes=1), (2, 3), (3, 4)),
    ("dot", lambda np_, a, b: np_.dot(a, b), (2, 3), (3,)),
    ("vdot_inner", lambda np_, a, b: np_.inner(a, b), (2, 3), (4, 3)),
]


@functools.cache
def expected_numpy_contractions():
    cases = []
    for _, fn, lhs_shape, rhs_shape in NUMPY_CONTRACTIONS:
        rng = np.random.default_rng(0)
        cases.append((lambda a, b, fn=fn: fn(jnp, a, b), float32_pair(rng, lhs_shape, rhs_shape), rng))
    return dict(zip([c[0] for c in NUMPY_CONTRACTIONS], jax_derivatives(cases)))


@pytest.mark.parametrize("name,fn,lhs_shape,rhs_shape", NUMPY_CONTRACTIONS, ids=[c[0] for c in NUMPY_CONTRACTIONS])
def test_numpy_contractions_match_jax(name, fn, lhs_shape, rhs_shape, rng):
    compare_vjp_with_jax(lambda a, b: fn(xnp, a, b), lambda a, b: fn(jnp, a, b),
                         float32_pair(rng, lhs_shape, rhs_shape), rng, expected=expected_numpy_contractions()[name])


def test_numpy_einsum_check_grads(x64, rng):
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3))
    check_grads(lambda a, b: xnp.einsum("bij,jk,ki->b", a, b, a[0] @ b), (x, y), order=2)


# --- conv_general_dilated --------------------------------------------------------------------------------
# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, feature groups,
#  batch groups)
CONV_CASES = [
    ((2, 3, 9), (4, 3, 3), (1,), "VALID", (1,), (1,), None, 1, 1),
    ((2, 3, 9), (4, 3, 3), (2,), "SAME", (1,), (1,), None, 1, 1),
    ((2, 3, 10), (4, 3, 3), (3,), "VALID", (1,), (2,), None, 1, 1),  # trailing inputs feed no output
    ((2, 3, 8), (4, 3, 2), (2,), ((2, 1),), (2,), (1,), None, 1, 1),  # lhs dilation, explicit padding
    ((1, 2, 6), (2, 2, 3), (1,), ((-1, 2),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),  # negative padding
    ((2, 4, 7), (6, 2, 3), (1,), "SAME", (1,), (1,), ("NCH", "OIH", "NCH"), 2, 1),
    ((4, 3, 7), (6, 3, 2), (2,), "VALID", (1,), (1,), ("NCH", "OIH", "NCH"), 1, 2),
    ((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), "SAME", (1, 1), (1, 2), ("NCHW", "OIHW", "NCHW"), 1, 1),
    ((2, 7, 6, 4), (3, 2, 4, 6), (2, 1), ((2, 0), (1, 1)), (1, 2), (1, 1), ("NHWC", "HWIO", "NHWC"), 1, 1),
    ((2, 7, 6, 4), (3, 2, 2, 6), (1, 2), "SAME", (1, 1), (2, 1), ("NHWC", "HWIO", "NHWC"), 2, 1),
    ((4, 7, 6, 4), (3, 2, 4, 6), (2, 1), "VALID", (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC"), 1, 2),
    ((2, 5, 6, 4), (6, 3, 2, 2), (1, 1), ((1, 0), (0, 1)), (2, 1), (1, 1), ("NHCW", "OHIW", "CWNH"), 3, 1),
]


def conv_args(case):
    lhs_shape, rhs_shape, strides, padding, lhs_dilation, rhs_dilation, numbers, groups, batch_groups = case
    return dict(window_strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                dimension_numbers=numbers, feature_group_count=groups, batch_group_count=batch_groups)


@functools.cache
def expected_conv():
    cases = []
    for case in CONV_CASES:
        rng, params = np.random.default_rng(0), conv_args(case)
        cases.append((lambda a, b, params=params: jlax.conv_general_dilated(a, b, **params),
                      float32_pair(rng, case[0], case[1]), rng))
    return jax_derivatives(cases)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_jax(case, rng):
    params = conv_args(case)
    compare_vjp_with_jax(lambda a, b: lax.conv_general_dilated(a, b, **params),
                         lambda a, b: jlax.conv_general_dilated(a, b, **params), float32_pair(rng, case[0], case[1]),
                         rng, expected=expected_conv()[CONV_CASES.index(case)])


@pytest.mark.parametrize("case", [CONV_CASES[i] for i in (1, 3, 5, 6, 9)])
def test_conv_check_grads(case, x64, rng):
    x, w = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    params = conv_args(case)
    check_grads(lambda a, b: lax.conv_general_dilated(a, b, **params), (x, w), order=1)


def test_conv_second_order(x64, rng):
    x, w = rng.standard_normal((1, 2, 6)), rng.standard_normal((2, 2, 3))
    conv = lambda a, b: lax.conv_general_dilated(a, b, (2,), "SAME", rhs_dilation=(2,))
    check_grads(conv, (x, w), order=2)


def test_conv_wrappers_and_jit(rng):
    x = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 3)).astype(np.float32)
    numbers = ("NHWC", "HWIO", "NHWC")
    loss = lambda lax_, a, b: (lax_.conv_transpose(a, b, (2, 2), "SAME", dimension_numbers=numbers) ** 2).sum()
    expected = jax.jit(jax.grad(lambda a, b: loss(jlax, a, b), argnums=(0, 1)))(x, w)
    grad = numax.grad(lambda a, b: loss(lax, a, b), argnums=(0, 1))
    assert_tree_close(grad(x, w), expected, 1e-3)
    assert_tree_close(numax.jit(grad)(x, w), expected, 1e-3)


def test_conv_preferred_element_type(rng):
    # bfloat16 operands accumulated in float32: float32 tangents, bfloat16 cotangents (as in JAX).
    x = rng.standard_normal((2, 3, 8)).astype(jnp.bfloat16)
    w = rng.standard_normal((4, 3, 3)).astype(jnp.bfloat16)
    params = dict(window_strides=(2,), padding="SAME", preferred_element_type=np.float32)
    compare_vjp_with_jax(lambda a, b: lax.conv_general_dilated(a, b, **params),
                         lambda a, b: jlax.conv_general_dilated(a, b, **params), (x, w), rng, tol=3e-2, jit=False)


def test_conv_empty_output_has_zero_kernel_cotangent(rng):
    x = rng.standard_normal((0, 2, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2)).astype(np.float32)
    out, pullback = numax.vjp(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"), x, w)
    assert out.shape == (0, 3, 4)
    ct_x, ct_w = pullback(np.zeros(out.shape, np.float32))
    assert ct_x.shape == x.shape and np.array_equal(np.asarray(ct_w), np.zeros_like(w))


# --- linear algebra -----------------------------------------------------------------------------------------
def well_conditioned(rng, shape, dtype=np.float64):
    """Random matrices near the identity (times 3): far from singular, with well-separated pivots."""
    return (3 * np.eye(*shape[-2:]) + rng.uniform(-1, 1, shape)).astype(dtype)


def positive_definite(rng, shape, dtype=np.float64):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def distinct_spectrum(rng, shape):
    """A symmetric matrix with eigenvalues 1, 2, ..., n in a random basis."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    return q @ (np.arange(1, n + 1, dtype=np.float64)[:, None] * np.swapaxes(q, -1, -2))


def tall(rng, shape):
    """Matrices with well-separated singular values (1.5, 2.5, ...)."""
    m, n = shape[-2:]
    u, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, m)))
    v, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, n)))
    s = np.zeros(shape)
    k = min(m, n)
    s[..., np.arange(k), np.arange(k)] = np.arange(k) + 1.5
    return u @ s @ v


def eigh_invariants(np_, linalg):
    def fn(x):
        w, v = linalg.eigh(x)
        # v diag(w^2) v^T and the squared entries of v do not depend on the eigenvectors' signs.
        return np_.matmul(v * w[..., None, :] ** 2, np_.swapaxes(v, -1, -2)), v ** 2, w
    return fn


def svd_invariants(np_, linalg):
    def fn(x):
        u, s, vh = linalg.svd(x, full_matrices=False)
        return np_.matmul(u * np_.sin(s)[..., None, :], vh), u ** 2, vh ** 2, s
    return fn


def qr_outputs(np_, linalg, mode="reduced"):
    def fn(x):
        q, r = linalg.qr(x, mode=mode)
        return q, r
    return fn


# (name, numax function, jax function, input maker, shape); each function maps one matrix to a pytree.
LINALG_CASES = [
    ("cholesky", xnp.linalg.cholesky, jnp.linalg.cholesky, positive_definite, (4, 4)),
    ("cholesky_batched", xnp.linalg.cholesky, jnp.linalg.cholesky, positive_definite, (2, 3, 3)),
    ("solve", lambda x: xnp.linalg.solve(x, x[..., 0:2] ** 2), lambda x: jnp.linalg.solve(x, x[..., 0:2] ** 2),
     well_conditioned, (4, 4)),
    ("solve_batched", lambda x: xnp.linalg.solve(x, x[..., :1] + 1.0),
     lambda x: jnp.linalg.solve(x, x[..., :1] + 1.0), well_conditioned, (2, 3, 3)),
    ("inv", xnp.linalg.inv, jnp.linalg.inv, well_conditioned, (4, 4)),
    ("det", xnp.linalg.det, jnp.linalg.det, well_conditioned, (2, 3, 3)),
    ("slogdet", lambda x: xnp.linalg.slogdet(x)[1], lambda x: jnp.linalg.slogdet(x)[1], well_conditioned, (4, 4)),
    ("lu_square", lambda x: xlinalg.lu(x)[0], lambda x: jlax.linalg.lu(x)[0], well_conditioned, (4, 4)),
    ("lu_wide", lambda x: xlinalg.lu(x)[0], lambda x: jlax.linalg.lu(x)[0], well_conditioned, (3, 5)),
    ("lu_tall", lambda x: xlinalg.lu(x)[0], lambda x: jlax.linalg.lu(x)[0], lambda r, s: tall(r, s), (5, 3)),
    ("triangular_solve_left", lambda x: xlinalg.triangular_solve(x, x[..., :2] + 1.0, left_side=True, lower=True),
     lambda x: jlax.linalg.triangular_solve(x, x[..., :2] + 1.0, left_side=True, lower=True), well_conditioned,
     (4, 4)),
    ("triangular_solve_right", lambda x: xlinalg.triangular_solve(x, x[:2] * 2.0, transpose_a=True, unit_diagonal=True),
     lambda x: jlax.linalg.triangular_solve(x, x[:2] * 2.0, transpose_a=True, unit_diagonal=True), well_conditioned,
     (4, 4)),
    ("triangular_solve_tall", lambda x: xlinalg.triangular_solve(x[:3, :3], x, left_side=True, lower=False),
     lambda x: jlax.linalg.triangular_solve(x[:3, :3], x, left_side=True, lower=False), well_conditioned, (3, 3)),
    ("qr_tall", qr_outputs(xnp, xnp.linalg), qr_outputs(jnp, jnp.linalg), tall, (5, 3)),
    ("qr_square_batched", qr_outputs(xnp, xnp.linalg), qr_outputs(jnp, jnp.linalg), well_conditioned, (2, 3, 3)),
    ("qr_wide", qr_outputs(xnp, xnp.linalg), qr_outputs(jnp, jnp.linalg), tall, (3, 5)),
    ("qr_complete", qr_outputs(xnp, xnp.linalg, "complete"), qr_outputs(jnp, jnp.linalg, "complete"), tall, (5, 3)),
    ("eigh", eigh_invariants(xnp, xnp.linalg), eigh_invariants(jnp, jnp.linalg), distinct_spectrum, (4, 4)),
    ("eigh_batched", eigh_invariants(xnp, xnp.linalg), eigh_invariants(jnp, jnp.linalg), distinct_spectrum,
     (2, 3, 3)),
    ("svd_tall", svd_invariants(xnp, xnp.linalg), svd_invariants(jnp, jnp.linalg), tall, (5, 3)),
    ("svd_wide", svd_invariants(xnp, xnp.linalg), svd_invariants(jnp, jnp.linalg), tall, (2, 3, 4)),
    ("svdvals", lambda x: xnp.linalg.svd(x, compute_uv=False), lambda x: jnp.linalg.svd(x, compute_uv=False), tall,
     (5, 3)),
    ("eigvals", lambda x: xnp.abs(xnp.linalg.eigvals(x)), lambda x: jnp.abs(jnp.linalg.eigvals(x)), distinct_spectrum,
     (3, 3)),
]
LINALG_IDS = [c[0] for c in LINALG_CASES]


def eig_unavailable(fn, x):
    """Whether eig has no kernel here (only LAPACK's, on the CPU, as in JAX); then checks that it says so."""
    if numax.default_backend() == "cpu":
        return False
    with pytest.raises(NotImplementedError, match="only implemented on the CPU"):
        fn(xnp.asarray(x))
    return True


@functools.cache
def expected_linalg():
    """JAX's side of test_linalg_matches_jax (eigvals only where numax has a kernel for eig)."""
    cases = [case for case in LINALG_CASES if case[0] != "eigvals" or numax.default_backend() == "cpu"]
    inputs = []
    for _, _, jax_fn, make, shape in cases:
        rng = np.random.default_rng(0)
        inputs.append((jax_fn, (make(rng, shape).astype(np.float32),), rng))
    return dict(zip([case[0] for case in cases], jax_derivatives(inputs)))


@pytest.mark.parametrize("name,numax_fn,jax_fn,make,shape", LINALG_CASES, ids=LINALG_IDS)
def test_linalg_matches_jax(name, numax_fn, jax_fn, make, shape, rng):
    x = make(rng, shape).astype(np.float32)
    if name == "eigvals" and eig_unavailable(numax_fn, x):
        return
    compare_vjp_with_jax(numax_fn, jax_fn, (x,), rng, tol=2e-3, expected=expected_linalg()[name])


@pytest.mark.parametrize("name,numax_fn,jax_fn,make,shape", LINALG_CASES, ids=LINALG_IDS)
def test_linalg_check_grads(name, numax_fn, jax_fn, make, shape, x64, rng):
    x = make(rng, shape)
    if name == "eigvals" and eig_unavailable(numax_fn, x):
        return
    # eig's eigenvalue rule uses its eigenvectors, whose derivatives are refused (as in JAX): order 1 there.
    order = 2 if name in ("cholesky", "det", "triangular_solve_left", "qr_tall", "eigh", "svd_tall") else 1
    check_grads(numax_fn, (x,), order=order, modes=("fwd", "rev"))


def test_eig_eigenvectors_when_enabled(rng):
    def eig(linalg):
        return lambda x: linalg.eig(x, enable_eigvec_derivs=True)  # eigenvalues, left and right eigenvectors

    x = distinct_spectrum(rng, (3, 3)) + np.triu(rng.uniform(-0.5, 0.5, (3, 3)), 1)  # not symmetric
    if eig_unavailable(eig(xlinalg), x):
        return
    compare_vjp_with_jax(eig(xlinalg), eig(jlax.linalg), (x.astype(np.float32),), rng, tol=2e-3)
    numax.config.update("numax_enable_x64", True)
    try:
        check_grads(eig(xlinalg), (x,), order=1, modes=("fwd", "rev"))
    finally:
        numax.config.update("numax_enable_x64", False)


def test_triangular_solve_in_both_arguments(x64, rng):
    a, b = well_conditioned(rng, (2, 3, 3)), rng.standard_normal((2, 3, 2))
    for kwargs in (dict(left_side=True, lower=True), dict(left_side=True, lower=False, transpose_a=True),
                   dict(left_side=False, lower=True, unit_diagonal=True)):
        rhs = b if kwargs["left_side"] else np.swapaxes(b, -1, -2)
        check_grads(lambda a, b: xlinalg.triangular_solve(a, b, **kwargs), (a, rhs), order=2)


def svd_product(np_):
    def fn(x):
        u, s, vh = np_.linalg.svd(x)
        return np_.matmul(u * s[None, :] ** 2, vh), s
    return fn


# Complex inputs: against finite differences (complex128) and against jax (complex64).
COMPLEX_CASES = [
    ("cholesky", xnp.linalg.cholesky, jnp.linalg.cholesky, "hermitian"),
    ("qr", lambda x: tuple(xnp.linalg.qr(x)), lambda x: tuple(jnp.linalg.qr(x)), "general"),
    ("inv", xnp.linalg.inv, jnp.linalg.inv, "general"),
    ("eigh", lambda x: (xnp.linalg.eigh(x)[0], xnp.abs(xnp.linalg.eigh(x)[1]) ** 2),
     lambda x: (jnp.linalg.eigh(x)[0], jnp.abs(jnp.linalg.eigh(x)[1]) ** 2), "hermitian"),
    ("svd", svd_product(xnp), svd_product(jnp), "general"),
]


def complex_matrix(rng, kind, n=3):
    z = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return z @ z.conj().T + n * np.eye(n) if kind == "hermitian" else z + 2 * np.eye(n)


@functools.cache
def expected_complex():
    inputs = []
    for _, _, jax_fn, kind in COMPLEX_CASES:
        rng = np.random.default_rng(0)
        inputs.append((jax_fn, (complex_matrix(rng, kind).astype(np.complex64),), rng))
    return dict(zip([case[0] for case in COMPLEX_CASES], jax_derivatives(inputs)))


@pytest.mark.parametrize("name,numax_fn,jax_fn,kind", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_decompositions(name, numax_fn, jax_fn, kind, rng):
    x = complex_matrix(rng, kind)
    compare_vjp_with_jax(numax_fn, jax_fn, (x.astype(np.complex64),), rng, tol=2e-3, expected=expected_complex()[name])
    numax.config.update("numax_enable_x64", True)
    try:
        check_grads(numax_fn, (x,), order=1, modes=("fwd", "rev"))
    finally:
        numax.config.update("numax_enable_x64", False)


def test_linalg_under_jit(rng):
    x = well_conditioned(rng, (3, 3)).astype(np.float32)
    loss = lambda np_: (lambda a: np_.linalg.slogdet(a)[1] + np_.sum(np_.linalg.inv(a) ** 2)
                        + np_.sum(np_.linalg.qr(a)[1] ** 2))
    expected = jax.jit(jax.grad(loss(jnp)))(x)
    assert_tree_close(numax.jit(numax.grad(loss(xnp)))(x), expected, 1e-3)
    assert_tree_close(numax.grad(numax.jit(loss(xnp)))(x), expected, 1e-3)


def test_permute_rows_transpose(x64, rng):
    x = rng.standard_normal((2, 4, 3))
    permutation = np.array([[2, 0, 3, 1], [0, 1, 2, 3]], np.int32)
    check_grads(lambda a: xlinalg.permute_rows(a, permutation), (x,), order=2)
    ct = rng.standard_normal(x.shape)
    (grad,) = numax.vjp(lambda a: xlinalg.permute_rows(a, permutation), x)[1](ct)
    expected = np.zeros_like(x)
    for b in range(2):
        expected[b, permutation[b]] = ct[b]
    np.testing.assert_allclose(np.asarray(grad), expected)


def test_integer_outputs_have_zero_tangents(rng):
    x = well_conditioned(rng, (3, 3)).astype(np.float32)
    _, tangents = numax.jvp(xlinalg.lu, (x,), (np.ones_like(x),))
    assert [np.asarray(t).dtype for t in tangents[1:]] == [jax.dtypes.float0] * 2
    pivots = np.array([2, 2, 2], np.int32)
    permutation, tangent = numax.jvp(lambda p: xlinalg.lu_pivots_to_permutation(p, 3), (pivots,),
                                     (np.zeros(3, jax.dtypes.float0),))
    np.testing.assert_array_equal(permutation, [2, 0, 1])
    assert np.asarray(tangent).dtype == jax.dtypes.float0 and np.asarray(tangent).shape == (3,)


def test_unsupported_derivatives_raise(rng):
    x = tall(rng, (4, 3)).astype(np.float32)
    with pytest.raises(NotImplementedError, match="Singular value decomposition JVP not implemented for full"):
        numax.grad(lambda a: xnp.sum(xnp.linalg.svd(a, full_matrices=True)[0]))(x)
    with pytest.raises(NotImplementedError, match="non-symmetric eigenvectors"):
        numax.grad(lambda a: xnp.sum(xnp.abs(xnp.linalg.eig(a)[1])))(x[:3])
    with pytest.raises(NotImplementedError, match="'geqrf' not implemented.*linalg.qr"):
        numax.grad(lambda a: xnp.sum(xlinalg.geqrf(a)[0]))(x)
    with pytest.raises(NotImplementedError, match="'householder_product' not implemented"):
        numax.jvp(lambda a: xlinalg.householder_product(a, np.ones((3,), np.float32)), (x,), (x,))


# --- callbacks -------------------------------------------------------------------------------------------------
def test_debug_callback_runs_under_differentiation():
    seen = []

    def f(x):
        lax.debug_callback(lambda v: seen.append(float(v)), x)
        return lax.sin(x) * x

    expected = jax.jit(jax.grad(lambda x: jnp.sin(x) * x))(np.float32(1.5))
    np.testing.assert_allclose(numax.grad(f)(np.float32(1.5)), expected, rtol=1e-6)
    assert seen == [1.5]
    np.testing.assert_allclose(numax.jit(numax.grad(f))(np.float32(1.5)), expected, rtol=1e-6)
    np.testing.assert_allclose(numax.grad(numax.jit(f))(np.float32(1.5)), expected, rtol=1e-6)
    assert seen == [1.5, 1.5, 1.5]
    _, tangent = numax.jvp(f, (np.float32(0.5),), (np.float32(1.0),))
    assert seen[-1] == 0.5
    np.testing.assert_allclose(tangent, np.sin(0.5) + 0.5 * np.cos(0.5), rtol=1e-6)


def test_pure_callback_refuses_differentiation():
    def f(x):
        return numax.pure_callback(np.sin, numax.ShapeDtypeStruct((), np.float32), x)

    assert np.isclose(f(np.float32(1.0)), np.sin(1.0))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        numax.grad(f)(np.float32(1.0))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        numax.jvp(numax.jit(f), (np.float32(1.0),), (np.float32(1.0),))
    # The remedy the message names: a custom JVP around the callback.
    wrapped = numax.custom_jvp(f)
    wrapped.defjvp(lambda primals, tangents: (wrapped(primals[0]), lax.cos(primals[0]) * tangents[0]))
    np.testing.assert_allclose(numax.grad(wrapped)(np.float32(1.0)), np.cos(1.0), rtol=1e-6)
    # Without a tangent flowing in, the callback is just called.
    g = lambda x, y: f(y) * x
    np.testing.assert_allclose(numax.grad(g)(np.float32(2.0), np.float32(1.0)), np.sin(1.0), rtol=1e-6)
