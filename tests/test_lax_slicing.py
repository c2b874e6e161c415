"""Slicing primitives against jax.lax: dynamic_slice / dynamic_update_slice (and their _in_dim forms), gather
and the scatter family with several dimension-number layouts and out-of-bounds modes, eagerly and under jit."""

import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, rand
from hypothesis import given
from hypothesis import strategies as st
from jax import lax as jlax

import numax
from numax import lax

DTYPES = [np.float32, np.int32, np.bool_, ml_dtypes.bfloat16, np.uint8, np.complex64, np.int8]


def _both(fn, *args, jit=True):
    """`fn(*args)` eagerly and (unless jit=False, to keep the suite fast) under numax.jit."""
    return (fn(*args), numax.jit(fn)(*args)) if jit else (fn(*args),)


# --- dynamic_slice / dynamic_update_slice -----------------------------------------------------------------
# (operand shape, start indices, slice sizes): in bounds, negative (wrapped once), clamped past either end.
DYNAMIC_SLICE_CASES = [
    ((5,), (1,), (2,)),
    ((5,), (-1,), (2,)),
    ((5,), (-7,), (2,)),
    ((5,), (10,), (3,)),
    ((4, 6), (1, 2), (2, 3)),
    ((4, 6), (3, -2), (2, 4)),
    ((4, 6), (0, 0), (0, 6)),
    ((2, 3, 4), (1, 1, 1), (1, 2, 3)),
    ((), (), ()),
]


@pytest.mark.parametrize("shape, starts, sizes", DYNAMIC_SLICE_CASES)
def test_dynamic_slice_matches_jax(rng, shape, starts, sizes):
    x = rand(rng, shape, np.float32)
    expected = jlax.dynamic_slice(x, starts, sizes)
    assert_close(lax.dynamic_slice(x, starts, sizes), expected)
    traced = numax.jit(lambda x, *s: lax.dynamic_slice(x, s, sizes))(x, *[np.int32(s) for s in starts])
    assert_close(traced, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_slice_dtypes(rng, dtype):
    x = rand(rng, (4, 5), dtype)
    for result in _both(lambda x, i: lax.dynamic_slice(x, (i, 2), (2, 2)), x, np.int32(3)):
        assert_close(result, jlax.dynamic_slice(x, (3, 2), (2, 2)))


@pytest.mark.parametrize("shape, starts, sizes", DYNAMIC_SLICE_CASES)
def test_dynamic_update_slice_matches_jax(rng, shape, starts, sizes):
    x = rand(rng, shape, np.float32)
    update = rand(rng, sizes, np.float32)
    expected = jlax.dynamic_update_slice(x, update, starts)
    assert_close(lax.dynamic_update_slice(x, update, starts), expected)
    traced = numax.jit(lambda x, u, *s: lax.dynamic_update_slice(x, u, s))(x, update, *[np.int32(s) for s in starts])
    assert_close(traced, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32])
def test_dynamic_index_dtypes(rng, dtype):
    # Python ints take the dtype of the array indices (negative ones wrap once, then clamp).
    x = rand(rng, (4, 5), np.int32)
    # (jax itself rejects a negative Python int beside an unsigned index, so the oracle gets the wrapped one)
    expected = jlax.dynamic_slice(x, (dtype(1), dtype(4)), (2, 1))
    for result in _both(lambda x, i: lax.dynamic_slice(x, (i, -1), (2, 1)), x, dtype(1)):
        assert_close(result, expected)
    assert_close(lax.dynamic_slice(x, (dtype(3), -9), (2, 2)), x[2:4, 0:2])


