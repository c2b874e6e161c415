"""`numax.ref` (`jax.ref`): mutable array references. `new_ref(x)` holds an array that `ref[idx]` reads and
`ref[idx] = value` overwrites (`get`, `set`, `swap`, `addupdate` are the same as functions); `freeze(ref)` gives its
final value and retires it. `typeof(ref)` is an `AbstractRef` over the held array's type.

What numax supports: refs used where they are made, in the loop bodies and branches called there, and refs passed
to jit. Eagerly, a ref is a mutable array; inside a function that jit, grad, vmap, scan, ... trace, a ref made there
is read and written as the trace runs, so its reads and writes are ordinary traced operations of that function
(differentiated, batched and compiled with it). Loop bodies and branches (lax.fori_loop, while_loop, scan, cond,
switch) read and write the refs of the level they are called at: each such ref's value is carried through the loop
or passed through the branches, as JAX discharges them (lax/ref_threading.py). A ref passed to a jitted function as
an argument (flax.nnx's ref Variables are) enters the program as its value, the function reads and writes it, and
its final value is written back after the call, as JAX's jit discharges ref effects. JAX also lets a ref cross the
boundaries of grad, vmap and closures of jitted functions; numax has no such discharge, so reading or writing a ref
inside such a transformation other than the one that made it raises NotImplementedError (never a silently stale
value).
"""

import numpy as np

from numax import numpy as xnp
from numax._api_extras import typeof, typeof_handlers
from numax._src.state.types import AbstractRef
from numax.core.array_type import Array
from numax.core.avals import aval_of_type
from numax.core.refs import MutableRef
from numax.core.trace import Tracer

__all__ = ["AbstractRef", "Ref", "addupdate", "freeze", "get", "new_ref", "set", "swap"]


class Ref(MutableRef):
    """A mutable array reference (made with `new_ref`)."""

    __slots__ = ()

    # --- the held array's type ---------------------------------------------------------------------
    @property
    def aval(self):
        return AbstractRef(typeof(self._value))

    shape = property(lambda self: tuple(typeof(self._value).shape))
    dtype = property(lambda self: typeof(self._value).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):  # (without it, numpy would index a ref for ever: numax's indexing clamps, never raising)
        raise TypeError("a Ref is not iterable: iterate over its value, ref[...]")

    # --- reads and writes --------------------------------------------------------------------------
    def __getitem__(self, index):
        self._check_usable("read")
        return self._value if _is_whole(index) else self._value[index]

    def __setitem__(self, index, value):
        self._check_usable("write")
        self._value = _updated(self._value, index, value, "set")

    def __repr__(self):
        if self._frozen:
            return "Ref(<frozen>)"
        if isinstance(self._value, Tracer):
            return f"Traced<{self.aval.str_short()}>"
        return f"Ref({np.asarray(self._value)!r}, dtype={self.dtype})"


typeof_handlers[Ref] = lambda ref: ref.aval
aval_of_type[Ref] = Ref._not_an_array  # (where an array is expected; jit takes refs as arguments)


def _is_whole(index):
    return index is Ellipsis or (isinstance(index, tuple) and (index == () or index == (Ellipsis,)))


def _updated(current, index, value, how):
    """`current` with `index` set to (or, for `how="add"`, increased by) `value`, which must keep its dtype."""
    aval = typeof(current)
    value = value if isinstance(value, Array) else xnp.asarray(value)
    value_aval = typeof(value)
    if value_aval.dtype != aval.dtype and not value_aval.weak_type:
        raise ValueError(f"Invalid dtype for `{how}` to a Ref of {aval.str_short()}: got {value_aval.dtype.name}")
    if _is_whole(index):
        if value_aval.shape != aval.shape:
            raise ValueError(f"Invalid shape for `{how}` to a Ref of {aval.str_short()}: got {value_aval.shape}")
        value = value if value_aval.dtype == aval.dtype else value.astype(aval.dtype)
        return current + value if how == "add" else value
    update = current.at[index]
    return update.add(value) if how == "add" else update.set(value)


def new_ref(init_val, *, memory_space=None, kind=None):
    """A mutable array reference holding `init_val` (an array, or what `numax.numpy.asarray` takes).
    `memory_space` and `kind` are accepted as in JAX; numax keeps every array in device memory."""
    del memory_space, kind
    if isinstance(init_val, Ref):
        raise TypeError("new_ref takes an array, not a Ref")
    return Ref(init_val if isinstance(init_val, Array) else xnp.asarray(init_val))  # (tracers, typed keys too)


def freeze(ref):
    """The final value of `ref`, which is retired: reading or writing it afterwards raises."""
    ref._check_usable("freeze")
    ref._frozen = True
    return ref._value


def get(ref, idx=()):
    """`ref[idx]` (the whole array for `()`)."""
    return ref[idx if idx != () else ...]


def set(ref, idx, value):  # noqa: A001  (jax's name)
    """`ref[idx] = value`."""
    ref[idx if idx != () else ...] = value


def swap(ref, idx, value):
    """Writes `value` at `ref[idx]` and returns what was there."""
    old = get(ref, idx)
    set(ref, idx, value)
    return old


def addupdate(ref, idx, x):
    """`ref[idx] += x`."""
    ref._check_usable("write")
    ref._value = _updated(ref._value, idx if idx != () else ..., x, "add")
