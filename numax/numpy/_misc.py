"""Assorted numpy functions: diagonal and masked updates (`fill_diagonal`, `put`, `place`: JAX's copies with
`inplace=False`), bit packing, `matvec`/`vecmat`, `fabs`/`spacing`/`bitwise_count`, host input (`frombuffer`,
`load`, ...), print options, and the modified Bessel function `i0`.
"""

import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.lax.elementwise import scalar_like
from numax.transforms.custom_derivatives import custom_jvp
from numax.transforms.jit import jit

from ._advanced import unravel_index
from ._creation import array, asarray, diag_indices
from ._indexing import nonzero
from ._linalg_ops import diag, matmul
from ._logic import clip
from ._shape import ravel, reshape, swapaxes, tile
from ._ufuncs import absolute, conjugate, copysign
from ._util import (
    aval,
    check_arraylike,
    ndim,
    promote_args_inexact,
    promote_args_numeric,
    shape,
    to_array,
)

__all__ = [
    "bitwise_count", "broadcast_shapes", "copy", "diagflat", "fabs", "fill_diagonal", "frombuffer", "fromfile",
    "fromiter", "fromstring", "get_printoptions", "i0", "iterable", "load", "matvec", "packbits", "place",
    "printoptions", "put", "set_printoptions", "spacing", "unpackbits", "vecmat",
]

iterable = np.iterable
# numax arrays print through numpy, so numpy's print options apply to them (as in JAX).
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def _size(x):
    return int(np.prod(shape(x), dtype=np.int64))


