"""Serialization of pytree node types beyond tuples, lists, dicts and None in an `Exported`'s `in_tree` and
`out_tree`: jax.export's `register_pytree_node_serialization` and `register_namedtuple_serialization`.

A registered node is written as its `serialized_name` and its auxiliary data as bytes (`serialize_auxdata`);
reading looks the name up and rebuilds the node from the deserialized auxiliary data and its children
(`from_children`, by default the unflatten function the type was registered with in `numax.tree_util`).
`collections.OrderedDict` with string keys is registered here, as jax registers it. A whole treedef is written as
a JSON-able description (`describe_tree`, read back by `tree_of`), which both serialization formats use.
"""

import base64
import collections
import json

from ..core import pytree as tree
from ..transforms.jit import ShapeDtypeStruct

_by_type = {}  # node type -> (serialized name, serialize_auxdata)
_by_name = {}  # serialized name -> (node type, deserialize_auxdata, from_children)


def register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata, deserialize_auxdata,
                                       from_children=None):
    """Lets exports whose arguments or results hold `nodetype` nodes be serialized and deserialized; returns
    `nodetype` (usable as a class decorator). `nodetype` must already be a registered pytree node unless
    `from_children(aux_data, children)` is given."""
    if nodetype in _by_type:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. Previous registration was "
                         f"with serialized_name `{_by_type[nodetype][0]}`.")
    if serialized_name in _by_name:
        raise ValueError(f"Duplicate serialization registration for serialized_name `{serialized_name}`. Previous "
                         f"registration was for type `{_by_name[serialized_name][0]}`.")
    if from_children is None:
        if nodetype not in tree._registry:
            raise ValueError(f"If `from_children` is not present, you must call first "
                             f"`numax.tree_util.register_pytree_node` for `{nodetype}`")
        from_children = tree._registry[nodetype].unflatten
    _by_type[nodetype] = (serialized_name, serialize_auxdata)
    _by_name[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name):
    """`register_pytree_node_serialization` for a `collections.namedtuple` type: its field names are saved, and
    on deserialization the registered type must have the same fields."""
    if not tree._is_namedtuple_type(nodetype):
        raise ValueError("Use `numax.export.register_pytree_node_serialization` for types other than "
                         "`collections.namedtuple`.")

    def from_children(field_names, children):
        return nodetype(**dict(zip(field_names, children)))

    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name,
        serialize_auxdata=lambda _: json.dumps(nodetype._fields).encode(),
        deserialize_auxdata=lambda data: json.loads(data.decode()), from_children=from_children)


def serialized_node(node_type, aux_data):
    """(serialized name, auxiliary data bytes) of a registered node type."""
    if node_type not in _by_type:
        raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type `{node_type}`. Use "
                         "`export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`.")
    name, serialize_auxdata = _by_type[node_type]
    data = serialize_auxdata(aux_data)
    if not isinstance(data, bytes | bytearray):
        raise ValueError(f"The custom serialization function for `{node_type}` must return a `bytes` object. It "
                         f"returned a {type(data)}.")
    return name, bytes(data)


def deserialized_node(serialized_name, aux_data, children):
    """The node a registered serialized name and its auxiliary data bytes stand for, over `children`."""
    if serialized_name not in _by_name:
        raise ValueError(f"Cannot deserialize a PyTreeDef containing an unregistered type `{serialized_name}`. Use "
                         "`export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`.")
    _, deserialize_auxdata, from_children = _by_name[serialized_name]
    return from_children(deserialize_auxdata(aux_data), children)


def describe_tree(treedef):
    """The JSON-able description of `treedef` that numax's format stores (see `_format.py`) and `tree_of` reads."""
    node = treedef.node_data()
    if node is None:
        return "leaf"
    node_type, aux = node
    children = [describe_tree(child) for child in treedef.children()]
    if node_type is type(None):
        return None
    if node_type in (tuple, list):
        return {node_type.__name__: children}
    if node_type is dict:
        if not all(isinstance(key, str) for key in aux):
            raise TypeError("Serialization is supported only for dictionaries with string keys; the exported "
                            f"function's arguments or results hold a dict with keys {list(aux)}")
        return {"dict": [list(aux), children]}
    name, data = serialized_node(node_type, aux)
    return {"custom": [name, base64.b64encode(data).decode(), children]}


def tree_of(description, avals):
    """The treedef described, rebuilt over ShapeDtypeStructs of `avals` (its leaves' avals, in order) as jax does,
    so that a custom node whose auxiliary data depends on its children's shapes rebuilds."""
    leaves = iter([ShapeDtypeStruct(a.shape, a.dtype) for a in avals])
    return tree.tree_structure(_example_tree(description, leaves))


def _example_tree(description, leaves):
    """A tree of the described structure over `leaves` (an iterator)."""
    if description == "leaf":
        return next(leaves)
    if description is None:
        return None
    (kind, content), = description.items()
    if kind == "dict":
        keys, children = content
        return dict(zip(keys, [_example_tree(child, leaves) for child in children]))
    if kind == "custom":
        name, data, children = content
        return deserialized_node(name, base64.b64decode(data), [_example_tree(child, leaves) for child in children])
    return {"tuple": tuple, "list": list}[kind](_example_tree(child, leaves) for child in content)


def _ordered_dict_keys(keys):
    if not all(isinstance(key, str) for key in keys):
        raise NotImplementedError(f"Serialization of collections.OrderedDict is supported only when the keys are "
                                  f"strings. Found keys: {keys}.")
    return json.dumps(list(keys)).encode()


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict", serialize_auxdata=_ordered_dict_keys,
    deserialize_auxdata=lambda data: tuple(json.loads(data.decode())))
