"""reduce_window, the cumulative reductions and the convolutions against jax.lax, eagerly and under jit."""

import numpy as np
import pytest
from harness import assert_close, jax, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import dtypes

import numax
from numax import lax


def eager_and_jit(fn, *args):
    return [fn(*args), numax.jit(fn)(*args)]


# --- padding helpers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("padding", ["SAME", "VALID", "SAME_LOWER", "same"])
@pytest.mark.parametrize("in_shape,window,strides", [((7, 8), (3, 2), (2, 3)), ((5,), (4,), (1,)),
                                                     ((1, 9), (2, 5), (3, 2))])
def test_padtype_to_pads_matches_jax(padding, in_shape, window, strides):
    expected = jax.lax.padtype_to_pads(in_shape, window, strides, padding.upper())
    assert [tuple(p) for p in lax.padtype_to_pads(in_shape, window, strides, padding)] == [tuple(p) for p in expected]


def test_padtype_to_pads_rejects_unknown():
    with pytest.raises(RuntimeError, match="unknown padding type 'FULL'"):  # (jax's class)
        lax.padtype_to_pads((3,), (2,), (1,), "FULL")


# --- reduce_window ---------------------------------------------------------------------------------------------
_window_cases = [
    # window_dimensions, strides, padding, base_dilation, window_dilation
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((3, 3), (1, 2), ((1, 2), (0, 1)), None, None),
    ((2, 2), (1, 1), "SAME", (2, 1), (1, 2)),
    ((1, 4), (3, 3), ((0, 0), (2, 2)), (1, 2), (1, 1)),
    ((5, 1), (1, 1), "VALID", None, (1, 1)),  # a window larger than the axis: empty result
]


@pytest.mark.parametrize("case,dtype", zip(_window_cases, [np.float32, np.int32] * 3))
@pytest.mark.parametrize("computation,init", [("add", 0), ("max", -np.inf), ("min", np.inf), ("mul", 1),
                                              ("add", 3), ("max", 0.5)])
def test_reduce_window_matches_jax(rng, case, computation, init, dtype):
    window, strides, padding, base_dilation, window_dilation = case
    if dtypes.is_integer(np.dtype(dtype)) and not np.isfinite(init):
        init = np.iinfo(dtype).min if init < 0 else np.iinfo(dtype).max
    x = rand(rng, (4, 6), dtype, -2, 2)
    init = np.array(init, dtype)
    ours = getattr(lax, computation)
    theirs = getattr(jax.lax, computation)
    expected = jax.lax.reduce_window(x, init, theirs, window, strides, padding, base_dilation, window_dilation)
    for result in eager_and_jit(lambda x: lax.reduce_window(x, init, ours, window, strides, padding, base_dilation,
                                                            window_dilation), x):
        assert_close(result, expected, scale=10)


@pytest.mark.parametrize("name,computation", [("reduce_window_sum", "add"), ("reduce_window_max", "max"),
                                              ("reduce_window_min", "min")])
def test_monoid_reduce_windows(rng, name, computation):
    x = rand(rng, (2, 5, 7), np.float32)
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[computation]
    expected = jax.lax.reduce_window(x, init, getattr(jax.lax, computation), (1, 3, 2), (1, 2, 2), "SAME")
    assert_close(getattr(lax, name)(x, (1, 3, 2), (1, 2, 2), "SAME"), expected)
    # the generic form with the identity as init uses the same primitive
    text = str(numax.make_jaxpr(lambda x: lax.reduce_window(x, init, getattr(lax, computation), (1, 3, 2),
                                                            (1, 2, 2), "SAME"))(x))
    assert f"{name}[" in text


def test_reduce_window_with_a_traced_computation(rng):
    x = rand(rng, (4, 6), np.float32)

    def ours(a, b):
        return lax.max(a, b) + lax.log1p(lax.exp(-lax.abs(a - b)))

    def theirs(a, b):
        return jax.lax.max(a, b) + jax.lax.log1p(jax.lax.exp(-jax.lax.abs(a - b)))

    expected = jax.lax.reduce_window(x, -np.inf, theirs, (2, 3), (1, 2), "SAME")
    for result in eager_and_jit(lambda x: lax.reduce_window(x, -np.inf, ours, (2, 3), (1, 2), "SAME"), x):
        assert_close(result, expected)
    text = str(numax.make_jaxpr(lambda x: lax.reduce_window(x, 0.0, lambda a, b: a + 2.0 * b, (2, 2)))(x))
    assert "computation={ lambda" in text and "mul" in text


