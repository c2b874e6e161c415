"""vmap of linear algebra, custom derivatives, checkpoint, host callbacks and random bits, against jax.vmap of
the same code and a Python loop over examples; compositions with grad; the IR of each batched call is one op."""

import functools
import types

import numax.lax as nl
import numpy as np
import pytest
from harness import assert_close, check_vmap, count_ops, jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from jax._src.lax import linalg as jax_linalg  # geqrf is not re-exported by jax.lax.linalg
from numax.core.ad_util import UndefinedPrimal
from numax.core.staging import trace_to_program
from numax.core.trace import get_aval_of
from numax.transforms.custom_derivatives import CustomJVPException
from numax.transforms.transpose import backward_pass
from oracle import jit_all

import numax
import numax.numpy as xnp

jl = jax.lax
jl_linalg = types.SimpleNamespace(linalg=jax_linalg)


def spd(rng, shape):
    """Symmetric positive-definite matrices of `shape` (..., n, n)."""
    a = rng.normal(size=shape).astype(np.float32)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1], dtype=np.float32)


# --- linear algebra --------------------------------------------------------------------------------------
RNG = np.random.default_rng(0)
A = spd(RNG, (3, 4, 4))  # three examples of 4x4 matrices
B = RNG.normal(size=(4, 3)).astype(np.float32)  # three right-hand sides, batched along axis 1
G = RNG.normal(size=(3, 5, 4)).astype(np.float32)  # three 5x4 (tall) matrices

LINALG = {
    "solve": (lambda m: m.linalg.solve, (A, B), (0, 1)),
    "solve_shared_matrix": (lambda m: m.linalg.solve, (A[0], B), (None, 1)),
    "solve_shared_rhs": (lambda m: m.linalg.solve, (A, B[:, 0]), (0, None)),
    "inv": (lambda m: m.linalg.inv, (A,), 0),
    "inv_axis2": (lambda m: m.linalg.inv, (np.moveaxis(A, 0, 2),), 2),
    "cholesky": (lambda m: m.linalg.cholesky, (A,), 0),
    "cholesky_axis1": (lambda m: m.linalg.cholesky, (np.moveaxis(A, 0, 1),), 1),
    "det": (lambda m: m.linalg.det, (A,), 0),
    "slogdet": (lambda m: m.linalg.slogdet, (A,), 0),
    "eigh": (lambda m: m.linalg.eigh, (A,), 0),
    "eigvalsh": (lambda m: m.linalg.eigvalsh, (A,), 0),
    "svd": (lambda m: m.linalg.svd, (G,), 0),
    "svd_thin_axis2": (lambda m: lambda x: m.linalg.svd(x, full_matrices=False), (np.moveaxis(G, 0, 2),), 2),
    "svdvals": (lambda m: lambda x: m.linalg.svd(x, compute_uv=False), (G,), 0),
    "qr": (lambda m: m.linalg.qr, (G,), 0),
    "qr_complete": (lambda m: lambda x: m.linalg.qr(x, mode="complete"), (G,), 0),
    "pinv": (lambda m: m.linalg.pinv, (G,), 0),
    "lstsq": (lambda m: lambda a, b: m.linalg.lstsq(a, b)[0], (G, RNG.normal(size=(5, 3)).astype(np.float32)),
              (0, 1)),
}


ON_GPU = numax.default_backend() != "cpu"


def gauge_free_svd(fn):
    """An svd's outputs as quantities free of the singular vectors' signs (batched and per-matrix cuSOLVER
    kernels pick different signs): s, the thin reconstruction, and the projectors onto u's and vh's spaces."""
    def invariants(*args):
        u, s, vh = fn(*args)
        k = s.shape[-1]
        return s, (u[..., :k] * s[..., None, :]) @ vh, u @ u.conj().swapaxes(-1, -2), vh.conj().swapaxes(-1, -2) @ vh
    return invariants


def svd_table_fn(name, fn):
    """`fn`, or its gauge-free form for an svd on a GPU (the CPU's LAPACK is compared sign for sign)."""
    return (lambda m: gauge_free_svd(fn(m))) if ON_GPU and name.startswith("svd") and name != "svdvals" else fn


