"""Differentiation rules of the reductions, cumulative reductions, windowed reductions and sorting.

Every case is written once as `fn(lax, *args)`, so the same code runs with `numax.lax` and with `jax.lax`:
it is checked against finite differences to second order (float64, forward and reverse) at inputs without
ties, and its JVP and VJP are compared with JAX's in float32. JAX's conventions at ties (max/min share the
tangent equally, windowed max picks one element, sort follows its permutation) and at zeros of products are
compared with `jax.grad` separately, and numpy-level code is compared with `jax.grad` of the same `jnp` code.
"""

import functools
from typing import NamedTuple

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.core.dtypes import float0
from oracle import jit_all, jit_table

import numax
import numax.numpy as xnp
from numax import lax as nlax
from numax.test_util import check_grads


class Case(NamedTuple):
    name: str
    fn: object  # fn(lax, *args)
    shapes: tuple
    reverse_like_jax: bool = True  # False where JAX itself has no VJP (the generic reduce_window)


def _window(kind, init, *args, **kwargs):
    def fn(lax, x):
        return lax.reduce_window(x, np.asarray(init, x.dtype), getattr(lax, kind), *args, **kwargs)
    return fn


def _sort_pair(num_keys, dimension=-1):
    return lambda lax, x, y: lax.sort((x, y), dimension=dimension, num_keys=num_keys)


