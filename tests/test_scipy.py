"""numax.scipy.special and numax.scipy.stats against jax.scipy (and scipy), edge values included."""

import functools

import numpy as np
import pytest
import scipy.special as osp_special
import scipy.stats as osp_stats
from harness import assert_close, jax
from numax.core import dtypes
from oracle import jit_cases

import numax
from numax.scipy import special, stats

jsp = jax.scipy.special
jstats = jax.scipy.stats

_edges = np.array([-np.inf, -1e30, -40.0, -9.5, -1.0, -0.0, 0.0, 1e-30, 0.3, 1.0, 5.5, 40.0, 1e30, np.inf, np.nan])


def _values(rng, dtype, low=-6.0, high=6.0):
    return _pad(np.concatenate([rng.uniform(low, high, 9), _edges]).astype(dtype))


def _pad(values):
    """`values` repeated up to the one length (30) of the file's 1-D inputs: numax compiles an eager op once per
    shape, so the tests' eager calls share their programs (the values checked stay the same)."""
    assert len(values) <= 30
    return np.resize(values, 30)


_unary = ["erf", "erfc", "gammaln", "digamma", "expit", "logit", "entr", "erfinv"]
_unary_dtypes = [np.float32, dtypes.bfloat16, np.float16]


def _unary_input(name, dtype):
    low, high = (-1.0, 1.0) if name in ("erfinv", "logit") else (-6.0, 6.0)
    return _values(np.random.default_rng(0), dtype, low, high)  # (the rng fixture's generator)


@functools.cache
def _unary_expected():
    return jit_cases({(name, np.dtype(dtype).name): (getattr(jsp, name), (_unary_input(name, dtype),))
                   for name in _unary for dtype in _unary_dtypes})


@pytest.mark.parametrize("name", _unary)
@pytest.mark.parametrize("dtype", _unary_dtypes)
def test_unary_special_match_jax(name, dtype):
    x = _unary_input(name, dtype)
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(x), _unary_expected()[name, np.dtype(dtype).name], scale=2)


_int_input = np.array([-2, 0, 1, 3], np.int32)


@functools.cache
def _int_input_expected():
    return jit_cases({name: (getattr(jsp, name), (_int_input,)) for name in ["erf", "expit", "gammaln"]})


@pytest.mark.parametrize("name", ["erf", "expit", "gammaln"])
def test_unary_special_int_input_and_jit(name):
    x = _int_input
    expected = _int_input_expected()[name]
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


_xlogy_x = _pad(np.array([0.0, 0.0, 0.0, 1.0, 2.5, -1.0, 3.0], np.float32))
_xlogy_y = _pad(np.array([0.0, np.nan, -1.0, 0.0, 4.0, 2.0, -np.inf], np.float32))


@functools.cache
def _xlogy_expected():
    x, y = _xlogy_x, _xlogy_y
    cases = {}
    for name in ["xlogy", "xlog1py"]:
        f = getattr(jsp, name)
        cases[name, "vector"] = (f, (x, y))
        cases[name, "broadcast"] = (f, (x[:, None], y))
        cases[name, "scalars"] = (lambda f=f: f(2, np.int32(3)), ())
    return jit_cases(cases)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_family(rng, name):
    x, y, expected = _xlogy_x, _xlogy_y, _xlogy_expected()
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(x, y), expected[name, "vector"])
        assert_close(getattr(special, name)(x[:, None], y), expected[name, "broadcast"])
        assert_close(getattr(special, name)(2, np.int32(3)), expected[name, "scalars"])


def _ndtr_input():
    rng = np.random.default_rng(0)  # (the rng fixture's generator)
    return np.concatenate([rng.uniform(-12, 12, 20), [-50.0, -20.0, -10.5, -10.0, 5.0, 5.5, 9.0, np.inf, -np.inf,
                                                      np.nan]]).astype(np.float32)


@functools.cache
def _ndtr_expected():
    return jit_cases({name: (getattr(jsp, name), (_ndtr_input(),)) for name in ["ndtr", "log_ndtr"]})


@pytest.mark.parametrize("name", ["ndtr", "log_ndtr"])
def test_ndtr_family_matches_jax(name):
    x = _ndtr_input()
    assert_close(getattr(special, name)(x), _ndtr_expected()[name], scale=2)
    with pytest.raises(TypeError, match="float32 or float64"):
        getattr(special, name)(x.astype(np.float16))


