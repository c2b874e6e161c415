"""pmap over 8 forced CPU devices (tests/conftest.py sets XLA_FLAGS), against jax.pmap run the same way."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_same_pytrees, data_parallel_step
from hypothesis import given
from hypothesis import strategies as st
from numax.lowering import xla
from numax.lowering.sharded_array import ShardedArray

import numax
import numax.numpy as mnp
from numax import lax

_close = functools.partial(assert_same_pytrees, rtol=1e-5, atol=1e-6)


def _both(make, *args, **pmap_options):
    """Runs `make(lax_module, numpy_module)` pmapped by numax and by jax on the same arguments."""
    ours = numax.pmap(make(lax, mnp), **pmap_options)(*args)
    theirs = jax.pmap(make(jax.lax, jnp), **pmap_options)(*args)
    return ours, theirs


COLLECTIVES = {
    "psum": lambda L, m: lambda x: L.psum(x, "i"),
    "psum_pytree": lambda L, m: lambda x: L.psum({"a": x, "b": (x * 2, 1.0)}, "i"),
    "pmean": lambda L, m: lambda x: L.pmean(x, "i"),
    "pmean_int": lambda L, m: lambda x: L.pmean(x.astype(m.int32), "i"),
    "pmax": lambda L, m: lambda x: L.pmax(x, "i"),
    "pmin": lambda L, m: lambda x: L.pmin(x, "i"),
    "psum_bool": lambda L, m: lambda x: L.psum(x > 3, "i"),
    "axis_index": lambda L, m: lambda x: x * L.axis_index("i"),
    "axis_size": lambda L, m: lambda x: x + L.psum(1, "i"),
    "all_gather": lambda L, m: lambda x: L.all_gather(x, "i"),
    "all_gather_axis1": lambda L, m: lambda x: L.all_gather(x, "i", axis=1),
    "all_gather_tiled": lambda L, m: lambda x: L.all_gather(x, "i", tiled=True),
    "psum_scatter": lambda L, m: lambda x: L.psum_scatter(m.stack([x] * 4), "i"),
    "psum_scatter_tiled": lambda L, m: lambda x: L.psum_scatter(m.concatenate([x] * 4), "i", tiled=True),
    "collectives_chain": lambda L, m: lambda x: m.sin(L.psum(x, "i")) * L.pmax(x, "i") - L.pmean(x, "i"),
}


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_collectives_match_jax(name):
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
    ours, theirs = _both(COLLECTIVES[name], x, axis_name="i")
    _close(ours, theirs)


def test_in_axes_out_axes_static_arguments_and_keywords_match_jax():
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    y = np.arange(3, dtype=np.float32)

    def make(L, m):
        def f(a, b, scale, *, c):
            return {"sum": L.psum(a, "i") * scale + b, "kept": a * c}

        return f

    options = dict(axis_name="i", in_axes=(1, None, None), out_axes={"sum": None, "kept": 1},
                   static_broadcasted_argnums=(2,))
    ours = numax.pmap(make(lax, mnp), **options)(x, y, 3.0, c=np.ones(8, np.float32))
    theirs = jax.pmap(make(jax.lax, jnp), **options)(x, y, 3.0, c=np.ones(8, np.float32))
    _close(ours, theirs)


def test_outputs_stay_on_their_devices_and_feed_the_next_call_without_transfers(monkeypatch):
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    step = numax.pmap(lambda v: v * 2 + lax.axis_index("i"), "i")
    out = step(x)
    assert isinstance(out, ShardedArray) and isinstance(out, numax.Array)
    theirs = jax.pmap(lambda v: v * 2 + jax.lax.axis_index("i"), "i")(x)
    assert [d.id for d in sorted(out.devices(), key=lambda d: d.id)] == list(range(8))
    for ours_shard, their_shard in zip(out.addressable_shards, theirs.addressable_shards):
        assert ours_shard.device.id == their_shard.device.id
        assert ours_shard.index == their_shard.index
        np.testing.assert_array_equal(np.asarray(ours_shard.data), np.asarray(their_shard.data))

    puts = []
    original = xla.device_put
    monkeypatch.setattr(xla, "device_put", lambda *a, **k: puts.append(a) or original(*a, **k))
    again = step(out)
    assert puts == []  # the blocks were used where they lie
    np.testing.assert_array_equal(np.asarray(again), np.asarray(jax.pmap(
        lambda v: v * 2 + jax.lax.axis_index("i"), "i")(theirs)))


def test_data_parallel_training_step_with_pmean_of_gradients_matches_jax():
    rng = np.random.default_rng(0)
    params = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    xs = rng.normal(size=(4, 5, 3)).astype(np.float32)
    ys = rng.normal(size=(4, 5, 2)).astype(np.float32)

    ours_step = numax.pmap(data_parallel_step(lax, mnp, numax.grad, "batch"), "batch", in_axes=(None, 0, 0))
    their_step = jax.pmap(data_parallel_step(jax.lax, jnp, jax.grad, "batch"), "batch", in_axes=(None, 0, 0))
    ours_params, their_params = params, params
    for _ in range(3):
        ours_params, ours_loss = ours_step(ours_params, xs, ys)
        ours_params = {k: v[0] for k, v in ours_params.items()}
        their_params, their_loss = their_step(their_params, xs, ys)
        their_params = {k: v[0] for k, v in their_params.items()}
        _close(ours_loss, their_loss)
    _close(ours_params, their_params)


def test_grad_jvp_and_vmap_of_pmap_match_jax():
    x = (np.arange(12, dtype=np.float32).reshape(4, 3) + 1) / 5

    def make(L, m):
        return lambda v: m.sin(v) * L.psum(v, "i") + L.all_gather(v, "i").sum(0)

    ours_f, their_f = numax.pmap(make(lax, mnp), "i"), jax.pmap(make(jax.lax, jnp), "i")
    _close(numax.grad(lambda v: (ours_f(v) ** 2).sum())(x), jax.grad(lambda v: (their_f(v) ** 2).sum())(x))
    tangent = np.ones_like(x)
    _close(numax.jvp(ours_f, (x,), (tangent,)), jax.jvp(their_f, (x,), (tangent,)))
    batch = np.stack([x, 2 * x])
    _close(numax.vmap(ours_f)(batch), jax.vmap(their_f)(batch))
    _close(numax.jit(lambda v: ours_f(v) + 1)(x), jax.jit(lambda v: their_f(v) + 1)(x))


def test_grad_of_pmap_with_a_broadcast_argument_sums_over_devices():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 3
    w = np.array([0.5, -1.0, 2.0], np.float32)

    def make(L, m):
        return lambda v, u: m.cos(v * u) + L.pmean(v, "i") * u

    ours = numax.grad(lambda u: numax.pmap(make(lax, mnp), "i", in_axes=(0, None))(x, u).sum())(w)
    theirs = jax.grad(lambda u: jax.pmap(make(jax.lax, jnp), "i", in_axes=(0, None))(x, u).sum())(w)
    _close(ours, theirs, rtol=1e-5)


def test_pmap_of_vmap_and_vmap_of_pmap_with_two_axis_names_match_jax():
    x = np.arange(24, dtype=np.float32).reshape(4, 2, 3)

    def make(L, m, vmap, pmap):
        inner = lambda v: (L.psum(v, "j"), L.psum(v, ("i", "j")), L.pmax(v, "i"), L.axis_index("j") + v)  # noqa: E731
        return vmap, pmap, inner

    for ours_order, their_order in [((numax.pmap, numax.vmap), (jax.pmap, jax.vmap))]:
        outer, inner_map = ours_order
        ours = outer(inner_map(make(lax, mnp, None, None)[2], axis_name="j"), axis_name="i")(x)
        outer, inner_map = their_order
        theirs = outer(inner_map(make(jax.lax, jnp, None, None)[2], axis_name="j"), axis_name="i")(x)
        _close(ours, theirs)
    y = np.swapaxes(x, 0, 1)  # (2, 4, 3): vmap over "j" outside, pmap over "i" inside
    ours = numax.vmap(numax.pmap(make(lax, mnp, None, None)[2], axis_name="i"), axis_name="j")(y)
    theirs = jax.vmap(jax.pmap(make(jax.lax, jnp, None, None)[2], axis_name="i"), axis_name="j")(y)
    _close(ours, theirs)


def test_control_flow_and_random_keys_inside_pmap_match_jax():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)

    def make(L, m):
        def f(v):
            v = L.cond(L.axis_index("i") % 2 == 0, lambda a: a * 2, lambda a: -a, v)
            v, _ = L.scan(lambda c, _: (c + L.psum(c, "i") * 0.1, None), v, None, length=3)
            return L.fori_loop(0, 2, lambda _, c: c * 1.5, v)

        return f

    ours, theirs = _both(make, x, axis_name="i")
    _close(ours, theirs)
    keys = numax.random.split(numax.random.key(0), 4)
    their_keys = jax.random.split(jax.random.key(0), 4)
    ours = numax.pmap(lambda k: numax.random.normal(k, (3,)))(keys)
    theirs = jax.pmap(lambda k: jax.random.normal(k, (3,)))(their_keys)
    _close(ours, theirs)


@given(devices=st.integers(1, 8), shape=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 2**16))
def test_psum_and_all_gather_over_any_device_count_match_numpy(devices, shape, seed):
    x = np.random.default_rng(seed).normal(size=(devices, *shape)).astype(np.float32)
    total, gathered, index = numax.pmap(lambda v: (lax.psum(v, "i"), lax.all_gather(v, "i"), lax.axis_index("i")),
                                        "i")(x)
    np.testing.assert_allclose(np.asarray(total), np.broadcast_to(x.sum(0), x.shape), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(gathered), np.broadcast_to(x, (devices, *x.shape)))
    np.testing.assert_array_equal(np.asarray(index), np.arange(devices))


def test_one_pmapped_function_over_different_device_counts_sees_each_axis_size():
    size_of = numax.pmap(lambda v: v + lax.axis_size("i"), "i")
    for devices in (2, 4):
        np.testing.assert_array_equal(np.asarray(size_of(np.zeros(devices, np.float32))), np.full(devices, devices))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"requires 9 devices, but only 8 cpu .*xla_force_host_platform_device_count"):
        numax.pmap(lambda v: v)(np.ones((9, 2), np.float32))
    with pytest.raises(NameError, match="unbound axis name: j"):
        numax.pmap(lambda v: lax.psum(v, "j"), "i")(np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="pmap got inconsistent sizes"):
        numax.pmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="num_local_devices=3"):
        numax.pmap(lambda v: v, devices=numax.devices()[:3])(np.ones((2, 2)))
    with pytest.raises(NameError, match="unbound axis name"):
        jax_free = numax.jit(lambda v: lax.psum(v, "i"))
        jax_free(np.ones(2, np.float32))


def test_a_loop_of_pmaps_with_collectives_runs_without_waiting_on_each_step():
    """XLA's CPU client with more devices than cores deadlocked on a second collective program enqueued before
    the first finished; numax sizes the thread pool (PJRT_NPROC) when it starts the client."""
    import os

    step = numax.pmap(lambda v: v + lax.psum(v, "i") * 1e-3, "i")
    x = step(np.ones((8, 16), np.float32))
    for _ in range(20):
        x = step(x)
    if 8 > (os.cpu_count() or 1):  # more devices than cores: numax must have enlarged the pool
        assert int(os.environ["PJRT_NPROC"]) >= 32
    expected = np.ones((8, 16), np.float32)
    for _ in range(21):
        expected = expected + expected.sum(0) * 1e-3
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-5)


def test_ppermute_pshuffle_and_all_to_all_between_devices_match_jax():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)

    def make(L, m):
        def f(v):
            shifted = L.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])
            partial = L.ppermute(v, "i", [(0, 2), (2, 0)])
            shuffled = L.pshuffle(v, "i", [3, 2, 1, 0])
            exchanged = L.all_to_all(v.reshape(4, 2), "i", 0, 0)
            return shifted, partial, shuffled, exchanged

        return f

    ours, theirs = _both(make, x, axis_name="i")
    _close(ours, theirs)
    grad_ours = numax.grad(lambda v: (numax.pmap(make(lax, mnp), "i")(v)[0] ** 2 * np.arange(8)).sum())(x)
    grad_theirs = jax.grad(lambda v: (jax.pmap(make(jax.lax, jnp), "i")(v)[0] ** 2 * np.arange(8)).sum())(x)
    _close(grad_ours, grad_theirs)


def test_outputs_carry_jax_shardings_and_draw_them(capsys):
    x = np.ones((4, 3), np.float32)
    options = dict(axis_name="rows", in_axes=(0, None), out_axes=(0, 1, None))
    make = lambda m: lambda v, w: (v, m.stack([v] * 2), w)  # noqa: E731
    ours = numax.pmap(make(mnp), **options)(x, np.float32(2))
    theirs = jax.pmap(make(jnp), **options)(x, np.float32(2))
    for a, b in zip(ours, theirs):
        assert repr(a.sharding) == repr(b.sharding)
        assert {d.id: i for d, i in a.sharding.devices_indices_map(a.shape).items()} == \
            {d.id: i for d, i in b.sharding.devices_indices_map(b.shape).items()}
    assert ours[0].device == ours[0].sharding
    numax.debug.visualize_array_sharding(ours[0])
    drawn = capsys.readouterr().out
    jax.debug.visualize_array_sharding(theirs[0])
    assert drawn == capsys.readouterr().out


def test_jit_of_pmap_is_one_program_over_the_devices():
    x = (np.arange(32, dtype=np.float32).reshape(8, 4) + 1) / 9

    def make(L, m):
        inner = (numax if L is lax else jax).pmap(lambda v: m.tanh(v) * L.psum(v, "i"), "i")
        return lambda v: inner(v * 2).sum(axis=1) + m.max(v)

    ours, theirs = numax.jit(make(lax, mnp)), jax.jit(make(jax.lax, jnp))
    _close(ours(x), theirs(x))
    text = ours.lower(x).as_text()
    assert "sdy.manual_computation" in text and "mhlo.num_partitions = 8" in text
    entry = next(iter(ours.cache.entries.values()))
    assert type(entry.executable).__name__ == "ShardedExecutable"
    _close(numax.grad(lambda v: ours(v).sum())(x), jax.grad(lambda v: theirs(v).sum())(x))


def test_nested_pmap_is_refused_with_a_value_error_like_jax():
    x = np.ones((2, 4, 3), np.float32)
    for lib in (numax, jax):
        with pytest.raises(ValueError):
            lib.pmap(lib.pmap(lambda v: v * 2, "j"), "i")(x)
    with pytest.raises(ValueError, match="nested pmaps are not supported"):
        numax.pmap(numax.pmap(lambda v: v * 2, "j"), "i")(x)
    inner = numax.jit(numax.pmap(lambda v: v + 1, "j"))
    inner(x[0])  # traced (and cached) outside any pmap, then called inside one
    with pytest.raises(ValueError, match="nested pmaps are not supported"):
        numax.pmap(lambda v: inner(v), "i")(x)