IN_DIM_CASES = [
    ("dynamic_slice_in_dim", lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1),
     lambda x, i: jlax.dynamic_slice_in_dim(x, i, 2, axis=1)),
    ("dynamic_index_in_dim", lambda x, i: lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False),
     lambda x, i: jlax.dynamic_index_in_dim(x, i, axis=0, keepdims=False)),
    ("dynamic_index_in_dim_keepdims", lambda x, i: lax.dynamic_index_in_dim(x, i, axis=-1),
     lambda x, i: jlax.dynamic_index_in_dim(x, i, axis=-1)),
    ("dynamic_update_slice_in_dim", lambda x, i: lax.dynamic_update_slice_in_dim(x, x[:, :2] * 0, i, axis=1),
     lambda x, i: jlax.dynamic_update_slice_in_dim(x, x[:, :2] * 0, i, axis=1)),
    ("dynamic_update_index_in_dim", lambda x, i: lax.dynamic_update_index_in_dim(x, x[0] + 1, i, 0),
     lambda x, i: jlax.dynamic_update_index_in_dim(x, x[0] + 1, i, 0)),
]


@pytest.mark.parametrize("name, fn, jax_fn", IN_DIM_CASES, ids=[c[0] for c in IN_DIM_CASES])
@pytest.mark.parametrize("index", [0, 2, -1, 9])
def test_in_dim_wrappers(rng, name, fn, jax_fn, index):
    x = rand(rng, (3, 4), np.float32)
    expected = jax_fn(x, np.int32(index))
    for result in _both(fn, x, np.int32(index)):
        assert_close(result, expected)


def test_dynamic_slice_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="expected 2 start indices"):  # (jax's class)
        lax.dynamic_slice(x, (1,), (1, 1))
    with pytest.raises(TypeError, match="slice_sizes"):
        lax.dynamic_slice(x, (0, 0), (4, 1))
    with pytest.raises(TypeError, match="integer scalars"):
        lax.dynamic_slice(x, (np.float32(1), 0), (1, 1))
    with pytest.raises(TypeError, match="integer scalars"):
        lax.dynamic_slice(x, (np.array([1, 2]), 0), (1, 1))
    with pytest.raises(TypeError, match="same type"):
        lax.dynamic_slice(x, (np.uint8(1), np.int16(0)), (1, 1))
    with pytest.raises(TypeError, match="same dtype"):
        lax.dynamic_update_slice(x, np.zeros((1, 1), np.int32), (0, 0))
    with pytest.raises(TypeError, match="fit inside"):
        lax.dynamic_update_slice(x, np.zeros((4, 1), np.float32), (0, 0))


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_dynamic_slice_property(shape, data):
    # dynamic_slice equals numpy slicing of the window whose start is clamped into [0, size - slice size].
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    sizes = [data.draw(st.integers(0, d)) for d in shape]
    starts = [data.draw(st.integers(-8, 8)) for _ in shape]
    clamped = [min(max(s + d if s < 0 else s, 0), d - k) for s, d, k in zip(starts, shape, sizes)]
    expected = x[tuple(slice(c, c + k) for c, k in zip(clamped, sizes))]
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, starts, sizes)), expected)


# --- gather ------------------------------------------------------------------------------------------------------
GD = lax.GatherDimensionNumbers
SD = lax.ScatterDimensionNumbers


def _jax_gather_dnums(dn):
    return jlax.GatherDimensionNumbers(*dn)


def _jax_scatter_dnums(dn):
    return jlax.ScatterDimensionNumbers(*dn)


# (name, operand shape, indices (values may be out of bounds), dimension numbers, slice sizes)
GATHER_CASES = [
    ("take_1d", (6,), np.array([[0], [5], [2], [2], [-1], [6]]), GD((), (0,), (0,)), (1,)),
    ("take_rows", (5, 3), np.array([[4], [0], [7]]), GD((1,), (0,), (0,)), (1, 3)),
    ("take_columns", (3, 5), np.array([[[1], [3]], [[0], [9]]]), GD((0,), (1,), (1,)), (3, 1)),
    ("points_2d", (4, 5), np.array([[0, 0], [3, 4], [1, 2], [4, 1]]), GD((), (0, 1), (0, 1)), (1, 1)),
    ("points_swapped_map", (4, 5), np.array([[4, 3], [0, 1], [2, -1]]), GD((), (0, 1), (1, 0)), (1, 1)),
    ("windows", (6, 7), np.array([[1, 2], [5, 6], [0, 0]]), GD((1, 2), (), (0, 1)), (2, 3)),
    ("window_collapsed", (6, 7), np.array([[1, 2], [3, 5]]), GD((1,), (0,), (0, 1)), (1, 3)),
    ("empty_indices", (5, 3), np.zeros((0, 1), np.int32), GD((1,), (0,), (0,)), (1, 3)),
    ("batched", (3, 5), np.array([[[1], [4]], [[0], [7]], [[2], [2]]]), GD((), (1,), (1,), (0,), (0,)), (1, 1)),
    ("batched_window", (2, 6, 3), np.array([[4], [1]]), GD((1, 2), (), (1,), (0,), (0,)), (1, 2, 3)),
]


