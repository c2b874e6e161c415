"""numax.numpy.pad against numpy (and jax for dtypes): every mode, width forms, per-side values, grads."""

import functools

import numpy as np
import pytest
from harness import jax, jnp
from oracle import jit_table

import numax
import numax.numpy as xnp

MODES = ["constant", "empty", "edge", "wrap", "reflect", "symmetric", "maximum", "minimum", "mean", "median",
         "linear_ramp"]
WIDTHS = [0, 1, (2, 3), ((1, 0), (5, 2)), ((0, 7), (3, 0)), [[4], [1]]]


def _expected(x, width, mode, **kwargs):
    return np.pad(x, width, "constant" if mode == "empty" else mode, **kwargs)


def _table_input(dtype):
    return (np.arange(12).reshape(3, 4) * 3 - 7).astype(dtype)


def _table_kwargs(mode):
    return {"constant": {"constant_values": ((1, 2), (3, 4))}, "linear_ramp": {"end_values": (5, -1)}}.get(mode, {})


TABLE_DTYPES = [np.float32, np.int32]
EAGER_WIDTH = ((1, 0), (5, 2))  # (the width each mode also runs eagerly in test_pad_matches_numpy)


@functools.cache
def _pad_table():
    """Every (mode, width, dtype) case of test_pad_matches_numpy padded by ONE numax.jit program (eagerly, each
    case compiles its ops one by one: hundreds of compiles). The code path is the same; the eager dispatch of
    pad's primitives is covered by test_stat_length, test_wide_reflections_and_1d and the eager case below."""
    keys = [(mode, str(width), np.dtype(dtype).name) for mode in MODES for width in WIDTHS for dtype in TABLE_DTYPES]

    def pad_all(inputs):
        return [xnp.pad(x, width, mode, **_table_kwargs(mode))
                for mode in MODES for width in WIDTHS for x in inputs]

    outputs = numax.jit(pad_all)([_table_input(dtype) for dtype in TABLE_DTYPES])
    return dict(zip(keys, outputs, strict=True))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS, ids=str)
@pytest.mark.parametrize("dtype", TABLE_DTYPES)
def test_pad_matches_numpy(mode, width, dtype):
    x = _table_input(dtype)
    kwargs = _table_kwargs(mode)
    expected = _expected(x, width, mode, **kwargs)
    results = [_pad_table()[mode, str(width), np.dtype(dtype).name]]
    if width == EAGER_WIDTH and dtype == np.float32:
        results.append(xnp.pad(x, width, mode, **kwargs))
    for result in results:
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


GRADIENT_MODES = ["constant", "edge", "reflect", "wrap", "mean", "linear_ramp"]


def _gradient_and_pad(np_, grad, mode):
    """(grad of a loss through pad, pad(x, 2, mode)) for one library."""

    def loss(x):
        return np_.sum(np_.sin(np_.pad(x, ((1, 2), (3, 1)), mode)) * np_.arange(48.0).reshape(6, 8))

    return lambda x: (grad(loss)(x), np_.pad(x, 2, mode))


@functools.cache
def _jax_gradients():
    # The oracle for every mode from one jax program (eager jax.grad compiles each op on its own).
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    return jit_table(GRADIENT_MODES, [_gradient_and_pad(jnp, jax.grad, mode) for mode in GRADIENT_MODES],
                     [(x,)] * len(GRADIENT_MODES))


@pytest.mark.parametrize("mode", GRADIENT_MODES)
def test_pad_gradient_and_jit_match_jax(mode):
    # numax's gradient and pad under one numax.jit program (the eager dispatch of grad is tests/test_grad_*'s).
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    gradient, padded = numax.jit(_gradient_and_pad(xnp, numax.grad, mode))(x)
    want_gradient, want_padded = _jax_gradients()[mode]
    np.testing.assert_allclose(np.asarray(gradient), np.asarray(want_gradient), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(padded), np.asarray(want_padded), rtol=1e-6)
