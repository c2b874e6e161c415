"""numax.numpy sorting, order statistics, running and NaN-ignoring reductions, convolve/correlate and the
counting functions, against jax.numpy (values and dtypes) and numpy."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from hypothesis import given
from hypothesis import strategies as st

import numax
import numax.numpy as xnp


def eager_and_jit(fn, *args, eager=True):
    """fn(*args) under numax.jit, and eagerly (every primitive compiled alone: slow, so only where asked)."""
    return ([fn(*args)] if eager else []) + [numax.jit(fn)(*args)]


def with_nans(rng, shape, dtype=np.float32, fraction=0.3):
    x = rand(rng, shape, dtype)
    x[rng.random(shape) < fraction] = np.nan
    return x


# --- sort / argsort / lexsort / partition ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype,axis", [(np.float32, -1), (np.float32, None), (np.int32, 0), (np.uint8, -1),
                                        (np.bool_, 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(rng, dtype, axis, descending):
    x = rand(rng, (4, 6), dtype, -2, 2)  # small values: many ties
    if dtype == np.float32:
        x[0, :3] = np.nan
    for fn in ("sort", "argsort"):
        expected = getattr(jnp, fn)(x, axis=axis, descending=descending)
        for result in eager_and_jit(lambda x: getattr(xnp, fn)(x, axis=axis, descending=descending), x):
            assert_close(result, expected)


def test_argsort_is_stable_and_methods_work(rng):
    x = rng.integers(0, 3, 30).astype(np.int32)
    np.testing.assert_array_equal(xnp.argsort(x), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(xnp.argsort(x, descending=True), np.argsort(-x, kind="stable"))
    a = xnp.asarray(x)
    np.testing.assert_array_equal(a.sort(), np.sort(x))
    np.testing.assert_array_equal(a.argsort(), np.argsort(x, kind="stable"))
    assert xnp.argsort(x, dtype=np.int16).dtype == np.int16
    assert_close(xnp.sort_complex(x), jnp.sort_complex(x))
    c = np.array([1 + 2j, 1 - 1j, -3 + 0j, np.nan], np.complex64)
    assert_close(xnp.sort_complex(c), jnp.sort_complex(c))


def test_sort_errors():
    with pytest.raises(TypeError, match="order"):
        xnp.sort(np.arange(3), order="x")
    with pytest.raises(ValueError, match="0-d"):
        xnp.argsort(np.float32(1), axis=0)


def test_lexsort(rng):
    keys = [rng.integers(0, 3, (2, 12)).astype(np.int32) for _ in range(3)]
    for axis in (-1, 0):
        expected = jnp.lexsort(keys, axis=axis)
        for result in eager_and_jit(lambda *k: xnp.lexsort(k, axis=axis), *keys):
            assert_close(result, expected)


@pytest.mark.parametrize("kth", [0, 3, -1])
def test_partition_and_argpartition(rng, kth):
    x = rand(rng, (3, 7), np.float32)
    part = np.asarray(xnp.partition(x, kth, axis=1))
    pivot = np.sort(x, axis=1)[:, kth][:, None]
    np.testing.assert_array_equal(part[:, kth:kth + 1 if kth != -1 else None][:, :1], pivot)
    position = kth % 7
    assert (part[:, :position] <= pivot).all() and (part[:, position:] >= pivot).all()
    indices = np.asarray(xnp.argpartition(x, kth, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, indices, 1)[:, position], pivot[:, 0])
    with pytest.raises(ValueError, match="out of bounds"):
        xnp.partition(x, 7)


# --- searchsorted -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", ["scan", "compare_all"])
def test_searchsorted(rng, side, method):
    a = np.sort(rng.integers(0, 6, 12)).astype(np.float32)
    a[-2:] = np.nan
    v = np.array([[-1, 0, 2.5], [3, np.nan, 9]], np.float32)
    expected = jnp.searchsorted(a, v, side=side)
    for result in eager_and_jit(lambda a, v: xnp.searchsorted(a, v, side=side, method=method), a, v):
        assert_close(result, expected)
    assert_close(xnp.searchsorted(np.zeros(0, np.int32), np.arange(3), side=side, method=method), np.zeros(3, np.int32))
    ints = np.array([0, 0, 1, 1, 1, 4], np.int32)
    expected_scalar = np.int32(np.searchsorted(ints, 1, side))
    assert_close(xnp.searchsorted(ints, np.int32(1), side=side, method=method), expected_scalar)
    np.testing.assert_array_equal(xnp.searchsorted(a[:-2], v[0], side=side), np.searchsorted(a[:-2], v[0], side=side))
    sorter = rng.permutation(10)
    unsorted = np.sort(rng.standard_normal(10)).astype(np.float32)[np.argsort(sorter)]
    np.testing.assert_array_equal(xnp.searchsorted(unsorted, v[0], side=side, sorter=np.argsort(unsorted)),
                                  np.searchsorted(unsorted, v[0], side=side, sorter=np.argsort(unsorted)))
    assert xnp.asarray(a).searchsorted(2.0, side=side).shape == ()
    with pytest.raises(ValueError, match="side must be"):
        xnp.searchsorted(a, v, side="middle")


# --- unique ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [np.array([[3, 1, 2, 1], [0, 0, 5, 4]], np.int32),
                               np.array([2.0, np.nan, 1.0, np.nan, 2.0], np.float32),
                               np.array([True, False, True]), np.zeros(0, np.float32), np.array(7)])
def test_unique_all_outputs(x):
    expected = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    result = xnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for r, e in zip(result, expected):
        assert_close(r, e)
    assert_close(xnp.unique(x), jnp.unique(x))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_along_an_axis(rng, axis):
    x = rng.integers(0, 2, (5, 2, 3)).astype(np.float32)
    x[0, 0, 0] = x[3, 0, 0] = np.nan
    x[4] = x[1]
    expected = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    result = xnp.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    for r, e in zip(result, expected):
        assert_close(r, e)
    expected = jnp.unique(x, axis=axis, size=6, return_counts=True)
    fn = numax.jit(lambda x: xnp.unique(x, axis=axis, size=6, return_counts=True))
    for r, e in zip(fn(x), expected):
        assert_close(r, e)


def test_unique_equal_nan_false_and_array_api_forms():
    x = np.array([np.nan, 1, np.nan], np.float32)
    assert_close(xnp.unique(x, equal_nan=False), jnp.unique(x, equal_nan=False))
    assert_close(xnp.unique_counts(x).counts, jnp.unique_counts(x).counts)
    assert_close(xnp.unique_inverse(x).inverse_indices, jnp.unique_inverse(x).inverse_indices)
    assert_close(xnp.unique_values(x), jnp.unique_values(x))


@pytest.mark.parametrize("size,fill_value", [(6, None), (2, None), (5, -1)])
def test_unique_with_size_under_jit(size, fill_value):
    x = np.array([3, 1, 3, 1, 2], np.int32)
    expected = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                          fill_value=fill_value)
    fn = numax.jit(lambda x: xnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                                        fill_value=fill_value))
    for r, e in zip(fn(x), expected):
        assert_close(r, e)


def test_unique_under_jit_without_size_explains():
    with pytest.raises(numax.ConcretizationTypeError, match="static `size`"):
        numax.jit(xnp.unique)(np.arange(3))


# --- quantiles -------------------------------------------------------------------------------------------------
_quantile_methods = ["linear", "lower", "higher", "nearest", "midpoint"]


@pytest.mark.parametrize("method", _quantile_methods)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False)])
def test_quantile_methods(rng, method, axis, keepdims):
    x = rand(rng, (3, 5, 4), np.float32)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)
    expected = jnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims)
    fn = lambda x, q: xnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims)  # noqa: E731
    for result in eager_and_jit(fn, x, q, eager=axis is None):
        assert_close(result, expected, scale=4)
    if method != "nearest":  # numpy rounds exact halves to even, JAX (and numax) down
        assert_close(xnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims),
                     np.quantile(x, q, axis=axis, method=method, keepdims=keepdims).astype(np.float32), scale=4)


@pytest.mark.parametrize("method", _quantile_methods)
def test_nan_quantiles(rng, method):
    x = with_nans(rng, (4, 7))
    x[2] = np.nan
    for fn in ("quantile", "nanquantile"):
        expected = getattr(jnp, fn)(x, 0.3, axis=1, method=method)
        assert_close(numax.jit(lambda x: getattr(xnp, fn)(x, 0.3, axis=1, method=method))(x), expected, scale=4)
    # q avoids positions that land exactly on an integer, where XLA's rewrite of q / 100 into q * 0.01 in
    # JAX's jitted code may round the other way.
    q = np.array([10, 55])
    assert_close(numax.jit(lambda x: xnp.nanpercentile(x, q, axis=1, method=method))(x),
                 jnp.nanpercentile(x, q, axis=1, method=method), scale=4)


def test_median_percentile_and_dtypes(rng):
    x = rand(rng, (4, 6), np.int32)
    for args in [(), (1,)]:
        assert_close(xnp.median(x, *args), jnp.median(x, *args))
        assert_close(numax.jit(lambda x: xnp.percentile(x, 35, *args))(x), jnp.percentile(x, 35, *args), scale=4)
    y = with_nans(rng, (5, 4))
    assert_close(numax.jit(lambda y: xnp.median(y, axis=0))(y), jnp.median(y, axis=0))
    assert_close(numax.jit(lambda y: xnp.nanmedian(y, axis=0, keepdims=True))(y),
                 jnp.nanmedian(y, axis=0, keepdims=True))
    h = rand(rng, (9,), np.float16)
    assert_close(numax.jit(lambda h: xnp.quantile(h, 0.3))(h), jnp.quantile(h, 0.3))
    with pytest.raises(ValueError, match="method must be one of"):
        xnp.quantile(x, 0.5, method="cubic")


# --- running reductions ---------------------------------------------------------------------------------------
_running = ["cumsum", "cumprod", "nancumsum", "nancumprod"]


@pytest.mark.parametrize("dtype,axis", [(np.float32, None), (np.float32, -1), (np.int8, 0), (np.uint8, -1),
                                        (np.bool_, None), (np.float16, 0)])
def test_cumulative_functions(rng, dtype, axis):
    x = rand(rng, (3, 4), dtype, -1.5, 1.5)
    if dtype == np.float32:
        x[1, 2] = np.nan
    expected = jax.jit(lambda x: [getattr(jnp, name)(x, axis=axis) for name in _running])(x)
    for results in eager_and_jit(lambda x: [getattr(xnp, name)(x, axis=axis) for name in _running], x,
                                 eager=axis is None):
        for result, want in zip(results, expected):
            assert_close(result, want, scale=4)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype,include_initial", [(np.int8, False), (np.uint32, True), (np.bool_, True),
                                                   (np.float32, False)])
def test_cumulative_sum_prod(rng, name, dtype, include_initial):
    x = rand(rng, (3, 4), dtype, -2, 2)
    expected = getattr(jnp, name)(x, axis=1, include_initial=include_initial)
    assert_close(getattr(xnp, name)(x, axis=1, include_initial=include_initial), expected, scale=4)
    with pytest.raises(ValueError, match="pass an axis"):
        getattr(xnp, name)(x)


def test_cumsum_dtype_argument_and_methods(rng):
    x = rand(rng, (2, 5), np.int8)
    assert_close(xnp.cumsum(x, axis=1, dtype=np.float32), jnp.cumsum(x, axis=1, dtype=np.float32))
    assert_close(xnp.asarray(x).cumsum(0), jnp.asarray(x).cumsum(0))
    assert_close(xnp.asarray(x).cumprod(), jnp.asarray(x).cumprod())


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_cumsum_hypothesis(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = np.random.default_rng(len(shape)).integers(-9, 9, shape).astype(np.int32)
    assert_close(xnp.cumsum(x, axis=axis), np.cumsum(x, axis=axis).astype(np.int32))


@pytest.mark.parametrize("dtype,n,axis", [(np.int32, 1, -1), (np.uint8, 2, 0), (np.bool_, 1, 0), (np.float32, 0, 1),
                                          (np.float32, 3, 1)])
def test_diff(rng, dtype, n, axis):
    x = rand(rng, (4, 5), dtype)
    assert_close(xnp.diff(x, n, axis), jnp.diff(x, n, axis))
    assert_close(xnp.diff(x, n, axis, prepend=1, append=x[:1] if axis == 0 else x[:, :1]),
                 jnp.diff(x, n, axis, prepend=1, append=x[:1] if axis == 0 else x[:, :1]))


def test_ediff1d():
    x = np.array([[1, 2], [4, 7]], np.int32)
    assert_close(xnp.ediff1d(x), jnp.ediff1d(x))
    assert_close(xnp.ediff1d(x, to_end=np.array([9, 8]), to_begin=-1),
                 jnp.ediff1d(x, to_end=np.array([9, 8]), to_begin=-1))


# --- NaN-ignoring reductions ------------------------------------------------------------------------------------
_nan_reductions = ["nansum", "nanprod", "nanmax", "nanmin", "nanargmax", "nanargmin", "nanmean", "nanvar", "nanstd"]


@pytest.mark.parametrize("dtype,axis,keepdims", [(np.float32, None, False), (np.float32, 1, False),
                                                 (np.float32, 0, True), (np.int8, 1, False), (np.float16, None, False)])
def test_nan_reductions(rng, dtype, axis, keepdims):
    x = rand(rng, (4, 5), dtype, -2, 2)
    if dtype != np.int8:
        x[rng.random((4, 5)) < 0.3] = np.nan
        x[:, 3] = np.nan  # an all-NaN column
    kwargs = dict(axis=axis, keepdims=keepdims)
    # All the functions in one program: one compile for the oracle, one for numax.
    expected = jax.jit(lambda x: [getattr(jnp, name)(x, **kwargs) for name in _nan_reductions])(x)
    for results in eager_and_jit(lambda x: [getattr(xnp, name)(x, **kwargs) for name in _nan_reductions], x,
                                 eager=axis is None):
        for result, want in zip(results, expected):
            assert_close(result, want, scale=4)


def test_nanvar_ddof(rng):
    x = with_nans(rng, (3, 6))
    assert_close(xnp.nanvar(x, axis=1, ddof=1), jnp.nanvar(x, axis=1, ddof=1))
    assert_close(xnp.nanstd(x, ddof=2), jnp.nanstd(x, ddof=2))


# --- convolve / correlate ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sizes", [(7, 3), (3, 7), (4, 4), (1, 5)])
def test_convolve_correlate(rng, mode, sizes):
    a, v = rand(rng, (sizes[0],), np.float32), rand(rng, (sizes[1],), np.float32)
    for fn in ("convolve", "correlate"):
        for result in eager_and_jit(lambda a, v: getattr(xnp, fn)(a, v, mode), a, v):
            assert_close(result, getattr(jnp, fn)(a, v, mode), scale=10)
            assert_close(result, getattr(np, fn)(a, v, mode).astype(np.float32), scale=10)


def test_convolve_dtypes_and_complex(rng):
    a, v = np.arange(5, dtype=np.int32), np.array([1, -1], np.int32)
    assert_close(xnp.convolve(a, v), jnp.convolve(a, v))
    c = rand(rng, (6,), np.complex64)
    assert_close(xnp.correlate(c, c[:3] * 1j, "full"), np.correlate(c, c[:3] * 1j, "full"), scale=10)
    with pytest.raises(ValueError, match="only support 1-dimensional"):
        xnp.convolve(np.ones((2, 2)), v)
    with pytest.raises(ValueError, match="mode must be one of"):
        xnp.correlate(a, v, "circular")


# --- interp, digitize, bincount, histogram -------------------------------------------------------------------
def test_interp(rng):
    xp = np.sort(rng.uniform(0, 5, 6)).astype(np.float32)
    fp = rng.standard_normal(6).astype(np.float32)
    x = np.array([-1.0, 0.5, 2.0, 4.9, 6.0, xp[2]], np.float32)
    for kwargs in [{}, dict(left=-9.0, right=9.0), dict(period=4.0)]:
        expected = jnp.interp(x, xp, fp, **kwargs)
        fn = lambda x, xp, fp: xnp.interp(x, xp, fp, **kwargs)  # noqa: E731
        for result in eager_and_jit(fn, x, xp, fp, eager=not kwargs):
            assert_close(result, expected, scale=10)


def test_digitize(rng):
    x = np.array([-1, 0, 0.5, 1, 2.5, 3], np.float32)
    for bins in [np.array([0, 1, 2], np.float32), np.array([2, 1, 0], np.float32)]:
        for right in (False, True):
            assert_close(xnp.digitize(x, bins, right=right), jnp.digitize(x, bins, right=right))


def test_bincount(rng):
    x = rng.integers(0, 6, 20).astype(np.int32)
    w = rand(rng, (20,), np.float32)
    assert_close(xnp.bincount(x), jnp.bincount(x))
    assert_close(xnp.bincount(x, w, minlength=9), jnp.bincount(x, w, minlength=9))
    fn = numax.jit(lambda x, w: xnp.bincount(x, w, length=4))
    assert_close(fn(x, w), jnp.bincount(x, w, length=4))
    with pytest.raises(numax.ConcretizationTypeError, match="static `length`"):
        numax.jit(xnp.bincount)(x)
    with pytest.raises(TypeError, match="integer type"):
        xnp.bincount(w)


@pytest.mark.parametrize("bins,range_", [(10, None), (4, (-1.0, 1.0)), (np.array([-2.0, -0.5, 0.0, 3.0]), None)])
@pytest.mark.parametrize("weighted,density", [(False, False), (True, False), (False, True)])
def test_histogram(rng, bins, range_, weighted, density):
    x = rand(rng, (40,), np.float32)
    weights = rand(rng, (40,), np.float32) if weighted else None
    expected_counts, expected_edges = jnp.histogram(x, bins, range_, weights, density)
    for counts, edges in eager_and_jit(lambda x: xnp.histogram(x, bins, range_, weights, density), x,
                                       eager=not (weighted or density)):
        assert_close(edges, expected_edges)
        assert_close(counts, expected_counts, scale=10)