@pytest.mark.parametrize("computation", ["max", "min"])
def test_complex_window_max_and_min_order_lexicographically_as_jax(computation):
    # ties on the real part decide by the imaginary one; the window's init takes part like any element
    x = np.array([[1 + 2j, 3j, 1 - 1j, 2 + 0j], [1 + 5j, -1j, 2 - 1j, 0j]], np.complex64)
    init = np.array(1 + 0j, np.complex64)
    expected = jax.lax.reduce_window(x, init, getattr(jax.lax, computation), (2, 2), (1, 1), "SAME")
    for result in eager_and_jit(lambda x: lax.reduce_window(x, init, getattr(lax, computation), (2, 2), (1, 1),
                                                            "SAME"), x):
        np.testing.assert_array_equal(np.asarray(result), np.asarray(expected))


def test_reduce_window_bool_max():
    x = np.array([[True, False, False, False], [False, False, True, False]])
    assert_close(lax.reduce_window_max(x, (1, 2), (1, 2)), np.array([[True, False], [False, True]]))


def test_reduce_window_errors():
    x = np.zeros((3, 3), np.float32)
    with pytest.raises(TypeError, match="must map two float32 scalars to one"):
        lax.reduce_window(x, 0.0, lambda a, b: lax.convert_element_type(a + b, np.int32), (2, 2), (1, 1))
    with pytest.raises(TypeError, match="one entry per dimension"):
        lax.reduce_window_sum(x, (2,), (1,))
    with pytest.raises(TypeError, match="window_strides must be positive"):
        lax.reduce_window_sum(x, (2, 2), (0, 1))
    with pytest.raises(TypeError, match="init_value must be a scalar"):
        lax.reduce_window(x, np.zeros(2, np.float32), lax.add, (2, 2), (1, 1))


# --- cumulative reductions -------------------------------------------------------------------------------------
_cumulative_names = ["cumsum", "cumprod", "cummax", "cummin"]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, dtypes.bfloat16])
@pytest.mark.parametrize("shape,axis,reverse", [((9,), 0, False), ((3, 5), 1, True), ((2, 3, 4), 1, False),
                                                ((2, 3, 4), 0, True), ((0, 3), 0, True)])
def test_cumulative_matches_jax(rng, dtype, reverse, shape, axis):
    x = rand(rng, shape, dtype, -1.5, 1.5)
    # All four in one program: one compile each for the oracle and numax.
    expected = jax.jit(lambda x: [getattr(jax.lax, name)(x, axis=axis, reverse=reverse)
                                  for name in _cumulative_names])(x)
    for results in eager_and_jit(lambda x: [getattr(lax, name)(x, axis=axis, reverse=reverse)
                                            for name in _cumulative_names], x):
        for result, want in zip(results, expected):
            assert_close(result, want, scale=4)


@pytest.mark.parametrize("name", _cumulative_names)
def test_cumulative_negative_axes_raise_value_error_as_in_jax(name):
    x = np.ones((2, 3), np.float32)
    for lib in (jax.lax, lax):
        with pytest.raises(ValueError):
            getattr(lib, name)(x, axis=-1)


