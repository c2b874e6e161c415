"""jit's native call path (lowering/_native_dispatch.c) answers cache hits exactly as the Python path
(`PjitFunction._call`) does: values, dtypes, weak types, output trees, statistics and errors; and it hands
every call it does not own (keywords, static arguments, tracers, numpy leaves, donation, NaN checks,
disable_jit, custom pytree nodes) to the Python path."""

import collections
import contextlib

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from numax.lowering import native_dispatch
from numax.lowering.array import Array as ArrayImpl  # the concrete class of device arrays
from numax.transforms import jit as jit_module
from thread_util import run_in_threads

import numax
import numax.numpy as xnp


def test_the_native_path_is_built():
    # The install compiles it (setup.py); without it every other test here compares Python with Python.
    assert native_dispatch.available


@contextlib.contextmanager
def python_calls():
    """Counts the calls that reach the Python path (`PjitFunction._call`)."""
    counter = collections.Counter()
    original = jit_module.PjitFunction._call

    def counted(self, *args, **kwargs):
        counter["calls"] += 1
        return original(self, *args, **kwargs)

    jit_module.PjitFunction._call = counted
    try:
        yield counter
    finally:
        jit_module.PjitFunction._call = original


@contextlib.contextmanager
def native(on):
    previous = numax.config.read("numax_native_dispatch")
    numax.config.update("numax_native_dispatch", on)
    try:
        yield
    finally:
        numax.config.update("numax_native_dispatch", previous)


def assert_same_tree(native_out, python_out):
    native_leaves, native_tree = numax.tree_util.tree_flatten(native_out)
    python_leaves, python_tree = numax.tree_util.tree_flatten(python_out)
    assert native_tree == python_tree
    for a, b in zip(native_leaves, python_leaves):
        assert type(a) is type(b) is ArrayImpl
        assert (a.dtype, a.shape, a.weak_type, a.device) == (b.dtype, b.shape, b.weak_type, b.device)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def both_ways(f, *args, counting_calls=None, same_outputs=None):
    """f(*args) answered natively (a cache hit that never reaches `_call`) and by the Python path, its calls counted
    by `counting_calls` (default: jit's Python path) and the two outputs compared by `same_outputs`."""
    counting_calls, same_outputs = counting_calls or python_calls, same_outputs or assert_same_tree
    f(*args)  # the first call compiles, through the Python path
    with counting_calls() as counter:
        native_out = f(*args)
    assert counter["calls"] == 0, "the cache hit did not take the native path"
    with native(False), counting_calls() as counter:
        python_out = f(*args)
    assert counter["calls"] == 1
    same_outputs(native_out, python_out)
    return native_out


x3 = xnp.arange(3.0)
i3 = xnp.arange(3)


@pytest.mark.parametrize("output", ["leaf", "tuple", "list", "dict", "nested", "none"])
def test_output_trees(output):
    def f(a, b):
        s, p = a + b, a * b
        return {"leaf": s, "tuple": (s, p), "list": [s, p], "dict": {"p": p, "s": s},
                "nested": (s, [p, {"q": s - p}]), "none": (s, None)}[output]

    both_ways(numax.jit(f), x3, x3)


@pytest.mark.parametrize("args", [
    (x3, 2.0), (x3, 2), (x3, True), (i3, 3), (x3, 1 + 2j),  # Python scalars are weakly typed leaves
    ((x3, x3), [x3, 1.5]), ({"w": x3, "b": {"c": x3}}, x3), ([], x3), ({}, x3),
])
def test_argument_trees(args):
    both_ways(numax.jit(lambda *a: sum(numax.tree_util.tree_leaves(a))), *args)


def test_distinct_scalars_and_types_are_distinct_cache_entries():
    f = numax.jit(lambda a, b: a * b)
    for scalar in (2, 2.0, True, 2 + 0j):
        out = both_ways(f, x3, scalar)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(x3) * scalar)
    assert f._cache_size() == 4


def test_statistics_count_native_hits():
    f = numax.jit(lambda a: a + 1)
    f(x3)
    before = numax.jit_statistics().cache_hits
    for _ in range(5):
        f(x3)
    assert f.stats.cache_hits == 5 and f.stats.compiles == 1
    assert numax.jit_statistics().cache_hits - before == 5


def test_calls_the_native_path_leaves_to_python():
    f = numax.jit(lambda a, b=1.0: a * b)
    g = numax.jit(lambda a, n: a * n, static_argnums=1)
    d = numax.jit(lambda a: a * 2, donate_argnums=0)

    @numax.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    p = numax.jit(lambda pair: pair.a + pair.b)
    first = numax.jit(lambda a, b: a)
    Point = collections.namedtuple("Point", "x y")
    nt = numax.jit(lambda point: point.x - point.y)
    host = np.arange(3.0, dtype=np.float32)
    calls = {
        "keyword": lambda: f(x3, b=2.0),
        "static": lambda: g(x3, 3),
        "donated": lambda: d(xnp.arange(3.0)),
        "numpy leaf": lambda: f(host),
        "custom node": lambda: p(Pair(x3, x3)),
        "namedtuple": lambda: nt(Point(x3, x3)),
        "None argument": lambda: first(x3, None),
    }
    for name, call in calls.items():
        call()
        with python_calls() as counter:
            call()
        assert counter["calls"] >= 1, name


