"""Derivatives of the elementwise lax primitives: one table of differentiable cases, each checked against
finite differences to second order in float64 (forward and reverse) and against jax.jvp / jax.vjp of the
same jax.lax op in float32 and complex64; then JAX's conventions at non-differentiable points, zero
tangents of integer-valued ops, transposes of the linear ops, jit composition and broadcasting."""

import collections
import functools

import jax
import ml_dtypes
import numpy as np
import pytest
from harness import jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax as jlax
from numax.core import dtypes
from numax.lax.elementwise import polygamma
from oracle import jit_all, jit_table

import numax
from numax import lax
from numax.test_util import check_grads, numerical_jvp

bf16 = np.dtype(ml_dtypes.bfloat16)


# --- input generators: each returns one operand of `dtype` and `shape` inside a domain ----------------------
def uniform(low, high):
    def make(rng, dtype, shape):
        if np.issubdtype(dtype, np.complexfloating):
            # Off the real axis, where the branch cuts of log, sqrt, asin, acosh... lie.
            values = rng.uniform(0.3, 0.9, shape) + 1j * rng.uniform(0.2, 0.6, shape)
        else:
            values = rng.uniform(low, high, shape)
        return values.astype(dtype)

    return make


def away_from_zero(low, high):
    """Magnitudes in [low, high], random signs."""
    def make(rng, dtype, shape):
        if np.issubdtype(dtype, np.complexfloating):
            return uniform(low, high)(rng, dtype, shape)
        signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return (signs * rng.uniform(low, high, shape)).astype(dtype)

    return make


def rem_operands(rng, dtype, shape):
    """x / y stays away from integers, where rem jumps."""
    y = rng.uniform(1.2, 2.0, shape)
    x = y * (rng.integers(-2, 3, shape) + rng.uniform(0.2, 0.8, shape))
    return [x.astype(dtype), y.astype(dtype)]


def distinct_pair(rng, dtype, shape):
    """Two operands that differ by at least 0.2 everywhere (max and min are smooth there)."""
    x = rng.uniform(-2, 2, shape)
    y = x + np.where(rng.random(shape) < 0.5, -1.0, 1.0) * rng.uniform(0.2, 1.0, shape)
    return [x.astype(dtype), y.astype(dtype)]


def clamp_operands(rng, dtype, shape):
    x = rng.uniform(-2, 2, shape)
    x = np.where(np.abs(x + 0.5) < 0.2, x + 0.5, x)
    x = np.where(np.abs(x - 0.7) < 0.2, x - 0.5, x)
    return [np.full(shape, -0.5, dtype), x.astype(dtype), np.full(shape, 0.7, dtype)]


Case = collections.namedtuple("Case", "name numax_fn jax_fn makers complex_ok operands tol")


def case(name, makers, complex_ok=False, numax_fn=None, jax_fn=None, operands=None, tol=1.0):
    """A differentiable case: `makers` builds each operand (or `operands(rng, dtype, shape)` all of them)."""
    return Case(name, numax_fn or getattr(lax, name), jax_fn or getattr(jlax, name), tuple(makers), complex_ok,
                operands, tol)


ANY = uniform(-2.0, 2.0)
POSITIVE = uniform(0.5, 3.0)
UNIT = uniform(-0.9, 0.9)

