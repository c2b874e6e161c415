"""numax.numpy sorting, order statistics, running and NaN-ignoring reductions, convolve/correlate and the
counting functions, against jax.numpy (values and dtypes) and numpy."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from hypothesis import given
from hypothesis import strategies as st
from oracle import jit_table

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
def jax_table(keys, make_function, make_arguments):
    """{key: make_function(*key)(*make_arguments(*key))}, computed by one jax.jit program (cached by the caller)."""
    return jit_table(keys, [make_function(*key) for key in keys], [make_arguments(*key) for key in keys])


SORT_CASES = [(np.float32, -1), (np.float32, None), (np.int32, 0), (np.uint8, -1), (np.bool_, 0)]


def _sort_input(dtype):
    x = rand(np.random.default_rng(0), (4, 6), dtype, -2, 2)  # small values: many ties
    if dtype == np.float32:
        x[0, :3] = np.nan
    return x


@functools.cache
def _jax_sorts():
    # The oracle of every case from one jax program.
    keys = [(fn, np.dtype(dtype).name, axis, descending) for dtype, axis in SORT_CASES for descending in (False, True)
            for fn in ("sort", "argsort")]
    return jax_table(keys, lambda fn, _, axis, descending: lambda x: getattr(jnp, fn)(x, axis=axis,
                                                                                      descending=descending),
                     lambda _, dtype, *__: (_sort_input(np.dtype(dtype)),))


@pytest.mark.parametrize("dtype,axis", SORT_CASES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(dtype, axis, descending):
    x = _sort_input(dtype)
    for fn in ("sort", "argsort"):
        expected = _jax_sorts()[fn, np.dtype(dtype).name, axis, descending]
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


def _unique_axis_input():
    x = np.random.default_rng(0).integers(0, 2, (5, 2, 3)).astype(np.float32)
    x[0, 0, 0] = x[3, 0, 0] = np.nan
    x[4] = x[1]
    return x


@functools.cache
def _jax_unique_axis_with_size():
    # The oracle of the cases with a static size from one jax program (without one, jax's unique runs eagerly).
    return jax_table([(0,), (1,), (-1,)], lambda axis: lambda x: jnp.unique(x, axis=axis, size=6, return_counts=True),
                     lambda _: (_unique_axis_input(),))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_along_an_axis(axis):
    x = _unique_axis_input()
    expected = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    result = xnp.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    for r, e in zip(result, expected):
        assert_close(r, e)
    expected = _jax_unique_axis_with_size()[axis,]
    fn = numax.jit(lambda x: xnp.unique(x, axis=axis, size=6, return_counts=True))
    for r, e in zip(fn(x), expected):
        assert_close(r, e)


def test_unique_equal_nan_false_and_array_api_forms():
    x = np.array([np.nan, 1, np.nan], np.float32)
    assert_close(xnp.unique(x, equal_nan=False), jnp.unique(x, equal_nan=False))
    assert_close(xnp.unique_counts(x).counts, jnp.unique_counts(x).counts)
    assert_close(xnp.unique_inverse(x).inverse_indices, jnp.unique_inverse(x).inverse_indices)
    assert_close(xnp.unique_values(x), jnp.unique_values(x))


_unique_sizes = [(6, None), (2, None), (5, -1)]


@functools.cache
def _jax_unique_with_size():
    # The oracle of every case from one jax program.
    return jax_table(_unique_sizes, lambda size, fill_value: lambda x: jnp.unique(
        x, return_index=True, return_inverse=True, return_counts=True, size=size, fill_value=fill_value),
        lambda *_: (np.array([3, 1, 3, 1, 2], np.int32),))


@pytest.mark.parametrize("size,fill_value", _unique_sizes)
def test_unique_with_size_under_jit(size, fill_value):
    x = np.array([3, 1, 3, 1, 2], np.int32)
    expected = _jax_unique_with_size()[size, fill_value]
    fn = numax.jit(lambda x: xnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                                        fill_value=fill_value))
    for r, e in zip(fn(x), expected):
        assert_close(r, e)


def test_unique_under_jit_without_size_explains():
    with pytest.raises(numax.ConcretizationTypeError, match="static `size`"):
        numax.jit(xnp.unique)(np.arange(3))


# --- quantiles -------------------------------------------------------------------------------------------------
_quantile_methods = ["linear", "lower", "higher", "nearest", "midpoint"]


_quantile_axes = [(None, False), (1, True), ((0, 2), False)]
_quantile_input = rand(np.random.default_rng(0), (3, 5, 4), np.float32)
_quantile_q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)


@functools.cache
def _jax_quantiles():
    # The oracle of every case from one jax program.
    keys = [(method, axis, keepdims) for method in _quantile_methods for axis, keepdims in _quantile_axes]
    return jax_table(keys, lambda method, axis, keepdims: lambda x, q: jnp.quantile(x, q, axis=axis, method=method,
                                                                                    keepdims=keepdims),
                     lambda *_: (_quantile_input, _quantile_q))


@pytest.mark.parametrize("method", _quantile_methods)
@pytest.mark.parametrize("axis,keepdims", _quantile_axes)
def test_quantile_methods(method, axis, keepdims):
    x, q = _quantile_input, _quantile_q
    expected = _jax_quantiles()[method, axis, keepdims]
    fn = lambda x, q: xnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims)  # noqa: E731
    # Eager where axis is None; the numpy check reuses these results (with an axis: the jitted one) instead of
    # running the function eagerly once more.
    for result in eager_and_jit(fn, x, q, eager=axis is None):
        assert_close(result, expected, scale=4)
        if method != "nearest":  # numpy rounds exact halves to even, JAX (and numax) down
            assert_close(result, np.quantile(x, q, axis=axis, method=method, keepdims=keepdims).astype(np.float32),
                         scale=4)


def _nan_quantile_input():
    x = with_nans(np.random.default_rng(0), (4, 7))
    x[2] = np.nan
    return x


@functools.cache
def _jax_nan_quantiles():
    # The oracle of every case from one jax program (q is an argument, traced as in jax's jitted functions).
    qs = {"quantile": 0.3, "nanquantile": 0.3, "nanpercentile": np.array([10, 55])}
    keys = [(fn, method) for fn in qs for method in _quantile_methods]
    return jax_table(keys, lambda fn, method: lambda x, q: getattr(jnp, fn)(x, q, axis=1, method=method),
                     lambda fn, _: (_nan_quantile_input(), qs[fn]))


@pytest.mark.parametrize("method", _quantile_methods)
def test_nan_quantiles(method):
    x = _nan_quantile_input()
    for fn in ("quantile", "nanquantile"):
        expected = _jax_nan_quantiles()[fn, method]
        assert_close(numax.jit(lambda x: getattr(xnp, fn)(x, 0.3, axis=1, method=method))(x), expected, scale=4)
    # q avoids positions that land exactly on an integer, where XLA's rewrite of q / 100 into q * 0.01 in
    # JAX's jitted code may round the other way.
    q = np.array([10, 55])
    assert_close(numax.jit(lambda x: xnp.nanpercentile(x, q, axis=1, method=method))(x),
                 _jax_nan_quantiles()["nanpercentile", method], scale=4)


def test_median_percentile_and_dtypes(rng):
    x = rand(rng, (4, 6), np.int32)
    y = with_nans(rng, (5, 4))
    h = rand(rng, (9,), np.float16)
    # jax's results from one program (q is an argument, traced as in jax's jitted functions).
    want = jax.jit(lambda x, y, h, p, q: [
        jnp.median(x), jnp.percentile(x, p), jnp.median(x, 1), jnp.percentile(x, p, 1), jnp.median(y, axis=0),
        jnp.nanmedian(y, axis=0, keepdims=True), jnp.quantile(h, q)])(x, y, h, 35, 0.3)
    for n, args in enumerate([(), (1,)]):
        assert_close(xnp.median(x, *args), want[2 * n])
        assert_close(numax.jit(lambda x: xnp.percentile(x, 35, *args))(x), want[2 * n + 1], scale=4)
    assert_close(numax.jit(lambda y: xnp.median(y, axis=0))(y), want[4])
    assert_close(numax.jit(lambda y: xnp.nanmedian(y, axis=0, keepdims=True))(y), want[5])
    assert_close(numax.jit(lambda h: xnp.quantile(h, 0.3))(h), want[6])
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


_cumulative_cases = [(np.int8, False), (np.uint32, True), (np.bool_, True), (np.float32, False)]


@functools.cache
def _jax_cumulative_sum_prod():
    # The oracle of every case from one jax program.
    keys = [(name, np.dtype(dtype).name, include_initial) for name in ("cumulative_sum", "cumulative_prod")
            for dtype, include_initial in _cumulative_cases]
    return jax_table(keys, lambda name, _, include_initial: lambda x: getattr(jnp, name)(
        x, axis=1, include_initial=include_initial), lambda _, dtype, __: (rand(np.random.default_rng(0), (3, 4),
                                                                                  np.dtype(dtype), -2, 2),))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype,include_initial", _cumulative_cases)
def test_cumulative_sum_prod(rng, name, dtype, include_initial):
    x = rand(rng, (3, 4), dtype, -2, 2)
    expected = _jax_cumulative_sum_prod()[name, np.dtype(dtype).name, include_initial]
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


_diff_cases = [(np.int32, 1, -1), (np.uint8, 2, 0), (np.bool_, 1, 0), (np.float32, 0, 1), (np.float32, 3, 1)]


@functools.cache
def _jax_diffs():
    # The oracle of every case, without and with prepend/append, from one jax program.
    def diffs(_, n, axis):
        return lambda x: (jnp.diff(x, n, axis),
                          jnp.diff(x, n, axis, prepend=1, append=x[:1] if axis == 0 else x[:, :1]))

    return jax_table([(np.dtype(dtype).name, n, axis) for dtype, n, axis in _diff_cases], diffs,
                     lambda dtype, *_: (rand(np.random.default_rng(0), (4, 5), np.dtype(dtype)),))


@pytest.mark.parametrize("dtype,n,axis", _diff_cases)
def test_diff(rng, dtype, n, axis):
    x = rand(rng, (4, 5), dtype)
    expected, expected_padded = _jax_diffs()[np.dtype(dtype).name, n, axis]
    assert_close(xnp.diff(x, n, axis), expected)
    assert_close(xnp.diff(x, n, axis, prepend=1, append=x[:1] if axis == 0 else x[:, :1]), expected_padded)


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
_convolve_modes = ["full", "same", "valid"]
_convolve_sizes = [(7, 3), (3, 7), (4, 4), (1, 5)]


def _convolve_inputs(sizes):
    rng = np.random.default_rng(0)
    return rand(rng, (sizes[0],), np.float32), rand(rng, (sizes[1],), np.float32)


@functools.cache
def _jax_convolutions():
    # The oracle of every case from one jax program.
    keys = [(fn, mode, sizes) for fn in ("convolve", "correlate") for mode in _convolve_modes
            for sizes in _convolve_sizes]
    return jax_table(keys, lambda fn, mode, _: lambda a, v: getattr(jnp, fn)(a, v, mode),
                     lambda _, __, sizes: _convolve_inputs(sizes))


@pytest.mark.parametrize("mode", _convolve_modes)
@pytest.mark.parametrize("sizes", _convolve_sizes)
def test_convolve_correlate(mode, sizes):
    a, v = _convolve_inputs(sizes)
    for fn in ("convolve", "correlate"):
        for result in eager_and_jit(lambda a, v: getattr(xnp, fn)(a, v, mode), a, v):
            assert_close(result, _jax_convolutions()[fn, mode, sizes], scale=10)
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


_histogram_bins = [(10, None), (4, (-1.0, 1.0)), (np.array([-2.0, -0.5, 0.0, 3.0]), None)]
_histogram_weighting = [(False, False), (True, False), (False, True)]


def _histogram_inputs(weighted):
    rng = np.random.default_rng(0)
    x = rand(rng, (40,), np.float32)
    return x, rand(rng, (40,), np.float32) if weighted else None


@functools.cache
def _jax_histograms():
    # The oracle of every case from one jax program: {(bins' position, weighted, density): (counts, edges)}.
    keys = [(case, weighted, density) for case in range(len(_histogram_bins)) for weighted, density in
            _histogram_weighting]
    return jax_table(keys, lambda case, _, density: lambda x, weights: jnp.histogram(x, *_histogram_bins[case],
                                                                                      weights, density),
                     lambda _, weighted, __: _histogram_inputs(weighted))


@pytest.mark.parametrize("bins,range_", _histogram_bins)
@pytest.mark.parametrize("weighted,density", _histogram_weighting)
def test_histogram(bins, range_, weighted, density):
    x, weights = _histogram_inputs(weighted)
    case = next(n for n, row in enumerate(_histogram_bins) if row[0] is bins)
    expected_counts, expected_edges = _jax_histograms()[case, weighted, density]
    for counts, edges in eager_and_jit(lambda x: xnp.histogram(x, bins, range_, weights, density), x,
                                       eager=not (weighted or density)):
        assert_close(edges, expected_edges)
        assert_close(counts, expected_counts, scale=10)
