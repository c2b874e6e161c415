"""Fourier transforms: `numax.lax.fft` (the primitive, its rules and lowering) and `numax.numpy.fft`.

Values are checked against numpy.fft (computed in double precision) and result dtypes and shapes against
jax.numpy.fft (through jax.eval_shape, which compiles nothing), under numax.jit and eagerly, over the
functions, norms, n / s / axes choices, odd and even lengths, real, complex, integer and boolean inputs and
more than three transformed axes. Derivatives: check_grads (float64 finite differences) for every FftType
and the numpy wrappers, and jax.vjp / jax.grad of the same computations. vmap with the batch dimension
among the leading and among the transformed dimensions. Errors name what was wrong.
"""

import numpy as np
import pytest
from harness import jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.lax import FftType
from numax.lax.fft import _lower_fft_gpu, fft_p  # the module, which numax.lax.fft (the function) hides
from numax.lowering import lower as lowering

import numax
import numax.numpy as xnp
from numax import lax
from numax.test_util import check_grads


def rand(rng, shape, kind):
    if kind == "complex":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if kind == "int":
        return rng.integers(-5, 6, shape).astype(np.int32)
    if kind == "bool":
        return rng.random(shape) < 0.5
    return rng.standard_normal(shape).astype(np.float32)


def check_against_oracles(name, x, kwargs, result):
    """`result` of numax.numpy.fft.`name` has jax's dtype and shape and numpy's values."""
    expected_aval = jax.eval_shape(lambda a: getattr(jnp.fft, name)(a, **kwargs), x)
    assert result.dtype == expected_aval.dtype, (result.dtype, expected_aval.dtype)
    assert result.shape == expected_aval.shape, (result.shape, expected_aval.shape)
    wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if "s" in kwargs and "axes" not in kwargs:  # numpy 2 wants explicit axes with s: the last len(s) ones
        kwargs = dict(kwargs, axes=tuple(range(x.ndim - len(kwargs["s"]), x.ndim)))
    expected = getattr(np.fft, name)(wide, **kwargs)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-4, atol=1e-4 * scale)


# (function, input shape, input kind, keyword arguments)
CASES = [
    ("fft", (8,), "complex", {}),
    ("fft", (3, 7), "float", {"axis": 0}),
    ("fft", (3, 5), "complex", {"n": 8, "norm": "ortho"}),
    ("fft", (4, 6), "int", {"n": 3, "axis": -1, "norm": "forward"}),
    ("ifft", (5, 4), "complex", {"axis": 0, "norm": "backward"}),
    ("ifft", (9,), "complex", {"n": 4, "norm": "ortho"}),
    ("ifft", (2, 6), "bool", {"norm": "forward"}),
    ("rfft", (8,), "float", {}),
    ("rfft", (4, 7), "float", {"axis": 0, "n": 9, "norm": "ortho"}),
    ("rfft", (3, 6), "int", {"n": 4, "norm": "forward"}),
    ("irfft", (5,), "complex", {}),
    ("irfft", (3, 4), "complex", {"n": 7}),
    ("irfft", (4, 3), "complex", {"n": 8, "axis": 0, "norm": "ortho"}),
    ("irfft", (6,), "float", {"n": 5, "norm": "forward"}),
    ("hfft", (5,), "complex", {}),
    ("hfft", (4, 3), "complex", {"n": 5, "axis": 0, "norm": "ortho"}),
    ("hfft", (6,), "float", {"n": 8, "norm": "forward"}),
    ("ihfft", (7,), "float", {}),
    ("ihfft", (4, 6), "float", {"n": 4, "axis": 0, "norm": "ortho"}),
    ("ihfft", (5,), "int", {"n": 7, "norm": "forward"}),
    ("fft2", (3, 4, 5), "complex", {}),
    ("fft2", (3, 4, 5), "float", {"axes": (0, 2), "s": (2, 6), "norm": "ortho"}),
    ("ifft2", (4, 5), "complex", {"axes": (1, 0), "norm": "forward"}),
    ("rfft2", (3, 4, 6), "float", {"axes": (-1, 0)}),
    ("rfft2", (5, 7), "int", {"s": (4, 5), "norm": "ortho"}),
    ("irfft2", (3, 4, 3), "complex", {}),
    ("irfft2", (4, 5), "complex", {"s": (3, 7), "axes": (1, 0), "norm": "forward"}),
    ("fftn", (2, 3, 4), "complex", {}),
    ("fftn", (2, 3, 4, 3), "complex", {"norm": "ortho"}),
    ("fftn", (2, 3, 2, 3, 2), "float", {"axes": (4, 0, 2, 1, 3)}),
    ("fftn", (3, 4, 5), "float", {"s": (5, 3), "axes": (2, 0)}),
    ("ifftn", (2, 3, 2, 2, 3), "complex", {"norm": "forward"}),
    ("ifftn", (3, 4), "complex", {"s": (5, 2)}),
    ("rfftn", (2, 3, 4), "float", {}),
    ("rfftn", (2, 3, 2, 5), "float", {"norm": "ortho"}),
    ("rfftn", (2, 3, 2, 2, 4), "int", {"axes": (3, 0, 1, 2, 4), "norm": "forward"}),
    ("rfftn", (3, 4, 5), "float", {"s": (4, 6), "axes": (0, 1)}),
    ("irfftn", (2, 3, 3), "complex", {}),
    ("irfftn", (2, 3, 2, 3), "complex", {"s": (2, 3, 2, 5), "norm": "ortho"}),
    ("irfftn", (2, 2, 3, 2, 3), "complex", {"norm": "forward"}),
    ("irfftn", (3, 4, 5), "complex", {"s": (4, 7), "axes": (2, 0)}),
]


