"""Array API functions whose standard form differs from numpy's, against jax.numpy in 32- and 64-bit mode:
linalg.diagonal/trace/outer/cross/tensordot, vecdot, broadcast_to, searchsorted and arange."""

import inspect

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from array_api_util import assert_same, bit_mode, bits64  # noqa: F401  (bits64: a fixture)
from hypothesis import given
from hypothesis import strategies as st

import numax
import numax.numpy as xnp

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128]


def _values(rng, shape, dtype):
    values = rng.integers(-3, 4, size=shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.integers(-3, 4, size=shape)
    if np.dtype(dtype).kind in "ub":
        values = np.abs(values)
    return values.astype(dtype)


VALUE_DTYPES = [np.bool_, np.int16, ml_dtypes.bfloat16, np.float32, np.complex128]


# --- linalg's array API forms: every dtype, both modes --------------------------------------------------------
LINALG_CASES = {
    "linalg.diagonal": lambda m, x, y: m.linalg.diagonal(x, offset=1),
    "linalg.diagonal_negative": lambda m, x, y: m.linalg.diagonal(x, offset=-2),
    "linalg.trace": lambda m, x, y: m.linalg.trace(x),
    "linalg.trace_offset": lambda m, x, y: m.linalg.trace(x, offset=-1),
    "linalg.trace_dtype": lambda m, x, y: m.linalg.trace(x, dtype=m.float32),
    "trace": lambda m, x, y: m.trace(x, 1),
    "vecdot": lambda m, x, y: m.vecdot(x, y),
    "vecdot_axis": lambda m, x, y: m.vecdot(x, y, axis=-2),
    "linalg.vecdot": lambda m, x, y: m.linalg.vecdot(x[:, :1], y, axis=0),
    "linalg.tensordot": lambda m, x, y: m.linalg.tensordot(x, y[0], axes=2),
    "linalg.outer": lambda m, x, y: m.linalg.outer(x[0, 0], y[1, 1]),
    "linalg.cross": lambda m, x, y: m.linalg.cross(x[..., :3], y[:1, :, :3]),
}


def _cases_for(dtype):
    # jax's cross subtracts, which bool arrays do not allow (numax raises the same TypeError).
    return {name: fn for name, fn in LINALG_CASES.items() if not (name == "linalg.cross" and dtype == np.bool_)}


def test_linalg_array_api_forms_match_jax(bits64, rng):  # noqa: F811
    # Result types for every dtype by tracing only; values from one jitted program per dtype and library.
    for dtype in DTYPES:
        cases = _cases_for(dtype)
        x, y = _values(rng, (2, 3, 4), dtype), _values(rng, (2, 3, 4), dtype)

        def program(namespace, cases=cases):
            return lambda a, b: [fn(namespace, a, b) for fn in cases.values()]

        our_types = numax.eval_shape(program(xnp), numax.ShapeDtypeStruct(x.shape, x.dtype),
                                     numax.ShapeDtypeStruct(y.shape, y.dtype))
        their_types = jax.eval_shape(program(jnp), jax.ShapeDtypeStruct(x.shape, x.dtype),
                                     jax.ShapeDtypeStruct(y.shape, y.dtype))
        for name, ours, theirs in zip(cases, our_types, their_types):
            assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype), (name, dtype)
        if dtype in VALUE_DTYPES:
            ours, theirs = numax.jit(program(xnp))(x, y), jax.jit(program(jnp))(x, y)
            for name, our_value, their_value in zip(cases, ours, theirs):
                assert_same(our_value, their_value, exact=np.dtype(dtype).kind not in "fc"), name


@given(shapes=st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((1, 4, 3), (5, 1, 3)), ((4, 3), (2, 1, 3)),
                               ((2, 0), (2, 0)), ((0, 2), (1, 2))]),
       axis=st.sampled_from([-1, -2]), dtype=st.sampled_from([np.float32, np.complex64, np.int16, np.bool_]))
def test_vecdot_broadcasts_and_conjugates_as_jax(shapes, axis, dtype):
    x1, x2 = (_values(np.random.default_rng(len(s)), s, dtype) for s in shapes)
    if min(len(s) for s in shapes) < -axis:
        with pytest.raises(IndexError):
            jnp.vecdot(x1, x2, axis=axis)
        with pytest.raises(IndexError):
            xnp.vecdot(x1, x2, axis=axis)
        return
    try:
        theirs = jnp.vecdot(x1, x2, axis=axis)
    except ValueError as error:
        with pytest.raises(ValueError, match="axes must match"):
            xnp.vecdot(x1, x2, axis=axis)
        assert "axes must match" in str(error)
        return
    assert_same(xnp.vecdot(x1, x2, axis=axis), theirs)
    if dtype == np.complex64 and x1.size:
        expected = np.sum(np.conj(np.moveaxis(x1, axis, -1)) * np.moveaxis(x2, axis, -1), axis=-1)
        np.testing.assert_allclose(np.asarray(xnp.linalg.vecdot(x1, x2, axis=axis)), expected, rtol=1e-6)


