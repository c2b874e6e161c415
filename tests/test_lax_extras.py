"""custom_linear_solve, custom_root, the generic reduce and the small jax.lax additions, against jax."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, jnp

import numax
import numax.numpy as mnp
import numax.scipy.linalg as nsl
from numax import lax
from numax.test_util import check_grads

jlax = jax.lax


@pytest.fixture
def both_x64():
    """64-bit types on in numax and in the jax oracle for one test."""
    numax.config.update("numax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        numax.config.update("numax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def _close_trees(actual, expected, scale=1.0):
    actual_leaves, expected_leaves = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves)
    for a, e in zip(actual_leaves, expected_leaves):
        assert_close(a, e, scale=scale)


# --- custom_linear_solve ------------------------------------------------------------------------------------
A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 1.0], [0.5, -1.0, 5.0]], np.float32)
B = np.array([1.0, 2.0, -3.0], np.float32)
# A deliberately different "inverse": the solvers the user gives are what must run (values and derivatives).
WRONG = np.array([[0.3, 0.1, 0.0], [0.0, 0.4, 0.1], [0.1, 0.0, 0.2]], np.float32)


def _solver_function(L, np_, kind, counts=None):
    """f(a, b) = custom_linear_solve with matvec x -> a x and the solvers of `kind`."""

    def counted(name, fun):
        def wrapped(*args):
            if counts is not None:
                counts[name] = counts.get(name, 0) + 1
            return fun(*args)

        return wrapped

    def f(a, b):
        matvec = counted("matvec", lambda x: np_.dot(a, x))
        if kind == "general":
            solve = counted("solve", lambda mv, y: np_.linalg.solve(a, y))
            transpose_solve = counted("transpose_solve", lambda vm, y: np_.linalg.solve(a.T, y))
            return L.custom_linear_solve(matvec, b, solve, transpose_solve)
        if kind == "symmetric":
            spd = np_.dot(a, a.T) + 3 * np_.eye(3, dtype=a.dtype)
            return L.custom_linear_solve(lambda x: np_.dot(spd, x), b, lambda mv, y: np_.linalg.solve(spd, y),
                                         symmetric=True)
        if kind == "wrong":
            # solve and transpose_solve multiply by fixed matrices: only the user's code can give these results.
            solve = counted("solve", lambda mv, y: np_.dot(WRONG, y))
            transpose_solve = counted("transpose_solve", lambda vm, y: np_.dot(WRONG.T, vm(y)))
            return L.custom_linear_solve(matvec, b, solve, transpose_solve)
        if kind == "aux":
            solve = lambda mv, y: (np_.linalg.solve(a, y), np_.sum(y))  # noqa: E731
            transpose_solve = lambda vm, y: (np_.linalg.solve(a.T, y), np_.sum(y))  # noqa: E731
            return L.custom_linear_solve(matvec, b, solve, transpose_solve, has_aux=True)
        if kind == "tree":
            # b a pair of vectors; matvec couples them.
            def pair_matvec(x):
                return (np_.dot(a, x[0]) + x[1], 2.0 * x[1])

            def pair_solve(mv, y):
                second = y[1] / 2.0
                return (np_.linalg.solve(a, y[0] - second), second)

            def pair_transpose_solve(vm, y):
                first = np_.linalg.solve(a.T, y[0])
                return (first, (y[1] - first) / 2.0)

            return L.custom_linear_solve(pair_matvec, (b, 3 * b), pair_solve, pair_transpose_solve)
        raise ValueError(kind)

    return f


def _scalar_loss(f):
    def loss(a, b):
        out = f(a, b)
        leaves = jax.tree_util.tree_leaves(out) if not isinstance(out, numax.Array) else [out]
        return sum((leaf * leaf).sum() if np.ndim(leaf) else leaf * 0.0 for leaf in leaves)

    return loss


@pytest.mark.parametrize("kind", ["general", "symmetric", "wrong", "aux", "tree"])
def test_custom_linear_solve_matches_jax(kind):
    ours, theirs = _solver_function(lax, mnp, kind), _solver_function(jlax, jnp, kind)
    expected = jax.jit(theirs)(A, B)
    if kind == "general":
        _close_trees(ours(A, B), expected, scale=10)
    _close_trees(numax.jit(ours)(A, B), expected, scale=10)
    if kind == "tree":
        # jax cannot transpose this one; the reference is the same solution written out directly.
        theirs = lambda a, b: (jnp.linalg.solve(a, b - 1.5 * b), 1.5 * b)  # noqa: E731
    grads = numax.jit(numax.grad(_scalar_loss(ours), (0, 1)))(A, B)
    _close_trees(grads, jax.jit(jax.grad(_scalar_loss(theirs), (0, 1)))(A, B), scale=50)
    if kind == "tree":
        _close_trees(numax.jit(numax.jacfwd(ours, 1))(A, B), jax.jit(jax.jacfwd(theirs, 1))(A, B), scale=50)
    if kind != "general":
        return  # the other kinds run the same rules: values and derivatives suffice
    _close_trees(numax.jit(numax.jacfwd(ours, 1))(A, B), jax.jit(jax.jacfwd(theirs, 1))(A, B), scale=50)
    batch_a = np.stack([A, A.T, A + np.eye(3, dtype=np.float32)])
    batch_b = np.stack([B, 2 * B, -B])
    _close_trees(numax.jit(numax.vmap(ours, (None, 0)))(A, batch_b), jax.jit(jax.vmap(theirs, (None, 0)))(A, batch_b),
                 scale=10)
    _close_trees(numax.jit(numax.vmap(ours, (0, None)))(batch_a, B), jax.jit(jax.vmap(theirs, (0, None)))(batch_a, B),
                 scale=10)
    _close_trees(numax.jit(numax.vmap(numax.grad(_scalar_loss(ours))))(batch_a, batch_b),
                 jax.jit(jax.vmap(jax.grad(_scalar_loss(theirs))))(batch_a, batch_b), scale=50)


def test_custom_linear_solve_calls_each_user_function_once():
    counts = {}
    f = _solver_function(lax, mnp, "wrong", counts)
    grads = numax.grad(lambda a, b: f(a, b).sum(), (0, 1))(A, B)
    # Differentiation reuses the traced programs: each user function was traced once, none differentiated.
    assert counts == {"matvec": 1, "solve": 1, "transpose_solve": 1}
    assert_close(grads[1], WRONG.T @ A.T @ np.ones(3, np.float32), scale=10)
    assert_close(f(A, B), WRONG @ B, scale=10)
    text = str(numax.make_jaxpr(f)(A, B))
    assert "custom_linear_solve" in text


def test_custom_linear_solve_float64_check_grads(both_x64):
    a, b = A.astype(np.float64), B.astype(np.float64)
    f = _solver_function(lax, mnp, "general")
    check_grads(f, (a, b), order=2, modes=("fwd", "rev"))


def test_custom_linear_solve_errors():
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda x: x[:2], B, lambda mv, y: y)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: (y, y))
    with pytest.raises(ValueError, match="has_aux was set to True"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: [y, y, y], has_aux=True)
    no_transpose = functools.partial(lax.custom_linear_solve, lambda x: A @ x, solve=lambda mv, y: y)
    assert_close(numax.jacfwd(no_transpose)(B), np.eye(3, dtype=np.float32))  # forward mode needs no transpose
    with pytest.raises(TypeError, match="transpose_solve required"):
        numax.grad(lambda b: no_transpose(b).sum())(B)


# --- custom_root --------------------------------------------------------------------------------------------
def _sqrt_cubed(L, np_, has_aux=False):
    """y with y**2 = x**3 by Newton's method, differentiated implicitly."""

    def f(x):
        def residual(y):
            return y * y - x ** 3

        def newton(g, y0):
            y = L.fori_loop(0, 25, lambda _, y: y - g(y) / (2 * y), y0)
            return (y, y0) if has_aux else y

        def tangent_solve(g, y):
            return y / g(1.0)

        return L.custom_root(residual, np_.ones_like(x), newton, tangent_solve, has_aux=has_aux)

    return f


