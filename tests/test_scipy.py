"""numax.scipy.special and numax.scipy.stats against jax.scipy (and scipy), edge values included."""

import numpy as np
import pytest
import scipy.special as osp_special
import scipy.stats as osp_stats
from harness import assert_close, jax
from numax.core import dtypes

import numax
from numax.scipy import special, stats

jsp = jax.scipy.special
jstats = jax.scipy.stats

_edges = np.array([-np.inf, -1e30, -40.0, -9.5, -1.0, -0.0, 0.0, 1e-30, 0.3, 1.0, 5.5, 40.0, 1e30, np.inf, np.nan])


def _values(rng, dtype, low=-6.0, high=6.0):
    return np.concatenate([rng.uniform(low, high, 9), _edges]).astype(dtype)


_unary = ["erf", "erfc", "gammaln", "digamma", "expit", "logit", "entr", "erfinv"]


@pytest.mark.parametrize("name", _unary)
@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16, np.float16])
def test_unary_special_match_jax(rng, name, dtype):
    low, high = (-1.0, 1.0) if name in ("erfinv", "logit") else (-6.0, 6.0)
    x = _values(rng, dtype, low, high)
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(x), getattr(jsp, name)(x), scale=2)


@pytest.mark.parametrize("name", ["erf", "expit", "gammaln"])
def test_unary_special_int_input_and_jit(name):
    x = np.array([-2, 0, 1, 3], np.int32)
    expected = getattr(jsp, name)(x)
    assert_close(getattr(special, name)(x), expected)
    assert_close(numax.jit(getattr(special, name))(x), expected)


def test_unary_special_against_scipy(rng):
    x = rng.uniform(0.05, 0.95, 20)
    numax.config.update("numax_enable_x64", True)
    try:
        for name in ["erf", "erfc", "gammaln", "digamma", "expit", "logit", "entr", "erfinv", "ndtr", "ndtri",
                     "log_ndtr"]:
            np.testing.assert_allclose(np.asarray(getattr(special, name)(x)), getattr(osp_special, name)(x),
                                       rtol=1e-10, err_msg=name)
    finally:
        numax.config.update("numax_enable_x64", False)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_family(rng, name):
    x = np.array([0.0, 0.0, 0.0, 1.0, 2.5, -1.0, 3.0], np.float32)
    y = np.array([0.0, np.nan, -1.0, 0.0, 4.0, 2.0, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(x, y), getattr(jsp, name)(x, y))
        assert_close(getattr(special, name)(x[:, None], y), getattr(jsp, name)(x[:, None], y))
        assert_close(getattr(special, name)(2, np.int32(3)), getattr(jsp, name)(2, np.int32(3)))


@pytest.mark.parametrize("name", ["ndtr", "log_ndtr"])
def test_ndtr_family_matches_jax(rng, name):
    x = np.concatenate([rng.uniform(-12, 12, 20), [-50.0, -20.0, -10.5, -10.0, 5.0, 5.5, 9.0, np.inf, -np.inf,
                                                  np.nan]]).astype(np.float32)
    assert_close(getattr(special, name)(x), getattr(jsp, name)(x), scale=2)
    with pytest.raises(TypeError, match="float32 or float64"):
        getattr(special, name)(x.astype(np.float16))


def test_log_ndtr_series_order():
    x = np.array([-30.0, -12.0, -10.5], np.float32)
    for order in (0, 1, 4):
        assert_close(special.log_ndtr(x, series_order=order), jsp.log_ndtr(x, series_order=order))
    with pytest.raises(ValueError, match="series_order"):
        special.log_ndtr(x, series_order=31)


def test_ndtri_matches_jax():
    p = np.array([0.0, 1e-30, 1e-5, 0.05, 0.1353, 0.3, 0.5, 0.8, 0.8647, 0.95, 1 - 1e-7, 1.0, -0.5, 1.5,
                  np.nan], np.float32)
    with np.errstate(invalid="ignore"):
        assert_close(special.ndtri(p), jsp.ndtri(p), scale=2)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_jax(rng, axis, keepdims):
    a = rng.normal(size=(3, 4)).astype(np.float32) * 50
    a[0] = -np.inf
    a[1, 2] = np.inf
    assert_close(special.logsumexp(a, axis=axis, keepdims=keepdims), jsp.logsumexp(a, axis=axis, keepdims=keepdims))
    b = rng.uniform(-1, 2, size=(3, 4)).astype(np.float32)
    b[2, 1] = 0.0
    with np.errstate(invalid="ignore"):
        assert_close(special.logsumexp(a, axis=axis, b=b, keepdims=keepdims),
                     jsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims))
    out, sign = special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    expected_out, expected_sign = jsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    assert_close(out, expected_out)
    assert_close(sign, expected_sign)


def test_logsumexp_edge_cases(rng):
    for a in [np.array([np.nan, 1.0], np.float32), np.zeros((0,), np.float32), np.float32(3.0),
              np.array([1e38, 1e38], np.float32), np.array([3, 4], np.int32)]:
        with np.errstate(invalid="ignore"):
            assert_close(special.logsumexp(a), jsp.logsumexp(a))
    x = rng.normal(size=(2, 5)).astype(dtypes.bfloat16)
    assert_close(special.logsumexp(x, axis=1), jsp.logsumexp(x, axis=1))
    where = np.array([True, False, True, True, False])
    y = rng.normal(size=(2, 5)).astype(np.float32)
    assert_close(special.logsumexp(y, axis=1, where=where), jsp.logsumexp(y, axis=1, where=where))
    assert_close(numax.jit(lambda v: special.logsumexp(v, axis=0))(y), jsp.logsumexp(y, axis=0))


