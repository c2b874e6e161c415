"""The native call path's answers to cache hits of programs over several devices (sharded jit and pmap, on the 8
forced CPU devices): the same outputs as the Python path (values, types, layouts, commitment), outputs that
feed the next call natively, the same errors, and every call it does not own handed to the Python path."""

import collections
import contextlib

import numpy as np
import pytest
from numax.lowering import native_dispatch
from numax.lowering.sharded_array import ShardedArray
from numax.transforms import jit as jit_module
from numax.transforms import pmap as pmap_module
from test_native_dispatch import both_ways as native_both_ways
from test_native_dispatch import native

import numax
import numax.numpy as xnp
from numax.sharding import NamedSharding
from numax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(not native_dispatch.available, reason="the native call path is not built")


@contextlib.contextmanager
def python_calls():
    """Counts the calls that reach the Python paths (`PjitFunction._call`, `PmapFunction._call`)."""
    counter = collections.Counter()
    originals = {cls: cls._call for cls in (jit_module.PjitFunction, pmap_module.PmapFunction)}

    def counting(original):
        def counted(self, *args, **kwargs):
            counter["calls"] += 1
            return original(self, *args, **kwargs)
        return counted

    for cls, original in originals.items():
        cls._call = counting(original)
    try:
        yield counter
    finally:
        for cls, original in originals.items():
            cls._call = original


def assert_same_tree(native_out, python_out):
    native_leaves, native_tree = numax.tree_util.tree_flatten(native_out)
    python_leaves, python_tree = numax.tree_util.tree_flatten(python_out)
    assert native_tree == python_tree
    for a, b in zip(native_leaves, python_leaves):
        assert type(a) is type(b) is ShardedArray
        assert (a.dtype, a.shape, a.weak_type, a.sharding, a.committed) == (b.dtype, b.shape, b.weak_type,
                                                                             b.sharding, b.committed)
        assert [s.device for s in a.addressable_shards] == [s.device for s in b.addressable_shards]
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def both_ways(f, *args):
    """f(*args) answered natively and by the Python path (jit's or pmap's), outputs compared as ShardedArrays."""
    return native_both_ways(f, *args, counting_calls=python_calls, same_outputs=assert_same_tree)


def assert_same_error(call, error_type, match):
    """call() raises the same error natively and through the Python path."""
    messages = []
    for on in (True, False):
        with native(on), pytest.raises(error_type, match=match) as error:
            call()
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def mesh_shardings(devices=8):
    mesh = numax.make_mesh((devices,), ("data",))
    return NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))


def sgd_step(params, x):
    """A data-parallel step's shape: a pytree of parameters in, new parameters and a scalar out."""
    w, b = params
    loss = xnp.mean((x @ w + b) ** 2)
    return (w - 0.1 * loss, {"b": b * 0.5, "n": 2}), loss


def test_sharded_jit_hits_are_native_and_feed_the_next_call():
    rep, split = mesh_shardings()
    step = numax.jit(sgd_step, in_shardings=(rep, split), out_shardings=((rep, {"b": rep, "n": rep}), rep))
    w = numax.device_put(np.arange(12.0, dtype=np.float32).reshape(4, 3) / 10, rep)
    b = numax.device_put(np.ones(3, np.float32), rep)
    x = numax.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4) / 32, split)
    (new_w, new_b), loss = both_ways(step, (w, b), x)
    hits = step.stats.cache_hits
    with python_calls() as counter:  # its outputs (and their layouts) are what the next call takes as they are
        for _ in range(3):
            (new_w, new_b), loss = step((new_w, new_b["b"]), x)
    assert counter["calls"] == 0
    assert step.stats.cache_hits == hits + 3 and step.stats.compiles == 1
    with native(False):
        expected_w, expected_b = w, b
        for _ in range(4):
            (expected_w, expected_b), expected_loss = step((expected_w, expected_b), x)
            expected_b = expected_b["b"]
    assert_same_tree((new_w, new_b["b"], loss), (expected_w, expected_b, expected_loss))


def test_jit_of_arrays_laid_out_over_devices():
    _, split = mesh_shardings()
    f = numax.jit(lambda a, b: (a * b, a.sum()))
    a = numax.device_put(np.arange(16.0, dtype=np.float32), split)
    both_ways(f, a, a)