# Shapes are shared where the shape is not the point, so that the eagerly compiled pieces of the rules (in
# test_check_grads) are reused: the max/min reductions, sorts and top_k work on (3, 4); reduce_prod's tree of
# products runs over the same (6, 2) operand for "reduce_prod" and "reduce_prod_axes" (6: an even and an odd level).
CASES = [
    Case("reduce_sum", lambda lax, x: lax.reduce_sum(x, (1,)), [(3, 4)]),
    Case("reduce_sum_axes", lambda lax, x: lax.reduce_sum(x, (0, 2)), [(2, 3, 4)]),
    Case("reduce_sum_all", lambda lax, x: lax.reduce_sum(x, (0, 1)), [(3, 2)]),
    Case("reduce_sum_empty", lambda lax, x: lax.reduce_sum(x, (0,)), [(0, 3)]),
    Case("reduce_prod", lambda lax, x: lax.reduce_prod(x, (1,)), [(2, 6)]),
    Case("reduce_prod_axes", lambda lax, x: lax.reduce_prod(x, (0, 2)), [(2, 2, 3)]),
    Case("reduce_prod_all", lambda lax, x: lax.reduce_prod(x, (0, 1)), [(2, 3)]),
    Case("reduce_prod_one", lambda lax, x: lax.reduce_prod(x, (0,)), [(1, 3)]),
    Case("reduce_prod_empty", lambda lax, x: lax.reduce_prod(x, (1,)), [(2, 0)]),
    Case("reduce_max", lambda lax, x: lax.reduce_max(x, (1,)), [(3, 4)]),
    Case("reduce_max_axes", lambda lax, x: lax.reduce_max(x, (0, 2)), [(2, 3, 4)]),
    Case("reduce_min", lambda lax, x: lax.reduce_min(x, (0,)), [(3, 4)]),
    Case("reduce_min_all", lambda lax, x: lax.reduce_min(x, (0, 1)), [(3, 4)]),
    # Scans share shapes ((2, 6) along 1, (5, 2) along 0) so that their eagerly compiled pieces are reused.
    Case("cumsum", lambda lax, x: lax.cumsum(x, 1), [(2, 6)]),
    Case("cumsum_reverse", lambda lax, x: lax.cumsum(x, 0, reverse=True), [(5, 2)]),
    Case("cumprod", lambda lax, x: lax.cumprod(x, 1), [(2, 6)]),
    Case("cumprod_reverse", lambda lax, x: lax.cumprod(x, 0, reverse=True), [(5, 2)]),
    Case("cumprod_one", lambda lax, x: lax.cumprod(x, 0), [(1, 2)]),
    Case("cummax", lambda lax, x: lax.cummax(x, 1), [(2, 6)]),
    Case("cummax_reverse", lambda lax, x: lax.cummax(x, 0, reverse=True), [(5, 2)]),
    Case("cummin", lambda lax, x: lax.cummin(x, 0), [(5, 2)]),
    Case("cummin_reverse", lambda lax, x: lax.cummin(x, 1, reverse=True), [(2, 6)]),
    Case("cumlogsumexp", lambda lax, x: lax.cumlogsumexp(x, 1), [(2, 6)]),
    Case("cumlogsumexp_reverse", lambda lax, x: lax.cumlogsumexp(x, 0, reverse=True), [(5, 2)]),
    # Windowed reductions with their identities use reduce_window_sum/max/min.
    Case("window_sum", _window("add", 0, (2, 3), (1, 2), "VALID"), [(4, 7)]),
    Case("window_sum_same", _window("add", 0, (3, 3), (2, 1), "SAME"), [(5, 4)]),
    Case("window_sum_padding", _window("add", 0, (2, 2), (1, 1), ((1, 2), (0, 1))), [(3, 4)]),
    Case("window_sum_negative_padding", _window("add", 0, (2, 1), (1, 1), ((-1, 1), (1, -1))), [(4, 3)]),
    Case("window_sum_dilations", _window("add", 0, (2, 2), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)), [(4, 5)]),
    Case("window_sum_uncovered", _window("add", 0, (2, 2), (3, 3), "VALID"), [(7, 6)]),
    Case("window_max_pool", _window("max", -np.inf, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), [(2, 4, 6, 3)]),
    Case("window_max_same", _window("max", -np.inf, (3, 3), (1, 1), "SAME"), [(4, 5)]),
    Case("window_max_base_dilation", _window("max", -np.inf, (2, 3), (1, 2), ((0, 1), (1, 1)), (2, 1)), [(3, 5)]),
    Case("window_min", _window("min", np.inf, (2, 2), (1, 2), ((1, 0), (0, 0))), [(4, 5)]),
    # The generic form: add, mul, max and min with other initial values (JAX has no VJP for it).
    Case("window_add_init", _window("add", 1.5, (2, 2), (1, 1), ((1, 0), (0, 1))), [(3, 4)], False),
    Case("window_mul", _window("mul", 1.0, (2, 2), (1, 2), ((0, 1), (1, 0))), [(3, 4)], False),
    Case("window_mul_init", _window("mul", 0.5, (3,), (1,), "SAME", (2,)), [(4,)], False),
    Case("window_max_init", _window("max", 0.3, (2, 2), (1, 1), "SAME"), [(3, 4)], False),
    Case("window_min_init", _window("min", -0.2, (3,), (2,), ((1, 1),)), [(6,)], False),
    Case("sort", lambda lax, x: lax.sort(x), [(3, 4)]),
    Case("sort_dimension0", lambda lax, x: lax.sort(x, dimension=0), [(4, 3)]),
    Case("sort_1d", lambda lax, x: lax.sort(x), [(7,)]),
    Case("sort_pair", _sort_pair(1), [(3, 4), (3, 4)]),
    Case("sort_pair_dimension0", _sort_pair(1, 0), [(4, 2), (4, 2)]),
    Case("sort_two_keys", _sort_pair(2), [(2, 5), (2, 5)]),
    Case("sort_key_val", lambda lax, x, y: lax.sort_key_val(x, y), [(6,), (6,)]),
    Case("top_k", lambda lax, x: lax.top_k(x, 3)[0], [(3, 4)]),
    Case("top_k_all", lambda lax, x: lax.top_k(x, 4)[0], [(4,)]),
    Case("top_k_axis0", lambda lax, x: lax.top_k(x, 3, axis=0)[0], [(4, 3)]),  # top_k of its transpose, (3, 4)
]


