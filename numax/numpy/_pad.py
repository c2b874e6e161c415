"""`numax.numpy.pad`: numpy's padding modes over lax. Index-based modes (edge, wrap, reflect, symmetric)
gather with index arrays computed on the host, constant modes use `lax.pad`, statistic and ramp modes
concatenate computed borders; axes are padded one after another, as numpy does."""

import numpy as np

from numax import lax
from numax.core import dtypes

from ._util import aval, check_arraylike, to_array

_STAT_MODES = ("maximum", "minimum", "mean", "median")


def _pairs(value, ndim, name):
    """numpy's broadcasting of pad_width / constant_values / stat_length to one (before, after) per axis."""
    array = np.asarray(value)
    if array.ndim == 0:
        return [(array.item(), array.item())] * ndim
    if array.shape == (1,):
        return [(array[0].item(), array[0].item())] * ndim
    if array.shape == (2,):
        return [(array[0].item(), array[1].item())] * ndim
    if array.shape == (1, 2):
        return [(array[0, 0].item(), array[0, 1].item())] * ndim
    if array.shape == (ndim, 1):
        return [(row[0].item(), row[0].item()) for row in array]
    if array.shape == (ndim, 2):
        return [(row[0].item(), row[1].item()) for row in array]
    raise ValueError(f"pad: {name} of shape {array.shape} cannot be broadcast to ({ndim}, 2)")


def _pad_widths(pad_width, ndim):
    widths = _pairs(pad_width, ndim, "pad_width")
    for before, after in widths:
        if int(before) != before or int(after) != after:
            raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
        if before < 0 or after < 0:
            raise ValueError(f"pad: index can't contain negative values, got pad_width {pad_width!r}")
    return [(int(b), int(a)) for b, a in widths]


def _source_indices(mode, size, before, after):
    """The index along the axis that each padded position copies: computed on the host for a static `size`,
    staged (from an iota and the dimension's value) for a symbolic one."""
    if type(size) is int:
        xp, positions = np, np.arange(-before, size + after)
    else:
        import numax.numpy as xp

        positions = lax.iota(np.int32, size + before + after) - before
    if mode == "edge":
        return xp.clip(positions, 0, size - 1)
    if mode == "wrap":
        return positions % size
    if mode == "symmetric":
        folded = positions % (2 * size)
        return xp.where(folded >= size, 2 * size - 1 - folded, folded)
    if xp is np and size == 1:  # reflect
        return np.zeros_like(positions)
    period = 2 * size - 2 if xp is np else xp.maximum(2 * size - 2, 1)  # (a period of 1 when size is 1)
    folded = positions % period
    return xp.where(folded >= size, period - folded, folded)


def _slice_axis(x, axis, start, stop):
    shape = aval(x).shape
    return lax.slice_in_dim(x, start, stop, axis=axis) if (start, stop) != (0, shape[axis]) else x


def _border(x, axis, width):
    shape = list(aval(x).shape)
    shape[axis] = width
    return tuple(shape)


def _stat(x, mode, axis):
    from ._reductions import max as max_
    from ._reductions import mean
    from ._reductions import min as min_
    from ._sorting import median

    fn = {"maximum": max_, "minimum": min_, "mean": mean, "median": median}[mode]
    value = fn(x, axis=axis, keepdims=True)
    dtype = aval(x).dtype
    if dtypes.is_integer(dtype) and mode in ("mean", "median"):
        value = lax.round(value, lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax.convert_element_type(value, dtype)


def _pad_axis(x, axis, before, after, mode, options):
    from ._shape import broadcast_to, concatenate

    size = aval(x).shape[axis]
    dtype = aval(x).dtype
    if before == 0 and after == 0:
        return x
    if mode in ("constant", "empty"):
        low, high = options["constant_values"][axis] if mode == "constant" else (0, 0)
        config = [(0, 0, 0)] * aval(x).ndim
        if low == high:
            config[axis] = (before, after, 0)
            return lax.pad(x, np.asarray(low).astype(dtype), config)
        config[axis] = (before, 0, 0)
        x = lax.pad(x, np.asarray(low).astype(dtype), config)
        config[axis] = (0, after, 0)
        return lax.pad(x, np.asarray(high).astype(dtype), config)
    if size == 0:
        raise ValueError(f"pad: can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    if mode in ("edge", "wrap", "reflect", "symmetric"):
        from ._take import take

        return take(x, _source_indices(mode, size, before, after).astype(np.int32), axis=axis)
    pieces = []
    if mode in _STAT_MODES:
        low_length, high_length = options["stat_length"][axis]
        low_length = size if low_length is None else max(1, min(int(low_length), size))
        high_length = size if high_length is None else max(1, min(int(high_length), size))
        if before:
            stat = _stat(_slice_axis(x, axis, 0, low_length), mode, axis)
            pieces.append(broadcast_to(stat, _border(x, axis, before)))
        pieces.append(x)
        if after:
            stat = _stat(_slice_axis(x, axis, size - high_length, size), mode, axis)
            pieces.append(broadcast_to(stat, _border(x, axis, after)))
        return concatenate(pieces, axis=axis)
    # linear_ramp
    low_end, high_end = options["end_values"][axis]
    compute = dtypes.result_type(dtype, dtypes.default_float_dtype()) if not dtypes.is_inexact(dtype) else dtype

    def ramp(edge, end, width, ascending):
        steps = np.arange(width) / width
        fractions = steps if not ascending else steps[::-1]
        shape = [1] * aval(x).ndim
        shape[axis] = width
        fractions = np.asarray(fractions.reshape(shape), compute)
        edge = lax.convert_element_type(edge, compute)
        values = lax.add(np.asarray(end, compute), lax.mul(lax.sub(edge, np.asarray(end, compute)), fractions))
        if dtypes.is_integer(dtype):
            values = lax.floor(values)  # numpy's integer linspace rounds down
        return lax.convert_element_type(values, dtype)

    if before:
        pieces.append(ramp(_slice_axis(x, axis, 0, 1), low_end, before, ascending=False))
    pieces.append(x)
    if after:
        pieces.append(ramp(_slice_axis(x, axis, size - 1, size), high_end, after, ascending=True))
    return concatenate(pieces, axis=axis)


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy's `pad` (modes constant, empty, edge, wrap, reflect, symmetric, maximum, minimum, mean, median,
    linear_ramp). Widths must be static."""
    check_arraylike("pad", array)
    x = to_array(array)
    ndim = aval(x).ndim
    if callable(mode):
        raise NotImplementedError("pad: a callable mode is not supported")
    known = ("constant", "empty", "edge", "wrap", "reflect", "symmetric", "linear_ramp") + _STAT_MODES
    if mode not in known:
        raise NotImplementedError(f"pad: unimplemented padding mode {mode!r}; expected one of {known}")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}.get(mode, set())
    if mode in _STAT_MODES:
        allowed = {"stat_length"}
    unexpected = set(kwargs) - allowed
    if unexpected:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: {sorted(unexpected)}")
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported")
    widths = _pad_widths(pad_width, ndim)
    options = {
        "constant_values": _pairs(kwargs.get("constant_values", 0), ndim, "constant_values"),
        "end_values": _pairs(kwargs.get("end_values", 0), ndim, "end_values"),
        "stat_length": _pairs(kwargs["stat_length"], ndim, "stat_length") if kwargs.get("stat_length") is not None
        else [(None, None)] * ndim,
    }
    for axis, (before, after) in enumerate(widths):
        x = _pad_axis(x, axis, before, after, mode, options)
    return x
