"""Differentiation rules of the shape, slicing, gather and scatter primitives.

Every case is written once as `fn(lax, *args)`, so the same code runs with `numax.lax` and with `jax.lax`:
it is checked against finite differences to second order (float64, forward and reverse), and its JVP and
VJP are compared with JAX's in float32. Numpy-level indexing is compared with `jax.grad` of the same
`jnp` code.
"""

import functools
from typing import NamedTuple

import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numax.core import dtypes
from oracle import jit_table

import numax
import numax.numpy as xnp
from numax import lax as nlax
from numax.test_util import check_grads


class Case(NamedTuple):
    name: str
    fn: object  # fn(lax, *args)
    shapes: tuple
    # False where JAX's own rule is off: its scatter_min/max JVP reads the scattered values back with a
    # NaN-filling gather whatever the mode, so clipped out-of-bounds indices get NaN tangents there.
    like_jax: bool = True


def _gather_numbers(lax, offset, collapsed, index_map, operand_batching=(), indices_batching=()):
    return lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed, start_index_map=index_map,
                                      operand_batching_dims=operand_batching,
                                      start_indices_batching_dims=indices_batching)


def _scatter_numbers(lax, window, inserted, index_map, operand_batching=(), indices_batching=()):
    return lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=inserted,
                                       scatter_dims_to_operand_dims=index_map, operand_batching_dims=operand_batching,
                                       scatter_indices_batching_dims=indices_batching)


ROWS = np.array([[1], [3], [1], [4]], np.int32)  # repeated row 1
UNIQUE_ROWS = np.array([[1], [3], [0], [4]], np.int32)
OUT_OF_BOUNDS_ROWS = np.array([[1], [7], [-2], [4]], np.int32)
POINTS = np.array([[0, 1], [2, 4], [0, 1]], np.int32)
ON_CPU = numax.default_backend() == "cpu"
PLAIN_SCATTER_ROWS = ROWS if ON_CPU else UNIQUE_ROWS
PLAIN_SCATTER_CLIPPED_ROWS = OUT_OF_BOUNDS_ROWS if ON_CPU else np.array([[1], [7], [-2], [3]], np.int32)
PLAIN_SCATTER_POINTS = POINTS if ON_CPU else np.array([[0, 1], [2, 4], [1, 1]], np.int32)
BATCHED_ROWS = np.array([[[2], [0]], [[4], [4]], [[1], [3]]], np.int32)  # (batch 3, 2 indices, 1)


def _gather_rows(indices, **kw):
    return lambda lax, x: lax.gather(x, indices, _gather_numbers(lax, (1,), (0,), (0,)), (1, 3), **kw)


def _scatter_rows(name, indices, **kw):
    return lambda lax, x, u: getattr(lax, name)(x, indices, u, _scatter_numbers(lax, (1,), (0,), (0,)), **kw)


def _scatter_rows_fixed_updates(name, indices, **kw):
    updates = np.linspace(-1.5, 2.0, 12).reshape(4, 3)
    return lambda lax, x: getattr(lax, name)(x, indices, updates.astype(x.dtype),
                                             _scatter_numbers(lax, (1,), (0,), (0,)), **kw)


def _point_numbers(lax):
    return _scatter_numbers(lax, (), (0, 1), (0, 1))


