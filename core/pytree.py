"""Pytrees: nested containers of leaves, flattened to a list of leaves plus a hashable treedef.

Owns the node registry (None, tuple, list, dict, namedtuple, OrderedDict, defaultdict, user types and
dataclasses), flattening with key paths, the tree utilities built on them, and `Partial` (a function with
arguments bound as leaves, what `vjp` returns).
"""

import collections
import dataclasses
import functools
from typing import Any, NamedTuple, TypeVar


class NodeKind(NamedTuple):
    """How to take a node type apart and put it back together."""

    type: type
    flatten: Any  # node -> (children, aux_data)
    unflatten: Any  # (aux_data, children) -> node
    flatten_with_keys: Any  # node -> (((key, child), ...), aux_data), or None


_registry: dict[type, NodeKind] = {}
_leaf_types: set[type] = set()  # types met as leaves: flattening skips the node checks for them
# The same for the user-facing tree functions (core/pytree_user.py), which also count as leaves the registered
# node types that users see as leaves (typed PRNG keys: one leaf to users, their key data to transformations).
_user_leaf_types: set[type] = set()


# --- key path entries ----------------------------------------------------------------------
KeyEntry = TypeVar("KeyEntry", bound=Any)  # one step of a key path: SequenceKey, DictKey, GetAttrKey, ...
KeyPath = tuple[KeyEntry, ...]


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple=False, separator="") -> str:
    """`keystr((DictKey('a'), SequenceKey(0)))` -> "['a'][0]"; with `simple=True, separator='/'` -> "a/0"."""
    if simple:
        return separator.join(_simple_key(k) for k in keys)
    return separator.join(str(k) for k in keys)


def _simple_key(key):
    for attribute in ("key", "idx", "name"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


# --- registration ----------------------------------------------------------------------------
def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Makes `nodetype` a pytree node: `flatten_func(x) -> (children, aux)`, `unflatten_func(aux, children)`."""
    if nodetype in _registry:
        raise ValueError(f"duplicate pytree registration for {nodetype}")
    _leaf_types.discard(nodetype)
    _user_leaf_types.discard(nodetype)
    _registry[nodetype] = NodeKind(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    def plain_flatten(node):
        keyed, aux = flatten_with_keys(node)
        return [child for _, child in keyed], aux

    register_pytree_node(nodetype, flatten_func or plain_flatten, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls):
    """Class decorator: the class defines `tree_flatten_with_keys(self) -> (((key, child), ...), aux)` and
    classmethod `tree_unflatten(aux, children)`; a `tree_flatten` method, if any, is the fast path."""
    flatten = (lambda node: node.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda node: node.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_static(cls):
    """Registers `cls` as a pytree node with no children: instances live in the treedef (so they must be
    hashable) and are static under `jit` without `static_argnums`."""
    register_pytree_with_keys(cls, lambda node: ((), node), lambda node, _: node)
    return cls


def is_tree_node(typ) -> bool:
    """True for registered node types (built-in or user) and namedtuple types; False for leaf types."""
    return typ in _registry or (isinstance(typ, type) and _is_namedtuple_type(typ))


def register_pytree_node_class(cls):
    """Class decorator: the class defines `tree_flatten(self)` and classmethod `tree_unflatten(aux, children)`."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Registers a dataclass; fields marked `field(metadata=dict(static=True))` are static metadata."""
    cls = nodetype
    if cls is None:
        return functools.partial(
            register_dataclass, data_fields=data_fields, meta_fields=meta_fields, drop_fields=drop_fields
        )
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"register_dataclass needs data_fields and meta_fields for non-dataclass {cls}")
        fields = [f for f in dataclasses.fields(cls) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(node):
        keyed = tuple((GetAttrKey(name), getattr(node, name)) for name in data_fields)
        return keyed, tuple(getattr(node, name) for name in meta_fields)

    def flatten(node):
        return [getattr(node, name) for name in data_fields], tuple(getattr(node, name) for name in meta_fields)

    def unflatten(aux, children):
        return cls(**dict(zip(meta_fields, aux)), **dict(zip(data_fields, children)))

    register_pytree_node(cls, flatten, unflatten, flatten_with_keys)
    dataclass_node_types.add(cls)  # (jax words structure errors about them differently)
    return cls


dataclass_node_types = set()


def _sequence_keys(node):
    return tuple((SequenceKey(i), child) for i, child in enumerate(node))


def sorted_keys(node):
    """A dict's keys in pytree order (sorted), or jax's ValueError when they cannot be compared."""
    try:
        return sorted(node)
    except TypeError as error:
        raise ValueError(f"Comparator raised exception while sorting pytree dictionary keys: {error}") from error


def _dict_flatten(node):
    keys = sorted_keys(node)
    return [node[k] for k in keys], tuple(keys)


def _dict_flatten_with_keys(node):
    keys = sorted_keys(node)
    return tuple((DictKey(k), node[k]) for k in keys), tuple(keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, children: tuple(children),
                     lambda t: (_sequence_keys(t), None))
register_pytree_node(list, lambda t: (t, None), lambda _, children: list(children),
                     lambda t: (_sequence_keys(t), None))
register_pytree_node(dict, _dict_flatten, lambda keys, children: dict(zip(keys, children)),
                     _dict_flatten_with_keys)
register_pytree_node(type(None), lambda _: ((), None), lambda _, __: None, lambda _: ((), None))
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, children: collections.OrderedDict(zip(keys, children)),
    lambda d: (tuple((DictKey(k), v) for k, v in d.items()), tuple(d)),
)
register_pytree_node(
    collections.defaultdict,
    lambda d: ([d[k] for k in sorted_keys(d)], (d.default_factory, tuple(sorted_keys(d)))),
    lambda aux, children: collections.defaultdict(aux[0], zip(aux[1], children)),
    lambda d: (tuple((DictKey(k), d[k]) for k in sorted_keys(d)), (d.default_factory, tuple(sorted_keys(d)))),
)