def test_log_ndtr_series_order():
    x = _pad(np.array([-30.0, -12.0, -10.5], np.float32))
    expected = jit_cases({order: (lambda v, order=order: jsp.log_ndtr(v, series_order=order), (x,))
                       for order in (0, 1, 4)})
    for order in (0, 1, 4):
        assert_close(special.log_ndtr(x, series_order=order), expected[order])
    with pytest.raises(ValueError, match="series_order"):
        special.log_ndtr(x, series_order=31)


def test_ndtri_matches_jax():
    p = _pad(np.array([0.0, 1e-30, 1e-5, 0.05, 0.1353, 0.3, 0.5, 0.8, 0.8647, 0.95, 1 - 1e-7, 1.0, -0.5, 1.5,
                       np.nan], np.float32))
    with np.errstate(invalid="ignore"):
        assert_close(special.ndtri(p), jax.jit(jsp.ndtri)(p), scale=2)  # (jitted: eagerly, each op compiles)


_logsumexp_axes = [None, 0, 1, (0, 1)]


def _logsumexp_operands():
    rng = np.random.default_rng(0)  # (the rng fixture's generator)
    a = rng.normal(size=(3, 4)).astype(np.float32) * 50
    a[0] = -np.inf
    a[1, 2] = np.inf
    b = rng.uniform(-1, 2, size=(3, 4)).astype(np.float32)
    b[2, 1] = 0.0
    return a, b


@functools.cache
def _logsumexp_expected():
    a, b = _logsumexp_operands()
    cases = {}
    for axis in _logsumexp_axes:
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            cases[axis, keepdims, "a"] = (lambda a, kw=kw: jsp.logsumexp(a, **kw), (a,))
            cases[axis, keepdims, "b"] = (lambda a, b, kw=kw: jsp.logsumexp(a, b=b, **kw), (a, b))
            cases[axis, keepdims, "sign"] = (lambda a, b, kw=kw: jsp.logsumexp(a, b=b, return_sign=True, **kw),
                                             (a, b))
    return jit_cases(cases)


@pytest.mark.parametrize("axis", _logsumexp_axes)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_jax(axis, keepdims):
    a, b = _logsumexp_operands()
    expected = _logsumexp_expected()
    assert_close(special.logsumexp(a, axis=axis, keepdims=keepdims), expected[axis, keepdims, "a"])
    with np.errstate(invalid="ignore"):
        assert_close(special.logsumexp(a, axis=axis, b=b, keepdims=keepdims), expected[axis, keepdims, "b"])
    out, sign = special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    expected_out, expected_sign = expected[axis, keepdims, "sign"]
    assert_close(out, expected_out)
    assert_close(sign, expected_sign)


def test_logsumexp_edge_cases(rng):
    plain = [np.array([np.nan, 1.0], np.float32), np.zeros((0,), np.float32), np.float32(3.0),
             np.array([1e38, 1e38], np.float32), np.array([3, 4], np.int32)]
    x = rng.normal(size=(2, 5)).astype(dtypes.bfloat16)
    where = np.array([True, False, True, True, False])
    y = rng.normal(size=(2, 5)).astype(np.float32)
    expected = jit_cases({**{i: (jsp.logsumexp, (a,)) for i, a in enumerate(plain)},
                       "axis1": (lambda v: jsp.logsumexp(v, axis=1), (x,)),
                       "where": (lambda v: jsp.logsumexp(v, axis=1, where=where), (y,)),
                       "axis0": (lambda v: jsp.logsumexp(v, axis=0), (y,))})
    for i, a in enumerate(plain):
        with np.errstate(invalid="ignore"):
            assert_close(special.logsumexp(a), expected[i])
    assert_close(special.logsumexp(x, axis=1), expected["axis1"])
    assert_close(special.logsumexp(y, axis=1, where=where), expected["where"])
    assert_close(numax.jit(lambda v: special.logsumexp(v, axis=0))(y), expected["axis0"])