CASES = [
    # broadcast_in_dim: new dimensions, stretched size-1 dimensions, kept size-1 dimensions, a scalar.
    Case("broadcast_scalar", lambda lax, x: lax.broadcast_in_dim(x, (2, 3), ()), [()]),
    Case("broadcast_new_dims", lambda lax, x: lax.broadcast_in_dim(x, (4, 3, 2), (1,)), [(3,)]),
    Case("broadcast_stretch", lambda lax, x: lax.broadcast_in_dim(x, (2, 4, 3), (1, 2)), [(1, 3)]),
    Case("broadcast_keep_unit", lambda lax, x: lax.broadcast_in_dim(x, (1, 3, 5), (0, 1)), [(1, 3)]),
    Case("broadcast_stretch_all", lambda lax, x: lax.broadcast_in_dim(x, (3, 2), (0, 1)), [(1, 1)]),
    Case("reshape", lambda lax, x: lax.reshape(x, (3, 4)), [(2, 6)]),
    Case("reshape_dimensions", lambda lax, x: lax.reshape(x, (6, 2), (2, 0, 1)), [(2, 3, 2)]),
    Case("reshape_to_scalar", lambda lax, x: lax.reshape(x, ()), [(1, 1)]),
    Case("transpose", lambda lax, x: lax.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    Case("squeeze", lambda lax, x: lax.squeeze(x, (0, 2)), [(1, 3, 1)]),
    Case("expand_dims", lambda lax, x: lax.expand_dims(x, (0, 2)), [(3, 2)]),
    Case("rev", lambda lax, x: lax.rev(x, (0, 2)), [(2, 3, 4)]),
    Case("concatenate", lambda lax, x, y, z: lax.concatenate([x, y, z], 1), [(2, 1), (2, 3), (2, 0)]),
    Case("concatenate_leading", lambda lax, x, y: lax.concatenate([x, y], 0), [(3, 2), (1, 2)]),
    Case("pad", lambda lax, x, v: lax.pad(x, v, [(1, 2, 1), (0, 1, 0)]), [(3, 4), ()]),
    Case("pad_negative", lambda lax, x, v: lax.pad(x, v, [(-2, 1, 2), (2, -3, 1)]), [(4, 5), ()]),
    Case("pad_empty", lambda lax, x, v: lax.pad(x, v, [(1, 1, 2), (0, 1, 0)]), [(0, 2), ()]),
    Case("slice", lambda lax, x: lax.slice(x, (1, 0), (4, 3)), [(5, 4)]),
    Case("slice_strided", lambda lax, x: lax.slice(x, (1, 0), (5, 4), (2, 3)), [(6, 4)]),
    Case("slice_empty", lambda lax, x: lax.slice(x, (2, 0), (2, 4), (2, 1)), [(4, 4)]),
    Case("dynamic_slice", lambda lax, x: lax.dynamic_slice(x, (1, 2), (2, 2)), [(4, 5)]),
    Case("dynamic_slice_clamped", lambda lax, x: lax.dynamic_slice(x, (3, -1), (2, 2)), [(4, 5)]),
    Case("dynamic_slice_array_starts", lambda lax, x: lax.dynamic_slice(x, (np.int32(2), np.int32(-7)), (1, 3)),
         [(4, 5)]),
    Case("dynamic_update_slice", lambda lax, x, u: lax.dynamic_update_slice(x, u, (1, 3)), [(4, 5), (2, 3)]),
    Case("dynamic_update_slice_operand", lambda lax, x: lax.dynamic_update_slice(x, np.ones((2, 2), x.dtype), (0, 1)),
         [(3, 3)]),
    Case("gather_rows", _gather_rows(ROWS), [(5, 3)]),
    Case("gather_rows_clip", _gather_rows(OUT_OF_BOUNDS_ROWS, mode="clip"), [(5, 3)]),
    Case("gather_rows_fill", _gather_rows(OUT_OF_BOUNDS_ROWS, mode="fill", fill_value=2.5), [(5, 3)]),
    Case("gather_rows_promise", _gather_rows(UNIQUE_ROWS, mode="promise_in_bounds", unique_indices=True), [(5, 3)]),
    Case("gather_points", lambda lax, x: lax.gather(x, POINTS, _gather_numbers(lax, (), (0, 1), (0, 1)), (1, 1)),
         [(4, 5)]),
    Case("gather_windows", lambda lax, x: lax.gather(x, np.array([[0, 1], [2, 3]], np.int32),
                                                     _gather_numbers(lax, (1, 2), (), (0, 1)), (2, 3), mode="clip"),
         [(4, 5)]),
    Case("gather_windows_fill", lambda lax, x: lax.gather(x, np.array([[0, 1], [3, 3], [2, -1]], np.int32),
                                                          _gather_numbers(lax, (1, 2), (), (0, 1)), (2, 3), mode="fill",
                                                          fill_value=-1.0), [(4, 5)]),
    Case("scatter_add_windows_drop", lambda lax, x, u: lax.scatter_add(
        x, np.array([[0, 1], [3, 3], [2, 2]], np.int32), u, _scatter_numbers(lax, (1, 2), (), (0, 1)), mode="drop"),
         [(4, 5), (3, 2, 3)]),
    Case("gather_batching", lambda lax, x: lax.gather(x, BATCHED_ROWS, _gather_numbers(lax, (), (1,), (1,), (0,), (0,)),
                                                      (1, 1)), [(3, 5)]),
    Case("scatter_add", _scatter_rows("scatter_add", ROWS), [(5, 3), (4, 3)]),
    Case("scatter_add_clip", _scatter_rows("scatter_add", OUT_OF_BOUNDS_ROWS, mode="clip"), [(5, 3), (4, 3)]),
    Case("scatter_add_drop", _scatter_rows("scatter_add", OUT_OF_BOUNDS_ROWS, mode="drop"), [(5, 3), (4, 3)]),
    Case("scatter_add_promise", _scatter_rows("scatter_add", ROWS, mode="promise_in_bounds"), [(5, 3), (4, 3)]),
    Case("scatter_add_points", lambda lax, x, u: lax.scatter_add(x, POINTS, u, _point_numbers(lax)),
         [(4, 5), (3,)]),
    Case("scatter_add_batching", lambda lax, x, u: lax.scatter_add(
        x, BATCHED_ROWS, u, _scatter_numbers(lax, (), (1,), (1,), (0,), (0,))), [(3, 5), (3, 2)]),
    # Which of several updates to one place a plain scatter keeps is XLA's choice, and not a fixed one on GPUs
    # (finite differences then see other winners than the JVP): there the repeats are taken out.
    Case("scatter", _scatter_rows("scatter", PLAIN_SCATTER_ROWS), [(5, 3), (4, 3)]),
    Case("scatter_unique", _scatter_rows("scatter", UNIQUE_ROWS, unique_indices=True), [(5, 3), (4, 3)]),
    Case("scatter_clip", _scatter_rows("scatter", PLAIN_SCATTER_CLIPPED_ROWS, mode="clip"), [(5, 3), (4, 3)]),
    Case("scatter_drop", _scatter_rows("scatter", OUT_OF_BOUNDS_ROWS, mode="drop"), [(5, 3), (4, 3)]),
    Case("scatter_points", lambda lax, x, u: lax.scatter(x, PLAIN_SCATTER_POINTS, u, _point_numbers(lax)),
         [(4, 5), (3,)]),
    Case("scatter_mul_operand", _scatter_rows_fixed_updates("scatter_mul", ROWS), [(5, 3)]),
    Case("scatter_mul_unique", _scatter_rows("scatter_mul", UNIQUE_ROWS, unique_indices=True), [(5, 3), (4, 3)]),
    Case("scatter_mul_drop", _scatter_rows("scatter_mul", OUT_OF_BOUNDS_ROWS[[0, 1, 3]], unique_indices=True,
                                           mode="drop"), [(5, 3), (3, 3)]),
    Case("scatter_min", _scatter_rows("scatter_min", ROWS), [(5, 3), (4, 3)]),
    Case("scatter_max", _scatter_rows("scatter_max", ROWS), [(5, 3), (4, 3)]),
    Case("scatter_max_clip", _scatter_rows("scatter_max", OUT_OF_BOUNDS_ROWS, mode="clip"), [(5, 3), (4, 3)],
         like_jax=False),
    Case("scatter_max_clip_in_bounds", _scatter_rows("scatter_max", ROWS, mode="clip"), [(5, 3), (4, 3)]),
    Case("scatter_min_drop", _scatter_rows("scatter_min", OUT_OF_BOUNDS_ROWS, mode="drop"), [(5, 3), (4, 3)]),
    Case("scatter_max_points", lambda lax, x, u: lax.scatter_max(x, POINTS, u, _point_numbers(lax)),
         [(4, 5), (3,)]),
]


def _args(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2.0, 2.0, shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_grads(case, x64):
    check_grads(lambda *args: case.fn(nlax, *args), _args(case.shapes, np.float64), order=2, modes=("fwd", "rev"))


def _random(rng, like):
    value = rng.standard_normal(np.shape(like))
    if np.iscomplexobj(like):
        value = value + 1j * rng.standard_normal(np.shape(like))
    return value.astype(like.dtype)


def _directions(fn, args, seed):
    """(args, random tangents for them, a random cotangent for fn's output)."""
    rng = np.random.default_rng(seed)
    tangents = [_random(rng, a) for a in args]
    out = jax.eval_shape(lambda *a: fn(jax.lax, *a), *args)
    return args, tangents, _random(rng, np.zeros(out.shape, out.dtype))


def _jax_jvp_and_vjp(fn):
    """JAX's output and JVP along the tangents, and its VJP of the cotangent."""
    def outputs(args, tangents, cotangent):
        f = lambda *a: fn(jax.lax, *a)  # noqa: E731
        return (*jax.jvp(f, args, tangents), jax.vjp(f, *args)[1](cotangent))

    return outputs


def _numax_jvp_and_vjp(fn):
    """numax's output and JVP along the tangents, and its VJP of the cotangent."""
    def outputs(args, tangents, cotangent):
        f = lambda *a: fn(nlax, *a)  # noqa: E731
        return (*numax.jvp(f, args, tangents), numax.vjp(f, *args)[1](cotangent))

    return outputs


def _numax_table(names, functions, arguments):
    """{name: function(*args)} for a table of cases from one numax.jit program (one compile for the table, where
    eager jvp and vjp compile each primitive), or None where that program fails: each case then runs alone."""
    try:
        results = numax.jit(lambda all_arguments: [f(*a) for f, a in zip(functions, all_arguments)])(list(arguments))
    except Exception:  # noqa: BLE001  (the failing case reports its own error)
        return None
    return dict(zip(names, results, strict=True))


def _compare_with_jax(fn, args, seed=1, expected=None, actual=None):
    """JVP along random tangents and VJP of a random cotangent, numax (eagerly, or `actual` when a jitted table
    computed it already) against JAX (float32; one jitted program, or `expected` when a table computed it)."""
    args, tangents, cotangent = _directions(fn, args, seed)
    if expected is None:
        expected = jax.jit(_jax_jvp_and_vjp(fn))(args, tangents, cotangent)
    expected_out, expected_tangent, expected_cts = expected
    if actual is None:
        actual = _numax_jvp_and_vjp(fn)(args, tangents, cotangent)
    out, tangent_out, cts = actual
    assert_close(out, expected_out)
    assert_close(tangent_out, expected_tangent, scale=10)
    assert len(cts) == len(args)
    for ct, expected_ct, arg in zip(cts, expected_cts, args):
        assert np.shape(ct) == np.shape(arg) and np.asarray(ct).dtype == arg.dtype
        assert_close(ct, expected_ct, scale=10)


JAX_CASES = [c for c in CASES if c.like_jax]
BY_NAME = {c.name: c for c in CASES}


def _tables(names, fns, args):
    """(JAX's, numax's) jvp-and-vjp tables of cases `fns` at `args`, each from one jitted program."""
    directions = [_directions(fn, a, 1) for fn, a in zip(fns, args)]
    return (jit_table(names, [_jax_jvp_and_vjp(fn) for fn in fns], directions),
            _numax_table(names, [_numax_jvp_and_vjp(fn) for fn in fns], directions))


def _compare_in_table(tables, name, fn, args):
    expected, actual = tables
    _compare_with_jax(fn, args, expected=expected[name], actual=None if actual is None else actual[name])


# numax's side runs jitted here (one program for the table): every case's eager JVP and VJP are checked by
# test_check_grads (float64, to second order), and the hypothesis tests below compare eager ones with JAX's.
@functools.cache
def _against_jax_tables():
    return _tables([case.name for case in JAX_CASES], [case.fn for case in JAX_CASES],
                   [_args(case.shapes, np.float32) for case in JAX_CASES])


@pytest.mark.parametrize("case", JAX_CASES, ids=lambda c: c.name)
def test_against_jax(case):
    _compare_in_table(_against_jax_tables(), case.name, case.fn, _args(case.shapes, np.float32))


OTHER_DTYPES = {"f16": np.float16, "bf16": dtypes.bfloat16, "c64": np.complex64}
OTHER_DTYPE_CASES = ["pad_negative", "broadcast_stretch", "concatenate", "slice_strided", "dynamic_update_slice",
                     "gather_rows_clip", "scatter_add", "scatter"]


def _other_dtype_args(name, dtype):
    rng = np.random.default_rng(2)
    return [rand(rng, shape, dtype) for shape in BY_NAME[name].shapes]


# Jitted on both sides: the eager dispatch of these dtypes is covered by tests/test_eager_fast_paths.py, and the
# eager JVPs and VJPs of these cases by test_check_grads and test_against_jax's hypothesis companions.
@functools.cache
def _other_dtype_tables():
    keys = [(name, dtype) for name in OTHER_DTYPE_CASES for dtype in OTHER_DTYPES]
    return _tables(keys, [BY_NAME[name].fn for name, _ in keys],
                   [_other_dtype_args(name, OTHER_DTYPES[dtype]) for name, dtype in keys])


@pytest.mark.parametrize("dtype", OTHER_DTYPES)
@pytest.mark.parametrize("name", OTHER_DTYPE_CASES)
def test_other_dtypes_like_jax(name, dtype):
    """Cotangents keep the inputs' dtype; complex transposes do not conjugate."""
    _compare_in_table(_other_dtype_tables(), (name, dtype), BY_NAME[name].fn,
                      _other_dtype_args(name, OTHER_DTYPES[dtype]))


TIE_INDICES = {"clip": (ROWS, "clip"), "unique": (UNIQUE_ROWS, "clip"), "drop": (ROWS, "drop"),
               "oob": (OUT_OF_BOUNDS_ROWS, "drop")}
TIE_OPERANDS = [np.array([[1, 2, 0], [1, 1, 1], [3, 0, 2], [2, 2, 2], [0, 1, 3]], np.float32),
                np.array([[1, 2, 1], [2, 1, 0], [1, 2, 0], [0, 2, 3]], np.float32)]


def _tie_fn(name, indices):
    rows, mode = TIE_INDICES[indices]
    return _scatter_rows(name, rows, mode=mode)


@functools.cache
def _tie_tables():
    keys = [(name, indices) for name in ("scatter_min", "scatter_max") for indices in TIE_INDICES]
    return _tables(keys, [_tie_fn(*key) for key in keys], [TIE_OPERANDS] * len(keys))


@pytest.mark.parametrize("name", ["scatter_min", "scatter_max"])
@pytest.mark.parametrize("indices", TIE_INDICES)
def test_scatter_extremal_ties_like_jax(name, indices):
    """Values tied between the operand and several updates share the tangent as in JAX."""
    _compare_in_table(_tie_tables(), (name, indices), _tie_fn(name, indices), TIE_OPERANDS)


def test_scatter_ties_and_repeats_grad_like_jax():
    """Plain scatter with repeated indices: only the winning update receives a gradient."""
    fn = _scatter_rows("scatter", ROWS)
    operand, updates = _args([(5, 3), (4, 3)], np.float32)
    grads = numax.grad(lambda x, u: nlax.reduce_sum(nlax.sin(fn(nlax, x, u)), (0, 1)), (0, 1))(operand, updates)
    expected = jax.jit(jax.grad(lambda x, u: jnp.sum(jnp.sin(fn(jax.lax, x, u))), (0, 1)))(operand, updates)
    for g, e in zip(grads, expected):
        assert_close(g, e)
    # Exactly one of the two updates of row 1 wins; the overwritten operand row gets nothing.
    assert np.count_nonzero(np.asarray(grads[1])[[0, 2]].any(axis=1)) == 1
    assert not np.asarray(grads[0])[[1, 3, 4]].any()


def test_scatter_mul_updates_needs_unique_indices():
    fn = _scatter_rows("scatter_mul", ROWS)
    operand, updates = _args([(5, 3), (4, 3)], np.float32)
    with pytest.raises(NotImplementedError, match="unique_indices"):
        numax.grad(lambda u: nlax.reduce_sum(fn(nlax, operand, u), (0, 1)))(updates)
    # ... while the operand's gradient is fine (as in JAX).
    grad = numax.grad(lambda x: nlax.reduce_sum(fn(nlax, x, updates), (0, 1)))(operand)
    assert_close(grad, jax.jit(jax.grad(lambda x: jnp.sum(fn(jax.lax, x, updates))))(operand))


def test_gather_out_of_bounds_grads():
    """Filled windows get no gradient; clipped windows add up at the clamped position."""
    x = _args([(5, 3)], np.float32)[0]
    fill = numax.grad(lambda x: nlax.reduce_sum(_gather_rows(OUT_OF_BOUNDS_ROWS, mode="fill")(nlax, x), (0, 1)))(x)
    np.testing.assert_array_equal(np.asarray(fill), np.array([0, 1, 0, 0, 1], np.float32)[:, None] * np.ones(3))
    clip = numax.grad(lambda x: nlax.reduce_sum(_gather_rows(OUT_OF_BOUNDS_ROWS, mode="clip")(nlax, x), (0, 1)))(x)
    np.testing.assert_array_equal(np.asarray(clip), np.array([1, 1, 0, 0, 2], np.float32)[:, None] * np.ones(3))


def test_scatter_add_repeated_indices_transpose():
    """The transpose of a scatter-add with repeated indices gathers the same cotangent for each repeat,
    and the gather's transpose adds repeats up."""
    x, u = _args([(5, 3), (4, 3)], np.float32)
    ct = np.arange(15, dtype=np.float32).reshape(5, 3)
    _, pullback = numax.vjp(lambda x, u: _scatter_rows("scatter_add", ROWS)(nlax, x, u), x, u)
    ct_x, ct_u = pullback(ct)
    np.testing.assert_array_equal(np.asarray(ct_x), ct)
    np.testing.assert_array_equal(np.asarray(ct_u), ct[ROWS[:, 0]])
    _, pullback = numax.vjp(lambda x: _gather_rows(ROWS)(nlax, x), x)
    (ct_x,) = pullback(np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(ct_x), np.array([0, 2, 0, 1, 1], np.float32)[:, None] * np.ones(3))


def test_dynamic_update_slice_grads():
    """The overwritten window gets no gradient from the output; the update gets the window's."""
    x, u = np.zeros((4, 5), np.float32), np.zeros((2, 3), np.float32)
    ct = np.arange(20, dtype=np.float32).reshape(4, 5)
    ct_x, ct_u = numax.vjp(lambda x, u: nlax.dynamic_update_slice(x, u, (1, 3)), x, u)[1](ct)
    expected_x = ct.copy()
    expected_x[1:3, 2:5] = 0  # the start 3 is clamped to 2 so that the update fits
    np.testing.assert_array_equal(np.asarray(ct_x), expected_x)
    np.testing.assert_array_equal(np.asarray(ct_u), ct[1:3, 2:5])


def test_pad_padding_value_cotangent():
    """The padding value's cotangent is the sum over every padded position (none of the cropped ones)."""
    x = np.ones((3, 4), np.float32)
    ct = np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1.0
    config = [(-1, 1, 0), (1, -3, 1)]  # rows: crop one, pad one; columns: pad one, interior, crop three
    out = numax.vjp(lambda x, v: nlax.pad(x, v, config), x, np.float32(0.0))
    ct_x, ct_v = out[1](ct)
    mask = np.asarray(nlax.pad(np.zeros((3, 4), np.float32), np.float32(1), config))
    assert_close(ct_v, np.float32(np.sum(ct * mask)))
    assert_close(ct_x, jax.vjp(lambda x: jax.lax.pad(x, np.float32(0.0), config), x)[1](ct)[0])


# --- hypothesis: shapes, permutations, paddings, slices ----------------------------------------------------------
small_shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


def _check_both(fn, shapes):
    numax.config.update("numax_enable_x64", True)
    try:
        check_grads(lambda *a: fn(nlax, *a), _args(shapes, np.float64), order=2)
    finally:
        numax.config.update("numax_enable_x64", False)
    _compare_with_jax(fn, _args(shapes, np.float32))


@settings(max_examples=6)
@given(shape=small_shapes, data=st.data())
def test_transpose_hypothesis(shape, data):
    permutation = tuple(data.draw(st.permutations(range(len(shape)))))
    _check_both(lambda lax, x: lax.transpose(x, permutation), [shape])


@settings(max_examples=6)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple), data=st.data())
def test_broadcast_in_dim_hypothesis(shape, data):
    new_rank = data.draw(st.integers(len(shape), len(shape) + 2))
    dims = tuple(sorted(data.draw(st.permutations(range(new_rank)))[:len(shape)]))
    out_shape = [data.draw(st.integers(1, 3)) for _ in range(new_rank)]
    for operand_dim, out_dim in enumerate(dims):
        if shape[operand_dim] != 1:
            out_shape[out_dim] = shape[operand_dim]
    _check_both(lambda lax, x: lax.broadcast_in_dim(x, tuple(out_shape), dims), [shape])


