"""The array API standard's special cases of the elementwise functions for complex operands, written out as
data (rules on a = real(x) and b = imag(x)) and checked for numax and jax.numpy alike, in complex64 and
complex128; where jax gives other results than the standard, the tables say so and numax follows jax. Every
function runs once per dtype over a grid of complex special values: one jitted program per library and dtype."""

import numpy as np
import pytest
from array_api_cases import (
    ANY_INF,
    ANY_ZERO,
    INF,
    NAN,
    Approx,
    Differs,
    Remaining,
    any_value,
    assert_values,
    both,
    check,
    complex_grid,
    equals,
    finite,
    infinite,
    nan,
    neg_inf,
    neg_zero,
    nonzero,
    nonzero_finite,
    pairs,
    pos_finite,
    pos_inf,
    pos_zero,
    probes,
    zero,
)
from array_api_util import bit_mode
from harness import jax, jnp

import numax
import numax.numpy as xnp

PI = np.pi


def either_part(condition):
    return lambda a, b: condition(a) | condition(b)


def times_cis(scale):
    """`scale` * cis(b) = scale * (cos b + i sin b), part by part (the signs of zero and infinite parts)."""
    return (lambda a, b: scale * np.cos(b), lambda a, b: scale * np.sin(b))


NAN_PAIR = (NAN, NAN)


def huge(x):
    """Finite values beyond 1e30: where XLA's inverse functions take their asymptotic forms."""
    return np.isfinite(x) & (np.abs(x) > 1e30)


def log_of_twice(x):
    return np.log(2.0) + np.log(np.abs(x))


def _log_rules(first):
    """log's and log1p's cases beyond their first ones (at 0, and at -1 for log1p)."""
    return first + [
        (both(finite, pos_inf), (INF, Approx(PI / 2))), (both(finite, nan), NAN_PAIR),
        (both(neg_inf, pos_finite), (INF, Approx(PI))), (both(pos_inf, pos_finite), (INF, 0.0)),
        (both(neg_inf, pos_inf), (INF, Approx(3 * PI / 4))), (both(pos_inf, pos_inf), (INF, Approx(PI / 4))),
        (both(infinite, nan), Differs(standard=(INF, NAN), jax=NAN_PAIR)), (both(nan, finite), NAN_PAIR),
        (both(nan, pos_inf), Differs(standard=(INF, NAN), jax=NAN_PAIR)), (both(nan, nan), NAN_PAIR),
    ]


def _exp_rules(minus):
    """exp's cases, or expm1's (`minus` 1: the same results less one)."""
    return [
        (both(zero, pos_zero), (ANY_ZERO, 0.0) if minus else (1.0, 0.0)), (both(finite, pos_inf), NAN_PAIR),
        (both(finite, nan), NAN_PAIR), (both(pos_inf, pos_zero), (INF, 0.0)),
        (both(neg_inf, finite), (-1.0, times_cis(0.0)[1]) if minus else times_cis(0.0)),
        (both(pos_inf, nonzero_finite), times_cis(INF)),
        (both(neg_inf, pos_inf), Differs(standard=(-1.0, ANY_ZERO) if minus else (ANY_ZERO, ANY_ZERO), jax=NAN_PAIR)),
        (both(pos_inf, pos_inf), Differs(standard=(ANY_INF, NAN), jax=NAN_PAIR)),
        (both(neg_inf, nan), Differs(standard=(-1.0, ANY_ZERO) if minus else (ANY_ZERO, ANY_ZERO), jax=NAN_PAIR)),
        (both(pos_inf, nan), Differs(standard=(ANY_INF, NAN), jax=NAN_PAIR)), (both(nan, pos_zero), (NAN, 0.0)),
        (both(nan, nonzero), NAN_PAIR), (both(nan, nan), NAN_PAIR),
    ]


