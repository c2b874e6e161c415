"""Elementwise lax primitives against jax.lax: one table of cases, each checked under jit and eagerly.

Every case runs the numax primitive and the jax.lax one on the same inputs (random values of the
case's domain plus edge values: nan, +-inf, -0.0, integer extremes) for every dtype the op accepts,
and compares values, dtypes and weak types: every dtype under jit, the case's main dtype eagerly too (an
eager call compiles one program per primitive and dtype; eager dispatch over dtypes is checked by
test_select_and_bool_select_n_dtypes, test_binary_ops_broadcast_like_jax and tests/test_eager_fast_paths.py).
jax's expected values come from one jax.jit program per table (see tests/oracle.py). Dtype acceptance is
compared with jax for every op and dtype without compiling anything.
"""

import collections
import functools

import jax
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close, rand
from hypothesis import given
from hypothesis import strategies as st
from jax import lax as jlax
from oracle import jit_all, jit_table

import numax
from numax import lax

bf16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), bf16]
COMPLEX = [np.dtype(np.complex64)]
SIGNED = [np.dtype(np.int8), np.dtype(np.int32)]
UNSIGNED = [np.dtype(np.uint8), np.dtype(np.uint32)]
INTS = SIGNED + UNSIGNED
BOOL = [np.dtype(np.bool_)]
INEXACT = FLOATS + COMPLEX
REAL = INTS + FLOATS
NUMERIC = INTS + FLOATS + COMPLEX
ALL = BOOL + NUMERIC
ORDERED = BOOL + INTS + FLOATS
SIGNED_NUMERIC = SIGNED + FLOATS + COMPLEX

N_RANDOM = 12


def _edge_values(dtype):
    if dtype in FLOATS:
        return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5], dtype)
    if dtype in COMPLEX:
        return np.array([0, -0.0 + 0j, 1j, -1, np.nan, complex(np.inf, 0), complex(0, -np.inf), 0.5 - 0.5j], dtype)
    if dtype == np.bool_:
        return np.array([True, False, True, False])
    info = np.iinfo(dtype)
    return np.array([0, 1, info.max, info.min, info.max - 1, info.min + 1, 2, 7], dtype)


def make_input(rng, dtype, domain, edges=True):
    """N_RANDOM values of `dtype` in `domain` (float bounds; integers scaled) followed by edge values."""
    low, high = domain
    if dtype == np.bool_:
        values = rng.random(N_RANDOM) < 0.5
    elif dtype in INTS:
        info = np.iinfo(dtype)
        lo, hi = max(info.min, int(np.floor(low * 10))), min(info.max, int(np.ceil(high * 10)))
        values = rng.integers(lo, hi + 1, size=N_RANDOM).astype(dtype)
    elif dtype in COMPLEX:
        values = (rng.uniform(low, high, N_RANDOM) + 1j * rng.uniform(low, high, N_RANDOM)).astype(dtype)
    else:
        values = rng.uniform(low, high, N_RANDOM).astype(dtype)
    if not edges:
        return values
    return np.concatenate([values, _edge_values(dtype)])


Case = collections.namedtuple("Case", "name numax_fn jax_fn arity dtypes domain edges scale inputs")


def case(name, numax_fn, jax_fn, arity, dtypes, domain=(-3.0, 3.0), edges=True, scale=1.0, inputs=None):
    """`inputs(rng, dtype)` overrides the generated operands (a list of numpy arrays)."""
    return Case(name, numax_fn, jax_fn, arity, tuple(dtypes), domain, edges, scale, inputs)


def same(name, arity, dtypes, **kwargs):
    """A case whose numax and jax functions share `name` in their lax modules."""
    return case(name, getattr(lax, name), getattr(jlax, name), arity, dtypes, **kwargs)


def _shift_inputs(rng, dtype):
    # Shift amounts cover negative values and amounts at or beyond the bit width.
    bits = dtype.itemsize * 8
    x = make_input(rng, dtype, (-3, 3))
    amounts = np.array([-1, 0, 1, 3, bits - 1, bits, bits + 1, 2 * bits] * 3, np.int64)[:len(x)]
    return [x, amounts.astype(dtype) if dtype in SIGNED or bits > 8 else np.clip(amounts, 0, 255).astype(dtype)]