@pytest.mark.parametrize("name, shape, indices, dn, sizes", GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_matches_jax(rng, name, shape, indices, dn, sizes, mode):
    x = rand(rng, shape, np.float32)
    indices = indices.astype(np.int32)
    if mode == "promise_in_bounds":  # only in-bounds indices are meaningful
        indices = np.clip(indices, 0, [shape[d] - sizes[d] for d in dn.start_index_map])
    expected = jlax.gather(x, indices, _jax_gather_dnums(dn), sizes, mode=mode)
    for result in _both(lambda x, i: lax.gather(x, i, dn, sizes, mode=mode), x, indices, jit=mode != "clip"):
        assert_close(result, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_fill_dtypes(rng, dtype):
    # Out-of-bounds windows get JAX's per-dtype fill: NaN, the lowest signed / highest unsigned int, True.
    x = rand(rng, (5,), dtype)
    indices = np.array([[1], [5], [-1], [4]], np.int32)
    dn = GD((), (0,), (0,))
    expected = jlax.gather(x, indices, _jax_gather_dnums(dn), (1,), mode="fill")
    for result in _both(lambda x, i: lax.gather(x, i, dn, (1,), mode="fill"), x, indices):
        assert_close(result, expected)
    custom = lax.gather(x, indices, dn, (1,), mode="fill", fill_value=1)
    assert_close(custom, jlax.gather(x, indices, _jax_gather_dnums(dn), (1,), mode="fill", fill_value=1))


def test_gather_index_dtypes(rng):
    x = rand(rng, (6, 2), np.float32)
    dn = GD((1,), (0,), (0,))
    for dtype in (np.uint8, np.int16, np.uint32):
        indices = np.array([[1], [5], [200]], dtype)
        expected = jlax.gather(x, indices, _jax_gather_dnums(dn), (1, 2), mode="fill")
        assert_close(lax.gather(x, indices, dn, (1, 2), mode="fill"), expected)


def test_gather_default_mode_promises_in_bounds_like_jax(rng):
    # jax.lax.gather's mode=None is PROMISE_IN_BOUNDS (out-of-bounds windows clamp), unlike the scatters' default.
    x = rand(rng, (4,), np.float32)
    indices = np.array([[9], [-3], [1]], np.int32)
    out = lax.gather(x, indices, GD((), (0,), (0,)), (1,))
    assert_close(out, jlax.gather(x, indices, jlax.GatherDimensionNumbers((), (0,), (0,)), (1,)))


def test_gather_shape_and_weak_type():
    out = numax.jit(lambda x: lax.gather(x, np.zeros((2, 3, 1), np.int32), GD((2,), (0,), (0,)), (1, 4))).eval_shape(
        np.zeros((5, 4), np.float32))
    assert out.shape == (2, 3, 4)


GATHER_ERRORS = [  # (jax's classes: a ValueError for non-integer indices, TypeErrors otherwise)
    ((5,), np.zeros((2, 1), np.float32), GD((), (0,), (0,)), (1,), "integer dtype", ValueError),
    ((5,), np.zeros((2, 2), np.int32), GD((), (0,), (0,)), (1,), "index vector", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), GD((1,), (0,), (0,)), (1, 4), "slice_sizes", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), GD((1,), (0,), (0,)), (2, 3), "slice size <= 1", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), GD((), (0,), (0,)), (1, 3), "offset_dims", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), GD((1,), (0,), (3,)), (1, 3), "index map", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), GD((1, 0), (), (0,)), (1, 3), "sorted", TypeError),
]


