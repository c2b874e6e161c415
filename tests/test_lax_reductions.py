"""Reductions and contractions against jax.lax: reduce_sum/prod/max/min/and/or/xor, argmax/argmin,
dot_general and dot, eagerly and under jit, incl. empty shapes and error messages."""

import functools

import jax
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, rand
from jax import lax as jlax
from oracle import jit_table

import numax
from numax import lax

bf16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_INT = [np.float32, np.float16, bf16, np.int32, np.int8, np.uint8, np.uint32, np.complex64]
REDUCTIONS = {
    "reduce_sum": FLOAT_INT,
    "reduce_prod": FLOAT_INT,
    "reduce_max": FLOAT_INT + [np.bool_],
    "reduce_min": FLOAT_INT + [np.bool_],
    "reduce_and": [np.bool_, np.int32, np.uint8],
    "reduce_or": [np.bool_, np.int32, np.uint8],
    "reduce_xor": [np.bool_, np.int32, np.uint8],
}
AXES_AND_SHAPES = [((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (0, 1, 2)), ((3, 0), (0,)), ((3, 0), (1,)),
                   ((0,), (0,))]


def _inputs(rng, shape, dtype):
    low, high = (0.5, 1.5) if dtype in (np.float16, bf16) else (-2, 2)
    x = rand(rng, shape, dtype, low, high)
    if np.issubdtype(np.dtype(dtype), np.floating) or np.dtype(dtype) == bf16:
        flat = x.reshape(-1)
        if flat.size > 5:
            flat[[1, 4]] = [np.nan, np.inf]
    return x


# Eager reductions run the same lowering as jit, one primitive per program: they are checked on these dtypes,
# every dtype is checked under jit (tests/test_eager_fast_paths.py covers eager dispatch in general).
EAGER_REDUCTION_DTYPES = (np.float32, np.bool_)


def _reduction_cases(name):
    """[(dtype, [(input, axes) for each of AXES_AND_SHAPES])] for one reduction, from a fresh rng(0)."""
    rng = np.random.default_rng(0)
    return [(dtype, [(_inputs(rng, shape, dtype), axes) for shape, axes in AXES_AND_SHAPES])
            for dtype in REDUCTIONS[name]]


@functools.cache
def _reduction_table():
    """Every reduction case, computed by ONE jax program (the oracle) and ONE numax.jit program."""
    cases = {name: _reduction_cases(name) for name in sorted(REDUCTIONS)}
    inputs = {name: [[x for x, _ in dtype_cases] for _, dtype_cases in by_dtype] for name, by_dtype in cases.items()}

    def reduce_all(lax_module, inputs):  # (the axes are static: taken from `cases`, not traced)
        return {name: [[getattr(lax_module, name)(x, axes) for x, (_, axes) in zip(xs, dtype_cases)]
                       for xs, (_, dtype_cases) in zip(inputs[name], by_dtype)] for name, by_dtype in cases.items()}

    want = jax.jit(lambda inputs: reduce_all(jlax, inputs))(inputs)
    traced = numax.jit(lambda inputs: reduce_all(lax, inputs))(inputs)
    return cases, want, traced


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_jax(name):
    cases, want, traced = _reduction_table()
    scale = 20 if name == "reduce_prod" else 4
    for (dtype, dtype_cases), expected_row, jit_row in zip(cases[name], want[name], traced[name], strict=True):
        for (x, axes), expected, got_jit in zip(dtype_cases, expected_row, jit_row, strict=True):
            results = [got_jit] + ([getattr(lax, name)(x, axes)] if dtype in EAGER_REDUCTION_DTYPES else [])
            for result in results:
                assert_close(result, np.asarray(expected), scale=scale)


def test_reductions_with_no_axes_and_negative_axes(rng):
    x = rand(rng, (2, 3), np.float32)
    out = lax.reduce_sum(x, ())
    assert isinstance(out, numax.Array)
    np.testing.assert_array_equal(np.asarray(out), x)
    assert_close(lax.reduce_max(x, (-1,)), jlax.reduce_max(x, (1,)))
    weak = numax.numpy.asarray(2.0)
    assert lax.reduce_sum(lax.broadcast_in_dim(weak, (3,), ()), (0,)).weak_type


@pytest.mark.parametrize("fn, message", [
    (lambda: lax.reduce_and(np.ones(3, np.float32), (0,)), "reduce_and does not accept dtype float32"),
    (lambda: lax.reduce_sum(np.ones(3, np.bool_), (0,)), "reduce_sum does not accept dtype bool"),
    (lambda: lax.reduce_sum(np.ones(3, np.float32), (1,)), "out of bounds"),
    (lambda: lax.argmax(np.ones((3, 0), np.float32), 1, np.int32), "empty axis"),
    (lambda: lax.argmin(np.ones(3, np.complex64), 0, np.int32), "argmin does not accept dtype complex64"),
    (lambda: lax.dot_general(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), (((1,), (0,)), ((), ()))),
     "contracting dimensions must have equal sizes"),
    (lambda: lax.dot_general(np.ones((2, 3), np.float32), np.ones((3, 2), np.int32), (((1,), (0,)), ((), ()))),
     "same dtype"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 4)), (((1,), (0,)), ((0,), (1,)))), "batch dimensions"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 2)), (((1,), (0,)), ((1,), (1,)))), "use a dimension twice"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3,)), (((1,), (0,)), ((0,), ()))), "pair up different"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3,)), (((2,), (0,)), ((), ()))), "lhs contracting"),
    (lambda: lax.dot(np.ones((2, 3, 4)), np.ones((4,))), "dot takes arrays of rank 1 or 2"),
])
def test_errors(fn, message):
    with pytest.raises((TypeError, ValueError), match=message):
        fn()