def test_pmap_hits_are_native_and_feed_the_next_call():
    step = numax.pmap(lambda params, x: sgd_step(params, x), axis_name="i")
    params = (np.ones((8, 4, 3), np.float32), np.zeros((8, 3), np.float32))
    x = np.arange(8 * 2 * 4, dtype=np.float32).reshape(8, 2, 4) / 64
    placed = numax.pmap(lambda *values: values)(params, x)
    (w, b), _ = both_ways(step, *placed)
    (w, b), _ = step((w, b["b"]), placed[1])  # (its outputs' sharding names axis "i": another signature)
    with python_calls() as counter:
        for _ in range(3):
            (w, b), loss = step((w, b["b"]), placed[1])
    assert counter["calls"] == 0
    with native(False):
        expected_w, expected_b = placed[0]
        for _ in range(5):
            (expected_w, expected_b), expected_loss = step((expected_w, expected_b), placed[1])
            expected_b = expected_b["b"]
    assert_same_tree((w, b["b"], loss), (expected_w, expected_b, expected_loss))


def test_pmap_single_output_and_tuple_outputs():
    double = numax.pmap(lambda v: v * 2)
    pair = numax.pmap(lambda v: (v, v + 1), axis_name="i")
    placed = numax.pmap(lambda v: v)(np.arange(8.0, dtype=np.float32))
    assert type(both_ways(double, placed)) is ShardedArray
    assert type(both_ways(pair, placed)) is tuple


def test_large_constants_go_in_first():
    rep, split = mesh_shardings()
    table = np.arange(4096.0, dtype=np.float32).reshape(512, 8)  # large: passed as a leading argument
    f = numax.jit(lambda a: a @ xnp.asarray(table).T, in_shardings=split)
    both_ways(f, numax.device_put(np.ones((8, 8), np.float32), split))


def test_deleted_arguments_raise_the_same_error():
    rep, _ = mesh_shardings()
    f = numax.jit(lambda a: a + 1, in_shardings=rep, out_shardings=rep)
    p = numax.pmap(lambda v: v + 1)
    for fun, value in ((f, numax.device_put(np.ones(3, np.float32), rep)),
                       (p, numax.pmap(lambda v: v)(np.ones((8, 2), np.float32)))):
        fun(value)
        value.delete()
        assert_same_error(lambda: fun(value), RuntimeError, "deleted")


def test_calls_the_native_path_leaves_to_python():
    rep, split = mesh_shardings()
    f = numax.jit(lambda a: a * 2, in_shardings=split)
    donating = numax.pmap(lambda v: v * 2, donate_argnums=0)
    static = numax.pmap(lambda v, n: v * n, static_broadcasted_argnums=1)
    laid_out = numax.device_put(np.arange(8.0, dtype=np.float32), split)
    mapped = numax.pmap(lambda v: v)(np.arange(8.0, dtype=np.float32))
    seen = []

    def calling_back(a):
        numax.debug.callback(lambda v: seen.append(v.shape), a)
        return a + 1

    callback = numax.jit(calling_back, in_shardings=split)
    calls = {
        "host value": lambda: f(np.arange(8.0, dtype=np.float32)),
        "one-device array": lambda: f(xnp.arange(8.0)),
        "donated": lambda: donating(numax.pmap(lambda v: v)(np.ones(8, np.float32))),
        "static": lambda: static(mapped, 3),
        "keyword": lambda: f(a=laid_out),
        "host callbacks": lambda: callback(laid_out),
    }
    for name, call in calls.items():
        with native(False):
            expected = call()
        call()
        with python_calls() as counter:
            got = call()
        assert counter["calls"] >= 1, name
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected), err_msg=name)
    numax.effects_barrier()
    assert seen, "the callback ran"


def test_arrays_laid_out_alike_by_other_sharding_objects():
    rep, split = mesh_shardings()
    f = numax.jit(lambda a: a * 2, in_shardings=split)
    f(numax.device_put(np.zeros(8, np.float32), split))
    other = NamedSharding(numax.make_mesh((8,), ("data",)), P("data"))  # equal to split, not the same object
    both_ways(f, numax.device_put(np.arange(8.0, dtype=np.float32), other))
    per_device = numax.pmap(lambda v: v + 1)(np.arange(8.0, dtype=np.float32))  # (its sharding's axis: pmap's)
    both_ways(numax.pmap(lambda v: v * 3, axis_name="other"), per_device)


def test_a_layout_jit_did_not_ask_for_raises_the_same_error():
    rep, split = mesh_shardings()
    f = numax.jit(lambda a: a * 2, in_shardings=split)
    f(numax.device_put(np.zeros(8, np.float32), split))
    replicated = numax.device_put(np.arange(8.0, dtype=np.float32), rep)
    assert_same_error(lambda: f(replicated), ValueError, "does not match")