def _args(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2.0, 2.0, shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_grads(case, x64):
    check_grads(lambda *args: case.fn(nlax, *args), _args(case.shapes, np.float64), order=2, modes=("fwd", "rev"))


def _directions(fn, args, seed):
    """(args, random tangents for them, a random cotangent for fn's outputs)."""
    rng = np.random.default_rng(seed)
    tangents = [rng.standard_normal(np.shape(a)).astype(a.dtype) for a in args]
    out_shapes = jax.eval_shape(lambda *a: fn(jax.lax, *a), *args)
    return args, tangents, jax.tree.map(lambda e: rng.standard_normal(e.shape).astype(e.dtype), out_shapes)


def _jvp_and_vjp(lax, jvp, vjp, fn, reverse):
    """fn's outputs and JVP along the tangents and, if `reverse`, its VJP of the cotangent: one program."""
    def outputs(args, tangents, cotangent):
        f = lambda *a: fn(lax, *a)  # noqa: E731
        out, tangent_out = jvp(f, args, tangents)
        return (out, tangent_out, vjp(f, *args)[1](cotangent)) if reverse else (out, tangent_out)

    return outputs


def _compare_with_jax(fn, args, seed=1, reverse=True, expected=None):
    """JVP along random tangents and VJP of a random cotangent, numax against JAX (float32), both under jit
    (one compilation instead of one per primitive: eager rules are exercised by test_check_grads). `expected`:
    JAX's results when a table computed them already."""
    inputs = _directions(fn, args, seed)
    got = numax.jit(_jvp_and_vjp(nlax, numax.jvp, numax.vjp, fn, reverse))(*inputs)
    if expected is None:
        expected = jax.jit(_jvp_and_vjp(jax.lax, jax.jvp, jax.vjp, fn, reverse))(*inputs)
    (out, tangent_out), (expected_out, expected_tangent) = got[:2], expected[:2]
    jax.tree.map(lambda a, e: assert_close(a, e, scale=10), tuple(out) if isinstance(out, (list, tuple)) else out,
                 tuple(expected_out) if isinstance(expected_out, (list, tuple)) else expected_out)
    jax.tree.map(lambda a, e: assert_close(a, e, scale=10),
                 tuple(tangent_out) if isinstance(tangent_out, (list, tuple)) else tangent_out,
                 tuple(expected_tangent) if isinstance(expected_tangent, (list, tuple)) else expected_tangent)
    if not reverse:
        return
    cts, expected_cts = got[2], expected[2]
    assert len(cts) == len(args)
    for ct, expected_ct, arg in zip(cts, expected_cts, args):
        assert np.shape(ct) == np.shape(arg) and np.asarray(ct).dtype == arg.dtype
        assert_close(ct, expected_ct, scale=10)


@functools.cache
def _expected_against_jax():
    """JAX's side of test_against_jax for every case, from one jax.jit program."""
    return jit_table([case.name for case in CASES],
                     [_jvp_and_vjp(jax.lax, jax.jvp, jax.vjp, case.fn, case.reverse_like_jax) for case in CASES],
                     [_directions(case.fn, _args(case.shapes, np.float32), 1) for case in CASES])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_against_jax(case):
    _compare_with_jax(case.fn, _args(case.shapes, np.float32), reverse=case.reverse_like_jax,
                      expected=_expected_against_jax()[case.name])


# --- conventions at ties and zeros, against jax.grad ----------------------------------------------------------------
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0], [0.5, -4.0, 0.5, -4.0]], np.float32)
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 3.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 0.5, 3.0]],
                 np.float32)

def _out_shape(fn, x):
    """The shape of fn(jax.lax, x), from abstract evaluation (nothing compiled)."""
    return jax.eval_shape(lambda x: fn(jax.lax, x), x).shape


TIE_CASES = {
    "reduce_max": lambda lax, x: lax.reduce_max(x, (1,)),
    "reduce_min": lambda lax, x: lax.reduce_min(x, (1,)),
    "reduce_max_axis0": lambda lax, x: lax.reduce_max(x, (0,)),
    "reduce_min_all": lambda lax, x: lax.reduce_min(x, (0, 1)),
    "cummax": lambda lax, x: lax.cummax(x, 1),
    "cummin_reverse": lambda lax, x: lax.cummin(x, 1, reverse=True),
    "cummax_column": lambda lax, x: lax.cummax(x, 0),
    "window_max": _window("max", -np.inf, (1, 3), (1, 1), "VALID"),
    "window_min": _window("min", np.inf, (2, 2), (1, 1), "SAME"),
    "window_max_pool": _window("max", -np.inf, (2, 2), (1, 2), "VALID"),
    "sort": lambda lax, x: lax.sort(x),
    "sort_dimension0": lambda lax, x: lax.sort(x, dimension=0),
    "sort_pair": lambda lax, x: lax.sort((x, lax.sin(x)), num_keys=1)[1],
    "top_k": lambda lax, x: lax.top_k(x, 3)[0],
}


def _weighted_sum(lax, weights):
    """y -> sum(y * weights), with numax.lax's reduce_sum or with jnp.sum."""
    if lax is nlax:
        return lambda y: nlax.reduce_sum(y * weights, tuple(range(weights.ndim)))
    return lambda y: jnp.sum(y * weights)


def _grad_and_jvp(lax, grad, jvp, fn, weights):
    """(the gradient of sum(fn(x) * weights), the JVP of fn along t): one program for both."""
    def outputs(x, t):
        return grad(lambda x: _weighted_sum(lax, weights)(fn(lax, x)))(x), jvp(lambda x: fn(lax, x), (x,), (t,))[1]
    return outputs


