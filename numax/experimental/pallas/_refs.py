"""The refs a Pallas kernel reads and writes: `KernelRef`, a numax ref over one block, indexed as JAX's Pallas refs
are (ints and traced scalars, static slices, `pl.ds` slices with traced starts, `...`), and `RefView`
(`ref.at[idx]`), a window onto one. Reads are dynamic slices, writes dynamic updates (masked where a mask is given),
so out-of-range starts clamp as XLA's dynamic slices do; the masked `load` and `store` of pallas.triton read and
write past the end instead (padding with uninitialized values, as JAX's interpreter does), so that a block's masked
tail never shifts its start."""

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax.core.trace import get_aval_of
from numax.ref import Ref

from ._blocks import Slice


def _entries(index, shape):
    """Per dimension of `shape`: ('slice', start, size, stride) or ('index', i)."""
    index = index if isinstance(index, tuple) else (index,)
    if sum(entry is Ellipsis for entry in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    at = next((i for i, entry in enumerate(index) if entry is Ellipsis), None)
    if at is not None:
        index = index[:at] + (slice(None),) * (len(shape) - len(index) + 1) + index[at + 1:]
    if len(index) > len(shape):
        raise IndexError(f"too many indices for a ref of shape {shape}: {len(index)}")
    index = index + (slice(None),) * (len(shape) - len(index))
    entries = []
    for entry, dim in zip(index, shape):
        if isinstance(entry, Slice):
            entries.append(("slice", entry.start, int(entry.size), int(entry.stride)))
        elif isinstance(entry, slice):
            start, stop, step = entry.indices(dim)
            if step < 1:
                raise NotImplementedError("Pallas refs take slices with positive steps only")
            entries.append(("slice", start, len(range(start, stop, step)), step))
        elif np.ndim(entry) == 0:
            entries.append(("index", entry))
        else:
            raise NotImplementedError(f"Pallas refs are indexed with ints, slices and pl.ds, not {entry!r}")
    return entries


def _starts_and_sizes(entries):
    """The dynamic slice covering `entries`: int32 starts, and sizes spanning each strided slice (one for an
    index)."""
    def span(entry):
        if entry[0] == "index":
            return 1
        _, _, size, stride = entry
        return (size - 1) * stride + 1 if size else 0

    return [lax.convert_element_type(e[1], np.int32) for e in entries], [span(e) for e in entries]


def uninitialized(shape, dtype):
    """What a result's memory holds before a kernel writes it, as JAX's interpreter fills it: NaN for floats, the
    integer minimum, False."""
    dtype = np.dtype(dtype)
    if xnp.issubdtype(dtype, xnp.inexact):
        fill = np.nan
    elif dtype == np.bool_:
        fill = False
    else:
        fill = np.iinfo(dtype).min
    return xnp.full(shape, fill, dtype)


def _past_the_end(value, sizes):
    """`value` with `sizes` more uninitialized elements at the end of each dimension."""
    padding = uninitialized((), get_aval_of(value).dtype)
    return lax.pad(value, padding, [(0, size, 0) for size in sizes])


def read(value, index, unshifted=False):
    """`value[index]` for a Pallas ref's index (`unshifted`: past the end reads uninitialized values)."""
    shape = tuple(get_aval_of(value).shape)
    entries = _entries(index, shape)
    starts, sizes = _starts_and_sizes(entries)
    block = lax.dynamic_slice(_past_the_end(value, sizes) if unshifted else value, starts, sizes)
    strides = [e[3] if e[0] == "slice" else 1 for e in entries]
    if any(s != 1 for s in strides):
        block = lax.slice(block, [0] * len(sizes), sizes, strides)
    dropped = tuple(axis for axis, e in enumerate(entries) if e[0] == "index")
    return lax.squeeze(block, dropped) if dropped else block


def written(value, index, update, mask=None, unshifted=False):
    """`value` with `value[index]` set to `update` (where `mask`, if given; `unshifted`: what falls past the end is
    dropped)."""
    aval = get_aval_of(value)
    entries = _entries(index, tuple(aval.shape))
    if any(e[0] == "slice" and e[3] != 1 for e in entries):
        raise NotImplementedError("writing a strided slice of a Pallas ref")
    starts, sizes = _starts_and_sizes(entries)
    view_shape = tuple(e[2] for e in entries if e[0] == "slice")
    update = xnp.broadcast_to(xnp.asarray(update).astype(aval.dtype), view_shape)
    if mask is not None:
        update = xnp.where(mask, update, read(value, index, unshifted))
    if not unshifted:
        return lax.dynamic_update_slice(value, update.reshape(sizes), starts)
    whole = lax.dynamic_update_slice(_past_the_end(value, sizes), update.reshape(sizes), starts)
    return lax.slice(whole, [0] * len(sizes), tuple(aval.shape))


class KernelRef(Ref):
    """A kernel's ref over one block (or one scratch buffer)."""

    __slots__ = ()

    def __getitem__(self, index):
        self._check_usable("read")
        return self._value if index is Ellipsis or index == () else read(self._value, index)

    def __setitem__(self, index, value):
        self._check_usable("write")
        self._value = written(self._value, (Ellipsis,) if index == () else index, value)

    def get(self, index=Ellipsis, mask=None, other=None, unshifted=False):
        """The ref's elements at `index`; where `mask` is False, `other` (if given)."""
        self._check_usable("read")
        value = read(self._value, index, unshifted)
        return value if mask is None or other is None else xnp.where(mask, value, other)

    def set(self, index, value, mask=None, unshifted=False):
        self._check_usable("write")
        self._value = written(self._value, (Ellipsis,) if index == () else index, value, mask, unshifted)

    @property
    def at(self):
        return _At(self)


class _At:
    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, index):
        return RefView(self.ref, index)


class RefView:
    """`ref.at[index]`: the part of `ref` at `index`, read and written as a ref of its own."""

    def __init__(self, ref, index):
        self.ref, self.index = ref, index

    @property
    def shape(self):
        return tuple(get_aval_of(self.ref[self.index]).shape)

    @property
    def dtype(self):
        return self.ref.dtype

    def get(self, index=Ellipsis, mask=None, other=None, unshifted=False):
        value = self.ref.get(self.index, unshifted=unshifted)
        value = value if index is Ellipsis else read(value, index)
        return value if mask is None or other is None else xnp.where(mask, value, other)

    def set(self, index, value, mask=None, unshifted=False):
        if index is not Ellipsis:
            value = written(self.ref.get(self.index, unshifted=unshifted), index, value)
        self.ref.set(self.index, value, mask, unshifted)

    def __getitem__(self, index):
        return self.get(index)

    def __setitem__(self, index, value):
        self.set(index, value)