CASES = [
    case("neg", [ANY], True),
    case("exp", [ANY], True),
    case("exp2", [ANY], True),
    case("expm1", [ANY], True),
    case("log", [POSITIVE], True),
    case("log1p", [uniform(-0.5, 2.0)], True),
    case("sqrt", [POSITIVE], True),
    case("rsqrt", [POSITIVE], True),
    case("cbrt", [away_from_zero(0.3, 3.0)]),
    case("tanh", [ANY], True),
    case("logistic", [ANY], True),
    case("sin", [ANY], True),
    case("cos", [ANY], True),
    case("tan", [uniform(-1.2, 1.2)], True),
    case("asin", [UNIT], True),
    case("acos", [UNIT], True),
    case("atan", [ANY], True),
    case("sinh", [ANY], True),
    case("cosh", [ANY], True),
    case("asinh", [ANY], True),
    case("acosh", [uniform(1.2, 3.0)], True),
    case("atanh", [UNIT], True),
    case("erf", [ANY]),
    case("erfc", [ANY]),
    case("erf_inv", [UNIT]),
    case("lgamma", [uniform(0.5, 4.0)]),
    case("digamma", [uniform(0.5, 4.0)]),
    case("abs", [away_from_zero(0.2, 2.0)], True),
    case("square", [ANY], True),
    case("integer_pow_3", [ANY], True, lambda x: lax.integer_pow(x, 3), lambda x: jlax.integer_pow(x, 3)),
    case("integer_pow_neg2", [away_from_zero(0.5, 2.0)], True, lambda x: lax.integer_pow(x, -2),
         lambda x: jlax.integer_pow(x, -2)),
    case("integer_pow_1", [ANY], True, lambda x: lax.integer_pow(x, 1), lambda x: jlax.integer_pow(x, 1)),
    # bfloat16's precision in float32; 40 mantissa bits in float64 (finite differences need more than bf16's).
    case("reduce_precision", [ANY], False, lambda x: lax.reduce_precision(x, 8, 40 if x.dtype == np.float64 else 7),
         lambda x: jlax.reduce_precision(x, 8, 7)),
    case("polygamma", [uniform(0.5, 3.0)], False, lambda x: polygamma(np.ones((), x.dtype), x),
         lambda x: jlax.polygamma(np.ones((), x.dtype), x)),
    case("add", [ANY, ANY], True),
    case("sub", [ANY, ANY], True),
    case("mul", [ANY, ANY], True),
    case("div", [ANY, away_from_zero(0.5, 2.0)], True),
    case("rem", [], operands=rem_operands),
    case("max", [], operands=distinct_pair),
    case("min", [], operands=distinct_pair),
    case("atan2", [away_from_zero(0.5, 2.0), away_from_zero(0.5, 2.0)], True),
    case("pow", [POSITIVE, uniform(-2.0, 2.0)], True),
    case("pow_int_exponent", [away_from_zero(0.5, 2.0), lambda rng, dtype, shape: np.array([0, 1, 2], np.int32)],
         True, lambda x, y: lax.pow(x, y), lambda x, y: jlax.pow(x, y)),
    case("clamp", [], operands=clamp_operands),
    case("select_n", [lambda rng, dtype, shape: np.array([0, 2, 1], np.int32), ANY, ANY, ANY], True),
    case("select_bool", [lambda rng, dtype, shape: np.array([True, False, True]), ANY, ANY], True,
         lambda p, x, y: lax.select_n(p, x, y), lambda p, x, y: jlax.select_n(p, x, y)),
]
COMPLEX_CASES = [c for c in CASES if c.complex_ok]
BY_NAME = {c.name: c for c in CASES}


def make_operands(c, rng, dtype, shape=(3,)):
    if c.operands is not None:
        return c.operands(rng, dtype, shape)
    return [make(rng, np.dtype(dtype), shape) for make in c.makers]


def _is_inexact(value):
    return np.issubdtype(np.asarray(value).dtype, np.inexact)


def random_like(rng, value):
    value = np.asarray(value)
    tangent = rng.standard_normal(value.shape)
    if np.iscomplexobj(value):
        tangent = tangent + 1j * rng.standard_normal(value.shape)
    return tangent.astype(value.dtype)


def differentiable_part(c, args):
    """The case's function of its inexact operands only (selectors and integer exponents held fixed)."""
    positions = [i for i, a in enumerate(args) if _is_inexact(a)]

    def split(fn):
        def f(*inexact):
            full = list(args)
            for i, v in zip(positions, inexact):
                full[i] = v
            return fn(*full)
        return f

    return split(c.numax_fn), split(c.jax_fn), [args[i] for i in positions]


# --- finite differences, float64, second order --------------------------------------------------------------
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_check_grads_float64(c, x64, rng):
    f, _, args = differentiable_part(c, make_operands(c, rng, np.float64))
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def check_vjp_complex(f, args, rng):
    """Reverse mode against finite differences with JAX's complex convention (the cotangent map of a
    holomorphic function multiplies by the non-conjugated derivative): for every t and c,
    Re(sum(t * vjp(c))) == Re(sum(jvp(t) * c))."""
    out, pullback = numax.vjp(f, *args)
    tangents = [random_like(rng, a) for a in args]
    cotangent = random_like(rng, out)
    cts = pullback(cotangent)
    numerical = numerical_jvp(f, args, tangents)
    lhs = sum(np.sum(t * np.asarray(ct)).real for t, ct in zip(tangents, cts))
    rhs = np.sum(np.asarray(numerical) * cotangent).real
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("c", COMPLEX_CASES, ids=lambda c: c.name)
def test_check_grads_complex128(c, x64, rng):
    f, _, args = differentiable_part(c, make_operands(c, rng, np.complex128))
    check_grads(f, args, order=2, modes=("fwd",))
    check_vjp_complex(f, args, rng)