@settings(max_examples=6)
@given(shape=small_shapes, data=st.data())
def test_reshape_hypothesis(shape, data):
    size = int(np.prod(shape, dtype=np.int64))
    dimensions = tuple(data.draw(st.permutations(range(len(shape)))))
    new_shape = (size,) if data.draw(st.booleans()) or size == 0 else (1, size, 1)
    _check_both(lambda lax, x: lax.reshape(x, new_shape, dimensions), [shape])


@settings(max_examples=8)
@given(shape=small_shapes, data=st.data())
def test_pad_hypothesis(shape, data):
    config = [(data.draw(st.integers(-2, 2)), data.draw(st.integers(-2, 2)), data.draw(st.integers(0, 2)))
              for _ in shape]
    assume(all(lo + hi + n + max(n - 1, 0) * mid >= 0 for n, (lo, hi, mid) in zip(shape, config)))
    _check_both(lambda lax, x, v: lax.pad(x, v, config), [shape, ()])


@settings(max_examples=8)
@given(shape=small_shapes, data=st.data())
def test_slice_hypothesis(shape, data):
    starts, limits, strides = [], [], []
    for size in shape:
        start = data.draw(st.integers(0, size))
        starts.append(start)
        limits.append(data.draw(st.integers(start, size)))
        strides.append(data.draw(st.integers(1, 3)))
    _check_both(lambda lax, x: lax.slice(x, starts, limits, strides), [shape])