def _tile_to_size(values, size):
    """The 1-d `values` repeated (and truncated) to `size` entries."""
    count = shape(values)[0]
    if count == size:
        return values
    return tile(values, -(-size // count))[:size]


# --- copies and diagonals ------------------------------------------------------------------------------------

def copy(a, order=None):
    """A copy of `a` in a new buffer (so donating one leaves the other usable)."""
    check_arraylike("copy", a)
    return array(a, copy=True, order=order or "K")


def diagflat(v, k=0):
    """A 2-d array with the flattened `v` on its k-th diagonal (always 2-d, also for a scalar, as in JAX)."""
    check_arraylike("diagflat", v)
    k = operator.index(k)
    flat = ravel(asarray(v))
    flat = lax.convert_element_type(flat, aval(flat).dtype)  # strongly typed, as JAX's
    return diag(flat, k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of `a` with its main diagonal set to `val` (repeated or truncated to fit). numax arrays are
    immutable: pass `inplace=False`, as with jax.numpy."""
    if inplace:
        raise NotImplementedError("numax arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a, val = asarray(a), asarray(val)
    a_shape = shape(a)
    if len(a_shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(a_shape) > 2 and any(n != a_shape[0] for n in a_shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = min(a_shape)
    values = val if ndim(val) == 0 else _tile_to_size(ravel(val), n)
    return a.at[diag_indices(n, len(a_shape))].set(values)


# --- masked and indexed updates ------------------------------------------------------------------------------

def _inplace_error(name):
    return ValueError(f"numax.numpy.{name} cannot modify arrays in-place, because numax arrays are immutable. "
                      "Pass inplace=False to instead return an updated array.")


def put(a, ind, v, mode=None, *, inplace=True):
    """A copy of `a` with the entries at flat indices `ind` set to `v` (repeated to fit). Out-of-bounds indices
    are clipped (mode None or 'clip') or wrapped ('wrap'); pass `inplace=False`, as with jax.numpy."""
    if inplace:
        raise _inplace_error("put")
    check_arraylike("put", a, ind, v)
    a = asarray(a)
    indices = ravel(asarray(ind))
    values = ravel(to_array(v))
    size = _size(a)
    if not size or not _size(indices) or not _size(values):
        return a
    values = _tile_to_size(values, shape(indices)[0])
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        indices, scatter_mode = clip(indices, 0, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        indices, scatter_mode = indices % size, "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to numax.numpy.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return a.at[unravel_index(indices, shape(a))].set(values, mode=scatter_mode)


def place(arr, mask, vals, *, inplace=True):
    """A copy of `arr` whose entries where `mask` holds take the values of `vals` in order (repeated to fit);
    pass `inplace=False`, as with jax.numpy."""
    check_arraylike("place", arr, mask, vals)
    data, mask, vals = asarray(arr), asarray(mask), ravel(to_array(vals))
    if inplace:
        raise _inplace_error("place")
    if _size(data) != _size(mask):
        raise ValueError("place: arr and mask must be the same size")
    if not _size(vals):
        raise ValueError("Cannot place values from an empty array")
    if not _size(data):
        return data
    size = _size(mask)
    (indices,) = nonzero(ravel(mask), size=size, fill_value=size)
    values = _tile_to_size(vals, size)
    return reshape(ravel(data).at[indices].set(values, mode="drop"), shape(data))


# --- elementwise ---------------------------------------------------------------------------------------------

def fabs(x, /):
    """Elementwise absolute value of a real input, as a float (integers and bools become the default float)."""
    check_arraylike("fabs", x)
    if dtypes.is_complex(aval(to_array(x)).dtype):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    (x,) = promote_args_inexact("fabs", x)
    return lax.abs(x)


def spacing(x, /):
    """The distance from each element of `x` to the next representable number away from zero."""
    (x,) = promote_args_inexact("spacing", x)
    dtype = aval(x).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("numax.numpy.spacing is not defined for complex inputs.")
    inf = lax.full_like(x, np.inf)
    if dtype == np.float16:
        return lax.sub(lax.nextafter(x, inf), x)  # numpy's float16 spacing always steps up
    result = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
    tiny = copysign(lax.full_like(x, dtypes.finfo(dtype).smallest_subnormal), x)
    return lax.select(lax.eq(result, lax.full_like(result, 0)), tiny, result)


def bitwise_count(x, /):
    """The number of 1 bits in the absolute value of each element, as uint8 (as numpy)."""
    (x,) = promote_args_numeric("bitwise_count", x)
    return lax.convert_element_type(lax.population_count(absolute(x)), np.uint8)


# --- bit packing ---------------------------------------------------------------------------------------------

def _check_bitorder(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")


def _bit_shifts(bitorder, rank):
    """The shift of each of a byte's 8 bits, in order, shaped to broadcast along a new last axis."""
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    return shifts.reshape((1,) * rank + (8,))


def packbits(a, axis=None, bitorder="big"):
    """The elements of `a` read as bits (nonzero: 1), packed 8 to a uint8 along `axis` (flattened when None),
    the last group padded with zeros."""
    check_arraylike("packbits", a)
    a = asarray(a)
    dtype = aval(a).dtype
    if not (dtypes.is_integer(dtype) or dtype == dtypes.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    _check_bitorder(bitorder)
    bits = lax.convert_element_type(lax.ne(a, lax.full_like(a, 0)), np.uint8)
    if axis is None:
        bits, axis = ravel(bits), 0
    bits = swapaxes(bits, axis, -1)
    remainder = shape(bits)[-1] % 8
    if remainder:
        bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (ndim(bits) - 1) + [(0, 8 - remainder, 0)])
    groups = shape(bits)[:-1] + (shape(bits)[-1] // 8, 8)
    bits = lax.reshape(bits, groups)
    shifts = np.broadcast_to(_bit_shifts(bitorder, len(groups) - 1), groups)
    packed = lax.reduce_sum(lax.shift_left(bits, shifts), (len(groups) - 1,))
    return swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 array `a`, unpacked along `axis` (flattened when None); `count` keeps that many
    bits (zero-padded if more than there are; negative: drops that many from the end)."""
    check_arraylike("unpackbits", a)
    a = asarray(a)
    if aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    _check_bitorder(bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    a = swapaxes(a, axis, -1)
    a_shape = shape(a)
    expanded_shape = a_shape + (8,)
    expanded = lax.broadcast_in_dim(a, expanded_shape, tuple(range(len(a_shape))))
    shifts = np.broadcast_to(_bit_shifts(bitorder, len(a_shape)), expanded_shape)
    bits = lax.bitwise_and(lax.shift_right_logical(expanded, shifts), np.broadcast_to(np.uint8(1), expanded_shape))
    bits = lax.reshape(bits, a_shape[:-1] + (a_shape[-1] * 8,))
    if count is not None:
        count = operator.index(count)
        total = shape(bits)[-1]
        if count > total:
            bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * (ndim(bits) - 1) + [(0, count - total, 0)])
        else:
            bits = bits[..., :count]
    return swapaxes(bits, axis, -1)


# --- products ------------------------------------------------------------------------------------------------

def _check_core_rank(name, value, rank, signature):
    if ndim(value) < rank:
        raise ValueError(f"{name}: input with shape {shape(value)} does not have enough dimensions for its "
                         f"signature {signature}")


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast leading dimensions: (..., n, m) x (..., m) -> (..., n)."""
    check_arraylike("matvec", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    _check_core_rank("matvec", x1, 2, "(n,m),(m)->(n)")
    _check_core_rank("matvec", x2, 1, "(n,m),(m)->(n)")
    return matmul(x1, x2[..., None])[..., 0]


def vecmat(x1, x2, /):
    """Conjugated vector-matrix products over broadcast leading dimensions: (..., n) x (..., n, m) -> (..., m)."""
    check_arraylike("vecmat", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    _check_core_rank("vecmat", x1, 1, "(n),(n,m)->(m)")
    _check_core_rank("vecmat", x2, 2, "(n),(n,m)->(m)")
    return matmul(conjugate(x1)[..., None, :], x2)[..., 0, :]


def broadcast_shapes(*shapes):
    """The shape that arrays of `shapes` broadcast to (an int stands for a 1-d shape)."""
    if not shapes:
        return ()
    return lax.broadcast_shapes(*[(operator.index(s),) if np.ndim(s) == 0 else tuple(map(operator.index, s))
                                  for s in shapes])


# --- host input ----------------------------------------------------------------------------------------------

def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-d array of the data in `buffer` (read by numpy; 64-bit types become 32-bit unless x64 is on)."""
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-d array of the numbers in the text `string`, separated by `sep` (parsed by numpy)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _impure_reader(name):
    def reader(*args, **kwargs):
        raise NotImplementedError(
            f"numax.numpy.{name}() is not implemented because it may be non-pure (it consumes its source) and thus "
            f"unsafe under numax.jit and other transformations. Use numax.numpy.asarray(numpy.{name}(...)) "
            "outside of transformed functions instead.")

    reader.__name__ = name
    reader.__doc__ = f"Not implemented, as in JAX: use `asarray(numpy.{name}(...))` outside transformations."
    return reader


fromfile = _impure_reader("fromfile")
fromiter = _impure_reader("fromiter")


def load(file, *args, **kwargs):
    """numpy.load, returning a numax array for .npy files (bfloat16 data, which numpy saves as 2-byte voids,
    comes back as bfloat16); other results (.npz archives, unsupported dtypes) are returned as numpy gives them."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":
            out = out.view(dtypes.bfloat16)
        try:
            out = asarray(out)
        except (TypeError, ValueError):
            pass
    return out


# --- the modified Bessel function of order 0 -------------------------------------------------------------------
def _times_exp_abs(scaled, abs_x):
    """scaled * exp(|x|) in two halves, so I0(x) stays finite as long as it is representable. At x = +-inf
    this is 0 * inf = nan, as numpy's, scipy's and JAX's i0 give."""
    half = lax.exp(lax.mul(abs_x, scalar_like(0.5, abs_x)))
    return lax.mul(lax.mul(scaled, half), half)


@jit
def _i0_value(x):
    return _times_exp_abs(lax.bessel_i0e(x), lax.abs(x))


@jit
def _i1(x):
    """The modified Bessel function of order 1, I0's derivative (its own slope at 0 is 1/2, from i1e's)."""
    return _times_exp_abs(lax.bessel_i1e(x), lax.abs(x))


# Compiled as one program per input type (not one primitive at a time when run eagerly).
_i0 = custom_jvp(_i0_value)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _i0(x), lax.mul(t, _i1(x))


def i0(x):
    """The modified Bessel function of the first kind of order 0, I0(x) = sum_k (x^2/4)^k / (k!)^2, of real x.
    exp(|x|) i0e(x), the exponential applied in halves so that the result is finite wherever it is
    representable. Its derivative is I1 and its higher derivatives are exact too."""
    (x,) = promote_args_inexact("i0", x)
    x_aval = aval(x)
    if not dtypes.is_float(x_aval.dtype):
        raise ValueError(f"Unsupported input type to numax.numpy.i0: {x_aval.dtype}")
    if x_aval.dtype in (np.float16, dtypes.bfloat16):
        # exp(|x|) needs float32's range; the result is rounded back.
        wide = lax.convert_element_type(x, np.float32, x_aval.weak_type)
        return lax.convert_element_type(_i0(wide), x_aval.dtype, x_aval.weak_type)
    return _i0(x)