# --- against jax, float32 and complex64 -----------------------------------------------------------------------
def _directions(c, dtype, rng):
    """The case's differentiable part (numax's, JAX's), its operands, random tangents and a random cotangent."""
    f, jf, args = differentiable_part(c, make_operands(c, rng, dtype))
    tangents = [random_like(rng, a) for a in args]
    out = jax.eval_shape(jf, *args)
    return f, jf, args, tangents, random_like(rng, np.zeros(out.shape, out.dtype))


def _jvp_and_vjp(api, f):
    """f's output and JVP along the tangents, and its VJP of the cotangent, with `api` numax or jax."""
    return lambda args, tangents, cotangent: (*api.jvp(f, args, tangents), api.vjp(f, *args)[1](cotangent))


# numax's side stays eager: one numax.jit program for the table compiles no faster than its eager primitives (the
# expansions of lgamma, erf_inv... make large programs), and eager float32 is the main path.
@functools.cache
def _expected_from_jax(dtype):
    """JAX's outputs, JVPs and VJPs of every case in `dtype`, from one jax.jit program (eager jax compiles each op
    of each case); each test draws the same operands and directions from its own `rng` (seed 0)."""
    cases = CASES if dtype == np.float32 else COMPLEX_CASES
    directions = [_directions(c, dtype, np.random.default_rng(0)) for c in cases]
    return jit_table([c.name for c in cases], [_jvp_and_vjp(jax, jf) for _, jf, *_ in directions],
                     [tuple(d[2:]) for d in directions])


def compare_with_jax(c, dtype, rng):
    f, _, args, tangents, cotangent = _directions(c, dtype, rng)
    j_out, j_tangent_out, j_cts = _expected_from_jax(dtype)[c.name]
    out, tangent_out = numax.jvp(f, args, tangents)
    tol = 2e-6 * c.tol if dtype == np.float32 else 1e-5 * c.tol
    np.testing.assert_allclose(np.asarray(out), np.asarray(j_out), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(tangent_out), np.asarray(j_tangent_out), rtol=tol, atol=tol)
    assert np.asarray(tangent_out).dtype == np.asarray(j_tangent_out).dtype

    cts = numax.vjp(f, *args)[1](cotangent)
    for ct, j_ct in zip(cts, j_cts, strict=True):
        assert np.asarray(ct).dtype == np.asarray(j_ct).dtype
        np.testing.assert_allclose(np.asarray(ct), np.asarray(j_ct), rtol=tol, atol=tol)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_matches_jax_float32(c, rng):
    compare_with_jax(c, np.float32, rng)


@pytest.mark.parametrize("c", COMPLEX_CASES, ids=lambda c: c.name)
def test_matches_jax_complex64(c, rng):
    compare_with_jax(c, np.complex64, rng)


def test_second_derivatives_match_jax():
    x = np.float32(0.4)
    names = ["tanh", "logistic", "erf_inv", "digamma", "cbrt", "tan"]
    # JAX's side in one jax.jit program (eagerly, each op of each second derivative would compile).
    expected_all = jit_all([jax.grad(jax.grad(BY_NAME[name].jax_fn)) for name in names], [(x,)] * len(names))
    for name, expected in zip(names, expected_all):
        got = numax.grad(numax.grad(BY_NAME[name].numax_fn))(x)
        np.testing.assert_allclose(got, expected, rtol=1e-5, err_msg=name)


# --- conventions at non-differentiable points, against jax --------------------------------------------------------
@functools.cache
def _jax_grad_of_sum(jax_fn, argnums):
    """jax.grad of sum(jax_fn), jitted once per function (one compile per shape, not one per op)."""
    return jax.jit(jax.grad(lambda *a: jnp.sum(jax_fn(*a)), argnums))


