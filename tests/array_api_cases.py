"""The vocabulary in which the array API tests write the standard's special cases as data: conditions on
the inputs (vectorized over float64 copies), the forms a specified result takes, the grids of special values
the functions run on, and the check of results against a table of (condition, result) rules."""

import numpy as np

import numax

NAN = float("nan")
INF = float("inf")


# --- conditions --------------------------------------------------------------------------------------------
def nan(x):
    return np.isnan(x)


def pos_inf(x):
    return x == INF


def neg_inf(x):
    return x == -INF


def infinite(x):
    return np.isinf(x)


def pos_zero(x):
    return (x == 0) & ~np.signbit(x)


def neg_zero(x):
    return (x == 0) & np.signbit(x)


def zero(x):
    return x == 0


def finite(x):
    return np.isfinite(x)


def nonzero_finite(x):
    return np.isfinite(x) & (x != 0)


def positive(x):
    return x > 0


def negative(x):
    return x < 0


def pos_finite(x):
    return np.isfinite(x) & (x > 0)


def neg_finite(x):
    return np.isfinite(x) & (x < 0)


def integral(x):
    return np.isfinite(x) & (np.floor(x) == x)


def odd_integral(x):
    return integral(x) & (np.mod(x, 2) == 1)


def half_integral(x):
    return np.isfinite(x) & (x - np.floor(x) == 0.5)


def nonzero(x):
    return x != 0


def equals(value):
    return lambda x: x == value


def above(value):
    return lambda x: x > value


def below(value):
    return lambda x: x < value


def any_value(*operands):
    return np.ones(np.shape(operands[0]), bool)


def both(first, second):
    """A condition on two operands (x1 and x2, or a complex number's real and imaginary parts)."""
    return lambda x1, x2: first(x1) & second(x2)


def either(condition):
    return lambda x1, x2: condition(x1) | condition(x2)


# --- results -----------------------------------------------------------------------------------------------
# A rule's result is a value (zeros and infinities with their signs, NAN any NaN), one of the forms below, or a
# function of the (float64) inputs; complex results are (real part, imaginary part) pairs of those.
ANY_ZERO = "a zero of either sign"  # the standard's "0" where it does not say "+0", or leaves the sign open
ANY_INF = "an infinity of either sign"


class Approx:
    """An implementation-dependent approximation of `value` (within a few ulps of the dtype)."""

    def __init__(self, value):
        self.value = value


class SignedNaN:
    """A result computed by `function` whose NaNs carry a sign the standard specifies (copysign's)."""

    def __init__(self, function):
        self.function = function


class Remaining:
    """The standard's "remaining cases": `reference` (numpy, in the operands' dtype) computes the result,
    `exact` when the standard asks for the correctly rounded value. Subnormal results are flushed to zeros of
    their sign, as XLA does on the CPU (for jax and numax alike)."""

    def __init__(self, reference, exact):
        self.reference, self.exact = reference, exact


class Differs:
    """A case where jax.numpy does not give the standard's result: `jax` is what it gives, and numax gives
    `numax` (jax's by default: numax follows jax)."""

    def __init__(self, standard, jax, numax="as jax"):
        self.standard, self.jax = standard, jax
        self.numax = jax if numax == "as jax" else numax


# --- inputs ------------------------------------------------------------------------------------------------
def probes(dtype):
    """Special and ordinary values of `dtype`: NaNs of both signs, infinities, zeros, integers, halves,
    values around 1, and the largest finite values (for overflow)."""
    big = np.finfo(dtype).max
    values = np.array([NAN, NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 2.5, -2.5, 3.0, -3.0, 1.5,
                       -0.75, 0.25, 7.0, -7.0, 1e3, big, -big], dtype)
    values[1] = np.copysign(values[1], -1)  # a NaN whose sign bit is set
    return values


def pairs(values):
    """Every (x1, x2) pair of `values`, as two flat arrays."""
    return np.repeat(values, values.size), np.tile(values, values.size)


def complex_grid(values, dtype):
    """Every complex number whose parts are two of `values` (built part by part: `a + 1j * b` would turn
    infinite parts into NaNs)."""
    real, imag = pairs(values)
    out = np.empty(real.shape, dtype)
    out.real, out.imag = real, imag
    return out


