"""numax used from many threads: per-thread interpreter state, shared caches that compile once, and
thread-local configuration contexts."""

import threading

import numpy as np
import pytest
from numax.core import caches
from numax.core.errors import UnexpectedTracerError
from numax.lowering import dispatch
from numax.lowering.array import Array as ArrayImpl  # the concrete class of device arrays
from thread_util import NUM_THREADS, run_in_threads

import numax
import numax.numpy as xnp
from numax import lax


@numax.jit
def shared_step(w, x):
    return xnp.tanh(x @ w).sum()


shared_grad = numax.jit(numax.grad(shared_step))


def _mixed_work(index, barrier):
    rng = np.random.default_rng(index)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    barrier.wait()
    for step in range(6):
        scale = float(index + step)
        # A jit shared by every thread, its gradient, and a fresh jit closing over this thread's values.
        np.testing.assert_allclose(shared_step(w, x), np.tanh(x @ w).sum(), rtol=1e-5)
        t = np.tanh(x @ w)
        np.testing.assert_allclose(shared_grad(w, x), x.T @ (1 - t ** 2), rtol=1e-4, atol=1e-5)
        fresh = numax.jit(lambda v: xnp.sin(v) * scale)
        np.testing.assert_allclose(fresh(x), np.sin(x) * scale, rtol=1e-5, atol=1e-6)
        # grad of an eager function, vmap, eager operations.
        g = numax.grad(lambda v: xnp.sum(v ** 3) * scale)(x)
        np.testing.assert_allclose(g, 3 * x ** 2 * scale, rtol=1e-5, atol=1e-5)
        rows = numax.vmap(lambda row: xnp.dot(row, row) + scale)(x)
        np.testing.assert_allclose(rows, (x * x).sum(1) + scale, rtol=1e-5)
        np.testing.assert_allclose(xnp.exp(xnp.asarray(x)) - 1, np.expm1(x), rtol=1e-4, atol=1e-5)
        # Control flow, eagerly and under grad.
        total = lax.fori_loop(0, 4, lambda i, c: c + i * scale, xnp.zeros(3))
        np.testing.assert_allclose(total, np.full(3, 6 * scale), rtol=1e-6)
        carry, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, xnp.arange(4.0) + scale)
        expected_ys, c = [], 0.0
        for v in np.arange(4.0) + scale:
            expected_ys.append(c * v)
            c += v
        np.testing.assert_allclose(carry, c, rtol=1e-6)
        np.testing.assert_allclose(ys, expected_ys, rtol=1e-6)
        branch = numax.grad(lambda v: lax.cond(v > 0, lambda u: u * u, lambda u: -u, v))(scale - 3.0)
        np.testing.assert_allclose(branch, 2 * (scale - 3.0) if scale > 3 else -1.0, rtol=1e-6)
        key = numax.random.fold_in(numax.random.PRNGKey(0), index)
        sample = numax.random.uniform(key, (3,))
        assert sample.shape == (3,) and np.all((np.asarray(sample) >= 0) & (np.asarray(sample) < 1))


def test_threads_mixing_jit_grad_vmap_eager_and_control_flow():
    run_in_threads(_mixed_work)


def test_random_streams_agree_across_threads():
    expected = [np.asarray(numax.random.normal(numax.random.PRNGKey(i), (4,))) for i in range(NUM_THREADS)]
    results = {}

    def work(index, barrier):
        barrier.wait()
        results[index] = np.asarray(numax.random.normal(numax.random.PRNGKey(index), (4,)))

    run_in_threads(work)
    for i in range(NUM_THREADS):
        np.testing.assert_array_equal(results[i], expected[i])


def test_concurrent_first_calls_trace_and_compile_once():
    traces = []

    @numax.jit
    def f(x):
        traces.append(threading.get_ident())
        return x * 2 + 1

    outputs = {}

    def work(index, barrier):
        barrier.wait()
        outputs[index] = np.asarray(f(np.full(3, index, np.float32)))

    run_in_threads(work)
    assert len(traces) == 1, f"traced {len(traces)} times for one signature"
    assert f._cache_size() == 1
    for index, value in outputs.items():
        np.testing.assert_array_equal(value, np.full(3, 2 * index + 1, np.float32))


def test_concurrent_eager_operations_compile_each_primitive_once():
    shape = (7, 13, 3)  # a shape no other test uses: the executable is new here
    before = len(dispatch.primitive_cache.entries)
    outputs = {}

    def work(index, barrier):
        x = xnp.full(shape, float(index))
        barrier.wait()
        outputs[index] = np.asarray(lax.cos(x))

    run_in_threads(work)
    keys = [key for key in dispatch.primitive_cache.entries if key[0].name == "cos" and key[2][0].shape == shape]
    assert len(keys) == 1 and len(dispatch.primitive_cache.entries) >= before + 1
    for index, value in outputs.items():
        np.testing.assert_allclose(value, np.cos(np.full(shape, float(index), np.float32)), rtol=1e-6)


