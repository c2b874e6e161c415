"""The public names numax gained to match jax's surface (tests/test_public_surface.py lists what is still
missing), each checked against jax: `numax.tree` as a module, `numax.monitoring` and numax's compile events,
`numax.errors`' classes, jax's wording of pytree mismatch errors, tree_util's keyword names, *_like of shape and
dtype objects, `typeof(x).sharding`, the orthogonal initializers, `lax.conv_general_dilated_local`,
`numpy.save`/`savez`, jax.numpy's scalar type aliases and `experimental.layout`."""

import collections
import dataclasses
import importlib
import inspect
import io
import sys

import jax
import jax.ad_checkpoint
import jax.experimental.layout as jlayout
import jax.numpy as jnp
import jax.tree_util as jtu
import ml_dtypes
import numpy as np
import pytest

import numax
import numax.ad_checkpoint
import numax.experimental.layout as nlayout
import numax.numpy as xnp
import numax.tree_util as ntu
from numax import lax


# --- numax.tree ---------------------------------------------------------------------------------------------
def test_tree_is_a_module_of_tree_util_functions():
    import numax.tree

    assert sys.modules["numax.tree"] is numax.tree and type(numax.tree) is type(numax)
    for name in [n for n in dir(jax.tree) if not n.startswith("_")]:
        if name != "static":
            assert getattr(numax.tree, name) is getattr(ntu, f"tree_{name}"), name
    from numax.tree import map as tree_map

    assert tree_map(lambda x: x + 1, {"a": [1, 2]}) == jax.tree.map(lambda x: x + 1, {"a": [1, 2]})
    assert numax.tree.static(default=3).metadata == jax.tree.static(default=3).metadata


# --- numax.monitoring ---------------------------------------------------------------------------------------
def _record_all(monitoring):
    """What listeners of each kind receive from the record_* functions, as a list of calls."""
    seen = []
    listeners = [
        (monitoring.register_event_listener, monitoring.unregister_event_listener,
         lambda event, **kw: seen.append(("event", event, kw))),
        (monitoring.register_event_duration_secs_listener, monitoring.unregister_event_duration_listener,
         lambda event, secs, **kw: seen.append(("duration", event, secs, kw))),
        (monitoring.register_event_time_span_listener, monitoring.unregister_event_time_span_listener,
         lambda event, start, end, **kw: seen.append(("span", event, start, end, kw))),
        (monitoring.register_scalar_listener, monitoring.unregister_scalar_listener,
         lambda event, value, **kw: seen.append(("scalar", event, value, kw))),
    ]
    for register, _, callback in listeners:
        register(callback)
    try:
        monitoring.record_event("/test/event", phase="a")
        monitoring.record_event_duration_secs("/test/duration", 0.5, fun_name="f")
        monitoring.record_event_time_span("/test/span", 1.0, 2.5)
        monitoring.record_scalar("/test/scalar", 7, unit="n")
    finally:
        for _, unregister, callback in listeners:
            unregister(callback)
    monitoring.record_event("/test/after")  # nobody listens any more
    with pytest.raises(AssertionError):
        listeners[0][1](listeners[0][2])  # unregistering twice
    return seen


def test_monitoring_listeners_receive_what_jax_gives():
    import jax.monitoring

    assert _record_all(numax.monitoring) == _record_all(jax.monitoring)


def test_monitoring_sees_numax_backend_compiles():
    durations, events = [], []

    def on_duration(event, secs, **kwargs):
        durations.append((event, secs, kwargs))

    numax.monitoring.register_event_duration_secs_listener(on_duration)
    numax.monitoring.register_event_listener(lambda event, **kw: events.append(event))
    try:
        # a program no other test compiles (jit shares executables between equal programs): one backend compile
        numax.jit(lambda x: x * 3.375 - 1.125)(np.arange(7, dtype=np.float32))
    finally:
        numax.monitoring.clear_event_listeners()
    compiles = [(secs, kw) for event, secs, kw in durations if event == "/jax/core/compile/backend_compile_duration"]
    assert len(compiles) == 1 and compiles[0][0] > 0 and compiles[0][1]["fun_name"] == "<lambda>"
    assert numax.monitoring.get_event_duration_listeners() == []
    numax.jit(lambda x: x * 4)(np.arange(3, dtype=np.float32))
    assert len(durations) == 1  # cleared: no listener sees the next compile


