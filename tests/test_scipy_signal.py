"""numax.scipy.signal against jax.scipy.signal: every function over modes, shapes and dtypes, under jit,
vmap and grad, and jax's errors for bad arguments."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, raised, rand
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import jit_all

import numax
from numax.scipy import signal

jsignal = jax.scipy.signal

_modes = ["full", "same", "valid"]
_nd_shapes = [((7,), (3,)), ((3,), (6,)), ((4,), (4,)), ((1,), (5,)), ((2, 3), (5, 6)), ((4, 5, 3), (2, 2, 3))]
_2d_shapes = [((5, 6), (2, 3)), ((2, 3), (5, 6)), ((3, 3), (3, 3)), ((4, 1), (2, 1))]
_dtypes = [np.float32, np.int32, np.complex64, np.float16]


def _scale(dtype):
    return 8 if np.dtype(dtype) == np.float16 else 2


# --- the table of cases: each library computes all of them in one jitted program (one compile each) ------------
def _case_table():
    """{case id: (function name, kwargs, operand shapes, dtype, tolerance scale)}."""
    cases = {}
    for name in ("convolve", "correlate"):
        for method in ("direct", "fft"):
            for mode in _modes:
                for shapes in _nd_shapes:
                    cases[f"{name}-{method}-{mode}-{shapes}"] = (name, dict(mode=mode, method=method), shapes,
                                                                 np.float32, 50 if method == "fft" else 2)
                for dtype in _dtypes[1:]:
                    if method == "fft" and dtype == np.float16:
                        continue  # jax's fft rejects float16
                    cases[f"{name}-{method}-{mode}-{np.dtype(dtype).name}"] = (
                        name, dict(mode=mode, method=method), ((6, 5), (3, 2)), dtype,
                        50 if method == "fft" else _scale(dtype))
    for name in ("convolve2d", "correlate2d"):
        for mode in _modes:
            for shapes in _2d_shapes:
                for dtype in (np.float32, np.int32, np.complex64):
                    cases[f"{name}-{mode}-{shapes}-{np.dtype(dtype).name}"] = (name, dict(mode=mode), shapes, dtype,
                                                                               _scale(dtype))
    for mode in _modes:
        for axes in (None, 0, 1, (1, 2), -1, (0, 2)):
            convolved = {0, 1, 2} if axes is None else {axis % 3 for axis in np.atleast_1d(axes)}
            # The mapped (not convolved) axes must match in size; the convolved ones are smaller in b.
            b_shape = tuple(2 if i in convolved else size for i, size in enumerate((3, 8, 5)))
            cases[f"fftconvolve-{mode}-axes={axes}"] = ("fftconvolve", dict(mode=mode, axes=axes), ((3, 8, 5), b_shape),
                                                        np.float32, 50)
    return cases


_cases = _case_table()
_results = {}


def _all_results():
    """{case id: (numax's result, jax's result)}, computed once per process."""
    if not _results:
        rng = np.random.default_rng(0)
        operands = [[rand(rng, shape, dtype) for shape in shapes] for _, _, shapes, dtype, _ in _cases.values()]

        def table(module):
            return lambda all_operands: [getattr(module, name)(*ops, **kwargs)
                                         for (name, kwargs, _, _, _), ops in zip(_cases.values(), all_operands)]

        actual = numax.jit(table(signal))(operands)
        expected = jax.jit(table(jsignal))(operands)
        _results.update(zip(_cases, zip(actual, expected, strict=True)))
    return _results


@pytest.mark.parametrize("case", list(_cases))
def test_table_matches_jax(case):
    actual, expected = _all_results()[case]
    assert_close(actual, expected, scale=_cases[case][4])


def test_eager_matches_jit(rng):
    # The table runs jitted; the same functions eagerly, on a few cases.
    a, b = rand(rng, (6, 5), np.float32), rand(rng, (3, 2), np.float32)
    cases = (("convolve", dict(mode="same")), ("correlate", dict(mode="full", method="fft")),
             ("convolve2d", dict(mode="valid")), ("correlate2d", dict(mode="same")), ("fftconvolve", dict(mode="full")))
    # numax runs eagerly (the subject); jax's expected values come from one jitted program.
    expected = jit_all([functools.partial(getattr(jsignal, name), **kwargs) for name, kwargs in cases],
                       [(a, b)] * len(cases))
    for (name, kwargs), e in zip(cases, expected, strict=True):
        assert_close(getattr(signal, name)(a, b, **kwargs), e, scale=50)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=3),
       st.sampled_from(_modes), st.booleans(), st.integers(0, 2**31 - 1))
def test_convolve_random_shapes(sizes, mode, larger_first, seed):
    # One operand at least as large as the other in every dimension (scipy's requirement).
    shape1 = tuple(max(s) for s in sizes) if larger_first else tuple(min(s) for s in sizes)
    shape2 = tuple(min(s) for s in sizes) if larger_first else tuple(max(s) for s in sizes)
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shape1, np.float32), rand(rng, shape2, np.float32)
    # Both functions in one jitted program per library and mode (one compile per example, not one per op);
    # test_eager_matches_jit covers the eager path.
    actual = _convolve_correlate(numax.jit, signal, mode)(a, b)
    expected = _convolve_correlate(jax.jit, jsignal, mode)(a, b)
    for result, e in zip(actual, expected, strict=True):
        assert_close(result, e, scale=2)


@functools.cache
def _convolve_correlate(jit, module, mode):
    return jit(lambda a, b: (module.convolve(a, b, mode), module.correlate(a, b, mode)))


def test_jit_vmap_grad(rng):
    a, b = rand(rng, (4, 9), np.float32), rand(rng, (4, 3), np.float32)

    def numax_fn(x, y):
        return signal.convolve(x, y, mode="same")

    def jax_fn(x, y):
        return jsignal.convolve(x, y, mode="same")

    assert_close(numax.jit(numax.vmap(numax_fn))(a, b), jax.jit(jax.vmap(jax_fn))(a, b), scale=2)
    # numax's grad runs eagerly; jax's (the oracle) is jitted: one compile instead of one per op.
    assert_close(numax.grad(lambda x: signal.correlate2d(x, b).sum())(a),
                 jax.jit(jax.grad(lambda x: jsignal.correlate2d(x, b).sum()))(a), scale=2)
    assert_close(numax.jit(numax.grad(lambda x: signal.fftconvolve(x, b[0:1]).sum()))(a),
                 jax.jit(jax.grad(lambda x: jsignal.fftconvolve(x, b[0:1]).sum()))(a), scale=50)


_detrend_kwargs = [dict(), dict(type="constant"), dict(axis=0), dict(bp=[2, 5]), dict(bp=3, axis=0)]


@functools.cache
def _detrend_results():
    """{(kwargs index, dtype name): (numax's, jax's)}: every case in one jitted program per library."""
    rng = np.random.default_rng(0)  # the rng fixture's seed
    data = {np.dtype(dtype).name: rand(rng, (8, 7), dtype) for dtype in (np.float32, np.int32)}
    keys = [(i, name) for i in range(len(_detrend_kwargs)) for name in data]

    def table(module):
        return lambda data: [module.detrend(data[name], **_detrend_kwargs[i]) for i, name in keys]

    return dict(zip(keys, zip(numax.jit(table(signal))(data), jax.jit(table(jsignal))(data), strict=True)))


@pytest.mark.parametrize("kwargs", range(len(_detrend_kwargs)), ids=lambda i: str(_detrend_kwargs[i]))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_detrend_under_jit(kwargs, dtype):
    actual, expected = _detrend_results()[kwargs, np.dtype(dtype).name]
    assert_close(actual, expected, scale=20)


def _errors(module):
    a1, a2, b = np.ones(5), np.ones((2, 3)), np.ones((3, 2))
    calls = [
        lambda: module.convolve(a1, a1, mode="bad"),
        lambda: module.convolve(a1, a1, method="bad"),
        lambda: module.convolve(a1, a2),
        lambda: module.convolve(a2, b),
        lambda: module.convolve(np.ones(0), a1),
        lambda: module.convolve2d(a1, a1),
        lambda: module.convolve2d(a2, a2, boundary="wrap"),
        lambda: module.correlate2d(a2, a2, fillvalue=1),
        lambda: module.fftconvolve(a1, a2),
        lambda: module.fftconvolve(a1, a1, mode="bad"),
        lambda: module.fftconvolve(a2, b, mode="valid"),
        lambda: module.fftconvolve(np.ones((2, 4)), np.ones((3, 4)), axes=1),
        lambda: module.detrend(a1, type="quadratic"),
        lambda: module.detrend(a1, bp=9),
        lambda: module.detrend(a1, overwrite_data=True),
    ]
    return _error_kinds(calls)


def _error_kinds(calls):
    """The class of the exception each call raises (None where it returns): the oracle decides which is right."""
    return [None if (error := raised(call, ())) is None else type(error) for call in calls]


class _Jitted:
    """A module whose functions run under jax.jit: jax's error kinds (the oracle) are the same as eagerly, and a
    call that fails while tracing compiles nothing (eagerly, each jax op before the error compiles)."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        function = getattr(self.module, name)
        return lambda *args, **kwargs: jax.jit(lambda: function(*args, **kwargs))()


