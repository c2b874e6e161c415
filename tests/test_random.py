"""numax.random against jax.random: the same seed, shape and dtype must give the same bits."""

import functools

import numpy as np
import pytest
from harness import jax
from hypothesis import given
from hypothesis import strategies as st
from numax.core import dtypes
from oracle import jit_cases

import numax
import numax.random as xr

jr = jax.random
float_dtypes = [np.float32, dtypes.bfloat16, np.float16]


def assert_bits_equal(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.tobytes() == expected.tobytes(), (actual, expected)


def _draw(fn, key, *args, **kwargs):
    """(function, arguments) for a table case fn(key, *args, **kwargs): the key and float or array operands are
    the program's arguments, as in a call of jax.random's jitted samplers; ints (sizes), shapes and dtypes are
    its constants."""
    lifted = [i for i, a in enumerate(args) if isinstance(a, float | np.ndarray | np.generic)]
    lifted_kw = [n for n, a in kwargs.items() if isinstance(a, float | np.ndarray | np.generic)]

    def draw(key, *values):
        full = list(args)
        for i, value in zip(lifted, values):
            full[i] = value
        return fn(key, *full, **{**kwargs, **dict(zip(lifted_kw, values[len(lifted):]))})

    return draw, (key, *[args[i] for i in lifted], *[kwargs[n] for n in lifted_kw])


def _name(dtype):
    return None if dtype is None else np.dtype(dtype).name


# --- keys ------------------------------------------------------------------------------------------------
_seeds = [0, 1, -1, 42, 2**31 - 1, 2**32 - 1, 2**40 + 5, np.uint32(4000000000), np.int8(-3)]


@functools.cache
def _prngkey_expected():
    # (the seeds are the program's constants: turning a seed into a key is what is checked)
    return jit_cases({(i, kind): (lambda s=seed, kind=kind: jr.PRNGKey(s) if kind == "raw" else jr.key_data(jr.key(s)),
                               ()) for i, seed in enumerate(_seeds) for kind in ("raw", "typed")})


@pytest.mark.parametrize("seed", _seeds)
def test_prngkey_matches_jax(seed):
    i = next(i for i, s in enumerate(_seeds) if s is seed)
    key = xr.PRNGKey(seed)
    assert_bits_equal(key, _prngkey_expected()[i, "raw"])
    assert_bits_equal(xr.key_data(xr.key(seed)), _prngkey_expected()[i, "typed"])


@given(seed=st.integers(-2**31, 2**31 - 1), data=st.integers(0, 2**32 - 1))
def test_key_streams_match_jax_for_any_seed(seed, data):
    key, jkey = xr.PRNGKey(seed), jr.PRNGKey(seed)
    assert_bits_equal(key, jkey)
    folded, jfolded = xr.fold_in(key, data), jr.fold_in(jkey, data)
    assert_bits_equal(folded, jfolded)
    assert_bits_equal(xr.split(folded, 3), jr.split(jfolded, 3))
    assert_bits_equal(xr.uniform(folded, (4,)), jr.uniform(jfolded, (4,)))


def test_typed_keys():
    key = xr.key(3)
    assert str(key.dtype) == "key<fry>" and key.shape == () and key.ndim == 0
    assert "key<fry>" in repr(key)
    keys = xr.split(key, 4)
    assert isinstance(keys, xr.PRNGKeyArray) and keys.shape == (4,)
    assert_bits_equal(xr.key_data(keys), jr.key_data(jr.split(jr.key(3), 4)))
    first, second = xr.split(key)
    assert_bits_equal(xr.key_data(second), jr.key_data(jr.split(jr.key(3))[1]))
    wrapped = xr.wrap_key_data(xr.key_data(keys))
    assert wrapped.shape == (4,)
    assert bool(np.all(np.asarray(wrapped == keys)))
    assert not bool(np.asarray(keys[0] == keys[1]))
    assert xr.key_impl(key) == "threefry2x32"
    # Raw keys stay raw, typed keys stay typed.
    assert not isinstance(xr.split(xr.PRNGKey(3)), xr.PRNGKeyArray)
    assert isinstance(xr.fold_in(key, 1), xr.PRNGKeyArray)


_split_nums = [2, 3, 1, 0, (2, 3)]


@functools.cache
def _split_expected():
    return jit_cases({num: (lambda key, num=num: jr.split(key, num), (jr.PRNGKey(42),)) for num in _split_nums})


@pytest.mark.parametrize("num", _split_nums)
def test_split_matches_jax(num):
    assert_bits_equal(xr.split(xr.PRNGKey(42), num), _split_expected()[num])


@pytest.mark.parametrize("data", [0, 7, 2**32 - 1, np.int32(-5), np.uint32(12)])
def test_fold_in_matches_jax(data):
    assert_bits_equal(xr.fold_in(xr.PRNGKey(42), data), jr.fold_in(jr.PRNGKey(42), data))
    assert_bits_equal(xr.key_data(xr.fold_in(xr.key(1), data)), jr.key_data(jr.fold_in(jr.key(1), data)))


def test_fold_in_rejects_out_of_range_python_int():
    with pytest.raises(OverflowError):
        xr.fold_in(xr.PRNGKey(0), -1)
    with pytest.raises(TypeError, match="scalar"):
        xr.fold_in(xr.PRNGKey(0), np.arange(2))


@functools.cache
def _bits_expected():
    return jit_cases({(shape, _name(dtype)): (functools.partial(jr.bits, shape=shape, dtype=dtype), (jr.PRNGKey(9),))
                   for dtype in [np.uint8, np.uint16, np.uint32] for shape in [(), (5,), (3, 4)]})


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_bits_match_jax(dtype, shape):
    assert_bits_equal(xr.bits(xr.PRNGKey(9), shape, dtype), _bits_expected()[shape, _name(dtype)])


def test_bits_uint64_with_x64():
    numax.config.update("numax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        big = 2**40 + 5
        keys = jit_cases({9: (lambda: jr.PRNGKey(9), ()), big: (lambda: jr.PRNGKey(big), ())})
        expected = jit_cases({"bits": (functools.partial(jr.bits, shape=(3,), dtype=np.uint64), (keys[9],)),
                           "uniform": (functools.partial(jr.uniform, shape=(3,), dtype=np.float64), (keys[9],)),
                           "randint": (lambda key, lo, hi: jr.randint(key, (5,), lo, hi), (keys[big], 0, 10**12)),
                           "normal": (functools.partial(jr.normal, shape=(5,)), (keys[big],))})
        assert_bits_equal(xr.bits(xr.PRNGKey(9), (3,), np.uint64), expected["bits"])
        assert_bits_equal(xr.uniform(xr.PRNGKey(9), (3,), np.float64), expected["uniform"])
        key = xr.PRNGKey(big)
        assert_bits_equal(key, keys[big])
        assert_bits_equal(xr.randint(key, (5,), 0, 10**12), expected["randint"])
        assert_bits_equal(xr.normal(key, (5,)), expected["normal"])
    finally:
        numax.config.update("numax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


# --- continuous samplers ----------------------------------------------------------------------------------
@functools.cache
def _jax_keys():
    """jr.PRNGKey(seed) for the seeds the sampler tables draw from (integer bits: one small program)."""
    return jit_cases({seed: (lambda seed=seed: jr.PRNGKey(seed), ()) for seed in (0, 2, 4, 5, 6, 8, 11, 77, 1234)})


@functools.cache
def _continuous_expected():
    """Every jax draw of the continuous-sampler tests below, keyed (test, case...). Keys and operands are the
    program's arguments, as they are of jax.random's own jitted samplers (constants XLA could fold)."""
    k = _jax_keys()
    low, high = np.array([0.0, 1.0, -4.0], np.float32), np.float32(5.0)
    lower, upper = np.array([-3.0, 0.0, 1.0], np.float32), np.array([3.0, 0.5, 1.1], np.float32)
    cases = {}
    for dtype in float_dtypes:
        d = _name(dtype)
        for shape in [(), (3, 5)]:
            for seed in (0, 1234):
                cases["uniform", shape, d, seed] = (functools.partial(jr.uniform, shape=shape, dtype=dtype), (k[seed],))
                cases["normal", shape, d, seed] = (functools.partial(jr.normal, shape=shape, dtype=dtype), (k[seed],))
        uniform = lambda key, lo, hi, shape, t=dtype: jr.uniform(key, shape, t, lo, hi)  # noqa: E731
        cases["bounds", d, "scalars"] = (functools.partial(uniform, shape=(4, 3)), (k[5], -2.5, 3.25))
        cases["bounds", d, "arrays"] = (functools.partial(uniform, shape=(2, 3)), (k[5], low, high))
        for name in ["exponential", "laplace", "logistic", "gumbel"]:
            for seed in (0, 77):
                cases[name, d, seed] = (functools.partial(getattr(jr, name), shape=(4, 6), dtype=dtype), (k[seed],))
        truncated = lambda key, lo, hi, shape, t=dtype: jr.truncated_normal(key, lo, hi, shape, t)  # noqa: E731
        cases["truncated_normal", d, "scalars"] = (functools.partial(truncated, shape=(3, 4)), (k[11], -1.0, 2.0))
        cases["truncated_normal", d, "arrays"] = (functools.partial(truncated, shape=None), (k[11], lower, upper))
    for dtype in [np.float32, np.float16]:
        cases["gumbel_high", _name(dtype)] = (functools.partial(jr.gumbel, shape=(9,), dtype=dtype, mode="high"),
                                              (k[8],))
    cases["complex_normal"] = (functools.partial(jr.normal, shape=(5,), dtype=np.complex64), (k[8],))
    return jit_cases(cases)


@pytest.mark.parametrize("dtype", float_dtypes)
@pytest.mark.parametrize("shape", [(), (3, 5)])
def test_uniform_and_normal_match_jax(shape, dtype):
    expected = _continuous_expected()
    for seed in (0, 1234):
        key = xr.PRNGKey(seed)
        assert_bits_equal(xr.uniform(key, shape, dtype), expected["uniform", shape, _name(dtype), seed])
        assert_bits_equal(xr.normal(key, shape, dtype), expected["normal", shape, _name(dtype), seed])


@pytest.mark.parametrize("dtype", float_dtypes)
def test_uniform_bounds_match_jax(dtype):
    key, expected = xr.PRNGKey(5), _continuous_expected()
    assert_bits_equal(xr.uniform(key, (4, 3), dtype, -2.5, 3.25), expected["bounds", _name(dtype), "scalars"])
    low, high = np.array([0.0, 1.0, -4.0], np.float32), np.float32(5.0)
    assert_bits_equal(xr.uniform(key, (2, 3), dtype, low, high), expected["bounds", _name(dtype), "arrays"])


@pytest.mark.parametrize("name", ["exponential", "laplace", "logistic", "gumbel"])
@pytest.mark.parametrize("dtype", float_dtypes)
def test_simple_samplers_match_jax(name, dtype):
    for seed in (0, 77):
        actual = getattr(xr, name)(xr.PRNGKey(seed), (4, 6), dtype)
        assert_bits_equal(actual, _continuous_expected()[name, _name(dtype), seed])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gumbel_high_mode_and_complex_normal(dtype):
    key, expected = xr.PRNGKey(8), _continuous_expected()
    assert_bits_equal(xr.gumbel(key, (9,), dtype, mode="high"), expected["gumbel_high", _name(dtype)])
    assert_bits_equal(xr.normal(key, (5,), np.complex64), expected["complex_normal"])


@pytest.mark.parametrize("dtype", float_dtypes)
def test_truncated_normal_matches_jax(dtype):
    key, expected = xr.PRNGKey(11), _continuous_expected()
    assert_bits_equal(xr.truncated_normal(key, -1.0, 2.0, (3, 4), dtype),
                      expected["truncated_normal", _name(dtype), "scalars"])
    lower, upper = np.array([-3.0, 0.0, 1.0], np.float32), np.array([3.0, 0.5, 1.1], np.float32)
    actual = xr.truncated_normal(key, lower, upper, None, dtype)
    assert_bits_equal(actual, expected["truncated_normal", _name(dtype), "arrays"])
    assert actual.shape == (3,)


# --- discrete samplers ----------------------------------------------------------------------------------------
_randint_cases = [(0, 100), (-5, 300), (7, 7), (0, np.array([1, 10, 50], np.int32))]
_categorical_cases = [(-1, None), (0, None), (0, (4, 6)), (1, (2, 3))]
_categorical_logits = np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32)


@functools.cache
def _discrete_expected():
    """Every jax draw of the discrete-sampler tests below, keyed (test, case...); keys and operands are arguments."""
    k = _jax_keys()
    cases = {}
    for dtype in float_dtypes:
        d, p, ps = _name(dtype), np.asarray(0.3, dtype), np.linspace(0, 1, 6).astype(dtype)
        cases["bernoulli", d, "p"] = (functools.partial(jr.bernoulli, shape=(20,)), (k[2], p))
        cases["bernoulli", d, "ps"] = (jr.bernoulli, (k[2], ps))
        cases["bernoulli", d, "high"] = (functools.partial(jr.bernoulli, shape=(2, 6), mode="high"), (k[2], ps))
    cases["bernoulli_default"] = (jr.bernoulli, (k[2],))
    for dtype in [np.int32, np.int8, np.uint32]:
        for i, (minval, maxval) in enumerate(_randint_cases):
            cases["randint", _name(dtype), i] = (lambda key, lo, hi, t=dtype: jr.randint(key, (2, 3), lo, hi, t),
                                                 (k[4], minval, maxval))
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    cases["randint_full"] = (lambda key, lo, hi: jr.randint(key, (6,), lo, hi), (k[4], low, high))
    for axis, shape in _categorical_cases:
        cases["categorical", axis, shape] = (functools.partial(jr.categorical, axis=axis, shape=shape),
                                             (k[6], _categorical_logits))
    return jit_cases(cases)


@pytest.mark.parametrize("dtype", float_dtypes)
def test_bernoulli_matches_jax(dtype):
    key, expected, d = xr.PRNGKey(2), _discrete_expected(), _name(dtype)
    p = np.asarray(0.3, dtype)
    assert_bits_equal(xr.bernoulli(key, p, (20,)), expected["bernoulli", d, "p"])
    ps = np.linspace(0, 1, 6).astype(dtype)
    assert_bits_equal(xr.bernoulli(key, ps), expected["bernoulli", d, "ps"])
    assert_bits_equal(xr.bernoulli(key, ps, (2, 6), mode="high"), expected["bernoulli", d, "high"])
    assert_bits_equal(xr.bernoulli(key), expected["bernoulli_default"])


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint32])
def test_randint_matches_jax(dtype):
    key = xr.PRNGKey(4)
    # In range; beyond the dtype (clipped); empty (gives minval); per-element bounds.
    for i, (minval, maxval) in enumerate(_randint_cases):
        expected = _discrete_expected()["randint", _name(dtype), i]
        assert_bits_equal(xr.randint(key, (2, 3), minval, maxval, dtype), expected)