def test_cumsum_integers_are_exact():
    x = np.full(1000, 16777217 // 1000 + 1, np.int32)
    np.testing.assert_array_equal(lax.cumsum(x), np.cumsum(x, dtype=np.int32))
    x = np.arange(1, 2000, dtype=np.int32)
    np.testing.assert_array_equal(lax.cumsum(x, reverse=True), np.cumsum(x[::-1])[::-1])


@pytest.mark.parametrize("reverse", [False, True])
def test_cumlogsumexp_with_infinities_and_nan(reverse):
    x = np.array([[-np.inf, -np.inf, 0.0, 1e30, -3.0], [np.inf, 2.0, np.nan, 1.0, -np.inf]], np.float32)
    expected = jax.lax.cumlogsumexp(x, axis=1, reverse=reverse)
    for result in eager_and_jit(lambda x: lax.cumlogsumexp(x, axis=1, reverse=reverse), x):
        assert_close(result, expected)
    y = np.linspace(-5, 5, 17).astype(np.float32)
    assert_close(lax.cumlogsumexp(y, reverse=reverse), jax.lax.cumlogsumexp(y, reverse=reverse))


def test_cumulative_errors():
    with pytest.raises(TypeError, match="cumsum does not accept dtype bool"):
        lax.cumsum(np.array([True, False]))
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        lax.cumlogsumexp(np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        lax.cummax(np.zeros((2, 2), np.float32), axis=2)


@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data())
def test_cumsum_hypothesis(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    reverse = data.draw(st.booleans())
    x = np.random.default_rng(sum(shape)).integers(-50, 50, shape).astype(np.int32)
    expected = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
    np.testing.assert_array_equal(lax.cumsum(x, axis=axis, reverse=reverse), expected.astype(np.int32))


# --- convolution -------------------------------------------------------------------------------------------------
_conv_cases = [
    # lhs shape, rhs shape, kwargs
    ((2, 3, 9), (4, 3, 3), dict(window_strides=(1,), padding="VALID")),
    ((2, 3, 9), (4, 3, 3), dict(window_strides=(2,), padding="SAME", rhs_dilation=(2,))),
    ((1, 2, 10), (2, 2, 4), dict(window_strides=(3,), padding=((2, 1),), lhs_dilation=(2,))),
    ((2, 4, 8, 7), (6, 2, 3, 2), dict(window_strides=(2, 1), padding="SAME", rhs_dilation=(1, 2),
                                      feature_group_count=2)),
    ((2, 4, 8, 7), (6, 4, 3, 3), dict(window_strides=(1, 1), padding="SAME_LOWER")),
    ((2, 8, 7, 4), (3, 2, 2, 6), dict(window_strides=(1, 2), padding=((1, 0), (2, 1)), lhs_dilation=(2, 1),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)),
    ((3, 5, 6, 2), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NHWC", "OIHW", "NCHW"))),
    ((4, 3, 6, 5), (6, 3, 2, 2), dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    ((2, 2, 5, 5), (2, 2, 6, 6), dict(window_strides=(1, 1), padding="VALID")),  # kernel bigger than input
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,kwargs", _conv_cases)
@pytest.mark.parametrize("dtype", [np.float32, dtypes.bfloat16])
def test_conv_general_dilated_matches_jax(rng, lhs_shape, rhs_shape, kwargs, dtype):
    lhs, rhs = rand(rng, lhs_shape, dtype), rand(rng, rhs_shape, dtype)
    expected = jax.lax.conv_general_dilated(lhs, rhs, **kwargs)
    for result in eager_and_jit(lambda a, b: lax.conv_general_dilated(a, b, **kwargs), lhs, rhs):
        assert_close(result, expected, scale=20)


def _integer_conv_reference(lhs, rhs, dtype):
    """A 1-d VALID convolution (NCW, OIW) in exact int64, then wrapped to `dtype` as integer arithmetic does."""
    windows = np.lib.stride_tricks.sliding_window_view(lhs.astype(np.int64), rhs.shape[2], axis=2)
    return np.einsum("nctk,ock->not", windows, rhs.astype(np.int64)).astype(dtype)


@pytest.mark.parametrize("dtype,preferred", [(np.int8, np.int32), (np.int8, None), (np.uint8, np.int32),
                                             (np.int16, None), (np.int32, None), (np.uint32, None)])
def test_conv_integer_matches_exact_arithmetic(rng, dtype, preferred):
    # numpy is the oracle: XLA's GPU backend (so jax on a GPU) has no integer convolutions; numax runs them
    # there as exact float64 ones. Full-range values make sums wrap in the narrow result types.
    info = np.iinfo(dtype)
    lhs, rhs = (rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
                for shape in ((2, 3, 7), (4, 3, 3)))
    expected = _integer_conv_reference(lhs, rhs, preferred or dtype)
    for result in eager_and_jit(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID",
                                                                      preferred_element_type=preferred), lhs, rhs):
        assert np.asarray(result).dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(result), expected)


def test_conv_bfloat16_with_float32_preferred_type(rng):
    lhs, rhs = rand(rng, (1, 2, 6), dtypes.bfloat16), rand(rng, (3, 2, 2), dtypes.bfloat16)
    result = lax.conv_general_dilated(lhs, rhs, (1,), "SAME", preferred_element_type=np.float32)
    assert_close(result, jax.lax.conv_general_dilated(lhs, rhs, (1,), "SAME", preferred_element_type=np.float32),
                 scale=1e4)


def test_conv_dimension_numbers_match_jax():
    for specs in [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NWHC", "WHOI", "CNHW")]:
        ours = lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), specs)
        theirs = jax.lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), specs)
        assert tuple(map(tuple, ours)) == tuple(map(tuple, theirs))
    assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == lax.ConvDimensionNumbers((0, 1, 2), (0, 1, 2),
                                                                                               (0, 1, 2))


