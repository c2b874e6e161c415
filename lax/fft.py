"""Fast Fourier transforms: the `fft` primitive over an operand's trailing one to three dimensions.

One primitive with four kinds (`FftType`): complex-to-complex FFT and IFFT, real-to-complex RFFT (which
keeps the `n // 2 + 1` non-negative frequencies of the last dimension) and complex-to-real IRFFT (its
inverse). As in XLA, the inverse transforms carry the `1 / prod(fft_lengths)` factor. Lowers to
`stablehlo.fft`; every kind is linear (over the reals), with transposes written here.
"""

import enum

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array, tensor_type
from . import ad
from . import typing as T

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """Which transform `fft` computes (JAX's enum): FFT, IFFT (complex to complex), RFFT (real to
    complex) or IRFFT (complex to real)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    def __repr__(self):  # how programs print the parameter: fft_type=FftType.RFFT
        return f"FftType.{self.name}"


def _fft_type(value):
    if isinstance(value, FftType):
        return value
    if isinstance(value, str):
        try:
            return FftType[value.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type '{value}': use one of FFT, IFFT, RFFT, IRFFT") from None
    raise TypeError(f"Unknown FFT type value '{value}': pass a numax.lax.FftType or its name")


def _real_dtype(dtype):
    return np.dtype(np.float64) if dtype == dtypes.complex128 else np.dtype(np.float32)


def _complex_dtype(dtype):
    return np.dtype(np.complex128) if dtype in (dtypes.float64, dtypes.complex128) else np.dtype(np.complex64)


fft_p = Primitive("fft")


def _fft_abstract_eval(x, fft_type, fft_lengths):
    rank = len(fft_lengths)
    if not 1 <= rank <= 3:
        raise TypeError(f"fft transforms 1 to 3 trailing dimensions, got fft_lengths {fft_lengths} "
                        "(numax.numpy.fft.fftn transforms more, in steps)")
    if rank > x.ndim:
        raise TypeError(f"fft: operand of shape {x.shape} has fewer dimensions than fft_lengths {fft_lengths}")
    if any(n < 0 for n in fft_lengths):
        raise TypeError(f"fft: fft_lengths {fft_lengths} must not be negative")
    batch, trailing = x.shape[:-rank], x.shape[-rank:]
    if fft_type == FftType.RFFT:
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"fft: RFFT takes a float32 or float64 operand, got {T.describe([x])}")
        if fft_lengths[-1] == 0:  # XLA would return an empty last dimension where the shape rule says 1
            raise TypeError(f"fft: RFFT needs a positive last fft_length, got fft_lengths {fft_lengths}")
        expected, shape = fft_lengths, batch + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        dtype = _complex_dtype(x.dtype)
    else:
        if not dtypes.is_complex(x.dtype):
            raise TypeError(f"fft: {fft_type.name} takes a complex64 or complex128 operand, got {T.describe([x])}")
        if fft_type == FftType.IRFFT:
            expected, shape = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,), batch + fft_lengths
            dtype = _real_dtype(x.dtype)
        else:
            expected, shape, dtype = fft_lengths, x.shape, x.dtype
    if trailing != expected:
        raise TypeError(f"fft: {fft_type.name} with fft_lengths {fft_lengths} needs an operand whose trailing "
                        f"dimensions are {expected}, got shape {x.shape}")
    return ShapedArray(shape, dtype, x.weak_type)


def _fft_op(builder, x, result_type, fft_type, fft_lengths):
    attributes = {"fft_type": f"#stablehlo<fft_type {fft_type.name}>", "fft_length": i64_array(fft_lengths)}
    return builder.op1("stablehlo.fft", [x], result_type, attributes)


def _lower_fft(ctx, x, fft_type, fft_lengths):
    return _fft_op(ctx.builder, x, aval_type(ctx.aval_out), fft_type, fft_lengths)


def _lower_fft_gpu(ctx, x, fft_type, fft_lengths):
    """cuFFT's multi-dimensional complex-to-real transform assumes Hermitian symmetry in every transformed
    dimension, numpy's only in the last: as JAX does, run an IFFT over the leading ones, then a 1-d IRFFT."""
    if fft_type != FftType.IRFFT or len(fft_lengths) == 1:
        return _lower_fft(ctx, x, fft_type, fft_lengths)
    builder, aval = ctx.builder, ctx.avals_in[0]
    rank, first = aval.ndim, aval.ndim - len(fft_lengths)
    to_front = list(range(rank))
    to_front.insert(first, to_front.pop())  # the half-spectrum dimension goes before the other transformed ones
    moved_type = tensor_type(tuple(aval.shape[d] for d in to_front), aval.dtype)
    x = builder.op1("stablehlo.transpose", [x], moved_type, {"permutation": i64_array(to_front)})
    x = _fft_op(builder, x, moved_type, FftType.IFFT, fft_lengths[:-1])
    back = list(range(rank))
    back.append(back.pop(first))
    x = builder.op1("stablehlo.transpose", [x], aval_type(aval), {"permutation": i64_array(back)})
    return _fft_op(builder, x, aval_type(ctx.aval_out), FftType.IRFFT, fft_lengths[-1:])


