"""vmap of reductions, cumulative ops, windowed reductions, sort/top_k, dot_general and convolution.

Each case is checked against jax.vmap of the same jax.lax code and against stacking numax's per-example
results, with the batch dimension at several positions (and unbatched operands mixed in), under jit, in
nested vmaps and through grad; the IR of batched matmuls and convolutions is checked to hold one op each.
"""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import jit_all

import numax
from numax import lax
from tests.harness import jax

jlax = jax.lax
BATCH = 3


# --- helpers --------------------------------------------------------------------------------------------------
def batched_input(rng, shape, axis, dtype="float32", size=BATCH):
    """A random array of per-example `shape` with `size` examples stacked at `axis` (None: unbatched)."""
    if axis is not None:
        axis = axis % (len(shape) + 1)
        shape = tuple(shape[:axis]) + (size,) + tuple(shape[axis:])
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


def example(args, in_axes, index):
    return [a if axis is None else np.take(a, index, axis) for a, axis in zip(args, in_axes)]


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def assert_all_close(actual, expected, atol=1e-5, rtol=1e-5):
    actual, expected = as_list(actual), as_list(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, (a.shape, e.shape)
        assert a.dtype == e.dtype, (a.dtype, e.dtype)
        np.testing.assert_allclose(a, e, atol=atol, rtol=rtol)


def check_vmap(numax_fn, jax_fn, args, in_axes, out_axes=0, atol=1e-5, rtol=1e-5, expected=None):
    """numax.vmap(f) against jax.vmap(f) (both jitted; `expected`: jax's results when a table computed them) and
    against a stack of numax's per-example results. numax's batched and per-example results come from one
    jitted program (one compile per case)."""
    in_axes = tuple(in_axes)
    size = next(np.shape(a)[axis] for a, axis in zip(args, in_axes) if axis is not None)
    batched = numax.vmap(numax_fn, in_axes=in_axes, out_axes=out_axes)
    actual, results = numax.jit(lambda args, examples: (batched(*args), [as_list(numax_fn(*e)) for e in examples]))(
        list(args), [example(args, in_axes, i) for i in range(size)])
    if expected is None:
        expected = jax.jit(jax.vmap(jax_fn, in_axes=in_axes, out_axes=out_axes))(*args)
    assert_all_close(actual, expected, atol, rtol)
    stacked = [np.stack([np.asarray(r[k]) for r in results], axis=out_axes) for k in range(len(results[0]))]
    assert_all_close(actual, stacked if isinstance(actual, (list, tuple)) else stacked[0], atol, rtol)
    return actual


@functools.cache
def _expected_table(build, params):
    """jax.vmap's results (jitted) for every case of a parametrized test, from one jax.jit program.
    `build(rng, *key)` gives a case's (f, args, in_axes), `f(lax module)` its function; each case's operands are
    those its test draws from its `rng` fixture (a fresh default_rng(0))."""
    cases = [build(np.random.default_rng(0), *key) for key in params]
    return jit_all([jax.vmap(f(jlax), in_axes=tuple(in_axes)) for f, _, in_axes in cases],
                   [args for _, args, _ in cases])


def expected_of(build, params, key):
    """jax's result for the case `key` of a parametrized test whose cases are `params`, from the test's table."""
    return _expected_table(build, params)[params.index(key)]


def check_case(build, params, key, rng, atol=1e-5, rtol=1e-5):
    """check_vmap of the case `build(rng, *key)` of a parametrized test whose cases are `params`."""
    f, args, in_axes = build(rng, *key)
    return check_vmap(f(lax), f(jlax), args, in_axes, atol=atol, rtol=rtol, expected=expected_of(build, params, key))


def count_primitives(closed, name):
    return sum(1 for eq in closed.equations if eq.primitive.name == name)


def primitive_names(closed):
    return [eq.primitive.name for eq in closed.equations]


# --- reductions -----------------------------------------------------------------------------------------------
REDUCTIONS = [
    ("reduce_sum", "float32"), ("reduce_prod", "float32"), ("reduce_max", "float32"), ("reduce_min", "int32"),
    ("reduce_and", "bool"), ("reduce_or", "bool"), ("reduce_xor", "int32"),
]


REDUCTION_AXES = [((0,), 0), ((1,), 1), ((0, 2), -1), ((2,), 2), ((0, 1, 2), 1)]


def _reduction(rng, name, dtype, axes, in_axis):
    x = batched_input(rng, (2, 3, 4), in_axis, dtype)
    return (lambda lib: lambda a: getattr(lib, name)(a, axes)), [x], [in_axis]


@pytest.mark.parametrize("name,dtype", REDUCTIONS)
@pytest.mark.parametrize("axes,in_axis", REDUCTION_AXES)
def test_reductions(rng, name, dtype, axes, in_axis):
    params = tuple(r + a for r, a in itertools.product(REDUCTIONS, REDUCTION_AXES))
    out = check_case(_reduction, params, (name, dtype, axes, in_axis), rng)
    assert out.shape == (BATCH,) + tuple(d for i, d in enumerate((2, 3, 4)) if i not in axes)


ARG_REDUCTIONS = ["argmax", "argmin"]
ARG_AXES = [(0, 0), (0, 1), (1, 0), (1, -1), (2, 2)]


def _arg_reduction(rng, name, axis, in_axis):
    x = batched_input(rng, (3, 4, 2), in_axis, "int32")  # small integers: ties pick the lowest index
    return (lambda lib: lambda a: getattr(lib, name)(a, axis, np.int32)), [x], [in_axis]


@pytest.mark.parametrize("name", ARG_REDUCTIONS)
@pytest.mark.parametrize("axis,in_axis", ARG_AXES)
def test_arg_reductions(rng, name, axis, in_axis):
    params = tuple((n,) + a for n, a in itertools.product(ARG_REDUCTIONS, ARG_AXES))
    check_case(_arg_reduction, params, (name, axis, in_axis), rng)


def test_reduction_keeps_batch_dim_in_place():
    # The rule reduces the batched operand as it is (no transpose before it); the batch dimension stays at 1.
    closed = numax.make_jaxpr(numax.vmap(lambda a: lax.reduce_sum(a, (1,)), in_axes=1, out_axes=1))(
        np.ones((2, 3, 4), np.float32))
    assert primitive_names(closed)[0] == "reduce_sum" and count_primitives(closed, "reduce_sum") == 1
    assert closed.equations[0].outvars[0].aval.shape == (2, 3)
    assert closed.equations[0].params["axes"] == (2,)


@settings(max_examples=10)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_reduce_sum_hypothesis(shape, data):
    rank = len(shape)
    in_axis = data.draw(st.integers(-rank - 1, rank))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    out_axis = data.draw(st.integers(0, rank - len(axes)))
    x = batched_input(np.random.default_rng(rank), shape, in_axis)
    actual = numax.vmap(lambda a: lax.reduce_sum(a, axes), in_axes=in_axis, out_axes=out_axis)(x)
    expected = np.moveaxis(np.sum(np.moveaxis(x, in_axis, 0), tuple(a + 1 for a in axes)), 0, out_axis)
    assert_all_close(actual, expected.astype(np.float32), atol=1e-5)


def test_reductions_nested_and_out_axes(rng):
    x = batched_input(rng, (4, 5, 2), 1)  # shape (4, 3, 5, 2): inner vmap over axis 0, outer over axis 1
    inner = lambda f: (lambda a: f.reduce_max(a, (1,)))
    actual = numax.vmap(numax.vmap(inner(lax), in_axes=0), in_axes=1, out_axes=-1)(x)
    expected = jax.vmap(jax.vmap(inner(jlax), in_axes=0), in_axes=1, out_axes=-1)(x)
    assert_all_close(actual, expected)


# --- cumulative -------------------------------------------------------------------------------------------------
CUMULATIVES = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
CUMULATIVE_AXES = [(0, 0, False), (0, 1, True), (1, 0, True), (1, -1, False)]


def _cumulative(rng, name, axis, in_axis, reverse):
    x = batched_input(rng, (4, 3), in_axis)
    return (lambda lib: lambda a: getattr(lib, name)(a, axis, reverse)), [x], [in_axis]


@pytest.mark.parametrize("name", CUMULATIVES)
@pytest.mark.parametrize("axis,in_axis,reverse", CUMULATIVE_AXES)
def test_cumulative(rng, name, axis, in_axis, reverse):
    params = tuple((n,) + a for n, a in itertools.product(CUMULATIVES, CUMULATIVE_AXES))
    check_case(_cumulative, params, (name, axis, in_axis, reverse), rng, atol=1e-4, rtol=1e-4)


def test_cumsum_int_nested(rng):
    x = batched_input(rng, (2, 5), 0, "int32")  # (3, 2, 5)
    f = lambda lib: (lambda a: lib.cumsum(a, 0, reverse=True))
    assert_all_close(numax.vmap(numax.vmap(f(lax), in_axes=1), in_axes=2)(x),
                     jax.vmap(jax.vmap(f(jlax), in_axes=1), in_axes=2)(x))


# --- windows ----------------------------------------------------------------------------------------------------
WINDOWS = [
    # (computation name, init value, window, strides, padding, base dilation, window dilation)
    ("add", 0.0, (2, 2), (1, 1), "VALID", None, None),
    ("max", -np.inf, (2, 3), (2, 1), "SAME", None, None),
    ("min", np.inf, (3, 2), (1, 2), ((1, 0), (0, 2)), (1, 2), (2, 1)),
    ("mul", 1.0, (2, 2), (1, 1), "SAME", None, None),
    ("max", 0.5, (2, 2), (1, 1), "VALID", None, None),  # not the identity: the generic reduce_window
]


WINDOW_AXES = [0, 1, -1]


def _reduce_window(rng, case, in_axis):
    computation, init, window, strides, padding, base, dilation = case

    def f(lib):
        return lambda a: lib.reduce_window(a, np.float32(init), getattr(lib, computation), window, strides, padding,
                                           base, dilation)

    return f, [batched_input(rng, (5, 6), in_axis)], [in_axis]


@pytest.mark.parametrize("case", WINDOWS)
@pytest.mark.parametrize("in_axis", WINDOW_AXES)
def test_reduce_window(rng, case, in_axis):
    check_case(_reduce_window, tuple(itertools.product(WINDOWS, WINDOW_AXES)), (case, in_axis), rng,
               atol=1e-4, rtol=1e-4)


def test_reduce_window_single_op_in_ir():
    f = lambda a: lax.reduce_window(a, np.float32(-np.inf), lax.max, (2, 2), (1, 1), "VALID")
    closed = numax.make_jaxpr(numax.vmap(f, in_axes=1))(np.ones((5, 3, 6), np.float32))
    assert count_primitives(closed, "reduce_window_max") == 1
    (equation,) = [eq for eq in closed.equations if eq.primitive.name == "reduce_window_max"]
    assert equation.params["window_dimensions"] == (2, 1, 2)


def test_reduce_window_batched_init_is_refused(rng):
    x = batched_input(rng, (4,), 0)
    with pytest.raises(NotImplementedError, match="init_value"):
        numax.vmap(lambda a, i: lax.reduce_window(a, i, lax.mul, (2,), (1,), "VALID"))(x, x[:, 0])


# --- sort and top_k ---------------------------------------------------------------------------------------------
SORT_DIMENSIONS = [0, 1, -1]
SORT_AXES = [(0, 0), (1, None), (None, -1), (2, 0)]


def _sort_multi_operand(rng, dimension, in_axes):
    keys = batched_input(rng, (4, 5), in_axes[0], "int32")  # ties: the values decide (num_keys=2)
    values = batched_input(rng, (4, 5), in_axes[1])
    return (lambda lib: lambda k, v: lib.sort((k, v), dimension=dimension, num_keys=2)), [keys, values], in_axes


@pytest.mark.parametrize("dimension", SORT_DIMENSIONS)
@pytest.mark.parametrize("in_axes", SORT_AXES)
def test_sort_multi_operand(rng, dimension, in_axes):
    check_case(_sort_multi_operand, tuple(itertools.product(SORT_DIMENSIONS, SORT_AXES)), (dimension, in_axes), rng)


SORT_SINGLE_AXES = [0, 1, -1]


def _sort_single_and_key_val(rng, in_axis):
    def f(lib):
        return lambda a: (lib.sort(a, dimension=0), *lib.sort_key_val(a, -a, 1))

    return f, [batched_input(rng, (4, 5), in_axis)], [in_axis]


@pytest.mark.parametrize("in_axis", SORT_SINGLE_AXES)
def test_sort_single_and_key_val(rng, in_axis):
    # A single-operand sort and a key-value sort of the same operand (each case one program per library).
    check_case(_sort_single_and_key_val, tuple((a,) for a in SORT_SINGLE_AXES), (in_axis,), rng)


def test_sort_is_one_op():
    f = lambda k, v: lax.sort((k, v), dimension=0, num_keys=1)
    closed = numax.make_jaxpr(numax.vmap(f, in_axes=(1, 1), out_axes=1))(np.ones((4, 3), np.float32),
                                                                          np.ones((4, 3), np.float32))
    assert [eq.outvars[0].aval.shape for eq in closed.equations[:1]] == [(4, 3)]
    assert primitive_names(closed)[0] == "sort" and count_primitives(closed, "sort") == 1
    assert "broadcast_in_dim" not in primitive_names(closed)
    assert closed.equations[0].params["dimension"] == 0


TOP_K_IN_AXES = [0, 1, 2, -1]
TOP_K_AXES = [-1, 0]


def _top_k(rng, in_axis, axis):
    return (lambda lib: lambda a: lib.top_k(a, 3, axis=axis)), [batched_input(rng, (4, 6), in_axis)], [in_axis]


@pytest.mark.parametrize("in_axis", TOP_K_IN_AXES)
@pytest.mark.parametrize("axis", TOP_K_AXES)
def test_top_k(rng, in_axis, axis):
    check_case(_top_k, tuple(itertools.product(TOP_K_IN_AXES, TOP_K_AXES)), (in_axis, axis), rng)


def test_top_k_moves_batch_only_from_last():
    closed = numax.make_jaxpr(numax.vmap(lambda a: lax.top_k(a, 2), in_axes=0))(np.ones((3, 4, 6), np.float32))
    assert primitive_names(closed) == ["top_k"]
    closed = numax.make_jaxpr(numax.vmap(lambda a: lax.top_k(a, 2), in_axes=2))(np.ones((4, 6, 3), np.float32))
    assert primitive_names(closed) == ["transpose", "top_k"]


# --- dot_general ------------------------------------------------------------------------------------------------
DOT_CASES = [
    # (lhs shape, rhs shape, dimension numbers)
    ((4, 5), (5, 6), (((1,), (0,)), ((), ()))),
    ((5,), (5, 6), (((0,), (0,)), ((), ()))),
    ((5,), (5,), (((0,), (0,)), ((), ()))),
    ((2, 4, 5), (2, 5, 6), (((2,), (1,)), ((0,), (0,)))),
    ((5, 2, 4), (6, 5, 2), (((0,), (1,)), ((1,), (2,)))),
    ((3, 5, 4), (4, 3, 2), (((0, 2), (1, 0)), ((), ()))),
]
DOT_AXES = [(0, None), (None, 0), (0, 0), (1, None), (None, -1), (-1, 1), (1, -1)]


def _dot_general(rng, shapes, in_axes):
    lhs_shape, rhs_shape, numbers = shapes
    lhs = batched_input(rng, lhs_shape, in_axes[0])
    rhs = batched_input(rng, rhs_shape, in_axes[1])

    def f(lib):
        return lambda a, b: lib.dot_general(a, b, numbers, precision=lib.Precision.HIGHEST)

    return f, [lhs, rhs], in_axes


@pytest.mark.parametrize("shapes", DOT_CASES)
@pytest.mark.parametrize("in_axes", DOT_AXES)
def test_dot_general(rng, shapes, in_axes):
    check_case(_dot_general, tuple(itertools.product(DOT_CASES, DOT_AXES)), (shapes, in_axes), rng,
               atol=1e-4, rtol=1e-4)


def test_dot_general_preferred_type_and_ints(rng):
    lhs = batched_input(rng, (4, 5), 1, "int32")
    rhs = batched_input(rng, (5, 2), None, "int32")
    f = lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    # numpy is the oracle: XLA's GPU backend rejects jax's own int32 x int32 -> float32 dot (numax converts first)
    expected = np.einsum("ibk,kj->bij", lhs, rhs).astype(np.float32)
    assert_all_close(numax.jit(numax.vmap(f, in_axes=(1, None)))(lhs, rhs), expected, 0, 0)
    assert_all_close(np.stack([np.asarray(numax.jit(f)(lhs[:, b], rhs)) for b in range(lhs.shape[1])]), expected, 0, 0)


@pytest.mark.parametrize("in_axes", DOT_AXES)
def test_dot_general_is_one_op_without_broadcasts(in_axes):
    numbers = (((1,), (0,)), ((), ()))
    lhs = np.ones(tuple(np.insert([4, 5], in_axes[0] % 3, BATCH)) if in_axes[0] is not None else (4, 5), np.float32)
    rhs = np.ones(tuple(np.insert([5, 6], in_axes[1] % 3, BATCH)) if in_axes[1] is not None else (5, 6), np.float32)
    closed = numax.make_jaxpr(numax.vmap(lambda a, b: lax.dot_general(a, b, numbers), in_axes=in_axes))(lhs, rhs)
    names = primitive_names(closed)
    assert names.count("dot_general") == 1
    assert "broadcast_in_dim" not in names


@settings(max_examples=10)
@given(st.integers(0, 2), st.sampled_from([None, 0, 1, 2]), st.integers(1, 3), st.integers(1, 3))
def test_dot_general_hypothesis(lhs_axis, rhs_axis, m, n):
    rng = np.random.default_rng(m * 10 + n)
    numbers = (((1,), (1,)), ((0,), (0,)))  # (2, 4, m) x (2, 4, n), batch 0, contracting 1
    lhs = batched_input(rng, (2, 4, m), lhs_axis)
    rhs = batched_input(rng, (2, 4, n), rhs_axis)
    actual = numax.vmap(lambda a, b: lax.dot_general(a, b, numbers), in_axes=(lhs_axis, rhs_axis))(lhs, rhs)
    expected = jax.vmap(lambda a, b: jlax.dot_general(a, b, numbers), in_axes=(lhs_axis, rhs_axis))(lhs, rhs)
    assert_all_close(actual, expected, atol=1e-4, rtol=1e-4)


def test_dot_general_nested_vmap(rng):
    x = rng.normal(size=(4, 3, 5, 2)).astype(np.float32)  # outer batch 2 at -1, inner batch 3 at 1 of the rest
    w = rng.normal(size=(2, 5, 6)).astype(np.float32)     # outer batch at 0, no inner batch
    f = lambda lib: (lambda a, b: lib.dot_general(a, b, (((1,), (0,)), ((), ())), precision=lib.Precision.HIGHEST))
    actual = numax.vmap(numax.vmap(f(lax), in_axes=(1, None)), in_axes=(-1, 0), out_axes=1)(x, w)
    expected = jax.vmap(jax.vmap(f(jlax), in_axes=(1, None)), in_axes=(-1, 0), out_axes=1)(x, w)
    assert_all_close(actual, expected, atol=1e-4, rtol=1e-4)
    closed = numax.make_jaxpr(numax.vmap(numax.vmap(f(lax), in_axes=(1, None)), in_axes=(-1, 0)))(x, w)
    assert count_primitives(closed, "dot_general") == 1
    assert "broadcast_in_dim" not in primitive_names(closed)


# --- an MLP: per-example gradients and the IR ------------------------------------------------------------------
def mlp_params(rng, sizes=(5, 8, 4)):
    return [(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a), rng.normal(size=(b,)).astype(np.float32))
            for a, b in zip(sizes[:-1], sizes[1:])]