@settings(max_examples=6)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_dynamic_slice_and_update_hypothesis(shape, data):
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    starts = [data.draw(st.integers(-n - 1, n + 1)) for n in shape]
    _check_both(lambda lax, x: lax.dynamic_slice(x, starts, sizes), [shape])
    _check_both(lambda lax, x, u: lax.dynamic_update_slice(x, u, starts), [shape, tuple(sizes)])


@settings(max_examples=6)
@given(rows=st.integers(1, 5), count=st.integers(0, 6), mode=st.sampled_from(["clip", "drop", "promise_in_bounds"]),
       data=st.data())
def test_gather_scatter_add_hypothesis(rows, count, mode, data):
    high = rows if mode == "promise_in_bounds" else rows + 2
    low = 0 if mode == "promise_in_bounds" else -2
    indices = np.array(data.draw(st.lists(st.integers(low, high - 1), min_size=count, max_size=count)),
                       np.int32).reshape(count, 1)
    gather_mode = "fill" if mode == "drop" else mode
    _check_both(lambda lax, x: lax.gather(x, indices, _gather_numbers(lax, (1,), (0,), (0,)), (1, 2),
                                          mode=gather_mode, fill_value=1.0), [(rows, 2)])
    _check_both(lambda lax, x, u: lax.scatter_add(x, indices, u, _scatter_numbers(lax, (1,), (0,), (0,)), mode=mode),
                [(rows, 2), (count, 2)])