def grads_agree(numax_fn, jax_fn, *args, argnums=None):
    argnums = tuple(range(len(args))) if argnums is None else argnums
    axes = tuple(range(np.ndim(args[0])))
    got = numax.grad(lambda *a: lax.reduce_sum(numax_fn(*a), axes), argnums)(*args)
    expected = _jax_grad_of_sum(jax_fn, argnums)(*args)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6, equal_nan=True)
    return got


def test_max_min_ties_split_the_tangent():
    x = np.array([1.0, 2.0, 3.0, -0.0], np.float32)
    y = np.array([1.0, 0.0, 5.0, 0.0], np.float32)
    for name in ["max", "min"]:
        gx, gy = grads_agree(getattr(lax, name), getattr(jlax, name), x, y)
        assert gx[0] == gy[0] == 0.5
    assert numax.grad(lambda v: lax.max(v, v))(np.float32(2.0)) == 1.0


def test_abs_at_zero_follows_jax():
    # JAX's abs'(0) (and at -0) is +1: the x >= 0 branch.
    x = np.array([0.0, -0.0, 1.5, -1.5], np.float32)
    (g,) = grads_agree(lax.abs, jlax.abs, x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0, -1.0])
    z = np.array([0, 3 + 4j, -1j], np.complex64)
    got = numax.vjp(lax.abs, z)[1](np.ones(3, np.float32))[0]
    expected = jax.vjp(jlax.abs, z)[1](np.ones(3, np.float32))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got[0] == 0


@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, 0.5, -1.0, 3.5])
def test_pow_at_zero_base(exponent):
    x = np.array([0.0, 0.0, 2.0], np.float32)
    y = np.full(3, exponent, np.float32)
    grads_agree(lax.pow, jlax.pow, x, y)


def test_pow_integer_exponent_at_zero():
    x = np.array([0.0, 0.0, 0.0, 2.0], np.float32)
    y = np.array([0, 1, 2, -1], np.int32)
    (g,) = grads_agree(lax.pow, jlax.pow, x, y, argnums=(0,))
    np.testing.assert_array_equal(g[:3], [0.0, 1.0, 0.0])


