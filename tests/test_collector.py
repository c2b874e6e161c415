"""Full garbage collections are deferred while numax traces or lowers a program (core/collector.py), and the
collector's thresholds come back as they were: after nested blocks, blocks of several threads, errors, and
thresholds changed by someone else meanwhile."""

import gc
import threading

import numpy as np
import pytest
from numax.core.collector import full_collections_deferred

import numax
import numax.numpy as xnp


@pytest.fixture(autouse=True)
def known_thresholds():
    """CPython's default thresholds, and the process's objects out of the collector's sight (so that the
    allocations of a test, not the size of the heap before it, decide when a full collection is due)."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def deferring():
    return gc.get_threshold()[2] > 10**6


def test_nested_blocks_restore_the_thresholds_at_the_outermost_end():
    with full_collections_deferred():
        assert deferring() and gc.get_threshold()[:2] == (700, 10)
        with full_collections_deferred():
            assert deferring()
        assert deferring()
    assert gc.get_threshold() == (700, 10, 10)


def test_an_error_inside_restores_the_thresholds():
    with pytest.raises(ZeroDivisionError), full_collections_deferred():
        raise ZeroDivisionError("inside the block")
    assert gc.get_threshold() == (700, 10, 10)


def test_thresholds_changed_inside_a_block_are_kept():
    with full_collections_deferred():
        gc.set_threshold(5000, 20, 30)
    assert gc.get_threshold() == (5000, 20, 30)


def test_blocks_of_two_threads_defer_until_both_end():
    entered, leave_first, first_done = threading.Event(), threading.Event(), threading.Event()

    def first():
        with full_collections_deferred():
            entered.set()
            leave_first.wait(10)
        first_done.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(10)
    with full_collections_deferred():
        leave_first.set()
        assert first_done.wait(10)
        assert deferring()  # the other thread's block ended, this one is still open
    thread.join()
    assert gc.get_threshold() == (700, 10, 10)


class FullCollections:
    """Counts the collections of the oldest generation that start while it is on."""

    def __init__(self):
        self.count = 0

    def __call__(self, phase, info):
        if phase == "start" and info["generation"] == 2:
            self.count += 1

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc_info):
        gc.callbacks.remove(self)


def survivors(kept):
    """Allocates 300,000 tracked objects that stay alive, as a large trace's equations do."""
    kept.extend([[i] for i in range(300_000)])


def test_a_trace_and_its_lowering_run_without_full_collections():
    seen, kept = [], []
    with FullCollections() as outside:
        survivors(kept)
    assert outside.count > 0  # (the same allocations outside a trace start full collections)
    kept.clear()
    gc.collect()  # (the oldest generation is empty again)

    def f(x):
        seen.append(deferring())
        survivors(kept)
        return xnp.sin(x) * 2

    x = xnp.arange(4.0)
    with FullCollections() as inside:
        traced = numax.jit(f).trace(x)
        assert inside.count == 0
        assert "sine" in traced.lower().as_text()
    assert seen == [True]
    assert gc.get_threshold() == (700, 10, 10)
    np.testing.assert_allclose(np.asarray(numax.jit(f)(x)), np.sin(np.arange(4.0)) * 2, rtol=1e-6)


def test_a_traced_function_that_raises_leaves_the_thresholds_as_they_were():
    def f(x):
        raise ValueError("from the traced function")

    with pytest.raises(ValueError, match="from the traced function"):
        numax.jit(f)(xnp.ones(2))
    assert gc.get_threshold() == (700, 10, 10)
