"""`jit(f)` made anew for each call shares one cache per function and options, as in JAX: written inline
(`jit(f)(x)` in a loop) it traces and compiles once, and a global the function reads is captured at that trace
(JAX's "sharp bits" page shows the stale value); another set of options is another cache."""

import gc

from harness import jax, jnp
from numax.transforms import jit as jit_module

import numax
import numax.numpy as xnp


def test_inline_jit_compiles_once_per_function_and_options():
    def scaled(x):
        return xnp.sin(x) * 2.0

    x = xnp.arange(4.0)
    results = [numax.jit(scaled)(x) for _ in range(3)]
    assert numax.jit(scaled).stats.compiles == 1
    assert numax.jit(scaled).stats.cache_hits == 2
    for result in results:
        assert (result == results[0]).all()
    numax.jit(scaled, donate_argnums=0)(xnp.arange(4.0))
    assert numax.jit(scaled, donate_argnums=0).stats.compiles == 1  # its own cache
    assert numax.jit(scaled).stats.compiles == 1


def test_a_global_read_by_a_jitted_function_is_captured_as_in_jax():
    seen = {}
    for name, lib, np_ in (("jax", jax, jnp), ("numax", numax, xnp)):
        offset = 0.0

        def add_offset(x, offset_ref=lambda: offset):  # reads the loop's current `offset` when traced
            return x + offset_ref()

        first = lib.jit(add_offset)(np_.float32(4.0))
        offset = 10.0
        second = lib.jit(add_offset)(np_.float32(5.0))  # the cached trace still adds 0
        third = lib.jit(add_offset)(np_.array([4.0]))  # a new signature traces again, with 10
        seen[name] = (float(first), float(second), float(third[0]))
    assert seen["numax"] == seen["jax"] == (4.0, 5.0, 14.0)


def test_the_shared_cache_goes_with_the_function():
    def temporary(x):
        return x + 1

    numax.jit(temporary)(xnp.ones(2))
    assert temporary in jit_module._shared_caches
    del temporary
    gc.collect()
    assert all(getattr(fun, "__name__", None) != "temporary" for fun in list(jit_module._shared_caches))