def test_randint_full_int32_range():
    key = xr.PRNGKey(4)
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    assert_bits_equal(xr.randint(key, (6,), low, high), _discrete_expected()["randint_full"])


@pytest.mark.parametrize("axis,shape", _categorical_cases)
def test_categorical_matches_jax(axis, shape):
    logits = _categorical_logits
    key = xr.PRNGKey(6)
    assert_bits_equal(xr.categorical(key, logits, axis, shape), _discrete_expected()["categorical", axis, shape])


def test_categorical_without_replacement_matches_jax():
    logits = np.random.default_rng(1).normal(size=(3, 6)).astype(np.float32)
    key, jkey = xr.PRNGKey(6), jr.PRNGKey(6)
    assert_bits_equal(xr.categorical(key, logits, shape=(2, 3), replace=False),
                      jax.jit(lambda k, v: jr.categorical(k, v, shape=(2, 3), replace=False))(jkey, logits))
    with pytest.raises(ValueError, match="cannot exceed"):
        xr.categorical(key, logits, shape=(7, 3), replace=False)


# --- permutation and choice -----------------------------------------------------------------------------------------
def test_permutation_matches_jax():
    key, jkey = xr.PRNGKey(3), jr.PRNGKey(3)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    expected = jit_cases({"range": _draw(jr.permutation, jkey, 10), "x": _draw(jr.permutation, jkey, x),
                       "axis": _draw(jr.permutation, jkey, x, 1),
                       "independent": _draw(jr.permutation, jkey, x, 1, independent=True)})
    assert_bits_equal(xr.permutation(key, 10), expected["range"])
    assert_bits_equal(xr.permutation(key, x), expected["x"])
    assert_bits_equal(xr.permutation(key, x, 1), expected["axis"])
    assert_bits_equal(xr.permutation(key, x, 1, independent=True), expected["independent"])
    assert sorted(np.asarray(xr.permutation(key, 10)).tolist()) == list(range(10))