def _pow_int_exponent_inputs(rng, dtype):
    x = make_input(rng, dtype, (0.1, 3))
    return [x, rng.integers(-4, 5, size=len(x)).astype(np.int32)]


def _nextafter_inputs(rng, dtype):
    x = make_input(rng, dtype, (-3, 3))
    y = np.concatenate([make_input(rng, dtype, (-3, 3), edges=False), _edge_values(dtype)[::-1]])
    y[:3] = x[:3]
    return [x, y]


def _complex_inputs(rng, dtype):
    return [make_input(rng, dtype, (-3, 3)), make_input(rng, dtype, (-3, 3))[::-1].copy()]


ROUND_AFZ, ROUND_EVEN = lax.RoundingMethod.AWAY_FROM_ZERO, lax.RoundingMethod.TO_NEAREST_EVEN
J_AFZ, J_EVEN = jlax.RoundingMethod.AWAY_FROM_ZERO, jlax.RoundingMethod.TO_NEAREST_EVEN

CASES = [
    # binary arithmetic
    same("add", 2, NUMERIC),
    same("sub", 2, NUMERIC),
    same("mul", 2, NUMERIC),
    same("div", 2, NUMERIC),
    same("rem", 2, REAL),
    same("pow", 2, INEXACT, domain=(0.1, 3.0)),
    case("pow_int_exponent", lax.pow, jlax.pow, 2, INEXACT, inputs=_pow_int_exponent_inputs),
    same("max", 2, ALL),
    same("min", 2, ALL),
    same("atan2", 2, INEXACT),
    case("nextafter", lax.nextafter, jlax.nextafter, 2, FLOATS, inputs=_nextafter_inputs),
    case("complex", lax.complex, jlax.complex, 2, [np.dtype(np.float32)]),
    # integer_pow with several exponents
    case("integer_pow_0", lambda x: lax.integer_pow(x, 0), lambda x: jlax.integer_pow(x, 0), 1, NUMERIC),
    case("integer_pow_3", lambda x: lax.integer_pow(x, 3), lambda x: jlax.integer_pow(x, 3), 1, NUMERIC),
    case("integer_pow_7", lambda x: lax.integer_pow(x, 7), lambda x: jlax.integer_pow(x, 7), 1, NUMERIC,
         domain=(-1.5, 1.5), scale=4),
    case("integer_pow_-2", lambda x: lax.integer_pow(x, -2), lambda x: jlax.integer_pow(x, -2), 1, INEXACT),
    # unary arithmetic and rounding
    same("neg", 1, NUMERIC),
    same("sign", 1, NUMERIC),
    same("floor", 1, FLOATS),
    same("ceil", 1, FLOATS),
    case("round_away_from_zero", lambda x: lax.round(x, ROUND_AFZ), lambda x: jlax.round(x, J_AFZ), 1, FLOATS,
         inputs=lambda rng, dtype: [np.concatenate([np.arange(-3.5, 4, 0.5), _edge_values(dtype)]).astype(dtype)]),
    case("round_to_nearest_even", lambda x: lax.round(x, ROUND_EVEN), lambda x: jlax.round(x, J_EVEN), 1, FLOATS,
         inputs=lambda rng, dtype: [np.concatenate([np.arange(-3.5, 4, 0.5), _edge_values(dtype)]).astype(dtype)]),
    same("abs", 1, SIGNED_NUMERIC),
    same("is_finite", 1, FLOATS),
    # transcendental
    same("exp", 1, INEXACT),
    same("exp2", 1, INEXACT),
    same("expm1", 1, INEXACT),
    same("log", 1, INEXACT, domain=(-0.5, 4.0)),
    same("log1p", 1, INEXACT, domain=(-1.5, 4.0)),
    same("sqrt", 1, INEXACT, domain=(-1.0, 5.0)),
    same("rsqrt", 1, INEXACT, domain=(-1.0, 5.0)),
    same("cbrt", 1, FLOATS),
    same("tanh", 1, INEXACT),
    same("logistic", 1, INEXACT),
    same("sin", 1, INEXACT),
    same("cos", 1, INEXACT),
    same("tan", 1, INEXACT, domain=(-1.4, 1.4)),
    same("asin", 1, INEXACT, domain=(-1.2, 1.2)),
    same("acos", 1, INEXACT, domain=(-1.2, 1.2)),
    same("atan", 1, INEXACT),
    same("sinh", 1, INEXACT),
    same("cosh", 1, INEXACT),
    same("asinh", 1, INEXACT),
    same("acosh", 1, INEXACT, domain=(0.5, 4.0)),
    same("atanh", 1, INEXACT, domain=(-1.2, 1.2)),
    same("erf", 1, FLOATS),
    same("erfc", 1, FLOATS),
    same("erf_inv", 1, FLOATS, domain=(-1.1, 1.1), scale=2),
    same("lgamma", 1, FLOATS, domain=(-4.0, 6.0), scale=4),
    same("digamma", 1, FLOATS, domain=(-4.0, 6.0), scale=10),
    # comparisons
    same("eq", 2, ALL),
    same("ne", 2, ALL),
    same("lt", 2, ORDERED),
    same("le", 2, ORDERED),
    same("gt", 2, ORDERED),
    same("ge", 2, ORDERED),
    # logic and bits
    same("bitwise_and", 2, BOOL + INTS),
    same("bitwise_or", 2, BOOL + INTS),
    same("bitwise_xor", 2, BOOL + INTS),
    same("bitwise_not", 1, BOOL + INTS),
    case("shift_left", lax.shift_left, jlax.shift_left, 2, INTS, inputs=_shift_inputs),
    case("shift_right_arithmetic", lax.shift_right_arithmetic, jlax.shift_right_arithmetic, 2, INTS,
         inputs=_shift_inputs),
    case("shift_right_logical", lax.shift_right_logical, jlax.shift_right_logical, 2, INTS, inputs=_shift_inputs),
    same("population_count", 1, INTS),
    same("clz", 1, INTS),
    # complex parts
    same("real", 1, COMPLEX),
    same("imag", 1, COMPLEX),
    same("conj", 1, COMPLEX + [np.dtype(np.float32)]),
    # precision
    case("reduce_precision_5_10", lambda x: lax.reduce_precision(x, 5, 10),
         lambda x: jlax.reduce_precision(x, 5, 10), 1, FLOATS, domain=(-1e5, 1e5)),
    case("reduce_precision_8_7", lambda x: lax.reduce_precision(x, 8, 7),
         lambda x: jlax.reduce_precision(x, 8, 7), 1, FLOATS, domain=(-1e5, 1e5)),
    case("reduce_precision_3_2", lambda x: lax.reduce_precision(x, 3, 2),
         lambda x: jlax.reduce_precision(x, 3, 2), 1, FLOATS),
    # clamping and selection (operands built by `inputs`)
    case("clamp_scalar_bounds", lambda x: lax.clamp(np.asarray(1, x.dtype), x, np.asarray(5, x.dtype)),
         lambda x: jlax.clamp(np.asarray(1, x.dtype), x, np.asarray(5, x.dtype)), 1, REAL),
    case("clamp_array_bounds", lax.clamp, jlax.clamp, 3, REAL,
         inputs=lambda rng, dtype: [make_input(rng, dtype, (-3, 0)), make_input(rng, dtype, (-3, 3)),
                                    make_input(rng, dtype, (0, 3))]),
]