def test_clamp_at_the_bounds():
    low, high = np.full(6, 0.0, np.float32), np.full(6, 1.0, np.float32)
    x = np.array([0.0, 1.0, 0.5, -1.0, 2.0, 1.0], np.float32)
    gl, gx, gh = grads_agree(lax.clamp, jlax.clamp, low, x, high)
    np.testing.assert_array_equal(gx, [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(gl, [0, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(gh, [0, 0, 0, 0, 1, 0])
    # Equal bounds: the upper bound takes the tangent where x is above, the lower one nowhere.
    grads_agree(lax.clamp, jlax.clamp, low, x, low)


def test_clamp_with_scalar_bounds():
    # jax.grad fails on scalar bounds with an array operand; the scalar bound's gradient sums its uses.
    x = np.array([-1.0, 0.5, 2.0, 3.0], np.float32)
    f = lambda lo, v, hi: lax.reduce_sum(lax.clamp(lo, v, hi), (0,))  # noqa: E731
    g_low, g_x, g_high = numax.grad(f, (0, 1, 2))(np.float32(0.0), x, np.float32(1.0))
    assert g_low == 1.0 and g_high == 2.0
    np.testing.assert_array_equal(g_x, [0, 1, 0, 0])


@pytest.mark.parametrize("name", ["sqrt", "rsqrt", "log", "cbrt", "log1p", "atanh", "asin", "acosh", "erf_inv"])
def test_edges_of_domains(name):
    # acosh's domain is [1, inf): at -1 (outside it) the derivative is x^2 - 1 = 0 under rsqrt, which XLA's
    # GPU fusions evaluate differently from its CPU ones, so only the domain's own edge is compared there.
    x = np.array([1.0, 1.5], np.float32) if name == "acosh" else np.array([0.0, -1.0, 1.0], np.float32)
    grads_agree(getattr(lax, name), getattr(jlax, name), x)


def test_rem_and_atan2_special_points():
    x = np.array([5.5, -5.5, 3.0, 0.0], np.float32)
    y = np.array([2.0, 2.0, -1.5, 1.0], np.float32)
    gx, gy = grads_agree(lax.rem, jlax.rem, x, y)
    np.testing.assert_array_equal(gy, [-2.0, 2.0, 2.0, 0.0])  # -trunc(x / y)
    grads_agree(lax.atan2, jlax.atan2, np.zeros(2, np.float32), np.array([0.0, 1.0], np.float32))


def test_integer_pow_zero_and_negative():
    x = np.array([0.0, 2.0], np.float32)
    (g,) = grads_agree(lambda v: lax.integer_pow(v, 0), lambda v: jlax.integer_pow(v, 0), x)
    np.testing.assert_array_equal(g, [0.0, 0.0])
    grads_agree(lambda v: lax.integer_pow(v, -1), lambda v: jlax.integer_pow(v, -1), x)


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "is_finite_mul"])
def test_piecewise_constant_ops_have_zero_gradient(name):
    fn = {"is_finite_mul": lambda v: lax.select(lax.is_finite(v), v, v)}.get(name, getattr(lax, name, None))
    x = np.array([0.3, -1.7, 2.5], np.float32)
    g = numax.grad(lambda v: lax.reduce_sum(fn(v), (0,)))(x)
    np.testing.assert_array_equal(g, [1.0] * 3 if name == "is_finite_mul" else [0.0] * 3)


# --- zero (float0) tangents of integer-valued and boolean outputs ------------------------------------------------
FLOAT_TO_BOOL = ["eq", "ne", "lt", "le", "gt", "ge"]
INTEGER_OPS = [("population_count", 1), ("clz", 1), ("bitwise_not", 1), ("bitwise_and", 2), ("bitwise_or", 2),
               ("bitwise_xor", 2), ("shift_left", 2), ("shift_right_arithmetic", 2), ("shift_right_logical", 2),
               ("add", 2), ("max", 2), ("neg", 1), ("sign", 1), ("abs", 1)]


@pytest.mark.parametrize("name", FLOAT_TO_BOOL + ["is_finite"])
def test_comparisons_give_float0_tangents(name):
    x = np.array([1.0, 2.0, np.inf], np.float32)
    args = (x,) if name == "is_finite" else (x, np.float32(2.0) * np.ones(3, np.float32))
    tangents = tuple(np.ones_like(a) for a in args)
    out, tangent = numax.jvp(getattr(lax, name), args, tangents)
    j_out, j_tangent = jax.jvp(getattr(jlax, name), args, tangents)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(j_out))
    assert np.asarray(tangent).dtype == dtypes.float0 == j_tangent.dtype
    assert np.asarray(tangent).shape == j_tangent.shape


@pytest.mark.parametrize("name,arity", INTEGER_OPS, ids=[n for n, _ in INTEGER_OPS])
def test_integer_ops_give_float0_tangents(name, arity):
    x = np.array([3, 5, 12], np.int32)
    args = (x,) * arity
    tangents = tuple(np.zeros(a.shape, dtypes.float0) for a in args)
    out, tangent = numax.jvp(getattr(lax, name), args, tangents)
    j_out, j_tangent = jax.jvp(getattr(jlax, name), args, tangents)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(j_out))
    assert np.asarray(tangent).dtype == dtypes.float0 == j_tangent.dtype


def test_conversions_to_integers_and_bitcasts_cut_the_gradient():
    x = np.array([1.5, -2.5], np.float32)
    f = lambda v: lax.convert_element_type(lax.convert_element_type(v, np.int32), np.float32) + v  # noqa: E731
    np.testing.assert_array_equal(numax.grad(lambda v: lax.reduce_sum(f(v), (0,)))(x), [1.0, 1.0])
    out, tangent = numax.jvp(lambda v: lax.bitcast_convert_type(v, np.int32), (x,), (x,))
    assert np.asarray(tangent).dtype == dtypes.float0
    _, tangent = numax.jvp(lambda v: lax.bitcast_convert_type(v, np.float32), (x,), (x,))
    np.testing.assert_array_equal(np.asarray(tangent), [0.0, 0.0])


def test_nondifferentiable_primitives_raise():
    with pytest.raises(NotImplementedError, match="nextafter"):
        numax.grad(lambda v: lax.nextafter(v, np.float32(2.0)))(np.float32(1.0))
    with pytest.raises(NotImplementedError, match="order m"):
        numax.grad(lambda m: polygamma(m, np.float32(2.0)))(np.float32(1.0))