def _tie_inputs(fn):
    """(weights of fn's outputs, a tangent of TIES)."""
    weights = np.random.default_rng(2).standard_normal(_out_shape(fn, TIES)).astype(np.float32)
    return weights, np.random.default_rng(3).standard_normal(TIES.shape).astype(np.float32)


@functools.cache
def _expected_ties():
    """JAX's side of test_ties_like_jax for every case, from one jax.jit program."""
    names = sorted(TIE_CASES)
    inputs = [_tie_inputs(TIE_CASES[name]) for name in names]
    return jit_table(names, [_grad_and_jvp(jax.lax, jax.grad, jax.jvp, TIE_CASES[name], weights)
                             for name, (weights, _) in zip(names, inputs)],
                     [(TIES, tangent) for _, tangent in inputs])


@pytest.mark.parametrize("name", sorted(TIE_CASES))
def test_ties_like_jax(name):
    fn = TIE_CASES[name]
    weights, tangent = _tie_inputs(fn)
    # The gradient and the JVP under one numax.jit (one compilation).
    grad, tangent_out = numax.jit(_grad_and_jvp(nlax, numax.grad, numax.jvp, fn, weights))(TIES, tangent)
    expected_grad, expected_tangent = _expected_ties()[name]
    assert_close(grad, expected_grad)
    assert_close(tangent_out, expected_tangent)


def _expected_like_jax(fns, args):
    """JAX's side of _compare_with_jax for each (fn, its arguments), from one jax.jit program."""
    return jit_all([_jvp_and_vjp(jax.lax, jax.jvp, jax.vjp, fn, True) for fn in fns],
                   [_directions(fn, a, 1) for fn, a in zip(fns, args)])


def test_window_of_padding_only_like_jax():
    """A window holding only padding has an infinite max and, as in JAX, a zero tangent."""
    fns = [_window("max", -np.inf, (2,), (1,), ((2, 0),)), _window("min", np.inf, (1, 2), (1, 1), ((0, 0), (0, 3)))]
    args = [_args([(3,)], np.float32), _args([(2, 3)], np.float32)]
    for fn, a, expected in zip(fns, args, _expected_like_jax(fns, args)):
        _compare_with_jax(fn, a, expected=expected)


COMPLEX_CASES = {
    "reduce_sum": lambda lax, x: lax.reduce_sum(x, (1,)),
    "reduce_prod": lambda lax, x: lax.reduce_prod(x, (1,)),
    "reduce_max": lambda lax, x: lax.reduce_max(x, (0,)),
    "cumsum": lambda lax, x: lax.cumsum(x, 1, reverse=True),
    "cumprod": lambda lax, x: lax.cumprod(x, 1),
    "window_sum": _window("add", 0, (2, 2), (1, 1), "SAME"),
    "sort": lambda lax, x: lax.sort(x, dimension=0),
}


def _complex_input():
    rng = np.random.default_rng(6)
    return (rng.uniform(-2, 2, (3, 4)) + 1j * rng.uniform(-2, 2, (3, 4))).astype(np.complex64)


@functools.cache
def _expected_complex():
    """JAX's side of test_complex_like_jax for every case, from one jax.jit program."""
    names = sorted(COMPLEX_CASES)
    fns = [COMPLEX_CASES[name] for name in names]
    return dict(zip(names, _expected_like_jax(fns, [[_complex_input()]] * len(names))))


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_like_jax(name):
    _compare_with_jax(COMPLEX_CASES[name], [_complex_input()], expected=_expected_complex()[name])


LOW_PRECISION_CASES = {
    "reduce_max": lambda lax, x: lax.reduce_max(x, (1,)),
    "reduce_prod": lambda lax, x: lax.reduce_prod(x, (0,)),
    "cumsum": lambda lax, x: lax.cumsum(x, 1),
    "cummax": lambda lax, x: lax.cummax(x, 0),
    "window_max": _window("max", -np.inf, (2, 2), (1, 1), "VALID"),
    "sort": lambda lax, x: lax.sort(x),
    "top_k": lambda lax, x: lax.top_k(x, 2)[0],
}


LOW_PRECISION_DTYPES = {name: [np.float16, jnp.bfloat16][i % 2] for i, name in enumerate(sorted(LOW_PRECISION_CASES))}


def _low_precision_input(dtype):
    return np.random.default_rng(7).permutation(np.linspace(-2, 2, 12)).reshape(3, 4).astype(dtype)