CASE_IDS = [c.name for c in CASES]


def _operands(rng, c, dtype):
    if c.inputs is not None:
        return [np.asarray(v) for v in c.inputs(rng, dtype)]
    first = make_input(rng, dtype, c.domain, c.edges)
    others = [np.concatenate([make_input(rng, dtype, c.domain, edges=False), _edge_values(dtype)[::-1]])
              for _ in range(c.arity - 1)]
    return [first] + others


def assert_matches(actual, expected, dtype, scale=1.0):
    """Values within the dtype's tolerance (nan where jax has nan), equal dtype and weak type."""
    assert isinstance(actual, numax.Array), type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.weak_type == expected.weak_type, (actual.weak_type, expected.weak_type)
    assert_close(actual, np.asarray(expected), dtype=expected.dtype, scale=scale)


def _case_operands(rng, c):
    """The operand list of every dtype of case `c`, in `c.dtypes` order."""
    return [_operands(rng, c, dtype) for dtype in c.dtypes]


def _all_dtypes(fn):
    return lambda operand_lists: [fn(*ops) for ops in operand_lists]


def _eager_dtype(c):
    """The dtype a case is also checked eagerly on: float32 where the case takes it, else its first dtype."""
    return np.dtype(np.float32) if np.dtype(np.float32) in c.dtypes else c.dtypes[0]