def test_monitoring_sees_the_persistent_cache_as_jax_reports_it(tmp_path):
    """jax's events around its persistent cache: a request and a miss on the first compile, a request and a hit
    once the in-memory caches are cleared (the backend-compile duration is recorded both times)."""
    settings = {"jax_compilation_cache_dir": str(tmp_path), "jax_persistent_cache_min_compile_time_secs": 0,
                "jax_persistent_cache_min_entry_size_bytes": 0}
    previous = {name: numax.config.read(name) for name in settings}
    events, compiles = [], []
    numax.monitoring.register_event_listener(lambda event, **kw: events.append(event.rsplit("/", 1)[1]))
    numax.monitoring.register_event_duration_secs_listener(lambda event, secs, **kw: compiles.append(event))
    try:
        for name, value in settings.items():
            numax.config.update(name, value)
        for _ in range(2):
            numax.clear_caches()
            numax.jit(lambda x: xnp.tanh(x) * 3 - x)(np.ones(3, np.float32))
    finally:
        numax.monitoring.clear_event_listeners()
        for name, value in previous.items():
            numax.config.update(name, value)
        numax.clear_caches()
    assert events == ["compile_requests_use_cache", "cache_misses", "compile_requests_use_cache", "cache_hits"]
    assert compiles == ["/jax/core/compile/backend_compile_duration"] * 2


# --- numax.errors -------------------------------------------------------------------------------------------
ERROR_NAMES = ["ConcretizationTypeError", "InconclusiveDimensionOperation", "JAXIndexError", "JAXTypeError",
               "JaxRuntimeError", "NonConcreteBooleanIndexError", "TracerArrayConversionError",
               "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
BUILTIN_BASES = [TypeError, IndexError, ValueError, RuntimeError, LookupError]


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_error_classes_have_jax_builtin_bases(name):
    ours, theirs = getattr(numax.errors, name), getattr(jax.errors, name)
    assert [issubclass(ours, base) for base in BUILTIN_BASES] == [issubclass(theirs, base) for base in BUILTIN_BASES]
    for base in ("JAXTypeError", "JAXIndexError"):
        assert issubclass(ours, getattr(numax.errors, base)) == issubclass(theirs, getattr(jax.errors, base))


def test_jax_runtime_error_is_what_a_failing_program_raises():
    def fail(x):
        raise ValueError("boom")

    for lib, errors, x in ((numax, numax.errors, xnp.ones(2)), (jax, jax.errors, jnp.ones(2))):
        run = lib.jit(lambda x, lib=lib: lib.pure_callback(fail, lib.ShapeDtypeStruct((2,), np.float32), x))
        with pytest.raises(errors.JaxRuntimeError, match="boom"):
            run(x).block_until_ready()


def test_boolean_mask_under_jit_raises_jax_index_error():
    for lib, np_, errors in ((numax, xnp, numax.errors), (jax, jnp, jax.errors)):
        with pytest.raises(errors.JAXIndexError):
            lib.jit(lambda x, np_=np_: x[x > 0])(np_.ones(3))


# --- pytree mismatch errors in jax's words ------------------------------------------------------------------
_P = collections.namedtuple("_P", "a b")
_Q = collections.namedtuple("_Q", "a b")


class _Node:
    """A custom node: children `xs`, aux data `meta`."""

    def __init__(self, *xs, meta="m"):
        self.xs, self.meta = xs, meta

    def __repr__(self):
        return f"_Node{self.xs}"


@dataclasses.dataclass
class _Data:
    x: int
    m: str = dataclasses.field(metadata=dict(static=True), default="a")


for _tu in (jtu, ntu):
    _tu.register_pytree_node(_Node, lambda n: (n.xs, n.meta), lambda meta, xs: _Node(*xs, meta=meta))
    _tu.register_dataclass(_Data)

_OD, _DD = collections.OrderedDict, collections.defaultdict
MISMATCHES = [
    ((1, 2), [1, 2]), ([1, 2], (1, 2)), ({"a": 1}, [1]), (None, 1), ((1,), None), (_P(1, 2), (1, 2)),
    (_P(1, 2), _Q(1, 2)), (_P(1, 2), 5), (_Node(1), (1,)), (_Node(1), _Node(1, 2)), (_Node(1), _Node(1, meta="n")),
    (_Data(1), (1, 2)), (_Data(1, "a"), _Data(1, "b")), (_OD(a=1, b=2), _OD(b=1, a=2)), (_OD(a=1), {"a": 1}),
    ({"a": 1}, _OD(a=1)), (_DD(int, a=1), {"a": 1}), (_DD(int, a=1), _DD(float, a=1)),
    ({"a": 1, "b": 2}, {"a": 1, "c": 2}), ({"a": 1}, {"a": 1, "b": 2}), ((1,), (1, 2)), ([1], [1, 2]),
    ({"a": [1, 2]}, {"a": [1]}), ({"a": (1, {"b": 2})}, {"a": (1, {"c": 2})}), ([1, (2, 3)], [1, 2]),
    ([None, 1], [3, 2]),
]


def _message(call):
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("prefix, full", MISMATCHES)
def test_structure_mismatch_messages_are_jax(prefix, full):
    ours = _message(lambda: ntu.tree_structure(prefix).flatten_up_to(full))
    theirs = _message(lambda: jtu.tree_structure(prefix).flatten_up_to(full))
    if theirs.startswith("Expected None"):  # jax adds a paragraph about its history; numax a hint of its own
        ours, theirs = ours.split("\n")[0], theirs.split("\n")[0]
    assert ours == theirs
    assert _message(lambda: ntu.tree_map(lambda *x: 0, prefix, full)) == _message(
        lambda: jtu.tree_map(lambda *x: 0, prefix, full))


# --- tree_util keyword names --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["is_tree_node", "keystr", "register_dataclass", "register_pytree_with_keys",
                                  "register_pytree_node", "tree_flatten_with_path", "tree_leaves_with_path",
                                  "tree_map_with_path", "tree_map", "tree_flatten", "tree_structure", "tree_reduce"])
