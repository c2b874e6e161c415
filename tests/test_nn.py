"""numax.nn against jax.nn: activations, softmax family, standardize, one_hot and initializers."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax
from numax.core import dtypes
from oracle import jit_cases

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


def _fixture_inputs(dtype):
    return _inputs(np.random.default_rng(0), dtype)  # (the rng fixture's generator)


def _key(dtype):
    return None if dtype is None else np.dtype(dtype).name


@functools.cache
def _activations_expected():
    return jit_cases({(name, _key(dtype)): (getattr(jnn, name), (_fixture_inputs(dtype),))
                   for name in _activations for dtype in float_dtypes})


@pytest.mark.parametrize("name", _activations)
@pytest.mark.parametrize("dtype", float_dtypes)
def test_activations_match_jax(name, dtype):
    x = _fixture_inputs(dtype)
    expected = _activations_expected()[name, _key(dtype)]
    assert_close(getattr(xnn, name)(x), expected, scale=2)
    assert_close(numax.jit(getattr(xnn, name))(x), expected, scale=2)


@functools.cache
def _gelu_expected():
    return jit_cases({(approximate, _key(dtype)): (functools.partial(jnn.gelu, approximate=approximate),
                                                (_fixture_inputs(dtype),))
                   for approximate in (True, False) for dtype in float_dtypes})


@pytest.mark.parametrize("approximate", [True, False])
@pytest.mark.parametrize("dtype", float_dtypes)
def test_gelu_matches_jax(approximate, dtype):
    x = _fixture_inputs(dtype)
    assert_close(xnn.gelu(x, approximate=approximate), _gelu_expected()[approximate, _key(dtype)], scale=2)


def test_activation_parameters_and_int_inputs():
    x = np.array([-3.0, -0.5, 0.0, 2.0], np.float32)
    ints = np.array([-2, 0, 3], np.int32)
    expected = jit_cases({"elu": (lambda v: jnn.elu(v, 0.3), (x,)), "celu": (lambda v: jnn.celu(v, 2.0), (x,)),
                       "leaky_relu": (lambda v: jnn.leaky_relu(v, 0.2), (x,)), "relu": (jnn.relu, (ints,)),
                       "gelu": (jnn.gelu, (ints,)), "sigmoid": (jnn.sigmoid, (np.float32(700.0),))})
    assert_close(xnn.elu(x, 0.3), expected["elu"])
    assert_close(xnn.celu(x, 2.0), expected["celu"])
    assert_close(xnn.leaky_relu(x, 0.2), expected["leaky_relu"])
    assert_close(xnn.relu(ints), expected["relu"])
    assert_close(xnn.gelu(ints), expected["gelu"])
    assert_close(xnn.sigmoid(np.float32(700.0)), expected["sigmoid"])


def _glu_input():
    return np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)  # (the rng fixture's generator)


@functools.cache
def _glu_expected():
    return jit_cases({axis: (lambda v, axis=axis: jnn.glu(v, axis), (_glu_input(),)) for axis in (0, 1, -1)})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_glu_matches_jax(axis):
    x = _glu_input()
    assert_close(xnn.glu(x, axis), _glu_expected()[axis])
    with pytest.raises(ValueError, match="even"):
        xnn.glu(np.ones((3, 3), np.float32))


_softmax_axes = [-1, 0, (0, 1)]


def _softmax_input(dtype):
    return np.random.default_rng(0).normal(size=(3, 5)).astype(dtype) * 10  # (the rng fixture's generator)


@functools.cache
def _softmax_expected():
    return jit_cases({(name, axis, _key(dtype)): (functools.partial(getattr(jnn, name), axis=axis),
                                               (_softmax_input(dtype),))
                   for name in ("softmax", "log_softmax") for axis in _softmax_axes for dtype in float_dtypes})


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", _softmax_axes)
@pytest.mark.parametrize("dtype", float_dtypes)
def test_softmax_family_matches_jax(name, axis, dtype):
    x = _softmax_input(dtype)
    assert_close(getattr(xnn, name)(x, axis=axis), _softmax_expected()[name, axis, _key(dtype)], scale=2)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_edge_cases(name):
    fn, ref = getattr(xnn, name), getattr(jnn, name)
    x = np.array([[1e30, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0], [3.0, 3.0, 3.0]],
                 np.float32)
    where = np.array([True, False, True])
    y = np.array([[1.0, 100.0, 2.0], [-1.0, np.inf, 0.0]], np.float32)
    expected, expected_where = jit_cases({"x": (ref, (x,)), "where": (lambda v: ref(v, where=where), (y,))}).values()
    with np.errstate(invalid="ignore"):
        assert_close(fn(x), expected)
    assert_close(fn(y, where=where), expected_where)
    assert_close(numax.jit(lambda v: fn(v, where=where))(y), expected_where)
    empty = np.zeros((0, 3), np.float32)
    assert fn(empty).shape == (0, 3)


def test_logsumexp_reexported():
    x = np.array([[1.0, 2.0], [-np.inf, -np.inf]], np.float32)
    assert_close(xnn.logsumexp(x, axis=1), jax.jit(lambda v: jnn.logsumexp(v, axis=1))(x))


@functools.cache
def _standardize_expected():
    x = np.random.default_rng(0).normal(3.0, 2.0, size=(4, 5)).astype(np.float32)  # (the rng fixture's generator)
    mean, variance = np.float32(1.0), np.float32(4.0)
    where = np.array([True, True, False, True, True])
    cases = {"mean_variance": (lambda v: jnn.standardize(v, mean=mean, variance=variance), (x,)),
             "where": (lambda v: jnn.standardize(v, where=where), (x,))}
    for algorithm in ("fast", "stable"):
        cases[algorithm, -1] = (lambda v, a=algorithm: jnn.standardize(v, algorithm=a), (x,))
        cases[algorithm, 0] = (lambda v, a=algorithm: jnn.standardize(v, axis=0, algorithm=a), (x,))
    return x, jit_cases(cases)


@pytest.mark.parametrize("algorithm", ["fast", "stable"])
def test_standardize_matches_jax(algorithm):
    x, expected = _standardize_expected()
    assert_close(xnn.standardize(x, algorithm=algorithm), expected[algorithm, -1], scale=10)
    assert_close(xnn.standardize(x, axis=0, algorithm=algorithm), expected[algorithm, 0], scale=10)
    mean, variance = np.float32(1.0), np.float32(4.0)
    assert_close(xnn.standardize(x, mean=mean, variance=variance), expected["mean_variance"])
    where = np.array([True, True, False, True, True])
    assert_close(xnn.standardize(x, where=where), expected["where"], scale=10)
    with pytest.raises(ValueError, match="Unknown algorithm"):
        xnn.standardize(x, algorithm="bogus")


_one_hot_input = np.array([[0, 2, 5], [1, -1, 3]], np.int32)  # -1 and 5 are out of range: all zeros
_one_hot_dtypes = [None, np.int32, np.bool_, dtypes.bfloat16]


@functools.cache
def _one_hot_expected():
    return jit_cases({(axis, _key(dtype)): (lambda v, d=dtype, a=axis: jnn.one_hot(v, 4, dtype=d, axis=a),
                                         (_one_hot_input,))
                   for axis in (-1, 0, 1) for dtype in _one_hot_dtypes})


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", _one_hot_dtypes)
def test_one_hot_matches_jax(axis, dtype):
    x, expected = _one_hot_input, _one_hot_expected()[axis, _key(dtype)]
    assert_close(xnn.one_hot(x, 4, dtype=dtype, axis=axis), expected)
    assert_close(numax.jit(lambda v: xnn.one_hot(v, 4, dtype=dtype, axis=axis))(x), expected)


# --- initializers --------------------------------------------------------------------------------------
_init_factories = ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "he_uniform", "he_normal",
                   "kaiming_uniform", "kaiming_normal", "lecun_uniform", "lecun_normal"]


@functools.cache
def _variance_scaling_expected():
    key = jax.random.PRNGKey(7)
    return jit_cases({(name, shape): (functools.partial(getattr(jnn.initializers, name)(), shape=shape), (key,))
                   for name in _init_factories for shape in [(3, 4), (2, 3, 4)]})


@pytest.mark.parametrize("name", _init_factories)
def test_variance_scaling_initializers_match_jax(name):
    init = getattr(xnn.initializers, name)()
    for shape in [(3, 4), (2, 3, 4)]:
        actual = init(xr.PRNGKey(7), shape)
        expected = _variance_scaling_expected()[name, shape]
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
    expected = jit_cases({**{i: (lambda k, f=f: f(k, (2, 3, 4), dtype), (jkey,)) for i, (_, f) in enumerate(pairs)},
                       "zeros": (lambda k: jnn.initializers.zeros(k, (2, 3), dtype), (jkey,)),
                       "ones": (lambda k: jnn.initializers.ones(k, (2,), dtype), (jkey,)),
                       "constant": (lambda k: jnn.initializers.constant(3.5, dtype)(k, (2,)), (jkey,))})
    for i, (init, _) in enumerate(pairs):
        actual = init(key, (2, 3, 4), dtype)
        np.testing.assert_array_equal(np.asarray(actual).astype(np.float32), np.asarray(expected[i]).astype(np.float32))
        assert np.asarray(actual).dtype == np.asarray(expected[i]).dtype
    assert_close(xnn.initializers.zeros(key, (2, 3), dtype), expected["zeros"])
    assert_close(xnn.initializers.ones(key, (2,), dtype), expected["ones"])
    assert_close(xnn.initializers.constant(3.5, dtype)(key, (2,)), expected["constant"])


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


# --- log1mexp, logmeanexp, tanh -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", float_dtypes)
def test_log1mexp_matches_jax(rng, dtype):
    x = np.concatenate([rng.uniform(0, 5, 9), [0.0, 1e-7, 0.6931, np.log(2.0), 0.7, 40.0, np.inf, np.nan]])
    # Repeated up to the activations' input length: their eager ops' programs serve this test too.
    x = np.resize(x, len(_special) + 11).astype(dtype)
    assert_close(xnn.log1mexp(x), jnn.log1mexp(x), scale=2)
    assert_close(numax.jit(xnn.log1mexp)(x), jax.jit(jnn.log1mexp)(x), scale=2)


def test_log1mexp_gradient_and_int_input():
    points = np.array([0.01, 0.5, 0.69, 0.7, 3.0, 20.0], np.float32)
    ours = numax.vmap(numax.grad(xnn.log1mexp))(points)
    assert_close(ours, jax.vmap(jax.grad(jnn.log1mexp))(points))
    assert_close(xnn.log1mexp(np.arange(1, 4)), jnn.log1mexp(np.arange(1, 4)))
    with pytest.raises(TypeError, match="log1mexp"):
        xnn.log1mexp([1.0, 2.0])


_logmeanexp_kwargs = [{}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 2)},
                      {"axis": None, "keepdims": True}, {"where": "mask"},
                      {"where": "mask", "axis": 1, "keepdims": True}]


def _logmeanexp_operands(kwargs):
    rng = np.random.default_rng(0)  # (the rng fixture's generator)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    if kwargs.get("where") == "mask":
        kwargs = dict(kwargs, where=rng.random((3, 4)) < 0.6)
    return x, kwargs


def _logmeanexp_and_grad(nn, grad, kwargs):
    return lambda v: (nn.logmeanexp(v, **kwargs), grad(lambda u: nn.logmeanexp(u, **kwargs).sum())(v))


@functools.cache
def _logmeanexp_expected():
    cases = {}
    for i, kwargs in enumerate(_logmeanexp_kwargs):
        x, kwargs = _logmeanexp_operands(kwargs)
        cases[i, "float16"] = (functools.partial(jnn.logmeanexp, **kwargs), (x.astype(np.float16),))
        cases[i, "grad"] = (_logmeanexp_and_grad(jnn, jax.grad, kwargs), (x,))
    return jit_cases(cases)


@pytest.mark.parametrize("kwargs", _logmeanexp_kwargs)
def test_logmeanexp_matches_jax(kwargs):
    i = _logmeanexp_kwargs.index(kwargs)
    x, kwargs = _logmeanexp_operands(kwargs)
    expected = _logmeanexp_expected()
    # float16 under numax.jit: eagerly each op would compile per axis/where/keepdims; the eager path is checked on
    # the first case (and in float32 by test_logmeanexp_edge_cases).
    half = numax.jit(functools.partial(xnn.logmeanexp, **kwargs))
    assert_close(half(x.astype(np.float16)), expected[i, "float16"], scale=2)
    if i == 0:
        assert_close(xnn.logmeanexp(x.astype(np.float16), **kwargs), expected[i, "float16"], scale=2)
    ours, theirs = numax.jit(_logmeanexp_and_grad(xnn, numax.grad, kwargs))(x), expected[i, "grad"]
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])


def test_logmeanexp_edge_cases():
    for x in (np.array([-np.inf, -np.inf], np.float32), np.array([np.inf, 0.0], np.float32), np.int32([1, 2, 3])):
        assert_close(xnn.logmeanexp(x), jnn.logmeanexp(x))
    assert_close(xnn.tanh(np.float32([0.5, -2.0])), jnn.tanh(np.float32([0.5, -2.0])))


# --- dot_product_attention ------------------------------------------------------------------------------------
_B, _T, _S, _N, _K, _H = 2, 5, 6, 4, 2, 8

_attention_cases = {
    "plain": {},
    "bias": {"bias": "bias"},
    "bias_one_head": {"bias": "bias1"},
    "mask": {"mask": "mask"},
    "mask_all_heads": {"mask": "mask_heads"},
    "causal": {"is_causal": True},
    "causal_mask_bias": {"is_causal": True, "mask": "mask", "bias": "bias"},
    "seq_lengths": {"query_seq_lengths": "q_lengths", "key_value_seq_lengths": "kv_lengths"},
    "kv_lengths": {"key_value_seq_lengths": "kv_lengths"},
    "window": {"local_window_size": (1, 2)},
    "window_int": {"local_window_size": 1, "is_causal": True},
    "scale": {"scale": 0.3},
    "implementation": {"implementation": "xla"},
}


def _attention_operands(rng, dtype, num_heads=_N, kv_heads=_K):
    q = rng.normal(size=(_B, _T, num_heads, _H)).astype(dtype)
    k = rng.normal(size=(_B, _S, kv_heads, _H)).astype(dtype)
    v = rng.normal(size=(_B, _S, kv_heads, _H)).astype(dtype)
    named = {
        "bias": rng.normal(size=(_B, num_heads, _T, _S)).astype(dtype),
        "bias1": rng.normal(size=(1, 1, _T, _S)).astype(dtype),
        "mask": rng.random((_B, 1, _T, _S)) < 0.7,
        "mask_heads": rng.random((_B, num_heads, _T, _S)) < 0.7,
        "q_lengths": np.array([3, _T], np.int32),
        "kv_lengths": np.array([_S, 2], np.int32),
    }
    return q, k, v, named


def _resolve(case, named):
    return {k: named[v] if isinstance(v, str) and v in named else v for k, v in case.items()}


# Each case runs with one head layout: grouped-query (4 query heads per 2 kv heads), multi-head, multi-query.
_head_layouts = {"gqa": (_N, _K), "mha": (_N, _N), "mqa": (_N, 1)}


def _attention_case(name):
    layout = sorted(_head_layouts)[sorted(_attention_cases).index(name) % 3]
    q, k, v, named = _attention_operands(np.random.default_rng(0), np.float32, *_head_layouts[layout])
    return (q, k, v), _resolve(_attention_cases[name], named)


@functools.cache
def _attention_expected():
    cases = {}
    for name in _attention_cases:
        operands, kwargs = _attention_case(name)
        cases[name] = (lambda *a, kw=kwargs: jnn.dot_product_attention(*a, return_residual=True, **kw), operands)
    return jit_cases(cases)


@pytest.mark.parametrize("name", sorted(_attention_cases))
def test_dot_product_attention_matches_jax(name):
    (q, k, v), kwargs = _attention_case(name)
    out, residual = numax.jit(lambda *a: xnn.dot_product_attention(*a, return_residual=True, **kwargs))(q, k, v)
    jax_out, jax_residual = _attention_expected()[name]
    assert_close(out, jax_out, scale=5)
    assert_close(residual, jax_residual, scale=5)


@pytest.mark.parametrize("dtype", [dtypes.bfloat16, np.float16])
def test_dot_product_attention_low_precision(rng, dtype):
    q, k, v, named = _attention_operands(rng, dtype)
    kwargs = {"bias": named["bias"], "is_causal": True}
    ours = numax.jit(lambda q, k, v: xnn.dot_product_attention(q, k, v, **kwargs))(q, k, v)
    reference = lambda q, k, v: jnn.dot_product_attention(q, k, v, **kwargs)  # noqa: E731
    # jax eagerly for float16: under jax.jit it asks the CPU for an F16_F16_F32 dot algorithm it lacks.
    theirs = reference(q, k, v) if dtype == np.float16 else jax.jit(reference)(q, k, v)
    assert_close(ours, theirs, scale=2)


def test_dot_product_attention_unbatched_and_jit(rng):
    q, k, v = (rng.normal(size=(_T, _N, _H)).astype(np.float32), rng.normal(size=(_S, _K, _H)).astype(np.float32),
               rng.normal(size=(_S, _K, _H)).astype(np.float32))
    expected = jax.jit(lambda *a: jnn.dot_product_attention(*a, is_causal=True, return_residual=True))(q, k, v)
    out, residual = numax.jit(lambda *a: xnn.dot_product_attention(*a, is_causal=True, return_residual=True))(q, k, v)
    assert out.shape == (_T, _N, _H) and residual.shape == (_T, _N)
    assert_close(out, expected[0], scale=5)
    assert_close(residual, expected[1], scale=5)


@pytest.mark.parametrize("name", ["causal_mask_bias", "seq_lengths"])
def test_dot_product_attention_gradient_matches_jax(rng, name):
    q, k, v, named = _attention_operands(rng, np.float32)
    kwargs = _resolve(_attention_cases[name], named)
    bias = kwargs.pop("bias", named["bias"])
    weights = rng.normal(size=(_B, _T, _N, _H)).astype(np.float32)

    def loss(module, attention):
        return lambda q, k, v, b: module.sum(attention(q, k, v, bias=b, **kwargs) * weights)

    ours = numax.jit(numax.grad(loss(numax.numpy, xnn.dot_product_attention), argnums=(0, 1, 2, 3)))(q, k, v, bias)
    theirs = jax.jit(jax.grad(loss(jax.numpy, jnn.dot_product_attention), argnums=(0, 1, 2, 3)))(q, k, v, bias)
    for a, b in zip(ours, theirs):
        assert_close(a, b, scale=20)


def test_dot_product_attention_errors_match_jax(rng):
    q, k, v, named = _attention_operands(rng, np.float32)
    cases = [
        ((q, k, v[:, :, :1]), {}, "value shape should be"),
        ((q, k, v.astype(np.float16)), {}, "value dtype should be"),
        ((q[..., :4], k, v), {}, "query shape should be"),
        ((q, k, v), {"mask": named["mask"].astype(np.int32)}, "mask dtype should be"),
        ((q, k, v), {"bias": named["bias"][None]}, "bias ndim should be 4, but got 5"),
        ((q, k, v), {"query_seq_lengths": np.array([1, 2, 3], np.int32)}, "query_seq_lengths shape should be"),
        ((q, k, v), {"key_value_seq_lengths": np.array([1.0, 2.0])}, "key_value_seq_lengths dtype should be"),
        ((q[:, :, :3], k, v), {}, "number of query heads must be a multiple of key/value heads"),
        ((q, k, v), {"implementation": "bogus"}, "Unsupported implementation option: bogus"),
    ]
    for args, kwargs, message in cases:
        for attention in (xnn.dot_product_attention, jnn.dot_product_attention):
            with pytest.raises(ValueError, match=message):
                attention(*args, **kwargs)
    with pytest.raises(NotImplementedError, match="cuDNN"):
        xnn.dot_product_attention(q, k, v, implementation="cudnn")