@pytest.mark.parametrize("shape, indices, dn, sizes, match, error", GATHER_ERRORS)
def test_gather_errors(shape, indices, dn, sizes, match, error):
    with pytest.raises(error, match=f"gather: .*{match}"):
        lax.gather(np.zeros(shape, np.float32), indices, dn, sizes)


def test_gather_mode_errors():
    with pytest.raises(ValueError, match="unknown gather/scatter mode"):
        lax.gather(np.zeros(3, np.float32), np.zeros((1, 1), np.int32), GD((), (0,), (0,)), (1,), mode="wrap")
    with pytest.raises(TypeError, match="GatherDimensionNumbers"):
        lax.gather(np.zeros(3, np.float32), np.zeros((1, 1), np.int32), ((), (0,), (0,)), (1,))


def test_gather_lowers_to_stablehlo_gather():
    text = numax.jit(lambda x, i: lax.gather(x, i, GD((), (0,), (0,)), (1,), mode="clip")).lower(
        np.zeros(4, np.float32), np.zeros((2, 1), np.int32)).as_text()
    assert "stablehlo.gather" in text and "collapsed_slice_dims = [0]" in text


# --- scatter ----------------------------------------------------------------------------------------------------
# (name, operand shape, indices with repeats and out-of-bounds values, dimension numbers, updates shape)
SCATTER_CASES = [
    ("points_1d", (6,), np.array([[0], [2], [2], [5], [-1], [9]]), SD((), (0,), (0,)), (6,)),
    ("rows", (5, 3), np.array([[4], [0], [4], [7]]), SD((1,), (0,), (0,)), (4, 3)),
    ("columns", (3, 5), np.array([[1], [1], [3]]), SD((0,), (1,), (1,)), (3, 3)),
    ("points_2d", (4, 5), np.array([[0, 0], [3, 4], [0, 0], [4, 1]]), SD((), (0, 1), (0, 1)), (4,)),
    ("windows", (6, 7), np.array([[1, 2], [1, 2], [5, 6]]), SD((1, 2), (), (0, 1)), (3, 2, 3)),
    ("empty", (5, 3), np.zeros((0, 1), np.int32), SD((1,), (0,), (0,)), (0, 3)),
    ("batched", (3, 5), np.array([[[1], [1]], [[0], [7]], [[2], [3]]]), SD((), (1,), (1,), (0,), (0,)), (3, 2)),
]
SCATTERS = [("scatter_add", lax.scatter_add, jlax.scatter_add), ("scatter_mul", lax.scatter_mul, jlax.scatter_mul),
            ("scatter_min", lax.scatter_min, jlax.scatter_min), ("scatter_max", lax.scatter_max, jlax.scatter_max)]