@functools.cache
def _expected_low_precision():
    """JAX's gradients for test_low_precision_like_jax, from one jax.jit program."""
    names = sorted(LOW_PRECISION_CASES)
    return jit_table(names, [jax.grad(lambda x, fn=LOW_PRECISION_CASES[name]: jnp.sum(fn(jax.lax, x)))
                             for name in names],
                     [(_low_precision_input(LOW_PRECISION_DTYPES[name]),) for name in names])


@pytest.mark.parametrize("name,dtype", LOW_PRECISION_DTYPES.items())
def test_low_precision_like_jax(name, dtype):
    fn = LOW_PRECISION_CASES[name]
    x = _low_precision_input(dtype)
    axes = tuple(range(len(_out_shape(fn, x))))
    grad = numax.jit(numax.grad(lambda x: nlax.reduce_sum(fn(nlax, x), axes)))(x)
    assert_close(grad, _expected_low_precision()[name])


def test_reduce_max_ties_share_equally():
    grad = numax.grad(lambda x: nlax.reduce_max(x, (0,)))(np.array([1.0, 3.0, 3.0, 3.0], np.float32))
    np.testing.assert_array_equal(np.asarray(grad), np.array([0, 1, 1, 1], np.float32) / 3)


def test_window_max_picks_first_of_ties():
    grad = numax.grad(lambda x: nlax.reduce_sum(_window("max", -np.inf, (3,), (1,), "VALID")(nlax, x), (0,)))(
        np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0], np.float32))
    np.testing.assert_array_equal(np.asarray(grad), np.array([0, 2, 1, 0, 1, 0], np.float32))


PRODUCT_CASES = {"reduce_prod_rows": lambda lax, x: lax.reduce_prod(x, (1,)),
                 "reduce_prod_columns": lambda lax, x: lax.reduce_prod(x, (0,)),
                 "reduce_prod_all": lambda lax, x: lax.reduce_prod(x[1:2, :3], (0, 1)),
                 "cumprod": lambda lax, x: lax.cumprod(x, 1),
                 "cumprod_reverse": lambda lax, x: lax.cumprod(x, 0, reverse=True)}
PRODUCT_DIRECTION = np.random.default_rng(5).standard_normal(ZEROS.shape).astype(np.float32)


def _grad_and_hvp(lax, grad, jvp, fn):
    """(the gradient of sum(fn(x) * weights), a Hessian-vector product along v (forward over reverse))."""
    weights = np.random.default_rng(4).standard_normal(_out_shape(fn, ZEROS)).astype(np.float32)
    loss = lambda x: _weighted_sum(lax, weights)(fn(lax, x))  # noqa: E731
    return lambda x, v: (grad(loss)(x), jvp(grad(loss), (x,), (v,))[1])


@functools.cache
def _expected_products():
    """JAX's side of test_products_with_zeros_like_jax for every case, from one jax.jit program."""
    return jit_table(list(PRODUCT_CASES),
                     [_grad_and_hvp(jax.lax, jax.grad, jax.jvp, fn) for fn in PRODUCT_CASES.values()],
                     [(ZEROS, PRODUCT_DIRECTION)] * len(PRODUCT_CASES))


@pytest.mark.parametrize("name", list(PRODUCT_CASES))
def test_products_with_zeros_like_jax(name):
    # numax under one jit (the eager rules are checked by test_check_grads, at a zero by
    # test_reduce_prod_single_zero_gradient).
    grad, hvp = numax.jit(_grad_and_hvp(nlax, numax.grad, numax.jvp, PRODUCT_CASES[name]))(ZEROS, PRODUCT_DIRECTION)
    expected_grad, expected_hvp = _expected_products()[name]
    assert_close(grad, expected_grad)
    assert_close(hvp, expected_hvp, scale=10)


def test_reduce_prod_single_zero_gradient():
    """The gradient at the one zero is the product of the others, with no division by zero."""
    grad = numax.grad(lambda x: nlax.reduce_prod(x, (0,)))(np.array([2.0, 0.0, 3.0, -1.0, 0.5], np.float32))
    np.testing.assert_array_equal(np.asarray(grad), np.array([0, -3, 0, 0, 0], np.float32))