def test_conv_and_conv_with_general_padding(rng):
    lhs, rhs = rand(rng, (2, 3, 7, 6), np.float32), rand(rng, (4, 3, 2, 3), np.float32)
    assert_close(lax.conv(lhs, rhs, (1, 2), "SAME"), jax.lax.conv(lhs, rhs, (1, 2), "SAME"), scale=10)
    args = ((2, 1), ((1, 1), (0, 2)), (1, 2), (2, 1))
    assert_close(lax.conv_with_general_padding(lhs, rhs, *args), jax.lax.conv_with_general_padding(lhs, rhs, *args),
                 scale=10)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 2), (0, 1))])
@pytest.mark.parametrize("transpose_kernel", [False, True])
@pytest.mark.parametrize("strides,rhs_dilation", [((2, 2), None), ((1, 3), (2, 1))])
def test_conv_transpose_matches_jax(rng, padding, transpose_kernel, strides, rhs_dilation):
    lhs, rhs = rand(rng, (2, 5, 4, 3), np.float32), rand(rng, (3, 2, 3, 4), np.float32)
    if transpose_kernel:
        rhs = rhs.transpose(0, 1, 3, 2)
    kwargs = dict(rhs_dilation=rhs_dilation, transpose_kernel=transpose_kernel)
    expected = jax.lax.conv_transpose(lhs, rhs, strides, padding, **kwargs)
    for result in eager_and_jit(lambda a, b: lax.conv_transpose(a, b, strides, padding, **kwargs), lhs, rhs):
        assert_close(result, expected, scale=10)


def test_conv_errors():
    lhs, rhs = np.zeros((1, 4, 5), np.float32), np.zeros((2, 3, 2), np.float32)
    with pytest.raises(ValueError, match=r"lhs feature dimension \(4\) divided by feature_group_count"):
        lax.conv_general_dilated(lhs, rhs, (1,), "VALID")
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(lhs, np.zeros((2, 4, 2), np.float16), (1,), "VALID")
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(lhs, np.zeros((2, 4, 2), np.float32), (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(TypeError, match="must contain the characters 'N' and 'C'"):
        lax.conv_general_dilated(lhs, rhs, (1,), "VALID", dimension_numbers=("NHW", "OIH", "NCH"))
    with pytest.raises(ValueError, match="at most one of batch_group_count and feature_group_count"):
        lax.conv_general_dilated(np.zeros((2, 4, 5), np.float32), np.zeros((4, 2, 2), np.float32), (1,), "VALID",
                                 feature_group_count=2, batch_group_count=2)


def test_conv_lowering_text():
    lowered = numax.jit(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID")).lower(
        np.zeros((1, 2, 5), np.float32), np.zeros((3, 2, 2), np.float32)).as_text()
    assert "stablehlo.convolution" in lowered and "input_feature_dimension = 1" in lowered