@functools.cache
def _linalg_results():
    """{name: (numax's batched, jax's batched, numax's per-example results)}: what check_vmap computes for each
    case, with every case's batched function in one jitted program per library and numax's loop over the
    examples in one more (the eager linear algebra is tested in the linalg tests)."""
    names = sorted(LINALG)
    fns = [svd_table_fn(name, LINALG[name][0]) for name in names]
    args = [tuple(np.asarray(a) for a in LINALG[name][1]) for name in names]
    in_axes = [LINALG[name][2] for name in names]
    actual = numax.jit(lambda all_args: [numax.vmap(fn(xnp), axes)(*a)
                                         for fn, a, axes in zip(fns, all_args, in_axes)])(args)
    expected = jit_all([jax.vmap(fn(jnp), axes) for fn, axes in zip(fns, in_axes)], args)
    examples = []  # for each case, the arguments of each example
    for a, axes in zip(args, in_axes):
        axes = axes if isinstance(axes, tuple) else (axes,) * len(a)
        size = next(x.shape[ax] for x, ax in zip(a, axes) if ax is not None)
        examples.append([[x if ax is None else np.take(x, b, axis=ax) for x, ax in zip(a, axes)]
                         for b in range(size)])
    per_example = numax.jit(lambda all_examples: [[fn(xnp)(*e) for e in case]
                                                  for fn, case in zip(fns, all_examples)])(examples)
    return dict(zip(names, zip(actual, expected, per_example, strict=True)))


@pytest.mark.parametrize("name", sorted(LINALG))
def test_numpy_linalg(name):
    # check_vmap's checks (out_axes 0, scale 20), from one program per library for the whole table.
    actual, expected, per_example = _linalg_results()[name]
    actual_leaves, expected_leaves = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves), (len(actual_leaves), len(expected_leaves))
    for a, e in zip(actual_leaves, expected_leaves):
        assert_close(a, np.asarray(e), scale=20)
    for i, leaf in enumerate(actual_leaves):
        stacked = np.stack([np.asarray(jax.tree_util.tree_leaves(p)[i]) for p in per_example], axis=0)
        assert_close(leaf, stacked, scale=20)


def test_numpy_linalg_batched_matrices_of_batches():
    """vmap over axis 1 of a stack of batches of matrices (the primitives' own batch dims stay leading)."""
    stack = spd(np.random.default_rng(1), (2, 3, 4, 4))
    check_vmap(lambda x: xnp.linalg.inv(x), lambda x: jnp.linalg.inv(x), (stack,), 1, scale=20)
    check_vmap(lambda x: xnp.linalg.eigh(x)[0], lambda x: jnp.linalg.eigh(x)[0], (stack,), 1, scale=20)


def test_numpy_linalg_out_axes_and_nested():
    stack = spd(np.random.default_rng(2), (2, 3, 4, 4))
    nested = numax.vmap(numax.vmap(xnp.linalg.cholesky, in_axes=0, out_axes=2), in_axes=1, out_axes=0)
    expected = jax.vmap(jax.vmap(jnp.linalg.cholesky, in_axes=0, out_axes=2), in_axes=1, out_axes=0)(stack)
    assert_close(nested(stack), np.asarray(expected), scale=20)
    assert_close(numax.jit(nested)(stack), np.asarray(expected), scale=20)
    inner_jit = numax.vmap(numax.jit(xnp.linalg.det), in_axes=1)
    assert_close(inner_jit(stack), np.asarray(jax.vmap(jnp.linalg.det, in_axes=1)(stack)), scale=20)


def test_numpy_linalg_per_example_gradients():
    """vmap(grad) and grad of a vmapped function through decompositions (per-example gradients)."""
    def loss(m):
        return lambda x: m.sum(m.linalg.cholesky(x)) + m.linalg.slogdet(x)[1] + m.sum(m.linalg.inv(x))

    per_example = numax.vmap(numax.grad(loss(xnp)))(A)
    assert_close(per_example, np.asarray(jax.jit(jax.vmap(jax.grad(loss(jnp))))(A)), scale=100)
    # Jitted: eager vmap of grad runs above; one compile instead of one per op.
    summed = numax.jit(numax.grad(lambda x: numax.vmap(loss(xnp))(x).sum()))(A)
    assert_close(summed, np.asarray(per_example), scale=100)
    jitted = numax.jit(numax.vmap(numax.grad(loss(xnp))))(A)
    assert_close(jitted, np.asarray(per_example), scale=100)


_triangular_cases = [(left_side, a_batched, b_dim) for left_side in (True, False) for a_batched in (True, False)
                     for b_dim in (0, 1, 2, None) if a_batched or b_dim is not None]