@pytest.mark.parametrize("name, shape, indices, dn, updates_shape", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
@pytest.mark.parametrize("op, fn, jax_fn", SCATTERS, ids=[s[0] for s in SCATTERS])
@pytest.mark.parametrize("mode", ["clip", "drop"])
def test_scatter_combiners_match_jax(rng, name, shape, indices, dn, updates_shape, op, fn, jax_fn, mode):
    x = rand(rng, shape, np.float32)
    updates = rand(rng, updates_shape, np.float32)
    indices = indices.astype(np.int32)
    expected = jax_fn(x, indices, updates, _jax_scatter_dnums(dn), mode=mode)
    for result in _both(lambda x, i, u: fn(x, i, u, dn, mode=mode), x, indices, updates, jit=mode == "clip"):
        assert_close(result, expected, scale=4)


@pytest.mark.parametrize("name, shape, indices, dn, updates_shape", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
def test_scatter_set_matches_jax(rng, name, shape, indices, dn, updates_shape):
    # With repeated indices the winner is unspecified, so the updates are made equal at repeats.
    x = rand(rng, shape, np.float32)
    indices = indices.astype(np.int32)
    updates = np.full(updates_shape, 7.0, np.float32)
    for mode in ("clip", "drop"):
        expected = jlax.scatter(x, indices, updates, _jax_scatter_dnums(dn), mode=mode)
        for result in _both(lambda x, i, u: lax.scatter(x, i, u, dn, mode=mode), x, indices, updates):
            assert_close(result, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, ml_dtypes.bfloat16, np.uint8, np.complex64])
def test_scatter_dtypes(rng, dtype):
    x = rand(rng, (5,), dtype)
    updates = rand(rng, (4,), dtype)
    indices = np.array([[1], [1], [4], [8]], np.int32)
    dn = SD((), (0,), (0,))
    for _, fn, jax_fn in SCATTERS:
        if dtype == np.bool_ and fn in (lax.scatter_add, lax.scatter_mul):
            with pytest.raises(TypeError, match="does not accept dtype bool"):
                fn(x, indices, updates, dn)
            continue
        assert_close(fn(x, indices, updates, dn), jax_fn(x, indices, updates, _jax_scatter_dnums(dn)))


def test_scatter_add_repeated_indices_accumulate():
    out = lax.scatter_add(np.zeros(3, np.int32), np.array([[1]] * 5, np.int32), np.ones(5, np.int32),
                          SD((), (0,), (0,)))
    np.testing.assert_array_equal(np.asarray(out), [0, 5, 0])


SCATTER_ERRORS = [  # (jax's classes: a ValueError for non-integer indices, TypeErrors otherwise)
    ((5,), np.zeros((2, 1), np.int32), np.zeros(2, np.int32), SD((), (0,), (0,)), "same dtype", TypeError),
    ((5,), np.zeros((2, 1), np.int32), np.zeros(3, np.float32), SD((), (0,), (0,)), "batch shape", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), np.zeros((2, 4), np.float32), SD((1,), (0,), (0,)), "do not fit", TypeError),
    ((5, 3), np.zeros((2, 1), np.int32), np.zeros((2, 3), np.float32), SD((), (0,), (0,)), "update_window_dims",
     TypeError),
    ((5, 3), np.zeros((2, 1), np.float32), np.zeros((2, 3), np.float32), SD((1,), (0,), (0,)), "integer dtype",
     ValueError),
]


@pytest.mark.parametrize("shape, indices, updates, dn, match, error", SCATTER_ERRORS)
def test_scatter_errors(shape, indices, updates, dn, match, error):
    with pytest.raises(error, match=f"scatter_add.*{match}"):
        lax.scatter_add(np.zeros(shape, np.float32), indices, updates, dn)


def test_scatter_lowering_has_combiner_region():
    text = numax.jit(lambda x, i, u: lax.scatter_max(x, i, u, SD((), (0,), (0,)))).lower(
        np.zeros(4, np.float32), np.zeros((2, 1), np.int32), np.zeros(2, np.float32)).as_text()
    assert "stablehlo.scatter" in text and "stablehlo.maximum" in text


@given(n=st.integers(1, 6), k=st.integers(0, 6), data=st.data())
def test_gather_scatter_take_property(n, k, data):
    # A take-like gather (clip) equals numpy's take with clipped indices; scatter_add equals np.add.at.
    indices = np.array(data.draw(st.lists(st.integers(-3, n + 3), min_size=k, max_size=k)), np.int32).reshape(k, 1)
    x = np.arange(n, dtype=np.float32) * 1.5
    out = lax.gather(x, indices, GD((), (0,), (0,)), (1,), mode="clip")
    np.testing.assert_array_equal(np.asarray(out), np.take(x, indices[:, 0], mode="clip"))
    added = lax.scatter_add(x, indices, np.ones(k, np.float32), SD((), (0,), (0,)), mode="clip")
    expected = x.copy()
    np.add.at(expected, np.clip(indices[:, 0], 0, n - 1), 1.0)
    np.testing.assert_array_equal(np.asarray(added), expected)