fft_p.def_abstract_eval(_fft_abstract_eval)
register_lowering(fft_p, _lower_fft)
register_lowering(fft_p, _lower_fft_gpu, platform="gpu")


def _inexact_dtype(dtype):
    """JAX's promotion for FFT operands: 64-bit integers to float64, other integers and bools to float32."""
    if dtypes.is_inexact(dtype):
        return dtype
    return np.dtype(np.float64) if dtype in (np.dtype(np.int64), np.dtype(np.uint64)) else np.dtype(np.float32)


def fft(x, fft_type, fft_lengths):
    """The `fft_type` transform (an `FftType` or its name) of `x` over its trailing `len(fft_lengths)`
    dimensions (1 to 3). RFFT takes real operands (integers become float), the others complex ones (real
    operands are converted); IRFFT's `fft_lengths` are those of its real result."""
    fft_type = _fft_type(fft_type)
    fft_lengths = tuple(int(n) for n in fft_lengths)
    dtype = get_aval_of(x).dtype
    if fft_type == FftType.RFFT:
        if dtypes.is_complex(dtype):
            raise ValueError("only real valued inputs supported for rfft: use FftType.FFT for complex inputs")
        target = _inexact_dtype(dtype)
    else:
        target = _complex_dtype(_inexact_dtype(dtype))
    from .conversions import convert_element_type

    x = convert_element_type(x, dtypes.canonicalize_dtype(target))
    if not fft_lengths:  # XLA has no rank-0 transform; JAX returns the converted operand
        return x
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


# --- differentiation ----------------------------------------------------------------------------------------
# JAX transposes complex-linear maps without conjugating. The DFT matrix is symmetric, so FFT and IFFT are
# their own transposes. RFFT and IRFFT are linear only over the reals; their transposes follow from writing
# them through complex transforms.
def _rfft_transpose(ct, fft_lengths):
    """RFFT(x) is FFT(complex(x)) with its last dimension cut to n // 2 + 1. Transposing each step: zero-pad
    the cotangent back to n, FFT it (its own transpose), keep the real part (the transpose of complex(x))."""
    from .elementwise import real
    from .shapes import pad

    aval = get_aval_of(ct)
    padding = [(0, 0, 0)] * (aval.ndim - 1) + [(0, fft_lengths[-1] - aval.shape[-1], 0)]
    padded = pad(ct, np.zeros((), aval.dtype), padding)
    return real(fft_p.bind(padded, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    """IRFFT sums each kept frequency k in 1..ceil(n/2)-1 twice (with its mirror image n - k) and the zero
    and (even n) Nyquist frequencies once, scaled by 1 / N. Its transpose is thus the RFFT of the cotangent
    weighted by that multiplicity over N, conjugated as JAX's convention for real-to-complex maps wants."""
    from .elementwise import conj, mul
    from .shapes import broadcast_in_dim

    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    aval = get_aval_of(spectrum)
    weights = np.full(aval.shape[-1], 2.0)
    weights[0] = 1.0
    if fft_lengths[-1] % 2 == 0:
        weights[-1] = 1.0
    weights = (weights / np.prod(fft_lengths)).astype(aval.dtype)
    return conj(mul(spectrum, broadcast_in_dim(weights, aval.shape, (aval.ndim - 1,))))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


ad.deflinear(fft_p, _fft_transpose)


# --- batching -------------------------------------------------------------------------------------------------
def _fft_batching(values, dims, fft_type, fft_lengths):
    """The transform works on trailing dimensions: a batch dimension among the leading ones stays put,
    one among the transformed ones moves to the front."""
    from .batching import move_axis

    (x,), (dim,) = values, dims
    if dim >= get_aval_of(x).ndim - len(fft_lengths):
        x, dim = move_axis(x, dim, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), dim


batching_rules[fft_p] = _fft_batching