def test_choice_matches_jax():
    key, jkey = xr.PRNGKey(3), jr.PRNGKey(3)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    # Dyadic probabilities: their cumulative sums are exact in any summation order.
    p = np.array([0.125, 0.25, 0.5, 0.125], np.float32)
    cases = [
        dict(a=7, shape=(3,)),
        dict(a=7, shape=(3,), replace=False),
        dict(a=x, shape=(2,), axis=1),
        dict(a=x, shape=(2,), axis=1, replace=False),
        dict(a=4, shape=(5,), p=p),
        dict(a=4, shape=(3,), p=p, replace=False),
        dict(a=x, shape=(2, 2), p=p, axis=1),
        dict(a=5, shape=(0,)),
    ]
    expected = jit_cases({i: _draw(jr.choice, jkey, **case) for i, case in enumerate(cases)})
    for i, case in enumerate(cases):
        assert_bits_equal(xr.choice(key, **case), expected[i])


def test_choice_errors():
    key = xr.PRNGKey(0)
    with pytest.raises(ValueError, match="larger sample"):
        xr.choice(key, 3, (4,), replace=False)
    with pytest.raises(TypeError, match="sequence"):
        xr.choice(key, 3, 4)
    with pytest.raises(ValueError, match="p must be None"):
        xr.choice(key, 3, (2,), p=np.ones(4, np.float32) / 4)