# Each function's rules in the standard's order (the first that applies decides). The standard lists the
# cases with b >= 0 (and for odd or even functions a >= 0); the others follow by symmetry and are compared
# with jax only. Where jax differs (mostly NaN + NaN j where an infinity or a NaN meets XLA's formulas), the
# rule says what the standard asks and what jax gives; numax follows jax.
RULES = {
    "abs": [(lambda a, b: (infinite(a) & nan(b)) | (nan(a) & infinite(b)), Differs(standard=INF, jax=NAN)),
            (either_part(infinite), INF), (both(zero, any_value), lambda a, b: np.abs(b)),
            (both(any_value, zero), lambda a, b: np.abs(a)), (either_part(nan), NAN)],
    "isnan": [(either_part(nan), True), (any_value, False)],
    "isinf": [(either_part(infinite), True), (any_value, False)],
    "isfinite": [(either_part(nan), False), (either_part(infinite), False), (any_value, True)],
    "exp": _exp_rules(minus=False),
    "expm1": _exp_rules(minus=True),
    "log": _log_rules([(both(neg_zero, pos_zero), (-INF, Approx(PI))), (both(pos_zero, pos_zero), (-INF, 0.0))]),
    "log1p": _log_rules([(both(equals(-1), pos_zero), (-INF, 0.0))]),
    "sqrt": [
        (both(zero, pos_zero), (0.0, 0.0)), (both(nan, pos_inf), Differs(standard=(INF, INF), jax=NAN_PAIR)),
        (both(any_value, pos_inf), (INF, INF)), (both(finite, nan), NAN_PAIR),
        (both(neg_inf, pos_finite), (0.0, INF)), (both(pos_inf, pos_finite), (INF, 0.0)),
        (both(neg_inf, nan), Differs(standard=(NAN, ANY_INF), jax=NAN_PAIR)),
        (both(pos_inf, nan), Differs(standard=(INF, NAN), jax=NAN_PAIR)), (both(nan, any_value), NAN_PAIR),
    ],
    "sign": [(both(zero, zero), (ANY_ZERO, ANY_ZERO)), (either_part(nan), NAN_PAIR)],
    "cosh": [
        (both(pos_zero, pos_zero), (1.0, 0.0)),
        (both(pos_zero, pos_inf), Differs(standard=(NAN, ANY_ZERO), jax=NAN_PAIR)),
        (both(pos_zero, nan), Differs(standard=(NAN, ANY_ZERO), jax=NAN_PAIR)),
        (both(nonzero_finite, pos_inf), NAN_PAIR), (both(nonzero_finite, nan), NAN_PAIR),
        (both(pos_inf, pos_zero), (INF, 0.0)), (both(pos_inf, nonzero_finite), times_cis(INF)),
        (both(pos_inf, pos_inf), Differs(standard=(ANY_INF, NAN), jax=NAN_PAIR)),
        (both(pos_inf, nan), Differs(standard=(INF, NAN), jax=NAN_PAIR)), (both(nan, zero), (NAN, ANY_ZERO)),
        (both(nan, nonzero_finite), NAN_PAIR), (both(nan, nan), NAN_PAIR),
    ],
    "sinh": [
        (both(pos_zero, pos_zero), (0.0, 0.0)),
        (both(pos_zero, pos_inf), Differs(standard=(ANY_ZERO, NAN), jax=NAN_PAIR)),
        (both(pos_zero, nan), Differs(standard=(ANY_ZERO, NAN), jax=NAN_PAIR)),
        (both(pos_finite, pos_inf), NAN_PAIR), (both(pos_finite, nan), NAN_PAIR), (both(pos_inf, pos_zero), (INF, 0.0)),
        (both(pos_inf, pos_finite), times_cis(INF)),
        (both(pos_inf, pos_inf), Differs(standard=(ANY_INF, NAN), jax=NAN_PAIR)),
        (both(pos_inf, nan), Differs(standard=(ANY_INF, NAN), jax=NAN_PAIR)), (both(nan, pos_zero), (NAN, 0.0)),
        (both(nan, nonzero_finite), NAN_PAIR), (both(nan, nan), NAN_PAIR),
    ],
    "tanh": [
        (both(pos_zero, pos_zero), (0.0, 0.0)), (both(nonzero_finite, pos_inf), NAN_PAIR),
        (both(pos_zero, pos_inf), Differs(standard=(0.0, NAN), jax=NAN_PAIR)), (both(nonzero_finite, nan), NAN_PAIR),
        (both(pos_zero, nan), Differs(standard=(0.0, NAN), jax=NAN_PAIR)),
        # jax: the imaginary zero takes the sign of sin(2b) (C99's tanh), where the standard says +0.
        (both(pos_inf, pos_finite),
         Differs(standard=(1.0, 0.0), jax=(1.0, lambda a, b: np.copysign(0.0, np.sin(b) * np.cos(b))))),
        (both(pos_inf, pos_inf), (1.0, ANY_ZERO)), (both(pos_inf, nan), (1.0, ANY_ZERO)),
        (both(nan, pos_zero), (NAN, 0.0)), (both(nan, nonzero), NAN_PAIR), (both(nan, nan), NAN_PAIR),
    ],
    "asinh": [
        (both(pos_zero, pos_zero), (0.0, 0.0)), (both(pos_finite, pos_inf), (INF, Approx(PI / 2))),
        (both(finite, nan), NAN_PAIR), (both(pos_inf, pos_finite), (INF, 0.0)),
        (both(pos_inf, pos_inf), (INF, Approx(PI / 4))),
        (both(nan, pos_zero), Differs(standard=(NAN, 0.0), jax=NAN_PAIR)),
        # jax: for a huge b, XLA's asymptotic form log(2|b|) gives a real part despite the NaN.
        (both(nan, huge), Differs(standard=NAN_PAIR, jax=(lambda a, b: log_of_twice(b), NAN))),
        (both(nan, nonzero_finite), NAN_PAIR), (both(nan, pos_inf), (ANY_INF, NAN)), (both(nan, nan), NAN_PAIR),
    ],
    # jax: a NaN part makes the imaginary part -pi/2 (+pi/2 for a NaN real part and a finite b).
    "atanh": [
        (both(pos_zero, pos_zero), (0.0, 0.0)),
        (both(pos_zero, nan), Differs(standard=(0.0, NAN), jax=(NAN, Approx(-PI / 2)))),
        (both(equals(1), pos_zero), (INF, 0.0)), (both(pos_finite, pos_inf), (0.0, Approx(PI / 2))),
        (both(nonzero_finite, nan), Differs(standard=NAN_PAIR, jax=(NAN, Approx(-PI / 2)))),
        (both(pos_inf, pos_finite), (0.0, Approx(PI / 2))), (both(pos_inf, pos_inf), (0.0, Approx(PI / 2))),
        (both(pos_inf, nan), Differs(standard=(0.0, NAN), jax=(ANY_ZERO, Approx(-PI / 2)))),
        (both(nan, finite), Differs(standard=NAN_PAIR, jax=(NAN, Approx(PI / 2)))),
        (both(nan, pos_inf), (ANY_ZERO, Approx(PI / 2))),
        (both(nan, nan), Differs(standard=NAN_PAIR, jax=(NAN, Approx(-PI / 2)))),
    ],
    "acos": [
        (both(zero, pos_zero), (Approx(PI / 2), -0.0)),
        (both(zero, nan), Differs(standard=(Approx(PI / 2), NAN), jax=NAN_PAIR)),
        (both(finite, pos_inf), (Approx(PI / 2), -INF)),
        (both(huge, nan), Differs(standard=NAN_PAIR, jax=(NAN, lambda a, b: -log_of_twice(a)))),
        (both(nonzero_finite, nan), NAN_PAIR), (both(neg_inf, pos_finite), (Approx(PI), -INF)),
        (both(pos_inf, pos_finite), (0.0, -INF)), (both(neg_inf, pos_inf), (Approx(3 * PI / 4), -INF)),
        (both(pos_inf, pos_inf), (Approx(PI / 4), -INF)), (both(infinite, nan), (NAN, ANY_INF)),
        (both(nan, finite), NAN_PAIR), (both(nan, pos_inf), (NAN, -INF)), (both(nan, nan), NAN_PAIR),
    ],
    "acosh": [
        (both(zero, pos_zero), (0.0, Approx(PI / 2))), (both(finite, pos_inf), (INF, Approx(PI / 2))),
        (both(huge, nan), Differs(standard=NAN_PAIR, jax=(lambda a, b: log_of_twice(a), NAN))),
        (both(nonzero_finite, nan), NAN_PAIR),
        (both(pos_zero, nan), Differs(standard=(NAN, Approx(PI / 2)), jax=NAN_PAIR)),
        (both(neg_inf, pos_finite), (INF, Approx(PI))), (both(pos_inf, pos_finite), (INF, 0.0)),
        (both(neg_inf, pos_inf), (INF, Approx(3 * PI / 4))), (both(pos_inf, pos_inf), (INF, Approx(PI / 4))),
        (both(infinite, nan), (INF, NAN)), (both(nan, finite), NAN_PAIR), (both(nan, pos_inf), (INF, NAN)),
        (both(nan, nan), NAN_PAIR),
    ],
}