_TUPLE, _LIST, _DICT = _registry[tuple], _registry[list], _registry[dict]


def _is_namedtuple(value) -> bool:
    return _is_namedtuple_type(type(value))


def _is_namedtuple_type(node_type) -> bool:
    return issubclass(node_type, tuple) and hasattr(node_type, "_fields") and node_type is not tuple


def _node_kind(value):
    kind = _registry.get(type(value))
    if kind is None and _is_namedtuple(value):
        nt_type = type(value)
        kind = NodeKind(
            nt_type,
            lambda t: (tuple(t), None),
            lambda _, children, nt_type=nt_type: nt_type(*children),
            lambda t: (tuple((GetAttrKey(name), getattr(t, name)) for name in t._fields), None),
        )
    return kind


# --- treedefs --------------------------------------------------------------------------------
class PrefixMismatchError(ValueError):
    """A tree is not of a prefix's structure; `path` holds the keys down to the first node that differs."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path


class PyTreeDef:
    """The structure of a pytree: hashable, comparable, and able to rebuild a tree from leaves."""

    __slots__ = ("kind", "aux", "child_defs", "num_leaves", "_hash")

    def __init__(self, kind, aux, child_defs, num_leaves):
        self.kind = kind  # None for a leaf
        self.aux = aux
        self.child_defs = child_defs
        self.num_leaves = num_leaves
        self._hash = None

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.child_defs)

    def children(self):
        """The treedefs of this node's children (as JAX's `treedef.children()`)."""
        return list(self.child_defs)

    def node_data(self):
        """(node type, aux data) of this node, None for a leaf (as JAX's `treedef.node_data()`)."""
        return None if self.kind is None else (self.kind.type, self.aux)

    def unflatten(self, leaves):
        if self.kind is None:
            if not isinstance(leaves, (list, tuple)):
                leaves = list(leaves)  # (an error raised while producing the leaves is not a count mismatch)
            try:
                (leaf,) = leaves
            except ValueError:
                got = f", got {len(leaves)}" if hasattr(leaves, "__len__") else ""
                raise ValueError(f"tree structure {self} expects 1 leaf{got}") from None
            return leaf
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"tree structure {self} expects {self.num_leaves} leaves, got {len(leaves)}")
        return self._build(iter(leaves))

    def _build(self, leaves):
        if self.kind is None:
            return next(leaves)
        return self.kind.unflatten(self.aux, [c._build(leaves) for c in self.child_defs])

    def flatten_up_to(self, tree):
        """The subtrees of `tree` sitting where this treedef has leaves (tree must have this prefix)."""
        out = []
        self._flatten_up_to(tree, out, ())
        return out

    def _flatten_up_to(self, tree, out, path):
        if self.kind is None:
            out.append(tree)
            return
        kind = _node_kind(tree)
        if kind is None or kind.type is not self.kind.type:  # (the messages are jax's: code matches them)
            from .pytree_errors import type_mismatch

            raise PrefixMismatchError(type_mismatch(self.kind.type, tree), path)
        children, keys, aux = _children_and_keys(kind, tree)
        if len(children) != len(self.child_defs) or not _same_aux(aux, self.aux):
            from .pytree_errors import content_mismatch

            raise PrefixMismatchError(content_mismatch(self.kind.type, self.aux, len(self.child_defs), tree, aux,
                                                       len(children)), path)
        for child_def, child, key in zip(self.child_defs, children, keys):
            child_def._flatten_up_to(child, out, path + (key,))

    def _key(self):
        node_type = None if self.kind is None else self.kind.type
        return (node_type, _hashable(self.aux), self.child_defs)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __eq__(self, other):
        if self is other:
            return True
        return isinstance(other, PyTreeDef) and hash(self) == hash(other) and self._key() == other._key()

    def __repr__(self):
        return f"PyTreeDef({self._str()})"

    def _str(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(c._str() for c in self.child_defs)
        node_type = self.kind.type
        if node_type is tuple:
            return f"({inner}{',' if len(self.child_defs) == 1 else ''})"
        if node_type is list:
            return f"[{inner}]"
        if node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c._str()}" for k, c in zip(self.aux, self.child_defs)) + "}"
        if node_type is type(None):
            return "None"
        if _is_namedtuple_type(node_type) and node_type not in _registry:
            return f"CustomNode(namedtuple[{node_type.__name__}], [{inner}])"
        return f"CustomNode({node_type.__name__}[{self.aux}], [{inner}])"


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