def test_errors_match_jax():
    numax_kinds, jax_kinds = _errors(signal), _errors(_Jitted(jsignal))
    assert None not in jax_kinds
    assert numax_kinds == jax_kinds


def test_public_names_match_jax():
    public = {name for name in dir(jsignal) if not name.startswith("_")}
    assert set(signal.__all__) == public == {"convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
                                             "fftconvolve", "istft", "stft", "welch"}


# --- spectral analysis (all cases in one jitted program per library) ------------------------------------------
_spectral_cases = {
    "stft": lambda m, x, y: m.stft(x, nperseg=32),
    "stft_odd_hamming_linear": lambda m, x, y: m.stft(x, nperseg=31, noverlap=10, boundary="odd", window="hamming",
                                                      detrend="linear"),
    "stft_even_twosided": lambda m, x, y: m.stft(x, nperseg=16, boundary="even", padded=False, return_onesided=False),
    "stft_constant_no_pad": lambda m, x, y: m.stft(x, fs=2.0, nperseg=20, boundary="constant", padded=False),
    "stft_axis0": lambda m, x, y: m.stft(x.T, nperseg=16, axis=0, boundary=None),
    "welch": lambda m, x, y: m.welch(x, nperseg=64),
    "welch_median_spectrum": lambda m, x, y: m.welch(x, nperseg=64, average="median", scaling="spectrum"),
    "welch_callable_detrend": lambda m, x, y: m.welch(x, nperseg=32, detrend=lambda d: d - d.mean(-1, keepdims=True)),
    "welch_window_array": lambda m, x, y: m.welch(x, window=np.hanning(40).astype(np.float32)),
    "csd_nfft": lambda m, x, y: m.csd(x, y, nperseg=50, nfft=64),
    "csd_axis0_median": lambda m, x, y: m.csd(x.T, y.T, nperseg=50, axis=0, average="median"),
    "csd_shorter_y": lambda m, x, y: m.csd(x, y[:, :150], nperseg=40),
    "istft": lambda m, x, y: m.istft(m.stft(x, nperseg=32)[2], nperseg=32),
    "istft_no_boundary": lambda m, x, y: m.istft(m.stft(x, nperseg=32, boundary=None)[2], boundary=False),
    "istft_axes": lambda m, x, y: m.istft(jnp_swap(m.stft(x, nperseg=16)[2]), time_axis=-2, freq_axis=-1),
}