# --- integer-valued outputs: zero tangents ---------------------------------------------------------------------------
def test_arg_reductions_have_zero_tangents():
    x = _args([(3, 4)], np.float32)[0]
    for fn in (lambda x: nlax.argmax(x, 1, np.int32), lambda x: nlax.argmin(x, 0, np.int32)):
        out, tangent = numax.jvp(fn, (x,), (np.ones_like(x),))
        assert np.asarray(tangent).dtype == float0 and np.asarray(tangent).shape == np.shape(out)

    def loss(x):
        index = nlax.argmax(x, 1, np.int32)
        return nlax.reduce_sum(x * nlax.convert_element_type(index, np.float32)[:, None], (0, 1))

    assert_close(numax.grad(loss)(x), jax.jit(jax.grad(lambda x: jnp.sum(x * jnp.argmax(x, 1)[:, None])))(x))


def test_bitwise_reductions_have_zero_tangents():
    x = _args([(3, 4)], np.float32)[0]

    def loss(lax, x):
        positive = lax.gt(x, np.float32(0))
        counts = lax.reduce_or(positive, (1,)), lax.reduce_and(positive, (1,)), lax.reduce_xor(positive, (1,))
        scale = sum(lax.convert_element_type(c, np.float32) for c in counts)
        return lax.reduce_sum(lax.mul(lax.reduce_sum(x, (1,)), scale), (0,))

    assert_close(numax.grad(lambda x: loss(nlax, x))(x), jax.jit(jax.grad(lambda x: loss(jax.lax, x)))(x))
    out, tangent = numax.jvp(lambda n: nlax.reduce_or(n, (0,)), (np.arange(4, dtype=np.int32),),
                             (np.zeros(4, float0),))
    assert np.asarray(tangent).dtype == float0


def test_top_k_indices_have_zero_tangent():
    x = _args([(2, 5)], np.float32)[0]
    (values, indices), (t_values, t_indices) = numax.jvp(lambda x: nlax.top_k(x, 2), (x,), (np.ones_like(x),))
    assert np.asarray(t_indices).dtype == float0 and np.shape(t_indices) == (2, 2)
    np.testing.assert_array_equal(np.asarray(t_values), np.ones((2, 2), np.float32))


def test_sort_integer_operand_carries_along():
    """An integer operand sorted with float keys: the keys' tangents follow, the integers get float0."""
    keys = _args([(5,)], np.float32)[0]
    labels = np.arange(5, dtype=np.int32)

    def loss(lax, k):
        sorted_keys, sorted_labels = lax.sort((k, labels), num_keys=1)
        return lax.reduce_sum(sorted_keys * lax.convert_element_type(sorted_labels, np.float32), (0,))

    assert_close(numax.grad(lambda k: loss(nlax, k))(keys), jax.jit(jax.grad(lambda k: loss(jax.lax, k)))(keys))


def test_custom_window_computation_is_not_differentiable():
    x = _args([(5,)], np.float32)[0]

    def fn(x):
        return nlax.reduce_window(x, np.float32(0), lambda a, b: a + 2 * b, (2,), (1,), "VALID")

    with pytest.raises(NotImplementedError, match="reduce_window: differentiating .* custom function"):
        numax.jvp(fn, (x,), (x,))
    with pytest.raises(NotImplementedError, match="custom function"):
        numax.grad(lambda x: nlax.reduce_sum(fn(x), (0,)))(x)


def test_window_init_value_gradient():
    """The initial value of a generic reduce_window is combined once per window (not at padding)."""
    x = np.arange(4, dtype=np.float32)
    grads = numax.grad(lambda x, init: nlax.reduce_sum(nlax.reduce_window(x, init, nlax.add, (3,), (1,), "SAME"),
                                                       (0,)), (0, 1))(x, np.float32(2.0))
    np.testing.assert_array_equal(np.asarray(grads[0]), np.array([2, 3, 3, 2], np.float32))
    assert float(grads[1]) == 4.0


# --- under jit -------------------------------------------------------------------------------------------------------
UNDER_JIT = ["reduce_prod_axes", "cummax_reverse", "window_max_pool", "sort_two_keys"]


def _sin_loss(case, lax, sum_):
    def fn(*a):
        out = case.fn(lax, *a)
        outs = out if isinstance(out, (list, tuple)) else [out]
        return sum(sum_(lax.sin(o)) for o in outs)
    return fn


@functools.cache
def _expected_under_jit():
    """JAX's gradients for test_grad_under_jit, from one jax.jit program."""
    cases = [next(c for c in CASES if c.name == name) for name in UNDER_JIT]
    return jit_table(UNDER_JIT, [jax.grad(_sin_loss(case, jax.lax, jnp.sum), tuple(range(len(case.shapes))))
                                 for case in cases], [_args(case.shapes, np.float32) for case in cases])