# --- argmax / argmin ------------------------------------------------------------------------------------------
ARG_INPUTS = {
    "ties": np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-1, 5, 5, 5]], np.float32),
    "nan": np.array([[1, np.nan, 3, np.nan], [np.nan, 2, 2, 2], [-np.inf, np.inf, 0, 0]], np.float32),
    "negative_zero": np.array([[-0.0, 0.0, 0.0, -0.0], [0.0, -0.0, 1.0, 1.0], [2, 2, -0.0, 0.0]], np.float32),
}


@functools.cache
def _jax_ties_table():
    # The oracle of every (function, input, axis, index dtype) from one jax program.
    keys = [(name, kind, axis, np.dtype(index_dtype).name) for name in ("argmax", "argmin") for kind in ARG_INPUTS
            for axis in (0, 1) for index_dtype in (np.int32, np.uint8, np.int16)]
    return jit_table(keys, [lambda x, k=k: getattr(jlax, k[0])(x, k[2], np.dtype(k[3])) for k in keys],
                     [(ARG_INPUTS[k[1]],) for k in keys])


@pytest.mark.parametrize("kind", sorted(ARG_INPUTS))
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_nan_and_ties(name, kind):
    x = ARG_INPUTS[kind]
    for axis in (0, 1):
        for index_dtype in (np.int32, np.uint8, np.int16):
            want = _jax_ties_table()[name, kind, axis, np.dtype(index_dtype).name]
            for fn in (getattr(lax, name), numax.jit(getattr(lax, name), static_argnums=(1, 2))):
                got = fn(x, axis, index_dtype)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


ARG_DTYPES = [np.int32, np.uint8, np.bool_, bf16, np.float16, np.int8]


def _arg_input(dtype):
    return rand(np.random.default_rng(0), (4, 5), dtype)


@functools.cache
def _jax_arg_table():
    # The oracle of every dtype from one jax program: {dtype name: {name: (argmax along 1, of row 0)}}.
    def arg_all(xs):
        return {key: {name: (getattr(jlax, name)(x, 1, np.int32), getattr(jlax, name)(x[0], 0, np.int32))
                      for name in ("argmax", "argmin")} for key, x in xs.items()}

    return jax.jit(arg_all)({np.dtype(dtype).name: _arg_input(dtype) for dtype in ARG_DTYPES})


@pytest.mark.parametrize("dtype", ARG_DTYPES)
def test_argmax_argmin_dtypes(dtype):
    x = _arg_input(dtype)
    for name in ("argmax", "argmin"):
        want, want_row = _jax_arg_table()[np.dtype(dtype).name][name]
        got = getattr(lax, name)(x, -1, np.int32)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        # A 1-d operand reduces to a scalar.
        assert int(getattr(lax, name)(x[0], 0, np.int32)) == int(want_row)