# --- jit ------------------------------------------------------------------------------------------------------
def test_samplers_under_jit_match_eager_and_jax():
    @numax.jit
    def draw(key):
        k1, k2 = xr.split(key)
        return xr.uniform(k1, (3,)), xr.normal(k2, (2, 2), dtypes.bfloat16), xr.randint(key, (4,), 0, 9)

    def jax_draw(key):
        k1, k2 = jr.split(key)
        return jr.uniform(k1, (3,)), jr.normal(k2, (2, 2), dtypes.bfloat16), jr.randint(key, (4,), 0, 9)

    for actual, expected in zip(draw(xr.PRNGKey(21)), jax_draw(jr.PRNGKey(21))):
        assert_bits_equal(actual, expected)


def test_typed_keys_and_traced_seeds_under_jit():
    split = numax.jit(lambda key: xr.split(key, 3))
    keys = split(xr.key(0))
    assert isinstance(keys, xr.PRNGKeyArray) and keys.shape == (3,)
    assert_bits_equal(xr.key_data(keys), jr.key_data(jr.split(jr.key(0), 3)))

    second_normal = numax.jit(lambda key: xr.normal(xr.split(key)[1], (2,)))
    assert_bits_equal(second_normal(xr.key(4)), jr.normal(jr.split(jr.key(4))[1], (2,)))
    for actual, expected in zip(numax.jit(lambda key: list(xr.split(key, 2)))(xr.key(4)), jr.split(jr.key(4), 2)):
        assert_bits_equal(xr.key_data(actual), jr.key_data(expected))

    from_seed = numax.jit(lambda seed: xr.uniform(xr.fold_in(xr.key(seed), seed), (2,)))
    for seed in (5, -7):
        expected = jr.uniform(jr.fold_in(jr.key(seed), np.int32(seed)), (2,))
        assert_bits_equal(from_seed(np.int32(seed)), expected)


