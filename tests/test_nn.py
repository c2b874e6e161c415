"""numax.nn against jax.nn: activations, softmax family, standardize, one_hot and initializers."""

import numpy as np
import pytest
from harness import assert_close, jax
from numax.core import dtypes

import numax
import numax.nn as xnn
import numax.random as xr

jnn = jax.nn
float_dtypes = [np.float32, dtypes.bfloat16, np.float16]

# Edge values beside ordinary ones: large magnitudes, infinities, nan and signed zero.
_special = np.array([-1e4, -30.0, -1.0, -0.0, 0.0, 0.5, 1.0, 6.0, 30.0, 1e4, np.inf, -np.inf, np.nan])

_activations = ["relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "log_sigmoid", "elu",
                "leaky_relu", "hard_tanh", "celu", "selu", "mish", "hard_sigmoid", "hard_silu", "sparse_plus",
                "sparse_sigmoid", "squareplus", "identity"]


def _inputs(rng, dtype):
    values = np.concatenate([rng.uniform(-8, 8, 11), _special])
    return values.astype(dtype)


@pytest.mark.parametrize("name", _activations)
@pytest.mark.parametrize("dtype", float_dtypes)
def test_activations_match_jax(rng, name, dtype):
    x = _inputs(rng, dtype)
    expected = getattr(jnn, name)(x)
    assert_close(getattr(xnn, name)(x), expected, scale=2)
    assert_close(numax.jit(getattr(xnn, name))(x), expected, scale=2)


@pytest.mark.parametrize("approximate", [True, False])
@pytest.mark.parametrize("dtype", float_dtypes)
def test_gelu_matches_jax(rng, approximate, dtype):
    x = _inputs(rng, dtype)
    assert_close(xnn.gelu(x, approximate=approximate), jnn.gelu(x, approximate=approximate), scale=2)


def test_activation_parameters_and_int_inputs():
    x = np.array([-3.0, -0.5, 0.0, 2.0], np.float32)
    assert_close(xnn.elu(x, 0.3), jnn.elu(x, 0.3))
    assert_close(xnn.celu(x, 2.0), jnn.celu(x, 2.0))
    assert_close(xnn.leaky_relu(x, 0.2), jnn.leaky_relu(x, 0.2))
    ints = np.array([-2, 0, 3], np.int32)
    assert_close(xnn.relu(ints), jnn.relu(ints))
    assert_close(xnn.gelu(ints), jnn.gelu(ints))
    assert_close(xnn.sigmoid(np.float32(700.0)), jnn.sigmoid(np.float32(700.0)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_glu_matches_jax(rng, axis):
    x = rng.normal(size=(4, 6)).astype(np.float32)
    assert_close(xnn.glu(x, axis), jnn.glu(x, axis))
    with pytest.raises(ValueError, match="even"):
        xnn.glu(np.ones((3, 3), np.float32))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
@pytest.mark.parametrize("dtype", float_dtypes)
def test_softmax_family_matches_jax(rng, name, axis, dtype):
    x = rng.normal(size=(3, 5)).astype(dtype) * 10
    assert_close(getattr(xnn, name)(x, axis=axis), getattr(jnn, name)(x, axis=axis), scale=2)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_edge_cases(name):
    fn, ref = getattr(xnn, name), getattr(jnn, name)
    x = np.array([[1e30, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0], [3.0, 3.0, 3.0]],
                 np.float32)
    with np.errstate(invalid="ignore"):
        assert_close(fn(x), ref(x))
    where = np.array([True, False, True])
    y = np.array([[1.0, 100.0, 2.0], [-1.0, np.inf, 0.0]], np.float32)
    assert_close(fn(y, where=where), ref(y, where=where))
    assert_close(numax.jit(lambda v: fn(v, where=where))(y), ref(y, where=where))
    empty = np.zeros((0, 3), np.float32)
    assert fn(empty).shape == (0, 3)


def test_logsumexp_reexported():
    x = np.array([[1.0, 2.0], [-np.inf, -np.inf]], np.float32)
    assert_close(xnn.logsumexp(x, axis=1), jnn.logsumexp(x, axis=1))


@pytest.mark.parametrize("algorithm", ["fast", "stable"])
def test_standardize_matches_jax(rng, algorithm):
    x = rng.normal(3.0, 2.0, size=(4, 5)).astype(np.float32)
    assert_close(xnn.standardize(x, algorithm=algorithm), jnn.standardize(x, algorithm=algorithm), scale=10)
    assert_close(xnn.standardize(x, axis=0, algorithm=algorithm), jnn.standardize(x, axis=0, algorithm=algorithm),
                 scale=10)
    mean, variance = np.float32(1.0), np.float32(4.0)
    assert_close(xnn.standardize(x, mean=mean, variance=variance), jnn.standardize(x, mean=mean, variance=variance))
    where = np.array([True, True, False, True, True])
    assert_close(xnn.standardize(x, where=where), jnn.standardize(x, where=where), scale=10)
    with pytest.raises(ValueError, match="Unknown algorithm"):
        xnn.standardize(x, algorithm="bogus")


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_, dtypes.bfloat16])
def test_one_hot_matches_jax(axis, dtype):
    x = np.array([[0, 2, 5], [1, -1, 3]], np.int32)  # -1 and 5 are out of range: all zeros
    assert_close(xnn.one_hot(x, 4, dtype=dtype, axis=axis), jnn.one_hot(x, 4, dtype=dtype, axis=axis))
    assert_close(numax.jit(lambda v: xnn.one_hot(v, 4, dtype=dtype, axis=axis))(x),
                 jnn.one_hot(x, 4, dtype=dtype, axis=axis))


