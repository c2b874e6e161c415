"""The Python array API standard as jax.numpy supports it: namespace, names, isdtype, type promotion,
integer division by zero, and standard semantics under jit."""

import itertools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import numax
import numax.numpy as xnp

# The standard's names (2024.12: functions, constants, dtypes); each one jax.numpy has must exist here.
STANDARD_NAMES = """
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert bitwise_or
bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor floor_divide greater
greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not
logical_or logical_xor maximum minimum multiply negative nextafter not_equal positive pow real reciprocal remainder
round sign signbit sin sinh square sqrt subtract tan tanh trunc
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu zeros
zeros_like
astype can_cast finfo iinfo isdtype result_type
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll squeeze stack tile
unstack
argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values argsort sort
cumulative_sum cumulative_prod max mean min prod std sum var all any diff
matmul matrix_transpose tensordot vecdot reciprocal take take_along_axis
e inf nan newaxis pi
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
""".split()


def test_namespace():
    x = xnp.asarray([1.0, 2.0])
    assert x.__array_namespace__() is xnp
    assert x.__array_namespace__(api_version="2024.12") is xnp


@pytest.mark.parametrize("name", [n for n in STANDARD_NAMES if hasattr(jnp, n)])
def test_standard_name_exists(name):
    assert hasattr(xnp, name), f"numax.numpy lacks the array API name {name!r}"


def test_array_attributes_and_methods():
    x = xnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == xnp.float32
    np.testing.assert_array_equal(np.asarray(x.mT), np.arange(6).reshape(2, 3).T)
    np.testing.assert_array_equal(np.asarray(xnp.astype(x, xnp.int32)), np.arange(6).reshape(2, 3))
    assert xnp.astype(x, "bfloat16").dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("dtype, kind, expected", [
    (np.float32, "real floating", True), (np.float32, "integral", False), (np.int8, "signed integer", True),
    (np.uint16, "unsigned integer", True), (np.uint16, "signed integer", False), (np.bool_, "bool", True),
    (np.bool_, "numeric", False), (np.complex64, "complex floating", True), (np.complex64, "numeric", True),
    (ml_dtypes.bfloat16, "real floating", True), (np.int32, ("bool", "integral"), True),
    (np.float16, np.float16, True), (np.float16, (np.float32, "integral"), False),
])
def test_isdtype_matches_jnp(dtype, kind, expected):
    assert xnp.isdtype(xnp.dtype(dtype), kind) is expected
    assert jnp.isdtype(jnp.dtype(dtype), kind) is expected
    with pytest.raises(ValueError, match="Unrecognized kind='floating point'"):
        xnp.isdtype(np.float32, "floating point")


PROMOTION_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16,
                    ml_dtypes.bfloat16, np.float32, np.complex64]


def test_array_promotion_table_matches_jax():
    # Mixed-kind promotion (int with float, uint with int, bfloat16 with float16) as JAX defines it.
    # The operator's result types by tracing (no compile per pair); eagerly for equal dtypes (a fast path).
    for a, b in itertools.product(PROMOTION_DTYPES, repeat=2):
        want = jax.eval_shape(lambda u, v: u + v, jax.ShapeDtypeStruct((2,), a), jax.ShapeDtypeStruct((2,), b))
        got = numax.eval_shape(lambda u, v: u + v, numax.ShapeDtypeStruct((2,), a), numax.ShapeDtypeStruct((2,), b))
        assert got.dtype == want.dtype, (a, b)
        if a == b:
            assert (xnp.ones(2, a) + xnp.ones(2, b)).dtype == want.dtype, a
        assert xnp.result_type(a, b) == jnp.result_type(a, b), (a, b)
        assert xnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)


@pytest.mark.parametrize("scalar", [2, 2.5, True, 1 + 1j])
def test_python_scalar_promotion_matches_jax(scalar):
    for dtype in PROMOTION_DTYPES:
        x = np.ones(2, dtype)
        want = _try(lambda: jnp.asarray(x) * scalar)
        got = _try(lambda: xnp.asarray(x) * scalar)
        assert (want is None) == (got is None), (dtype, scalar)
        if want is not None:
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (dtype, scalar)


def _try(fn):
    try:
        return fn()
    except (TypeError, OverflowError):
        return None


# The standard's special cases of the elementwise functions: tests/test_array_api_special_cases*.py.


def test_integer_floor_divide_by_zero_matches_jax():
    x = np.array([5, -5, 0], np.int32)
    y = np.zeros(3, np.int32)
    np.testing.assert_array_equal(np.asarray(xnp.floor_divide(x, y)), np.asarray(jnp.floor_divide(x, y)))
    np.testing.assert_array_equal(np.asarray(xnp.remainder(x, y)), np.asarray(jnp.remainder(x, y)))


def test_jit_results_keep_standard_semantics():
    fn = numax.jit(lambda a, b: (xnp.maximum(a, b), xnp.sqrt(a), xnp.floor_divide(a, b)))
    mx, sq, fd = fn(np.float32(np.nan), np.float32(0.0))
    assert np.isnan(np.asarray(mx)) and np.isnan(np.asarray(sq)) and np.isnan(np.asarray(fd))