# --- errors and statistics --------------------------------------------------------------------------------------------
def test_argument_errors():
    key = xr.PRNGKey(0)
    with pytest.raises(ValueError, match="must be a float dtype"):
        xr.uniform(key, (2,), np.int32)
    with pytest.raises(ValueError, match="unsigned int dtype"):
        xr.bits(key, (2,), np.int32)
    with pytest.raises(TypeError, match="integer dtypes"):
        xr.randint(key, (2,), 0, 3, np.float32)
    with pytest.raises(ValueError, match="single key"):
        xr.uniform(xr.split(key), (2,))
    with pytest.raises(TypeError, match="uint32"):
        xr.normal(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="uint32"):
        xr.normal(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="scalar seed"):
        xr.PRNGKey(np.arange(2))
    with pytest.raises(TypeError, match="integer"):
        xr.key(1.5)
    with pytest.raises(TypeError, match="floating dtype"):
        xr.bernoulli(key, np.int32(1))
    with pytest.raises(ValueError, match="broadcast-compatible"):
        xr.bernoulli(key, np.full((3,), 0.5, np.float32), (2,))


def test_moments():
    key = xr.PRNGKey(123)
    samples = {
        "normal": (np.asarray(xr.normal(key, (20000,))), 0.0, 1.0),
        "exponential": (np.asarray(xr.exponential(key, (20000,))), 1.0, 1.0),
        "laplace": (np.asarray(xr.laplace(key, (20000,))), 0.0, 2.0),
        "logistic": (np.asarray(xr.logistic(key, (20000,))), 0.0, np.pi ** 2 / 3),
        "uniform": (np.asarray(xr.uniform(key, (20000,), minval=-1.0, maxval=3.0)), 1.0, 16 / 12),
    }
    for name, (values, mean, var) in samples.items():
        assert abs(values.mean() - mean) < 0.05 * max(1.0, np.sqrt(var)), name
        assert abs(values.var() - var) < 0.08 * var, name
    u = np.asarray(xr.uniform(key, (1000,), np.float16))
    assert u.min() >= 0 and u.max() < 1
    tn = np.asarray(xr.truncated_normal(key, -0.5, 0.25, (1000,)))
    assert tn.min() > -0.5 and tn.max() < 0.25