def _triangular_case(left_side, a_batched, b_dim):
    """(kwargs, operands, in_axes) of a triangular_solve case."""
    rng = np.random.default_rng(3)
    a = np.triu(rng.normal(size=(3, 4, 4))).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    b_shape = [4, 2] if left_side else [2, 4]
    if b_dim is not None:
        b_shape.insert(b_dim, 3)
    b = rng.normal(size=b_shape).astype(np.float32)
    a_arg, a_dim = (a, 0) if a_batched else (a[0], None)
    return dict(left_side=left_side, lower=False, transpose_a=True), (a_arg, b), (a_dim, b_dim)


@functools.cache
def _triangular_expected():
    """{case: jax's jitted vmap}, every case in one jitted program."""
    cases = [_triangular_case(*case) for case in _triangular_cases]
    functions = [jax.vmap(functools.partial(jl.linalg.triangular_solve, **kwargs), in_axes)
                 for kwargs, _, in_axes in cases]
    return dict(zip(_triangular_cases, jit_all(functions, [args for _, args, _ in cases])))


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("a_batched", [True, False])
@pytest.mark.parametrize("b_dim", [0, 1, 2, None])
def test_triangular_solve(left_side, a_batched, b_dim):
    if not a_batched and b_dim is None:
        return
    kwargs, args, in_axes = _triangular_case(left_side, a_batched, b_dim)
    check_vmap(lambda x, y: nl.linalg.triangular_solve(x, y, **kwargs), None, args, in_axes, scale=10,
               expected=_triangular_expected()[left_side, a_batched, b_dim])


def test_triangular_solve_shared_matrix_ir():
    """One matrix for all examples: one solve with the examples as extra right-hand sides, `a` not copied."""
    a = np.triu(A[0])
    fn = numax.vmap(lambda b: nl.linalg.triangular_solve(a, b, left_side=True), in_axes=1)
    text = str(numax.make_jaxpr(fn)(B[:, :, None]))
    assert text.count("triangular_solve[") == 1
    assert "f32[3,4,4]" not in text


LAX_LINALG = {
    "cholesky": (lambda m: m.linalg.cholesky, (A,)),
    "lu": (lambda m: m.linalg.lu, (A,)),
    "qr": (lambda m: lambda x: m.linalg.qr(x, full_matrices=False), (G,)),
    "eigh": (lambda m: m.linalg.eigh, (A,)),
    "svd": (lambda m: lambda x: m.linalg.svd(x, full_matrices=False), (G,)),
    "eig_values": (lambda m: lambda x: m.linalg.eig(x, compute_left_eigenvectors=False,
                                                    compute_right_eigenvectors=False), (A,)),
    "geqrf": (lambda m: m.linalg.geqrf, (G,)),
    "householder_product": (lambda m: lambda x: m.linalg.householder_product(*m.linalg.geqrf(x)), (G,)),
    "lu_pivots_to_permutation": (lambda m: lambda x: m.linalg.lu_pivots_to_permutation(x, 5),
                                 (np.array([[1, 2, 2], [0, 4, 3], [2, 1, 4]], np.int32),)),
}


@functools.cache
def _lax_linalg_expected():
    """{name: jax's jitted vmap}, every case in one jitted program (not eig on a GPU: it has only a CPU kernel)."""
    names = [name for name in sorted(LAX_LINALG) if not (ON_GPU and name == "eig_values")]
    functions = [jax.vmap(svd_table_fn(name, LAX_LINALG[name][0])(jl_linalg)) for name in names]
    return dict(zip(names, jit_all(functions, [LAX_LINALG[name][1] for name in names])))


@pytest.mark.parametrize("name", sorted(LAX_LINALG))
def test_lax_linalg_primitive_is_one_batched_op(name):
    fn, args = LAX_LINALG[name]
    primitive = name if name in ("cholesky", "lu", "eigh", "svd", "geqrf", "householder_product",
                                 "lu_pivots_to_permutation") else {"qr": "qr", "eig_values": "eig"}[name]
    assert count_ops(numax.vmap(fn(nl)), args, primitive) == 1
    if ON_GPU and primitive == "eig":  # as in jax, the nonsymmetric eigensolver has only a CPU kernel
        with pytest.raises(NotImplementedError, match="only implemented on the CPU"):
            numax.jit(numax.vmap(fn(nl)))(*args)
        return
    fn = svd_table_fn(name, fn)
    check_vmap(fn(nl), None, args, 0, scale=20, expected=_lax_linalg_expected()[name])


