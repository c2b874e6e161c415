"""`jax._src.tree_util`: the pytree node registry that libraries consult directly (flax.nnx asks whether a type is a
registered node with `type(x) in _registry`). `_registry` is a read-only view of numax's own table
(numax.core.pytree), keyed by node type, as users see it: types registered through `numax.tree_util` (or
`jax.tree_util` under the switch) are in it, and typed PRNG key arrays, leaves to users, are not
(core/pytree_user.py)."""

from collections.abc import Mapping

from numax.core import pytree as _pytree
from numax.core.pytree_user import is_user_leaf_type


class _UserRegistry(Mapping):
    """Node type -> its registration, for the node types users see as nodes."""

    def __getitem__(self, node_type):
        if is_user_leaf_type(node_type):
            raise KeyError(node_type)
        return _pytree._registry[node_type]

    def __contains__(self, node_type):
        return node_type in _pytree._registry and not is_user_leaf_type(node_type)

    def __iter__(self):
        return (node_type for node_type in _pytree._registry if not is_user_leaf_type(node_type))

    def __len__(self):
        return sum(1 for _ in self)


_registry = _UserRegistry()
