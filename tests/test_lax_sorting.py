"""lax.sort (single and multi-operand), sort_key_val and top_k against jax.lax, eagerly and under jit."""

import numpy as np
import pytest
from harness import assert_close, jax, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import dtypes

import numax
from numax import lax


def eager_and_jit(fn, *args):
    """fn(*args) eagerly and under numax.jit."""
    return [fn(*args), numax.jit(fn)(*args)]


def assert_same(actual, expected):
    """Equal dtypes, shapes and bit patterns (so signs of zeros agree too). On the CPU NaN payloads and signs
    agree as well; on a GPU, XLA's bfloat16 top_k (jax's) rewrites NaNs as the canonical NaN, so there NaNs
    need only sit in the same places."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtypes.is_inexact(actual.dtype):
        if numax.default_backend() != "cpu" and not dtypes.is_complex(actual.dtype):
            nan = np.isnan(actual.astype(np.float32))
            np.testing.assert_array_equal(nan, np.isnan(expected.astype(np.float32)))
            actual, expected = np.where(nan, 0, actual).astype(actual.dtype), np.where(nan, 0, expected).astype(
                expected.dtype)
        bits = np.dtype(f"u{actual.dtype.itemsize}") if not dtypes.is_complex(actual.dtype) else np.uint32
        actual, expected = actual.view(bits), expected.view(bits)
    np.testing.assert_array_equal(actual, expected)


_specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 0.0, 1.5])


def _special_floats(rng, shape, dtype):
    x = rand(rng, shape, dtype).reshape(-1)
    picks = rng.integers(0, len(_specials), x.size)
    use = rng.random(x.size) < 0.5
    x[use] = _specials[picks[use]].astype(dtype)
    return x.reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16, np.float16, np.int32, np.int8, np.uint8, np.uint32,
                                   np.bool_])
@pytest.mark.parametrize("shape,dimension", [((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((0, 3), 0)])
def test_sort_matches_jax(rng, dtype, shape, dimension):
    x = _special_floats(rng, shape, dtype) if dtypes.is_float(np.dtype(dtype)) else rand(rng, shape, dtype)
    expected = jax.lax.sort(x, dimension=dimension)
    for result in eager_and_jit(lambda x: lax.sort(x, dimension=dimension), x):
        assert_same(result, expected)


def test_sort_float_order_puts_nans_last_and_keeps_zero_order():
    x = np.array([np.nan, 0.0, -np.inf, -0.0, -np.nan, 2.0, np.inf, 0.0, -2.0], np.float32)
    result = np.asarray(lax.sort(x))
    np.testing.assert_array_equal(result[:7], [-np.inf, -2.0, 0.0, 0.0, 0.0, 2.0, np.inf])
    # -0.0 and 0.0 are equal keys: the stable sort keeps their input order (0.0, -0.0, 0.0), as JAX does.
    np.testing.assert_array_equal(np.signbit(result[2:5]), [False, True, False])
    assert np.isnan(result[7:]).all()


def test_sort_complex_is_lexicographic():
    x = np.array([1 + 1j, 1 - 1j, np.nan, 0j, -1 + 5j, complex(1, np.nan)], np.complex64)
    for result in eager_and_jit(lax.sort, x):
        assert_same(result, jax.lax.sort(x))


def test_sort_is_stable_with_ties(rng):
    keys = rng.integers(0, 3, (4, 20)).astype(np.int32)
    values = np.broadcast_to(np.arange(20, dtype=np.float32), (4, 20))
    for sorted_keys, sorted_values in eager_and_jit(lambda k, v: lax.sort_key_val(k, v), keys, values):
        expected_order = np.argsort(keys, axis=-1, kind="stable")
        np.testing.assert_array_equal(sorted_values, expected_order.astype(np.float32))
        np.testing.assert_array_equal(sorted_keys, np.sort(keys, axis=-1))


def test_sort_unstable_still_sorts(rng):
    x = rand(rng, (5, 9), np.float32)
    np.testing.assert_array_equal(lax.sort(x, is_stable=False), np.sort(x, axis=-1))


@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_multi_operand_sort(rng, num_keys):
    a = rng.integers(0, 2, (3, 12)).astype(np.int32)
    b = _special_floats(rng, (3, 12), np.float32)
    c = rng.integers(0, 2, (3, 12)).astype(np.uint8)
    d = np.arange(36, dtype=np.int32).reshape(3, 12)
    expected = jax.lax.sort((a, b, c, d), dimension=1, num_keys=num_keys)
    for results in eager_and_jit(lambda *xs: lax.sort(xs, dimension=1, num_keys=num_keys), a, b, c, d):
        assert isinstance(results, tuple) and len(results) == 4
        for result, want in zip(results, expected):
            assert_same(result, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, dtypes.bfloat16])
@pytest.mark.parametrize("shape,k,axis", [((10,), 3, -1), ((4, 6), 6, -1), ((4, 6), 0, -1), ((5, 4, 3), 2, 0),
                                          ((5, 4, 3), 4, 1)])
def test_top_k_matches_jax(rng, dtype, shape, k, axis):
    x = _special_floats(rng, shape, dtype) if dtypes.is_float(np.dtype(dtype)) else rand(rng, shape, dtype)
    expected_values, expected_indices = jax.lax.top_k(x, k, axis=axis)
    for values, indices in eager_and_jit(lambda x: lax.top_k(x, k, axis=axis), x):
        assert_same(values, expected_values)
        assert_same(indices, expected_indices)


@pytest.mark.parametrize("dtype", [dtypes.bfloat16, np.float16, np.float32])
def test_top_k_orders_negative_nan_last(dtype):
    # -NaN is the smallest value of top_k's order, also for bfloat16 on a GPU (where XLA would drop the sign
    # if the comparator bitcast bfloat16 keys).
    x = np.array([np.nan, 2.5, -np.nan, 1.0, -np.inf], dtype)
    for values, indices in eager_and_jit(lambda v: lax.top_k(v, 5), x):
        np.testing.assert_array_equal(np.asarray(indices), [0, 1, 3, 4, 2])
        assert np.isnan(np.asarray(values, np.float32)[[0, 4]]).all()
        np.testing.assert_array_equal(np.asarray(values, np.float32)[1:4], [2.5, 1.0, -np.inf])


def test_top_k_ties_in_index_order():
    x = np.array([1, 3, 3, 2, 3, 1], np.int32)
    values, indices = lax.top_k(x, 4)
    np.testing.assert_array_equal(values, [3, 3, 3, 2])
    np.testing.assert_array_equal(indices, [1, 2, 4, 3])


def test_sort_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="same shape"):
        lax.sort((x, np.zeros((3, 2), np.float32)))
    with pytest.raises(TypeError, match="num_keys=3"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match="out of bounds"):
        lax.sort(x, dimension=2)
    with pytest.raises(TypeError, match="0-d"):
        lax.sort(np.float32(1.0))
    with pytest.raises(ValueError, match="k=4"):
        lax.top_k(x, 4)
    with pytest.raises(TypeError, match="complex"):
        lax.top_k(np.zeros(3, np.complex64), 1)


def test_sort_jaxpr_shows_the_primitive():
    text = str(numax.make_jaxpr(lambda x: lax.sort(x, dimension=0))(np.zeros((2, 3), np.float32)))
    assert "sort[" in text and "dimension=0" in text and "num_keys=1" in text


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_sort_hypothesis_shapes_and_axes(shape, data):
    dimension = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(len(shape) * 7 + dimension)
    x = rng.integers(-4, 4, shape).astype(np.int32)
    assert_close(lax.sort(x, dimension=dimension), np.sort(x, axis=dimension))
