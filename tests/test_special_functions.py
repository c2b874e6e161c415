"""Special functions: the lax primitives of `lax/special.py` (igamma family, betainc, zeta, Bessel i0e/i1e)
and the `numax.scipy.special` functions over them, against jax.lax / jax.scipy.special on many points per
call (random points over each domain plus edge values), in float32 and float64, with gradients and vmap."""

import jax.scipy.special as jsp
import numax.lax as nlax
import numpy as np
import pytest
from harness import assert_close, jax, jnp
from numax.core import dtypes

import numax
import numax.scipy.special as nsp

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-30, 1e30])
# For pairs of operands: a == x == 1e30 takes the igamma series ~1/eps steps (in JAX too).
PAIR_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-30, 1e4])


def _grid(values_a, values_b):
    a, b = np.meshgrid(values_a, values_b, indexing="ij")
    return a.ravel(), b.ravel()


def _gamma_points(rng, dtype):
    """(a, x) pairs over both algorithm branches (series and continued fraction), plus all edge pairs."""
    a = np.concatenate([rng.uniform(0.01, 3, 60), rng.uniform(3, 60, 60), rng.uniform(0.01, 60, 80)])
    x = np.concatenate([rng.uniform(0, 3, 60), rng.uniform(0, 80, 60), a[120:] * rng.uniform(0.8, 1.2, 80)])
    edge_a, edge_x = _grid(PAIR_EDGES, PAIR_EDGES)
    return np.concatenate([a, edge_a]).astype(dtype), np.concatenate([x, edge_x]).astype(dtype)


def _beta_points(rng, dtype):
    a = np.concatenate([rng.uniform(0.01, 3, 100), rng.uniform(1, 80, 100)])
    b = np.concatenate([rng.uniform(0.01, 3, 100), rng.uniform(1, 80, 100)])
    x = rng.uniform(0, 1, 200)
    edge_a, edge_x = _grid(PAIR_EDGES, PAIR_EDGES)
    return (np.concatenate([a, edge_a, np.full(5, 2.0)]).astype(dtype),
            np.concatenate([b, edge_x, np.array([0.0, np.inf, 3.0, 3.0, 3.0])]).astype(dtype),
            np.concatenate([x, np.tile([0.0, 0.3, 1.0, 0.7, 1.5, 0.2, -0.1, np.nan, 0.9, 0.4], 10),
                            np.array([0.5, 0.5, 0.0, 1.0, 1e-7])]).astype(dtype))


def _close(actual, expected, rtol):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * 1e-3)


TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def _lax_cases(rng, dtype):
    """(numax function, jax function, operands) for every primitive."""
    a, x = _gamma_points(rng, dtype)
    cases = [(getattr(nlax, name), getattr(jax.lax, name), (a, x))
             for name in ("igamma", "igammac", "igamma_grad_a")]
    cases.append((nlax.random_gamma_grad, jax.lax.random_gamma_grad, (a, x)))
    cases.append((nlax.betainc, jax.lax.betainc, _beta_points(rng, dtype)))
    s = np.concatenate([rng.uniform(1.01, 20, 100), EDGES, [1.0, 2.0, 3.0, 0.5, -1.0]]).astype(dtype)
    q = np.concatenate([rng.uniform(0.05, 30, 100), EDGES[::-1], [1.0, -2.5, -2.0, 2.0, 1.0]]).astype(dtype)
    cases.append((nlax.zeta, jax.lax.zeta, (s, q)))  # (unpaired edges)
    z = np.concatenate([rng.uniform(-10, 10, 100), rng.uniform(-700, 700, 50), EDGES, [8.0, -8.0, 7.99]])
    cases += [(nlax.bessel_i0e, jax.lax.bessel_i0e, (z.astype(dtype),)),
              (nlax.bessel_i1e, jax.lax.bessel_i1e, (z.astype(dtype),))]
    return cases


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lax_special_matches_jax_eager_and_jit(rng, dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
        jax.config.update("jax_enable_x64", True)
    try:
        cases = _lax_cases(rng, dtype)
        operands = [args for _, _, args in cases]
        # One compiled program per library (the igamma kernels take seconds to compile each).
        expected = jax.jit(lambda all_args: [f(*args) for (_, f, _), args in zip(cases, all_args)])(operands)
        jitted = numax.jit(lambda all_args: [f(*args) for (f, _, _), args in zip(cases, all_args)])(operands)
        _close(nlax.bessel_i0e(operands[-1][0]), expected[-2], TOLERANCE[dtype])  # eagerly, one primitive
        for (fn, _, _), got, want in zip(cases, jitted, expected):
            assert np.asarray(got).dtype == dtype, fn.__name__
            _close(got, want, TOLERANCE[dtype])
    finally:
        jax.config.update("jax_enable_x64", False)


def test_lax_special_low_precision_and_broadcasting(rng):
    # 16-bit floats are computed in float32 and rounded; a rank-0 operand broadcasts.
    a = rng.uniform(0.1, 5, (3, 4)).astype(dtypes.bfloat16)
    x = rng.uniform(0.0, 6, (3, 4)).astype(dtypes.bfloat16)
    got = numax.jit(lambda a, x: (nlax.igamma(a, x), nlax.igammac(np.asarray(2.0, a.dtype), x),
                                  nlax.bessel_i0e(x.astype(np.float16))))(a, x)
    want = (jax.lax.igamma(a, x), jax.lax.igammac(np.asarray(2.0, a.dtype), x),
            jax.lax.bessel_i0e(x.astype(np.float16)))
    for g, w in zip(got, want):
        assert_close(g, w, scale=1.0)
    for lax_ in (nlax, jax.lax):  # a Python scalar has its own default dtype (float32 here), as in jax
        with pytest.raises(TypeError):
            lax_.zeta(2.0, x)


def test_lax_special_errors():
    with pytest.raises(TypeError, match="igamma does not accept dtype int32"):
        nlax.igamma(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="regularized_incomplete_beta requires arguments of the same dtype"):
        nlax.betainc(np.float32(1), np.float32(2), np.float16(0.5))
    with pytest.raises(TypeError, match="bessel_i0e does not accept dtype complex64"):
        nlax.bessel_i0e(np.complex64(1))
    with pytest.raises(ValueError, match="betainc is not differentiable with respect to a"):
        numax.grad(lambda a: nlax.betainc(a, np.float32(2), np.float32(0.5)))(np.float32(1))
    with pytest.raises(ValueError, match="zeta is not differentiable with respect to x"):
        numax.grad(lambda s: nlax.zeta(s, np.float32(2)))(np.float32(3))


def test_lax_special_gradients(rng, x64):
    jax.config.update("jax_enable_x64", True)
    try:
        a = rng.uniform(0.2, 8, 12)
        x = rng.uniform(0.05, 12, 12)
        b = rng.uniform(0.2, 8, 12)
        u = rng.uniform(0.05, 0.95, 12)
        z = rng.uniform(-12, 12, 12)

        def both(lax_module, zeta, a, x, u, z):
            return (lax_module.igamma(a, x) + 2 * lax_module.igammac(a, x) + lax_module.betainc(b, b, u)
                    + zeta(b + 1.5, x) + lax_module.bessel_i0e(z) + lax_module.bessel_i1e(z))

        # zeta's x and betainc's a and b have no derivative rule, and jax's lax.zeta none at all: its
        # derivative in q, -s zeta(s + 1, q), is added to jax's gradient by hand.
        got = numax.jit(numax.grad(lambda *args: numax.numpy.sum(both(nlax, nlax.zeta, *args)), argnums=(0, 1, 2, 3)))(
            a, x, u, z)
        jax_zeta = lambda s, q: jax.lax.zeta(s, jax.lax.stop_gradient(q))  # noqa: E731
        want = list(jax.grad(lambda *args: jnp.sum(both(jax.lax, jax_zeta, *args)), argnums=(0, 1, 2, 3))(a, x, u, z))
        want[1] = want[1] - (b + 1.5) * jax.lax.zeta(b + 2.5, x)
        for g, w in zip(got, want):
            _close(g, w, 1e-10)
        # The igamma derivative in a is igamma_grad_a; the sample gradient is -(dP/da) / (dP/dx).
        grad_a, igamma_grad_a, random_gamma_grad = numax.jit(lambda a, x: (  # one program: each compiles slowly
            numax.grad(lambda a: numax.numpy.sum(nlax.igamma(a, x)))(a), nlax.igamma_grad_a(a, x),
            nlax.random_gamma_grad(a, x)))(a, x)
        _close(grad_a, igamma_grad_a, 1e-15)
        density = np.exp((a - 1) * np.log(x) - x - jax.lax.lgamma(a))
        _close(random_gamma_grad, -np.asarray(jax.lax.igamma_grad_a(a, x)) / density, 1e-9)
        # bessel_i1e's derivative at 0 is its limit 1/2.
        assert float(numax.grad(nlax.bessel_i1e)(0.0)) == 0.5
    finally:
        jax.config.update("jax_enable_x64", False)


def test_lax_special_vmap(rng):
    a = rng.uniform(0.5, 5, (4, 3)).astype(np.float32)
    x = rng.uniform(0.1, 6, (3,)).astype(np.float32)
    u = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
    got = numax.jit(numax.vmap(lambda a, u: (nlax.igamma(a, x), nlax.random_gamma_grad(a, x), nlax.betainc(a, a, u),
                                   nlax.bessel_i0e(a)), in_axes=(0, 1)))(a, u)
    want = jax.jit(jax.vmap(lambda a, u: (jax.lax.igamma(a, x), jax.lax.random_gamma_grad(a, x),
                                          jax.lax.betainc(a, a, u), jax.lax.bessel_i0e(a)), in_axes=(0, 1)))(a, u)
    for g, w in zip(got, want):
        _close(g, w, 2e-5)


# --- numax.scipy.special -----------------------------------------------------------------------------------
def _positive(rng, n=40, high=20.0):
    return rng.uniform(0.05, high, n)


def _scipy_cases(rng):
    """name -> operands; every function is checked against jax.scipy.special of the same name."""
    real = np.concatenate([rng.uniform(-15, 15, 40), EDGES, [-2.0, -3.5, 2.0, 30.0]])
    pairs_a, pairs_b = _grid(np.concatenate([_positive(rng, 8), [0.0, -1.0, 1e6, 8.0, 7.5, np.inf]]),
                             np.concatenate([_positive(rng, 8, 40), [0.0, 2.0, 1e7, 8.0, np.nan, 1.0]]))
    return {
        "gammainc": (pairs_a, pairs_b), "gammaincc": (pairs_a, pairs_b),
        "betainc": (_positive(rng), _positive(rng), rng.uniform(0, 1, 40)),
        "betaln": (pairs_a, pairs_b), "beta": (np.concatenate([pairs_a, [-0.5, -1.5]]),
                                               np.concatenate([pairs_b, [0.25, 3.0]])),
        "zeta": (rng.uniform(1.1, 12, 40), _positive(rng)),
        "i0": (real,), "i0e": (real,), "i1": (real,), "i1e": (real,),
        "loggamma": (real,), "factorial": (np.concatenate([real, [0.0, 5.0, 10.0]]),),
        "comb": (np.array([5.0, 10, 10, 3, -1, 4, 0, 7.5, 30]), np.array([2.0, 3, 11, 0, 1, -1, 0, 2.5, 12])),
        "poch": (np.concatenate([_positive(rng, 20, 5), [2.0, -0.5]]),
                 np.concatenate([rng.uniform(-1, 4, 20), [0.0, 3.0]])),
        "boxcox": (np.concatenate([_positive(rng, 20), [0.0, -1.0, 1.0, 2.0]]),
                   np.concatenate([rng.uniform(-2, 2, 20), [0.0, 0.0, 0.0, 1e-8]])),
        "erfcx": (np.concatenate([real, [9.4, 9.5, 26.6, 27.0, -26.0, 1e-3]]),),
        "spence": (np.concatenate([rng.uniform(0, 6, 40), [0.0, 1.0, 2.0, 1.5, 0.5, -1.0, np.inf, np.nan, 1e-9]]),),
        "boxcox1p": (np.concatenate([rng.uniform(-0.9, 5, 20), [-1.0, -2.0, 1e-9, 2.0]]),
                     np.concatenate([rng.uniform(-2, 2, 20), [0.0, 0.5, 0.0, 1e-8]])),
    }


def _scipy_call(module, name, args):
    if name == "comb":
        return module.comb(*args), module.comb(*args, repetition=True)
    return getattr(module, name)(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scipy_special_matches_jax(rng, dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
        jax.config.update("jax_enable_x64", True)
    try:
        cases = {name: tuple(np.asarray(a, dtype) for a in args) for name, args in _scipy_cases(rng).items()}
        if dtype == np.float64:  # these wrap lax primitives checked in float64 above (and compile slowly)
            cases = {name: args for name, args in cases.items() if name not in ("gammainc", "gammaincc", "betainc")}
        got = numax.jit(lambda cases: {name: _scipy_call(nsp, name, args) for name, args in cases.items()})(cases)
        wants = jax.jit(lambda cases: {name: _scipy_call(jsp, name, args) for name, args in cases.items()})(cases)
        for name, want in wants.items():
            for g, w in zip(jax.tree_util.tree_leaves(got[name]), jax.tree_util.tree_leaves(want)):
                assert np.asarray(g).dtype == np.asarray(w).dtype, name
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=TOLERANCE[dtype] * 5,
                                           atol=TOLERANCE[dtype], err_msg=name)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_scipy_special_promotion_and_static_arguments(rng):
    # Integer inputs promote to the default float type, as in jax.scipy.special; d and n are static.
    a = rng.uniform(3, 10, (2, 3)).astype(np.float32)

    def run(module):
        results = {name: getattr(module, name)(np.int32(3), np.int32(2)) for name in ("betaln", "beta", "poch")}
        results["i0"] = module.i0(np.int32(2))
        results["polygamma"] = module.polygamma(np.arange(4), np.float32(2.5))
        results["multigammaln"] = module.multigammaln(a, 3), module.multigammaln(a, 4)
        results["bernoulli"] = [module.bernoulli(n) for n in (0, 1, 2, 3, 12, 31)]
        return results

    got, want = numax.jit(lambda: run(nsp))(), jax.jit(lambda: run(jsp))()
    assert_close(nsp.multigammaln(a, 3), want["multigammaln"][0])  # eagerly too
    for name in want:
        for g, w in zip(jax.tree_util.tree_leaves(got[name]), jax.tree_util.tree_leaves(want[name])):
            assert np.asarray(g).dtype == np.asarray(w).dtype, name
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-7, err_msg=name)


def test_exponential_integrals_match_scipy(x64):
    # Checked against scipy.special: jax's own exp1 and expi do not return on some of these inputs.
    scipy_special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-40, 40, 81), np.geomspace(1e-8, 700, 40), [0.0, -0.0, 0.3725074107813666, np.inf,
                                                                                  -np.inf, np.nan, -700.0, 1e5]])
    got = numax.jit(lambda x: (nsp.exp1(x), nsp.expi(x), numax.grad(nsp.expi)(x[0]), numax.grad(nsp.exp1)(x[-1])))(x)
    np.testing.assert_allclose(np.asarray(got[0]), scipy_special.exp1(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(np.asarray(got[1]), scipy_special.expi(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([float(got[2]), float(got[3])], [np.exp(-40.0) / -40.0, -np.exp(-1e5) / 1e5])
    single = numax.jit(lambda x: (nsp.exp1(x), nsp.expi(x)))(x.astype(np.float32))
    assert single[0].dtype == np.float32
    np.testing.assert_allclose(np.asarray(single[0]), scipy_special.exp1(x).astype(np.float32), rtol=2e-5, atol=1e-30)
    finite = np.abs(scipy_special.expi(x)) < 3e38
    np.testing.assert_allclose(np.asarray(single[1])[finite], scipy_special.expi(x)[finite].astype(np.float32),
                               rtol=2e-5, atol=1e-6)


def test_scipy_special_errors():
    with pytest.raises(NotImplementedError, match="Riemann zeta function not implemented"):
        nsp.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        nsp.factorial(3, exact=True)
    with pytest.raises(ValueError, match="must be of integer type"):
        nsp.polygamma(1.0, 2.0)
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        nsp.bernoulli(-1)
    with pytest.raises(ValueError, match="does not support complex"):
        nsp.beta(np.complex64(1), np.complex64(2))


def test_scipy_special_gradients(rng):
    # zeta is differentiated in both arguments through its Euler-Maclaurin series (as in JAX); spence has a
    # zero gradient where it is constant (x < 0).
    a = rng.uniform(0.5, 6, 8).astype(np.float32)
    x = rng.uniform(0.5, 9, 8).astype(np.float32)
    names = ("poch", "betaln", "beta")  # gammainc's and betainc's gradients: test_lax_special_gradients
    z = rng.uniform(-3, 8, 8).astype(np.float32)

    def total(module, a, x):
        pairs = sum(getattr(module, name)(a, x).sum() for name in names) + module.zeta(a + 1.1, x).sum()
        return pairs + (module.i0(z) + module.i1(z) + module.erfcx(z) + module.spence(x) + module.spence(-x)).sum()

    got = numax.jit(numax.grad(lambda a, x: total(nsp, a, x), argnums=(0, 1)))(a, x)
    want = jax.jit(jax.grad(lambda a, x: total(jsp, a, x), argnums=(0, 1)))(a, x)
    for g, w in zip(got, want):
        _close(g, w, 1e-4)