# --- jit ---------------------------------------------------------------------------------------------------------
UNDER_JIT = ["pad_negative", "slice_strided", "dynamic_update_slice", "gather_rows_clip", "scatter", "scatter_max",
             "broadcast_stretch", "concatenate"]


def _sin_loss(case, lax, sum_):
    return lambda *a: sum_(lax.sin(case.fn(lax, *a)))


@functools.cache
def _expected_under_jit():
    """JAX's gradients for test_grad_under_jit, from one jax.jit program."""
    cases = [BY_NAME[name] for name in UNDER_JIT]
    return jit_table(UNDER_JIT, [jax.grad(_sin_loss(c, jax.lax, jnp.sum), tuple(range(len(c.shapes)))) for c in cases],
                     [_args(c.shapes, np.float32) for c in cases])


@pytest.mark.parametrize("name", UNDER_JIT)
def test_grad_under_jit(name):
    case = BY_NAME[name]
    args = _args(case.shapes, np.float32)
    argnums = tuple(range(len(args)))
    numax_loss = _sin_loss(case, nlax, lambda y: nlax.reduce_sum(y, tuple(range(np.ndim(y)))))
    expected = _expected_under_jit()[name]
    for grads in (numax.jit(numax.grad(numax_loss, argnums))(*args), numax.grad(numax.jit(numax_loss), argnums)(*args)):
        for g, e in zip(grads, expected):
            assert_close(g, e, scale=10)


