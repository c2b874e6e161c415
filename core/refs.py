"""What numax's engine knows of mutable array refs (numax.ref): `MutableRef`, the base class of `numax.ref.Ref`
(a value, and the transformation it belongs to), and `RefArgument`, raised where a ref stands in for an array.
jit answers a RefArgument among its arguments by discharging the refs at its boundary (transforms/jit.py): each
enters the program as its value and its final value is written back after the call."""

from .trace import trace_state


class RefArgument(TypeError):
    """A Ref met where an array was expected (jit's arguments take refs: see transforms/jit.py)."""


class ForeignRefAccess(NotImplementedError):
    """A Ref read or written inside a transformation other than the one that made it. Loop bodies and branches
    (lax/ref_threading.py) catch it for refs of the level they were called at and thread those through."""

    def __init__(self, ref, message):
        super().__init__(message)
        self.ref = ref


class MutableRef:
    """A mutable array reference: its value (an array or a tracer) and the transformation that made it."""

    __slots__ = ("_value", "_main", "_frozen")

    def __init__(self, value):
        self._value = value
        self._main = trace_state.stack[-1]  # the transformation (or eager evaluation) it belongs to
        self._frozen = False

    def _check_usable(self, what):
        if self._frozen:
            raise RuntimeError(f"cannot {what} a Ref that was frozen (numax.freeze retires it)")
        if trace_state.stack[-1] is not self._main:
            raise ForeignRefAccess(self,
                f"cannot {what} this Ref here: it was made outside the transformation running now (grad, vmap, ...), "
                "or in one that has finished. numax's refs are used where they are made (eagerly, or inside the "
                "traced function that made them, and in the loop bodies and branches it calls) and passed to jit as "
                "arguments; pass arrays across grad and vmap instead, and do not close over a ref in a jitted "
                "function (see numax.ref)")

    def _not_an_array(self):
        raise RefArgument(f"a Ref is not an array: read its value with ref[...] (got {self!r})")
