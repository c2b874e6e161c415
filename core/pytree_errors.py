"""The messages of pytree structure mismatches, in jax's words, since code written for jax (and its libraries'
tests) matches them: `flatten_up_to`'s one-line reasons ("Dict key mismatch; ...", "Custom node type mismatch:
...", "Tuple arity mismatch: ..."), and `tree_map`'s "pytree structure error: ... at key path" report, which
walks both trees to the first node that differs. Only called once a mismatch was found."""

import difflib
import textwrap

from . import pytree


def _is_dataclass_node(node_type):
    return node_type in pytree.dataclass_node_types


def type_mismatch(expected_type, value):
    """`flatten_up_to`'s reason when `value` is not a node of `expected_type`."""
    if expected_type in (tuple, list, dict):
        return f"Expected {expected_type.__name__}, got {value!r}."
    if expected_type is type(None):
        return (f"Expected None, got {value!r}.\n\nNone is a pytree node with no children, not a prefix of other "
                "values; to map over trees holding None where the other holds values, treat None as a leaf:\n"
                "  tree_map(lambda x, y: None if x is None else f(x, y), a, b, is_leaf=lambda x: x is None)")
    if expected_type not in pytree._registry and pytree._is_namedtuple_type(expected_type):
        if pytree._is_namedtuple(value):
            return f"Named tuple type mismatch: expected type: {expected_type!r}, tuple: {value!r}."
        return f"Expected named tuple, got {value!r}."
    what = "Custom dataclass node" if _is_dataclass_node(expected_type) else "Custom node"
    return f"{what} type mismatch: expected type: {expected_type!r}, value: {value!r}."


def content_mismatch(expected_type, expected_aux, expected_arity, value, aux, arity):
    """`flatten_up_to`'s reason when `value`, a node of `expected_type`, has other children or aux data."""
    if expected_type in (tuple, list):
        return f"{expected_type.__name__.capitalize()} arity mismatch: {arity} != {expected_arity}; " \
               f"{expected_type.__name__}: {value!r}."
    if expected_type is dict:
        return f"Dict key mismatch; expected keys: {list(expected_aux)}; present keys: {list(aux)}."
    dataclass = _is_dataclass_node(expected_type)
    if not pytree._same_aux(aux, expected_aux):
        what = "custom dataclass node" if dataclass else "custom node"
        return f"Mismatch {what} data: {expected_aux!r} != {aux!r}; value: {value!r}."
    what = "Custom dataclass" if dataclass else "Custom type"
    return f"{what} arity mismatch: {arity} != {expected_arity}; value: {value!r}."


def prefix_error(name, prefix_tree, full_tree, is_leaf=None, path=()):
    """jax's report of where `full_tree` stops having `prefix_tree` as a prefix, for the tree called `name`
    ('tree_map tree'); None when it has it."""
    if pytree._node_kind(prefix_tree) is None or (is_leaf is not None and is_leaf(prefix_tree)):
        return None  # a leaf is a prefix of anything
    where = f"    {name}{pytree.keystr(path)}\n"
    if type(prefix_tree) is not type(full_tree):
        return ("pytree structure error: different types at key path\n" + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix_tree)}\n"
                + "but at the same key path the full pytree has a subtree of different type\n"
                + f"    {type(full_tree)}.")
    prefix_keyed, prefix_aux = pytree.flatten_one_level_with_keys(prefix_tree)
    full_keyed, full_aux = pytree.flatten_one_level_with_keys(full_tree)
    if isinstance(prefix_tree, (list, tuple)) and len(prefix_tree) != len(full_tree):
        kind = type(prefix_tree).__name__
        return (f"pytree structure error: different lengths of {kind} at key path\n" + where
                + f"At that key path, the prefix pytree {name} has a subtree of type {kind} of length "
                + f"{len(prefix_tree)}, but the full pytree has a subtree of the same type but of length "
                + f"{len(full_tree)}.")
    if len(prefix_keyed) != len(full_keyed):
        prefix_keys, full_keys = [k for k, _ in prefix_keyed], [k for k, _ in full_keyed]
        text = ("pytree structure error: different numbers of pytree children at key path\n" + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix_tree)}\n"
                + f"with {len(prefix_keys)} child keys\n    {_key_names(prefix_keys)}\n"
                + "but at the same key path the full pytree has a subtree of the same type but with "
                + f"{len(full_keys)} child keys\n    {_key_names(full_keys)}\n")
        try:
            difference = set(prefix_keys) ^ set(full_keys)
        except TypeError:  # unhashable keys
            return text
        return text + f"so the symmetric difference on key sets is\n    {_key_names(difference)}"
    if not pytree._same_aux(prefix_aux, full_aux):
        diff = "\n".join(difflib.ndiff(str(prefix_aux).splitlines(), str(full_aux).splitlines()))
        return ("pytree structure error: different pytree metadata at key path\n" + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix_tree)}\n"
                + f"with metadata\n    {prefix_aux}\n"
                + "but at the same key path the full pytree has a subtree of the same type but with metadata\n"
                + f"    {full_aux}\nso the diff in the metadata at these pytree nodes is\n"
                + textwrap.indent(diff, "    "))
    for (key, prefix_child), (_, full_child) in zip(prefix_keyed, full_keyed):
        found = prefix_error(name, prefix_child, full_child, is_leaf, (*path, key))
        if found is not None:
            return found
    return None


def _key_names(keys):
    return " ".join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in keys)