def test_a_thread_tracing_does_not_capture_another_threads_operations():
    """While thread A is inside a trace, thread B computes eagerly and compiles its own programs: nothing of
    B's is staged into A's program, and B never sees A's tracers."""
    inside_trace = threading.Event()
    b_done = threading.Event()
    seen_by_b = {}

    def traced(x):
        y = xnp.sin(x)
        inside_trace.set()
        assert b_done.wait(60)
        return y * 2

    def thread_b():
        assert inside_trace.wait(60)
        try:
            eager = xnp.cos(xnp.arange(3.0))
            seen_by_b["eager"] = eager
            seen_by_b["jit"] = numax.jit(lambda v: v + 1)(xnp.ones(2))
            seen_by_b["jaxpr"] = numax.make_jaxpr(lambda v: v * 3)(1.0)
        finally:
            b_done.set()

    other = threading.Thread(target=thread_b)
    other.start()
    jaxpr = numax.make_jaxpr(traced)(1.0)
    other.join(60)
    assert [eqn.primitive.name for eqn in jaxpr.program.equations] == ["sin", "mul"]
    assert type(seen_by_b["eager"]) is ArrayImpl
    np.testing.assert_allclose(seen_by_b["eager"], np.cos(np.arange(3.0, dtype=np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(seen_by_b["jit"], np.full(2, 2.0, np.float32))
    assert [eqn.primitive.name for eqn in seen_by_b["jaxpr"].program.equations] == ["mul"]


def test_a_tracer_passed_to_another_thread_is_rejected_there():
    handed_over = threading.Event()
    other_done = threading.Event()
    errors = []

    def traced(x):
        box.append(x)
        handed_over.set()
        assert other_done.wait(60)
        return x + 1

    def other_thread():
        assert handed_over.wait(60)
        try:
            xnp.sin(box[0])
        except UnexpectedTracerError as error:
            errors.append(str(error))
        finally:
            other_done.set()

    box = []
    thread = threading.Thread(target=other_thread)
    thread.start()
    numax.jit(traced)(1.0)
    thread.join(60)
    assert len(errors) == 1 and "another thread" in errors[0]


def test_config_contexts_are_per_thread():
    results = {}

    def work(index, barrier):
        if index % 2:
            with numax.enable_x64(), numax.disable_jit():
                barrier.wait()
                results[index] = (xnp.arange(2.0).dtype, numax.config.disable_jit)
                barrier.wait()
        else:
            barrier.wait()
            results[index] = (xnp.arange(2.0).dtype, numax.config.disable_jit)
            barrier.wait()

    run_in_threads(work, 4)
    assert results == {0: (np.float32, False), 1: (np.float64, True), 2: (np.float32, False),
                       3: (np.float64, True)}
    assert xnp.arange(2.0).dtype == np.float32 and not numax.config.disable_jit


# --- the shared cache itself --------------------------------------------------------------------------
def test_compute_once_cache_shares_one_computation_between_waiting_threads():
    cache = caches.ComputeOnceCache()
    started, release = threading.Event(), threading.Event()
    calls = []

    def compute():
        calls.append(1)
        started.set()
        assert release.wait(60)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", compute))) for _ in range(4)]
    threads[0].start()
    assert started.wait(60)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(60)
    assert len(calls) == 1 and len(results) == 4 and all(r is results[0] for r in results)


def test_compute_once_cache_waiters_retry_after_a_failure_and_recursion_does_not_deadlock():
    cache = caches.ComputeOnceCache()
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return "value"

    with pytest.raises(RuntimeError, match="first attempt"):
        cache.get("k", flaky)
    assert "k" not in cache
    assert cache.get("k", flaky) == "value" and cache.get("k", flaky) == "value" and len(attempts) == 2
    # The thread computing a key asks for it again (a function traced inside its own trace): no deadlock.
    assert cache.get("r", lambda: cache.get("r", lambda: "inner") + "+outer") == "inner+outer"


def test_lru_cache_keeps_the_most_recently_used_entries():
    cache = caches.ComputeOnceCache(maxsize=2)
    cache.get("a", lambda: 1)
    cache.get("b", lambda: 2)
    cache.get("a", lambda: -1)  # a hit: "a" becomes the most recent
    cache.get("c", lambda: 3)  # evicts "b"
    assert "a" in cache and "c" in cache and "b" not in cache and len(cache) == 2