# --- initializers --------------------------------------------------------------------------------------
_init_factories = ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "he_uniform", "he_normal",
                   "kaiming_uniform", "kaiming_normal", "lecun_uniform", "lecun_normal"]


@pytest.mark.parametrize("name", _init_factories)
def test_variance_scaling_initializers_match_jax(name):
    init, jinit = getattr(xnn.initializers, name)(), getattr(jnn.initializers, name)()
    for shape in [(3, 4), (2, 3, 4)]:
        actual = init(xr.PRNGKey(7), shape)
        expected = jinit(jax.random.PRNGKey(7), shape)
        np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))
        assert np.asarray(actual).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16])
def test_simple_initializers_match_jax(dtype):
    key, jkey = xr.key(2), jax.random.key(2)
    pairs = [
        (xnn.initializers.normal(0.5), jnn.initializers.normal(0.5)),
        (xnn.initializers.uniform(2.0), jnn.initializers.uniform(2.0)),
        (xnn.initializers.truncated_normal(0.1), jnn.initializers.truncated_normal(0.1)),
        (xnn.initializers.variance_scaling(0.5, "fan_out", "normal"),
         jnn.initializers.variance_scaling(0.5, "fan_out", "normal")),
        (xnn.initializers.variance_scaling(1.0, "fan_geo_avg", "uniform", in_axis=0, out_axis=(1, 2)),
         jnn.initializers.variance_scaling(1.0, "fan_geo_avg", "uniform", in_axis=0, out_axis=(1, 2))),
    ]
    for init, jinit in pairs:
        actual, expected = init(key, (2, 3, 4), dtype), jinit(jkey, (2, 3, 4), dtype)
        np.testing.assert_array_equal(np.asarray(actual).astype(np.float32), np.asarray(expected).astype(np.float32))
        assert np.asarray(actual).dtype == np.asarray(expected).dtype
    assert_close(xnn.initializers.zeros(key, (2, 3), dtype), jnn.initializers.zeros(jkey, (2, 3), dtype))
    assert_close(xnn.initializers.ones(key, (2,), dtype), jnn.initializers.ones(jkey, (2,), dtype))
    assert_close(xnn.initializers.constant(3.5, dtype)(key, (2,)), jnn.initializers.constant(3.5, dtype)(jkey, (2,)))


def test_initializer_errors():
    with pytest.raises(ValueError, match="at least 2D"):
        xnn.initializers.glorot_uniform()(xr.PRNGKey(0), (3,))
    with pytest.raises(ValueError, match="invalid mode"):
        xnn.initializers.variance_scaling(1.0, "fan_bogus", "normal")(xr.PRNGKey(0), (3, 3))
    with pytest.raises(ValueError, match="invalid distribution"):
        xnn.initializers.variance_scaling(1.0, "fan_in", "bogus")(xr.PRNGKey(0), (3, 3))


def test_initializer_under_jit():
    # Under jit against jax under jit: XLA fuses the two programs alike, so the bits agree on every platform
    # (on a GPU the fused program differs from the eager one by a few ulps, in jax as in numax).
    init = xnn.initializers.he_normal()
    actual = numax.jit(lambda key: init(key, (4, 3)))(xr.PRNGKey(5))
    expected = jax.jit(lambda key: jnn.initializers.he_normal()(key, (4, 3)))(jax.random.PRNGKey(5))
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))
    assert np.asarray(actual).dtype == np.float32