@pytest.mark.parametrize("name, shape, kind, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_numpy_fft_under_jit(rng, name, shape, kind, kwargs):
    x = rand(rng, shape, kind)
    result = numax.jit(lambda a: getattr(xnp.fft, name)(a, **kwargs))(x)
    check_against_oracles(name, x, kwargs, result)


EAGER_CASES = [CASES[i] for i in (2, 12, 16, 21, 30, 39)]


@pytest.mark.parametrize("name, shape, kind, kwargs", EAGER_CASES, ids=[c[0] for c in EAGER_CASES])
def test_numpy_fft_eagerly(rng, name, shape, kind, kwargs):
    x = rand(rng, shape, kind)
    result = getattr(xnp.fft, name)(x, **kwargs)
    assert isinstance(result, numax.Array)
    check_against_oracles(name, x, kwargs, result)


@settings(max_examples=8)
@given(st.data())
def test_fftn_family_on_random_shapes_axes_and_lengths(data):
    rank = data.draw(st.integers(1, 4), label="rank")
    dims = data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank), label="shape")
    order = data.draw(st.permutations(range(rank)), label="axis order")
    axes = order[:data.draw(st.integers(1, rank), label="number of axes")]
    s = data.draw(st.none() | st.lists(st.integers(1, 5), min_size=len(axes), max_size=len(axes)), label="s")
    name = data.draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]), label="function")
    norm = data.draw(st.sampled_from([None, "ortho", "forward"]), label="norm")
    if name == "irfftn" and s is None and dims[axes[-1]] == 1:
        s = [dims[axis] for axis in axes[:-1]] + [3]  # numpy refuses an output of length 0
    kind = "float" if name == "rfftn" else "complex"
    x = rand(np.random.default_rng(rank), tuple(dims), kind)
    kwargs = {"axes": tuple(axes), "s": None if s is None else tuple(s), "norm": norm}
    check_against_oracles(name, x, kwargs, numax.jit(lambda a: getattr(xnp.fft, name)(a, **kwargs))(x))


def test_round_trips(rng):
    x = rand(rng, (3, 2, 5), "float")
    np.testing.assert_allclose(np.asarray(xnp.fft.irfftn(xnp.fft.rfftn(x), s=x.shape)), x, atol=1e-5)
    z = rand(rng, (2, 3, 2, 2), "complex")
    np.testing.assert_allclose(np.asarray(xnp.fft.ifftn(xnp.fft.fftn(z, norm="ortho"), norm="ortho")), z, atol=1e-5)
    np.testing.assert_allclose(np.asarray(xnp.fft.hfft(xnp.fft.ihfft(x[0, 0]), n=5)), x[0, 0], atol=1e-5)