# --- dot_general / dot -----------------------------------------------------------------------------------------
DOT_CASES = [
    ("matmul", (3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ("batch", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ("batch_not_leading", (3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),
    ("two_contracting", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ("two_batch", (2, 3, 4, 5), (3, 2, 5), (((3,), (2,)), ((0, 1), (1, 0)))),
    ("outer", (3,), (4,), (((), ()), ((), ()))),
    ("vector", (4,), (4,), (((0,), (0,)), ((), ()))),
    ("empty_contraction", (3, 0), (0, 2), (((1,), (0,)), ((), ()))),
    ("empty_free", (0, 4), (4, 2), (((1,), (0,)), ((), ()))),
]


DOT_DTYPES = [(np.float32, None), (np.int32, None), (bf16, None), (bf16, np.float32), (np.int8, np.int32),
              (np.complex64, None), (np.float16, np.float32)]
# Eager dot_general runs the same lowering as jit, one primitive per program: checked on these (dtype, preferred)
# pairs, every pair under jit (tests/test_eager_fast_paths.py covers eager dot_general dispatch and its fast path).
EAGER_DOT_DTYPES = [(np.float32, None), (np.int8, np.int32)]


def _dot_operands(name, lhs_shape, rhs_shape):
    """[(lhs, rhs) for each of DOT_DTYPES] for one case, from a fresh rng(0)."""
    rng = np.random.default_rng(0)
    return [(rand(rng, lhs_shape, dtype), rand(rng, rhs_shape, dtype)) for dtype, _ in DOT_DTYPES]


@functools.cache
def _dot_table():
    """Every dot_general case, computed by ONE jax program (the oracle) and ONE numax.jit program."""
    operands = [_dot_operands(*case[:3]) for case in DOT_CASES]

    def dot_all(lax_module, operands):
        return [[lax_module.dot_general(lhs, rhs, numbers, preferred_element_type=preferred)
                 for (lhs, rhs), (_, preferred) in zip(pairs, DOT_DTYPES)]
                for pairs, (*_, numbers) in zip(operands, DOT_CASES)]

    want = jax.jit(lambda operands: dot_all(jlax, operands))(operands)
    traced = numax.jit(lambda operands: dot_all(lax, operands))(operands)
    return {case[0]: row for case, row in zip(DOT_CASES, zip(operands, want, traced))}


@pytest.mark.parametrize("name, lhs_shape, rhs_shape, numbers", DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_dot_general_matches_jax(name, lhs_shape, rhs_shape, numbers):
    operands, want_row, jit_row = _dot_table()[name]
    for (dtype, preferred), (lhs, rhs), want, got_jit in zip(DOT_DTYPES, operands, want_row, jit_row, strict=True):
        results = [got_jit]
        if (dtype, preferred) in EAGER_DOT_DTYPES:
            results.append(lax.dot_general(lhs, rhs, numbers, preferred_element_type=preferred))
        for got in results:
            assert (got.shape, got.dtype) == (want.shape, want.dtype), (name, dtype, preferred)
            assert_close(got, np.asarray(want), scale=4)


def test_int8_dot_accumulates_in_int32():
    # int8 products that overflow int8 are exact with preferred_element_type=int32.
    lhs = np.full((2, 64), 100, np.int8)
    rhs = np.full((64, 3), 100, np.int8)
    got = lax.dot(lhs, rhs, preferred_element_type=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.full((2, 3), 640000, np.int32))


def test_dot_and_weak_types(rng):
    for lhs_shape, rhs_shape in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))]:
        lhs, rhs = rand(rng, lhs_shape, np.float32), rand(rng, rhs_shape, np.float32)
        want = jlax.dot(lhs, rhs)
        for f in (lax.dot, numax.jit(lax.dot)):
            assert_close(f(lhs, rhs), np.asarray(want), scale=4)
    weak = lax.broadcast_in_dim(numax.numpy.asarray(2.0), (3,), ())
    jweak = jlax.broadcast_in_dim(jax.numpy.asarray(2.0), (3,), ())
    assert lax.dot(weak, weak).weak_type == jlax.dot(jweak, jweak).weak_type
    assert lax.dot(weak, weak, preferred_element_type=np.float32).weak_type == jlax.dot(
        jweak, jweak, preferred_element_type=np.float32).weak_type


def test_dot_general_precision_reaches_stablehlo():
    x = numax.numpy.ones((2, 2))
    text = numax.jit(lambda v: lax.dot(v, v, precision=lax.Precision.HIGHEST)).lower(x).as_text()
    assert "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in text
    assert "precision_config" not in numax.jit(lambda v: lax.dot(v, v)).lower(x).as_text()
    with pytest.raises(ValueError, match="unknown precision"):
        lax.dot(x, x, precision="fastest-ever")


def test_dot_general_integers_into_float(rng):
    # XLA's GPU backend cannot multiply integers into floats, so the lowering converts the operands first.
    a, b = rand(rng, (3, 4), np.int8), rand(rng, (4, 2), np.int8)
    got = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), a.astype(np.float32) @ b.astype(np.float32))