def test_grad_with_traced_indices_under_jit():
    """Start indices and gather indices that are jit arguments (tracers) while transposing."""
    x = _args([(5, 3)], np.float32)[0]

    def loss(lax, sum_):
        def f(x, start, rows):
            window = lax.dynamic_slice(x, (start, np.int32(1)), (2, 2))
            updated = lax.dynamic_update_slice(x, window * 3.0, (np.int32(0), start))
            gathered = lax.gather(updated, rows, _gather_numbers(lax, (1,), (0,), (0,)), (1, 3), mode="clip")
            numbers = _scatter_numbers(lax, (1,), (0,), (0,))
            scattered = lax.scatter(x, rows, lax.sin(gathered), numbers, mode="clip")
            maxed = lax.scatter_max(scattered, rows, gathered * 0.5, numbers, mode="drop")
            return sum_(lax.sin(maxed)) + sum_(lax.cos(window))
        return f

    numax_loss = loss(nlax, lambda y: nlax.reduce_sum(y, tuple(range(np.ndim(y)))))
    jax_grad = jax.jit(jax.grad(loss(jax.lax, jnp.sum)))  # one compile for the three starts
    for start in (np.int32(1), np.int32(-1), np.int32(4)):
        expected = jax_grad(x, start, OUT_OF_BOUNDS_ROWS)
        assert_close(numax.jit(numax.grad(numax_loss))(x, start, OUT_OF_BOUNDS_ROWS), expected, scale=10)
        assert_close(numax.grad(numax.jit(numax_loss))(x, start, OUT_OF_BOUNDS_ROWS), expected, scale=10)