def _upper_half_plane(rules):
    """`rules` restricted to b >= 0 (the sign bit of b clear, or b a NaN), where the standard states them."""
    def restrict(condition):
        return lambda a, b: condition(a, b) & (~np.signbit(b) | np.isnan(b))

    return [(restrict(condition), result) for condition, result in rules]


UPPER_HALF_PLANE_RULES = {name: _upper_half_plane(rules) for name, rules in RULES.items()}
# Functions the standard defines through others on w = 1j * x: cos(x) = cosh(w), and sin, tan, asin, atan
# as -1j * sinh(w), tanh(w), asinh(w), atanh(w); log2 and log10 as log(x) / log(base).
THROUGH_W = {"cos": ("cosh", False), "sin": ("sinh", True), "tan": ("tanh", True), "asin": ("asinh", True),
             "atan": ("atanh", True)}
# Where jax's asin departs from its definition through asinh, in terms of w = 1j * x: asin(+0 - 0j) is
# +0 + 0j (numpy and the definition: +0 - 0j), so 1j * asin(x) is -0 + 0j where asinh(w) is +0 + 0j; and for a
# huge real part and a NaN imaginary part its asymptotic form gives the real part the other sign.
THROUGH_W_FIRST_RULES = {"asin": [
    (both(pos_zero, pos_zero), Differs(standard=(0.0, 0.0), jax=(-0.0, 0.0))),
    (both(nan, huge), Differs(standard=NAN_PAIR, jax=(lambda a, b: -log_of_twice(b), NAN))),
]}
CHANGE_OF_BASE = {"log2": 2.0, "log10": 10.0}
# Binary functions over a smaller grid: complex equality compares the parts; addition adds them (IEEE).
BINARY_RULES = {
    "equal": [(lambda x1, x2: np.isnan(x1) | np.isnan(x2), False), (any_value, lambda x1, x2: x1 == x2)],
    "not_equal": [(lambda x1, x2: np.isnan(x1) | np.isnan(x2), True), (any_value, lambda x1, x2: x1 != x2)],
    "add": [(any_value, Remaining(np.add, exact=True))],
    "subtract": [(any_value, Remaining(np.subtract, exact=True))],
}
BINARY_PARTS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5]