def _same_aux(a, b):
    try:
        return bool(a == b)
    except Exception:  # aux data whose == is elementwise (arrays): compare what hashing compares
        return _hashable(a) == _hashable(b)


def _children_and_keys(kind, tree):
    if kind.flatten_with_keys is not None:
        keyed, aux = kind.flatten_with_keys(tree)
        return [c for _, c in keyed], [k for k, _ in keyed], aux
    children, aux = kind.flatten(tree)
    children = list(children)
    return children, [FlattenedIndexKey(i) for i in range(len(children))], aux


_LEAF = PyTreeDef(None, None, (), 1)


def _node(kind, aux, child_defs):
    return PyTreeDef(kind, aux, child_defs, sum([c.num_leaves for c in child_defs]))


def _kind_of(node_type, tree, leaf_types=_leaf_types):
    """The NodeKind of a node of `node_type`, or None for a leaf (leaf types are remembered in `leaf_types`)."""
    if node_type in leaf_types:
        return None
    kind = _registry.get(node_type)
    if kind is None:
        kind = _node_kind(tree)
        if kind is None:
            leaf_types.add(node_type)
    return kind


def _flatten_plain(tree, leaves, leaf_types=_leaf_types):
    """Flattening without is_leaf or paths, kept lean (`leaf_types`: `_user_leaf_types` for the users' view)."""
    node_type = type(tree)
    if node_type is tuple or node_type is list:
        child_defs = tuple([_flatten_plain(child, leaves, leaf_types) for child in tree])
        return _node(_TUPLE if node_type is tuple else _LIST, None, child_defs)
    if node_type is dict:
        keys = sorted_keys(tree)
        return _node(_DICT, tuple(keys), tuple([_flatten_plain(tree[k], leaves, leaf_types) for k in keys]))
    kind = _kind_of(node_type, tree, leaf_types)
    if kind is None:
        leaves.append(tree)
        return _LEAF
    children, aux = kind.flatten(tree)
    return _node(kind, aux, tuple([_flatten_plain(child, leaves, leaf_types) for child in children]))


