"""Helpers of the array API tests: 32- and 64-bit modes for numax and jax together, and a strict
comparison of numax's results with jax.numpy's."""

import contextlib

import numpy as np
import pytest
from harness import jax

import numax


@contextlib.contextmanager
def bit_mode(x64):
    """numax and jax in 64-bit mode (or 32-bit), restored after: for hypothesis tests, which draw the mode."""
    numax.config.update("numax_enable_x64", x64)
    try:
        with jax.enable_x64(x64):
            yield
    finally:
        numax.config.update("numax_enable_x64", False)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def bits64(request):
    """Runs a test in 32-bit mode, then in 64-bit mode (numax's `x64` fixture with jax's flag)."""
    if not request.param:
        yield False
        return
    request.getfixturevalue("x64")
    with jax.enable_x64(True):
        yield True


def assert_same(ours, theirs, exact=True):
    """numax's result is jax's: dtype, weak type, shape and values (NaNs and the signs of zeros too when
    `exact`, else within half a percent)."""
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), (ours, theirs)
    assert getattr(ours, "weak_type", False) == getattr(theirs, "weak_type", False)
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if exact or ours.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, theirs)
        if ours.dtype.kind in "fc" or ours.dtype.kind == "V":
            np.testing.assert_array_equal(np.signbit(ours.real.astype(np.float64)),
                                          np.signbit(theirs.real.astype(np.float64)))
    else:
        np.testing.assert_allclose(ours.astype(np.complex128), theirs.astype(np.complex128), rtol=5e-3)
