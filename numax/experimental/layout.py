"""`numax.experimental.layout`, as `jax.experimental.layout`: `Layout` (the order of an array's dimensions in
memory, major to minor, and its tiling), `Format` (a layout with a sharding) and `with_layout_constraint`.

numax keeps every array in the default layout, row-major with no tiling, and lets XLA choose none other: a
constraint to that layout is a no-op (it is already so), and a constraint to any other raises
NotImplementedError rather than silently leaving the array as it is."""

from numax.core import pytree as tree
from numax.core.sharding import Sharding
from numax.core.trace import get_aval_of


class _AutoLayout:
    def __repr__(self):
        return "AUTO"


class Layout:
    """Dimension order in memory (`major_to_minor`: a permutation of the axes, major first), tiling and the size
    of a sub-byte element. `Layout.AUTO` lets the compiler choose."""

    AUTO = _AutoLayout()

    def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits=0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(tile) for tile in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def _key(self):
        return self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

    def update(self, **changes):
        """A copy with the given fields (`major_to_minor`, `tiling`, `sub_byte_element_size_in_bits`) replaced."""
        fields = dict(zip(("major_to_minor", "tiling", "sub_byte_element_size_in_bits"), self._key()))
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Layout.update() got unexpected fields {sorted(unknown)}")
        return Layout(**{**fields, **changes})

    def check_compatible_aval(self, aval_shape):
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError("Length of major_to_minor and the rank of the value should match. Got "
                             f"major_to_minor={self.major_to_minor} and shape={tuple(aval_shape)}")

    def _is_default_for(self, ndim):
        return self.major_to_minor == tuple(range(ndim)) and not self.tiling and not self.sub_byte_element_size_in_bits


class Format:
    """A layout (a `Layout`, `Layout.AUTO` or None) with a sharding (a Sharding or None); a concrete layout
    needs a concrete sharding."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout=None, sharding=None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
                             "NamedSharding or SingleDeviceSharding to the sharding argument. Got sharding None")
        if not isinstance(layout, (Layout, _AutoLayout, type(None))):
            raise TypeError("Invalid value received for the layout argument. Expected values are `None`, "
                            f"`Layout.AUTO` or an instance of `Layout`. Got {layout} of type {type(layout)}")
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError("Invalid value received for the sharding argument. Expected values are `None` or an "
                            f"instance of `Sharding`. Got {sharding} of type {type(sharding)}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"


def with_layout_constraint(x, layouts):
    """`x` (a pytree of arrays) constrained to `layouts` (one `Layout`, or a pytree prefix of `x` of them).
    numax arrays are always in the default row-major layout: that constraint returns `x` as it is; any other
    raises NotImplementedError."""
    leaves, treedef = tree.tree_flatten(x)
    layouts = tree.broadcast_prefix_leaves(layouts, x)
    if any(not isinstance(layout, Layout) for layout in layouts):
        raise ValueError("layouts passed to `with_layout_constraint` must be of type `Layout`. Got "
                         f"{[type(layout) for layout in layouts]}")
    for leaf, layout in zip(leaves, layouts):
        shape = get_aval_of(leaf).shape
        layout.check_compatible_aval(shape)
        if not layout._is_default_for(len(shape)):
            raise NotImplementedError(f"with_layout_constraint: numax keeps arrays in the default row-major layout "
                                      f"only; {layout} asks for another")
    return treedef.unflatten(leaves)