def test_custom_root_newton_sqrt():
    ours, theirs = _sqrt_cubed(lax, mnp), _sqrt_cubed(jlax, jnp)
    x = np.float32(2.0)
    expected = float(theirs(x))
    assert_close(ours(x), np.float32(expected))
    assert_close(numax.jit(ours)(x), np.float32(expected))
    assert_close(numax.jit(numax.grad(ours))(x), jax.jit(jax.grad(theirs))(x))
    assert_close(numax.jit(numax.grad(numax.grad(ours)))(x), jax.jit(jax.grad(jax.grad(theirs)))(x), scale=10)
    xs = np.array([0.5, 1.0, 3.0], np.float32)
    assert_close(numax.jit(numax.vmap(ours))(xs), jax.jit(jax.vmap(theirs))(xs))
    assert_close(numax.jit(numax.vmap(numax.grad(ours)))(xs), jax.jit(jax.vmap(jax.grad(theirs)))(xs))
    root, aux = numax.jit(_sqrt_cubed(lax, mnp, has_aux=True))(x)
    assert_close(root, np.float32(expected))
    assert_close(aux, np.float32(1.0))
    assert_close(numax.jit(numax.grad(lambda x: _sqrt_cubed(lax, mnp, has_aux=True)(x)[0]))(x),
                 1.5 * np.sqrt(np.float32(2.0)), scale=10)


