"""Pytrees against jax.tree_util: flattening, structures, key paths and key strings, tree_map and
friends, custom nodes (registered functions, classes, dataclasses), Partial, and mismatch errors."""

import collections
import dataclasses
import functools
import operator

import numpy as np
import pytest
from harness import jax
from hypothesis import given
from hypothesis import strategies as st

import numax
from numax import tree_util as ntu

jtu = jax.tree_util

Point = collections.namedtuple("Point", ["x", "y"])
Empty = collections.namedtuple("Empty", [])


class Box:
    """A custom node registered with plain functions (no keys): its paths use flat indices."""

    def __init__(self, contents, label):
        self.contents, self.label = contents, label

    def __eq__(self, other):
        return type(other) is Box and (self.contents, self.label) == (other.contents, other.label)


def _box_flatten(box):
    return (box.contents,), box.label


def _box_unflatten(label, children):
    return Box(children[0], label)


jtu.register_pytree_node(Box, _box_flatten, _box_unflatten)
ntu.register_pytree_node(Box, _box_flatten, _box_unflatten)


class Pair:
    """A custom node registered with keys."""

    def __init__(self, left, right):
        self.left, self.right = left, right

    def __eq__(self, other):
        return type(other) is Pair and (self.left, self.right) == (other.left, other.right)


def _pair_flatten_with_keys(pair):
    return ((jtu.GetAttrKey("left"), pair.left), (jtu.GetAttrKey("right"), pair.right)), None


def _pair_flatten_with_keys_numax(pair):
    return ((ntu.GetAttrKey("left"), pair.left), (ntu.GetAttrKey("right"), pair.right)), None


def _pair_unflatten(_, children):
    return Pair(*children)


jtu.register_pytree_with_keys(Pair, _pair_flatten_with_keys, _pair_unflatten)
ntu.register_pytree_with_keys(Pair, _pair_flatten_with_keys_numax, _pair_unflatten)