def test_tree_util_keyword_names_are_jax(name):
    def keywords(function):
        return [p.name for p in inspect.signature(function).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    assert keywords(getattr(ntu, name)) == keywords(getattr(jtu, name))


def test_is_leaf_takes_path():
    tree = {"a": [1, (2, 3)], "b": {"c": 4}}

    def is_leaf(path, node):
        return ntu.keystr(path) in ("['a'][1]", "['b']")

    def jax_is_leaf(path, node):
        return jtu.keystr(path) in ("['a'][1]", "['b']")

    ours = ntu.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path=True)
    theirs = jtu.tree_leaves_with_path(tree, jax_is_leaf, is_leaf_takes_path=True)
    assert [(ntu.keystr(p), x) for p, x in ours] == [(jtu.keystr(p), x) for p, x in theirs]
    assert [x for _, x in ours] == [1, (2, 3), {"c": 4}]
    assert str(ntu.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path=True)[1]) == str(
        jtu.tree_flatten_with_path(tree, jax_is_leaf, is_leaf_takes_path=True)[1])
    mapped = ntu.tree_map_with_path(lambda p, x: ntu.keystr(p), tree, is_leaf=is_leaf, is_leaf_takes_path=True)
    assert mapped == jtu.tree_map_with_path(lambda p, x: jtu.keystr(p), tree, is_leaf=jax_is_leaf,
                                            is_leaf_takes_path=True)
    assert ntu.register_dataclass(nodetype=None) is not None  # jax's keyword, as a decorator factory
    assert ntu.keystr(keys=(ntu.DictKey("a"),)) == jtu.keystr(keys=(jtu.DictKey("a"),))
    assert ntu.is_tree_node(typ=dict) and jtu.is_tree_node(typ=dict)


# --- *_like of shape and dtype objects ---------------------------------------------------------------------
class _Duck:
    shape, dtype = (2,), np.dtype(np.float16)


@pytest.mark.parametrize("name, args", [("zeros_like", ()), ("ones_like", ()), ("full_like", (3,)),
                                        ("empty_like", ())])
def test_like_functions_take_shape_dtype_objects(name, args):
    from numax._src import core as ncore

    for ours, theirs in ((numax.ShapeDtypeStruct((2, 3), np.int32), jax.ShapeDtypeStruct((2, 3), np.int32)),
                         (ncore.ShapedArray((4,), np.int8), jax.core.ShapedArray((4,), np.int8)),
                         (_Duck(), _Duck())):
        got, want = getattr(xnp, name)(ours, *args), getattr(jnp, name)(theirs, *args)
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
        if name != "empty_like":
            np.testing.assert_array_equal(got, want)
    got = getattr(xnp, name)(numax.ShapeDtypeStruct((2,), np.float32), *args, dtype=np.int32, shape=(3,))
    want = getattr(jnp, name)(jax.ShapeDtypeStruct((2,), np.float32), *args, dtype=np.int32, shape=(3,))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