def test_custom_root_float64_check_grads(both_x64):
    check_grads(_sqrt_cubed(lax, mnp), (np.float64(1.7),), order=2, modes=("fwd", "rev"))


# --- scipy.linalg.solve(assume_a="pos") second derivatives --------------------------------------------------
@pytest.mark.parametrize("lower,b_shape", [(False, (3, 2)), (True, (3,))])
def test_solve_pos_second_order(both_x64, lower, b_shape):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-0.3, 0.3, (3, 3)), rng.uniform(-2, 2, b_shape)

    def loss(m, sl):
        return lambda a, b: (sl.solve(a + 3 * m.eye(3), b, assume_a="pos", lower=lower) ** 2).sum()

    ours, theirs = loss(mnp, nsl), loss(jnp, jax.scipy.linalg)
    assert_close(numax.jit(numax.grad(ours, (0, 1)))(a, b)[0], jax.jit(jax.grad(theirs, (0, 1)))(a, b)[0])
    hessian = numax.jit(numax.hessian(ours, (0, 1)))(a, b)
    expected = jax.jit(jax.hessian(theirs, (0, 1)))(a, b)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(np.asarray(hessian[i][j]), expected[i][j], atol=1e-10)


# --- reduce -------------------------------------------------------------------------------------------------
def test_reduce_recognises_monoids():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for op, jop, init, name in ((lax.add, jlax.add, 0.0, "reduce_sum"), (lax.mul, jlax.mul, 1.0, "reduce_prod"),
                                (lax.max, jlax.max, -np.inf, "reduce_max"), (lax.min, jlax.min, np.inf, "reduce_min")):
        text = str(numax.make_jaxpr(lambda x: lax.reduce(x, init, op, (0,)))(x))
        assert name in text and "reduce[" not in text, text
        assert_close(numax.jit(lambda x: lax.reduce(x, init, op, (0,)))(x), jlax.reduce(x, init, jop, (0,)))
    flags = np.array([[True, False], [True, True]])
    for op, jop, init, name in ((lax.bitwise_and, jlax.bitwise_and, True, "reduce_and"),
                                (lax.bitwise_or, jlax.bitwise_or, False, "reduce_or")):
        assert name in str(numax.make_jaxpr(lambda x: lax.reduce(x, init, op, (1,)))(flags))
        assert_close(lax.reduce(flags, init, op, (1,)), jlax.reduce(flags, init, jop, (1,)))
    ints = np.array([[5, 3, 6], [1, 2, 4]], np.int32)
    for op, jop, init in ((lax.bitwise_xor, jlax.bitwise_xor, 0), (lax.bitwise_and, jlax.bitwise_and, -1)):
        assert "reduce[" not in str(numax.make_jaxpr(lambda x: lax.reduce(x, init, op, (1,)))(ints))
        assert_close(lax.reduce(ints, init, op, (1,)), jlax.reduce(ints, init, jop, (1,)))
    # Not the identity: the generic primitive, which sums from the initial value.
    text = str(numax.make_jaxpr(lambda x: lax.reduce(x, 1.0, lax.add, (0,)))(x))
    assert "reduce[" in text
    assert_close(lax.reduce(x, 1.0, lax.add, (0,)), jlax.reduce(x, 1.0, jlax.add, (0,)))
    assert_close(numax.grad(lambda x: lax.reduce(x, -np.inf, lax.max, (0, 1)))(x),
                 jax.grad(lambda x: jlax.reduce(x, -np.inf, jlax.max, (0, 1)))(x))