def test_linalg_forms_reject_what_jax_rejects():
    cases = [(lambda m: m.linalg.outer(np.ones((2, 2)), np.ones(2)), ValueError),
             (lambda m: m.linalg.cross(np.ones(2), np.ones(2)), ValueError),
             (lambda m: m.linalg.diagonal(np.ones(3)), ValueError),
             (lambda m: m.linalg.matrix_transpose(np.ones(3)), ValueError)]
    for make, error in cases:
        with pytest.raises(error):
            make(jnp)
        with pytest.raises(error):
            make(xnp)


# --- broadcast_to -------------------------------------------------------------------------------------------
def test_broadcast_to_names_its_parameter_shape():
    assert list(inspect.signature(xnp.broadcast_to).parameters)[:2] == ["array", "shape"]
    np.testing.assert_array_equal(np.asarray(xnp.broadcast_to(np.arange(3), shape=(2, 3))),
                                  np.asarray(jnp.broadcast_to(np.arange(3), shape=(2, 3))))
    assert xnp.broadcast_to(1.0, shape=4).shape == (4,)


# --- searchsorted -------------------------------------------------------------------------------------------
SORTED_VALUES = np.array([-np.inf, -1.5, 0.0, 0.0, 2.0, 2.0, 7.25, np.inf, np.nan], np.float32)


@given(side=st.sampled_from(["left", "right"]), query=st.sampled_from([
    2.0, -1, np.float32(0.0), np.nan, np.array(7.25, np.float32), np.array([[2.0, np.nan], [-np.inf, 3.0]]),
    np.array([], np.float32), np.array([1, 2], np.int8), True]),
       sorter=st.booleans(), a_dtype=st.sampled_from([np.float32, np.int32, np.uint8]), x64=st.booleans())
def test_searchsorted_accepts_what_the_standard_allows(side, query, sorter, a_dtype, x64):
    a = SORTED_VALUES if a_dtype == np.float32 else np.array([0, 1, 1, 2, 5, 9], a_dtype)
    keywords = {"side": side}
    if sorter:
        order = np.random.default_rng(a.size).permutation(a.size)
        a, keywords["sorter"] = a[order], np.argsort(order).astype(np.int32)
    with bit_mode(x64):
        theirs = jnp.searchsorted(jnp.asarray(a), query, **keywords)
        assert_same(xnp.searchsorted(xnp.asarray(a), query, **keywords), theirs)


# --- arange -------------------------------------------------------------------------------------------------
ARANGE_ARGUMENTS = [(5,), (5.0,), (0,), (-3,), (2, 7), (7, 2), (5, 5), (7, 2, -1), (10, 2, -3), (2, 10, 3), (0, 1, 0.1),
                    (1, 0, -0.25), (0.5, 3), (3, 0.5, -0.5), (0, 10.0, 2), (1, 2, 1 / 3), (-1e-3, 1e-3, 7e-4),
                    (np.int8(3),), (np.float32(2.5),), (np.uint8(2), 9), (5, None, 2), (5, None, -1), (3, None)]


# Explicit dtypes, narrower and wider than the bounds: jax rounds start and step to the dtype first.
ARANGE_WITH_DTYPE = [((1, 0, -0.25), np.int16), ((3, 0.5, -0.5), np.uint8), ((0, 1, 0.1), np.float16),
                     ((0, 1, 0.1), np.float64), ((2, 10, 3), np.float32), ((5,), np.int64), ((7, 2, -1), np.uint8),
                     ((0.5, 3), np.int16), ((np.int8(3),), np.float32), ((5, None, 2), np.int16),
                     ((-1e-3, 1e-3, 7e-4), np.float16), ((1, 2, 1 / 3), np.int64)]


def test_arange_matches_jax(bits64):  # noqa: F811
    for arguments, dtype in [(a, None) for a in ARANGE_ARGUMENTS] + ARANGE_WITH_DTYPE:
        keywords = {} if dtype is None else {"dtype": dtype}
        assert_same(xnp.arange(*arguments, **keywords), jnp.arange(*arguments, **keywords))
        # numpy's values where jax follows numpy (numpy computes without rounding start and step to `dtype`).
        if dtype is None and all(type(a) is not float or a == int(a) for a in arguments):
            np.testing.assert_array_equal(np.asarray(xnp.arange(*arguments)), np.arange(*arguments))


def test_arange_errors_as_jax(bits64):  # noqa: F811
    for arguments, error in [((True,), TypeError), ((np.ones(2),), ValueError), ((1 + 2j,), ValueError),
                             ((0, 1, 0), ZeroDivisionError)]:
        with pytest.raises(error):
            jnp.arange(*arguments)
        with pytest.raises(error):
            xnp.arange(*arguments)
    with pytest.raises(numax.errors.ConcretizationTypeError, match="arange's stop argument"):
        numax.jit(lambda n: xnp.arange(n))(3)


def test_outer_of_bools_and_unravel_index_keywords_match_jax():
    a, b = np.array([True, False, True]), np.array([True, False])
    ours, theirs = xnp.outer(a, b), jnp.outer(a, b)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    for got, want in zip(xnp.unravel_index(np.array([0, 5, 7]), shape=(2, 3)),
                         jnp.unravel_index(np.array([0, 5, 7]), shape=(2, 3))):
        np.testing.assert_array_equal(got, want)