def test_flags_send_hits_to_python():
    f = numax.jit(lambda a: a / a)
    f(x3)
    for flag in ("jax_debug_nans", "jax_disable_jit"):
        with python_calls() as counter:
            numax.config.update(flag, True)
            try:
                out = f(xnp.ones(3))
            finally:
                numax.config.update(flag, False)
        assert counter["calls"] == 1, flag
        np.testing.assert_array_equal(np.asarray(out), np.ones(3, np.float32))
    with python_calls() as counter, numax.disable_jit():
        f(x3 + 1)
    assert counter["calls"] == 1
    numax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):  # 0/0: the check runs on what is a native hit otherwise
            f(x3)
    finally:
        numax.config.update("jax_debug_nans", False)


def test_tracers_take_the_python_path_and_match():
    f = numax.jit(lambda a, b: xnp.sin(a) * b)
    f(x3, x3)
    grad_native = numax.grad(lambda a: f(a, x3).sum())(x3)
    with native(False):
        grad_python = numax.grad(lambda a: f(a, x3).sum())(x3)
    assert_same_tree(grad_native, grad_python)
    batched = numax.vmap(f)(xnp.ones((2, 3)), xnp.ones((2, 3)))
    assert batched.shape == (2, 3)
    # An outer trace with concrete arguments: the inner call is staged, not run.
    program = numax.make_jaxpr(lambda: f(x3, x3))()
    assert "jit[" in str(program) and "sin" in str(program)


def test_deleted_arguments_raise_the_same_error():
    f = numax.jit(lambda a, b: a + b)
    a, b = xnp.ones(3), xnp.ones(3)
    f(a, b)
    b.delete()
    messages = []
    for on in (True, False):
        with native(on), pytest.raises(RuntimeError, match="deleted") as error:
            f(a, b)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_donated_then_reused_raises_the_same_error():
    f = numax.jit(lambda a, b: a * 2 + b, donate_argnums=0)
    g = numax.jit(lambda a, b: a - b)
    a, b = xnp.arange(3.0), xnp.ones(3)
    g(a, b)
    f(a, b)
    assert a.is_deleted()
    messages = []
    for on in (True, False):
        with native(on), pytest.raises(ValueError, match="deleted or donated") as error:
            g(a, b)  # a hit of g's cache on a donated (deleted) array: jax's ValueError
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_wrong_shapes_and_dtypes_compile_anew_or_raise_alike():
    f = numax.jit(lambda a, b: a @ b)
    f(xnp.ones((2, 3)), xnp.ones((3, 4)))
    messages = []
    for on in (True, False):
        with native(on), pytest.raises(TypeError, match="core dimension") as error:
            f(xnp.ones((2, 3)), xnp.ones((4, 4)))
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    out = both_ways(f, xnp.ones((2, 3), dtype=xnp.int32), xnp.ones((3, 4), dtype=xnp.int32))
    assert out.dtype == xnp.int32


def test_arrays_on_another_device_or_platform_go_through_run_on():
    devices = numax.devices()
    f = numax.jit(lambda a: a * 3)
    on_first = numax.device_put(x3, devices[0])
    f(on_first)
    if len(devices) > 1:
        both_ways(f, numax.device_put(x3, devices[1]))
    both_ways(f, on_first)


def test_threads_share_the_cache_and_agree():
    f = numax.jit(lambda a, b: (a * b, a + b))
    args = [(xnp.full(3, float(i)), xnp.ones(3)) for i in range(16)]
    f(*args[0])
    results = {}

    def worker(i, barrier):
        for _ in range(50):
            results[i] = f(*args[i])

    run_in_threads(worker, 16)
    assert len(results) == 16
    for i, (product, total) in results.items():
        np.testing.assert_array_equal(np.asarray(product), np.full(3, float(i)))
        np.testing.assert_array_equal(np.asarray(total), np.full(3, float(i) + 1))
    assert f.stats.compiles == 1


def test_thread_local_default_device_is_part_of_the_key():
    devices = numax.devices()
    f = numax.jit(lambda: xnp.zeros(3))
    f()
    with numax.default_device(devices[-1]):
        out = f()
    assert out.device == devices[-1]


def test_methods_and_cleared_caches():
    class Model:
        scale = 2.0

        @numax.jit
        def apply(self_array, a):
            return self_array * a

    both_ways(Model.apply, x3, x3)
    f = numax.jit(lambda a: a - 1)
    f(x3)
    f.clear_cache()
    with python_calls() as counter:
        f(x3)
    assert counter["calls"] == 1 and f._cache_size() == 1


def test_a_repeated_key_still_reads_the_cache():
    # (the native path reuses the hash of the last hit's key for a key of the same objects)
    f = numax.jit(lambda a: a * 2)
    f(x3), f(x3)
    f.clear_cache()
    with python_calls() as counter:
        f(x3), f(x3)
    assert counter["calls"] == 1 and f._cache_size() == 1
    with python_calls() as counter:
        for value in (i3, x3, i3, x3):
            np.testing.assert_array_equal(np.asarray(f(value)), np.asarray(value) * 2)
    assert counter["calls"] == 1 and f._cache_size() == 2


leaves = st.one_of(st.sampled_from([x3, i3, xnp.ones(3, dtype=xnp.float16)]), st.integers(-5, 5),
                   st.floats(-2, 2, allow_nan=False), st.booleans())
trees = st.recursive(leaves, lambda children: st.one_of(
    st.lists(children, max_size=3), st.tuples(children, children),
    st.dictionaries(st.sampled_from("abc"), children, max_size=3)), max_leaves=6)


@settings(max_examples=40, deadline=None)
@given(trees)
def test_random_argument_trees_match_the_python_path(tree):
    f = numax.jit(lambda t: [leaf * 2 for leaf in numax.tree_util.tree_leaves(t)])
    both_ways(f, tree)
