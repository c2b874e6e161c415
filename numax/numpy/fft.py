"""`numax.numpy.fft`: numpy's discrete Fourier transforms with JAX's semantics, written over `numax.lax.fft`.

The transformed axes are moved last (XLA transforms trailing dimensions only), cropped or zero-padded to
the requested lengths `s` / `n`, transformed in steps of at most three dimensions, scaled for `norm`, and
moved back. As in JAX, integer and boolean inputs become float32 (64-bit integers float64) before the
transform; float16 and bfloat16 become complex64 for complex transforms and are refused by real ones.
"""

import math
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.lax import FftType

from ._shape import roll
from ._ufuncs import conjugate, divide
from ._util import aval, canonicalize_axis, check_arraylike, device_array, is_array, shape, to_array

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _move_axes(x, source, destination):
    """`x` with its axes `source` moved to positions `destination`, the others keeping their order."""
    rank = len(shape(x))
    order = [d for d in range(rank) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return x if order == list(range(rank)) else lax.transpose(x, tuple(order))


def _resize_trailing(x, sizes):
    """`x` with its trailing dimensions cut or zero-padded (at the end) to `sizes`."""
    current = shape(x)
    lead = len(current) - len(sizes)
    target = current[:lead] + tuple(sizes)
    if any(t < c for t, c in zip(target, current)):
        x = lax.slice(x, (0,) * len(current), tuple(min(t, c) for t, c in zip(target, current)))
    if any(t > c for t, c in zip(target, current)):
        padding = [(0, max(t - c, 0), 0) for t, c in zip(target, current)]
        x = lax.pad(x, np.zeros((), aval(x).dtype), padding)
    return x


def _transform_trailing(x, fft_type, lengths):
    """The transform over the trailing `len(lengths)` dimensions; XLA does at most 3 at once, so longer ones
    go in steps (two 2-d steps for 4 dimensions, as JAX does): the forward kinds transform the last block
    first, the inverse kinds last (IRFFT's half-spectrum dimension must be the final step)."""
    if len(lengths) <= 3:
        return lax.fft(x, fft_type, tuple(lengths))
    step = 2 if len(lengths) == 4 else 3
    rank = len(shape(x))
    rest = tuple(range(rank - len(lengths), rank - step))
    rest_at_end = tuple(range(rank - len(lengths) + step, rank))
    if fft_type in (FftType.FFT, FftType.RFFT):
        x = lax.fft(x, fft_type, tuple(lengths[-step:]))
        x = _move_axes(x, rest, rest_at_end)
        x = _transform_trailing(x, FftType.FFT, lengths[:-step])
        return _move_axes(x, rest_at_end, rest)
    x = _move_axes(x, rest, rest_at_end)
    x = _transform_trailing(x, FftType.IFFT, lengths[:-step])
    x = _move_axes(x, rest_at_end, rest)
    return lax.fft(x, fft_type, tuple(lengths[-step:]))


def _norm_factor(name, norm, lengths):
    """The scale on top of lax's (which divides the inverse kinds by N): none for "backward"; transforms
    named as forward ones (fft, rfft, hfft) divide by sqrt(N) or N for "ortho" / "forward", inverse-named
    ones (ifft, irfft, ihfft) multiply by as much."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward".')
    size = float(math.prod(lengths))
    if norm in (None, "backward") or size == 0:  # an empty transform has nothing to scale
        return None
    factor = math.sqrt(size) if norm == "ortho" else size
    return factor if name.startswith("i") else 1.0 / factor


def _fft_core(name, fft_type, a, s, axes, norm):
    full_name = f"numax.numpy.fft.{name}"
    check_arraylike(full_name, a)
    x = to_array(a)
    rank = len(shape(x))
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError(f"{full_name}: the transform lengths s={s} must be positive")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(f"{full_name}: shape s={s} and axes={tuple(axes)} have different lengths")
    if axes is None:
        axes = tuple(range(rank)) if s is None else tuple(range(rank - len(s), rank))
    else:
        axes = tuple(canonicalize_axis(axis, rank) for axis in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    trailing = tuple(range(rank - len(axes), rank))
    x = _move_axes(x, axes, trailing)
    sizes = shape(x)[rank - len(axes):]
    if s is None:
        # IRFFT's default output length is 2 * (m - 1): 0 for an input of length 0 or 1, as in JAX.
        s = sizes[:-1] + (max(0, 2 * (sizes[-1] - 1)),) if fft_type == FftType.IRFFT and axes else sizes
    wanted = s[:-1] + (s[-1] // 2 + 1,) if fft_type == FftType.IRFFT and s else s
    if wanted != sizes:
        x = _resize_trailing(x, wanted)
    out = _transform_trailing(x, fft_type, s)
    factor = _norm_factor(name, norm, s)
    if factor is not None:
        out = lax.mul(out, np.array(factor, aval(out).dtype))
    return device_array(_move_axes(out, trailing, axes))


def _check_one_axis(name, axis):
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"numax.numpy.fft.{name} does not support multiple axes. Please use "
                         f"numax.numpy.fft.{name}n. Got axis = {axis!r}.")


def _fft_core_1d(name, fft_type, a, n, axis, norm):
    _check_one_axis(name, axis)
    return _fft_core(name, fft_type, a, None if n is None else (n,), None if axis is None else (axis,), norm)


def _fft_core_2d(name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"numax.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(name, fft_type, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
    """The 1-d discrete Fourier transform along `axis`, of length `n` (input cropped or zero-padded)."""
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The 1-d inverse discrete Fourier transform along `axis`, of length `n`."""
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The 1-d transform of real input along `axis`: the n // 2 + 1 non-negative frequencies."""
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of `rfft`: a real signal of length `n` (default 2 * (m - 1)) along `axis`."""
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-d discrete Fourier transform over `axes`."""
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-d inverse discrete Fourier transform over `axes`."""
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-d transform of real input over `axes` (the last one halved, as in `rfft`)."""
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of `rfft2`."""
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The n-d discrete Fourier transform over `axes` (all, or the last len(s), by default)."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-d inverse discrete Fourier transform over `axes`."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-d transform of real input over `axes` (the last one halved, as in `rfft`)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of `rfftn`: a real result of shape `s` over `axes`."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum of length `n`
    (default 2 * (m - 1))."""
    _check_one_axis("hfft", axis)
    check_arraylike("numax.numpy.fft.hfft", a)
    conj_a = conjugate(a)
    length = 2 * (shape(conj_a)[canonicalize_axis(axis, len(shape(conj_a)))] - 1) if n is None else n
    out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
    # lax's IRFFT divides by the length; hfft is the unscaled transform.
    return device_array(lax.mul(out, np.array(length, aval(out).dtype)))


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of `hfft`: the n // 2 + 1 non-negative frequencies of the inverse transform of real input."""
    _check_one_axis("ihfft", axis)
    check_arraylike("numax.numpy.fft.ihfft", a)
    length = shape(a)[canonicalize_axis(axis, len(shape(a)))] if n is None else n
    out = conjugate(_fft_core_1d("ihfft", FftType.RFFT, a, n, axis, norm))
    return device_array(lax.mul(out, np.array(1.0 / length, aval(out).dtype)))


def _frequency_dtypes(name, n, d, dtype):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of numax.numpy.fft.{name} only takes an int. Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of numax.numpy.fft.{name} only takes a single value. Got d = {list(d)}.")
    out_dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
    if dtypes.is_inexact(out_dtype):
        work_dtype = np.dtype(np.finfo(out_dtype).dtype)
    else:
        work_dtype = dtypes.default_float_dtype()
    return operator.index(n), out_dtype, work_dtype


def _frequencies(numerators, n, d, work_dtype):
    """`numerators / (d * n)` in `work_dtype`; `d` may be an array (even a traced one)."""
    if is_array(d):
        denominator = lax.mul(lax.convert_element_type(d, work_dtype), np.array(n, work_dtype))
    else:
        denominator = np.asarray(d * n).astype(work_dtype)
    return divide(device_array(numerators.astype(work_dtype)), denominator)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `n`-point `fft` with sample spacing `d`: [0, 1, ..., -2, -1] / (d * n)."""
    n, out_dtype, work_dtype = _frequency_dtypes("fftfreq", n, d, dtype)
    numerators = (np.arange(n) + n // 2) % max(n, 1) - n // 2
    result = _frequencies(numerators, n, d, work_dtype)
    return result if result.dtype == out_dtype else lax.convert_element_type(result, out_dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `n`-point `rfft`: [0, 1, ..., n // 2] / (d * n)."""
    n, out_dtype, work_dtype = _frequency_dtypes("rfftfreq", n, d, dtype)
    result = _frequencies(np.arange(n // 2 + 1), n, d, work_dtype)
    return result if result.dtype == out_dtype or not dtypes.is_inexact(out_dtype) else (
        lax.convert_element_type(result, out_dtype))


def _shift(name, x, axes, sign):
    check_arraylike(f"numax.numpy.fft.{name}", x)
    dims = shape(x)
    if axes is None:
        axes = tuple(range(len(dims)))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    shifts = tuple(sign * (dims[axis] // 2) for axis in axes)
    return roll(x, shifts, tuple(axes)) if axes else device_array(x)


def fftshift(x, axes=None):
    """`x` rolled by half of each axis in `axes` (default all): the zero frequency moves to the centre."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of `fftshift`."""
    return _shift("ifftshift", x, axes, -1)