@pytest.mark.parametrize("dtype, fft_dtype, rfft_dtype", [
    (np.bool_, np.complex64, np.complex64), (np.uint8, np.complex64, np.complex64),
    (np.int32, np.complex64, np.complex64), (np.float16, np.complex64, None), (jnp.bfloat16, np.complex64, None),
    (np.float32, np.complex64, np.complex64), (np.float64, np.complex64, np.complex64),  # a host float64: 32-bit
    (np.complex64, np.complex64, None),
])
def test_dtype_promotion(dtype, fft_dtype, rfft_dtype):
    x = np.arange(6).astype(dtype)
    out = xnp.fft.fft(x)
    assert out.dtype == fft_dtype == jax.eval_shape(jnp.fft.fft, x).dtype
    assert xnp.fft.irfft(x).dtype == np.float32 == jax.eval_shape(jnp.fft.irfft, x).dtype
    if rfft_dtype is None:  # as in JAX: rfft takes float32/float64 (or integers), never complex or 16-bit floats
        with pytest.raises((TypeError, ValueError), match="RFFT takes a float32 or float64|real valued"):
            xnp.fft.rfft(x)
    else:
        assert xnp.fft.rfft(x).dtype == rfft_dtype


@pytest.mark.usefixtures("x64")
def test_dtypes_with_x64():
    for dtype, expected in [(np.float64, np.complex128), (np.int64, np.complex128), (np.int32, np.complex64),
                            (np.float32, np.complex64), (np.complex128, np.complex128)]:
        x = np.arange(4).astype(dtype)
        assert xnp.fft.fft(x).dtype == expected  # jax's dtypes with jax_enable_x64
    assert xnp.fft.rfft(np.arange(4.0)).dtype == np.complex128
    assert xnp.fft.irfft(np.ones(3, np.complex128)).dtype == np.float64
    assert xnp.fft.irfft(np.ones(3, np.complex64)).dtype == np.float32
    assert xnp.fft.fftfreq(4).dtype == np.float64


def test_empty_and_degenerate_inputs(rng):
    assert xnp.fft.fft(np.zeros((0, 4), np.float32)).shape == (0, 4)
    assert xnp.fft.fft(np.zeros((4, 0), np.complex64)).shape == (4, 0)
    assert xnp.fft.rfft(np.zeros((0, 6), np.float32)).shape == (0, 4)
    assert xnp.fft.irfft(np.ones((3, 1), np.complex64)).shape == (3, 0)  # n = 2 * (1 - 1), as in JAX
    np.testing.assert_allclose(np.asarray(xnp.fft.fft(np.ones((2, 1), np.float32))), np.ones((2, 1)))
    x = rand(rng, (2, 3), "complex")
    np.testing.assert_allclose(np.asarray(xnp.fft.fftn(x, axes=())), x)  # no axes: the converted input
    assert xnp.fft.fftn(np.float32(2.0)).dtype == np.complex64
    assert xnp.fft.irfftn(x, axes=()).dtype == np.complex64  # as in JAX: no axes, no transform
    with_nan = np.array([1.0, np.nan, 2.0, 0.5], np.float32)
    np.testing.assert_array_equal(np.isnan(np.asarray(xnp.fft.rfft(with_nan))), np.isnan(np.fft.rfft(with_nan)))


# --- frequencies and shifts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, d", [(1, 1.0), (5, 1.0), (8, 0.1), (7, 2.5)])
def test_fftfreq_and_rfftfreq(n, d):
    for name in ("fftfreq", "rfftfreq"):
        result = getattr(xnp.fft, name)(n, d)
        assert result.dtype == jax.eval_shape(lambda: getattr(jnp.fft, name)(n, d)).dtype == np.float32
        np.testing.assert_allclose(np.asarray(result), getattr(np.fft, name)(n, d), rtol=1e-6)


def test_fftfreq_dtype_and_array_spacing():
    assert xnp.fft.fftfreq(4, dtype=np.float16).dtype == np.float16
    assert xnp.fft.rfftfreq(6, dtype=np.float16).dtype == np.float16
    spacing = xnp.asarray(0.5)
    np.testing.assert_allclose(np.asarray(xnp.fft.fftfreq(6, spacing)), np.fft.fftfreq(6, 0.5), rtol=1e-6)
    traced = numax.jit(lambda d: xnp.fft.rfftfreq(5, d))(np.float32(0.25))
    np.testing.assert_allclose(np.asarray(traced), np.fft.rfftfreq(5, 0.25), rtol=1e-6)
    with pytest.raises(ValueError, match="n argument of numax.numpy.fft.fftfreq only takes an int"):
        xnp.fft.fftfreq([4])
    with pytest.raises(ValueError, match="d argument of numax.numpy.fft.rfftfreq only takes a single value"):
        xnp.fft.rfftfreq(4, [1.0, 2.0])