def _pair_reduce(L):
    # (sum, max) of two operands at once, over a tuple pytree.
    return lambda x, y: L.reduce((x, y), (np.float32(0), np.float32(-np.inf)),
                                 lambda acc, el: (acc[0] + el[0], L.max(acc[1], el[1])), (1,))


def test_reduce_generic_multiple_operands(rng):
    x = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    y = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    ours, theirs = _pair_reduce(lax), _pair_reduce(jlax)
    _close_trees(ours(x, y), theirs(x, y))
    _close_trees(numax.jit(ours)(x, y), theirs(x, y))
    xs, ys = np.stack([x, -x]), np.stack([y, 2 * y])
    _close_trees(numax.vmap(ours)(xs, ys), jax.vmap(theirs)(xs, ys))
    ints = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    bitwise = lambda L: lambda v: L.reduce(v, np.int32(0), lambda a, b: a + 2 * b, (0, 2))  # noqa: E731
    assert_close(bitwise(lax)(ints), bitwise(jlax)(ints))
    empty = np.zeros((0, 3), np.float32)
    assert_close(lax.reduce(empty, np.float32(2), lambda a, b: a * b, (0,)),
                 jlax.reduce(empty, np.float32(2), lambda a, b: a * b, (0,)))


def test_reduce_generic_derivatives(rng):
    x = rng.uniform(0.5, 2, (3, 5)).astype(np.float32)
    prod = lambda L: lambda v: L.reduce(v, np.float32(1), lambda a, b: a * b, (1,)).sum()  # noqa: E731
    assert_close(numax.jit(numax.grad(prod(lax)))(x), jax.jit(jax.grad(prod(jlax)))(x), scale=10)
    pair = lambda L: lambda v: sum(o.sum() for o in _pair_reduce(L)(v, v * v))  # noqa: E731
    assert_close(numax.jit(numax.grad(pair(lax)))(x), jax.jit(jax.grad(pair(jlax)))(x), scale=10)
    jvp = numax.jit(lambda x, t: numax.jvp(prod(lax), (x,), (t,)))(x, np.ones_like(x))
    expected = jax.jit(lambda x, t: jax.jvp(prod(jlax), (x,), (t,)))(x, np.ones_like(x))
    assert_close(jvp[1], expected[1], scale=10)


def test_reduce_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), (0.0,), lambda a, b: a, (0,))
    with pytest.raises(TypeError, match="initial value dtypes"):
        lax.reduce(x, np.int32(0), lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="non-scalar initial value"):
        lax.reduce(x, np.zeros(3, np.float32), lambda a, b: a + b, (0,))