def test_special_softmax():
    x = np.array([[1.0, 2.0, 3.0], [0.0, -np.inf, 5.0]], np.float32)
    expected = jit_cases({"softmax": (lambda v: jsp.softmax(v, axis=1), (x,)),
                       "log_softmax": (lambda v: jsp.log_softmax(v, axis=None), (x,))})
    assert_close(special.softmax(x, axis=1), expected["softmax"])
    assert_close(special.log_softmax(x, axis=None), expected["log_softmax"])


# --- stats ------------------------------------------------------------------------------------------------
_norm_fns = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
_norm_loc, _norm_scale = np.float32(0.5), np.array(2.0, np.float32)


def _norm_input():
    rng = np.random.default_rng(0)  # (the rng fixture's generator)
    return _pad(np.concatenate([rng.normal(size=12) * 4, [-40.0, 0.0, 12.0, np.inf, -np.inf]]).astype(np.float32))


@functools.cache
def _norm_expected():
    x = _norm_input()
    cases = {}
    for fn in _norm_fns:
        cases[fn, "standard"] = (getattr(jstats.norm, fn), (x,))
        cases[fn, "loc_scale"] = (getattr(jstats.norm, fn), (x, _norm_loc, _norm_scale))
    return jit_cases(cases)


@pytest.mark.parametrize("fn", _norm_fns)
def test_norm_matches_jax_and_scipy(fn):
    x = _norm_input()
    loc, scale = _norm_loc, _norm_scale
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.norm, fn)(x), _norm_expected()[fn, "standard"], scale=2)
        assert_close(getattr(stats.norm, fn)(x, loc, scale), _norm_expected()[fn, "loc_scale"], scale=2)
        finite = x[np.isfinite(x) & (np.abs(x) < 8)]
        np.testing.assert_allclose(np.asarray(getattr(stats.norm, fn)(finite, loc, scale)),
                                   getattr(osp_stats.norm, fn)(finite, loc, scale), rtol=1e-4, atol=1e-6)


def test_norm_quantiles():
    q = _pad(np.array([0.0, 1e-6, 0.25, 0.5, 0.9, 1.0], np.float32))
    expected = jit_cases({"ppf_loc_scale": (lambda v: jstats.norm.ppf(v, 1.0, 3.0), (q,)),
                       "isf": (jstats.norm.isf, (q,)), "ppf": (jstats.norm.ppf, (q,))})
    assert_close(stats.norm.ppf(q, 1.0, 3.0), expected["ppf_loc_scale"])
    assert_close(stats.norm.isf(q), expected["isf"])
    assert_close(numax.jit(stats.norm.ppf)(q), expected["ppf"])


_uniform_x = _pad(np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5, np.nan, np.inf], np.float32))


@functools.cache
def _uniform_expected():
    cases = {}
    for fn in ["logpdf", "pdf", "cdf", "ppf"]:
        f = getattr(jstats.uniform, fn)
        cases[fn, "standard"] = (f, (_uniform_x,))
        cases[fn, "loc_scale"] = (lambda v, f=f: f(v, -1.0, 3.0), (_uniform_x,))
        cases[fn, "int"] = (lambda f=f: f(np.int32(1), 0, 2), ())
    return jit_cases(cases)


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "ppf"])
def test_uniform_matches_jax(fn):
    x, expected = _uniform_x, _uniform_expected()
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.uniform, fn)(x), expected[fn, "standard"])
        assert_close(getattr(stats.uniform, fn)(x, -1.0, 3.0), expected[fn, "loc_scale"])
        assert_close(getattr(stats.uniform, fn)(np.int32(1), 0, 2), expected[fn, "int"])


_expon_fns = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]
_expon_x = _pad(np.array([-1.0, 0.0, 0.25, 1.0, 3.0, 50.0, np.inf, np.nan], np.float32))


@functools.cache
def _expon_expected():
    cases = {}
    for fn in _expon_fns:
        f = getattr(jstats.expon, fn)
        cases[fn, "standard"] = (f, (_expon_x,))
        cases[fn, "loc_scale"] = (lambda v, f=f: f(v, 0.5, 2.0), (_expon_x,))
    return jit_cases(cases)


@pytest.mark.parametrize("fn", _expon_fns)
def test_expon_matches_jax(fn):
    x = _expon_x
    with np.errstate(all="ignore"):
        assert_close(getattr(stats.expon, fn)(x), _expon_expected()[fn, "standard"], scale=2)
        assert_close(getattr(stats.expon, fn)(x, 0.5, 2.0), _expon_expected()[fn, "loc_scale"], scale=2)