# --- typeof(x).sharding -------------------------------------------------------------------------------------
def test_typeof_sharding_matches_jax():
    x, jx = np.ones((2, 3), np.float32), jnp.ones((2, 3))
    assert repr(numax.typeof(xnp.asarray(x)).sharding) == repr(jax.typeof(jx).sharding)
    seen = []
    numax.jit(lambda v: seen.append(repr(numax.typeof(v).sharding)) or v)(x)
    jax.jit(lambda v: seen.append(repr(jax.typeof(v).sharding)) or v)(jx)
    assert seen[0] == seen[1]


def test_make_single_device_sharding():
    device = numax.devices()[0]
    sharding = numax.sharding.make_single_device_sharding(device)
    jax_sharding = jax.sharding.make_single_device_sharding(jax.devices()[0])
    assert sharding == numax.sharding.SingleDeviceSharding(device) and sharding.device_set == {device}
    assert sharding.memory_kind == jax_sharding.memory_kind
    assert numax.device_put(np.ones(2, np.float32), sharding).sharding == sharding


# --- ad_checkpoint policy answers ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer", ["Saveable", "Recompute", "Offloadable"])
def test_checkpoint_policy_answers_save_what_jax_saves(answer, capsys):
    """What a policy answering Saveable / Recompute / Offloadable keeps for the backward pass, and the gradient;
    numax keeps an offloadable value on the device (jax moves it to host memory), the same values."""
    x = np.linspace(0, 1, 4).astype(np.float32)
    residuals, grads = [], []
    for lib, module in ((numax, numax.ad_checkpoint), (jax, jax.ad_checkpoint)):
        decision = module.Offloadable("device", "pinned_host") if answer == "Offloadable" else getattr(module, answer)
        f = lib.checkpoint(lambda v, lib=lib: lib.numpy.sum(lib.numpy.sin(lib.numpy.sin(v))),
                           policy=lambda *args, decision=decision, **params: decision)
        module.print_saved_residuals(f, x)
        residuals.append([line.split(" output of ")[-1].split(" ")[0] if " output of " in line else "argument"
                          for line in capsys.readouterr().out.splitlines()])
        grads.append(lib.grad(f)(x))
    assert residuals[0] == residuals[1] or answer == "Offloadable"
    assert len(residuals[0]) == len(residuals[1])
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


# --- orthogonal initializers --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, shape, kwargs", [
    ("orthogonal", (3, 5), {}), ("orthogonal", (6, 2), {}), ("orthogonal", (2, 3, 4), {"column_axis": 0}),
    ("orthogonal", (4, 4), {"scale": 2.0}), ("orthogonal", (0, 3), {}), ("delta_orthogonal", (3, 3, 4), {}),
    ("delta_orthogonal", (3, 3, 2, 5), {}), ("delta_orthogonal", (2, 3, 3, 3, 4), {}),
])
def test_orthogonal_initializers_match_jax(name, shape, kwargs):
    got = getattr(numax.nn.initializers, name)(**kwargs)(numax.random.key(3), shape, np.float32)
    want = getattr(jax.nn.initializers, name)(**kwargs)(jax.random.key(3), shape, jnp.float32)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, shape", [("orthogonal", (3,)), ("delta_orthogonal", (3, 3)),
                                         ("delta_orthogonal", (3, 3, 5, 4))])
def test_orthogonal_initializers_refuse_shapes_as_jax(name, shape):
    with pytest.raises(ValueError) as theirs:
        getattr(jax.nn.initializers, name)()(jax.random.key(0), shape)
    with pytest.raises(ValueError, match=str(theirs.value)[:20]):
        getattr(numax.nn.initializers, name)()(numax.random.key(0), shape)


def test_initializer_protocol():
    assert isinstance(numax.nn.initializers.orthogonal(), numax.nn.initializers.Initializer)
    assert isinstance(numax.nn.initializers.zeros, numax.nn.initializers.Initializer)
    assert not isinstance(3, numax.nn.initializers.Initializer)