@functools.cache
def _expected_cases():
    """jax's results for every case and dtype from one jax.jit program; the operands are those each test draws
    from its `rng` fixture (a fresh default_rng(0))."""
    return jit_table(CASE_IDS, [_all_dtypes(c.jax_fn) for c in CASES],
                     [(_case_operands(np.random.default_rng(0), c),) for c in CASES])


@pytest.mark.parametrize("c", CASES, ids=CASE_IDS)
def test_elementwise_matches_jax(c, rng):
    """All dtypes in one numax.jit program; the main dtype eagerly as well."""
    lists = _case_operands(rng, c)
    traced = numax.jit(_all_dtypes(c.numax_fn))(lists)
    for dtype, operands, want, got_jit in zip(c.dtypes, lists, _expected_cases()[c.name], traced, strict=True):
        assert_matches(got_jit, want, dtype, c.scale)
        if dtype == _eager_dtype(c):
            assert_matches(c.numax_fn(*operands), want, dtype, c.scale)


# --- dtype acceptance and errors -------------------------------------------------------------------------
ACCEPTANCE_DTYPES = BOOL + INTS + FLOATS + COMPLEX + [np.dtype(np.int16), np.dtype(np.uint16)]
UNARY_NAMES = ["neg", "sign", "floor", "ceil", "abs", "exp", "exp2", "expm1", "log", "log1p", "sqrt", "rsqrt",
               "cbrt", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
               "acosh", "atanh", "erf", "erfc", "erf_inv", "lgamma", "digamma", "is_finite", "population_count",
               "clz", "real", "imag", "conj", "bitwise_not", "round"]
BINARY_NAMES = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "eq", "ne", "lt",
                "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                "shift_right_arithmetic", "shift_right_logical", "complex"]


def _accepts(fn, structs):
    try:
        return fn(*structs)
    except TypeError:
        return None


@pytest.mark.parametrize("name", UNARY_NAMES + BINARY_NAMES)
def test_dtype_acceptance_and_result_dtype_match_jax(name):
    arity = 1 if name in UNARY_NAMES else 2
    for dtype in ACCEPTANCE_DTYPES:
        jax_out = _accepts(lambda *s: jax.eval_shape(getattr(jlax, name), *s),
                           [jax.ShapeDtypeStruct((2, 3), dtype)] * arity)
        numax_out = _accepts(lambda *s: numax.eval_shape(getattr(lax, name), *s),
                             [numax.ShapeDtypeStruct((2, 3), dtype)] * arity)
        assert (jax_out is None) == (numax_out is None), (name, dtype, jax_out, numax_out)
        if jax_out is not None:
            assert (numax_out.shape, numax_out.dtype) == (jax_out.shape, jax_out.dtype), (name, dtype)


