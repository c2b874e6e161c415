"""`numax.scipy.signal`: N-d convolution and correlation (direct and by FFT), detrending, and spectral analysis
(stft, istft, csd, welch and detrend, in `_spectral`), as jax.scipy.signal.

The direct methods are one `lax.conv_general_dilated` with a single feature and batch dimension; the FFT
method multiplies spectra from `numax.numpy.fft` over the full output shape and slices the requested mode.
"""

import operator

import numpy as np

import numax.numpy as xnp
from numax import lax
from numax.numpy import fft as xfft
from numax.numpy._util import aval, canonicalize_axis, check_arraylike, promote_dtypes_inexact, shape, to_array
from numax.transforms.vmap import vmap

from ._spectral import csd, detrend, istft, stft, welch  # noqa: F401

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend", "fftconvolve", "istft", "stft",
           "welch"]

_MODES = ("full", "same", "valid")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")


def _swap_for_valid(shape1, shape2):
    """Whether the operands must swap so that the first is the larger in every dimension (None: neither is)."""
    if all(s1 >= s2 for s1, s2 in zip(shape1, shape2)):
        return False
    if all(s1 <= s2 for s1, s2 in zip(shape1, shape2)):
        return True
    return None


def _convolve_direct(in1, in2, mode, precision):
    """N-d convolution by one conv_general_dilated; 'same' is centred on in1 as scipy does."""
    _check_mode(mode)
    in1, in2 = to_array(in1), to_array(in2)
    if aval(in1).ndim != aval(in2).ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if aval(in1).size == 0 or aval(in2).size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes {shape(in1)} and {shape(in2)}.")
    in1, in2 = promote_dtypes_inexact(in1, in2)
    swap = _swap_for_valid(shape(in1), shape(in2))
    if swap is None:
        raise ValueError("One input must be smaller than the other in every dimension.")
    requested = shape(in2)  # 'same' centres on in1 whichever operand ends up as the kernel
    if swap:
        in1, in2 = in2, in1
    kernel = shape(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(kernel)
    elif mode == "same":
        padding = [(k - 1 - (r - 1) // 2, k - r + (r - 1) // 2) for k, r in zip(kernel, requested)]
    else:
        padding = [(k - 1, k - 1) for k in kernel]
    flipped = lax.rev(in2, tuple(range(len(kernel))))
    result = lax.conv_general_dilated(lax.expand_dims(in1, (0, 1)), lax.expand_dims(flipped, (0, 1)),
                                      (1,) * len(kernel), padding, precision=precision)
    return lax.squeeze(result, (0, 1))


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-d convolution of `in1` and `in2` ('full', 'same' or 'valid'); `method` 'auto' and 'direct'
    use lax.conv_general_dilated, 'fft' uses `fftconvolve`."""
    check_arraylike("convolve", in1, in2)
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_direct(in1, in2, mode, precision)
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-d cross-correlation of `in1` and `in2`: the convolution with `in2` flipped and conjugated."""
    check_arraylike("correlate", in1, in2)
    in2 = to_array(in2)
    return convolve(in1, xnp.flip(xnp.conj(in2)), mode, method=method, precision=precision)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d convolution of `in1` and `in2` (zero fill at the boundary only, as in JAX)."""
    check_arraylike("convolve2d", in1, in2)
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_direct(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation of `in1` and `in2` (zero fill at the boundary only, as in JAX).

    Computed as a flipped convolution of flipped `in1` with conjugated `in2`, which keeps scipy's
    centring for 'same' and its operand order for 'valid' when `in2` is the larger.
    """
    check_arraylike("correlate2d", in1, in2)
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = to_array(in1), to_array(in2)
    in2_larger = all(s1 <= s2 for s1, s2 in zip(shape(in1), shape(in2)))
    same_shape = shape(in1) == shape(in2)
    if mode != "same" and in2_larger and not (mode == "valid" and same_shape):
        result = _convolve_direct(xnp.flip(in2), xnp.conj(in1), mode, precision)
        # scipy's full correlation with the operands swapped is the conjugate of this one.
        return result if mode == "valid" else xnp.conj(result)
    return xnp.flip(_convolve_direct(xnp.flip(in1), xnp.conj(in2), mode, precision))


# --- by FFT --------------------------------------------------------------------------------------------------
def _fftconvolve_all_axes(in1, in2, mode):
    full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(shape(in1), shape(in2)))
    if mode == "valid":
        swap = _swap_for_valid(shape(in1), shape(in2))
        if swap is None:
            raise ValueError("For 'valid' mode, One input must be at least as large as the other in every dimension.")
        if swap:
            in1, in2 = in2, in1
    if all(s1 == 1 or s2 == 1 for s1, s2 in zip(shape(in1), shape(in2))):
        full = xnp.multiply(in1, in2)  # an outer product: no transform needed
    elif xnp.iscomplexobj(in1):
        full = xfft.ifftn(xfft.fftn(in1, full_shape) * xfft.fftn(in2, full_shape), full_shape)
    else:
        full = xfft.irfftn(xfft.rfftn(in1, full_shape) * xfft.rfftn(in2, full_shape), full_shape)
    out_shape = {"full": full_shape, "same": shape(in1),
                 "valid": tuple(s1 - s2 + 1 for s1, s2 in zip(shape(in1), shape(in2)))}[mode]
    starts = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
    return lax.dynamic_slice(full, starts, out_shape)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The N-d convolution of `in1` and `in2` through the FFT, over `axes` (default all; the other axes
    must match in size and are mapped over)."""
    check_arraylike("fftconvolve", in1, in2)
    in1, in2 = promote_dtypes_inexact(in1, in2)
    ndim = aval(in1).ndim
    if ndim != aval(in2).ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")

    def convolve_axes(a, b):
        return _fftconvolve_all_axes(a, b, mode)

    if axes is None:
        return convolve_axes(in1, in2)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(canonicalize_axis(operator.index(axis), ndim) for axis in axes)
    mapped = sorted(set(range(ndim)) - set(axes))
    if any(shape(in1)[i] != shape(in2)[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={shape(in1)} in2.shape={shape(in2)} "
                         f"axes={axes}")
    # Wrapped in ascending order: the outermost vmap removes the largest mapped axis first, so the axis
    # numbers of the inner ones stay valid.
    for axis in mapped:
        convolve_axes = vmap(convolve_axes, in_axes=axis, out_axes=axis)
    return convolve_axes(in1, in2)