def test_special_softmax():
    x = np.array([[1.0, 2.0, 3.0], [0.0, -np.inf, 5.0]], np.float32)
    assert_close(special.softmax(x, axis=1), jsp.softmax(x, axis=1))
    assert_close(special.log_softmax(x, axis=None), jsp.log_softmax(x, axis=None))


# --- stats ------------------------------------------------------------------------------------------------
_norm_fns = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


@pytest.mark.parametrize("fn", _norm_fns)
def test_norm_matches_jax_and_scipy(rng, fn):
    x = np.concatenate([rng.normal(size=12) * 4, [-40.0, 0.0, 12.0, np.inf, -np.inf]]).astype(np.float32)
    loc, scale = np.float32(0.5), np.array(2.0, np.float32)
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.norm, fn)(x), getattr(jstats.norm, fn)(x), scale=2)
        assert_close(getattr(stats.norm, fn)(x, loc, scale), getattr(jstats.norm, fn)(x, loc, scale), scale=2)
        finite = x[np.isfinite(x) & (np.abs(x) < 8)]
        np.testing.assert_allclose(np.asarray(getattr(stats.norm, fn)(finite, loc, scale)),
                                   getattr(osp_stats.norm, fn)(finite, loc, scale), rtol=1e-4, atol=1e-6)


def test_norm_quantiles():
    q = np.array([0.0, 1e-6, 0.25, 0.5, 0.9, 1.0], np.float32)
    assert_close(stats.norm.ppf(q, 1.0, 3.0), jstats.norm.ppf(q, 1.0, 3.0))
    assert_close(stats.norm.isf(q), jstats.norm.isf(q))
    assert_close(numax.jit(stats.norm.ppf)(q), jstats.norm.ppf(q))


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "ppf"])
def test_uniform_matches_jax(rng, fn):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5, np.nan, np.inf], np.float32)
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.uniform, fn)(x), getattr(jstats.uniform, fn)(x))
        assert_close(getattr(stats.uniform, fn)(x, -1.0, 3.0), getattr(jstats.uniform, fn)(x, -1.0, 3.0))
        assert_close(getattr(stats.uniform, fn)(np.int32(1), 0, 2), getattr(jstats.uniform, fn)(np.int32(1), 0, 2))


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"])
def test_expon_matches_jax(fn):
    x = np.array([-1.0, 0.0, 0.25, 1.0, 3.0, 50.0, np.inf, np.nan], np.float32)
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.expon, fn)(x), getattr(jstats.expon, fn)(x), scale=2)
        assert_close(getattr(stats.expon, fn)(x, 0.5, 2.0), getattr(jstats.expon, fn)(x, 0.5, 2.0), scale=2)


def test_bernoulli_matches_jax():
    k = np.array([-1.0, 0.0, 1.0, 2.0, 0.5], np.float32)
    p = np.float32(0.3)
    assert_close(stats.bernoulli.logpmf(k, p), jstats.bernoulli.logpmf(k, p))
    assert_close(stats.bernoulli.pmf(k, p), jstats.bernoulli.pmf(k, p))
    assert_close(stats.bernoulli.cdf(k, p), jstats.bernoulli.cdf(k, p))
    q = np.array([0.0, 0.5, 0.7, 0.71, 1.0, 2.0], np.float32)
    assert_close(stats.bernoulli.ppf(q, p), jstats.bernoulli.ppf(q, p))
    assert_close(stats.bernoulli.pmf(np.array([0, 1], np.int32), 0.0), jstats.bernoulli.pmf(np.array([0, 1]), 0.0))


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_relative_entropy_matches_jax(name):
    p = np.array([0.0, 0.0, 0.5, 1.0, -1.0, 2.0, np.inf, np.nan], np.float32)
    q = np.array([0.0, 1.0, 0.25, 0.0, 1.0, 3.0, 1.0, 1.0], np.float32)
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(p, q), getattr(jsp, name)(p, q))
        assert_close(getattr(special, name)(p[:, None], q), getattr(jsp, name)(p[:, None], q))


def test_gamma_and_gammasgn_match_jax(rng):
    x = np.concatenate([rng.uniform(-5, 5, 10), [-3.0, -2.5, -0.0, 0.0, 0.5, 1.0, 30.0, 40.0, np.inf, -np.inf,
                                                np.nan]]).astype(np.float32)
    with np.errstate(all="ignore"):
        assert_close(special.gammasgn(x), jsp.gammasgn(x))
        assert_close(special.gamma(x), jsp.gamma(x), scale=5)


def test_multivariate_normal_logpdf_matches_jax(rng):
    a = rng.normal(size=(3, 3)).astype(np.float32)
    cov = a @ a.T + np.eye(3, dtype=np.float32)
    mean = np.array([0.5, -1.0, 2.0], np.float32)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    for args in [(x, mean, cov), (x[0], mean, cov), (x, mean, np.float32(2.0)), (x[:, 0], np.float32(0.5),
                                                                                 np.float32(2.0))]:
        assert_close(stats.multivariate_normal.logpdf(*args), jstats.multivariate_normal.logpdf(*args), scale=10)
        assert_close(stats.multivariate_normal.pdf(*args), jstats.multivariate_normal.pdf(*args), scale=10)
    batched_cov = np.stack([cov, 2 * cov])
    assert_close(stats.multivariate_normal.logpdf(x[:2], mean, batched_cov),
                 jstats.multivariate_normal.logpdf(x[:2], mean, batched_cov), scale=10)
    with pytest.raises(ValueError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(x, mean, cov[:2, :2])