# --- lax.conv_general_dilated_local -------------------------------------------------------------------------
LOCAL_CONVS = [  # lhs shape, filter shape, strides, padding, dimension numbers, rhs shape
    ((2, 3, 5, 6), (2, 3), (1, 1), "VALID", None, (4, 18, 4, 4)),
    ((2, 5, 6, 3), (2, 2), (2, 1), "SAME", ("NHWC", "HWIO", "NHWC"), (3, 6, 12, 5)),
    ((2, 5, 6, 3), (2, 2), (1, 1), [(1, 0), (0, 1)], ("NHWC", "OIHW", "NCHW"), (4, 12, 5, 6)),
    ((2, 5, 6, 3), (2, 2), (1, 1), "VALID", ("NHWC", "IWOH", "CWNH"), (12, 5, 4, 4)),
    ((2, 3, 7), (3,), (1,), "VALID", ("NCH", "OIH", "NHC"), (4, 9, 5)),
]


@pytest.mark.parametrize("lhs_shape, filter_shape, strides, padding, numbers, rhs_shape", LOCAL_CONVS)
def test_conv_general_dilated_local_matches_jax(lhs_shape, filter_shape, strides, padding, numbers, rhs_shape):
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal(lhs_shape, np.float32), rng.standard_normal(rhs_shape, np.float32)
    got = lax.conv_general_dilated_local(lhs, rhs, strides, padding, filter_shape, dimension_numbers=numbers)
    want = jax.lax.conv_general_dilated_local(lhs, rhs, strides, padding, filter_shape, dimension_numbers=numbers)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_general_dilated_local_gradient_and_precision():
    rng = np.random.default_rng(1)
    lhs, rhs = rng.standard_normal((1, 2, 4, 4), np.float32), rng.standard_normal((3, 8, 3, 3), np.float32)

    def loss(lib, lhs, rhs, precision):
        return (lib.lax.conv_general_dilated_local(lhs, rhs, (1, 1), "VALID", (2, 2), precision=precision) ** 2).sum()

    highest = (lax.Precision.HIGHEST, lax.Precision.HIGHEST)
    got = numax.grad(lambda a, b: loss(numax, a, b, highest), (0, 1))(lhs, rhs)
    jax_highest = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)
    want = jax.grad(lambda a, b: loss(jax, a, b, jax_highest), (0, 1))(lhs, rhs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="Unsupported precision"):
        lax.conv_general_dilated_local(lhs, rhs, (1, 1), "VALID", (2, 2), precision=(lax.Precision.HIGHEST,) * 3)


@pytest.mark.parametrize("name, args", [
    ("conv_shape_tuple", ((2, 3, 9, 8), (4, 3, 3, 2), (1, 2), "SAME")),
    ("conv_shape_tuple", ((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), [(1, 0), (2, 2)])),
    ("conv_shape_tuple", ((4, 3, 9), (4, 3, 3), (1,), "VALID", 2)),
    ("conv_general_shape_tuple", ((2, 9, 8, 3), (3, 2, 3, 4), (1, 1), "VALID", ("NHWC", "HWIO", "NHWC"))),
    ("conv_general_shape_tuple", ((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), "SAME", ("NHWC", "HWIO", "NCHW"))),
    ("conv_transpose_shape_tuple", ((2, 5, 6, 3), (3, 3, 3, 4), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))),
    ("conv_transpose_shape_tuple", ((2, 5, 6, 3), (3, 2, 3, 4), (2, 1), "VALID", ("NHWC", "HWIO", "NHWC"))),
    ("conv_transpose_shape_tuple", ((2, 5, 6, 3), (3, 2, 3, 4), (2, 1), [(1, 1), (0, 2)], ("NHWC", "HWIO", "NCHW"))),
])
def test_conv_shape_tuples_match_jax(name, args):
    assert getattr(lax, name)(*args) == tuple(int(d) for d in getattr(jax.lax, name)(*args))


def test_conv_shape_tuple_refuses_as_jax():
    for lib in (lax, jax.lax):
        with pytest.raises(TypeError, match="Wrong number of explicit pads"):
            lib.conv_shape_tuple((1, 1, 4, 4), (1, 1, 2, 2), (1, 1), [(0, 0)])
        with pytest.raises(ValueError, match="Negative padding is larger"):
            lib.conv_shape_tuple((1, 1, 4, 4), (1, 1, 2, 2), (1, 1), [(-3, -3), (0, 0)])


