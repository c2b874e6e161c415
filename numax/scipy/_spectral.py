"""Spectral analysis for `numax.scipy.signal`: stft, istft, csd, welch and the detrend they apply to each segment,
with jax.scipy.signal's semantics.

A signal is cut into overlapping segments (a vmap of dynamic slices), each detrended, windowed and
transformed; the power spectra average those segments, the inverse transform overlaps and adds them back.
"""

import math
import operator
import warnings
from functools import partial

import numpy as np

import numax.numpy as xnp
from numax import lax
from numax.core import dtypes
from numax.numpy import fft as xfft
from numax.numpy import linalg as xlinalg
from numax.numpy._util import aval, canonicalize_axis, check_arraylike, promote_dtypes_inexact, shape, to_array
from numax.transforms.vmap import vmap

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _static_int(value, what):
    try:
        return int(value)
    except TypeError:
        raise TypeError(f"{what} must be a static integer, got {value!r}") from None


def _hann(length, dtype):
    if length == 1:
        return xnp.ones(1, dtype)
    return (xnp.sin(xnp.linspace(0, np.pi, length, endpoint=False)) ** 2).astype(dtype)


def _window(window, length, dtype):
    """The window named by `window` ('hann', or any scipy.signal.get_window spec) of `length` samples."""
    if window == "hann":
        return _hann(length, dtype)
    from scipy.signal import get_window

    return xnp.asarray(get_window(window, length), dtype)


def _window_and_length(window, nperseg, input_length, dtype):
    """(the window, the segment length), as scipy's `_triage_segments`."""
    if isinstance(window, (str, tuple)):
        length = input_length if nperseg is None else int(nperseg)
        if length > input_length:
            warnings.warn(f"nperseg={length} is greater than input_length={input_length}, using "
                          f"nperseg={input_length}", stacklevel=3)
            length = input_length
        return _window(window, length, dtype), length
    win = xnp.asarray(window, dtype)
    length = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if length != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, length