def mlp_loss(lib, params, x, y):
    """Squared error of a tanh MLP on one example; `lib` is numax or jax."""
    numpy = lib.numpy
    h = x
    for i, (w, b) in enumerate(params):
        h = numpy.dot(h, w) + b
        if i < len(params) - 1:
            h = numpy.tanh(h)
    return numpy.sum((h - y) ** 2)


def test_per_example_gradients(rng):
    params = mlp_params(rng)
    xs = rng.normal(size=(6, 5)).astype(np.float32)
    ys = rng.normal(size=(6, 4)).astype(np.float32)
    per_example = numax.vmap(numax.grad(functools.partial(mlp_loss, numax)), in_axes=(None, 0, 0))
    # (jax's values from jax.jit programs here and below: eager jax compiles one program per op)
    expected = jax.jit(jax.vmap(jax.grad(functools.partial(mlp_loss, jax)), in_axes=(None, 0, 0)))(params, xs, ys)
    for actual in (per_example(params, xs, ys), numax.jit(per_example)(params, xs, ys)):
        for (w, b), (w_ref, b_ref) in zip(actual, expected):
            assert np.shape(w) == (6,) + np.shape(w_ref)[1:]
            assert_all_close(w, w_ref, atol=1e-4, rtol=1e-4)
            assert_all_close(b, b_ref, atol=1e-4, rtol=1e-4)
    # the mean of the per-example gradients is the gradient of the mean loss
    batch_loss = lambda p: numax.numpy.mean(numax.vmap(functools.partial(mlp_loss, numax), (None, 0, 0))(p, xs, ys))
    for (w, b), (w_mean, b_mean) in zip(numax.grad(batch_loss)(params), per_example(params, xs, ys)):
        assert_all_close(w, np.mean(np.asarray(w_mean), 0), atol=1e-4, rtol=1e-4)
        assert_all_close(b, np.mean(np.asarray(b_mean), 0), atol=1e-4, rtol=1e-4)