# --- arithmetic ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32])
def test_mulhi(rng, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=20, endpoint=True).astype(dtype)
    y = rng.integers(info.min, info.max, size=20, endpoint=True).astype(dtype)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2 + 1], dtype)
    x, y = np.concatenate([x, edges, edges]), np.concatenate([y, edges, edges[::-1]])
    assert_close(lax.mulhi(x, y), jlax.mulhi(x, y))
    assert_close(numax.jit(lax.mulhi)(x, y), jlax.mulhi(x, y))


def test_mulhi_64bit(both_x64, rng):
    for dtype in (np.int64, np.uint64):
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(info.min, info.max, size=20, endpoint=True, dtype=dtype),
                            np.array([info.min, info.max, 0], dtype)])
        y = np.concatenate([rng.integers(info.min, info.max, size=20, endpoint=True, dtype=dtype),
                            np.array([info.max, info.min, 5], dtype)])
        assert_close(lax.mulhi(x, y), jlax.mulhi(x, y))


def test_mulhi_errors():
    with pytest.raises(TypeError, match="same dtypes, got int32, int16"):
        lax.mulhi(np.int32(3), np.int16(2))
    with pytest.raises(TypeError, match="mulhi does not accept dtype float32 at position 0"):
        lax.mulhi(np.float32(1), np.float32(2))


def test_reciprocal_and_batch_matmul(rng):
    x = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    assert_close(lax.reciprocal(x), jlax.reciprocal(x))
    assert_close(numax.grad(lambda v: lax.reciprocal(v).sum())(x), jax.grad(lambda v: jlax.reciprocal(v).sum())(x))
    assert_close(lax.reciprocal(2.0), jlax.reciprocal(2.0))
    lhs = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (2, 4, 5)).astype(np.float32)
    assert_close(lax.batch_matmul(lhs, rhs), jlax.batch_matmul(lhs, rhs), scale=10)
    assert_close(lax.batch_matmul(lhs[0], rhs[0]), jlax.batch_matmul(lhs[0], rhs[0]), scale=10)
    with pytest.raises(ValueError, match="at least 2D, got 1, 2"):
        lax.batch_matmul(np.ones(3, np.float32), np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="same ndim, got 3, 2"):
        lax.batch_matmul(lhs, rhs[0])


def test_scatter_sub(rng):
    operand = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    updates = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    indices = np.array([[0], [2], [2], [4]], np.int32)
    numbers = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
    jnumbers = jlax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))
    assert_close(lax.scatter_sub(operand, indices, updates, numbers),
                 jlax.scatter_sub(operand, indices, updates, jnumbers))
    ours = numax.grad(lambda o, u: (lax.scatter_sub(o, indices, u, numbers) ** 2).sum(), (0, 1))(operand, updates)
    theirs = jax.grad(lambda o, u: (jlax.scatter_sub(o, indices, u, jnumbers) ** 2).sum(), (0, 1))(operand, updates)
    _close_trees(ours, theirs)


# --- shapes -------------------------------------------------------------------------------------------------
def test_broadcast_shapes():
    for shapes in [((2, 1), (3,)), ((2, 3),), ((1,), (4, 1, 5), (3, 1)), ((0, 1), (1, 7))]:
        assert lax.broadcast_shapes(*shapes) == jlax.broadcast_shapes(*shapes)
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)\]"):
        lax.broadcast_shapes((2,), (3,))