def test_bernoulli_matches_jax():
    k = _pad(np.array([-1.0, 0.0, 1.0, 2.0, 0.5], np.float32))
    p = np.float32(0.3)
    q = _pad(np.array([0.0, 0.5, 0.7, 0.71, 1.0, 2.0], np.float32))
    b = jstats.bernoulli
    expected = jit_cases({"logpmf": (b.logpmf, (k, p)), "pmf": (b.pmf, (k, p)), "cdf": (b.cdf, (k, p)),
                       "ppf": (b.ppf, (q, p)), "pmf_int": (lambda: b.pmf(np.array([0, 1]), 0.0), ())})
    assert_close(stats.bernoulli.logpmf(k, p), expected["logpmf"])
    assert_close(stats.bernoulli.pmf(k, p), expected["pmf"])
    assert_close(stats.bernoulli.cdf(k, p), expected["cdf"])
    assert_close(stats.bernoulli.ppf(q, p), expected["ppf"])
    assert_close(stats.bernoulli.pmf(np.array([0, 1], np.int32), 0.0), expected["pmf_int"])


_entropy_p = _pad(np.array([0.0, 0.0, 0.5, 1.0, -1.0, 2.0, np.inf, np.nan], np.float32))
_entropy_q = _pad(np.array([0.0, 1.0, 0.25, 0.0, 1.0, 3.0, 1.0, 1.0], np.float32))


@functools.cache
def _entropy_expected():
    p, q = _entropy_p, _entropy_q
    return jit_cases({**{(name, "vector"): (getattr(jsp, name), (p, q)) for name in ["rel_entr", "kl_div"]},
                   **{(name, "broadcast"): (getattr(jsp, name), (p[:, None], q)) for name in ["rel_entr", "kl_div"]}})


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_relative_entropy_matches_jax(name):
    p, q = _entropy_p, _entropy_q
    with np.errstate(all="ignore"):
        assert_close(getattr(special, name)(p, q), _entropy_expected()[name, "vector"])
        assert_close(getattr(special, name)(p[:, None], q), _entropy_expected()[name, "broadcast"])


def test_gamma_and_gammasgn_match_jax(rng):
    x = _pad(np.concatenate([rng.uniform(-5, 5, 10), [-3.0, -2.5, -0.0, 0.0, 0.5, 1.0, 30.0, 40.0, np.inf, -np.inf,
                                                     np.nan]]).astype(np.float32))
    expected = jit_cases({"gammasgn": (jsp.gammasgn, (x,)), "gamma": (jsp.gamma, (x,))})
    with np.errstate(all="ignore"):
        assert_close(special.gammasgn(x), expected["gammasgn"])
        assert_close(special.gamma(x), expected["gamma"], scale=5)


def test_multivariate_normal_logpdf_matches_jax(rng):
    a = rng.normal(size=(3, 3)).astype(np.float32)
    cov = a @ a.T + np.eye(3, dtype=np.float32)
    mean = np.array([0.5, -1.0, 2.0], np.float32)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    arguments = [(x, mean, cov), (x[0], mean, cov), (x, mean, np.float32(2.0)), (x[:, 0], np.float32(0.5),
                                                                                 np.float32(2.0))]
    batched_cov = np.stack([cov, 2 * cov])
    mvn = jstats.multivariate_normal
    expected = jit_cases({**{("logpdf", i): (mvn.logpdf, args) for i, args in enumerate(arguments)},
                       **{("pdf", i): (mvn.pdf, args) for i, args in enumerate(arguments)},
                       "batched": (mvn.logpdf, (x[:2], mean, batched_cov))})
    for i, args in enumerate(arguments):
        assert_close(stats.multivariate_normal.logpdf(*args), expected["logpdf", i], scale=10)
        assert_close(stats.multivariate_normal.pdf(*args), expected["pdf", i], scale=10)
    assert_close(stats.multivariate_normal.logpdf(x[:2], mean, batched_cov), expected["batched"], scale=10)
    with pytest.raises(ValueError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(x, mean, cov[:2, :2])