@pytest.mark.parametrize("axes", [None, 1, (1, 0)])
def test_fftshift_and_ifftshift(axes):
    x = np.arange(35).reshape(5, 7)
    for name in ("fftshift", "ifftshift"):
        result = getattr(xnp.fft, name)(x, axes=axes)
        np.testing.assert_array_equal(np.asarray(result), getattr(np.fft, name)(x, axes=axes))
        assert result.dtype == jax.eval_shape(lambda a: getattr(jnp.fft, name)(a, axes=axes), x).dtype
    shifted = numax.jit(xnp.fft.ifftshift)(xnp.fft.fftshift(x))
    np.testing.assert_array_equal(np.asarray(shifted), x)


# --- the lax primitive ---------------------------------------------------------------------------------------
def test_lax_fft_types_by_enum_and_name(rng):
    x = rand(rng, (2, 3, 8), "float")
    z = rand(rng, (2, 3, 5), "complex")
    for fft_type in (FftType.RFFT, "RFFT", "rfft"):
        np.testing.assert_allclose(np.asarray(lax.fft(x, fft_type, (3, 8))), np.fft.rfft2(x), atol=1e-4)
    for fft_type in (FftType.IRFFT, "IRFFT", "irfft"):
        out = lax.fft(z, fft_type, (3, 8))
        assert out.dtype == np.float32 and out.shape == (2, 3, 8)
        np.testing.assert_allclose(np.asarray(out), np.fft.irfft2(z, s=(3, 8)), atol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.fft(z, "fft", (2, 3, 5))), np.fft.fftn(z), atol=1e-4)
    np.testing.assert_allclose(np.asarray(lax.fft(z, FftType.IFFT, (5,))), np.fft.ifft(z), atol=1e-5)
    assert lax.fft(x.astype(np.int32), "FFT", (8,)).dtype == np.complex64  # converted as jax.lax.fft does
    assert lax.fft(x, "FFT", ()).dtype == np.complex64
    assert [t.name for t in FftType] == [t.name for t in jax.lax.FftType]
    assert [int(t) for t in FftType] == [int(t) for t in jax.lax.FftType]


def test_lax_fft_lowers_to_stablehlo_fft():
    text = numax.jit(lambda x: lax.fft(x, "RFFT", (3, 8))).lower(np.ones((2, 3, 8), np.float32)).as_text()
    assert ('"stablehlo.fft"(%arg0) {fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 3, 8>} : '
            "(tensor<2x3x8xf32>) -> tensor<2x3x5xcomplex<f32>>") in text


def test_program_prints_the_fft_type():
    program = numax.make_jaxpr(lambda x: xnp.fft.rfft(x, n=6, norm="ortho"))(np.ones((2, 5), np.float32))
    assert "c64[2,4] = fft[fft_lengths=(6,) fft_type=FftType.RFFT] b" in str(program)


def test_gpu_lowering_of_multidimensional_irfft(rng, monkeypatch):
    """The GPU rule (an IFFT over the leading dimensions, then a 1-d IRFFT) gives numpy's values; it is run
    here on the CPU, where it is equally valid, with an input that is not Hermitian in the leading dims."""
    monkeypatch.setitem(lowering.platform_lowering_rules["cpu"], fft_p, _lower_fft_gpu)
    z = rand(rng, (2, 3, 4, 5), "complex")
    f = numax.jit(lambda a: lax.fft(a, "IRFFT", (3, 4, 8)))
    assert f.lower(z).as_text().count('"stablehlo.fft"') == 2
    np.testing.assert_allclose(np.asarray(f(z)), np.fft.irfftn(z, s=(3, 4, 8), axes=(1, 2, 3)), atol=1e-5)