@settings(max_examples=8)
@given(n=st.integers(1, 4), batch=st.integers(1, 3), axis=st.integers(0, 2), rhs_axis=st.sampled_from([0, 1, None]))
def test_solve_hypothesis(n, batch, axis, rhs_axis):
    rng = np.random.default_rng(n * 100 + batch)
    matrices = np.moveaxis(spd(rng, (batch, n, n)), 0, axis)
    rhs = rng.normal(size=(batch, n) if rhs_axis == 0 else (n, batch) if rhs_axis == 1 else (n,)).astype(np.float32)
    check_vmap(xnp.linalg.solve, jnp.linalg.solve, (matrices, rhs), (axis, rhs_axis), loop=False, scale=50)


# --- custom_jvp / custom_vjp --------------------------------------------------------------------------------
# Rules that differ from the functions' own derivatives, so a result tells which one was used.
def make_custom_jvp(api):
    @api.custom_jvp
    def f(x, y):
        return api.numpy.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return f(x, y), 10.0 * x_dot * y + 3.0 * y_dot * api.numpy.cos(x)

    return f


def make_custom_vjp(api):
    @api.custom_vjp
    def g(x, y):
        return api.numpy.sin(x) * y

    def g_fwd(x, y):
        return g(x, y), (api.numpy.cos(x), y)

    def g_bwd(residuals, ct):
        cos_x, y = residuals
        return 10.0 * ct * y, api.numpy.sum(3.0 * ct * cos_x) * api.numpy.ones_like(y)

    g.defvjp(g_fwd, g_bwd)
    return g


CUSTOM = {"custom_jvp": make_custom_jvp, "custom_vjp": make_custom_vjp}
X3 = np.array([0.5, 1.0, -2.0], np.float32)
Y3 = np.array([2.0, -1.0, 0.25], np.float32)


@pytest.mark.parametrize("kind", sorted(CUSTOM))
@pytest.mark.parametrize("in_axes", [(0, None), (0, 0), (None, 0)])
def test_custom_vmap_values_and_grads(kind, in_axes):
    f, jf = CUSTOM[kind](numax), CUSTOM[kind](jax)
    x, y = X3, Y3 if in_axes[1] == 0 else np.float32(2.0)
    if in_axes[0] is None:
        x = np.float32(0.5)
    check_vmap(f, jf, (x, y), in_axes, jit=False)
    check_vmap(f, jf, (x, y), in_axes)
    # Per-example gradients (vmap of grad) and the gradient of the batched function (grad of vmap).
    argnums = (0, 1)
    # jax's expected values (the oracle): both in one jitted program, each computed once.
    total = lambda api, fn: lambda x, y: api.vmap(fn, in_axes)(x, y).sum()
    per_example_expected, total_expected = jit_all(
        [jax.vmap(jax.grad(jf, argnums), in_axes), jax.grad(total(jax, jf), argnums)], [(x, y), (x, y)])
    per_example = numax.vmap(numax.grad(f, argnums), in_axes)(x, y)
    for a, e in zip(per_example, per_example_expected):
        assert_close(a, np.asarray(e))
    for grad_fn in (numax.grad(total(numax, f), argnums), numax.jit(numax.grad(total(numax, f), argnums)),
                    numax.grad(numax.jit(total(numax, f)), argnums)):
        grads = grad_fn(x, y)
        for a, e in zip(grads, total_expected):
            assert_close(a, np.asarray(e))
    jitted = numax.vmap(numax.jit(numax.grad(f, argnums)), in_axes)(x, y)
    for a, e in zip(jitted, per_example_expected):
        assert_close(a, np.asarray(e))


def test_custom_vjp_rule_differs_from_autodiff():
    """The checks above would pass with autodiff's derivatives only if the rules were ignored: make sure not."""
    g = make_custom_vjp(numax)
    grads = numax.grad(lambda x: numax.vmap(g, (0, None))(x, np.float32(2.0)).sum())(X3)
    assert_close(grads, np.full(3, 20.0, np.float32))
    f = make_custom_jvp(numax)
    grads = numax.grad(lambda x: numax.vmap(f, (0, None))(x, np.float32(2.0)).sum())(X3)
    assert_close(grads, np.full(3, 20.0, np.float32))


def test_custom_jvp_forward_mode_of_vmap():
    f, jf = make_custom_jvp(numax), make_custom_jvp(jax)
    tangents = (np.ones(3, np.float32), np.float32(1.0))
    actual = numax.jvp(numax.vmap(f, (0, None)), (X3, np.float32(2.0)), tangents)
    expected = jax.jvp(jax.vmap(jf, (0, None)), (X3, np.float32(2.0)), tangents)
    for a, e in zip(actual, expected):
        assert_close(a, np.asarray(e))
    actual = numax.vmap(lambda x, t: numax.jvp(lambda v: f(v, np.float32(2.0)), (x,), (t,))[1])(X3, Y3)
    expected = jax.vmap(lambda x, t: jax.jvp(lambda v: jf(v, np.float32(2.0)), (x,), (t,))[1])(X3, Y3)
    assert_close(actual, np.asarray(expected))


