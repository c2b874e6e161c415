"""numpy indexing over numax arrays: a table of index expressions against numpy (eagerly and under jit), traced
indices against jax, `.at[...]` updates against jax, take / nonzero / index helpers, and the errors."""

import functools

import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import errors
from oracle import jit_all, jit_table

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


def _position(table, item, field=None):
    """The position of `item` (a parametrized value, compared by identity) in a case table."""
    return next(n for n, row in enumerate(table) if (row if field is None else row[field]) is item)


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


TRACED_CASES = INDEX_CASES[15:34]


def _is_array_part(part):
    return isinstance(part, (list, np.ndarray, np.integer))


def _split_index(index):
    """(the index's integer-array parts as int32 arrays, a function rebuilding the index with other arrays there)."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [np.asarray(p, np.int32) for p in parts if _is_array_part(p)]

    def rebuild(arrays_in):
        it = iter(arrays_in)
        return tuple(next(it) if _is_array_part(p) else p for p in parts)

    return arrays, rebuild


@functools.cache
def _jax_static_index_table():
    # The oracle of every case from one jax program; the index arrays are closed over (static), as before.
    a = np.arange(60, dtype=np.int32).reshape(A_SHAPE)
    functions = []
    for index in TRACED_CASES:
        arrays, rebuild = _split_index(index)
        functions.append(lambda a, arrays=arrays, rebuild=rebuild: a[rebuild(arrays)])
    return jit_all(functions, [(a,)] * len(functions))


@pytest.mark.parametrize("case", range(len(TRACED_CASES)), ids=[_case_id(i) for i in TRACED_CASES])
def test_getitem_traced_integer_arrays_match_jax(case):
    # Integer arrays passed into jit (traced) index like the same arrays given statically.
    a = np.arange(60, dtype=np.int32).reshape(A_SHAPE)
    arrays, rebuild = _split_index(TRACED_CASES[case])
    out = numax.jit(lambda x, *arrays: x[rebuild(arrays)])(a, *arrays)
    assert_close(out, _jax_static_index_table()[case])


SCALAR_INDICES = [0, 2, -1, -3, 7, -9]
# Module level, so that numax.jit's cache (per function object) serves every index: the index is traced.
SCALAR_INDEX_FUNCTIONS = [
    lambda x, i: x[i], lambda x, i: x[:, i], lambda x, i: x[1, ::-1, i], lambda x, i: x[None, i, 1:3],
    lambda x, i: x[i, i],
]
_JITTED_SCALAR_INDEX_FUNCTIONS = [numax.jit(fn) for fn in SCALAR_INDEX_FUNCTIONS]


@functools.cache
def _jax_scalar_index_table():
    # The oracle: jax with each index given as a static np.int32 (closed over), all in one jax program.
    a = np.arange(60, dtype=np.float32).reshape(A_SHAPE)
    keys = [(index, n) for index in SCALAR_INDICES for n in range(len(SCALAR_INDEX_FUNCTIONS))]
    return jit_table(keys, [lambda x, fn=SCALAR_INDEX_FUNCTIONS[n], i=index: fn(x, np.int32(i)) for index, n in keys],
                     [(a,)] * len(keys))


@pytest.mark.parametrize("index", SCALAR_INDICES)
def test_traced_scalar_index_matches_jax(index):
    # A traced integer index is a dynamic slice: negative values wrap once, out-of-range ones clamp (as in jax).
    a = np.arange(60, dtype=np.float32).reshape(A_SHAPE)
    for n, fn in enumerate(_JITTED_SCALAR_INDEX_FUNCTIONS):
        assert_close(fn(a, np.int32(index)), _jax_scalar_index_table()[index, n])


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


def _at_case(case):
    """(index, ops, input, values, {op: the values it updates with}) of one AT_INDICES case, from a fresh rng(0)."""
    # Every index gets set, add and get; the other ops rotate over the table (to keep the suite fast).
    index = AT_INDICES[case]
    ops = ["set", "add", "get", AT_OPS[2 + case % 6], AT_OPS[2 + (case + 3) % 6]]
    rng = np.random.default_rng(0)
    a = rand(rng, A_SHAPE, np.float32, low=0.5, high=2.0)
    target_shape = jax.eval_shape(lambda j: j[index], a).shape
    values = rand(rng, target_shape[1:] if target_shape else (), np.float32, low=0.5, high=2.0)
    repeated = isinstance(index, tuple) and any(isinstance(i, list) and len(set(i)) < len(i) for i in index)
    # (equal updates at repeated indices for set: the winner is unspecified)
    values_of = {op: np.float32(1.5) if op == "set" and repeated else values for op in ops}
    return index, ops, a, values, values_of


@functools.cache
def _jax_at_table():
    # The oracle of every (case, op) from one jax program.
    keys, functions, arguments = [], [], []
    for case in range(len(AT_INDICES)):
        index, ops, a, _, values_of = _at_case(case)
        for op in ops:
            keys.append((case, op))
            functions.append(lambda j, v, index=index, op=op: _jax_at(j, index, op, v))
            arguments.append((a, values_of[op]))
    return jit_table(keys, functions, arguments)


@pytest.mark.parametrize("case", range(len(AT_INDICES)), ids=[_case_id(i) for i in AT_INDICES])
def test_at_matches_jax(case):
    index, ops, a, values, values_of = _at_case(case)
    x = xnp.asarray(a)
    for op in ops:
        assert_close(_jax_at(x, index, op, values_of[op]), _jax_at_table()[case, op], scale=10)
    jitted = numax.jit(lambda x, v: x.at[index].add(v))(x, values)
    assert_close(jitted, _jax_at_table()[case, "add"], scale=10)  # (add's values are always `values`)


def test_at_repeated_indices_accumulate():
    x = xnp.zeros(4, xnp.int32)
    assert xnp.array_equal(x.at[np.array([1, 1, 1, 3])].add(2), np.array([0, 6, 0, 2]))
    assert xnp.array_equal(xnp.ones(3).at[[0, 0]].multiply(3.0), np.array([9.0, 1, 1], np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, ml_dtypes.bfloat16, np.uint8])
@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
def test_at_dtypes_and_value_conversion(rng, dtype):
    a = rand(rng, (6,), dtype)
    x = xnp.asarray(a)
    values = rand(rng, (3,), np.float32 if dtype != np.bool_ else np.bool_, low=0.0)  # (negative float -> uint8 is UB)
    # jax's three results from one program (each eager jax op compiles on its own).
    want_set, want_max, want_one = jax.jit(lambda j, v: (j.at[jnp.array([0, 2, 4])].set(v),
                                                         j.at[jnp.array([0, 2, 4])].max(v), j.at[1].set(1)))(a, values)
    assert_close(x.at[[0, 2, 4]].set(values), want_set)
    assert_close(x.at[[0, 2, 4]].max(values), want_max)
    assert_close(x.at[1].set(1), want_one)


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


TAKE_MODES = [None, "fill", "clip", "wrap"]


@functools.cache
def _jax_take_table():
    # The oracle of every (case, mode) from one jax program; each case's input is drawn from a fresh rng(0).
    keys = [(case, mode) for case in range(len(TAKE_CASES)) for mode in TAKE_MODES]
    functions = [lambda a, i, axis=TAKE_CASES[case][2], mode=mode: jnp.take(a, i, axis=axis, mode=mode)
                 for case, mode in keys]
    arguments = [(rand(np.random.default_rng(0), TAKE_CASES[case][0], np.float32), TAKE_CASES[case][1])
                 for case, _ in keys]
    return jit_table(keys, functions, arguments)


@pytest.mark.parametrize("shape, indices, axis", TAKE_CASES)
@pytest.mark.parametrize("mode", TAKE_MODES)
def test_take_matches_jax(rng, shape, indices, axis, mode):
    a = rand(rng, shape, np.float32)
    expected = _jax_take_table()[_position(TAKE_CASES, indices, 1), mode]
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


@functools.cache
def _jax_take_along_table():
    # The oracle of every (case, mode) from one jax program; each case's input is drawn from a fresh rng(0).
    keys = [(case, mode) for case in range(len(TAKE_ALONG_CASES)) for mode in (None, "clip")]
    functions = [lambda a, i, axis=TAKE_ALONG_CASES[case][2], mode=mode: jnp.take_along_axis(a, i, axis=axis, mode=mode)
                 for case, mode in keys]
    arguments = [(rand(np.random.default_rng(0), TAKE_ALONG_CASES[case][0], np.float32), TAKE_ALONG_CASES[case][1])
                 for case, _ in keys]
    return jit_table(keys, functions, arguments)


@pytest.mark.parametrize("shape, indices, axis", TAKE_ALONG_CASES)
def test_take_along_axis_matches_jax(rng, shape, indices, axis):
    case = _position(TAKE_ALONG_CASES, indices, 1)
    a = rand(rng, shape, np.float32)
    for mode in (None, "clip"):
        expected = _jax_take_along_table()[case, mode]
        assert_close(xnp.take_along_axis(a, indices, axis, mode=mode), expected)
    traced = numax.jit(lambda a, i: xnp.take_along_axis(a, i, axis))(a, indices.astype(np.int32))
    assert_close(traced, _jax_take_along_table()[case, None])  # (mode None: the call the test made)


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


NONZERO_SIZES = [(None, None), (3, None), (8, -1)]


@functools.cache
def _jax_nonzero_table():
    """The oracle of every (input, size, fill) from one jax program: {key: (nonzero, flatnonzero, argwhere)}. For
    size None, jax counts the nonzeros on the host and runs the same code with that size: the count is passed."""
    keys, functions, arguments = [], [], []
    for case, a in enumerate(NONZERO_INPUTS):
        for size, fill in NONZERO_SIZES:
            static_size = int(np.count_nonzero(a)) if size is None else size
            keys.append((case, size, fill))
            functions.append(lambda a, size=static_size, fill=fill: (
                jnp.nonzero(a, size=size, fill_value=fill), jnp.flatnonzero(a, size=size, fill_value=fill),
                jnp.argwhere(a, size=size, fill_value=fill)))
            arguments.append((a,))
    return jit_table(keys, functions, arguments)


@pytest.mark.parametrize("a", NONZERO_INPUTS)
def test_nonzero_family_matches_jax(a):
    case = _position(NONZERO_INPUTS, a)
    for size, fill in NONZERO_SIZES:
        expected, expected_flat, expected_argwhere = _jax_nonzero_table()[case, size, fill]
        for out, exp in zip(xnp.nonzero(a, size=size, fill_value=fill), expected, strict=True):
            assert_close(out, exp)
        assert_close(xnp.flatnonzero(a, size=size, fill_value=fill), expected_flat)
        assert_close(xnp.argwhere(a, size=size, fill_value=fill), expected_argwhere)
        if size == 3:  # under jit only a static size works
            traced = numax.jit(lambda a: xnp.nonzero(a, size=size, fill_value=fill))(a)
            for out, exp in zip(traced, expected, strict=True):
                assert_close(out, exp)
            assert_close(numax.jit(lambda a: xnp.argwhere(a, size=size, fill_value=fill))(a), expected_argwhere)


def test_nonzero_errors_and_where():
    with pytest.raises(errors.ConcretizationTypeError, match="size="):
        numax.jit(lambda a: xnp.nonzero(a))(np.ones(3))
    with pytest.raises(ValueError, match="0-d"):
        xnp.nonzero(np.float32(1))
    assert_close(xnp.where(np.array([0, 1, 1]))[0], np.array([1, 2], np.int32))
    # (jax's argwhere with size None counts the nonzeros, 1 here, and runs the same code with that size)
    assert_close(xnp.argwhere(np.float32(1)), jax.jit(lambda a: jnp.argwhere(a, size=1))(np.float32(1)))
    assert_close(xnp.asarray([0, 2]).nonzero()[0], np.array([1], np.int32))


def test_compress_and_extract_match_jax(rng):
    a = rand(rng, (3, 4), np.float32)
    condition = np.array([True, False, True])
    mask = a > 0
    # jax's results with a static size from one program (without a size, jax's compress needs a concrete condition).
    compress_3, extract_10, extract_6 = jax.jit(lambda condition, mask, a: (
        jnp.compress(condition, a, axis=0, size=3, fill_value=7), jnp.extract(mask, a, size=10, fill_value=-1),
        jnp.extract(mask, a, size=6)))(condition, mask, a)
    assert_close(xnp.compress(condition, a, axis=0), jnp.compress(condition, a, axis=0))
    assert_close(xnp.compress([False, True], a, axis=1), jnp.compress(np.array([False, True]), a, axis=1))
    assert_close(xnp.compress(condition, a), jnp.compress(condition, a))
    assert_close(xnp.compress(condition, a, axis=0, size=3, fill_value=7), compress_3)
    assert_close(xnp.extract(mask, a), jnp.extract(mask, a))
    assert_close(xnp.extract(mask, a, size=10, fill_value=-1), extract_10)
    with pytest.raises(ValueError, match="size must be"):
        xnp.extract(mask, a, size=20)
    with pytest.raises(ValueError, match="beyond"):
        xnp.compress([True, False, False, True], a, axis=0)
    assert_close(xnp.compress([True, False, False, False], a, axis=0), a[:1])
    traced = numax.jit(lambda m, a: xnp.extract(m, a, size=6))(mask, a)
    assert_close(traced, extract_6)


# (numax helper, jax helper, arguments): the index helpers, compared with jax's.
INDEX_HELPERS = [
    (xnp.diag_indices, jnp.diag_indices, (3,)), (xnp.diag_indices, jnp.diag_indices, (2, 3)),
    (xnp.tril_indices, jnp.tril_indices, (4,)), (xnp.tril_indices, jnp.tril_indices, (3, -1, 5)),
    (xnp.triu_indices, jnp.triu_indices, (4, 1)),
    (xnp.tril_indices_from, jnp.tril_indices_from, (np.zeros((3, 5)),)),
    (xnp.triu_indices_from, jnp.triu_indices_from, (np.zeros((3, 2)), -1)),
    (xnp.diag_indices_from, jnp.diag_indices_from, (np.zeros((2, 2, 2)),)),
    (lambda shape: xnp.indices(shape, sparse=True), lambda shape: jnp.indices(shape, sparse=True), ((2, 3),)),
    (xnp.ix_, lambda *a: jnp.ix_(*map(np.array, a)), ([0, 2], [1, 0, 3])),
]


def test_index_helpers_match_jax():
    # jax's results come from one jax program (the helpers' arguments are static: closed over).
    expected = jit_all([lambda jax_fn=jax_fn, args=args: jax_fn(*args) for _, jax_fn, args in INDEX_HELPERS],
                       [()] * len(INDEX_HELPERS))
    pairs = [(ours(*args), theirs) for (ours, _, args), theirs in zip(INDEX_HELPERS, expected)]
    pairs.append((xnp.ix_(np.array([True, False, True])), [np.array([0, 2], np.int32)]))  # (jax lacks boolean ix_)
    for ours, theirs in pairs:
        assert len(ours) == len(theirs)
        for out, exp in zip(ours, theirs):
            assert_close(out, exp)
    dense, dense_int8 = jax.jit(lambda: (jnp.indices((2, 3)), jnp.indices((2, 0, 1), dtype=np.int8)))()
    assert_close(xnp.indices((2, 3)), dense)
    assert_close(xnp.indices((2, 0, 1), dtype=np.int8), dense_int8)


def test_unravel_and_ravel_multi_index_match_jax():
    flat = np.array([0, 5, 11, -1, 100, -13], np.int32)
    bad = (np.array([5, -1]), np.array([1, 7]))
    # jax's results from one program, except ravel_multi_index's default mode 'raise' (it needs concrete indices).
    unravel_34, unravel_232, ravel_wrap, ravel_clip = jax.jit(lambda flat, bad: (
        jnp.unravel_index(flat, (3, 4)), jnp.unravel_index(flat, (2, 3, 2)),
        jnp.ravel_multi_index(bad, (3, 4), mode="wrap"), jnp.ravel_multi_index(bad, (3, 4), mode="clip")))(flat, bad)
    for ours, exp in zip(xnp.unravel_index(flat, (3, 4)), unravel_34, strict=True):
        assert_close(ours, exp)
    traced = numax.jit(lambda i: xnp.unravel_index(i, (2, 3, 2)))(flat)
    for ours, exp in zip(traced, unravel_232, strict=True):
        assert_close(ours, exp)
    coords = (np.array([0, 2, 1]), np.array([3, 0, 1]))
    for order in ("C", "F"):
        assert_close(xnp.ravel_multi_index(coords, (3, 4), order=order),
                     jnp.ravel_multi_index(coords, (3, 4), order=order))
    for mode, expected in (("wrap", ravel_wrap), ("clip", ravel_clip)):
        assert_close(xnp.ravel_multi_index(bad, (3, 4), mode=mode), expected)
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