def for_each_leaf(tree, visit):
    """Calls `visit(leaf)` on every leaf of `tree`, in leaf order, without building a PyTreeDef (block_until_ready
    walks a step's outputs so on every call)."""
    node_type = type(tree)
    if node_type is tuple or node_type is list:
        for child in tree:
            for_each_leaf(child, visit)
    elif node_type is dict:
        for key in sorted_keys(tree):
            for_each_leaf(tree[key], visit)
    else:
        kind = _kind_of(node_type, tree)
        if kind is None:
            visit(tree)
        else:
            for child in kind.flatten(tree)[0]:
                for_each_leaf(child, visit)


def flatten_with_signature(tree, leaves, leaf_signature):
    """Appends the leaves of `tree` to `leaves` and returns a hashable key of its structure with each
    leaf's `leaf_signature(leaf)` in place of the leaf: equal keys mean equal treedefs and equal leaf
    signatures. jit looks its cache up with this key, so that a call that hits the cache never
    builds a PyTreeDef."""
    node_type = type(tree)
    if node_type is tuple or node_type is list:
        key = [node_type]
        for child in tree:
            if type(child) in _leaf_types:  # leaves inline: no call per leaf
                leaves.append(child)
                key.append(leaf_signature(child))
            else:
                key.append(flatten_with_signature(child, leaves, leaf_signature))
        return tuple(key)
    if node_type is dict:
        keys = sorted_keys(tree)
        return (dict, tuple(keys), *[flatten_with_signature(tree[k], leaves, leaf_signature) for k in keys])
    kind = _kind_of(node_type, tree)
    if kind is None:
        leaves.append(tree)
        return leaf_signature(tree)
    children, aux = kind.flatten(tree)
    return (kind.type, _hashable(aux), *[flatten_with_signature(child, leaves, leaf_signature) for child in children])


def _flatten(tree, is_leaf, leaves, paths, path, leaf_takes_path=False):
    if is_leaf is not None and (is_leaf(path, tree) if leaf_takes_path else is_leaf(tree)):
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return _LEAF
    kind = _node_kind(tree)
    if kind is None:
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return _LEAF
    if paths is None:
        children, aux = kind.flatten(tree)
        keys = None
    else:
        children, keys, aux = _children_and_keys(kind, tree)
    child_defs = tuple(
        _flatten(child, is_leaf, leaves, paths, None if paths is None else path + (keys[i],), leaf_takes_path)
        for i, child in enumerate(children)
    )
    return _node(kind, aux, child_defs)


def tree_flatten(tree, is_leaf=None):
    """Returns (leaves, treedef). None is an empty node, not a leaf."""
    leaves = []
    if is_leaf is None:
        return leaves, _flatten_plain(tree, leaves)
    treedef = _flatten(tree, is_leaf, leaves, None, ())
    return leaves, treedef


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """Returns ([(key_path, leaf), ...], treedef). With `is_leaf_takes_path`, `is_leaf(key_path, node)`."""
    leaves, paths = [], []
    treedef = _flatten(tree, is_leaf, leaves, paths, (), is_leaf_takes_path)
    return list(zip(paths, leaves)), treedef


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_unflatten(treedef, leaves):
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef):
    """True for a single node with no children: a leaf, or an empty container such as None (as in JAX)."""
    return treedef.num_nodes == 1