@pytest.mark.parametrize("kind", sorted(CUSTOM))
def test_custom_nested_vmap_and_jacobians(kind):
    f, jf = CUSTOM[kind](numax), CUSTOM[kind](jax)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    y = np.float32(1.5)
    loss = lambda api, fn: lambda x: api.vmap(api.vmap(fn, (0, None)), (1, None))(x, y).sum()
    # jax's expected values (the oracle) from one jitted program.
    expected = jit_all([jax.vmap(jax.vmap(jf, (0, None)), (1, None)), jax.grad(loss(jax, jf)),
                        jax.jacrev(lambda v: jax.vmap(jf, (0, None))(v, y))], [(x, y), (x,), (X3,)])
    actual = numax.vmap(numax.vmap(f, (0, None)), (1, None))(x, y)
    assert_close(actual, np.asarray(expected[0]))
    assert_close(numax.grad(loss(numax, f))(x), np.asarray(expected[1]))
    jac = numax.jacrev(lambda v: numax.vmap(f, (0, None))(v, y))(X3)
    assert_close(jac, np.asarray(expected[2]))


@pytest.mark.parametrize("kind", sorted(CUSTOM))
def test_custom_ir_is_one_call(kind):
    f = CUSTOM[kind](numax)
    name = f"{kind}_call"
    assert count_ops(numax.vmap(f, (0, None)), (X3, np.float32(2.0)), name) == 1
    text = str(numax.make_jaxpr(numax.vmap(f, (0, None)))(X3, np.float32(2.0)))
    assert "f32[3]" in text


def test_custom_jvp_nondiff_argnums_under_vmap():
    def make(api):
        @functools.partial(api.custom_jvp, nondiff_argnums=(0,))
        def scaled(power, x):
            return x ** power

        @scaled.defjvp
        def scaled_jvp(power, primals, tangents):
            (x,), (x_dot,) = primals, tangents
            return scaled(power, x), 100.0 * x_dot

        return scaled

    f, jf = make(numax), make(jax)
    # The static nondiff argument stays static; a traced one is batched with the others.
    actual = numax.vmap(numax.grad(lambda x: f(3, x)))(X3)
    assert_close(actual, np.asarray(jax.vmap(jax.grad(lambda x: jf(3, x)))(X3)))
    actual = numax.grad(lambda x: numax.vmap(lambda v: f(3, v))(x).sum())(X3)
    assert_close(actual, np.full(3, 100.0, np.float32))


def test_custom_jvp_symbolic_zeros_under_vmap():
    def make(api):
        @api.custom_jvp
        def f(x, y):
            return x * y

        def f_jvp(primals, tangents):
            (x, y), (x_dot, y_dot) = primals, tangents
            zero = type(y_dot).__name__ == "SymbolicZero"
            return f(x, y), (7.0 if zero else 5.0) * x_dot * y

        f.defjvp(f_jvp, symbolic_zeros=True)
        return f

    f, jf = make(numax), make(jax)
    actual = numax.grad(lambda x: numax.vmap(f, (0, None))(x, np.float32(2.0)).sum())(X3)
    expected = jax.grad(lambda x: jax.vmap(jf, (0, None))(x, np.float32(2.0)).sum())(X3)
    assert_close(actual, np.asarray(expected))


def test_custom_lin_batched_and_transposed():
    """custom_lin (a custom_vjp's linear map) met by vmap batches into one custom_lin whose transpose runs
    the batched bwd: cotangents of batched tangents at their batch dims."""
    g = make_custom_vjp(numax)
    y = np.float32(2.0)
    _, linear = numax.linearize(lambda x: g(x, y), X3)
    tangents = np.ones((3, 2), np.float32)
    program, consts = trace_to_program(lambda t: [numax.vmap(linear, in_axes=1, out_axes=1)(t)],
                                       [get_aval_of(tangents)])
    assert str(program).count("custom_lin[") == 1
    ct = np.arange(6, dtype=np.float32).reshape(3, 2)
    (result,) = backward_pass(program, consts, [UndefinedPrimal(get_aval_of(ct))], [ct])
    assert_close(result, 10.0 * ct * y)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        numax.vmap(linear)(tangents.T)


