"""`jax._src.state.types`: `AbstractRef`, the abstract value of a mutable array reference (`typeof(numax.new_ref(x))`):
the type of the array it holds (`inner_aval`), and where it lives (`memory_space`, `kind`: kept, numax places
every array in device memory)."""

from numax._src.core import AbstractValue


class AbstractRef(AbstractValue):
    """The type of a Ref holding arrays of type `inner_aval`; prints as `Ref{f32[3]}`."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval, memory_space=None, kind=None):
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)
    weak_type = property(lambda self: self.inner_aval.weak_type)

    def __eq__(self, other):
        return (type(other) is type(self) and self.inner_aval == other.inner_aval
                and (self.memory_space, self.kind) == (other.memory_space, other.kind))

    def __hash__(self):
        return hash((type(self), self.inner_aval, self.memory_space, self.kind))

    def str_short(self):
        return f"Ref{{{self.inner_aval.str_short()}}}"

    __str__ = str_short

    def __repr__(self):
        return f"AbstractRef({self.inner_aval!r})"