# --- the check ---------------------------------------------------------------------------------------------
def check(rules, inputs, got, label):
    """`got` (results over `inputs`) follows `rules`, the first rule that applies deciding; returns how many
    inputs some rule decided. `label` starting with "jax" picks jax's results in `Differs` rules."""
    wide = [x.astype(np.complex128 if np.iscomplexobj(x) else np.float64) for x in inputs]
    decided = np.zeros(got.shape, bool)
    for condition, expected in rules:
        with np.errstate(invalid="ignore"):
            where = condition(*wide) & ~decided
        decided |= where
        if not where.any():
            continue
        if isinstance(expected, Differs):
            expected = expected.jax if label.startswith("jax") else expected.numax
        context = (label, [x[where] for x in inputs])
        if isinstance(expected, Remaining):
            with np.errstate(all="ignore"):
                want = _flush_subnormals(expected.reference(*[x[where] for x in inputs]))
            assert_values(got[where], want, exact=expected.exact, context=context)
            continue
        parts = (got[where].real, got[where].imag) if np.iscomplexobj(got) else (got[where],)
        wants = expected if isinstance(expected, tuple) else (expected,)
        assert len(parts) == len(wants), context
        for part, want in zip(parts, wants):
            _check_part(part, want, [x[where] for x in wide], context)
    return int(decided.sum())


def _check_part(got, want, inputs, context):
    if want is ANY_ZERO:
        assert (got == 0).all(), (context, got)
    elif want is ANY_INF:
        assert np.isinf(got).all(), (context, got)
    elif isinstance(want, Approx):
        np.testing.assert_allclose(got.astype(np.float64), want.value, rtol=4 * np.finfo(got.dtype).eps,
                                   err_msg=str(context))
    else:
        function = want.function if isinstance(want, SignedNaN) else want
        values = function(*inputs) if callable(function) else np.full(got.shape, function)
        values = np.asarray(values, np.float64 if got.dtype != np.bool_ else np.bool_)
        if got.dtype == np.bool_:
            np.testing.assert_array_equal(got, values, err_msg=str(context))
            return
        # Zeros and infinities exactly (with their signs); other values within ulps (cis(b) and the like).
        special = (values == 0) | np.isinf(values)
        assert_values(got[special], values[special].astype(got.dtype), exact=True, context=context)
        assert_values(got[~special], values[~special].astype(got.dtype), exact=False, context=context)
        if isinstance(want, SignedNaN):
            assert np.array_equal(np.signbit(got), np.signbit(values)), (context, got)


def assert_values(got, want, exact, context):
    """Equal NaN positions; the other values equal with the signs of zeros (`exact`), or within ulps."""
    if got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, err_msg=str(context))
        return
    got, want = np.asarray(got), np.asarray(want)
    if np.iscomplexobj(got):
        for part in ("real", "imag"):
            assert_values(getattr(got, part), getattr(want, part), exact, context)
        return
    assert np.array_equal(np.isnan(got), np.isnan(want)), (context, got, want)
    numbers = ~np.isnan(want)
    if exact:
        np.testing.assert_array_equal(got[numbers], want[numbers], err_msg=str(context))
    else:
        np.testing.assert_allclose(got[numbers], want[numbers], rtol=4 * np.finfo(want.dtype).eps,
                                   err_msg=str(context))
        numbers &= want == 0
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers])), (context, got, want)


# XLA's CPU code flushes subnormal results to zero (for numax and jax alike); its GPU code keeps them.
FLUSHES_SUBNORMALS = numax.default_backend() == "cpu"


def _flush_subnormals(values):
    if not FLUSHES_SUBNORMALS:
        return values
    if np.iscomplexobj(values):
        out = np.empty_like(values)
        out.real, out.imag = _flush_subnormals(values.real), _flush_subnormals(values.imag)
        return out
    subnormal = (values != 0) & (np.abs(values) < np.finfo(values.dtype).tiny)
    return np.where(subnormal, np.copysign(np.zeros_like(values), values), values)