@pytest.mark.parametrize("fn, args, message", [
    (lax.sin, [np.ones(3, np.int32)], "sin does not accept dtype int32"),
    (lax.floor, [np.ones(3, np.complex64)], "floor does not accept dtype complex64"),
    (lax.bitwise_and, [np.ones(3, np.float32), np.ones(3, np.float32)], "and does not accept dtype float32"),
    (lax.add, [np.ones(3, np.float32), np.ones(3, np.int32)], "add requires arguments of the same dtype"),
    (lax.add, [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)], "add got incompatible shapes"),
    (lax.mul, [np.ones((2, 3), np.float32), np.ones((3,), np.float32)], "mul requires arguments of equal rank"),
    (lax.lt, [np.ones(3, np.complex64), np.ones(3, np.complex64)], "lt does not accept dtype complex64"),
    (lax.abs, [np.ones(3, np.uint8)], "abs does not accept dtype uint8"),
    (lambda x: lax.integer_pow(x, -1), [np.ones(3, np.int32)], "integers cannot be raised to negative powers"),
    (lambda w, a, b, c: lax.select_n(w, a, b, c), [np.ones(3, bool)] + [np.ones(3, np.float32)] * 3,
     "boolean selector takes at most 2 cases"),
    (lambda w, a: lax.select_n(w, a), [np.ones(3, np.float32), np.ones(3, np.float32)],
     "selector must be boolean or integer"),
    (lambda w, a, b: lax.select_n(w, a, b), [np.ones(3, bool), np.ones(3, np.float32), np.ones(3, np.int32)],
     "select_n requires arguments of the same dtype"),
    (lambda w, a, b: lax.select_n(w, a, b), [np.ones(2, bool), np.ones(3, np.float32), np.ones(3, np.float32)],
     "select_n selector shape"),
    (lambda x: lax.clamp(np.float32(0), x, np.ones(4, np.float32)), [np.ones(3, np.float32)],
     "clamp bounds must be scalars"),
    (lambda x: lax.bitcast_convert_type(x, np.int32), [np.ones(3, np.bool_)], "bitcast_convert_type does not accept"),
    (lambda x: lax.bitcast_convert_type(x, np.float32), [np.ones((3, 2), np.uint8)], "needs a last dimension of 4"),
    (lambda x, y: lax.complex(x, y), [np.ones(3, np.float16)] * 2, "complex does not accept dtype float16"),
])
def test_errors(fn, args, message):
    with pytest.raises(TypeError, match=message):
        fn(*args)
    with pytest.raises(TypeError, match=message):
        numax.jit(fn)(*args)


# --- select_n ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("selector_dtype, ncases", [
    (np.bool_, 1), (np.bool_, 2), (np.int32, 1), (np.int32, 2), (np.int32, 3), (np.int32, 4), (np.uint8, 3),
])
def test_select_n(rng, selector_dtype, ncases):
    shape = (3, 4)
    if selector_dtype == np.bool_:
        which = rng.random(shape) < 0.5
        if ncases == 1:
            which = np.zeros(shape, bool)
    else:
        which = rng.integers(0, ncases, shape).astype(selector_dtype)
    cases = [rand_cases(rng, shape, i) for i in range(ncases)]
    expected = np.choose(which.astype(np.int32), cases)
    for fn in (lax.select_n, numax.jit(lax.select_n)):
        assert_close(fn(which, *cases), expected)
        # A scalar selector picks whole cases.
        assert_close(fn(which.flat[0], *cases), cases[int(which.flat[0])])
    if selector_dtype != np.uint8:
        assert_close(lax.select_n(which, *cases), jlax.select_n(which, *cases))


def rand_cases(rng, shape, i):
    return (rng.standard_normal(shape) + 10 * i).astype(np.float32)


def test_select_and_bool_select_n_dtypes(rng):
    pred = np.array([True, False, True])
    for dtype in ALL:
        a, b = make_input(rng, dtype, (-3, 3))[:3], make_input(rng, dtype, (-3, 3))[3:6]
        got = lax.select(pred, a, b)
        assert got.dtype == dtype
        np.testing.assert_array_equal(np.asarray(got), np.where(pred, a, b))


# --- conversions ---------------------------------------------------------------------------------------------
CONVERT_DTYPES = BOOL + INTS + [np.dtype(np.int16)] + FLOATS + COMPLEX


def _convert_source(dtype):
    """Values every target dtype can hold, so all conversions are well defined (plus bool-relevant zeros)."""
    if dtype == np.bool_:
        return np.array([True, False, True, False, False, True])
    if dtype in INTS or dtype == np.int16:
        signed = np.issubdtype(dtype, np.signedinteger)
        return np.array([0, 1, 7, 100, -5 if signed else 5, 127], dtype)
    if dtype in COMPLEX:
        return np.array([0, 1.75 + 2j, -3.5 - 1j, 100.25 + 0j, 2j, 126.5 - 3j], dtype)
    return np.array([0.0, -0.0, 1.75, -3.5, 100.25, 126.5], dtype)


