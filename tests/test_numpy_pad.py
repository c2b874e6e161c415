"""numax.numpy.pad against numpy (and jax for dtypes): every mode, width forms, per-side values, grads."""

import numpy as np
import pytest
from harness import jax, jnp

import numax
import numax.numpy as xnp

MODES = ["constant", "empty", "edge", "wrap", "reflect", "symmetric", "maximum", "minimum", "mean", "median",
         "linear_ramp"]
WIDTHS = [0, 1, (2, 3), ((1, 0), (5, 2)), ((0, 7), (3, 0)), [[4], [1]]]


def _expected(x, width, mode, **kwargs):
    return np.pad(x, width, "constant" if mode == "empty" else mode, **kwargs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_matches_numpy(mode, width, dtype):
    x = (np.arange(12).reshape(3, 4) * 3 - 7).astype(dtype)
    kwargs = {"constant": {"constant_values": ((1, 2), (3, 4))}, "linear_ramp": {"end_values": (5, -1)}}.get(mode, {})
    result = xnp.pad(x, width, mode, **kwargs)
    expected = _expected(x, width, mode, **kwargs)
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["maximum", "mean", "minimum"])
def test_stat_length(mode):
    x = np.arange(20, dtype=np.float32).reshape(4, 5) ** 1.5
    for stat_length in (1, (2, 3), ((1, 2), (3, 1))):
        np.testing.assert_allclose(np.asarray(xnp.pad(x, 2, mode, stat_length=stat_length)),
                                   np.pad(x, 2, mode, stat_length=stat_length), rtol=1e-6)


def test_wide_reflections_and_1d():
    x = np.array([1.0, 5.0, 2.0], np.float32)
    for mode in ("reflect", "symmetric", "wrap", "edge"):
        np.testing.assert_allclose(np.asarray(xnp.pad(x, (7, 8), mode)), np.pad(x, (7, 8), mode))
    single = np.array([3.0])
    np.testing.assert_allclose(np.asarray(xnp.pad(single, 2, "reflect")), np.pad(single, 2, "reflect"))


def test_pad_errors():
    with pytest.raises(ValueError, match="negative"):
        xnp.pad(np.ones(3), -1)
    with pytest.raises(NotImplementedError, match="unimplemented padding mode"):  # (jax's class)
        xnp.pad(np.ones(3), 1, "sideways")
    with pytest.raises(ValueError, match="empty axis"):
        xnp.pad(np.ones((0, 2)), 1, "edge")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap", "mean", "linear_ramp"])
def test_pad_gradient_and_jit_match_jax(mode):
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)

    def f(np_, x):
        return np_.sum(np_.sin(np_.pad(x, ((1, 2), (3, 1)), mode)) * np_.arange(48.0).reshape(6, 8))

    np.testing.assert_allclose(np.asarray(numax.grad(lambda x: f(xnp, x))(x)),
                               np.asarray(jax.grad(lambda x: f(jnp, x))(x)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(numax.jit(lambda x: xnp.pad(x, 2, mode))(x)),
                               np.asarray(jnp.pad(x, 2, mode)), rtol=1e-6)