@pytest.mark.parametrize("name", UNDER_JIT)
def test_grad_under_jit(name):
    case = next(c for c in CASES if c.name == name)
    args = _args(case.shapes, np.float32)
    argnums = tuple(range(len(args)))
    numax_loss = _sin_loss(case, nlax, lambda y: nlax.reduce_sum(y, tuple(range(np.ndim(y)))))
    expected = _expected_under_jit()[name]
    for grads in (numax.jit(numax.grad(numax_loss, argnums))(*args), numax.grad(numax.jit(numax_loss), argnums)(*args)):
        for g, e in zip(grads, expected):
            assert_close(g, e, scale=10)


# --- numpy-level code, against jax.grad of the same jnp code -----------------------------------------------------
NUMPY_CASES = {
    "sum": lambda np_, x: np_.sum(x, axis=1),
    "prod": lambda np_, x: np_.prod(x, axis=0),
    "max": lambda np_, x: np_.max(x),
    "max_axis_keepdims": lambda np_, x: np_.max(x, axis=1, keepdims=True),
    "max_axes": lambda np_, x: np_.max(x[None], axis=(0, 2)),
    "min": lambda np_, x: np_.min(x, axis=0),
    "amax_keepdims": lambda np_, x: np_.amax(x, axis=0, keepdims=True),
    "mean": lambda np_, x: np_.mean(x, axis=1),
    "var": lambda np_, x: np_.var(x, axis=0),
    "std": lambda np_, x: np_.std(x, axis=1, keepdims=True),
    "cumsum": lambda np_, x: np_.cumsum(x, axis=1),
    "cumsum_flat": lambda np_, x: np_.cumsum(x),
    "cumprod": lambda np_, x: np_.cumprod(x, axis=0),
    "sort": lambda np_, x: np_.sort(x, axis=0),
    "sort_flat": lambda np_, x: np_.sort(x, axis=None),
    "argsort_take": lambda np_, x: np_.take_along_axis(x, np_.argsort(x, axis=1), axis=1),
    "argsort_weights": lambda np_, x: x[np_.argsort(x[:, 0])] * np_.arange(4.0),
    "median": lambda np_, x: np_.median(x, axis=1),
    "percentile": lambda np_, x: np_.percentile(x, 30.0, axis=0),
    "quantile": lambda np_, x: np_.quantile(x, np_.array([0.2, 0.9])),
}


def _numpy_input_and_weights(fn):
    rng = np.random.default_rng(5)
    x = rng.uniform(-2.0, 2.0, (3, 4)).astype(np.float32)
    return x, rng.standard_normal(jax.eval_shape(lambda x: fn(jnp, x), x).shape).astype(np.float32)


@functools.cache
def _expected_numpy_grads():
    """jax.grad of every NUMPY_CASES entry, from one jax.jit program."""
    names = sorted(NUMPY_CASES)
    inputs = [_numpy_input_and_weights(NUMPY_CASES[name]) for name in names]
    return jit_table(names, [jax.grad(lambda x, fn=NUMPY_CASES[name], w=w: jnp.sum(fn(jnp, x) * w))
                             for name, (_, w) in zip(names, inputs)], [(x,) for x, _ in inputs])


# numax's gradient under jit for every case (one compilation), and also eagerly for these (eager numpy-level
# gradients are compared with jax in test_grad_numpy.py too; the eager rules of the primitives in test_check_grads).
NUMPY_EAGER = ("max_axis_keepdims", "var", "cumprod", "argsort_take", "median")


@pytest.mark.parametrize("name", sorted(NUMPY_CASES))
def test_numpy_reductions_grad_like_jax(name):
    fn = NUMPY_CASES[name]
    x, weights = _numpy_input_and_weights(fn)
    expected = _expected_numpy_grads()[name]
    jitted = numax.jit(numax.grad(lambda x: xnp.sum(fn(xnp, x) * weights)))(xnp.asarray(x))
    assert_close(jitted, expected, scale=10)
    if name in NUMPY_EAGER:
        grad = numax.grad(lambda x: xnp.sum(fn(xnp, x) * weights))(xnp.asarray(x))
        assert_close(grad, expected, scale=10)