def test_lax_fft_errors():
    z = np.ones((2, 4), np.complex64)
    with pytest.raises(ValueError, match="Unknown FFT type 'FOO'"):
        lax.fft(z, "FOO", (4,))
    with pytest.raises(TypeError, match="Unknown FFT type value '7'"):
        lax.fft(z, 7, (4,))
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        lax.fft(z, "RFFT", (4,))
    with pytest.raises(TypeError, match=r"fft: FFT with fft_lengths \(5,\) needs an operand whose trailing "
                                        r"dimensions are \(5,\), got shape \(2, 4\)"):
        lax.fft(z, "FFT", (5,))
    with pytest.raises(TypeError, match=r"IRFFT with fft_lengths \(2, 8\) needs .* \(2, 5\), got shape \(2, 4\)"):
        lax.fft(z, "IRFFT", (2, 8))
    with pytest.raises(TypeError, match="fewer dimensions than fft_lengths"):
        lax.fft(z, "FFT", (1, 2, 4))
    with pytest.raises(TypeError, match="1 to 3 trailing dimensions"):
        lax.fft(np.ones((1, 1, 1, 1), np.complex64), "FFT", (1, 1, 1, 1))
    with pytest.raises(TypeError, match="RFFT takes a float32 or float64 operand, got float16"):
        lax.fft(np.ones(4, np.float16), "RFFT", (4,))
    with pytest.raises(TypeError, match="IFFT takes a complex64 or complex128 operand, got float32"):
        fft_p.bind(np.ones(4, np.float32), fft_type=FftType.IFFT, fft_lengths=(4,))


def test_numpy_fft_errors():
    z = np.ones((2, 4), np.complex64)
    with pytest.raises(TypeError, match="numax.numpy.fft.fft requires ndarray or scalar arguments, got list"):
        xnp.fft.fft([1.0, 2.0])
    with pytest.raises(ValueError, match="Invalid norm value 'bad'"):
        xnp.fft.fft(z, norm="bad")
    with pytest.raises(ValueError, match="fft does not support multiple axes. Please use numax.numpy.fft.fftn"):
        xnp.fft.fft(z, axis=(0, 1))
    with pytest.raises(ValueError, match="does not support repeated axes"):
        xnp.fft.fftn(z, axes=(1, -1))
    with pytest.raises(ValueError, match=r"the transform lengths s=\(2, 0\) must be positive"):
        xnp.fft.fftn(z, s=(2, 0))
    with pytest.raises(ValueError, match="have different lengths"):
        xnp.fft.fftn(z, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="fft2 only supports 2 axes"):
        xnp.fft.fft2(z, axes=(0,))
    for function in (xnp.fft.rfft, xnp.fft.hfft, xnp.fft.ihfft):
        with pytest.raises(ValueError, match="axis 5 is out of bounds"):
            function(np.ones(3, np.float32), axis=5)


# --- derivatives ---------------------------------------------------------------------------------------------
LAX_GRAD_CASES = [
    ("FFT", (2, 5), "complex", (5,)),
    ("IFFT", (3, 2, 4), "complex", (2, 4)),
    ("RFFT", (2, 6), "float", (6,)),
    ("RFFT", (3, 5), "float", (3, 5)),
    ("IRFFT", (2, 4), "complex", (6,)),
    ("IRFFT", (2, 3, 4), "complex", (2, 3, 7)),
]


def as64(x):
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("fft_type, shape, kind, lengths", LAX_GRAD_CASES)
def test_lax_fft_check_grads(rng, fft_type, shape, kind, lengths):
    x = as64(rand(rng, shape, kind))
    check_grads(lambda a: lax.fft(a, fft_type, lengths), (x,), order=2)


@pytest.mark.parametrize("fft_type, shape, kind, lengths", LAX_GRAD_CASES)
def test_lax_fft_vjp_matches_jax(rng, fft_type, shape, kind, lengths):
    x = rand(rng, shape, kind)
    out, pullback = numax.vjp(lambda a: lax.fft(a, fft_type, lengths), x)
    expected_out, expected_pullback = jax.vjp(lambda a: jax.lax.fft(a, fft_type, lengths), x)
    cotangent = rand(rng, expected_out.shape, "complex" if np.iscomplexobj(expected_out) else "float")
    (result,), (expected,) = pullback(cotangent), expected_pullback(cotangent)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), np.asarray(expected), atol=1e-4)
    tangent = rand(rng, shape, kind)
    _, jvp_out = numax.jvp(lambda a: lax.fft(a, fft_type, lengths), (x,), (tangent,))
    _, expected_jvp = jax.jvp(lambda a: jax.lax.fft(a, fft_type, lengths), (x,), (tangent,))
    np.testing.assert_allclose(np.asarray(jvp_out), np.asarray(expected_jvp), atol=1e-4)