# --- scipy.linalg special matrices ---------------------------------------------------------------------------
_RNG = np.random.default_rng(0)
_C, _R = _RNG.standard_normal(4).astype(np.float32), _RNG.standard_normal(3).astype(np.float32)
_CB = _RNG.standard_normal((2, 4)).astype(np.float32)
_CC = (_C + 1j * _C[::-1]).astype(np.complex64)
SPECIAL_MATRICES = [
    ("toeplitz", (_C,)), ("toeplitz", (_C, _R)), ("toeplitz", (_CB, _R)), ("toeplitz", (_CC,)),
    ("toeplitz", (np.arange(3),)), ("toeplitz", (np.zeros(0, np.float32), _R)), ("hankel", (_C,)),
    ("hankel", (_C, _R)), ("hankel", (_CB, _R)), ("hankel", (np.arange(3), np.arange(5.0))), ("circulant", (_C,)),
    ("circulant", (_CB,)), ("circulant", (3.0,)), ("hilbert", (5,)),
    ("block_diag", (np.ones((2, 2), np.float32), np.arange(3), 5)), ("block_diag", ()),
    ("block_diag", (np.ones((2, 0)), np.ones((1, 3), np.int32))), ("companion", (_C,)), ("companion", (_CB,)),
    ("companion", (np.array([1, 2, 3]),)), ("leslie", (_C, _R)), ("leslie", (_CB, _R)),
    ("leslie", (np.array([1, 2, 3]), np.array([1, 2]))), ("fiedler", (_C,)), ("fiedler", (_CB,)),
    ("fiedler", (np.array([1, 4, 2]),)), ("hadamard", (4,)), ("hadamard", (2, np.float32)), ("hadamard", (1,)),
    ("helmert", (5,)), ("helmert", (4, True)), ("helmert", (1,)), ("helmert", (1, True)),
]


@pytest.mark.parametrize("name, args", SPECIAL_MATRICES)
def test_special_matrices_match_jax_and_scipy(name, args):
    import jax.scipy.linalg
    import scipy.linalg

    got, want = getattr(numax.scipy.linalg, name)(*args), getattr(jax.scipy.linalg, name)(*args)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # (jax's complex Toeplitz rounds; numax copies)
    # scipy's own values (no batch dimensions there; computed in float64)
    if all(isinstance(a, (np.ndarray, int, float)) and (name == "block_diag" or np.ndim(a) <= 1) for a in args):
        np.testing.assert_allclose(got, getattr(scipy.linalg, name)(*args), rtol=1e-6, atol=1e-7)


def test_special_matrices_refuse_as_jax():
    import jax.scipy.linalg

    for lib in (numax.scipy.linalg, jax.scipy.linalg):
        with pytest.raises(ValueError, match="must have at most 2 dimensions"):
            lib.block_diag(np.ones((1, 1, 1)))
        with pytest.raises(ValueError, match="hankel: c must be at least 1-dimensional"):
            lib.hankel(3.0)
        with pytest.raises(TypeError, match="toeplitz requires ndarray or scalar arguments"):
            lib.toeplitz([1, 2])
        with pytest.raises(ValueError, match="must be at least 2"):
            lib.companion(np.ones(1))
        with pytest.raises(ValueError, match="Incorrect lengths for f and s"):
            lib.leslie(np.ones(3), np.ones(3))
        with pytest.raises(ValueError, match="positive power of 2"):
            lib.hadamard(6)
        with pytest.raises(ValueError, match="positive integer"):
            lib.helmert(0)


# --- numax.numpy: save, savez, ComplexWarning, scalar type aliases ------------------------------------------
def test_save_and_savez_round_trip():
    buffer = io.BytesIO()
    xnp.save(buffer, xnp.arange(4.0))
    buffer.seek(0)
    loaded = xnp.load(buffer)
    assert isinstance(loaded, numax.Array)
    np.testing.assert_array_equal(loaded, np.arange(4.0, dtype=np.float32))
    buffer = io.BytesIO()
    xnp.savez(buffer, a=xnp.ones(2, xnp.int32), b=xnp.zeros(3))
    buffer.seek(0)
    archive = np.load(buffer)
    np.testing.assert_array_equal(archive["a"], np.ones(2, np.int32))
    assert archive["b"].dtype == np.float32
    assert (xnp.save, xnp.savez, xnp.ComplexWarning) == (jnp.save, jnp.savez, jnp.ComplexWarning)