# --- numpy-level indexing ----------------------------------------------------------------------------------------
INDEX = np.array([[2, 0], [1, 2]])

NUMPY_CASES = {
    "int": lambda np_, x: x[1],
    "basic": lambda np_, x: x[1:, ::-2],
    "newaxis_ellipsis": lambda np_, x: x[None, ..., 2],
    "list": lambda np_, x: x[np_.array([0, 2, 0])],
    "list_axis1": lambda np_, x: x[:, [3, 0, 3]],
    "array_2d": lambda np_, x: x[INDEX],
    "two_arrays": lambda np_, x: x[[0, 2, 2], [3, 1, 3]],
    "negative": lambda np_, x: x[[-1, 0], -2],
    "at_get_clip": lambda np_, x: x.at[np_.array([0, 5, -7])].get(mode="clip"),
    "at_get_fill": lambda np_, x: x.at[np_.array([0, 5, 2])].get(mode="fill", fill_value=0.0),
    "at_set": lambda np_, x: x.at[np_.array([0, 2, 0])].set(np_.sin(x[1])),
    "at_set_scalar": lambda np_, x: x.at[1, 2].set(x[0, 0] * 3.0),
    "at_add": lambda np_, x: x.at[np_.array([1, 1, 2])].add(x[:3] * 2.0),
    "at_add_drop": lambda np_, x: x.at[np_.array([1, 9])].add(x[:2], mode="drop"),
    "at_mul": lambda np_, x: x.at[np_.array([1, 1, 2])].mul(2.0) + x.at[0].mul(x[2], unique_indices=True),
    "at_min": lambda np_, x: x.at[np_.array([0, 2])].min(np_.cos(x[1:3])),
    "at_max": lambda np_, x: x.at[:, 1].max(x[:, 2] * 0.5),
    "take": lambda np_, x: np_.take(x, np_.array([2, 0, 2]), axis=1),
    "take_flat": lambda np_, x: np_.take(x, np_.array([[11, 0], [3, 3]])),
    "take_clip": lambda np_, x: np_.take(x, np_.array([5, -1]), axis=0, mode="clip"),
    "take_fill": lambda np_, x: np_.take(x, np_.array([5, 1]), axis=0, mode="fill", fill_value=0.0),
    "take_along_axis": lambda np_, x: np_.take_along_axis(x, np_.array([[0, 3], [1, 1], [2, 0]]), axis=1),
    "concatenate": lambda np_, x: np_.concatenate([x, x[:, :1] * 2.0], axis=1),
    "stack": lambda np_, x: np_.stack([x[0], x[2], x[0]], axis=1),
    "roll": lambda np_, x: np_.roll(x, (1, -2), axis=(0, 1)),
    "flip": lambda np_, x: np_.flip(x, 1),
}


