"""numpy indexing over numax arrays: a table of index expressions against numpy (eagerly and under jit), traced
indices against jax, `.at[...]` updates against jax, take / nonzero / index helpers, and the errors."""

import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, jnp, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import errors

import numax
import numax.numpy as xnp

A_SHAPE = (3, 4, 5)
_MASK = np.random.default_rng(1).random(A_SHAPE) < 0.4

# Index expressions on an array of shape (3, 4, 5), compared with numpy.
INDEX_CASES = [
    1, -1, (1, 2), (-1, -2, -3), slice(None), slice(1, None), slice(None, None, -1), slice(None, None, 2),
    (slice(None), slice(3, 0, -2)), (Ellipsis, 0), (Ellipsis, slice(1, 3)), (0, Ellipsis, None),
    (None, 1, None), (None, Ellipsis, None), (slice(5, 1), 0),
    [0, 2], [-1, 0, -1], np.array([[0, 1], [2, 2]]), (slice(None), [3, 0]), (Ellipsis, [4, -5, 0]),
    ([0, 1], [1, 2]), ([[0], [2]], [1, 3]), ([0, 2], slice(None), [1, 4]), (0, slice(None), [0, 1]),
    (slice(None), 1, [0, 4]), ([0, 1], None, [0, 1]), (None, [0, 1], slice(None), [0, 1]),
    ([0], Ellipsis, [0]), (slice(None), [1, 2], None), (Ellipsis, [0, 1], None),
    (slice(None, None, -1), [[0], [1]], slice(None, None, 2)), (slice(1, None), [2, -1]),
    (np.int32(1), [1]), ([], ), (slice(None), []), (np.array([], np.int32), 0),
    _MASK, _MASK[:, :, 3], (1, _MASK[0]), (_MASK[:, :, 0], 2), (slice(None), _MASK[0, :, 0]), (Ellipsis, _MASK[0, 0]),
    (np.array([True, False, True]), [0, 3]), True, (False, 0), (None, True), [True, False, True],
]


def _case_id(index):
    return repr(index).replace("\n", "")[:40]


@pytest.mark.parametrize("index", INDEX_CASES, ids=[_case_id(i) for i in INDEX_CASES])
def test_getitem_matches_numpy(index):
    a = np.arange(60, dtype=np.float32).reshape(A_SHAPE)
    expected = a[index]
    x = xnp.asarray(a)
    out = x[index]
    assert isinstance(out, xnp.ndarray)
    assert_close(out, expected)
    assert_close(numax.jit(lambda x: x[index])(x), expected)


@pytest.mark.parametrize("index", INDEX_CASES[15:34], ids=[_case_id(i) for i in INDEX_CASES[15:34]])
def test_getitem_traced_integer_arrays_match_jax(index):
    # Integer arrays passed into jit (traced) index like the same arrays given statically.
    a = np.arange(60, dtype=np.int32).reshape(A_SHAPE)
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [np.asarray(p, np.int32) for p in parts if isinstance(p, (list, np.ndarray, np.integer))]

    def rebuild(arrays_in):
        it = iter(arrays_in)
        return tuple(next(it) if isinstance(p, (list, np.ndarray, np.integer)) else p for p in parts)

    expected = jnp.asarray(a)[rebuild(arrays)]
    out = numax.jit(lambda x, *arrays: x[rebuild(arrays)])(a, *arrays)
    assert_close(out, expected)


@pytest.mark.parametrize("index", [0, 2, -1, -3, 7, -9])
def test_traced_scalar_index_matches_jax(index):
    # A traced integer index is a dynamic slice: negative values wrap once, out-of-range ones clamp (as in jax).
    a = np.arange(60, dtype=np.float32).reshape(A_SHAPE)
    j = jnp.asarray(a)
    cases = [
        (lambda x, i: x[i], lambda x, i: x[i]),
        (lambda x, i: x[:, i], lambda x, i: x[:, i]),
        (lambda x, i: x[1, ::-1, i], lambda x, i: x[1, ::-1, i]),
        (lambda x, i: x[None, i, 1:3], lambda x, i: x[None, i, 1:3]),
        (lambda x, i: x[i, i], lambda x, i: x[i, i]),
    ]
    for fn, jax_fn in cases:
        assert_close(numax.jit(fn)(a, np.int32(index)), jax_fn(j, np.int32(index)))