def test_logsumexp_grad_like_jax():
    import jax.scipy.special as jsp

    import numax.scipy.special as xsp

    x = _args([(3, 5)], np.float32)[0]

    def grads(np_, sp, grad):  # both axes' gradients, as one program (the eager path: test_grad_numpy.py)
        return lambda x: [grad(lambda y: np_.sum(sp.logsumexp(y, axis=axis)))(x) for axis in (None, 1)]

    for got, expected in zip(numax.jit(grads(xnp, xsp, numax.grad))(x), jax.jit(grads(jnp, jsp, jax.grad))(x)):
        assert_close(got, expected)


def test_max_pool_like_jax():
    """Pooling written as users write it: reduce_window max and sum over NHWC images."""
    images = _args([(2, 6, 6, 3)], np.float32)[0]

    def pools(lax, x):
        window, strides = (1, 3, 3, 1), (1, 2, 2, 1)
        pooled = lax.reduce_window(x, -np.inf, lax.max, window, strides, "SAME")
        average = lax.reduce_window(x, 0.0, lax.add, window, strides, "VALID") / 9.0
        return lax.reduce_sum(lax.sin(pooled), (0, 1, 2, 3)) + lax.reduce_sum(average * average, (0, 1, 2, 3))

    expected = jax.jit(jax.grad(lambda x: pools(jax.lax, x)))(images)
    assert_close(numax.grad(lambda x: pools(nlax, x))(images), expected, scale=10)
    assert_close(numax.jit(numax.grad(lambda x: pools(nlax, x)))(images), expected, scale=10)


# --- hypothesis: shapes and axes -------------------------------------------------------------------------------------
def _check_both(fn, shapes, reverse=True, order=1):
    numax.config.update("numax_enable_x64", True)
    try:
        check_grads(lambda *a: fn(nlax, *a), _args(shapes, np.float64), order=order,
                    modes=("fwd", "rev") if reverse else ("fwd",))
    finally:
        numax.config.update("numax_enable_x64", False)
    _compare_with_jax(fn, _args(shapes, np.float32), reverse=reverse)


shapes_1_to_3 = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=4)
@given(shape=shapes_1_to_3, data=st.data(), name=st.sampled_from(["reduce_sum", "reduce_prod", "reduce_max",
                                                                   "reduce_min"]))
def test_reductions_hypothesis(shape, data, name):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    _check_both(lambda lax, x: getattr(lax, name)(x, axes), [shape], order=2)


@settings(max_examples=4)
@given(shape=shapes_1_to_3, data=st.data(), name=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin",
                                                                   "cumlogsumexp"]))
def test_cumulative_hypothesis(shape, data, name):
    axis = data.draw(st.integers(0, len(shape) - 1))
    reverse = data.draw(st.booleans())
    _check_both(lambda lax, x: getattr(lax, name)(x, axis, reverse), [shape])


@settings(max_examples=4)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=2).map(tuple), data=st.data(),
       kind=st.sampled_from(["add", "max", "min"]))
def test_reduce_window_hypothesis(shape, data, kind):
    rank = len(shape)
    window = tuple(data.draw(st.integers(1, 3)) for _ in range(rank))
    strides = tuple(data.draw(st.integers(1, 2)) for _ in range(rank))
    padding = data.draw(st.sampled_from(["VALID", "SAME"]))
    dilation = tuple(data.draw(st.integers(1, 2)) for _ in range(rank))
    init = {"add": 0, "max": -np.inf, "min": np.inf}[kind]
    fn = _window(kind, init, window, strides, padding, None, dilation)
    # JAX has no VJP for windowed max/min with window dilation; numax has one (checked against finite differences).
    like_jax = kind == "add" or dilation == (1,) * rank
    if not np.all(np.isfinite(fn(jax.lax, _args([shape], np.float32)[0]))):
        # Windows made only of padding: infinite results, where finite differences say nothing; JAX's tangent is 0.
        _compare_with_jax(fn, _args([shape], np.float32), reverse=like_jax)
        return
    _check_both(fn, [shape], reverse=like_jax)
    if not like_jax:
        numax.config.update("numax_enable_x64", True)
        try:
            check_grads(lambda x: fn(nlax, x), _args([shape], np.float64), order=2, modes=("rev",))
        finally:
            numax.config.update("numax_enable_x64", False)


@settings(max_examples=4)
@given(shape=shapes_1_to_3, data=st.data())
def test_sort_top_k_hypothesis(shape, data):
    dimension = data.draw(st.integers(0, len(shape) - 1))
    _check_both(lambda lax, x: lax.sort(x, dimension=dimension), [shape])
    k = data.draw(st.integers(0, shape[-1]))
    _check_both(lambda lax, x: lax.top_k(x, k)[0], [shape])