def test_array_repr_str_and_process_indices():
    values = np.arange(4, dtype=np.int32).reshape(2, 2)
    assert xnp.array_str(xnp.asarray(values)) == jnp.array_str(jnp.asarray(values)) == np.array_str(values)
    # numpy's array_repr, as jax.numpy's: it names the array's class (numax's Array, jax's ArrayImpl)
    assert xnp.array_repr(xnp.asarray(values)) == "A" + np.array_repr(values)[1:]
    assert jnp.array_repr(jnp.asarray(values)).startswith("ArrayImpl([[0, 1],")
    assert numax.process_indices() == jax.process_indices() == [0]


def test_print_environment_info_reports_what_jax_does(capsys):
    ours, theirs = numax.print_environment_info(True).splitlines(), jax.print_environment_info(True).splitlines()
    assert ours[0].startswith("numax:  ") and ours[0].endswith(f"(jax API {jax.__version__})")
    # the same lines after the first (jax's device line ends in a stray quote)
    assert ours[1:7] == [line.rstrip('"') for line in theirs[1:7]]
    assert numax.print_environment_info() is None and capsys.readouterr().out.splitlines() == ours


@pytest.mark.parametrize("name", ["float_", "int_", "complex_"])
def test_scalar_type_aliases_are_jax(name):
    ours, theirs = getattr(xnp, name), getattr(jnp, name)
    assert np.dtype(ours) == np.dtype(theirs)
    with pytest.warns(UserWarning, match="not available"):  # 64 bits, truncated without x64, as in jax
        got = ours(2)
    with pytest.warns(UserWarning, match="not available"):
        want = theirs(2)
    assert got.dtype == want.dtype


def test_dtypes_bfloat16_is_the_scalar_type():
    assert numax.dtypes.bfloat16 is jax.dtypes.bfloat16 is ml_dtypes.bfloat16
    assert xnp.zeros(2, numax.dtypes.bfloat16).dtype == np.dtype(ml_dtypes.bfloat16)


# --- experimental.layout ------------------------------------------------------------------------------------
def test_layout_and_format_values_match_jax():
    for lib in (nlayout, jlayout):
        assert lib.Layout((0, 1)) == lib.Layout((0, 1)) != lib.Layout((1, 0))
        assert hash(lib.Layout((1, 0), ((8, 128),))) == hash(lib.Layout((1, 0), ((8, 128),)))
    assert repr(nlayout.Layout((1, 0), ((8, 128),))) == repr(jlayout.Layout((1, 0), ((8, 128),)))
    assert repr(nlayout.Layout((0, 1)).update(tiling=((2,),))) == repr(jlayout.Layout((0, 1)).update(tiling=((2,),)))
    assert repr(nlayout.Format(nlayout.Layout.AUTO)) == repr(jlayout.Format(jlayout.Layout.AUTO))
    assert nlayout.Format() == nlayout.Format(None, None)
    for lib in (nlayout, jlayout):
        with pytest.raises(ValueError, match="Sharding has to be concrete"):
            lib.Format(lib.Layout((0,)))
        with pytest.raises(TypeError, match="Invalid value received for the layout argument"):
            lib.Format("rows")
        with pytest.raises(ValueError, match="rank of the value should match"):
            lib.with_layout_constraint(np.ones((2, 3), np.float32), lib.Layout((0,)))


def test_with_layout_constraint_default_layout_is_identity():
    x = {"a": xnp.ones((2, 3)), "b": xnp.arange(4)}
    out = nlayout.with_layout_constraint(x, {"a": nlayout.Layout((0, 1)), "b": nlayout.Layout((0,))})
    assert out["a"] is x["a"] and out["b"] is x["b"]
    jitted = numax.jit(lambda v: nlayout.with_layout_constraint(v, nlayout.Layout((0, 1))) * 2)(x["a"])
    np.testing.assert_array_equal(jitted, 2 * np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="row-major"):
        nlayout.with_layout_constraint(x["a"], nlayout.Layout((1, 0)))


def test_import_numax_stays_jax_free_and_lazy():
    """The new modules load on first use only (tests/test_import.py checks `import numax` as a whole)."""
    import subprocess

    code = ("import sys, numax; loaded = [m for m in ('numax.monitoring', 'numax.experimental.layout', 'jax') "
            "if m in sys.modules]; numax.monitoring; print(loaded, 'numax.monitoring' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]
    assert importlib.import_module("numax.experimental.layout") is nlayout