# --- checkpoint --------------------------------------------------------------------------------------------
def _checkpointed(api, policy=None):
    def inner(x, w):
        return api.numpy.sin(x @ w) * x.sum()

    return api.checkpoint(inner, policy=policy)


@pytest.mark.parametrize("in_axes", [(0, None), (1, 0), (None, 2)])
def test_checkpoint_under_vmap(in_axes):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    w = rng.normal(size=(4, 2)).astype(np.float32)
    args = [x, w]
    for i, axis in enumerate(in_axes):
        if axis is not None:
            args[i] = np.stack([args[i] * (k + 1) for k in range(3)], axis=axis)
    f, jf = _checkpointed(numax), _checkpointed(jax)
    check_vmap(f, jf, args, in_axes, scale=10)
    loss = lambda api, fn: lambda x, w: api.vmap(fn, in_axes)(x, w).sum()
    # jax's expected values (the oracle) from one jitted program.
    grads_expected, expected = jit_all([jax.grad(loss(jax, jf), (0, 1)),
                                        jax.vmap(jax.grad(lambda x, w: jf(x, w).sum(), (0, 1)), in_axes)],
                                       [args, args])
    for a, e in zip(numax.grad(loss(numax, f), (0, 1))(*args), grads_expected):
        assert_close(a, np.asarray(e), scale=10)
    per_example = numax.vmap(numax.grad(lambda x, w: f(x, w).sum(), (0, 1)), in_axes)(*args)
    for a, e in zip(per_example, expected):
        assert_close(a, np.asarray(e), scale=10)


def test_checkpoint_ir_keeps_one_batched_checkpoint_and_policy():
    f = _checkpointed(numax, policy=numax.checkpoint_policies.dots_saveable)
    x = np.ones((3, 4), np.float32)
    w = np.ones((4, 2), np.float32)
    text = str(numax.make_jaxpr(numax.vmap(f, (0, None)))(x, w))
    assert text.count("checkpoint[") == 1
    assert "dots_saveable" in text
    assert "f32[3,2]" in text
    loss = lambda api, fn: lambda x, w: api.vmap(fn, (0, None))(x, w).sum()
    assert_close(numax.grad(loss(numax, f))(x, w), np.asarray(jax.grad(loss(jax, _checkpointed(jax)))(x, w)))


def test_checkpoint_name_under_vmap():
    from numax.ad_checkpoint import checkpoint_name

    f = lambda x: checkpoint_name(xnp.sin(x), "s") * 2
    assert_close(numax.vmap(f, in_axes=1)(np.ones((2, 3), np.float32)), np.full((3, 2), 2 * np.sin(1.0), np.float32))


# --- pure_callback / debug_callback ------------------------------------------------------------------------
def _callback_fn(api, method, seen):
    def host(a, b):
        seen.append((np.shape(a), np.shape(b)))
        return np.asarray(a) * 2 + np.asarray(b)

    def fn(x, y):
        return api.pure_callback(host, api.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)

    return fn


METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_vmap_methods(method, jit):
    """Values as jax's, and the callback sees what jax's sees (shapes per call, number of calls)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10.0, 20.0], np.float32)
    seen, jax_seen = [], []
    f = numax.vmap(_callback_fn(numax, method, seen), in_axes=(1, None))
    jf = jax.vmap(_callback_fn(jax, method, jax_seen), in_axes=(1, None))
    if jit:
        f, jf = numax.jit(f), jax.jit(jf)
    assert_close(f(x, y), np.asarray(jf(x, y)))
    assert seen == jax_seen


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_nested_vmap(method):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = np.arange(3, dtype=np.float32)
    seen, jax_seen = [], []
    f = numax.vmap(numax.vmap(_callback_fn(numax, method, seen), (0, None)), (2, None), out_axes=1)
    jf = jax.vmap(jax.vmap(_callback_fn(jax, method, jax_seen), (0, None)), (2, None), out_axes=1)
    assert_close(f(x, y), np.asarray(jf(x, y)))
    assert sorted(set(seen)) == sorted(set(jax_seen))


def test_pure_callback_is_one_host_call():
    for method in METHODS:
        fn = numax.vmap(_callback_fn(numax, method, []), in_axes=(0, None))
        assert count_ops(fn, (np.ones((5, 2), np.float32), np.ones(2, np.float32)), "pure_callback") == 1


def test_pure_callback_default_vmap_method_raises():
    fn = numax.vmap(_callback_fn(numax, None, []), in_axes=(0, None))
    with pytest.raises(NotImplementedError, match=r"vmap is only supported for the pure_callback primitive when "
                                                  r"vmap_method is one of 'sequential'.*Got vmap_method=None"):
        fn(np.ones((3, 2), np.float32), np.ones(2, np.float32))


def test_pure_callback_sequential_results_checked_and_pytrees():
    def host(a):
        return {"double": a * 2, "sum": np.sum(a)}

    def fn(x):
        shapes = {"double": numax.ShapeDtypeStruct(x.shape, x.dtype), "sum": numax.ShapeDtypeStruct((), x.dtype)}
        return numax.pure_callback(host, shapes, x, vmap_method="sequential")

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = numax.vmap(fn)(x)
    assert_close(out["double"], x * 2)
    assert_close(out["sum"], x.sum(1))
    bad = lambda x: numax.pure_callback(lambda a: np.zeros(3, np.float32), numax.ShapeDtypeStruct((2,), np.float32),
                                        x, vmap_method="sequential")
    with pytest.raises(TypeError, match="has shape"):
        numax.vmap(bad)(x)


@pytest.mark.parametrize("jit", [False, True])
def test_debug_callback_runs_per_example(jit):
    """As in JAX: the callback is called once per example with that example's values, in order."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    seen, jax_seen = [], []
    f = numax.vmap(lambda v, s: numax.debug.callback(lambda a, b: seen.append((a.tolist(), float(b))), v, s),
                   in_axes=(1, None))
    jf = jax.vmap(lambda v, s: jax.debug.callback(lambda a, b: jax_seen.append((a.tolist(), float(b))), v, s),
                  in_axes=(1, None))
    if jit:
        f, jf = numax.jit(f), jax.jit(jf)
    f(x, np.float32(5.0))
    jf(x, np.float32(5.0))
    jax.effects_barrier()
    assert seen == [(x[:, b].tolist(), 5.0) for b in range(2)]  # numax calls back in example order
    assert sorted(seen) == sorted(jax_seen)  # jax's unordered callbacks may run in any order on a GPU
    text = str(numax.make_jaxpr(numax.vmap(lambda v: numax.debug.callback(print, v)))(x))
    assert text.count("debug_callback[") == 1


# --- random ------------------------------------------------------------------------------------------------
KEYS = np.asarray(jax.random.split(jax.random.PRNGKey(42), 4))

RANDOM = {
    "split": lambda r: lambda k: r.split(k),
    "split3": lambda r: lambda k: r.split(k, 3),
    "fold_in": lambda r: lambda k: r.fold_in(k, 7),
    "bits": lambda r: lambda k: r.bits(k, (5,)),
    "normal": lambda r: lambda k: r.normal(k, (3,)),
    "uniform": lambda r: lambda k: r.uniform(k, (2, 2)),
    "randint": lambda r: lambda k: r.randint(k, (4,), 0, 10),
    "bernoulli": lambda r: lambda k: r.bernoulli(k, 0.3, (6,)),
}


@functools.cache
def _random_expected():
    """{name: jax.vmap of the case over KEYS}, the whole table in one jitted program (jax's bits are the same
    jitted or not: the oracle for both of numax's modes)."""
    names = sorted(RANDOM)
    return dict(zip(names, jit_all([jax.vmap(RANDOM[name](jax.random)) for name in names], [(KEYS,)] * len(names))))


@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("jit", [False, True])
def test_random_vmap_over_keys_bit_exact(name, jit):
    actual = numax.vmap(RANDOM[name](numax.random))
    if jit:
        actual = numax.jit(actual)
    np.testing.assert_array_equal(np.asarray(actual(KEYS)), np.asarray(_random_expected()[name]))


def test_random_keys_along_axis_1_and_batched_data():
    keys_t = KEYS.T.copy()
    actual = numax.vmap(lambda k: numax.random.normal(k, (2,)), in_axes=1, out_axes=1)(keys_t)
    expected = jax.vmap(lambda k: jax.random.normal(k, (2,)), in_axes=1, out_axes=1)(keys_t)
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))
    key = KEYS[0]
    data = np.arange(5, dtype=np.uint32)
    actual = numax.vmap(lambda i: numax.random.uniform(numax.random.fold_in(key, i), (3,)))(data)
    expected = jax.vmap(lambda i: jax.random.uniform(jax.random.fold_in(key, i), (3,)))(data)
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))
    mean = np.arange(4, dtype=np.float32)
    actual = numax.vmap(lambda m: numax.random.normal(key, (2,)) + m)(mean)
    expected = jax.vmap(lambda m: jax.random.normal(key, (2,)) + m)(mean)
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