def test_split_stack_unstack_tile_collapse(rng):
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    cube = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

    def shapes_of(L):
        def f(x, cube):
            return (L.split(x, [1, 3], 0), L.split(x, [2, 0, 4], 1), [L.stack([x, 2 * x], a) for a in (0, 2, -2)],
                    L.unstack(x[:, :3], 1), [L.tile(x, reps) for reps in ((1, 3), (3, 2), (0, 2))],
                    [L.collapse(cube, *r) for r in ((1, None), (-2, None), (0, 2), (0, 3), (1, 1))])

        return f

    _close_trees(numax.jit(shapes_of(lax))(x, cube), jax.jit(shapes_of(jlax))(x, cube))
    _close_trees(lax.split(x, [1, 3], 0), jlax.split(x, [1, 3], 0))
    assert isinstance(lax.unstack(x), tuple) and len(lax.unstack(x)) == 4
    assert_close(lax.tile(x, (2, 1)), jlax.tile(x, (2, 1)))
    assert_close(lax.stack([x, x], 1), jlax.stack([x, x], 1))
    assert_close(lax.collapse(cube, 0, 2), jlax.collapse(cube, 0, 2))
    assert_close(numax.jit(numax.grad(lambda v: (lax.tile(v, (2, 3)) ** 2).sum()))(x),
                 jax.grad(lambda v: (jlax.tile(v, (2, 3)) ** 2).sum())(x))
    with pytest.raises(ValueError, match=r"Sum of sizes 4 must be equal to dimension 0 of the operand shape \[5\]"):
        lax.split(np.ones(5, np.float32), [2, 2])
    with pytest.raises(ValueError, match="All input arrays must have the same shape"):
        lax.stack([np.ones(2, np.float32), np.ones(3, np.float32)])
    with pytest.raises(TypeError, match=r"reps length must be equal to the ndim of x, got len\(reps\)=1 and x.ndim=2"):
        lax.tile(x, (2,))
    with pytest.raises(ValueError, match="Invalid dimension range passed to collapse"):
        lax.collapse(cube, 2, 1)


def test_empty_and_dtype():
    for shape, dtype in (((2, 3), np.float32), ((), np.int32), ((4,), np.bool_)):
        # An empty array's values are unspecified (jax's are uninitialized memory on GPUs): type and shape only.
        actual, expected = lax.empty(shape, dtype), jlax.empty(shape, dtype)
        assert (actual.shape, actual.dtype, actual.weak_type) == (expected.shape, expected.dtype, expected.weak_type)
    for value in (1, 1.5, np.int8(3), np.float64(2), True, "float32", np.uint16):
        assert lax.dtype(value) == jlax.dtype(value)


def test_index_take(rng):
    src = rng.uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    idxs = (np.array([0, 3, -1, 5], np.int32), np.array([1, -2, 4, 7], np.int32))
    assert_close(lax.index_take(src, idxs, (0, 1)), jlax.index_take(src, idxs, (0, 1)))
    assert_close(lax.index_take(src, idxs[:1], (2,)), jlax.index_take(src, idxs[:1], (2,)))
    assert_close(numax.grad(lambda s: lax.index_take(s, idxs, (0, 1)).sum())(src),
                 jax.grad(lambda s: jlax.index_take(s, idxs, (0, 1)).sum())(src))


# --- top k, patches, barrier --------------------------------------------------------------------------------
def test_approx_max_min_k(rng):
    x = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0, 2.0]], np.float32)
    ours = numax.jit(lambda x: [lax.approx_max_k(x, k, d) + lax.approx_min_k(x, k, d)
                                for k, d in ((1, -1), (2, 1), (5, -1), (2, 0), (1, 0))])
    theirs = jax.jit(lambda x: [jlax.approx_max_k(x, k, d) + jlax.approx_min_k(x, k, d)
                                for k, d in ((1, -1), (2, 1), (5, -1), (2, 0), (1, 0))])
    _close_trees(ours(x), theirs(x))
    _close_trees(lax.approx_max_k(x, 2), jlax.approx_max_k(x, 2))
    ties = rng.integers(-3, 3, (3, 7)).astype(np.float32)
    _close_trees(lax.approx_min_k(ties, 3), jlax.approx_min_k(ties, 3))
    _close_trees(numax.jit(lambda v: lax.approx_max_k(v, 1))(ties), jlax.approx_max_k(ties, 1))
    with pytest.raises(ValueError, match="operand must be a floating type"):
        lax.approx_max_k(np.arange(4, dtype=np.int32), 2)
    v = rng.uniform(-1, 1, (6,)).astype(np.float32)
    weights = np.arange(1, 3, dtype=np.float32)
    assert_close(numax.jit(numax.grad(lambda v: (lax.approx_max_k(v, 2)[0] * weights).sum()
                                      + (lax.approx_min_k(v, 2)[0] * weights).sum()))(v),
                 jax.jit(jax.grad(lambda v: (jlax.approx_max_k(v, 2)[0] * weights).sum()
                                  + (jlax.approx_min_k(v, 2)[0] * weights).sum()))(v))


