"""numax.numpy's elementwise functions against jax.numpy: values, dtypes and weak types.

For each function: which dtypes it accepts (abstract evaluation, nothing compiled) must match jax.numpy;
the accepted dtypes run in one numax.jit program and one jax.jit program; float32 and int32 also run
eagerly. Python-scalar operands check weak-type promotion; operators and their reflected forms run
against jax arrays.
"""

import operator

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close
from oracle import jit_all

import numax
import numax.numpy as xnp
from numax.numpy import _ufuncs

bf16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16, bf16, np.float32, np.complex64)]
EAGER_DTYPES = [np.dtype(np.float32), np.dtype(np.int32)]


def sample(dtype, reverse=False):
    """Eight values of `dtype` incl. zeros, negatives (where representable) and, for floats, nan and inf."""
    if dtype == np.bool_:
        values = np.array([True, False, True, True, False, False, True, False])
    elif dtype.kind == "u":
        values = np.array([0, 1, 2, 5, 7, 3, 9, 4], dtype)
    elif dtype.kind == "i":
        values = np.array([-3, 0, 1, 2, -5, 7, 3, -1], dtype)
    elif dtype.kind == "c":
        values = np.array([1 + 1j, -2j, 0, 0.5, -1.5 + 2j, 3, np.nan, -0.25 - 0.75j], dtype)
    else:
        values = np.array([-1.5, 0, 0.5, 2.5, -0.0, 3, np.nan, np.inf], dtype)
    return values[::-1].copy() if reverse else values


UNARY = sorted(n for n in ("abs absolute arccos arccosh arcsin arcsinh arctan arctanh around acos acosh asin asinh "
                           "atan atanh bitwise_invert bitwise_not cbrt ceil conj conjugate cos cosh deg2rad degrees "
                           "exp exp2 expm1 fix floor imag invert isfinite isinf isnan isneginf isposinf log log10 "
                           "log1p log2 logical_not negative positive rad2deg radians real reciprocal rint round sign "
                           "signbit sin sinc sinh sqrt square tan tanh trunc angle modf iscomplex isreal").split())
BINARY = sorted(("add arctan2 atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor "
                 "copysign divide divmod equal float_power floor_divide fmax fmin fmod greater greater_equal "
                 "heaviside hypot left_shift less less_equal logaddexp logaddexp2 logical_and logical_or "
                 "logical_xor maximum minimum mod multiply nextafter not_equal power pow remainder right_shift "
                 "subtract true_divide isclose gcd lcm").split())
SCALE = {"sinc": 4, "logaddexp2": 4, "float_power": 4, "power": 4, "pow": 4, "arccosh": 4, "acosh": 4}


def test_every_exported_ufunc_is_tested():
    exported = {n for n in dir(_ufuncs) if not n.startswith("_") and callable(getattr(_ufuncs, n))
                and getattr(xnp, n, None) is getattr(_ufuncs, n)}
    assert exported - set(UNARY) - set(BINARY) - {"ldexp", "frexp"} == set()  # those two: test_ldexp_and_frexp


def _accepts(fn, *structs):
    try:
        return fn(*structs)
    except (TypeError, ValueError):
        return None


def _outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def check_same(got, want, name, scale=1.0):
    for g, w in zip(_outputs(got), _outputs(want)):
        assert isinstance(g, numax.Array), (name, type(g))
        assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type), (name, g, w)
        assert_close(g, np.asarray(w), scale=scale)