def test_mlp_ir_one_dot_per_matmul(rng):
    params = mlp_params(rng, (5, 8, 8, 4))
    xs = rng.normal(size=(6, 5)).astype(np.float32)

    def forward(params, x):
        h = x
        for w, b in params:
            h = numax.numpy.tanh(lax.dot(h, w, precision=lax.Precision.HIGHEST) + b)  # no TF32 on GPUs
        return h

    closed = numax.make_jaxpr(numax.vmap(forward, in_axes=(None, 0)))(params, xs)
    assert count_primitives(closed, "dot_general") == 3
    weights = {id(v) for v in closed.program.invars[:6:2]}
    for equation in closed.equations:
        if equation.primitive.name == "broadcast_in_dim":  # biases may be aligned, weights never copied
            assert not any(id(v) in weights for v in equation.inputs)
    assert all(eq.outvars[0].aval.shape[0] == 6 and eq.outvars[0].aval.ndim == 2
               for eq in closed.equations if eq.primitive.name == "dot_general")
    assert_all_close(numax.vmap(forward, in_axes=(None, 0))(params, xs),
                     np.stack([np.asarray(numax.jit(forward)(params, x)) for x in xs]), atol=1e-5)

    # the per-example gradient program: its matmuls are batched ones, not one per example
    per_example = numax.vmap(numax.grad(functools.partial(mlp_loss, numax)), in_axes=(None, 0, 0))
    ys = rng.normal(size=(6, 4)).astype(np.float32)
    closed = numax.make_jaxpr(per_example)(params, xs, ys)
    dots = count_primitives(closed, "dot_general")
    assert dots <= 3 * 3  # forward, and at most two per layer backward, whatever the batch size
    closed_bigger = numax.make_jaxpr(per_example)(params, np.concatenate([xs, xs]), np.concatenate([ys, ys]))
    assert count_primitives(closed_bigger, "dot_general") == dots