def test_traced_scalar_index_lowers_to_dynamic_slice():
    text = numax.jit(lambda x, i: x[i]).lower(np.zeros((4, 3), np.float32), np.int32(1)).as_text()
    assert "stablehlo.dynamic_slice" in text and "stablehlo.gather" not in text


def test_traced_array_index_clamps_like_jax():
    a = np.arange(5, dtype=np.float32)
    idx = np.array([10, -10, 2, -1], np.int32)
    assert_close(numax.jit(lambda x, i: x[i])(a, idx), jnp.asarray(a)[idx])
    assert_close(xnp.asarray(a)[xnp.asarray(idx)], jnp.asarray(a)[idx])


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, ml_dtypes.bfloat16, np.complex64, np.uint32])
def test_getitem_dtypes(rng, dtype):
    a = rand(rng, (4, 3), dtype)
    for index in ([2, 0], (slice(None), [1, 1]), a.real > 0 if dtype == np.complex64 else np.eye(4, 3, dtype=bool)):
        out = xnp.asarray(a)[index]
        assert out.dtype == a[index].dtype
        assert_close(out, a[index])


def test_getitem_zero_d(rng):
    a = np.asarray(np.float32(3.5))
    for index in ((), Ellipsis, None, True, False, (None, Ellipsis)):
        assert_close(xnp.asarray(a)[index], a[index])


def test_getitem_empty_array():
    a = np.zeros((0, 3), np.float32)
    for index in ([], (slice(None), [0, 2]), np.zeros((0,), bool)):
        assert_close(xnp.asarray(a)[index], a[index])