NUMPY_GRAD_CASES = [
    ("fft", (5,), "float", {"n": 7, "norm": "ortho"}),
    ("ifft", (2, 4), "complex", {"axis": 0}),
    ("rfft", (7,), "float", {"n": 6, "norm": "forward"}),
    ("irfft", (2, 4), "complex", {"n": 7}),
    ("fftn", (2, 2, 3, 2), "complex", {"norm": "ortho"}),
    ("rfftn", (2, 3, 4), "float", {"axes": (2, 0)}),
    ("irfftn", (2, 2, 2, 3), "complex", {}),
    ("hfft", (4,), "complex", {}),
    ("ihfft", (5,), "float", {"norm": "ortho"}),
]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name, shape, kind, kwargs", NUMPY_GRAD_CASES, ids=[c[0] for c in NUMPY_GRAD_CASES])
def test_numpy_fft_check_grads(rng, name, shape, kind, kwargs):
    x = as64(rand(rng, shape, kind))
    check_grads(lambda a: getattr(xnp.fft, name)(a, **kwargs), (x,), order=1)


@pytest.mark.parametrize("name, shape, kind, kwargs", NUMPY_GRAD_CASES[::2], ids=[c[0] for c in NUMPY_GRAD_CASES[::2]])
def test_numpy_fft_grad_matches_jax(rng, name, shape, kind, kwargs):
    x = rand(rng, shape, kind)

    def loss(module, fft_module):
        def f(a):
            out = getattr(fft_module, name)(a, **kwargs)
            weights = np.linspace(-1.0, 2.0, out.size).reshape(out.shape).astype(np.float32)
            return module.sum(module.abs(out) ** 2 * weights) + module.sum(module.real(out) * weights)
        return f

    result = numax.jit(numax.grad(loss(xnp, xnp.fft)))(x)
    expected = jax.jit(jax.grad(loss(jnp, jnp.fft)))(x)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), np.asarray(expected), rtol=1e-4, atol=1e-3)


# --- batching ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fft_type, example_shape, kind, lengths, in_axis", [
    ("FFT", (3, 4), "complex", (4,), 2),  # the batch dimension sits among the transformed ones: moved
    ("FFT", (3, 4), "complex", (4,), 1),  # among the leading ones: stays
    ("RFFT", (3, 6), "float", (3, 6), 1),
    ("IRFFT", (2, 3), "complex", (4,), 0),
    ("IRFFT", (2, 3), "complex", (2, 4), 2),
])
def test_lax_fft_vmap(rng, fft_type, example_shape, kind, lengths, in_axis):
    batch = 3
    x = np.moveaxis(rand(rng, (batch,) + example_shape, kind), 0, in_axis)
    result = numax.vmap(lambda a: lax.fft(a, fft_type, lengths), in_axes=in_axis)(x)
    expected = jax.vmap(lambda a: jax.lax.fft(a, fft_type, lengths), in_axes=in_axis)(x)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), np.asarray(expected), atol=1e-5)


def test_numpy_fft_vmap_and_grad_of_vmap(rng):
    x = rand(rng, (4, 3, 5), "float")
    result = numax.jit(numax.vmap(lambda a: xnp.fft.rfft2(a, s=(4, 6)), in_axes=1))(x)
    expected = np.stack([np.fft.rfft2(x[:, i], s=(4, 6)) for i in range(3)])
    np.testing.assert_allclose(np.asarray(result), expected, atol=1e-4)
    z = rand(rng, (3, 2, 4), "complex")
    loss = lambda module, fft: lambda a: module.sum(module.abs(fft.irfft(a, n=6)) ** 2)
    batched = numax.jit(numax.vmap(numax.grad(loss(xnp, xnp.fft)), in_axes=2))(z)
    expected_batched = jax.jit(jax.vmap(jax.grad(loss(jnp, jnp.fft)), in_axes=2))(z)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(expected_batched), atol=1e-4)