def test_polygamma_values_match_jax():
    m = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
    x = np.array([0.5, 1.5, 2.5, 4.0], np.float32)
    np.testing.assert_allclose(polygamma(m, x), jlax.polygamma(m, x), rtol=1e-5)
    np.testing.assert_allclose(numax.jit(polygamma)(m, x), jlax.polygamma(m, x), rtol=1e-5)


# --- transposes of the linear primitives, through grad / vjp ---------------------------------------------------------
def test_select_n_transpose():
    which = np.array([0, 2, 1, 2], np.int32)
    cases = [np.arange(4, dtype=np.float32) + k for k in range(3)]
    ct = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    got = numax.vjp(lambda *cs: lax.select_n(which, *cs), *cases)[1](ct)
    expected = jax.vjp(lambda *cs: jlax.select_n(which, *cs), *cases)[1](ct)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    # A scalar boolean selector, cotangents to one case only.
    got = numax.grad(lambda a: lax.reduce_sum(lax.select_n(np.bool_(True), cases[0], a), (0,)))(cases[1])
    np.testing.assert_array_equal(got, np.ones(4))
    got = numax.grad(lambda a: lax.reduce_sum(lax.select_n(np.bool_(False), cases[0], a), (0,)))(cases[1])
    np.testing.assert_array_equal(got, np.zeros(4))


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("source,target", [(np.float32, np.float16), (np.float32, bf16), (np.float16, np.float32),
                                           (np.float32, np.complex64), (np.complex64, np.float32)])
def test_convert_element_type_transpose(source, target):
    x = (np.array([1.5, -0.25, 3.0]) + (0.5j if np.dtype(source).kind == "c" else 0)).astype(source)
    ct = np.array([1.0, 2.0, -1.0]).astype(target)
    got = numax.vjp(lambda v: lax.convert_element_type(v, target), x)[1](ct)[0]
    expected = jax.vjp(lambda v: jlax.convert_element_type(v, target), x)[1](ct)[0]
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("name", ["real", "imag", "conj", "complex", "conj_of_real"])
def test_complex_part_transposes(name, rng):
    z = (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64)
    r = rng.standard_normal(3).astype(np.float32)
    numax_fn, jax_fn, args = {
        "real": (lax.real, jlax.real, (z,)),
        "imag": (lax.imag, jlax.imag, (z,)),
        "conj": (lax.conj, jlax.conj, (z,)),
        "complex": (lax.complex, jlax.complex, (r, 2 * r)),
        "conj_of_real": (lax.conj, jlax.conj, (r,)),
    }[name]
    out = jax_fn(*args)
    ct = random_like(rng, out)
    got = numax.vjp(numax_fn, *args)[1](ct)
    expected = jax.vjp(jax_fn, *args)[1](ct)
    for g, e in zip(got, expected):
        assert np.asarray(g).dtype == e.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)
    tangents = tuple(random_like(rng, a) for a in args)
    np.testing.assert_allclose(np.asarray(numax.jvp(numax_fn, args, tangents)[1]),
                               np.asarray(jax.jvp(jax_fn, args, tangents)[1]), rtol=1e-6)


def test_div_transposes_in_the_numerator_only():
    x, y = np.array([1.0, 2.0], np.float32), np.array([4.0, -0.5], np.float32)
    f = lambda a: lax.div(lax.mul(a, np.float32(3.0)), y)  # noqa: E731
    np.testing.assert_allclose(numax.vjp(f, x)[1](np.ones(2, np.float32))[0], 3.0 / y, rtol=1e-6)


# --- under jit ----------------------------------------------------------------------------------------------------
def composite(lib):
    def f(x, y):
        a = lib.mul(lib.sin(x), lib.exp(lib.neg(y)))
        b = lib.div(lib.max(x, y), lib.add(lib.integer_pow(y, 2), np.float32(1.0)))
        c = lib.clamp(np.float32(-0.5), lib.tanh(lib.sub(x, y)), np.float32(0.5))
        d = lib.select_n(lib.gt(x, y), lib.sqrt(lib.abs(y)), lib.logistic(x))
        return lib.add(lib.add(a, b), lib.add(c, lib.pow(lib.abs(d), np.float32(1.5))))

    return f