def run_table(name, arity, operand_sets):
    """`operand_sets`: argument lists (numpy arrays or Python scalars). Acceptance must agree with jnp;
    accepted ones run under both jits together and (for the eager dtypes) one by one."""
    # jax.numpy.fix is deprecated in favour of trunc, which computes the same.
    fn, jfn = getattr(xnp, name), getattr(jnp, "trunc" if name == "fix" else name)
    accepted = []
    for args in operand_sets:
        structs = [a if not isinstance(a, np.ndarray) else jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
        nstructs = [a if not isinstance(a, np.ndarray) else numax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
        jax_out = _accepts(lambda *s: jax.eval_shape(jfn, *s), *structs)
        numax_out = _accepts(lambda *s: numax.eval_shape(fn, *s), *nstructs)
        assert (jax_out is None) == (numax_out is None), (name, [getattr(a, "dtype", a) for a in args], jax_out)
        if jax_out is not None:
            accepted.append(args)
    if not accepted:
        return
    want = jax.jit(lambda sets: [jfn(*args) for args in sets])(accepted)
    got = numax.jit(lambda sets: [fn(*args) for args in sets])(accepted)
    for args, g, w in zip(accepted, got, want):
        check_same(g, w, name, SCALE.get(name, 1.0))
        if all(not isinstance(a, np.ndarray) or a.dtype in EAGER_DTYPES for a in args):
            check_same(fn(*args), w, name, SCALE.get(name, 1.0))


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_jnp(name):
    run_table(name, 1, [[sample(d)] for d in DTYPES] + [[2], [1.5]])


# Known gaps: heaviside's weak type differs from jax.numpy's for mixed bool-scalar/array operands, and
# logaddexp2 of two weak operands is strongly typed.
KNOWN_GAPS = {"logaddexp2", "heaviside"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="known gap"))
                                  if n in KNOWN_GAPS else n for n in BINARY])
def test_binary_matches_jnp(name):
    sets = [[sample(d), sample(d, reverse=True)] for d in DTYPES]
    # Python scalars on either side promote weakly; mixed array dtypes promote as in JAX.
    for d, scalars in ((np.dtype(np.int32), (2, 1.5, True)), (bf16, (2,))):
        for scalar in scalars:
            sets += [[sample(d), scalar], [scalar, sample(d, reverse=True)]]
    sets += [[2, 3.5], [sample(np.dtype(np.int8)), sample(np.dtype(np.uint8))],
             [sample(np.dtype(np.int32)), sample(np.dtype(np.float16))],
             [sample(bf16), sample(np.dtype(np.float16))]]
    run_table(name, 2, sets)


def test_binary_broadcasting():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    for y in (np.array([1.0, -2.0, 3.0], np.float32), np.ones((2, 1), np.float32), np.float32(2), 2):
        for name in ("add", "arctan2", "fmax", "heaviside", "logaddexp", "copysign", "remainder", "power", "less"):
            check_same(getattr(xnp, name)(x, y), getattr(jnp, name)(x, y), name)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):  # (jax's class)
        xnp.add(np.ones((2, 3)), np.ones((4,)))


def test_integer_division_and_remainder_by_zero_match_jnp():
    x = np.array([-5, 5, 0, 7, -8], np.int32)
    y = np.array([0, 0, 0, -2, 3], np.int32)
    for name in ("floor_divide", "remainder", "fmod", "divmod"):
        check_same(getattr(xnp, name)(x, y), getattr(jnp, name)(x, y), name)
    u = np.array([5, 0, 9], np.uint8)
    for name in ("floor_divide", "remainder"):
        check_same(getattr(xnp, name)(u, np.zeros(3, np.uint8)), getattr(jnp, name)(u, np.zeros(3, np.uint8)), name)


def test_integer_power_matches_jnp():
    base = np.array([-3, 0, 1, 2, -5, 7, 3, 0, 2], np.int32)
    exponent = np.array([7, -5, 2, 1, 0, -3, 40, 0, 31], np.int32)
    check_same(xnp.power(base, exponent), jnp.power(base, exponent), "power")
    check_same(xnp.power(base, 3), jnp.power(base, 3), "power")
    with pytest.raises(TypeError, match="cannot be raised to negative powers"):  # as jnp (numpy: ValueError)
        xnp.power(base, -1)
    with pytest.raises(TypeError, match="cannot be raised to negative powers"):
        jnp.power(base, -1)


def test_ldexp_and_frexp():
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
        x = np.array([1.5, 1e-3, 3, -2, 0.5, 0.0, np.inf, np.nan], dtype)
        k = np.array([3, 20, -5, 60, -30, 4, 1, 2], np.int32)
        check_same(xnp.ldexp(x, k), jnp.ldexp(x, k), "ldexp")
        mantissa, exponent = xnp.frexp(x)
        jmantissa, jexponent = jnp.frexp(x)
        check_same(mantissa, jmantissa, "frexp")
        check_same(exponent, jexponent, "frexp")
    check_same(xnp.ldexp(np.arange(3), np.int32(2)), jnp.ldexp(np.arange(3), np.int32(2)), "ldexp")
    with pytest.raises(ValueError, match="integer"):  # jax.numpy's ValueError
        xnp.ldexp(np.ones(2, np.float32), np.ones(2, np.float32))


