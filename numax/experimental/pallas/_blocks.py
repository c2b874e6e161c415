"""What a Pallas call's blocks are: `BlockSpec` (a block shape and the map from program ids to block indices),
`GridSpec`, squeezed dimensions (`None`, `pl.squeezed`, `pl.Squeezed()`), element dimensions (`pl.Element`: the
index map gives an element offset into the array padded by `padding`), and `Slice` (`pl.ds`), the dynamic slice a
kernel indexes its refs with; `cdiv`."""

import dataclasses

import numpy as np


def cdiv(a, b):
    """ceil(a / b) for integers (Python ints, or arrays)."""
    if isinstance(a, int | np.integer) and isinstance(b, int | np.integer):
        return -(-int(a) // int(b))
    return (a + b - 1) // b


def next_power_of_2(x):
    """The smallest power of two >= `x` (a non-negative int; 1 for 0)."""
    if not isinstance(x, int | np.integer) or x < 0:
        raise ValueError(f"next_power_of_2 takes a non-negative int, got {x!r}")
    return 1 if x == 0 else 1 << (int(x) - 1).bit_length()


class Squeezed:
    """A block dimension of size 1 that the kernel's ref leaves out (written `None` or `pl.squeezed` too)."""

    def __eq__(self, other):
        return isinstance(other, Squeezed)

    def __hash__(self):
        return hash(Squeezed)

    def __repr__(self):
        return "Squeezed()"


squeezed = Squeezed()


@dataclasses.dataclass(frozen=True)
class Element:
    """A block dimension of `block_size` elements whose index map gives the element where the block starts, in
    the array padded by `padding` ((low, high) elements of uninitialized values)."""

    block_size: int
    padding: tuple = (0, 0)


@dataclasses.dataclass(frozen=True)
class Slice:
    """`size` elements from `start` (an int or a traced scalar), every `stride`-th: what `pl.ds` makes."""

    start: object
    size: int
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.size, int | np.integer) or self.size < 0:
            raise ValueError(f"a Pallas slice needs a static, non-negative size, got {self.size!r}")
        if not isinstance(self.stride, int | np.integer) or self.stride < 1:
            raise ValueError(f"a Pallas slice needs a static, positive stride, got {self.stride!r}")


def ds(start, size=None, stride=None):
    """`pl.ds(start, size)`: a dynamic slice of `size` elements from `start`; `ds(size)` starts at 0."""
    if size is None:
        start, size = 0, start
    return Slice(start, size, 1 if stride is None else stride)


dslice = ds


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """The blocks of one operand or result: `block_shape` (an int per dimension, `None`/`pl.squeezed` for a
    squeezed one; None: the whole array) and `index_map` (program ids -> one block index per dimension, the element
    index for a squeezed one; None: block 0 everywhere). `pipeline_mode` and `memory_space` are accepted as in JAX
    and change nothing in the interpreter."""

    block_shape: object = None
    index_map: object = None
    pipeline_mode: object = None
    memory_space: object = None

    def __init__(self, block_shape=None, index_map=None, pipeline_mode=None, *, memory_space=None):
        object.__setattr__(self, "block_shape", None if block_shape is None else tuple(block_shape))
        object.__setattr__(self, "index_map", index_map)
        object.__setattr__(self, "pipeline_mode", pipeline_mode)
        object.__setattr__(self, "memory_space", memory_space)


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """`grid`, `in_specs` and `out_specs` together (what `pallas_call(grid_spec=...)` takes)."""

    grid: object = ()
    in_specs: object = None
    out_specs: object = None
    scratch_shapes: tuple = ()


def is_squeezed(dim):
    return dim is None or isinstance(dim, Squeezed)


@dataclasses.dataclass(frozen=True)
class BlockMapping:
    """One operand's blocks, resolved against its shape: per dimension the block size (1 where squeezed) and
    whether it is squeezed; `index_map` as given (or block 0)."""

    name: str
    shape: tuple
    sizes: tuple
    squeezed: tuple
    index_map: object
    padding: tuple  # (low, high) per dimension: an Element dimension's, else (0, 0)
    offsets: tuple  # per dimension: does the index map give an element offset (Element, squeezed)?

    @classmethod
    def of(cls, spec, shape, name):
        shape = tuple(shape)
        if spec is None or spec.block_shape is None:
            block = shape
        else:
            block = spec.block_shape
            if len(block) != len(shape):
                raise ValueError(f"{name}: a block shape of {len(block)} dimensions {block} for an array of shape "
                                 f"{shape}")
        sizes = tuple(1 if is_squeezed(d) else d.block_size if isinstance(d, Element) else d for d in block)
        for size in sizes:
            if not isinstance(size, int | np.integer) or size < 1:
                raise ValueError(f"{name}: block dimensions must be positive ints, None or pl.squeezed, got {block}")
        index_map = spec.index_map if spec is not None and spec.index_map is not None else (
            lambda *ids: (0,) * len(shape))
        padding = tuple(tuple(d.padding) if isinstance(d, Element) else (0, 0) for d in block)
        return cls(name, shape, tuple(int(s) for s in sizes), tuple(is_squeezed(d) for d in block), index_map,
                   padding, tuple(is_squeezed(d) or isinstance(d, Element) for d in block))

    @property
    def block_shape(self):
        """The shape of the kernel's ref: the block less its squeezed dimensions."""
        return tuple(s for s, sq in zip(self.sizes, self.squeezed) if not sq)

    def padded_shape(self):
        """The array's shape padded by its Element paddings, then to whole blocks."""
        padded = (d + low + high for d, (low, high) in zip(self.shape, self.padding))
        return tuple(cdiv(d, s) * s for d, s in zip(padded, self.sizes))

    def starts(self, program_ids):
        """The element where this grid point's block starts, per dimension."""
        indices = self.index_map(*program_ids)
        indices = tuple(indices) if isinstance(indices, tuple | list) else (indices,)
        if len(indices) != len(self.shape):
            raise ValueError(f"{self.name}: its index_map returned {len(indices)} indices for an array of "
                             f"{len(self.shape)} dimensions {self.shape}")
        return tuple(i if offset else i * s for i, s, offset in zip(indices, self.sizes, self.offsets))