def _indexing_inputs(name):
    """x (3, 4) and output weights for a NUMPY_CASES case."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, (3, 4)).astype(np.float32)
    weights = rng.standard_normal(jax.eval_shape(lambda x: NUMPY_CASES[name](jnp, x), x).shape).astype(np.float32)
    return x, weights


def _jax_indexing_grad(name):
    return jax.grad(lambda x, weights: jnp.sum(jnp.sin(NUMPY_CASES[name](jnp, x)) * weights))


@functools.cache
def _expected_indexing_grads():
    """JAX's gradients for test_numpy_indexing_grad_like_jax, from one jax.jit program."""
    names = sorted(NUMPY_CASES)
    return jit_table(names, [_jax_indexing_grad(name) for name in names], [_indexing_inputs(name) for name in names])


@pytest.mark.parametrize("name", sorted(NUMPY_CASES))
def test_numpy_indexing_grad_like_jax(name):
    fn = NUMPY_CASES[name]
    x, weights = _indexing_inputs(name)
    grad = numax.grad(lambda x: xnp.sum(xnp.sin(fn(xnp, x)) * weights))(xnp.asarray(x))
    expected = _expected_indexing_grads()[name]
    assert_close(grad, expected, scale=10)
    if name in ("array_2d", "at_set", "at_add", "at_max", "take_clip", "roll"):
        jitted = numax.jit(numax.grad(lambda x: xnp.sum(xnp.sin(fn(xnp, x)) * weights)))(xnp.asarray(x))
        assert_close(jitted, expected, scale=10)
