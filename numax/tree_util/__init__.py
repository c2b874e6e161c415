"""`numax.tree_util` (and the short `numax.tree` namespace): pytree utilities, as in jax.tree_util."""

import dataclasses as _dataclasses
import types as _types

from numax.core.pytree import (  # noqa: F401
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeDef,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)
from numax.core.pytree_user import (  # noqa: F401  (typed PRNG keys are leaves to users: see pytree_user)
    all_leaves,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    tree_all,
    tree_broadcast,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_transpose,
)


def _static_field(**kwargs):
    """A `dataclasses.field` marked static (`metadata={'static': True}`), for `register_dataclass`."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return _dataclasses.field(metadata=metadata, **kwargs)


tree_namespace = _types.SimpleNamespace(
    map=tree_map, leaves=tree_leaves, structure=tree_structure, flatten=tree_flatten, unflatten=tree_unflatten,
    transpose=tree_transpose, reduce=tree_reduce, all=tree_all, map_with_path=tree_map_with_path,
    flatten_with_path=tree_flatten_with_path, leaves_with_path=tree_leaves_with_path,
    broadcast=tree_broadcast, reduce_associative=tree_reduce_associative, static=_static_field,
)