def jnp_swap(z):
    return z.swapaxes(-1, -2)


@functools.cache
def _spectral_results():
    """{case: (numax's, jax's)}, every case in one jitted program per library."""
    rng = np.random.default_rng(0)  # the rng fixture's seed
    x, y = rand(rng, (3, 200), np.float32), rand(rng, (3, 200), np.float32)

    def table(module):
        return lambda x, y: [function(module, x, y) for function in _spectral_cases.values()]

    actual, expected = numax.jit(table(signal))(x, y), jax.jit(table(jsignal))(x, y)
    return dict(zip(_spectral_cases, zip(actual, expected, strict=True)))


@pytest.mark.parametrize("case", list(_spectral_cases))
def test_spectral_functions_match_jax(case):
    actual, expected = _spectral_results()[case]
    for a, e in zip(actual, expected, strict=True):
        assert_close(a, e, scale=20)


def test_spectral_complex_input_warns_and_is_two_sided(rng):
    z = (rand(rng, (2, 64), np.float32) + 1j * rand(rng, (2, 64), np.float32)).astype(np.complex64)
    # Under jit (the warning comes while tracing): one compile per library instead of one per eager op.
    with pytest.warns(UserWarning, match="Input data is complex"):
        expected = jax.jit(lambda z: jsignal.stft(z, nperseg=16))(z)
    with pytest.warns(UserWarning, match="Input data is complex"):
        actual = numax.jit(lambda z: signal.stft(z, nperseg=16))(z)
    for a, e in zip(actual, expected, strict=True):
        assert_close(a, e, scale=20)


def _spectral_errors(module):
    x = np.ones(64, np.float32)
    calls = [
        lambda: module.stft(x, nperseg=16, noverlap=16),
        lambda: module.stft(x, nperseg=0),
        lambda: module.stft(x, nperseg=16, nfft=8),
        lambda: module.stft(x, nperseg=16, boundary="wrap"),
        lambda: module.welch(x, nperseg=16, scaling="power"),
        lambda: module.welch(x, nperseg=16, average="mode"),
        lambda: module.welch(x, window=np.ones((2, 2))),
        lambda: module.welch(x, window=np.ones(8), nperseg=16),
        lambda: module.csd(np.ones((2, 64)), np.ones(64)),
        lambda: module.istft(np.ones(8)),
        lambda: module.istft(np.ones((9, 8)), time_axis=0, freq_axis=0),
        lambda: module.istft(np.ones((9, 8)), nperseg=16, noverlap=16),
    ]
    return _error_kinds(calls)


def test_spectral_errors_match_jax():
    expected = _spectral_errors(_Jitted(jsignal))
    assert None not in expected
    assert _spectral_errors(signal) == expected