def _convert_all(convert):
    return lambda v: [convert(v, t) for t in CONVERT_DTYPES]


@functools.cache
def _expected_conversions():
    """jax's conversions of every source dtype to every target, from one jax.jit program."""
    return jit_table(CONVERT_DTYPES, [_convert_all(jlax.convert_element_type)] * len(CONVERT_DTYPES),
                     [(_convert_source(source),) for source in CONVERT_DTYPES])


@pytest.mark.parametrize("source", CONVERT_DTYPES, ids=str)
def test_convert_element_type_all_pairs(source):
    """Every pair under one numax.jit program per source; the pairs into or out of float32 eagerly as well (an
    eager conversion compiles one program per pair)."""
    x = _convert_source(source)
    traced = numax.jit(_convert_all(lax.convert_element_type))(x)
    for target, want, got_jit in zip(CONVERT_DTYPES, _expected_conversions()[source], traced, strict=True):
        results = [got_jit]
        if np.float32 in (source, target):
            results.append(lax.convert_element_type(numax.numpy.asarray(x), target))
        for result in results:
            assert result.dtype == want.dtype, (source, target)
            assert not result.weak_type
            np.testing.assert_array_equal(np.asarray(result), np.asarray(want), err_msg=f"{source} -> {target}")


SPECIAL_FLOAT_TARGETS = (np.int32, np.uint8, np.bool_, np.float16, ml_dtypes.bfloat16, np.complex64)


def test_convert_element_type_special_floats():
    # nan and inf to integers and to bool follow jax's compiled conversion on the same platform (jax
    # converts a host numpy value with numpy instead, whose out-of-range results differ from XLA's GPU ones).
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 3.7, -3.7], np.float32)
    expected = jax.jit(lambda v: [jlax.convert_element_type(v, t) for t in SPECIAL_FLOAT_TARGETS])(
        jax.numpy.asarray(x))
    for target, want in zip(SPECIAL_FLOAT_TARGETS, expected, strict=True):
        got = lax.convert_element_type(numax.numpy.asarray(x), target)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.complex64), np.asarray(want).astype(np.complex64))


def test_convert_element_type_weak_type_and_host_values():
    x = numax.numpy.asarray(np.float32(1.5))
    weak = lax.convert_element_type(x, np.float32, weak_type=True)
    assert weak.weak_type and weak.dtype == np.float32
    assert lax.convert_element_type(x, np.int32).weak_type is False
    # Host values convert on the host and keep numpy semantics for in-range values.
    assert lax.convert_element_type(2.5, np.int32) == 2
    assert lax.convert_element_type(np.array([1 + 2j], np.complex64), np.float32)[0] == 1.0


BITCASTS = [
    (np.float32, np.int32, (3,)), (np.float32, np.uint32, (3,)), (np.int32, np.float32, (3,)),
    (np.float16, np.int16, (3,)), (ml_dtypes.bfloat16, np.uint16, (3,)), (np.uint16, ml_dtypes.bfloat16, (3,)),
    (np.float32, np.uint8, (3,)), (np.int32, np.int16, (2, 3)), (np.uint8, np.float32, (3, 4)),
    (np.int16, np.int32, (2,)), (np.float16, np.float32, (5, 2)), (np.int8, np.uint8, ()),
    (np.complex64, np.complex64, (2,)), (np.bool_, np.bool_, (2,)),
]


def _bitcast_input(rng, source, shape):
    if np.dtype(source) == np.bool_:
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, size=(max(1, int(np.prod(shape))), np.dtype(source).itemsize)).astype(np.uint8)
    x = raw.view(source)[:int(np.prod(shape)), 0].reshape(shape)
    if np.issubdtype(np.dtype(source), np.floating) or np.dtype(source) == ml_dtypes.bfloat16:
        x = np.where(np.isnan(x.astype(np.float32)), np.asarray(1, source), x).astype(source)
    return x


@functools.cache
def _expected_bitcasts():
    """jax's bitcasts of every case from one jax.jit program; the inputs are those each test draws from its `rng`
    fixture (a fresh default_rng(0))."""
    return jit_all([lambda v, target=target: jlax.bitcast_convert_type(v, target) for _, target, _ in BITCASTS],
                   [(_bitcast_input(np.random.default_rng(0), source, shape),) for source, _, shape in BITCASTS])