def _odd_extension(x, n):
    """`x` extended by `n` points at both ends of its last axis, reflected through the end values."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is "
                         f"{x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - xnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - xnp.flip(x[..., -(n + 1):-1], -1)
    return xnp.concatenate([left, x, right], axis=-1)


def _extend(boundary, x, n):
    pads = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    if boundary == "even":
        return xnp.pad(x, pads, "reflect")
    if boundary == "odd":
        return _odd_extension(x, n)
    if boundary == "constant":
        return xnp.pad(x, pads, "edge")
    return xnp.pad(x, pads, "constant", constant_values=0.0)  # 'zeros'


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _segment_spectra(x, win, detrend, nperseg, noverlap, nfft, sides):
    """The transform of each windowed, detrended segment: shape (..., segments, frequencies)."""
    if dtypes.is_integer(x.dtype):
        x = x.astype(win.dtype)
    if nperseg == 1 and noverlap == 0:
        segments = x[..., None]
    else:
        starts = xnp.arange(x.shape[-1] - nperseg + 1, step=nperseg - noverlap)
        cut = partial(lax.dynamic_slice_in_dim, x, slice_size=nperseg, axis=-1)
        segments = vmap(cut, out_axes=-2)(starts)
    segments = detrend(segments)
    if xnp.iscomplexobj(win):
        segments = segments.astype(dtypes.to_complex_dtype(segments.dtype))
    segments = win.reshape((1,) * (x.ndim - 1) + (1, nperseg)) * segments
    if sides == "twosided":
        return xfft.fft(segments, n=nfft)
    return xfft.rfft(segments.real, n=nfft)


def _detrend_function(detrend_or_type):
    if isinstance(detrend_or_type, str):
        return partial(detrend, type=detrend_or_type, axis=-1)
    if callable(detrend_or_type):
        return detrend_or_type
    if not detrend_or_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_or_type}")


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend_type="constant",
                     return_onesided=True, scaling="density", axis=-1, mode="psd", boundary=None, padded=False):
    """(frequencies, segment times, the spectra of the segments): scipy's `_spectral_helper`."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}")
    axis = canonicalize_axis(operator.index(axis), np.ndim(x))
    if y is None:
        check_arraylike("spectral_helper", x)
        (x,) = promote_dtypes_inexact(x)
        outer_shape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        check_arraylike("spectral_helper", x, y)
        x, y = promote_dtypes_inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer_shape = np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:], y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as error:
            raise ValueError("x and y cannot be broadcast together.") from error
    result_dtype = dtypes.to_complex_dtype(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _window_and_length(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap of windowed-FFT")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
    if y is None and x.size == 0:
        return xnp.zeros(x.shape, freq_dtype), xnp.zeros(x.shape, freq_dtype), xnp.zeros(x.shape, result_dtype)
    if y is not None and (x.size == 0 or y.size == 0):
        empty = outer_shape[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer_shape[axis:]
        return xnp.zeros(empty, freq_dtype), xnp.zeros(empty, freq_dtype), xnp.zeros(empty, result_dtype)

    x = xnp.moveaxis(x, axis, -1)
    if y is not None and y.ndim > 1:
        y = xnp.moveaxis(y, axis, -1)
    if y is not None and x.shape[-1] != y.shape[-1]:  # the shorter signal is zero-padded
        if x.shape[-1] < y.shape[-1]:
            x = xnp.concatenate([x, xnp.zeros(x.shape[:-1] + (y.shape[-1] - x.shape[-1],), x.dtype)], -1)
        else:
            y = xnp.concatenate([y, xnp.zeros(y.shape[:-1] + (x.shape[-1] - y.shape[-1],), x.dtype)], -1)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    if boundary is not None:
        x = _extend(boundary, x, nperseg // 2)
        if y is not None:
            y = _extend(boundary, y, nperseg // 2)
    if padded:
        extra = -(x.shape[-1] - nperseg) % step % nperseg
        x = xnp.concatenate([x, xnp.zeros(x.shape[:-1] + (extra,), x.dtype)], -1)
        if y is not None:
            y = xnp.concatenate([y, xnp.zeros(y.shape[:-1] + (extra,), x.dtype)], -1)

    detrend = _detrend_function(detrend_type)
    if callable(detrend_type):
        # (As JAX: the segments' axis `axis` is moved last around the user's function, `axis` counted in the
        # input's dimensions.)
        detrend = lambda d: xnp.moveaxis(detrend_type(xnp.moveaxis(d, axis, -1)), -1, axis)  # noqa: E731
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = xnp.sqrt(scale)
    scale = xnp.asarray(scale)
    scale = scale.astype(dtypes.to_complex_dtype(scale.dtype))
    sides = "twosided"
    if return_onesided:
        if xnp.iscomplexobj(x) or (y is not None and xnp.iscomplexobj(y)):
            warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
        else:
            sides = "onesided"
    frequency = xfft.fftfreq if sides == "twosided" else xfft.rfftfreq
    freqs = frequency(nfft, 1 / fs, dtype=freq_dtype)

    result = _segment_spectra(x, win, detrend, nperseg, noverlap, nfft, sides)
    if y is not None:
        result = xnp.conjugate(result) * _segment_spectra(y, win, detrend, nperseg, noverlap, nfft, sides)
    elif mode == "psd":
        result = xnp.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        # The one-sided power counts each frequency but DC (and Nyquist, for even nfft) twice.
        result = result.at[..., 1:None if nfft % 2 else -1].multiply(2)
    times = xnp.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        times = times - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, times, xnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False, return_onesided=True,
         boundary="zeros", padded=True, axis=-1):
    """The short-time Fourier transform of `x`: (frequencies, segment times, spectra)."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                            scaling="spectrum", axis=axis, mode="stft", boundary=boundary, padded=padded)


def _median_bias(n):
    """How much the median of `n` periodograms underestimates their mean (scipy's `_median_bias`)."""
    even = xnp.arange(2.0, n, 2)
    return 1 + xnp.sum(1.0 / (even + 1) - 1.0 / even)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant", return_onesided=True,
        scaling="density", axis=-1, average="mean"):
    """The cross power spectral density of `x` and `y` by Welch's method (`y=None`: the power spectral
    density of `x`): (frequencies, Pxy)."""
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                                     axis, mode="psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
                if xnp.iscomplexobj(pxy):
                    pxy = xnp.median(xnp.real(pxy), axis=-1) + 1j * xnp.median(xnp.imag(pxy), axis=-1)
                else:
                    pxy = xnp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = xnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant", return_onesided=True,
          scaling="density", axis=-1, average="mean"):
    """The power spectral density of `x` by Welch's method: (frequencies, Pxx)."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend,
                     return_onesided=return_onesided, scaling=scaling, axis=axis, average=average)
    return freqs, pxx.real


def _overlap_and_add(x, step):
    """Frames (..., frames, frame_length) laid `step` apart and summed: (..., step * (frames - 1) + length)."""
    *batch, frames, length = x.shape
    batch_size = math.prod(batch)
    x = x.reshape((batch_size, frames, length))
    output_size = step * (frames - 1) + length
    steps_per_frame = 1 + (length - 1) // step
    # Each frame as `steps_per_frame` blocks of `step`; block k of frame f lands at block f + k of the output.
    x = xnp.pad(x, ((0, 0), (0, 0), (0, steps_per_frame * step - length)))
    x = x.reshape((batch_size, frames, steps_per_frame, step)).transpose((0, 2, 1, 3))
    x = xnp.pad(x, ((0, 0), (0, 0), (0, frames), (0, 0)))
    shrunk = x.shape[2] - 1
    x = x.reshape((batch_size, -1))[:, :steps_per_frame * shrunk * step]
    x = x.reshape((batch_size, steps_per_frame, shrunk * step)).sum(axis=1)[:, :output_size]
    return x.reshape(tuple(batch) + (-1,))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, input_onesided=True, boundary=True,
          time_axis=-1, freq_axis=-2):
    """The inverse short-time Fourier transform: (times, the signal)."""
    check_arraylike("istft", Zxx)
    Zxx = xnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis, time_axis = canonicalize_axis(freq_axis, Zxx.ndim), canonicalize_axis(time_axis, Zxx.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(dtypes.to_complex_dtype(Zxx.dtype))
    default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = _static_int(nperseg or default, "nperseg: segment length of STFT")
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = default + 1 if input_onesided and nperseg == default + 1 else default
    else:
        nfft = _static_int(nfft, "nfft of STFT")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
        outer = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
        Zxx = xnp.transpose(Zxx, outer + (freq_axis, time_axis))
    inverse = xfft.irfft if input_onesided else xfft.ifft
    segments = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg, :]
    if isinstance(window, (str, tuple)):
        win = _window(window, nperseg, segments.dtype)
    else:
        win = xnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
    segments = segments * win.sum()
    win = lax.expand_dims(win, (*range(segments.ndim - 2), -1))
    x = _overlap_and_add(xnp.swapaxes(segments * win, -2, -1), step)
    norm = _overlap_and_add(xnp.swapaxes(xnp.repeat(win * win, segments.shape[-1], axis=-1), -2, -1), step)
    if boundary:
        x, norm = x[..., nperseg // 2:-(nperseg // 2)], norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / xnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = xnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    times = xnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return times, x


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002  (scipy's name)
    """`data` less its mean ('constant') or its least-squares line ('linear', piecewise between the
    breakpoints `bp`) along `axis`."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    check_arraylike("detrend", data)
    (data,) = promote_dtypes_inexact(to_array(data))
    if type == "constant":
        return data - xnp.mean(data, axis, keepdims=True)
    axis = operator.index(axis)
    length = shape(data)[axis]
    breakpoints = np.sort(np.unique(np.r_[0, bp, length]))
    if breakpoints[0] < 0 or breakpoints[-1] > length:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    moved = xnp.moveaxis(data, axis, 0)
    columns = xnp.reshape(moved, (length, -1))
    dtype = aval(columns).dtype
    for start, stop in zip(breakpoints[:-1], breakpoints[1:]):
        points = int(stop - start)
        ramp = xnp.arange(1, points + 1, dtype=dtype) / np.asarray(points, dtype)
        design = xnp.stack([xnp.ones(points, dtype), ramp], axis=1)
        coefficients = xlinalg.lstsq(design, columns[start:stop])[0]
        trend = xnp.matmul(design, coefficients, precision=lax.Precision.HIGHEST)
        columns = columns.at[start:stop].add(-trend)
    return xnp.moveaxis(xnp.reshape(columns, shape(moved)), 0, axis)