# --- convolution ------------------------------------------------------------------------------------------------
CONV_CASES = [
    # (in_axes, feature groups, batch groups, lhs per-example shape, rhs per-example shape, dimension numbers)
    ((0, None), 1, 1, (2, 4, 5, 5), (6, 4, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((None, 0), 1, 1, (2, 4, 5, 5), (6, 4, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((0, 0), 1, 1, (2, 4, 5, 5), (6, 4, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((1, -1), 1, 1, (2, 5, 5, 4), (3, 3, 4, 6), ("NHWC", "HWIO", "NHWC")),
    ((-1, None), 2, 1, (2, 5, 5, 4), (3, 3, 2, 6), ("NHWC", "HWIO", "NHWC")),
    ((None, 2), 2, 1, (2, 4, 5, 5), (6, 2, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((1, 2), 2, 1, (2, 4, 5, 5), (6, 2, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((0, None), 1, 2, (4, 3, 5, 5), (6, 3, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((None, 1), 1, 2, (4, 3, 5, 5), (6, 3, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((3, 0), 1, 2, (4, 3, 5, 5), (6, 3, 3, 3), ("NCHW", "OIHW", "NCHW")),
    ((2, -1), 1, 2, (4, 5, 5, 3), (3, 3, 3, 6), ("NHWC", "HWIO", "NHWC")),
]


def _conv(rng, case):
    in_axes, feature_groups, batch_groups, lhs_shape, rhs_shape, numbers = case
    lhs = batched_input(rng, lhs_shape, in_axes[0])
    rhs = batched_input(rng, rhs_shape, in_axes[1])

    def f(lib):
        return lambda a, b: lib.conv_general_dilated(a, b, (1, 2), "SAME", (1, 1), (2, 1), numbers,
                                                     feature_group_count=feature_groups,
                                                     batch_group_count=batch_groups)

    return f, [lhs, rhs], in_axes


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_general_dilated(rng, case):
    f, (lhs, rhs), in_axes = _conv(rng, case)
    check_vmap(f(lax), f(jlax), [lhs, rhs], in_axes, atol=1e-4, rtol=1e-4,
               expected=expected_of(_conv, tuple((c,) for c in CONV_CASES), (case,)))
    closed = numax.make_jaxpr(numax.vmap(f(lax), in_axes=in_axes))(lhs, rhs)
    assert count_primitives(closed, "conv_general_dilated") == 1
    assert "broadcast_in_dim" not in primitive_names(closed)


def test_conv_nested_and_grad(rng):
    lhs = rng.normal(size=(2, 3, 1, 4, 6)).astype(np.float32)  # outer batch at 0, inner at 1 (per example NCW)
    rhs = rng.normal(size=(5, 4, 3)).astype(np.float32)

    def f(lib):
        return lambda a, b: lib.conv_general_dilated(a, b, (1,), "VALID")

    actual = numax.vmap(numax.vmap(f(lax), in_axes=(0, None)), in_axes=(0, None))(lhs, rhs)
    expected = jax.jit(jax.vmap(jax.vmap(f(jlax), in_axes=(0, None)), in_axes=(0, None)))(lhs, rhs)
    assert_all_close(actual, expected, atol=1e-4, rtol=1e-4)

    # per-example kernel gradients
    loss = lambda lib: (lambda b, a: lib.numpy.sum(f(lib.lax)(a, b) ** 2))
    actual = numax.jit(numax.vmap(numax.grad(loss(numax)), in_axes=(None, 0)))(rhs, lhs[0])
    expected = jax.jit(jax.vmap(jax.grad(loss(jax)), in_axes=(None, 0)))(rhs, lhs[0])
    assert_all_close(actual, expected, atol=1e-3, rtol=1e-4)


# --- transformations composed -----------------------------------------------------------------------------------
def test_vmap_of_jit_and_jit_of_vmap(rng):
    x = batched_input(rng, (4, 5), 1)
    w = batched_input(rng, (5, 3), None)

    def f(lib, jit):
        @jit
        def g(a, b):
            s = lib.lax.dot_general(a, b, (((1,), (0,)), ((), ())))
            s = lib.lax.cumsum(s, 0)
            values, _ = lib.lax.top_k(s, 2)
            return lib.lax.reduce_max(values, (1,)) + lib.lax.sort(s, 0)[:, 0]
        return g

    expected = jax.vmap(f(jax, jax.jit), in_axes=(1, None))(x, w)
    assert_all_close(numax.vmap(f(numax, numax.jit), in_axes=(1, None))(x, w), expected, atol=1e-4, rtol=1e-4)
    assert_all_close(numax.jit(numax.vmap(f(numax, lambda g: g), in_axes=(1, None)))(x, w), expected,
                     atol=1e-4, rtol=1e-4)


def test_grad_of_vmapped_reductions(rng):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)

    def loss(lib):
        def per_example(a):
            return lib.lax.reduce_max(lib.lax.cumsum(a, 1), (1,)) * lib.lax.reduce_window(
                a, 0.0, lib.lax.add, (2, 4), (1, 1), "VALID")[0, 0]
        return lambda a: lib.numpy.sum(lib.vmap(per_example, in_axes=2)(a))

    expected = jax.jit(jax.grad(loss(jax)))(x)  # (one jax program: eager jax compiles one per op)
    assert_all_close(numax.grad(loss(numax))(x), expected, atol=1e-4, rtol=1e-4)
    assert_all_close(numax.jit(numax.grad(loss(numax)))(x), expected, atol=1e-4, rtol=1e-4)