@pytest.mark.parametrize("in_axes,out_axes", [(-1, -1), (-2, 0), (1, -2)])
def test_typed_key_arrays_map_along_their_own_axes_negative_ones_too(in_axes, out_axes):
    # a key array's key words are no axis of it: -1 is its last axis of keys, in and out
    def split_each(random):
        return lambda keys: random.split(keys[0], 4)  # keys: the (2,) or (3,) keys of one mapped slice

    theirs = jax.vmap(split_each(jax.random), in_axes=in_axes, out_axes=out_axes)(
        jax.random.split(jax.random.key(1), 6).reshape(2, 3))
    ours = numax.vmap(split_each(numax.random), in_axes=in_axes, out_axes=out_axes)(
        numax.random.split(numax.random.key(1), 6).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(numax.random.key_data(ours)), np.asarray(jax.random.key_data(theirs)))
    keys = numax.random.split(numax.random.key(2), 6).reshape(2, 3)
    uniform = numax.vmap(numax.vmap(numax.random.uniform), in_axes=-1)(keys)
    expected = jax.vmap(jax.vmap(jax.random.uniform), in_axes=-1)(jax.random.split(jax.random.key(2), 6).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(uniform), np.asarray(expected))
    with pytest.raises(ValueError, match="along axis 2, which implies that its rank should be at least 3"):
        numax.vmap(numax.random.uniform, in_axes=2)(keys)


# --- custom rules closing over batched values -------------------------------------------------------------
def _closing_over(api, kind):
    """A custom function defined inside the vmapped function, closing over its batched argument `c`."""
    def outer(c, x):
        if kind == "custom_jvp":
            @api.custom_jvp
            def f(x):
                return api.numpy.sin(x) * c

            @f.defjvp
            def f_jvp(primals, tangents):
                return f(primals[0]), 10.0 * tangents[0] * c
        else:
            @api.custom_vjp
            def f(x):
                return api.numpy.sin(x) * c

            f.defvjp(lambda x: (f(x), c), lambda c_residual, ct: (10.0 * ct * c_residual,))  # bwd may not close over c
        return f(x)

    return outer


@pytest.mark.parametrize("kind", sorted(CUSTOM))
@pytest.mark.parametrize("x_axis", [0, None])
def test_custom_rule_closing_over_batched_value(kind, x_axis):
    f, jf = _closing_over(numax, kind), _closing_over(jax, kind)
    c = np.array([0.0, 1.0, 2.0], np.float32)
    x = X3 if x_axis == 0 else np.float32(1.0)
    check_vmap(f, jf, (c, x), (0, x_axis), jit=False)
    loss = lambda api, fn: lambda x: api.vmap(fn, (0, x_axis))(c, x).sum()
    # jax's expected values (the oracle) from one jitted program, each computed once.
    grad_expected, per_example_expected = jit_all([jax.grad(loss(jax, jf)), jax.vmap(jax.grad(jf, 1), (0, x_axis))],
                                                  [(x,), (c, x)])
    assert_close(numax.grad(loss(numax, f))(x), np.asarray(grad_expected))
    assert_close(numax.jit(numax.grad(loss(numax, f)))(x), np.asarray(grad_expected))
    per_example = numax.vmap(numax.grad(f, 1), (0, x_axis))(c, x)
    assert_close(per_example, np.asarray(per_example_expected))
    assert_close(per_example, 10.0 * c)


def test_custom_jvp_closing_over_perturbed_value_raises():
    f = _closing_over(numax, "custom_jvp")
    c = np.array([0.0, 1.0, 2.0], np.float32)
    with pytest.raises(CustomJVPException, match="closed-over value"):
        numax.grad(lambda x: numax.vmap(f, (None, 0))(x, c).sum())(np.float32(1.0))


@pytest.mark.parametrize("kind", sorted(CUSTOM))
def test_custom_grad_of_vmap_of_jit(kind):
    """The batched call staged inside a jit under vmap, differentiated while that vmap runs."""
    f, jf = CUSTOM[kind](numax), CUSTOM[kind](jax)
    y = np.float32(2.0)
    actual = numax.grad(lambda x: numax.vmap(numax.jit(f), (0, None))(x, y).sum())(X3)
    assert_close(actual, np.asarray(jax.jit(jax.grad(lambda x: jax.vmap(jax.jit(jf), (0, None))(x, y).sum()))(X3)))
    stacked = np.stack([X3, 2 * X3])
    actual = numax.vmap(numax.grad(lambda x: numax.vmap(numax.jit(f), (0, None))(x, y).sum()))(stacked)
    assert_close(actual, np.full((2, 3), 20.0, np.float32))