def test_gcd_lcm_worst_cases():
    a = np.array([12, -18, 0, 7, 0, 1836311903, -2147483647], np.int32)
    b = np.array([8, 12, 5, 0, 0, 1134903170, 3], np.int32)
    check_same(xnp.gcd(a, b), jnp.gcd(a, b), "gcd")
    check_same(xnp.lcm(a[:5], b[:5]), jnp.lcm(a[:5], b[:5]), "lcm")
    check_same(xnp.gcd(np.array([233, 144], np.uint8), np.uint8(89)), jnp.gcd(np.array([233, 144], np.uint8),
                                                                              np.uint8(89)), "gcd")


def test_round_decimals():
    x = np.array([1.25, -2.675, 0.5, 1234.5678, 15.0], np.float32)
    for decimals in (0, 1, 2, -1):
        check_same(xnp.round(x, decimals), jnp.round(x, decimals), "round")
    i = np.array([15, -25, 123], np.int32)
    check_same(xnp.round(i, 0), jnp.round(i, 0), "round")
    with pytest.raises(TypeError):
        xnp.round(x, 1.5)


# --- operators ----------------------------------------------------------------------------------------------
BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                    operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
                    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def _operator_accepts(op, a, b):
    try:
        return op(a, b)
    except (TypeError, ValueError):
        return None


def _jax_operation(op, values, other, reflected):
    """op on jax's side as (function, arguments). numpy operands are arguments: closed over, XLA would fold
    them as constants (and, for one, turn False / 0.0 into 0); Python scalars stay Python scalars."""
    if isinstance(other, (bool, int, float)):
        return (lambda a: op(other, a)) if reflected else (lambda a: op(a, other)), (values,)
    return (lambda a, b: op(b, a)) if reflected else op, (values, other)


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda op: op.__name__)
def test_operators_and_reflected_forms(op):
    # numax's operators run eagerly on numax arrays; jax's acceptance comes from abstract evaluation and its
    # values from one jax.jit program for all the accepted operand pairs.
    arrays = {d: sample(np.dtype(d)) for d in (np.int32, np.float32, np.bool_)}
    others = [3, 1.5, True, np.int32(2), np.array([2, 1, 3, 1, 2, 1, 2, 1], np.uint8), sample(np.dtype(np.float16))]
    accepted = []  # (what, numax result, jax function, its arguments)
    for dtype, values in arrays.items():
        x = xnp.asarray(values)
        for other in others:
            if op is operator.pow and (np.asarray(other).dtype.kind in "iu" or type(other) is int) and \
                    values.dtype.kind in "iu":
                other = np.abs(np.asarray(other)) if not isinstance(other, int) else abs(other)
            for reflected, (left, right) in enumerate(((x, other), (other, x))):
                jax_fn, jax_args = _jax_operation(op, values, other, reflected)
                want = _operator_accepts(lambda f, a: jax.eval_shape(f, *a), jax_fn, jax_args)
                got = _operator_accepts(op, left, right)
                assert (want is None) == (got is None), (op, dtype, other, want, got)
                if want is not None:
                    accepted.append(((op.__name__, dtype, other, "reflected" * reflected), got, jax_fn, jax_args))
    wants = jit_all([fn for _, _, fn, _ in accepted], [args for *_, args in accepted])
    for (what, got, _, _), want in zip(accepted, wants, strict=True):
        check_same(got, want, what)