@pytest.mark.parametrize("numbers,shape", [(None, (2, 3, 5, 6)), (("NHWC", "OIHW", "NHWC"), (1, 5, 4, 2)),
                                           (("NCH", "OIH", "NCH"), (2, 2, 7))])
def test_conv_general_dilated_patches(rng, numbers, shape):
    lhs = rng.uniform(-1, 1, shape).astype(np.float32)
    filter_shape = (2, 3)[:len(shape) - 2]
    args = dict(filter_shape=filter_shape, window_strides=(1,) * len(filter_shape), padding="SAME",
                rhs_dilation=(2,) * len(filter_shape), dimension_numbers=numbers)
    strided = dict(args, padding="VALID", window_strides=(2,) * len(filter_shape), rhs_dilation=None)
    ours = numax.jit(lambda v: [lax.conv_general_dilated_patches(v, **args),
                                lax.conv_general_dilated_patches(v, **strided)])
    theirs = jax.jit(lambda v: [jlax.conv_general_dilated_patches(v, **args),
                                jlax.conv_general_dilated_patches(v, **strided)])
    _close_trees(ours(lhs), theirs(lhs))


def test_optimization_barrier(rng):
    x = rng.uniform(-1, 1, (3,)).astype(np.float32)
    tree = (x, {"b": 2 * x}, np.int32(3))
    _close_trees(lax.optimization_barrier(tree), jlax.optimization_barrier(tree))
    f = lambda L: lambda v: (L.optimization_barrier((jnp.sin(v) if L is jlax else mnp.sin(v), v))[0] ** 2).sum()  # noqa
    assert_close(numax.grad(f(lax))(x), jax.grad(f(jlax))(x))
    assert_close(numax.jit(numax.grad(f(lax)))(x), jax.grad(f(jlax))(x))
    assert "stablehlo.optimization_barrier" in numax.jit(f(lax)).lower(x).as_text()
    assert_close(numax.vmap(lambda v: lax.optimization_barrier(v * 2))(np.stack([x, x])), np.stack([2 * x, 2 * x]))
    assert_close(numax.jvp(lambda v: lax.optimization_barrier(v * v), (x,), (x,))[1], 2 * x * x)


def test_primitive_names_and_types():
    from numax.lax import elementwise, reductions, shapes

    assert lax.add_p is elementwise.add_p and lax.reduce_sum_p is reductions.reduce_sum_p
    assert lax.broadcast_in_dim_p is shapes.broadcast_in_dim_p
    jax_names = {n for n in dir(jlax) if n.endswith("_p")}
    ours = {n for n in dir(lax) if n.endswith("_p")}
    assert ours - jax_names == set(), "numax.lax exports a primitive name jax.lax does not have"
    for name in ("add_p", "mul_p", "sin_p", "dot_general_p", "scatter_add_p", "cond_p", "while_p", "reduce_p",
                 "linear_solve_p", "optimization_barrier_p", "gather_p"):
        assert name in ours
    assert lax.DotDimensionNumbers is not None and lax.ConvGeneralDilatedDimensionNumbers is not None
