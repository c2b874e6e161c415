"""Shared test helpers: random inputs per dtype, dtype-aware tolerances, and the jax oracle."""

import os

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402  (the oracle: tests only)
import jax.numpy as jnp  # noqa: E402, F401
from numax.core import dtypes  # noqa: E402

float_dtypes = [np.float32, dtypes.bfloat16, np.float16]
int_dtypes = [np.int32, np.int8, np.int16, np.uint8, np.uint32]
all_dtypes = [np.bool_] + int_dtypes + float_dtypes + [np.complex64]

_tolerances = {
    np.dtype(np.float16): 1e-2, np.dtype(dtypes.bfloat16): 5e-2, np.dtype(np.float32): 1e-5,
    np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12,
}


def tolerance(dtype, scale=1.0):
    return _tolerances.get(np.dtype(dtype), 0) * scale


def rand(rng, shape, dtype, low=-3.0, high=3.0):
    """Random values of `dtype`: uniform floats, small integers, random bools, complex pairs."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, int(low) * 10), min(info.max, int(high) * 10)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def assert_close(actual, expected, dtype=None, scale=1.0, check_dtype=True):
    """Compares a numax result to a numpy/jax one with a tolerance fitting the dtype."""
    actual_np = np.asarray(actual)
    expected_np = np.asarray(expected)
    if check_dtype:
        assert actual_np.dtype == expected_np.dtype, (actual_np.dtype, expected_np.dtype)
    assert actual_np.shape == expected_np.shape, (actual_np.shape, expected_np.shape)
    dtype = np.dtype(dtype or expected_np.dtype)
    tol = tolerance(dtype, scale)
    if dtype == dtypes.bfloat16 or dtype == np.float16:
        actual_np, expected_np = actual_np.astype(np.float32), expected_np.astype(np.float32)
    if tol == 0:
        np.testing.assert_array_equal(actual_np, expected_np)
    else:
        np.testing.assert_allclose(actual_np, expected_np, rtol=tol, atol=tol)


__all__ = ["jax", "jnp", "rand", "assert_close", "tolerance", "float_dtypes", "int_dtypes", "all_dtypes"]