def test_unary_operators_and_matmul():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    i = np.arange(6, dtype=np.int32) - 2
    check_same(-xnp.asarray(x), -jnp.asarray(x), "neg")
    check_same(+xnp.asarray(x), +jnp.asarray(x), "pos")
    check_same(abs(xnp.asarray(x)), abs(jnp.asarray(x)), "abs")
    check_same(~xnp.asarray(i), ~jnp.asarray(i), "invert")
    check_same(~xnp.asarray(i > 0), ~jnp.asarray(i > 0), "invert")
    check_same(xnp.asarray(x) @ x.T, jnp.asarray(x) @ x.T, "matmul")
    check_same(x @ xnp.asarray(x.T), x @ jnp.asarray(x.T), "rmatmul")
    q, r = divmod(xnp.asarray(i), 3)
    jq, jr = divmod(jnp.asarray(i), 3)
    check_same(q, jq, "divmod")
    check_same(r, jr, "divmod")
    weak = xnp.asarray(2.0)
    assert weak.weak_type and (weak * 3).weak_type and not (weak * np.float32(3)).weak_type


def test_numpy_array_on_the_left_defers_to_numax():
    x = np.arange(3, dtype=np.float32)
    out = x + xnp.asarray(np.ones(3, np.float32))
    assert isinstance(out, numax.Array)
    np.testing.assert_array_equal(np.asarray(out), x + 1)


# --- where jax releases differ: numax follows the release matching its jaxlib -------------------------------
def test_jax_semantics_is_the_installed_jaxlib_release():
    import jaxlib

    installed = tuple(int(part) for part in jaxlib.__version__.split(".")[:3])
    assert numax.config.jax_semantics == installed
    with pytest.raises(AttributeError, match="unknown numax config option"):
        numax.config.update("jax_semantics", (0, 10, 2))


@pytest.fixture
def semantics():
    """Sets numax.config.jax_semantics for one test, restoring the installed release's afterwards."""
    installed = numax.config.jax_semantics
    yield numax.config.set_jax_semantics
    numax.config.set_jax_semantics(installed)


def test_sinc_of_infinities_follows_the_jax_series(semantics):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, 1.5], np.float32)
    z = np.array([complex(np.inf, 2), complex(-np.inf, 0), complex(1, np.inf), complex(np.inf, np.nan), 0],
                 np.complex64)
    for version, at_inf in (((0, 10, 2), np.nan), ((0, 11, 0), np.nan), ((0, 11, 1), 0.0), ((0, 12, 0), 0.0)):
        semantics(version)
        for result in (xnp.sinc(x), numax.jit(lambda v: xnp.sinc(v))(x)):
            np.testing.assert_array_equal(np.asarray(result), [at_inf, at_inf, np.nan, 1.0, np.sinc(np.float32(1.5))])
        for result in (xnp.sinc(z), numax.jit(lambda v: xnp.sinc(v))(z)):
            # Only a real part of +-inf with a finite imaginary part has the limit 0.
            np.testing.assert_array_equal(np.isnan(np.asarray(result)), [at_inf != 0, at_inf != 0, True, True, False])
            if at_inf == 0:
                np.testing.assert_array_equal(np.asarray(result)[:2], [0, 0])
        assert np.isnan(float(xnp.sinc(np.array(np.inf, bf16)))) == (at_inf != 0)


def test_log2_weak_type_follows_the_jax_series(semantics):
    for version, weak in (((0, 10, 2), False), ((0, 11, 0), False), ((0, 11, 1), True), ((0, 12, 0), True)):
        semantics(version)
        for scalar in (2, 1.5, 2 + 0j):
            for result in (xnp.log2(scalar), numax.jit(lambda v: xnp.log2(v))(scalar)):
                assert result.weak_type == weak, (version, scalar)
                np.testing.assert_allclose(complex(result), np.log2(complex(scalar)), rtol=1e-6)
        # Typed inputs stay strong in every release; log10 divides by a strong constant in every release.
        assert not xnp.log2(np.float32(2)).weak_type and not xnp.log10(2).weak_type
        for dtype in (np.float32, np.float16, bf16):
            for result in (xnp.log2(np.array([0.25, 8.0, 0.0], dtype)),
                           numax.jit(lambda v: xnp.log2(v))(np.array([0.25, 8.0, 0.0], dtype))):
                assert result.dtype == dtype and not result.weak_type
                np.testing.assert_array_equal(np.asarray(result, np.float32), [-2, 3, -np.inf])
