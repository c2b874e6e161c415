"""The public-behaviour cases of jax's tests/compilation_cache_test.py (jax-v0.10.2), run on numax and on jax (the
oracle) side by side: each library gets its own empty cache directory, set through jax's option names
(`jax_compilation_cache_dir`, `jax_persistent_cache_min_compile_time_secs`,
`jax_persistent_cache_min_entry_size_bytes`, `jax_enable_compilation_cache`, and
`jax.experimental.compilation_cache.compilation_cache.set_cache_dir`), and the same programs must leave the same
number of entries in each. Arguments are numpy values, so that no eager operation adds entries.

Left out, with the reason: cases that drive jax's internals (`compilation_cache.get_cache_key`,
`put_executable_and_time`, the in-memory `CacheInterface`, `VerificationCache`, `get_file_cache`, mocked
`time.monotonic`, mocked distributed process ids, compile options of `jax_persistent_cache_enable_xla_caches`,
`jax_xla_profile_version`, `xla_dump_to` compiler options), jax's monitoring metrics other than cache hits
(numax has no `jax.monitoring`), jax's log records (numax writes its `log_compiles` lines to stderr, checked in
tests/test_compile_cache.py), jax's read/write warnings for a failing cache backend, and the host-callback case
(numax stores executables with host callbacks and rebinds them when loading, where jax does not store them).
"""

import contextlib
import os

import jax
import numpy as np
import pytest
from jax._src import compilation_cache as jax_cc  # only to point the oracle's cache at a fresh directory
from jax.experimental.compilation_cache import compilation_cache as jax_experimental_cc
from numax.lowering import compile_cache

import numax
from numax.experimental.compilation_cache import compilation_cache as numax_experimental_cc

_OPTIONS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
            "jax_persistent_cache_min_entry_size_bytes", "jax_enable_compilation_cache")


class _Side:
    """One library with its cache directory."""

    def __init__(self, name, module, root):
        self.name, self.lib, self.root = name, module, str(root)
        self.jit, self.pmap, self.lax = module.jit, module.pmap, module.lax

    def entries(self):
        if not os.path.isdir(self.root):
            return 0
        return sum(1 for name in os.listdir(self.root) if name.endswith(("-cache", ".xla")))

    @contextlib.contextmanager
    def options(self, **values):
        """Cache options by jax's names (without the `jax_` prefix) for a block; the in-memory caches emptied
        so that every program reaches the persistent cache."""
        config = self.lib.config
        previous = {name: config.read(name) if self.name == "numax" else getattr(config, name) for name in _OPTIONS}
        try:
            for name, value in values.items():
                config.update(f"jax_{name}", value)
            self._reset()
            yield
        finally:
            for name, value in previous.items():
                config.update(name, value)
            self._reset()

    def _reset(self):
        self.lib.clear_caches()
        if self.name == "jax":
            jax_cc.reset_cache()  # jax opens its cache directory once: reopen it after a change


@pytest.fixture
def sides(tmp_path):
    """Both libraries, each caching every executable in its own empty directory."""
    made = [_Side("jax", jax, tmp_path / "jax"), _Side("numax", numax, tmp_path / "numax")]
    with contextlib.ExitStack() as stack:
        for side in made:
            stack.enter_context(side.options(compilation_cache_dir=side.root, enable_compilation_cache=True,
                                             persistent_cache_min_compile_time_secs=0,
                                             persistent_cache_min_entry_size_bytes=0))
        yield made


def _both(sides, run):
    """`run(side)` for each library: the results, which must agree."""
    results = [run(side) for side in sides]
    assert results[0] == results[1], dict(zip(("jax", "numax"), results))
    return results[0]


def test_jit(sides):
    def run(side):
        f = side.jit(lambda x: x * x)
        counts = [int(f(np.int32(1))), side.entries()]
        counts += [int(side.jit(lambda x: x * x)(np.int32(2))), side.entries()]  # the stored executable
        counts += [float(f(np.float32(1.0))), side.entries()]
        return counts

    assert _both(sides, run) == [1, 1, 4, 1, 1.0, 2]


def test_jit_with_constants(sides):
    def run(side):
        const, const1 = np.array([42, 43], np.int32), np.array([142, 143], np.int32)
        counts = [int(side.jit(lambda x: x * const[0])(np.int32(2))), side.entries()]
        counts += [int(side.jit(lambda x: x * const1[0])(np.int32(3))), side.entries()]  # another constant
        return counts

    assert _both(sides, run) == [84, 1, 426, 2]


def test_cache_hits(sides):
    hits = []

    def listener(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    jax.monitoring.register_event_listener(listener)

    def run(side):
        compile_cache.reset_statistics()
        hits.clear()
        side.jit(lambda x: x + 1)(np.int32(1))
        side.lib.clear_caches()
        out = int(side.jit(lambda x: x + 1)(np.int32(1)))
        return out, side.entries(), len(hits) if side.name == "jax" else compile_cache.statistics.hits

    try:
        assert _both(sides, run) == (2, 1, 1)
    finally:
        jax.monitoring.unregister_event_listener(listener)


def test_set_cache_dir_after_first_compile(sides):
    def run(side):
        with side.options(compilation_cache_dir=None):
            side.jit(lambda x: x + 1)(np.zeros((2, 3), np.float32))
            before = side.entries()
            with side.options(compilation_cache_dir=side.root):
                side.jit(lambda x: x + 2)(np.zeros((2, 3), np.float32))
                return before, side.entries()

    assert _both(sides, run) == (0, 1)


def test_enable_compilation_cache(sides):
    def run(side):
        with side.options(enable_compilation_cache=False):
            side.jit(lambda x: x * x)(np.int32(1))
            disabled = side.entries()
            with side.options(enable_compilation_cache=True):
                side.jit(lambda x: x * 3)(np.int32(2))
                return disabled, side.entries()

    assert _both(sides, run) == (0, 1)


def test_min_entry_size_and_min_compile_time(sides):
    def run(side):
        with side.options(persistent_cache_min_entry_size_bytes=1048576):
            side.jit(lambda x: x + 1)(np.int32(1))
            big_minimum = side.entries()
        with side.options(persistent_cache_min_compile_time_secs=1e5):
            side.jit(lambda x: x + 2)(np.int32(1))
            long_minimum = side.entries()
        side.jit(lambda x: x + 3)(np.int32(1))
        return big_minimum, long_minimum, side.entries()

    assert _both(sides, run) == (0, 0, 1)


def test_pmap(sides):
    def run(side):
        f = side.pmap(lambda x: x - side.lax.psum(x, "i"), axis_name="i")
        counts = [np.asarray(f(np.arange(2, dtype=np.int32))).tolist(), side.entries()]
        counts += [np.asarray(f(np.arange(2, dtype=np.float32))).tolist(), side.entries()]
        return counts

    with jax.default_device(jax.devices()[0]):
        assert _both(sides, run) == [[-1, 0], 1, [-1.0, 0.0], 2]


def test_set_cache_dir(sides, tmp_path):
    """jax.experimental.compilation_cache's `set_cache_dir` points the cache at a directory, as the option does."""
    def run(side):
        module = jax_experimental_cc if side.name == "jax" else numax_experimental_cc
        other = tmp_path / f"{side.name}-other"
        with side.options():
            module.set_cache_dir(str(other))
            module.reset_cache()
            side.jit(lambda x: x - 1)(np.int32(1))
            return len([name for name in os.listdir(other) if name.endswith(("-cache", ".xla"))]), side.entries()

    assert _both(sides, run) == (1, 0)
