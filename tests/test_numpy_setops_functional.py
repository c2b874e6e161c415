"""numax.numpy set operations (isin, intersect1d, union1d, setdiff1d, setxor1d) and the functional helpers
(vectorize, apply_along_axis, apply_over_axes, piecewise, fromfunction, choose, block), against numpy and jax."""

import functools

import numpy as np
import pytest
from harness import jax, jnp, rand
from numax.core import dtypes

import numax
import numax.numpy as xnp


def assert_same(actual, expected):
    """Equal values (NaNs in the same places), shapes and dtypes."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)


def assert_all_same(actual, expected):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    else:
        assert_same(actual, expected)


def with_duplicates(rng, shape, dtype):
    """Random values from a small range, so that both arrays repeat values and share some."""
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(0, 6, size=shape).astype(dtype)


# --- set operations -------------------------------------------------------------------------------------------
set_functions = ["union1d", "setdiff1d", "setxor1d", "intersect1d"]
set_dtypes = [np.float32, dtypes.bfloat16, np.bool_]
set_shapes = [((7,), (5,)), ((2, 3), (0,)), ((0,), (0,)), ((), (3,))]


def jax_dtype(name, a, b):
    """The dtype JAX gives (found abstractly, without running jax)."""
    return jax.eval_shape(functools.partial(getattr(jnp, name), size=1), a, b).dtype


def padded_like_jax(name, result, size, fill_value):
    """numpy's result cut or padded to `size` as JAX pads: fill_value, or by default the smallest value for
    union1d, 0 for setdiff1d, and the smallest result (0 if none) for setxor1d and intersect1d."""
    if fill_value is None:
        fill_value = result[0] if name == "union1d" or (name != "setdiff1d" and len(result)) else 0
    return np.concatenate([result[:size], np.full(max(0, size - len(result)), fill_value, result.dtype)])


@pytest.mark.parametrize("name", set_functions)
def test_set_operation_matches_numpy(name, rng):
    for dtype in set_dtypes:
        a, b = with_duplicates(rng, (7,), dtype), with_duplicates(rng, (5,), dtype)
        actual = getattr(xnp, name)(a, b)
        assert np.asarray(actual).dtype == jax_dtype(name, a, b)
        np.testing.assert_array_equal(actual, getattr(np, name)(a, b))
    for shape1, shape2 in set_shapes:
        a, b = with_duplicates(rng, shape1, np.int32), with_duplicates(rng, shape2, np.int32)
        assert_same(getattr(xnp, name)(a, b), getattr(np, name)(a, b).astype(np.int32))


@pytest.mark.parametrize("name", ["setdiff1d", "setxor1d", "intersect1d"])
def test_set_operation_assume_unique(name, rng):
    for _ in range(2):
        a = rng.permutation(np.arange(10, dtype=np.int32))[:6]
        b = rng.permutation(np.arange(10, dtype=np.int32))[:5]
        assert_same(getattr(xnp, name)(a, b, assume_unique=True), getattr(np, name)(a, b, assume_unique=True))
    if name == "setdiff1d":  # the order of ar1 is kept
        assert_same(xnp.setdiff1d(np.array([5, 1, 4, 2], np.int32), np.array([4], np.int32), assume_unique=True),
                    np.array([5, 1, 2], np.int32))


@pytest.mark.parametrize("name", set_functions)
def test_set_operation_mixed_dtypes_nan_and_signed_zero(name, rng):
    a = with_duplicates(rng, (6,), np.int32)
    b = with_duplicates(rng, (5,), np.float32) + 0.5 * (rng.random(5) < 0.5)
    actual = getattr(xnp, name)(a, b)
    assert np.asarray(actual).dtype == jax_dtype(name, a, b)
    np.testing.assert_array_equal(actual, getattr(np, name)(a, b))
    a = np.array([np.nan, 1.0, -0.0, np.nan, 2.0], np.float32)
    b = np.array([0.0, np.nan, 2.0, 3.0], np.float32)
    assert_same(getattr(xnp, name)(a, b), getattr(np, name)(a, b))


@pytest.mark.parametrize("name", set_functions)
def test_set_operation_size_under_jit(name, rng):
    a, b = with_duplicates(rng, (7,), np.int32), with_duplicates(rng, (5,), np.int32)
    for size, fill_value in [(0, None), (2, -7), (13, None)]:
        ours = numax.jit(functools.partial(getattr(xnp, name), size=size, fill_value=fill_value))
        expected = padded_like_jax(name, getattr(np, name)(a, b).astype(np.int32), size, fill_value)
        assert_same(ours(a, b), expected)
    assert_same(getattr(xnp, name)(a, b, size=9, fill_value=-7), padded_like_jax(
        name, getattr(np, name)(a, b).astype(np.int32), 9, -7))
    # jax itself, on an empty input
    empty = np.zeros(0, np.int32)
    assert_same(numax.jit(functools.partial(getattr(xnp, name), size=4))(empty, b),
                getattr(jnp, name)(empty, b, size=4))
    assert_same(getattr(xnp, name)(a, empty, size=4, fill_value=3), padded_like_jax(
        name, getattr(np, name)(a, empty).astype(np.int32), 4, 3))


def test_set_operation_under_vmap(rng):
    a, b = with_duplicates(rng, (3, 7), np.int32), with_duplicates(rng, (3, 5), np.int32)
    for name in set_functions:
        batched = numax.vmap(functools.partial(getattr(xnp, name), size=6, fill_value=-1))(a, b)
        expected = [padded_like_jax(name, getattr(np, name)(x, y).astype(np.int32), 6, -1) for x, y in zip(a, b)]
        assert_same(batched, np.stack(expected))
    assert_same(numax.vmap(xnp.isin)(a, b), np.stack([np.isin(x, y) for x, y in zip(a, b)]))


def test_set_operation_size_default_fill_float_and_fill_dtype():
    a = np.array([2.5, np.nan, -1.0, 2.5], np.float32)
    b = np.array([2.5, 4.0, np.nan], np.float32)
    nan = np.nan
    expected = {  # what jax gives: NaNs never match, and a NaN result makes setxor1d's default fill NaN
        "union1d": [-1.0, 2.5, 4.0, nan, -1.0, -1.0], "setdiff1d": [-1.0, nan, 0.0, 0.0, 0.0, 0.0],
        "setxor1d": [-1.0, 4.0, nan, nan, nan, nan], "intersect1d": [2.5] * 6,
    }
    for name in set_functions:
        assert_same(numax.jit(functools.partial(getattr(xnp, name), size=6))(a, b),
                    np.array(expected[name], np.float32))
    # the fill value's dtype takes part in promotion where JAX's does (intersect1d and setxor1d)
    a, b = np.array([True, False]), np.array([True])
    fill_value = np.float32(0.5)
    for name in set_functions:
        actual = getattr(xnp, name)(a, b, size=3, fill_value=fill_value)
        dtype = jax.eval_shape(functools.partial(getattr(jnp, name), size=3, fill_value=fill_value), a, b).dtype
        result = getattr(np, name)(a, b).astype(dtype)
        assert_same(actual, np.concatenate([result, np.full(3 - len(result), fill_value, dtype)]))


@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_return_indices(assume_unique, rng):
    if assume_unique:
        a = rng.permutation(np.arange(9, dtype=np.int32))[:6]
        b = rng.permutation(np.arange(9, dtype=np.int32))[:5]
    else:
        a, b = with_duplicates(rng, (7,), np.int32), with_duplicates(rng, (5,), np.int32)
    actual = xnp.intersect1d(a, b, assume_unique, return_indices=True)
    for ours, numpys in zip(actual, np.intersect1d(a, b, assume_unique, return_indices=True)):
        assert_same(ours, numpys.astype(np.int32))
    ours = numax.jit(lambda x, y: xnp.intersect1d(x, y, assume_unique, True, size=8, fill_value=-1))
    assert_all_same(ours(a, b), jnp.intersect1d(a, b, assume_unique, True, size=8, fill_value=-1))



@pytest.mark.parametrize("name", set_functions)
def test_set_operation_traced_without_size_raises(name):
    a, b = np.arange(4, dtype=np.int32), np.arange(3, dtype=np.int32)
    with pytest.raises(numax.ConcretizationTypeError, match=f"result length of {name}.*size="):
        numax.jit(getattr(xnp, name))(a, b)


def test_set_operation_argument_errors():
    a = np.arange(3)
    with pytest.raises(TypeError, match="size must be a static"):
        xnp.union1d(a, a, size=2.5)
    with pytest.raises(ValueError, match="size must be non-negative"):
        xnp.setxor1d(a, a, size=-1)
    with pytest.raises(ValueError, match="fill_value must be specified"):
        xnp.union1d(np.zeros(0), np.zeros(0), size=2)
    with pytest.raises(TypeError, match="intersect1d requires ndarray"):
        xnp.intersect1d([1, 2], a)


# --- isin ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, np.bool_, dtypes.bfloat16])
def test_isin_dtypes(dtype, rng):
    element, test = with_duplicates(rng, (3, 4), dtype), with_duplicates(rng, (2, 3), dtype)
    for invert in [False, True]:
        assert_same(xnp.isin(element, test, invert=invert), np.isin(element, test, invert=invert))


@pytest.mark.parametrize("method", ["compare_all", "binary_search"])
def test_isin_methods_and_shapes(method, rng):
    for shape1, shape2 in [((3, 4), (5,)), ((), (4,)), ((0,), (3,)), ((4,), (0,))]:
        element, test = with_duplicates(rng, shape1, np.int32), with_duplicates(rng, shape2, np.int32)
        assert_same(xnp.isin(element, test, method=method), np.isin(element, test))
    element = np.array([[np.nan, 1.5], [2.0, -0.0]], np.float32)
    test = np.array([2, 0, 7], np.int32)
    assert_same(xnp.isin(element, test, invert=True, method=method), np.array([[True, True], [False, False]]))
    assert_same(xnp.isin(element, np.array([np.nan], np.float32), method=method), np.zeros((2, 2), bool))


def test_isin_under_jit_and_errors():
    element, test = np.array([3, 1, 4, 1, 5], np.int32), np.array([1, 5, 9], np.int32)
    assert_same(numax.jit(lambda e, t: xnp.isin(e, t, invert=True))(element, test),
                np.array([True, False, True, False, False]))
    assert_same(xnp.isin(np.arange(4), np.array([1, 3]), assume_unique=True), np.array([False, True, False, True]))
    for method in ["auto", "sort"]:
        assert_same(xnp.isin(element, test, method=method), jnp.isin(element, test, method=method))
    with pytest.raises(ValueError, match="method='bogus' is not implemented"):
        xnp.isin(element, test, method="bogus")


# --- vectorize ----------------------------------------------------------------------------------------------------
def test_vectorize_elementwise_broadcasting(rng):
    def fun(a, b):
        return a * b + xnp.sin(a)

    x, y = rand(rng, (3, 1, 4), np.float32), rand(rng, (5, 1), np.float32)
    expected = jnp.vectorize(lambda a, b: a * b + jnp.sin(a))(x, y)
    np.testing.assert_allclose(xnp.vectorize(fun)(x, y), expected, rtol=1e-6)
    np.testing.assert_allclose(numax.jit(xnp.vectorize(fun))(x, y), expected, rtol=1e-6)
    assert xnp.vectorize(fun)(x, y).shape == (3, 5, 4)
    # size-1 loop dimensions of every argument stay size 1
    assert xnp.vectorize(fun)(np.ones((1, 2), np.float32), np.ones((1, 1), np.float32)).shape == (1, 2)
    assert xnp.vectorize(fun)(np.float32(2), 3.0).shape == ()


def test_vectorize_sees_scalars_and_keeps_name():
    seen = []

    def fun(a):
        seen.append(a.shape)
        return a + 1

    wrapped = xnp.vectorize(fun)
    assert wrapped.__name__ == "fun"
    assert_same(wrapped(np.arange(6, dtype=np.int32).reshape(2, 3)), np.arange(1, 7, dtype=np.int32).reshape(2, 3))
    assert seen == [()]


def test_vectorize_excluded_positional_and_keyword(rng):
    def scaled_power(x, power, scale=1.0):
        assert isinstance(power, int) and isinstance(scale, float)
        return scale * x ** power

    x = rand(rng, (2, 3), np.float32)
    ours = xnp.vectorize(scaled_power, excluded={1, "scale"})
    np.testing.assert_allclose(ours(x, 3, scale=2.0), 2.0 * x ** 3, rtol=1e-6)
    table = xnp.arange(4, dtype=np.float32)
    lookup = xnp.vectorize(lambda i, t: t[i], excluded={1})
    assert_same(lookup(np.array([[3, 0]], np.int32), table), np.array([[3.0, 0.0]], np.float32))
    with pytest.raises(TypeError, match="can only exclude integer or string"):
        xnp.vectorize(scaled_power, excluded={1.5})
    with pytest.raises(ValueError, match="contains negative numbers"):
        xnp.vectorize(scaled_power, excluded={-1})


def test_vectorize_signature(rng):
    def dot(a, b):
        assert a.ndim == b.ndim == 1
        return xnp.sum(a * b)

    x, y = rand(rng, (3, 1, 4), np.float32), rand(rng, (2, 4), np.float32)
    ours = xnp.vectorize(dot, signature="(n),(n)->()")
    expected = jnp.vectorize(lambda a, b: jnp.sum(a * b), signature="(n),(n)->()")(x, y)
    np.testing.assert_allclose(ours(x, y), expected, rtol=1e-5)
    np.testing.assert_allclose(numax.jit(ours)(x, y), expected, rtol=1e-5)

    def matvec(m, v):
        assert m.ndim == 2 and v.ndim == 1
        return m @ v

    m, v = rand(rng, (2, 3, 4), np.float32), rand(rng, (5, 1, 4), np.float32)
    expected = np.vectorize(lambda a, b: a @ b, signature="(m,n),(n)->(m)")(m, v)
    np.testing.assert_allclose(xnp.vectorize(matvec, signature="(m,n),(n)->(m)")(m, v), expected, rtol=1e-5)


def test_vectorize_signature_multiple_outputs(rng):
    def stats(a):
        return xnp.mean(a), a - xnp.mean(a)

    x = rand(rng, (2, 3, 5), np.float32)
    mean, centered = xnp.vectorize(stats, signature="(n)->(),(n)")(x)
    np.testing.assert_allclose(mean, x.mean(-1), rtol=1e-5)
    np.testing.assert_allclose(centered, x - x.mean(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_vectorize_under_vmap(rng):
    dot = xnp.vectorize(lambda a, b: xnp.sum(a * b), signature="(n),(n)->()")
    x, y = rand(rng, (4, 3, 5), np.float32), rand(rng, (3, 5), np.float32)
    np.testing.assert_allclose(numax.vmap(dot, in_axes=(0, None))(x, y), (x * y).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(numax.vmap(dot, in_axes=(1, None))(x, y[0]), np.swapaxes(x, 0, 1) @ y[0], rtol=1e-5)
    add = xnp.vectorize(lambda a, b: a + 2 * b)
    np.testing.assert_allclose(numax.vmap(add)(x, x), 3 * x, rtol=1e-6)
    np.testing.assert_allclose(numax.jit(numax.vmap(add, in_axes=(2, None)))(x, y[0, 0]),
                               np.moveaxis(x, 2, 0) + 2 * y[0, 0], rtol=1e-6)


def test_vectorize_signature_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        xnp.vectorize(lambda a: a, signature="(n)->")(x)
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n': 4 vs 3"):
        xnp.vectorize(lambda a, b: a, signature="(n),(n)->(n)")(x, np.ones(4))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        xnp.vectorize(lambda a: a, signature="(m,n,k)->()")(x)
    with pytest.raises(ValueError, match=r"output shape \(3,\) does not match core dimensions \(\)"):
        xnp.vectorize(lambda a: a, signature="(n)->()")(x)
    with pytest.raises(TypeError, match="wrong number of positional arguments: expected 2, got 1"):
        xnp.vectorize(lambda a, b: a, signature="(n),(n)->()")(x)
    with pytest.raises(TypeError, match="output must be a tuple"):
        xnp.vectorize(lambda a: a, signature="(n)->(n),()")(x)
    with pytest.raises(ValueError, match="cannot broadcast"):
        xnp.vectorize(lambda a, b: a + b)(np.ones(2), np.ones(3))


# --- apply_along_axis / apply_over_axes ---------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_apply_along_axis(axis, rng):
    x = rand(rng, (3, 4, 5), np.float32)
    cases = [
        (lambda r: xnp.sum(r * r), lambda r: np.sum(r * r)),
        (lambda r: r[::-1] * 2, lambda r: r[::-1] * 2),
        (lambda r: xnp.outer(r, r[:2]), lambda r: np.outer(r, r[:2])),
    ]
    for ours, numpys in cases:
        expected = np.apply_along_axis(numpys, axis, x)
        np.testing.assert_allclose(xnp.apply_along_axis(ours, axis, x), expected, rtol=1e-5)
        np.testing.assert_allclose(numax.jit(lambda v, f=ours: xnp.apply_along_axis(f, axis, v))(x), expected,
                                   rtol=1e-5)
    scaled = xnp.apply_along_axis(lambda r, k, offset=0: k * r + offset, axis, x, 3.0, offset=1.0)
    np.testing.assert_allclose(scaled, 3.0 * x + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="out of bounds"):
        xnp.apply_along_axis(xnp.sum, 3, x)


def test_apply_over_axes(rng):
    x = rand(rng, (2, 3, 4), np.float32)
    for axes in [[0], [0, 2], [2, 1, 0], []]:
        np.testing.assert_allclose(xnp.apply_over_axes(xnp.sum, x, axes), np.apply_over_axes(np.sum, x, axes),
                                   rtol=1e-5)
    keepdims = xnp.apply_over_axes(lambda a, axis: xnp.max(a, axis, keepdims=True), x, [1])
    np.testing.assert_allclose(keepdims, x.max(1, keepdims=True))
    with pytest.raises(ValueError, match="not returning an array of the correct shape"):
        xnp.apply_over_axes(lambda a, axis: xnp.sum(a), x, [0])


# --- piecewise ----------------------------------------------------------------------------------------------------
def test_piecewise(rng):
    cases = [
        (lambda v: [v < 0, v > 0], [lambda v: v * 10, 5]),
        (lambda v: [v < 0, v > 0], [lambda v: v * 2.7, 5, lambda v: v + 100]),
        (lambda v: [v < 0, v < 2], [lambda v: -v, 5]),  # later conditions win
        (lambda v: [v > 10], [1.5]),
    ]
    for dtype in [np.float32, np.int32]:
        x = np.arange(-4, 5).astype(dtype)
        for conditions, funclist in cases:
            expected = np.piecewise(x, conditions(x), funclist)
            if dtype == np.float32:
                assert_same(xnp.piecewise(x, conditions(x), funclist), expected)
            else:
                assert_same(numax.jit(lambda v, c=conditions, f=funclist: xnp.piecewise(v, c(v), f))(x), expected)
    x = np.arange(-4, 5).astype(np.int32)
    assert_same(xnp.piecewise(x, [x < 0, x > 0], cases[1][1]), jnp.piecewise(x, [x < 0, x > 0], cases[1][1]))
    x2 = rand(rng, (2, 3), np.float32)
    expected = np.piecewise(x2, [x2 < 0], [lambda v, k, shift=0: v * k + shift, 1.0], 3.0, shift=2.0)
    np.testing.assert_allclose(xnp.piecewise(x2, [x2 < 0], [lambda v, k, shift=0: v * k + shift, 1.0], 3.0,
                                             shift=2.0), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"with 2 condition\(s\), either 2 or 3 functions are expected; got 1"):
        xnp.piecewise(x2, [x2 < 0, x2 > 0], [1])


def test_piecewise_under_jit_and_vmap(rng):
    def f(v):
        return xnp.piecewise(v, [v < -1, v > 1], [lambda t: t * t, xnp.sin, 0.5])

    x = rand(rng, (4, 6), np.float32)
    expected = np.piecewise(x, [x < -1, x > 1], [lambda t: t * t, np.sin, 0.5])
    np.testing.assert_allclose(numax.jit(f)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(numax.vmap(f)(x), expected, rtol=1e-6)


# --- fromfunction -------------------------------------------------------------------------------------------------
def test_fromfunction():
    for dtype, expected_dtype in [(float, np.float32), (np.int16, np.int16)]:
        ours = xnp.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=dtype)
        assert_same(ours, np.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=expected_dtype))
    seen = []

    def scalar_only(i, j, k, scale=1):
        seen.append((i.shape, j.shape, k.shape))
        return scale * (i + 2 * j - k)

    assert_same(xnp.fromfunction(scalar_only, (2, 3, 2), dtype=int, scale=3),
                np.fromfunction(lambda i, j, k: 3 * (i + 2 * j - k), (2, 3, 2), dtype=np.int32))
    assert seen == [((), (), ())]
    total, product = xnp.fromfunction(lambda i, j: (i + j, i * j), (2, 3))
    assert_same(total, np.fromfunction(lambda i, j: i + j, (2, 3), dtype=np.float32))
    assert_same(product, np.fromfunction(lambda i, j: i * j, (2, 3), dtype=np.float32))
    assert_same(xnp.fromfunction(lambda i: i * i, 4, dtype=int), np.arange(4, dtype=np.int32) ** 2)
    assert_same(xnp.fromfunction(lambda i, j: i + j, (0, 3)), np.zeros((0, 3), np.float32))
    with pytest.raises(TypeError, match="sequence of integers"):
        xnp.fromfunction(lambda i: i, (2.5,))


# --- choose -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(mode, rng):
    low, high = (0, 3) if mode == "raise" else (-5, 8)
    for a_shape, choice_shapes in [((6,), [(6,)] * 3), ((2, 3), [(3,), (2, 1), ()])]:
        a = rng.integers(low, high, size=a_shape).astype(np.int32)
        choices = [rand(rng, s, np.float32) for s in choice_shapes]
        expected = np.choose(a, choices, mode=mode)
        assert_same(xnp.choose(a, choices, mode=mode), expected)
        if mode != "raise":
            assert_same(numax.jit(lambda i, c: xnp.choose(i, c, mode=mode))(a, choices), expected)
    stacked = rand(rng, (3, 4), np.int16)
    a = np.array([2, 0, 1, 1], np.int8)
    assert_same(xnp.choose(a, stacked, mode=mode), np.choose(a, stacked, mode=mode))
    if mode == "clip":
        a = np.array([[3, -1, 1, 0]], np.int8)
        assert_same(xnp.choose(a, stacked, mode=mode), jnp.choose(a, stacked, mode=mode))


def test_choose_errors():
    choices = [np.arange(3), np.arange(3) * 2]
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        xnp.choose(np.array([0, 2, 1]), choices)
    with pytest.raises(numax.ConcretizationTypeError, match="mode='wrap' or mode='clip'"):
        numax.jit(lambda a: xnp.choose(a, choices))(np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="must be integer typed"):
        xnp.choose(np.array([0.0, 1.0, 1.0]), choices)
    with pytest.raises(ValueError, match="mode='nearest' not understood"):
        xnp.choose(np.array([0, 1, 1]), choices, mode="nearest")
    with pytest.raises(NotImplementedError, match="'out' argument"):
        xnp.choose(np.array([0, 1, 1]), choices, out=np.zeros(3))


# --- block --------------------------------------------------------------------------------------------------------
def test_block(rng):
    a, b = rand(rng, (2, 2), np.float32), rand(rng, (2, 3), np.float32)
    c, d = rand(rng, (1, 2), np.float32), rand(rng, (1, 3), np.float32)
    cases = [
        [[a, b], [c, d]],
        [a, b],
        [1, 2, np.arange(3, dtype=np.int32)],
        [[[a]], [[np.ones((2, 2), np.float32)]]],
        [[np.eye(2, dtype=np.float32), np.zeros((2, 1), np.float32)], [np.ones((1, 2), np.float32), 7.0]],
        np.float32(3.0),
        a,
    ]
    for blocks in cases:
        expected = jax.eval_shape(jnp.block, blocks)
        assert_same(xnp.block(blocks), np.block(blocks).astype(expected.dtype))
        assert np.shape(xnp.block(blocks)) == expected.shape
    traced = numax.jit(lambda p, q, r, s: xnp.block([[p, q], [r, s]]))(a, b, c, d)
    assert_same(traced, np.block([[a, b], [c, d]]))
    with pytest.raises(ValueError, match="does not allow tuples"):
        xnp.block((a, b))
    with pytest.raises(ValueError, match="does not allow empty list"):
        xnp.block([a, []])
    with pytest.raises(ValueError, match="Mismatched list depths"):
        xnp.block([[a], b])