@pytest.mark.parametrize("source, target, shape", BITCASTS, ids=str)
def test_bitcast_convert_type(rng, source, target, shape):
    x = _bitcast_input(rng, source, shape)
    want = _expected_bitcasts()[BITCASTS.index((source, target, shape))]
    for fn in (lambda v: lax.bitcast_convert_type(v, target), numax.jit(lambda v: lax.bitcast_convert_type(v, target))):
        got = fn(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).reshape(-1).view(np.uint8),
                                      np.asarray(want).reshape(-1).view(np.uint8))


# --- shapes: 0-d, empty, broadcasting ---------------------------------------------------------------------------
SHAPE_OPS = [("add", 2), ("sin", 1), ("eq", 2), ("max", 2), ("integer_pow", 1), ("exp2", 1)]


def _op(module, name):
    if name == "integer_pow":
        return lambda x: module.integer_pow(x, 3)
    return getattr(module, name)


def _all_ops(module, ops):
    """One function applying every op of `ops` ((name, arity) pairs) to its own operands."""
    return lambda operands: [_op(module, name)(*args) for (name, _), args in zip(ops, operands, strict=True)]


ZERO_RANK_AND_EMPTY = [(), (0,), (2, 0), (1, 3)]


def _shape_op_operands(rng, shape):
    return [[rng.standard_normal(shape).astype(np.float32) for _ in range(arity)] for _, arity in SHAPE_OPS]


@functools.cache
def _expected_shape_ops():
    """jax's results of every op on every shape from one jax.jit program (the operands each test draws from its
    `rng` fixture)."""
    return jit_all([_all_ops(jlax, SHAPE_OPS)] * len(ZERO_RANK_AND_EMPTY),
                   [(_shape_op_operands(np.random.default_rng(0), shape),) for shape in ZERO_RANK_AND_EMPTY])


@pytest.mark.parametrize("shape", ZERO_RANK_AND_EMPTY, ids=str)
def test_zero_rank_and_empty_shapes(rng, shape):
    """Each op eagerly, and all of them in one numax.jit program."""
    operands = _shape_op_operands(rng, shape)
    expected = _expected_shape_ops()[ZERO_RANK_AND_EMPTY.index(shape)]
    traced = numax.jit(_all_ops(lax, SHAPE_OPS))(operands)
    for (name, _), args, want, got_jit in zip(SHAPE_OPS, operands, expected, traced, strict=True):
        for got in (_op(lax, name)(*args), got_jit):
            assert got.shape == shape
            assert_matches(got, want, np.float32)


BROADCAST_SHAPES = [((3, 1), (1, 4)), ((), (2, 3)), ((2, 3), ()), ((1,), (5,)), ((2, 1, 3), (2, 4, 1)), ((), ())]
BROADCAST_NAMES = ("add", "atan2", "lt", "max")


def _broadcast_ops(module):
    """The binary ops on (x, y), then a clamp of x between scalar bounds."""
    return lambda x, y: ([getattr(module, name)(x, y) for name in BROADCAST_NAMES]
                         + [module.clamp(np.float32(-0.5), x, np.float32(0.5))])


def _broadcast_operands(rng, shapes):
    return tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)


@functools.cache
def _expected_broadcasts():
    """jax's results for every pair of shapes from one jax.jit program (the operands each test draws from its
    `rng` fixture)."""
    return jit_all([_broadcast_ops(jlax)] * len(BROADCAST_SHAPES),
                   [_broadcast_operands(np.random.default_rng(0), shapes) for shapes in BROADCAST_SHAPES])


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_broadcasting_of_rank0_and_size1_dims(rng, shapes):
    """Each binary op eagerly, and all of them in one numax.jit program; ternary ops broadcast scalars too."""
    x, y = _broadcast_operands(rng, shapes)
    *expected, want_clamp = _expected_broadcasts()[BROADCAST_SHAPES.index(shapes)]
    *traced, traced_clamp = numax.jit(_broadcast_ops(lax))(x, y)
    for name, want, got_jit in zip(BROADCAST_NAMES, expected, traced, strict=True):
        assert_matches(getattr(lax, name)(x, y), want, np.float32)
        assert_matches(got_jit, want, np.float32)
    for got in (lax.clamp(np.float32(-0.5), x, np.float32(0.5)), traced_clamp):
        assert_matches(got, want_clamp, np.float32)


