"""`numax.experimental.pallas.triton` (`jax.experimental.pallas.triton`): masked loads and stores on refs and ref
views, atomic read-modify-writes, `dot`, and compiler hints, as Pallas kernels for GPUs use them."""

from numax import lax
from numax import numpy as xnp

from ._refs import KernelRef, RefView


def _checked(ref, what):
    if not isinstance(ref, KernelRef | RefView):
        raise TypeError(f"{what} takes a kernel's ref or a view of one (ref.at[...]), got {type(ref).__name__}")
    return ref


def load(ref, *, mask=None, other=None, cache_modifier=None, eviction_policy=None, volatile=False):
    """The elements of `ref` (a ref or `ref.at[idx]`); where `mask` is False, `other` (if given)."""
    del cache_modifier, eviction_policy, volatile
    return _checked(ref, "load").get(..., mask=mask, other=other, unshifted=True)


def store(ref, val, *, mask=None, eviction_policy=None):
    """Writes `val` into `ref` (a ref or `ref.at[idx]`) where `mask` holds (everywhere without one)."""
    del eviction_policy
    _checked(ref, "store").set(..., val, mask=mask, unshifted=True)


def atomic_add(x_ref_or_view, idx, val, *, mask=None):
    """Adds `val` to the elements at `idx` (where `mask` holds); returns what they held before."""
    ref = _checked(x_ref_or_view, "atomic_add")
    old = ref.get(idx)
    update = xnp.asarray(val, old.dtype)
    ref.set(idx, old + (update if mask is None else xnp.where(mask, update, xnp.zeros_like(update))))
    return old


def dot(a, b, trans_a=False, trans_b=False, allow_tf32=None, precision=None):
    """`a @ b` (either transposed first), accumulated in float32 for floating inputs, as Triton's dot."""
    del allow_tf32
    a, b = (x.T if t else x for x, t in ((a, trans_a), (b, trans_b)))
    accumulate = xnp.float32 if xnp.issubdtype(a.dtype, xnp.floating) else None
    return lax.dot(a, b, precision=precision, preferred_element_type=accumulate)


def max_contiguous(x, values):
    """`x`, declared contiguous in runs of `values` (a hint; the interpreter has no use for it)."""
    del values
    return x


def approx_tanh(x):
    """tanh(x) (the GPU's approximate instruction; the interpreter computes it exactly)."""
    return xnp.tanh(x)