def test_getitem_errors():
    # The exception classes are jax's (a float index and unbroadcastable index arrays are not IndexErrors there);
    # out-of-bounds integers clamp instead of raising (tests/test_indexing_out_of_bounds.py).
    x = xnp.arange(12).reshape(3, 4)
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="boolean index of shape"):
        x[np.ones(4, bool)]
    with pytest.raises(ValueError, match="could not be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(TypeError, match="integer or boolean dtype"):
        x[np.array([0.5])]
    with pytest.raises(TypeError, match="integer or boolean dtype"):
        x[1.0]
    with pytest.raises(TypeError, match="string"):
        x["a"]
    with pytest.raises(IndexError, match="valid indices"):
        x[object()]
    with pytest.raises(xnp.NonConcreteBooleanIndexError, match="where.*size="):
        numax.jit(lambda x, m: x[m])(x, np.ones((3, 4), bool))
    with pytest.raises(IndexError, match="must be concrete"):
        numax.jit(lambda x: x[x > 3])(x)
    with pytest.raises(errors.ConcretizationTypeError):
        numax.jit(lambda x, i: x[i:])(x, np.int32(1))


# --- .at[...] ---------------------------------------------------------------------------------------------------
AT_INDICES = [
    1, (slice(None), 2), ([0, 2, 0],), (slice(None), [1, 1, 3]), ([0, 1], slice(None), [4, 4]), (Ellipsis, -1),
    (slice(None, None, -2), [0, 3]), (None, 0, [1, 2]), _MASK[:, :, 1], (2, [7, -1]),
]
AT_OPS = ["set", "add", "multiply", "mul", "min", "max", "divide", "power", "get"]


def _jax_at(j, index, op, values, **kwargs):
    ref = j.at[index]
    if op == "get":
        return ref.get(**kwargs)
    return getattr(ref, "multiply" if op == "mul" else op)(values, **kwargs)


@pytest.mark.parametrize("case", range(len(AT_INDICES)), ids=[_case_id(i) for i in AT_INDICES])
def test_at_matches_jax(rng, case):
    # Every index gets set, add and get; the other ops rotate over the table (to keep the suite fast).
    index = AT_INDICES[case]
    ops = ["set", "add", "get", AT_OPS[2 + case % 6], AT_OPS[2 + (case + 3) % 6]]
    a = rand(rng, A_SHAPE, np.float32, low=0.5, high=2.0)
    j = jnp.asarray(a)
    target_shape = j[index].shape
    values = rand(rng, target_shape[1:] if target_shape else (), np.float32, low=0.5, high=2.0)
    x = xnp.asarray(a)
    for op in ops:
        if op == "set" and isinstance(index, tuple) and any(isinstance(i, list) and len(set(i)) < len(i)
                                                            for i in index):
            values_op = np.float32(1.5)  # equal updates at repeated indices: the winner is unspecified
        else:
            values_op = values
        expected = _jax_at(j, index, op, values_op)
        assert_close(_jax_at(x, index, op, values_op), expected, scale=10)
    jitted = numax.jit(lambda x, v: x.at[index].add(v))(x, values)
    assert_close(jitted, j.at[index].add(values), scale=10)


def test_at_repeated_indices_accumulate():
    x = xnp.zeros(4, xnp.int32)
    assert xnp.array_equal(x.at[np.array([1, 1, 1, 3])].add(2), np.array([0, 6, 0, 2]))
    assert xnp.array_equal(xnp.ones(3).at[[0, 0]].multiply(3.0), np.array([9.0, 1, 1], np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, ml_dtypes.bfloat16, np.uint8])
@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
def test_at_dtypes_and_value_conversion(rng, dtype):
    a = rand(rng, (6,), dtype)
    j = jnp.asarray(a)
    x = xnp.asarray(a)
    values = rand(rng, (3,), np.float32 if dtype != np.bool_ else np.bool_, low=0.0)  # (negative float -> uint8 is UB)
    assert_close(x.at[[0, 2, 4]].set(values), j.at[jnp.array([0, 2, 4])].set(values))
    assert_close(x.at[[0, 2, 4]].max(values), j.at[jnp.array([0, 2, 4])].max(values))
    assert_close(x.at[1].set(1), j.at[1].set(1))


def test_at_on_tracer_and_empty_updates():
    out = numax.jit(lambda x, i: x.at[i].set(0.0).at[i + 1].add(10.0))(np.ones(4, np.float32), np.int32(1))
    np.testing.assert_array_equal(np.asarray(out), [1, 0, 11, 1])
    x = xnp.ones(3)
    assert xnp.array_equal(x.at[[]].add(5.0), x)
    with pytest.raises(IndexError, match="too many indices"):
        x.at[0, 0].set(1.0)


# --- take and friends ---------------------------------------------------------------------------------------------
TAKE_CASES = [
    ((6,), np.array([0, 5, -1, 6, -7, 2]), None),
    ((3, 4), np.array([[0, 3], [-1, 9]]), 1),
    ((3, 4), np.array([2, 2, 0]), 0),
    ((3, 4), np.array([11, 12, -12, -13]), None),
    ((2, 3, 4), np.array([1, -2]), -1),
    ((3, 4), np.zeros((0,), np.int32), 1),
    ((3, 4), np.array(2), 0),
]


@pytest.mark.parametrize("shape, indices, axis", TAKE_CASES)
@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
def test_take_matches_jax(rng, shape, indices, axis, mode):
    a = rand(rng, shape, np.float32)
    expected = jnp.take(a, indices, axis=axis, mode=mode)
    assert_close(xnp.take(a, indices, axis=axis, mode=mode), expected)
    assert_close(numax.jit(lambda a, i: xnp.take(a, i, axis=axis, mode=mode))(a, indices.astype(np.int32)), expected)


def test_take_fill_value_and_method(rng):
    a = rand(rng, (5,), np.int32)
    idx = np.array([1, 8], np.int32)
    assert_close(xnp.asarray(a).take(idx), jnp.take(a, idx))
    assert_close(xnp.take(a, idx, fill_value=-3), jnp.take(a, idx, fill_value=-3))
    with pytest.raises(NotImplementedError, match="raise"):
        xnp.take(a, idx, mode="raise")
    with pytest.raises(ValueError, match="integer indices"):  # (jax's class, from its lax.gather)
        xnp.take(a, np.array([0.5]))


TAKE_ALONG_CASES = [
    ((3, 4), np.array([[0, 3], [1, 1], [3, 0]]), 1),
    ((3, 4), np.array([[2, 0, 1, 9]]), 0),
    ((2, 3, 4), np.array([[[1]], [[-1]]]), 2),
    ((5,), np.array([4, -2, 7]), 0),
    ((2, 3), np.array([5, 0, -1]), None),
]


@pytest.mark.parametrize("shape, indices, axis", TAKE_ALONG_CASES)
def test_take_along_axis_matches_jax(rng, shape, indices, axis):
    a = rand(rng, shape, np.float32)
    for mode in (None, "clip"):
        expected = jnp.take_along_axis(a, indices, axis=axis, mode=mode)
        assert_close(xnp.take_along_axis(a, indices, axis, mode=mode), expected)
    traced = numax.jit(lambda a, i: xnp.take_along_axis(a, i, axis))(a, indices.astype(np.int32))
    assert_close(traced, jnp.take_along_axis(a, indices, axis=axis))


def test_put_along_axis_matches_jax(rng):
    a = rand(rng, (3, 4), np.float32)
    idx = np.array([[0], [3], [1]])
    values = rand(rng, (3, 1), np.float32)
    expected = jnp.put_along_axis(a, idx, values, axis=1, inplace=False)
    assert_close(xnp.put_along_axis(a, idx, values, 1, inplace=False), expected)
    with pytest.raises(ValueError, match="inplace=False"):
        xnp.put_along_axis(a, idx, values, 1)


NONZERO_INPUTS = [
    np.array([0, 3, 0, -1, 2]), np.array([[1, 0], [0, 0], [2, 5]]), np.zeros((2, 3)), np.array([True]),
    (np.random.default_rng(2).random((2, 3, 4)) < 0.5),
]


@pytest.mark.parametrize("a", NONZERO_INPUTS)
def test_nonzero_family_matches_jax(a):
    for size, fill in ((None, None), (3, None), (8, -1)):
        expected = jnp.nonzero(a, size=size, fill_value=fill)
        for out, exp in zip(xnp.nonzero(a, size=size, fill_value=fill), expected):
            assert_close(out, exp)
        assert_close(xnp.flatnonzero(a, size=size, fill_value=fill), jnp.flatnonzero(a, size=size, fill_value=fill))
        assert_close(xnp.argwhere(a, size=size, fill_value=fill), jnp.argwhere(a, size=size, fill_value=fill))
        if size == 3:  # under jit only a static size works
            traced = numax.jit(lambda a: xnp.nonzero(a, size=size, fill_value=fill))(a)
            for out, exp in zip(traced, expected):
                assert_close(out, exp)
            assert_close(numax.jit(lambda a: xnp.argwhere(a, size=size, fill_value=fill))(a),
                         jnp.argwhere(a, size=size, fill_value=fill))


def test_nonzero_errors_and_where():
    with pytest.raises(errors.ConcretizationTypeError, match="size="):
        numax.jit(lambda a: xnp.nonzero(a))(np.ones(3))
    with pytest.raises(ValueError, match="0-d"):
        xnp.nonzero(np.float32(1))
    assert_close(xnp.where(np.array([0, 1, 1]))[0], np.array([1, 2], np.int32))
    assert_close(xnp.argwhere(np.float32(1)), jnp.argwhere(np.float32(1)))
    assert_close(xnp.asarray([0, 2]).nonzero()[0], np.array([1], np.int32))


def test_compress_and_extract_match_jax(rng):
    a = rand(rng, (3, 4), np.float32)
    condition = np.array([True, False, True])
    assert_close(xnp.compress(condition, a, axis=0), jnp.compress(condition, a, axis=0))
    assert_close(xnp.compress([False, True], a, axis=1), jnp.compress(np.array([False, True]), a, axis=1))
    assert_close(xnp.compress(condition, a), jnp.compress(condition, a))
    assert_close(xnp.compress(condition, a, axis=0, size=3, fill_value=7),
                 jnp.compress(condition, a, axis=0, size=3, fill_value=7))
    mask = a > 0
    assert_close(xnp.extract(mask, a), jnp.extract(mask, a))
    assert_close(xnp.extract(mask, a, size=10, fill_value=-1), jnp.extract(mask, a, size=10, fill_value=-1))
    with pytest.raises(ValueError, match="size must be"):
        xnp.extract(mask, a, size=20)
    with pytest.raises(ValueError, match="beyond"):
        xnp.compress([True, False, False, True], a, axis=0)
    assert_close(xnp.compress([True, False, False, False], a, axis=0), a[:1])
    traced = numax.jit(lambda m, a: xnp.extract(m, a, size=6))(mask, a)
    assert_close(traced, jnp.extract(mask, a, size=6))


def test_index_helpers_match_jax():
    pairs = [
        (xnp.diag_indices(3), jnp.diag_indices(3)), (xnp.diag_indices(2, 3), jnp.diag_indices(2, 3)),
        (xnp.tril_indices(4), jnp.tril_indices(4)), (xnp.tril_indices(3, -1, 5), jnp.tril_indices(3, -1, 5)),
        (xnp.triu_indices(4, 1), jnp.triu_indices(4, 1)),
        (xnp.tril_indices_from(np.zeros((3, 5))), jnp.tril_indices_from(np.zeros((3, 5)))),
        (xnp.triu_indices_from(np.zeros((3, 2)), -1), jnp.triu_indices_from(np.zeros((3, 2)), -1)),
        (xnp.diag_indices_from(np.zeros((2, 2, 2))), jnp.diag_indices_from(np.zeros((2, 2, 2)))),
        (xnp.indices((2, 3), sparse=True), jnp.indices((2, 3), sparse=True)),
        (xnp.ix_([0, 2], [1, 0, 3]), jnp.ix_(np.array([0, 2]), np.array([1, 0, 3]))),
        (xnp.ix_(np.array([True, False, True])), [np.array([0, 2], np.int32)]),  # (jax lacks boolean ix_)
    ]
    for ours, theirs in pairs:
        assert len(ours) == len(theirs)
        for out, exp in zip(ours, theirs):
            assert_close(out, exp)
    assert_close(xnp.indices((2, 3)), jnp.indices((2, 3)))
    assert_close(xnp.indices((2, 0, 1), dtype=np.int8), jnp.indices((2, 0, 1), dtype=np.int8))


def test_unravel_and_ravel_multi_index_match_jax():
    flat = np.array([0, 5, 11, -1, 100, -13], np.int32)
    for ours, exp in zip(xnp.unravel_index(flat, (3, 4)), jnp.unravel_index(flat, (3, 4))):
        assert_close(ours, exp)
    traced = numax.jit(lambda i: xnp.unravel_index(i, (2, 3, 2)))(flat)
    for ours, exp in zip(traced, jnp.unravel_index(flat, (2, 3, 2))):
        assert_close(ours, exp)
    coords = (np.array([0, 2, 1]), np.array([3, 0, 1]))
    for order in ("C", "F"):
        assert_close(xnp.ravel_multi_index(coords, (3, 4), order=order),
                     jnp.ravel_multi_index(coords, (3, 4), order=order))
    bad = (np.array([5, -1]), np.array([1, 7]))
    for mode in ("wrap", "clip"):
        assert_close(xnp.ravel_multi_index(bad, (3, 4), mode=mode), jnp.ravel_multi_index(bad, (3, 4), mode=mode))
    with pytest.raises(ValueError, match="invalid entry"):
        xnp.ravel_multi_index(bad, (3, 4))
    with pytest.raises(errors.ConcretizationTypeError, match="mode='wrap'"):
        numax.jit(lambda i, j: xnp.ravel_multi_index((i, j), (3, 4)))(*coords)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_take_and_indexing_property(shape, data):
    # take along any axis, in-bounds or not (mode 'clip'), equals numpy's take; x[i] under jit equals numpy.
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    indices = np.array(data.draw(st.lists(st.integers(-6, 6), max_size=4)), np.int32)
    assert_close(xnp.take(a, indices, axis=axis, mode="clip"), np.take(a, indices, axis=axis, mode="clip"))
    i = data.draw(st.integers(-shape[0], shape[0] - 1))
    assert_close(numax.jit(lambda a, i: a[i])(a, np.int32(i)), a[i])


def test_indexing_under_x64(x64):
    a = np.arange(12.0).reshape(3, 4)
    x = xnp.asarray(a)
    idx = np.array([2, -1], np.int64)
    assert_close(x[idx, 1:], a[idx, 1:])
    assert_close(numax.jit(lambda x, i: x[i])(x, np.int64(-1)), a[-1])
    assert_close(x.at[[0, 0]].add(1.0), a + np.array([[2.0], [0], [0]]))
    assert xnp.nonzero(a > 5)[0].dtype == np.int64


def test_jaxpr_shows_gather_and_scatter_params():
    text = str(numax.make_jaxpr(lambda x, i: x.at[i].add(1.0)[i])(np.zeros((3, 4), np.float32),
                                                                  np.array([0, 1], np.int32)))
    assert "scatter_add[" in text and "mode=GatherScatterMode.FILL_OR_DROP" in text
    assert "gather[" in text and "slice_sizes=(1, 4)" in text and "PROMISE_IN_BOUNDS" in text
