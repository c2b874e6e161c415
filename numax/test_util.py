"""Testing helpers for users and numax's own tests: `check_grads` compares forward- and reverse-mode
derivatives with central finite differences, to any order (as `jax.test_util.check_grads` does)."""

import numpy as np

from numax.core import dtypes
from numax.core import pytree as tree
from numax.transforms.autodiff import jvp, vjp

_default_tolerance = {
    np.dtype(np.float16): 1e-2, dtypes.bfloat16: 1e-1, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3, np.dtype(np.complex128): 1e-5,
}
_default_eps = 1e-4


def _host(x):
    return np.asarray(x)


def _tolerance(values, given):
    if given is not None:
        return given
    return max((_default_tolerance.get(np.dtype(_host(v).dtype), 1e-5) for v in values), default=1e-5)


def _assert_close(actual, expected, atol, rtol, what):
    actual_leaves, actual_tree = tree.tree_flatten(actual)
    expected_leaves, expected_tree = tree.tree_flatten(expected)
    if actual_tree != expected_tree:
        raise AssertionError(f"{what}: tree structures differ: {actual_tree} vs {expected_tree}")
    for a, e in zip(actual_leaves, expected_leaves):
        a, e = _host(a), _host(e)
        if a.dtype == dtypes.float0 or e.dtype == dtypes.float0:
            continue
        if a.shape != e.shape:
            raise AssertionError(f"{what}: shapes differ: {a.shape} vs {e.shape}")
        np.testing.assert_allclose(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64),
                                   e.astype(np.complex128 if np.iscomplexobj(e) else np.float64),
                                   atol=atol, rtol=rtol, err_msg=what)


def _random_like(rng, x):
    """Standard normal values of x's shape and dtype, drawn from `rng` in jax's order (an integer leaf draws
    too, so that the leaves after it get jax's values), so that checks pass or fail as jax's do."""
    x = _host(x)
    value = np.asarray(rng.standard_normal(x.shape), x.dtype if np.iscomplexobj(x) else np.float64)
    if np.iscomplexobj(x):
        value = value + 1j * np.asarray(rng.standard_normal(x.shape), x.dtype)
    if not np.issubdtype(x.dtype, np.inexact) and x.dtype != dtypes.bfloat16:
        return np.zeros(x.shape, dtypes.float0)
    return value.astype(x.dtype)


def _axpy(a, x, y):
    """y + a * x on host values in y's dtype, as jax's finite differences step (integer leaves stay as they are)."""
    y = _host(y)
    if not (np.issubdtype(y.dtype, np.inexact) or y.dtype == dtypes.bfloat16):
        return y
    step = np.multiply(_host(x).astype(y.dtype), np.array(a, y.dtype), dtype=y.dtype)
    return np.add(y, step, dtype=y.dtype)


def _conj(x):
    x = _host(x)
    return np.conj(x) if np.iscomplexobj(x) else x


def _inner(xs, ys):
    total = 0.0
    for x, y in zip(tree.tree_leaves(xs), tree.tree_leaves(ys)):
        x, y = _host(x), _host(y)
        if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
            continue
        total = total + np.sum(x.astype(np.complex128) * np.conj(y.astype(np.complex128))).real
    return total


def numerical_jvp(f, primals, tangents, eps=_default_eps):
    """The central finite difference (f(x + eps t) - f(x - eps t)) / 2 eps."""
    plus = f(*tree.tree_map(lambda x, t: _axpy(eps, t, x), primals, tangents))
    minus = f(*tree.tree_map(lambda x, t: _axpy(-eps, t, x), primals, tangents))
    return tree.tree_map(lambda a, b: _difference(_host(a), _host(b), eps), plus, minus)


def _difference(plus, minus, eps):
    if not (np.issubdtype(plus.dtype, np.inexact) or plus.dtype == dtypes.bfloat16):
        return np.zeros(plus.shape, dtypes.float0)  # integer outputs have no derivative
    wide = np.complex128 if np.iscomplexobj(plus) else np.float64
    return (plus.astype(wide) - minus.astype(wide)) / (2 * eps)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=_default_eps, rng=None):
    """`f_jvp(args, tangents)` against f's value and finite differences along random tangents."""
    rng = rng or np.random.RandomState(0)  # jax's tangents
    tangents = tree.tree_map(lambda x: _random_like(rng, x), args)
    value, tangent_out = f_jvp(args, tangents)
    expected_value = f(*args)
    tol = _tolerance(tree.tree_leaves(args), None)
    _assert_close(value, expected_value, atol or tol, rtol or tol, "jvp primal output")
    expected_tangent = numerical_jvp(f, args, tangents, eps)
    tol = _tolerance(tree.tree_leaves(tangent_out), None)
    _assert_close(tangent_out, expected_tangent, atol or tol, rtol or tol, "jvp tangent vs finite differences")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=_default_eps, rng=None):
    """<vjp(ct), t> against <ct, finite-difference jvp(t)> for random t and ct."""
    rng = rng or np.random.RandomState(0)  # jax's tangents and cotangents
    value, pullback = f_vjp(*args)
    expected_value = f(*args)
    tol = _tolerance(tree.tree_leaves(args), None)
    _assert_close(value, expected_value, atol or tol, rtol or tol, "vjp primal output")
    tangents = tree.tree_map(lambda x: _random_like(rng, x), args)
    cotangents = tree.tree_map(lambda x: _random_like(rng, x), value)
    # numax's cotangents are not conjugated (as JAX's): the Hermitian adjoint is conj . pullback . conj.
    cts_in = tree.tree_map(_conj, pullback(tree.tree_map(_conj, cotangents)))
    numerical = numerical_jvp(f, args, tangents, eps)
    ip = _inner(tangents, cts_in)
    ip_expected = _inner(numerical, cotangents)
    tol = atol or _tolerance(tree.tree_leaves(value), None)
    np.testing.assert_allclose(ip, ip_expected, atol=tol * max(1.0, abs(ip_expected)) * 10, rtol=rtol or tol,
                               err_msg="vjp inner product vs finite differences")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Checks the derivatives of `f` at `args` up to `order` in the given modes against finite differences."""
    eps = eps or _default_eps
    args = tuple(args)

    # As jax's: each check draws from a fresh RandomState(0); a higher order checks the jvp as a function of
    # (primals, tangents) at (args, args), and the vjp applied to the primal output.
    def check(f, args, order):
        if "fwd" in modes:
            check_jvp(f, lambda primals, tangents: jvp(f, primals, tangents), args, atol, rtol, eps)
            if order > 1:
                check(lambda primals, tangents: jvp(f, primals, tangents), (args, args), order - 1)
        if "rev" in modes:
            check_vjp(f, lambda *primals: vjp(f, *primals), args, atol, rtol, eps)
            if order > 1:
                def f_vjp(*primals):
                    value, pullback = vjp(f, *primals)
                    return pullback(value)
                check(f_vjp, args, order - 1)

    check(f, args, order)