# --- further samplers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16])
def test_transformed_samplers_match_jax(dtype):
    key, jkey = xr.PRNGKey(5), jr.PRNGKey(5)
    params = np.array([1.0, 2.0, 3.0], dtype)
    cases = [
        ("cauchy", ((5,), dtype)),
        ("pareto", (2.5, (5,), dtype)),
        ("pareto", (params, None, dtype)),
        ("lognormal", (0.5, (5,), dtype)),
        ("rayleigh", (params, (2, 3), dtype)),
        ("weibull_min", (2.0, 1.5, (5,), dtype)),
    ]
    expected = jit_cases({**{i: _draw(getattr(jr, name), jkey, *args) for i, (name, args) in enumerate(cases)},
                       "lognormal": _draw(jr.lognormal, jkey)})
    for i, (name, args) in enumerate(cases):
        assert_bits_equal(getattr(xr, name)(key, *args), expected[i])
    assert_bits_equal(xr.lognormal(key), expected["lognormal"])
    with pytest.raises(ValueError, match="cannot safely cast"):
        xr.pareto(key, np.ones(3, np.float32), None, np.float16)


_rademacher_dtypes = [None, np.int8, np.float32]


@functools.cache
def _rademacher_expected():
    key = jr.PRNGKey(1)
    return jit_cases({_name(dtype): _draw(jr.rademacher, key, (9,), dtype) for dtype in _rademacher_dtypes})


@pytest.mark.parametrize("dtype", _rademacher_dtypes)
def test_rademacher_matches_jax(dtype):
    assert_bits_equal(xr.rademacher(xr.PRNGKey(1), (9,), dtype), _rademacher_expected()[_name(dtype)])


_mvn_mean = np.array([1.0, -2.0, 0.5], np.float32)
_mvn_a = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
_mvn_cov = _mvn_a @ _mvn_a.T + np.eye(3, dtype=np.float32)
_mvn_methods = ["cholesky", "eigh", "svd"]


@functools.cache
def _mvn_expected():
    key = jr.PRNGKey(1)
    return jit_cases({method: _draw(jr.multivariate_normal, key, _mvn_mean, _mvn_cov, (4,), method=method)
                   for method in _mvn_methods})


@pytest.mark.parametrize("method", _mvn_methods)
def test_multivariate_normal_matches_jax(method):
    mean, cov = _mvn_mean, _mvn_cov
    actual = xr.multivariate_normal(xr.PRNGKey(1), mean, cov, (4,), method=method)
    expected = _mvn_expected()[method]
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5, atol=1e-5)
    assert actual.shape == (4, 3) and actual.dtype == np.float32
    with pytest.raises(ValueError, match="method"):
        xr.multivariate_normal(xr.PRNGKey(1), mean, cov, method="lu")
    with pytest.raises(ValueError, match="cov.shape"):
        xr.multivariate_normal(xr.PRNGKey(1), mean, cov[:2, :2])


