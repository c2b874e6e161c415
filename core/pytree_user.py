"""The pytree functions users call (`numax.tree_util`, `numax.tree`, and `jax.tree_util` under the switch): numax's
pytree machinery (core/pytree.py) seen from outside, where a few registered node types are leaves.

Typed PRNG key arrays are such types. To numax's transformations a key array is a node over its uint32 key data,
so jit, vmap, grad, scan, ... pass keys through as that data and rebuild them, with nothing key-specific in their
rules; to users, as in JAX, a key array is one leaf (`tree_leaves(key) == [key]`), so `tree_map` over a model's
state applies the function to the key itself, and libraries that walk trees (flax.nnx, equinox) see it whole.
`register_user_leaf(node_type)` marks such a type.

Everything else is core/pytree.py's behaviour, unchanged: these functions only make the marked types leaves.
"""

from . import pytree as _core
from .pytree import _user_leaf_types

_marked: set[type] = set()  # the registered node types users see as leaves
_abstract: dict = {}  # node type -> its abstract leaf from a node over ShapeDtypeStructs (eval_shape's results)


def register_user_leaf(node_type, abstract=None):
    """Makes `node_type`, a registered pytree node, a leaf to the user-facing tree functions. `abstract(node)`,
    for a node whose own leaves are ShapeDtypeStructs, gives the one ShapeDtypeStruct users see for it."""
    _marked.add(node_type)
    _user_leaf_types.add(node_type)
    if abstract is not None:
        _abstract[node_type] = abstract


def abstract_user_leaves(tree):
    """`tree` (made of ShapeDtypeStructs, as eval_shape builds it) with each marked node replaced by its abstract
    leaf: eval_shape of a function returning a key array gives a ShapeDtypeStruct of the key dtype, as in JAX."""
    if not _abstract:
        return tree
    return _core.tree_map(lambda x: _abstract[type(x)](x) if type(x) in _abstract else x, tree,
                          is_leaf=lambda x: type(x) in _abstract)


def is_user_leaf_type(node_type) -> bool:
    return node_type in _marked


def _user_is_leaf(is_leaf, takes_path=False):
    """`is_leaf` extended to say True for the marked types (None stays None when nothing is marked)."""
    if not _marked:
        return is_leaf
    if is_leaf is None:
        return (lambda path, x: type(x) in _marked) if takes_path else (lambda x: type(x) in _marked)
    if takes_path:
        return lambda path, x: type(x) in _marked or is_leaf(path, x)
    return lambda x: type(x) in _marked or is_leaf(x)


def tree_flatten(tree, is_leaf=None):
    """Returns (leaves, treedef). None is an empty node, not a leaf."""
    if is_leaf is None:
        leaves = []
        return leaves, _core._flatten_plain(tree, leaves, _user_leaf_types)
    return _core.tree_flatten(tree, _user_is_leaf(is_leaf))


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """Returns ([(key_path, leaf), ...], treedef). With `is_leaf_takes_path`, `is_leaf(key_path, node)`."""
    return _core.tree_flatten_with_path(tree, _user_is_leaf(is_leaf, is_leaf_takes_path), is_leaf_takes_path)


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map(f, tree, *rest, is_leaf=None):
    """Applies `f` leafwise; `rest` trees must have `tree`'s structure (or it as a prefix)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = _core._flatten_rest_up_to(treedef, tree, rest, _user_is_leaf(is_leaf))
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    return _core.tree_map_with_path(f, tree, *rest, is_leaf=_user_is_leaf(is_leaf, is_leaf_takes_path),
                                    is_leaf_takes_path=is_leaf_takes_path)


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    return _core.tree_reduce(function, tree, initializer, _user_is_leaf(is_leaf))


def tree_reduce_associative(operation, tree, *, identity=_core._NO_IDENTITY, is_leaf=None):
    return _core.tree_reduce_associative(operation, tree, identity=identity, is_leaf=_user_is_leaf(is_leaf))


def tree_all(tree, is_leaf=None):
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turns a tree of shape outer[inner[...]] into inner[outer[...]]."""
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    return _core.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """`full_tree`'s structure with each leaf replaced by the leaf of `prefix_tree` above it."""
    is_leaf = _user_is_leaf(is_leaf)
    return tree_structure(full_tree).unflatten(_core.broadcast_prefix_leaves(prefix_tree, full_tree, is_leaf))


def all_leaves(iterable, is_leaf=None):
    return all(tree_structure(x, is_leaf).kind is None for x in iterable)


def is_tree_node(typ) -> bool:
    """True for registered node types (built-in or user) and namedtuple types; False for leaf types."""
    return typ not in _marked and _core.is_tree_node(typ)


def _check_node(tree):
    if type(tree) in _marked:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")


def flatten_one_level(tree):
    """(children, aux data) of the node at the root of `tree`; ValueError for a leaf."""
    _check_node(tree)
    return _core.flatten_one_level(tree)


def flatten_one_level_with_keys(tree):
    """(((key, child), ...), aux data) of the node at the root of `tree`; ValueError for a leaf."""
    _check_node(tree)
    return _core.flatten_one_level_with_keys(tree)