@ntu.register_pytree_node_class
@jtu.register_pytree_node_class
class Scaled:
    """A class registered by decorator: tree_flatten / tree_unflatten methods."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)

    def __eq__(self, other):
        return type(other) is Scaled and (self.value, self.scale) == (other.value, other.scale)


@dataclasses.dataclass
class Params:
    weight: object
    bias: object
    name: str = dataclasses.field(default="layer", metadata=dict(static=True))


jtu.register_dataclass(Params)
ntu.register_dataclass(Params)


@dataclasses.dataclass
class Explicit:
    a: object
    b: object
    tag: int = 0


jtu.register_dataclass(Explicit, data_fields=["b", "a"], meta_fields=["tag"])
ntu.register_dataclass(Explicit, data_fields=["b", "a"], meta_fields=["tag"])


def _defaultdict():
    d = collections.defaultdict(list)
    d["zeta"], d["alpha"] = 1, [2, 3]
    return d


TREES = {
    "leaf": 1.5,
    "array_leaf": np.arange(3),
    "none": None,
    "empty_tuple": (),
    "empty_list": [],
    "empty_dict": {},
    "tuple": (1, 2, 3),
    "one_tuple": (1,),
    "list": [1, "two", 3.0],
    "nested": [1, (2, [3, None]), {"k": (4,)}],
    "dict_unsorted": {"b": 1, "a": 2, "c": {"z": 3, "y": 4}},
    "dict_int_keys": {3: "c", 1: "a", 2: "b"},
    "none_leaves": [None, 1, (None,), {"a": None}],
    "namedtuple": Point(1, (2, 3)),
    "empty_namedtuple": Empty(),
    "ordered_dict": collections.OrderedDict([("b", 1), ("a", 2)]),
    "defaultdict": _defaultdict(),
    "box": Box([1, 2], "label"),
    "pair": Pair(1, {"x": 2}),
    "scaled": Scaled((1, 2), 3.0),
    "dataclass_static": Params(np.ones(2), 0.5, "dense"),
    "dataclass_explicit": Explicit(1, (2, 3), tag=7),
    "deep": {"a": [Point(1, Box(2, "b")), collections.OrderedDict(q=(3, [4]))], "b": Pair(Scaled(5, 1), None)},
}
TREE_IDS = list(TREES)


def same_leaves(left, right):
    assert len(left) == len(right)
    for a, b in zip(left, right):
        assert a is b


def equal_trees(a, b):
    leaves_a, def_a = ntu.tree_flatten(a)
    leaves_b, def_b = ntu.tree_flatten(b)
    return def_a == def_b and all(x is y or np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b))


@pytest.mark.parametrize("name", TREE_IDS)
def test_flatten_matches_jax(name):
    tree = TREES[name]
    leaves, treedef = ntu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    same_leaves(leaves, jax_leaves)
    same_leaves(ntu.tree_leaves(tree), jax_leaves)
    assert treedef.num_leaves == jax_treedef.num_leaves
    assert treedef.num_nodes == jax_treedef.num_nodes
    assert str(treedef) == str(jax_treedef)
    assert repr(treedef) == repr(jax_treedef)
    assert ntu.treedef_is_leaf(treedef) == jtu.treedef_is_leaf(jax_treedef)
    assert [str(c) for c in treedef.children()] == [str(c) for c in jax_treedef.children()]
    assert [str(c) for c in ntu.treedef_children(treedef)] == [str(c) for c in jtu.treedef_children(jax_treedef)]


@pytest.mark.parametrize("name", TREE_IDS)
def test_for_each_leaf_visits_jax_leaves_in_order(name):
    """core.pytree.for_each_leaf (block_until_ready's walk, no treedef built) visits what jax's flatten gives."""
    from numax.core import pytree

    visited = []
    pytree.for_each_leaf(TREES[name], visited.append)
    same_leaves(visited, jtu.tree_leaves(TREES[name]))


@pytest.mark.parametrize("name", TREE_IDS)
def test_unflatten_round_trip(name):
    tree = TREES[name]
    leaves, treedef = ntu.tree_flatten(tree)
    rebuilt = ntu.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree)
    assert equal_trees(rebuilt, tree)
    if not isinstance(tree, np.ndarray):
        assert rebuilt == tree
    replaced = treedef.unflatten(list(range(len(leaves))))
    assert equal_trees(replaced, jtu.tree_unflatten(jtu.tree_structure(tree), list(range(len(leaves)))))


@pytest.mark.parametrize("name", TREE_IDS)
def test_paths_and_keystr_match_jax(name):
    tree = TREES[name]
    with_path, treedef = ntu.tree_flatten_with_path(tree)
    jax_with_path, jax_treedef = jtu.tree_flatten_with_path(tree)
    assert [ntu.keystr(path) for path, _ in with_path] == [jtu.keystr(path) for path, _ in jax_with_path]
    assert [ntu.keystr(path, simple=True, separator="/") for path, _ in with_path] == [
        jtu.keystr(path, simple=True, separator="/") for path, _ in jax_with_path]
    same_leaves([leaf for _, leaf in with_path], [leaf for _, leaf in jax_with_path])
    assert str(treedef) == str(jax_treedef)
    assert [ntu.keystr(p) for p, _ in ntu.tree_leaves_with_path(tree)] == [
        jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree)]


def test_key_entries_match_jax():
    assert repr(ntu.DictKey("a")) == repr(jtu.DictKey("a"))
    assert repr(ntu.SequenceKey(2)) == repr(jtu.SequenceKey(2))
    assert repr(ntu.GetAttrKey("x")) == repr(jtu.GetAttrKey("x"))
    assert repr(ntu.FlattenedIndexKey(1)) == repr(jtu.FlattenedIndexKey(1))
    path = (ntu.DictKey("a"), ntu.SequenceKey(0), ntu.GetAttrKey("x"), ntu.FlattenedIndexKey(3), ntu.DictKey(2))
    jax_path = (jtu.DictKey("a"), jtu.SequenceKey(0), jtu.GetAttrKey("x"), jtu.FlattenedIndexKey(3), jtu.DictKey(2))
    assert ntu.keystr(path) == jtu.keystr(jax_path) == "['a'][0].x[<flat index 3>][2]"
    assert ntu.keystr(path, simple=True, separator=".") == jtu.keystr(jax_path, simple=True, separator=".")
    assert ntu.keystr(()) == jtu.keystr(()) == ""
    assert ntu.DictKey("a") == ntu.DictKey("a") and hash(ntu.SequenceKey(1)) == hash(ntu.SequenceKey(1))


def test_flatten_with_path_and_is_leaf():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    is_leaf = lambda x: isinstance(x, tuple)  # noqa: E731
    keyed, treedef = ntu.tree_flatten_with_path(tree, is_leaf=is_leaf)
    jax_keyed, jax_treedef = jtu.tree_flatten_with_path(tree, is_leaf=is_leaf)
    assert [(ntu.keystr(p), v) for p, v in keyed] == [(jtu.keystr(p), v) for p, v in jax_keyed]
    assert str(treedef) == str(jax_treedef)


# --- structures ----------------------------------------------------------------------------------------------
def test_structure_equality_and_hash_agree_with_jax():
    trees = [TREES[name] for name in TREE_IDS] + [
        {"a": 1, "b": 2}, {"b": 5, "a": 6}, {"a": 1, "c": 2}, (1, 2), [1, 2], Point(1, 2), (None, 1), (1, None),
        collections.OrderedDict([("a", 1), ("b", 2)]), collections.OrderedDict([("b", 1), ("a", 2)]),
        Box(1, "label"), Box(1, "other"), Scaled(1, 3.0), Scaled(1, 4.0), Params(1, 2), Params(1, 2, "other"),
    ]
    for a in trees:
        for b in trees:
            mine = ntu.tree_structure(a) == ntu.tree_structure(b)
            theirs = jtu.tree_structure(a) == jtu.tree_structure(b)
            assert mine == theirs, (a, b)
            if mine:
                assert hash(ntu.tree_structure(a)) == hash(ntu.tree_structure(b))
    assert ntu.tree_structure({"a": 1}) != "not a treedef"
    assert len({ntu.tree_structure((1, 2)), ntu.tree_structure((3, 4)), ntu.tree_structure([1, 2])}) == 2


def test_structure_with_unhashable_aux_is_still_comparable():
    first, second = Box(1, ["unhashable", "label"]), Box(2, ["unhashable", "label"])
    assert ntu.tree_structure(first) == ntu.tree_structure(second)
    assert hash(ntu.tree_structure(first)) == hash(ntu.tree_structure(second))
    assert ntu.tree_structure(first) != ntu.tree_structure(Box(1, ["other"]))


def test_node_data_matches_jax():
    for name in ("dict_unsorted", "tuple", "ordered_dict", "box"):
        node_type, aux = ntu.tree_structure(TREES[name]).node_data()
        jax_type, jax_aux = jtu.tree_structure(TREES[name]).node_data()
        assert node_type is jax_type
        assert tuple(aux) == tuple(jax_aux) if aux is not None and jax_aux is not None else aux == jax_aux


def test_unflatten_wrong_leaf_count():
    treedef = ntu.tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match="expects 3 leaves, got 2"):
        treedef.unflatten([1, 2])
    with pytest.raises(ValueError, match="expects 3 leaves, got 4"):
        ntu.tree_unflatten(treedef, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="expects 1 leaf, got 2"):
        ntu.tree_structure(5).unflatten([1, 2])
    with pytest.raises(ValueError, match="expects 1 leaf, got 0"):
        ntu.tree_structure(5).unflatten([])
    assert ntu.tree_structure(5).unflatten(iter([7])) == 7


def test_none_is_an_empty_node_unless_is_leaf():
    assert ntu.tree_leaves([None, 1, None]) == jtu.tree_leaves([None, 1, None]) == [1]
    is_none = lambda x: x is None  # noqa: E731
    assert ntu.tree_leaves([None, 1], is_leaf=is_none) == jtu.tree_leaves([None, 1], is_leaf=is_none) == [None, 1]
    assert str(ntu.tree_structure([None, 1], is_leaf=is_none)) == str(jtu.tree_structure([None, 1], is_leaf=is_none))


def test_all_leaves():
    assert ntu.all_leaves([1, 2.0, np.ones(2)]) == jtu.all_leaves([1, 2.0, np.ones(2)])
    assert ntu.all_leaves([1, (2,)]) == jtu.all_leaves([1, (2,)])
    assert ntu.all_leaves([None]) == jtu.all_leaves([None])


# --- tree_map and friends -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TREE_IDS)
def test_tree_map_matches_jax(name):
    tree = TREES[name]
    describe = lambda x: f"<{type(x).__name__}>"  # noqa: E731
    assert equal_trees(ntu.tree_map(describe, tree), jtu.tree_map(describe, tree))
    double = lambda x, y: (x, y)  # noqa: E731
    assert equal_trees(ntu.tree_map(double, tree, tree), jtu.tree_map(double, tree, tree))


def test_tree_map_several_trees_and_prefix():
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    c = {"x": 100, "y": (200, 300)}
    assert ntu.tree_map(lambda *xs: sum(xs), a, b, c) == jtu.tree_map(lambda *xs: sum(xs), a, b, c)
    # The first tree is a prefix of the others: whole subtrees are passed where it has leaves.
    prefix, full = [1, 2], [(3, 4), {"k": 5}]
    assert ntu.tree_map(lambda x, y: (x, y), prefix, full) == jtu.tree_map(lambda x, y: (x, y), prefix, full)


def test_tree_map_none_in_other_trees():
    first, second = [1, 2], [None, (3,)]
    assert ntu.tree_map(lambda x, y: (x, y), first, second) == jtu.tree_map(lambda x, y: (x, y), first, second)
    assert ntu.tree_map(lambda x: x, [None, 1]) == [None, 1]


def test_tree_map_is_leaf():
    tree = [(1, 2), [3, (4, 5)], {"a": (6,)}]
    is_leaf = lambda x: isinstance(x, tuple)  # noqa: E731
    size = lambda x: len(x) if isinstance(x, tuple) else -x  # noqa: E731
    assert ntu.tree_map(size, tree, is_leaf=is_leaf) == jtu.tree_map(size, tree, is_leaf=is_leaf)
    assert ntu.tree_map(size, tree, is_leaf=is_leaf) == [2, [-3, 2], {"a": 1}]
    other = [0, [0, 0], {"a": 0}]
    assert ntu.tree_map(lambda x, y: (size(x), y), tree, other, is_leaf=is_leaf) == jtu.tree_map(
        lambda x, y: (size(x), y), tree, other, is_leaf=is_leaf)


@pytest.mark.parametrize("first,second", [
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ({"a": 1}, {"b": 1}),
    ({"a": 1}, {"a": 1, "b": 2}),
    ([None, 1], [3, 2]),
    (Point(1, 2), (1, 2)),
    (Box(1, "a"), Box(1, "b")),
    ([1, (2, 3)], [1, 2]),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=1, a=2)),
])
def test_tree_map_structure_mismatch(first, second):
    with pytest.raises(ValueError):
        jtu.tree_map(lambda x, y: x, first, second)
    with pytest.raises(ValueError, match="pytree structure error"):  # jax's wording
        ntu.tree_map(lambda x, y: x, first, second)


def test_tree_map_mismatch_names_the_path():
    with pytest.raises(ValueError, match=r"\['b'\]\[1\]"):
        ntu.tree_map(lambda x, y: x, {"a": 1, "b": [1, (2, 3)]}, {"a": 1, "b": [1, 2]})


def test_tree_map_with_path_matches_jax():
    tree = TREES["deep"]
    mine = ntu.tree_map_with_path(lambda p, x: (ntu.keystr(p), x), tree)
    theirs = jtu.tree_map_with_path(lambda p, x: (jtu.keystr(p), x), tree)
    assert equal_trees(mine, theirs)
    two = ntu.tree_map_with_path(lambda p, x, y: (ntu.keystr(p), x + y), {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
    assert two == {"a": ("['a']", 11), "b": [("['b'][0]", 22)]}


def test_tree_transpose_matches_jax():
    tree = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    outer, inner = ntu.tree_structure([0, 0, 0]), ntu.tree_structure({"a": 0, "b": 0})
    jax_outer, jax_inner = jtu.tree_structure([0, 0, 0]), jtu.tree_structure({"a": 0, "b": 0})
    expected = jtu.tree_transpose(jax_outer, jax_inner, tree)
    assert ntu.tree_transpose(outer, inner, tree) == expected == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert ntu.tree_transpose(outer, None, tree) == expected
    pairs = (Point(1, 2), Point(3, 4))
    assert ntu.tree_transpose(ntu.tree_structure((0, 0)), ntu.tree_structure(Point(0, 0)), pairs) == Point((1, 3),
                                                                                                             (2, 4))
    with pytest.raises(ValueError):
        ntu.tree_transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3}, {"a": 5, "b": 6}])


def test_tree_reduce_and_all():
    tree = {"a": [1, 2], "b": (3, None)}
    assert ntu.tree_reduce(operator.add, tree) == jtu.tree_reduce(operator.add, tree) == 6
    assert ntu.tree_reduce(operator.add, tree, 10) == jtu.tree_reduce(operator.add, tree, 10) == 16
    assert ntu.tree_reduce(operator.add, tree, 0) == 6  # a falsy initializer is still an initializer
    assert ntu.tree_reduce(operator.add, [], 0) == 0
    assert ntu.tree_all([True, (1, [3])]) and not ntu.tree_all([True, (0,)])
    assert ntu.tree_all([]) == jtu.tree_all([])


def test_tree_namespace_matches_jax_tree():
    tree = {"b": [1, 2], "a": (3, Point(4, 5))}
    assert numax.tree.leaves(tree) == jax.tree.leaves(tree)
    assert str(numax.tree.structure(tree)) == str(jax.tree.structure(tree))
    assert numax.tree.map(lambda x: x * 2, tree) == jax.tree.map(lambda x: x * 2, tree)
    leaves, treedef = numax.tree.flatten(tree)
    assert numax.tree.unflatten(treedef, leaves) == tree
    assert numax.tree.reduce(operator.add, tree) == jax.tree.reduce(operator.add, tree)
    assert numax.tree.all(tree) == jax.tree.all(tree)
    assert [ntu.keystr(p) for p, _ in numax.tree.leaves_with_path(tree)] == [
        jtu.keystr(p) for p, _ in jax.tree.leaves_with_path(tree)]
    assert [ntu.keystr(p) for p, _ in numax.tree.flatten_with_path(tree)[0]] == [
        jtu.keystr(p) for p, _ in jax.tree.flatten_with_path(tree)[0]]
    mapped = numax.tree.map_with_path(lambda p, x: ntu.keystr(p), tree)
    assert mapped == jax.tree.map_with_path(lambda p, x: jtu.keystr(p), tree)
    outer, inner = numax.tree.structure([0, 0]), numax.tree.structure((0, 0))
    assert numax.tree.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4]) == jax.tree.transpose(
        jax.tree.structure([0, 0]), jax.tree.structure((0, 0)), [(1, 2), (3, 4)])
    assert numax.tree_map(lambda x: -x, [1]) == [-1] and numax.tree_leaves((1, 2)) == [1, 2]


# --- registration -----------------------------------------------------------------------------------------
def test_duplicate_registration_is_an_error():
    with pytest.raises(ValueError, match="duplicate"):
        ntu.register_pytree_node(Box, _box_flatten, _box_unflatten)


def test_register_dataclass_static_fields():
    params = Params(np.ones(2), np.zeros(3), "dense")
    leaves, treedef = ntu.tree_flatten(params)
    assert len(leaves) == 2 and leaves[0] is params.weight
    assert ntu.tree_structure(Params(1, 2, "dense")) == treedef
    assert ntu.tree_structure(Params(1, 2, "sparse")) != treedef  # static fields are part of the structure
    rebuilt = ntu.tree_map(lambda x: x * 2, params)
    assert type(rebuilt) is Params and rebuilt.name == "dense"
    np.testing.assert_array_equal(rebuilt.bias, params.bias * 2)
    assert [ntu.keystr(p) for p, _ in ntu.tree_flatten_with_path(params)[0]] == [".weight", ".bias"]


def test_register_dataclass_as_decorator():
    @ntu.register_dataclass
    @dataclasses.dataclass
    class Decorated:
        x: object
        y: object = dataclasses.field(default=1, metadata=dict(static=True))

    assert ntu.tree_leaves(Decorated(5, 6)) == [5]
    assert ntu.tree_map(lambda v: v + 1, Decorated(5, 6)) == Decorated(6, 6)


def test_register_dataclass_requires_fields_for_plain_classes():
    class Plain:
        pass

    with pytest.raises(TypeError, match="data_fields and meta_fields"):
        ntu.register_dataclass(Plain)


def test_partial_is_a_pytree():
    partial = ntu.Partial(max, 1, key=None)
    jax_partial = jtu.Partial(max, 1, key=None)
    assert [ntu.keystr(p) for p, _ in ntu.tree_flatten_with_path({"f": partial})[0]] == [
        jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path({"f": jax_partial})[0]]
    assert ntu.tree_leaves(partial) == jtu.tree_leaves(jax_partial) == [1]
    assert str(ntu.tree_structure(partial)) == str(jtu.tree_structure(jax_partial))
    doubled = ntu.tree_map(lambda x: x * 2, ntu.Partial(operator.add, 3))
    assert isinstance(doubled, ntu.Partial) and isinstance(doubled, functools.partial)
    assert doubled(4) == 10
    assert ntu.tree_structure(ntu.Partial(max, 1)) == ntu.tree_structure(ntu.Partial(max, 2))
    assert ntu.tree_structure(ntu.Partial(max, 1)) != ntu.tree_structure(ntu.Partial(min, 1))


def test_partial_through_jit():
    import numax.numpy as xnp

    @numax.jit
    def apply(function, x):
        return function(x)

    out = apply(ntu.Partial(xnp.add, xnp.ones(3)), xnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3.0) + 1)


# --- random trees ----------------------------------------------------------------------------------------
_leaf_values = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=2), st.none())
_keys = st.one_of(st.text(max_size=3), st.integers(0, 9).map(lambda i: f"k{i}"))
random_trees = st.recursive(
    _leaf_values,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_keys, children, max_size=3),
        st.tuples(children, children).map(lambda pair: Point(*pair)),
        st.dictionaries(_keys, children, max_size=3).map(lambda d: collections.OrderedDict(d)),
        st.tuples(children, st.sampled_from(["p", "q"])).map(lambda pair: Box(*pair)),
    ),
    max_leaves=12,
)


@given(random_trees)
def test_random_trees_match_jax(tree):
    leaves, treedef = ntu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    same_leaves(leaves, jax_leaves)
    assert str(treedef) == str(jax_treedef)
    assert (treedef.num_leaves, treedef.num_nodes) == (jax_treedef.num_leaves, jax_treedef.num_nodes)
    rebuilt = ntu.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree) and ntu.tree_structure(rebuilt) == treedef
    assert [ntu.keystr(p) for p, _ in ntu.tree_flatten_with_path(tree)[0]] == [
        jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(tree)[0]]
    numbered = ntu.tree_unflatten(treedef, range(len(leaves)))
    assert ntu.tree_leaves(numbered) == list(range(len(leaves)))
    assert ntu.tree_structure(numbered) == treedef and hash(ntu.tree_structure(numbered)) == hash(treedef)


@given(random_trees, random_trees)
def test_random_structure_equality_matches_jax(first, second):
    assert (ntu.tree_structure(first) == ntu.tree_structure(second)) == (
        jtu.tree_structure(first) == jtu.tree_structure(second))


# --- one-level flattening, broadcasting, associative reduction, treedef_tuple, static nodes -------------
_one_level_nodes = {
    "dict": {"b": 1, "a": [2, 3]},
    "tuple": (1, (2,)),
    "list": [None, 4],
    "none": None,
    "namedtuple": Point(1, [2]),
    "ordered": collections.OrderedDict([("z", 1), ("y", 2)]),
    "box": Box([1, 2], "lbl"),
}


@pytest.mark.parametrize("name", sorted(_one_level_nodes))
def test_flatten_one_level_matches_jax(name):
    node = _one_level_nodes[name]
    children, aux = ntu.flatten_one_level(node)
    jax_children, jax_aux = jtu.flatten_one_level(node)
    assert list(children) == list(jax_children)
    if name != "namedtuple":  # jax keeps the namedtuple type as aux data; numax keeps it in the node kind
        assert aux == jax_aux
    keyed, keyed_aux = ntu.flatten_one_level_with_keys(node)
    # jax 0.10's flatten_one_level_with_keys repeats a namedtuple's first key ('.x', '.x'): the keys of the
    # children as full key paths are the oracle.
    jax_keyed, _ = jtu.tree_flatten_with_path(node, is_leaf=lambda child: child is not node)
    assert [ntu.keystr((k,)) for k, _ in keyed] == [jtu.keystr(path) for path, _ in jax_keyed]
    assert [c for _, c in keyed] == list(jax_children) and keyed_aux == aux


@pytest.mark.parametrize("leaf", [1, "s", np.ones(2), object()])
def test_flatten_one_level_of_a_leaf_is_an_error(leaf):
    for flatten in (ntu.flatten_one_level, ntu.flatten_one_level_with_keys, jtu.flatten_one_level):
        with pytest.raises(ValueError, match="can't tree-flatten type"):
            flatten(leaf)


@pytest.mark.parametrize("node_type", [int, float, str, type(None), tuple, list, dict, Point, Empty,
                                       collections.OrderedDict, collections.defaultdict, Box, np.ndarray])
def test_is_tree_node_matches_jax(node_type):
    assert ntu.is_tree_node(node_type) == jtu.is_tree_node(node_type)


@pytest.mark.parametrize("prefix, full", [
    ([1, {"a": 2}], [(3, 4), {"a": [5, 6]}]),
    (0, {"x": [1, 2], "y": None}),
    ({"a": None, "b": 1}, {"a": None, "b": (1, 2)}),
    ((1, 2), (Point(0, 0), [])),
])
def test_tree_broadcast_matches_jax(prefix, full):
    ours, theirs = ntu.tree_broadcast(prefix, full), jtu.tree_broadcast(prefix, full)
    assert ours == theirs and numax.tree.broadcast(prefix, full) == jax.tree.broadcast(prefix, full)


def test_tree_broadcast_is_leaf_and_errors():
    prefix, full = [(1, 2), 3], [[4, 5], [6]]
    is_pair = lambda x: isinstance(x, tuple)  # noqa: E731
    assert ntu.tree_broadcast(prefix, full, is_leaf=is_pair) == jtu.tree_broadcast(prefix, full, is_leaf=is_pair)
    for broadcast in (ntu.tree_broadcast, jtu.tree_broadcast):
        with pytest.raises(ValueError):
            broadcast([1, 2], [1, 2, 3])
        with pytest.raises(ValueError):
            broadcast({"a": 1}, {"b": 1})


@pytest.mark.parametrize("tree", [[1, 2, 3, 4, 5], {"a": 1, "b": (2, 3)}, [7], (np.ones(2), [np.ones(2) * 3])])
def test_tree_reduce_associative_matches_jax(tree):
    calls = []

    def add(a, b):
        calls.append(None)
        return a + b

    ours = ntu.tree_reduce_associative(add, tree)
    theirs = jtu.tree_reduce_associative(operator.add, tree)
    np.testing.assert_array_equal(ours, theirs)
    assert len(calls) == len(jtu.tree_leaves(tree)) - 1
    # A balanced tree of calls: concatenating strings shows the grouping, the same as jax's.
    labels = [str(i) for i in range(6)]
    group = lambda a, b: f"({a}{b})"  # noqa: E731
    assert ntu.tree_reduce_associative(group, labels) == jtu.tree_reduce_associative(group, labels)
    assert numax.tree.reduce_associative(group, labels) == jax.tree.reduce_associative(group, labels)


def test_tree_reduce_associative_empty():
    assert ntu.tree_reduce_associative(operator.add, [], identity=0) == 0
    assert ntu.tree_reduce_associative(operator.add, {"a": None}, identity=5) == 5
    for reduce in (ntu.tree_reduce_associative, jtu.tree_reduce_associative):
        with pytest.raises(TypeError, match="Must specify identity for parallel reduction of empty sequence"):
            reduce(operator.add, [])


def test_treedef_tuple_matches_jax():
    parts = [(1, 2), {"a": 3}, 4, None, [Point(5, 6)]]
    ours = ntu.treedef_tuple([ntu.tree_structure(p) for p in parts])
    theirs = jtu.treedef_tuple([jtu.tree_structure(p) for p in parts])
    assert str(ours) == str(theirs)
    assert ours == ntu.tree_structure(tuple(parts)) and ours.num_leaves == theirs.num_leaves
    assert ntu.treedef_children(ours) == [ntu.tree_structure(p) for p in parts]
    assert str(ntu.treedef_tuple([])) == str(jtu.treedef_tuple([]))
    assert ntu.tree_unflatten(ours, range(6)) == ((0, 1), {"a": 2}, 3, None, [Point(4, 5)])


def test_register_pytree_with_keys_class_matches_jax():
    def define(register, key_type):
        @register
        class Pair:
            def __init__(self, first, second):
                self.first, self.second = first, second

            def tree_flatten_with_keys(self):
                return ((key_type("first"), self.first), (key_type("second"), self.second)), "tag"

            @classmethod
            def tree_unflatten(cls, aux, children):
                assert aux == "tag"
                return cls(*children)

        return Pair

    OurPair, TheirPair = define(ntu.register_pytree_with_keys_class, ntu.GetAttrKey), define(
        jtu.register_pytree_with_keys_class, jtu.GetAttrKey)
    ours, theirs = OurPair(1, [2, 3]), TheirPair(1, [2, 3])
    assert ntu.tree_leaves(ours) == jtu.tree_leaves(theirs) == [1, 2, 3]
    assert [ntu.keystr(p) for p, _ in ntu.tree_flatten_with_path(ours)[0]] == [
        jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(theirs)[0]]
    rebuilt = ntu.tree_map(lambda x: x * 10, ours)
    assert type(rebuilt) is OurPair and (rebuilt.first, rebuilt.second) == (10, [20, 30])
    assert ntu.is_tree_node(OurPair)


def test_register_static_makes_values_static_under_jit():
    @ntu.register_static
    class Mode(str):
        pass

    assert ntu.tree_leaves([Mode("add"), 1]) == [1]
    assert ntu.tree_map(lambda x: x + 1, {"m": Mode("sub"), "v": 1}) == {"m": "sub", "v": 2}
    assert ntu.flatten_one_level_with_keys(Mode("add")) == ((), "add")
    traces = []

    @numax.jit
    def apply(x, y, mode):
        traces.append(mode)
        return x + y if mode == "add" else x - y

    assert float(apply(1.0, 2.0, Mode("add"))) == 3.0
    assert float(apply(1.0, 2.0, Mode("sub"))) == -1.0
    assert float(apply(5.0, 2.0, Mode("add"))) == 7.0
    assert traces == ["add", "sub"]  # one trace per static value, reused on the third call


def test_key_aliases_and_static_field():
    assert ntu.KeyPath == tuple[ntu.KeyEntry, ...]
    assert hasattr(jtu, "KeyEntry") and hasattr(jtu, "KeyPath")

    @ntu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: float
        op: str = numax.tree.static(default="add")

    assert ntu.tree_leaves(Op(1.0)) == [1.0]
    assert str(ntu.tree_structure(Op(1.0, "mul"))) == "PyTreeDef(CustomNode(Op[('mul',)], [*]))"
    assert dataclasses.fields(Op)[1].metadata["static"] is True