def test_grad_under_jit_and_jit_under_grad(rng):
    x = rng.uniform(-1.5, 1.5, 4).astype(np.float32)
    y = rng.uniform(0.3, 1.5, 4).astype(np.float32)
    f = composite(lax)
    loss = lambda a, b: lax.reduce_sum(f(a, b), (0,))  # noqa: E731
    j_loss = lambda a, b: jnp.sum(composite(jlax)(a, b))  # noqa: E731
    expected = jax.jit(jax.grad(j_loss, (0, 1)))(x, y)
    for fn in [numax.jit(numax.grad(loss, (0, 1))), numax.grad(numax.jit(loss), (0, 1)), numax.grad(loss, (0, 1))]:
        for g, e in zip(fn(x, y), expected):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5, atol=1e-6)
    second = numax.jit(numax.grad(numax.grad(lambda a: lax.mul(lax.erf(a), lax.digamma(lax.add(a, np.float32(2)))))))
    j_second = jax.jit(jax.grad(jax.grad(lambda a: jlax.erf(a) * jlax.digamma(a + 2))))
    np.testing.assert_allclose(second(np.float32(0.3)), j_second(np.float32(0.3)), rtol=1e-5)


def test_jvp_under_jit_matches_jax(rng):
    x = rng.uniform(0.3, 1.5, 4).astype(np.float32)
    t = rng.standard_normal(4).astype(np.float32)
    fn = lambda v: lax.mul(lax.log1p(v), lax.atan2(v, np.float32(1.0) + v))  # noqa: E731
    j_fn = lambda v: jlax.log1p(v) * jlax.atan2(v, np.float32(1.0) + v)  # noqa: E731
    got = numax.jit(lambda v, w: numax.jvp(fn, (v,), (w,)))(x, t)
    expected = jax.jit(lambda v, w: jax.jvp(j_fn, (v,), (w,)))(x, t)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(expected[1]), rtol=2e-6)


# --- broadcasting of rank-0 and size-1 operands ------------------------------------------------------------------
BROADCAST_OPS = {
    "add": (lax.add, jnp.add), "sub": (lax.sub, jnp.subtract), "mul": (lax.mul, jnp.multiply),
    "div": (lax.div, jnp.divide), "max": (lax.max, jnp.maximum), "atan2": (lax.atan2, jnp.arctan2),
    "pow": (lax.pow, jnp.power), "rem": (lax.rem, jnp.fmod), "complex": (lax.complex, jlax.complex),
}


@functools.cache
def _jax_broadcast_grad(name):
    """JAX's gradient for test_grad_wrt_broadcast_scalar, jitted once per op (one compile per shape)."""
    jax_fn = BROADCAST_OPS[name][1]
    return jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.real(jax_fn(a, b)) ** 2), (0, 1)))


# Few examples: every new shape compiles a new set of executables.
@settings(max_examples=10)
@given(name=st.sampled_from(sorted(BROADCAST_OPS)), n=st.integers(1, 3), scalar_first=st.booleans())
def test_grad_wrt_broadcast_scalar(name, n, scalar_first):
    rng = np.random.default_rng(n)
    vector = rng.uniform(0.6, 1.9, n).astype(np.float32)
    scalar = np.float32(1.3)
    args = (scalar, vector) if scalar_first else (vector, scalar)
    numax_fn = BROADCAST_OPS[name][0]
    real_part = (lambda v: lax.real(v)) if name == "complex" else (lambda v: v)
    got = numax.grad(lambda a, b: lax.reduce_sum(real_part(numax_fn(a, b)) ** 2, (0,)), (0, 1))(*args)
    expected = _jax_broadcast_grad(name)(*args)
    for g, e in zip(got, expected):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5)


@settings(max_examples=4)
@given(rows=st.integers(1, 3), cols=st.integers(1, 3))
def test_grad_wrt_size_one_dimensions(rows, cols):
    rng = np.random.default_rng(rows * 4 + cols)
    x = rng.uniform(0.5, 1.5, (rows, 1)).astype(np.float32)
    y = rng.uniform(0.5, 1.5, (1, cols)).astype(np.float32)
    # Jitted: one compile per shape instead of one per primitive.
    got = numax.jit(numax.grad(lambda a, b: lax.reduce_sum(lax.mul(lax.sin(a), lax.div(b, a)), (0, 1)), (0, 1)))(x, y)
    expected = jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.sin(a) * (b / a)), (0, 1)))(x, y)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5)
