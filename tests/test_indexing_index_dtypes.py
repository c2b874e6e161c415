"""Index arrays of mixed integer dtypes with 64-bit types on: int32 beside int64, unsigned arrays, Python and numpy
integers and boolean masks, read and written, static and traced, against jax with x64 on. Every index array
is converted to the index dtype of the indexed shape first (as jax does), so no dtype clash reaches lax."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp

import numax
import numax.numpy as xnp

A = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
I32, I64 = np.array([1, -2], np.int32), np.array([-1, 2], np.int64)
U8, U64 = np.array([1, 0], np.uint8), np.array([3, 1], np.uint64)


@pytest.fixture
def both_x64(x64):
    """64-bit types on in numax (the suite's x64 fixture) and in the jax oracle, restored after."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


# (index builder from the index arrays, index arrays): scalars of different dtypes, arrays of different dtypes,
# and both beside Python ints, slices and boolean masks.
INDEX_CASES = [
    (lambda i, k: (i, k), (np.int32(1), np.int64(-1))),
    (lambda i, k: (i, slice(None), k), (np.uint8(1), np.int64(2))),
    (lambda i, k: (i, slice(1, None), k), (np.int64(1), np.uint64(0))),
    (lambda i, k: (i, k), (I32, I64)),
    (lambda i, k: (i, k, 3), (U8, I64)),
    (lambda i, k: (i, slice(None, None, -1), k), (U64, I32)),
    (lambda i, k: (np.array([True, False]), i, k), (I64, np.int32(-1))),
    (lambda i, k: (i, 2, k), (np.int64(-2), U8)),
    (lambda i, k: (Ellipsis, i, k), (I32[:, None], U64)),
]


def _index(case, arrays):
    build, _ = INDEX_CASES[case]
    return build(*arrays)


@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_mixed_index_dtypes_read_like_jax(both_x64, case):
    arrays = INDEX_CASES[case][1]

    def reads(x, i, k):
        index = _index(case, (i, k))
        return x[index], x.at[index].get(mode="fill"), x.at[index].get(mode="clip")

    expected = jax.jit(reads)(A, *arrays)
    for ours in (reads(xnp.asarray(A), *arrays), numax.jit(reads)(A, *arrays)):
        for out, exp in zip(ours, expected):
            assert_close(out, exp)


@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_mixed_index_dtypes_write_like_jax(both_x64, case):
    arrays = INDEX_CASES[case][1]

    def writes(x, i, k):
        index = _index(case, (i, k))
        return x.at[index].set(-1.0), x.at[index].add(2.0, mode="clip"), x.at[index].max(30.0, mode="drop")

    expected = jax.jit(writes)(A, *arrays)
    for out, exp in zip(numax.jit(writes)(A, *arrays), expected):
        assert_close(out, exp)


def test_vmap_over_mixed_index_dtypes_like_jax(both_x64):
    def read(x, i, k):
        return x[i, :, k] + x.at[k, i].get(mode="fill", fill_value=0.0)[..., None]

    rows, cols = np.array([0, 1, 5], np.int64), np.array([3, -1, 0], np.int32)
    expected = jax.jit(jax.vmap(read, (None, 0, 0)))(A, rows, cols)
    assert_close(numax.vmap(read, (None, 0, 0))(xnp.asarray(A), rows, cols), expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.int8])
def test_take_and_take_along_axis_with_index_dtypes_like_jax(both_x64, dtype):
    indices = np.array([[1, 5], [0, 2]]).astype(dtype)

    def takes(m, a, indices):
        return (m.take(a, indices, axis=2), m.take(a, indices, axis=1, mode="clip"),
                m.take(a, indices, mode="wrap"), m.take_along_axis(a[0, :, :2], indices, axis=0),
                m.take_along_axis(a[0, :2], indices, axis=1, mode="clip"), a[0].at[indices[0], indices[1]].add(1.0))

    expected = jax.jit(lambda a, i: takes(jnp, a, i))(A, indices)
    for out, exp in zip(numax.jit(lambda a, i: takes(xnp, a, i))(A, indices), expected):
        assert_close(out, exp)


def test_indices_of_narrow_dtypes_on_long_axes(both_x64):
    # An int8 or uint8 index into an axis longer than its type's range: normalization and bounds happen in the
    # index dtype of the shape, so neither overflows.
    a = np.arange(300.0)
    for indices in (np.array([-1, 127, -128], np.int8), np.array([255, 0], np.uint8)):
        assert_close(xnp.take(a, indices), jnp.take(a, indices.astype(np.int32)))
        assert_close(xnp.asarray(a)[indices], jnp.asarray(a)[indices.astype(np.int32)])
        assert_close(xnp.asarray(a).at[indices].get(mode="fill"), jnp.asarray(a).at[indices.astype(np.int32)].get(
            mode="fill"))