def tree_map(f, tree, *rest, is_leaf=None):
    """Applies `f` leafwise; `rest` trees must have `tree`'s structure (or it as a prefix)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = _flatten_rest_up_to(treedef, tree, rest, is_leaf)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    keyed, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]  # (jax reports flatten_up_to's reason here)
    return treedef.unflatten([f(path, leaf, *xs) for (path, leaf), *xs in zip(keyed, *others)])


def _flatten_rest_up_to(treedef, tree, rest, is_leaf):
    """tree_map's other trees, each flattened up to `tree`'s structure; a mismatch is reported as jax does,
    with the key path of the first node that differs ("pytree structure error: ... at key path")."""
    others = []
    for other in rest:
        try:
            others.append(treedef.flatten_up_to(other))
        except PrefixMismatchError as error:
            from .pytree_errors import prefix_error

            message = prefix_error("tree_map tree", tree, other, is_leaf)
            if message is None:
                raise
            raise PrefixMismatchError(message, error.path) from None
    return others


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is None:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, is_leaf=None):
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turns a tree of shape outer[inner[...]] into inner[outer[...]]."""
    flat = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(flat[0])
    inner_flat = [inner_treedef.flatten_up_to(x) for x in flat]
    columns = zip(*inner_flat) if inner_flat else [[] for _ in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(outer_treedef.unflatten(column) for column in columns)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """`full_tree`'s structure with each leaf replaced by the leaf of `prefix_tree` above it."""
    return tree_structure(full_tree).unflatten(broadcast_prefix_leaves(prefix_tree, full_tree, is_leaf))


def broadcast_prefix_leaves(prefix_tree, full_tree, is_leaf=None):
    """For each leaf of `full_tree`, the leaf of `prefix_tree` above it (a ValueError when `prefix_tree` is not
    a prefix of `full_tree`). `is_leaf` marks the prefix's leaves (None among them, too, if it says so)."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    return [leaf for leaf, subtree in zip(prefix_leaves, subtrees) for _ in range(tree_structure(subtree).num_leaves)]


_NO_IDENTITY = object()


def tree_reduce_associative(operation, tree, *, identity=_NO_IDENTITY, is_leaf=None):
    """Reduces the leaves with an associative `operation` as a balanced tree of calls (depth log n);
    `identity` is returned for a tree without leaves."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_IDENTITY:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return _balanced_reduce(operation, leaves)


def _balanced_reduce(operation, leaves):
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    return operation(_balanced_reduce(operation, leaves[:half]), _balanced_reduce(operation, leaves[half:]))


def flatten_one_level(tree):
    """(children, aux data) of the node at the root of `tree`; ValueError for a leaf."""
    kind = _node_kind(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = kind.flatten(tree)
    return tuple(children), aux


def flatten_one_level_with_keys(tree):
    """(((key, child), ...), aux data) of the node at the root of `tree`; ValueError for a leaf."""
    kind = _node_kind(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, keys, aux = _children_and_keys(kind, tree)
    return tuple(zip(keys, children)), aux


def treedef_tuple(treedefs):
    """The treedef of a tuple whose children have the given treedefs."""
    return _node(_TUPLE, None, tuple(treedefs))


def treedef_children(treedef):
    return treedef.children()


def all_leaves(iterable, is_leaf=None):
    return all(tree_structure(x, is_leaf).kind is None for x in iterable)


# --- Partial ---------------------------------------------------------------------------------------------
class _OpaqueCallable:
    """A callable standing for a functools.partial inside a Partial, so that functools does not merge the two:
    the inner partial's arguments stay static (part of the treedef) and only the Partial's own are leaves.
    Compares and hashes as the callable it wraps."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __eq__(self, other):
        return self.fun == (other.fun if isinstance(other, _OpaqueCallable) else other)

    def __hash__(self):
        return hash(self.fun)


class Partial(functools.partial):
    """`jax.tree_util.Partial`: a functools.partial that is a pytree. Its bound arguments are the leaves and
    the function is static, so a Partial can be passed to and returned from jit-compiled functions (vjp's
    pullback is one)."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _OpaqueCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda partial: ((partial.args, partial.keywords), partial.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