def _run(namespace, jit, unary, first, second):
    names = [*RULES, *THROUGH_W, *CHANGE_OF_BASE]

    def program(unary, first, second):
        out = {name: getattr(namespace, name)(unary) for name in names}
        out.update({name: getattr(namespace, name)(first, second) for name in BINARY_RULES})
        return out

    return {name: np.asarray(value) for name, value in jit(program)(unary, first, second).items()}


@pytest.fixture(scope="module", params=[np.complex64, np.complex128], ids=["complex64", "complex128"])
def results(request):
    """(grid, binary grids, numax's results, jax's results) of every function over complex special values."""
    dtype = request.param
    real = np.float32 if dtype == np.complex64 else np.float64
    unary = complex_grid(probes(real), dtype)
    parts = np.array(BINARY_PARTS, real)
    first, second = pairs(complex_grid(parts, dtype))
    with bit_mode(dtype == np.complex128):
        ours = _run(xnp, numax.jit, unary, first, second)
        theirs = _run(jnp, jax.jit, unary, first, second)
    return unary, (first, second), ours, theirs


def _as_checked(name, x, result):
    """The inputs and results the rules of `name`'s defining function apply to."""
    if name in THROUGH_W:
        w = np.empty_like(x)
        w.real, w.imag = -x.imag, x.real
        if THROUGH_W[name][1]:
            result = _times_i(result)
        return w, result
    if name in CHANGE_OF_BASE:
        scaled = np.empty_like(result)
        scaled.real = result.real * np.log(CHANGE_OF_BASE[name])
        scaled.imag = result.imag * np.log(CHANGE_OF_BASE[name])
        return x, scaled
    return x, result


def _times_i(values):
    out = np.empty_like(values)
    out.real, out.imag = -values.imag, values.real
    return out


@pytest.mark.parametrize("name", [*RULES, *THROUGH_W, *CHANGE_OF_BASE])
def test_complex_special_cases_follow_the_standard(results, name):
    unary, _, ours, theirs = results
    rules = UPPER_HALF_PLANE_RULES[THROUGH_W.get(name, ("log",))[0] if name not in RULES else name]
    rules = _upper_half_plane(THROUGH_W_FIRST_RULES.get(name, [])) + rules
    for label, got in (("numax", ours[name]), ("jax", theirs[name])):
        x, checked = _as_checked(name, unary, got)
        assert check(rules, (x.real, x.imag), checked, f"{label}.{name}") > 0, name
    assert_values(ours[name], theirs[name], exact=False, context=name)


@pytest.mark.parametrize("name", BINARY_RULES)
def test_complex_comparisons_and_sums_follow_the_standard(results, name):
    _, (first, second), ours, theirs = results
    for label, got in (("numax", ours[name]), ("jax", theirs[name])):
        assert check(BINARY_RULES[name], (first, second), got, f"{label}.{name}") == first.size
    assert_values(ours[name], theirs[name], exact=True, context=name)
