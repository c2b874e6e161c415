"""Reductions and contractions against jax.lax: reduce_sum/prod/max/min/and/or/xor, argmax/argmin,
dot_general and dot, eagerly and under jit, incl. empty shapes and error messages."""

import jax
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, rand
from jax import lax as jlax

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


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_jax(rng, name):
    for dtype in REDUCTIONS[name]:
        cases = [(_inputs(rng, shape, dtype), axes) for shape, axes in AXES_AND_SHAPES]
        want = jax.jit(lambda xs: [getattr(jlax, name)(x, a) for x, (_, a) in zip(xs, cases)])([x for x, _ in cases])
        traced = numax.jit(lambda xs: [getattr(lax, name)(x, a) for x, (_, a) in zip(xs, cases)])(
            [x for x, _ in cases])
        for (x, axes), expected, got_jit in zip(cases, want, traced):
            got = getattr(lax, name)(x, axes)
            for result in (got, got_jit):
                scale = 20 if name == "reduce_prod" else 4
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


@pytest.mark.parametrize("kind", sorted(ARG_INPUTS))
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_nan_and_ties(name, kind):
    x = ARG_INPUTS[kind]
    for axis in (0, 1):
        for index_dtype in (np.int32, np.uint8, np.int16):
            want = getattr(jlax, name)(x, axis, index_dtype)
            for fn in (getattr(lax, name), numax.jit(getattr(lax, name), static_argnums=(1, 2))):
                got = fn(x, axis, index_dtype)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, bf16, np.float16, np.int8])
def test_argmax_argmin_dtypes(rng, dtype):
    x = rand(rng, (4, 5), dtype)
    for name in ("argmax", "argmin"):
        want = getattr(jlax, name)(x, 1, np.int32)
        got = getattr(lax, name)(x, -1, np.int32)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        # A 1-d operand reduces to a scalar.
        assert int(getattr(lax, name)(x[0], 0, np.int32)) == int(getattr(jlax, name)(x[0], 0, np.int32))


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


@pytest.mark.parametrize("name, lhs_shape, rhs_shape, numbers", DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_dot_general_matches_jax(rng, name, lhs_shape, rhs_shape, numbers):
    for dtype, preferred in [(np.float32, None), (np.int32, None), (bf16, None), (bf16, np.float32),
                             (np.int8, np.int32), (np.complex64, None), (np.float16, np.float32)]:
        lhs, rhs = rand(rng, lhs_shape, dtype), rand(rng, rhs_shape, dtype)
        want = jlax.dot_general(lhs, rhs, numbers, preferred_element_type=preferred)

        def fn(a, b):
            return lax.dot_general(a, b, numbers, preferred_element_type=preferred)

        for f in (fn, numax.jit(fn)):
            got = f(lhs, rhs)
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