# Functions that move keys around without computing, as jax applies them to typed key arrays: (name, call on a
# (2, 3) key array given the numpy namespace).
_KEY_MOVES = {
    "reshape": lambda np_, k: np_.reshape(k, (3, 2)), "ravel": lambda np_, k: np_.ravel(k),
    "transpose": lambda np_, k: np_.transpose(k), "swapaxes": lambda np_, k: np_.swapaxes(k, 0, -1),
    "moveaxis": lambda np_, k: np_.moveaxis(k[None], 0, -1), "expand_dims": lambda np_, k: np_.expand_dims(k, -1),
    "squeeze": lambda np_, k: np_.squeeze(k[:1], 0), "broadcast_to": lambda np_, k: np_.broadcast_to(k[0], (4, 3)),
    "tile": lambda np_, k: np_.tile(k, (2, 1)), "repeat": lambda np_, k: np_.repeat(k, 2, axis=1),
    "flip": lambda np_, k: np_.flip(k, -1), "rot90": lambda np_, k: np_.rot90(k),
    "roll": lambda np_, k: np_.roll(k, 1, axis=1), "split": lambda np_, k: np_.split(k, 3, axis=-1),
    "unstack": lambda np_, k: np_.unstack(k, axis=1), "take": lambda np_, k: np_.take(k, np.array([2, 0]), axis=1),
    "methods": lambda np_, k: [k.T, k.reshape(6), k.reshape(3, 2), k.ravel(), k.flatten(), k[None].squeeze(),
                               k.swapaxes(0, 1), k.transpose(1, 0), k.take(4), k.copy()],
}


@pytest.mark.parametrize("name", sorted(_KEY_MOVES))
def test_key_arrays_move_like_arrays_as_in_jax(name):
    move = _KEY_MOVES[name]
    theirs = move(jax.numpy, jax.random.split(jax.random.key(3), 6).reshape(2, 3))
    expected = [np.asarray(jax.random.key_data(k)) for k in jax.tree_util.tree_leaves(theirs)]
    keys = xr.split(xr.key(3), 6).reshape(2, 3)
    for ours in (move(numax.numpy, keys), numax.jit(functools.partial(move, numax.numpy))(keys)):
        leaves = numax.tree_util.tree_leaves(ours)
        assert all(k.dtype == keys.dtype for k in leaves)  # typed keys still
        assert [np.asarray(xr.key_data(k)).tolist() for k in leaves] == [e.tolist() for e in expected]


def test_key_arrays_itemsize_and_placement_as_in_jax():
    theirs, ours = jax.random.split(jax.random.key(0), 6), xr.split(xr.key(0), 6)
    assert (ours.itemsize, ours.nbytes, ours.committed) == (theirs.itemsize, theirs.nbytes, theirs.committed)
    assert ours.device == numax.devices()[0] and ours.devices() == {numax.devices()[0]}
    with pytest.raises(numax.errors.ConcretizationTypeError):
        numax.jit(lambda k: k.device)(ours)


def test_a_key_dtype_struct_stands_for_key_arrays_in_lower_and_eval_shape():
    keys = xr.split(xr.key(1), 3)
    struct = numax.ShapeDtypeStruct((3,), keys.dtype)
    compiled = numax.jit(lambda k: xr.uniform(k[0], (2,))).lower(struct).compile()
    expected = jax.random.uniform(jax.random.split(jax.random.key(1), 3)[0], (2,))
    np.testing.assert_array_equal(np.asarray(compiled(keys)), np.asarray(expected))
    out = numax.eval_shape(lambda k, x: (xr.split(k[0], 4), x * 2), struct, numax.ShapeDtypeStruct((2,), np.float32))
    assert out[0] == numax.ShapeDtypeStruct((4,), keys.dtype) and out[1].shape == (2,)
    with pytest.raises(TypeError):  # the compiled program takes keys, not their raw data
        compiled(xr.key_data(keys))