def test_python_scalars_have_their_default_dtype_as_in_jax():
    """A Python scalar operand is weakly typed with its default dtype, which must be the array's (jax's TypeError
    otherwise; tests/test_parity_defects_2.py compares more cases with jax)."""
    x = numax.numpy.asarray(np.array([1.0, 2.0], np.float32))
    out = lax.mul(2.0, x)
    assert out.dtype == np.float32 and not out.weak_type
    for scalar in (1, 1j):
        with pytest.raises(TypeError, match="same dtype"):
            lax.add(x, scalar)
    with pytest.raises(TypeError, match="same dtype"):
        lax.mul(numax.numpy.asarray(np.array([1.0], np.float16)), 2.0)


def _weak_type_results(lax_, weak, strong, weak_int):
    """The results whose dtype and weak type the test compares, written once for both libraries."""
    weak_complex = lax_.complex(weak, weak)
    results = []
    for name in ("add", "mul", "max", "atan2"):
        results += [getattr(lax_, name)(weak, weak), getattr(lax_, name)(weak, strong)]
    results += [getattr(lax_, name)(weak) for name in ("sin", "exp", "neg", "floor")]
    return results + [
        weak_complex, lax_.eq(weak, weak), lax_.is_finite(weak), lax_.abs(weak_complex), lax_.real(weak_complex),
        lax_.conj(weak), lax_.population_count(weak_int), lax_.pow(weak, np.int32(2)), lax_.pow(weak, weak_int),
        lax_.clamp(weak, weak, weak), lax_.clamp(np.float32(0), weak, weak), lax_.select_n(True, weak, weak),
        lax_.integer_pow(weak, 2), lax_.round(weak),
    ]


def test_weak_types_propagate_like_jax():
    """numax eagerly; jax's dtypes and weak types from one jax.jit program (jit keeps its arguments' and
    results' weak types)."""
    weak = lax.convert_element_type(numax.numpy.asarray(np.float32(2.0)), np.float32, weak_type=True)
    jweak = jax.numpy.asarray(2.0)
    assert weak.weak_type and jweak.weak_type
    weak_int = lax.convert_element_type(numax.numpy.asarray(np.int32(3)), np.int32, weak_type=True)
    jweak_int = jax.numpy.asarray(3)
    got = _weak_type_results(lax, weak, numax.numpy.asarray(np.float32(3.0)), weak_int)
    want = jax.jit(functools.partial(_weak_type_results, jlax))(jweak, np.float32(3.0), jweak_int)
    for g, w in zip(got, want, strict=True):
        assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type), (g, w)


# --- property test ---------------------------------------------------------------------------------------------------
BINARY_PROPERTY_OPS = {
    "add": NUMERIC, "sub": NUMERIC, "mul": NUMERIC, "max": ALL, "min": ALL, "eq": ALL, "lt": ORDERED,
    "bitwise_xor": BOOL + INTS, "atan2": FLOATS, "nextafter": FLOATS,
}


@st.composite
def broadcastable_shapes(draw):
    rank = draw(st.integers(0, 3))
    base = draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    x_shape = [d if draw(st.booleans()) else 1 for d in base]
    y_shape = [d if draw(st.booleans()) else 1 for d in base]
    if draw(st.booleans()):
        x_shape = [] if draw(st.booleans()) else x_shape
    return tuple(x_shape), tuple(y_shape)


@given(name=st.sampled_from(sorted(BINARY_PROPERTY_OPS)), shapes=broadcastable_shapes(), data=st.data())
def test_binary_ops_broadcast_like_jax(name, shapes, data):
    dtype = data.draw(st.sampled_from(BINARY_PROPERTY_OPS[name]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x, y = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    want = getattr(jlax, name)(x, y)
    got = getattr(lax, name)(x, y)
    assert got.shape == want.shape
    assert_matches(got, want, dtype)
