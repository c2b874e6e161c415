"""The persistent compilation cache (lowering/compile_cache.py): hits and misses, what the key covers, fresh
processes and concurrent writers sharing one directory, corrupt and truncated entries, the thresholds, the
size bound's LRU eviction, host callbacks, sharded programs and the log line."""

import contextlib
import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from numax.core.config import Config
from numax.lowering import compile_cache, xla

import numax
import numax.numpy as xnp
from numax.sharding import NamedSharding, P

_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size")


@contextlib.contextmanager
def _cache_settings(**values):
    """The cache's settings (by JAX's names, without the jax_ prefix) for a block, restored after."""
    previous = {name: numax.config.read(name) for name in _SETTINGS}
    try:
        for name, value in values.items():
            numax.config.update(f"jax_{name}", value)
        yield
    finally:
        for name, value in previous.items():
            numax.config.update(name, value)


@pytest.fixture
def cache_dir(tmp_path):
    """The cache on in an empty directory, writing every executable; counters zeroed; in-memory caches
    cleared before and after, so that every program reaches the compiler (or the cache) again."""
    root = str(tmp_path / "cache")
    numax.clear_caches()
    compile_cache.reset_statistics()
    with _cache_settings(compilation_cache_dir=root, persistent_cache_min_compile_time_secs=0,
                         persistent_cache_min_entry_size_bytes=0, compilation_cache_max_size=-1):
        yield root
    numax.clear_caches()


def _counts():
    stats = compile_cache.statistics
    return stats.hits, stats.misses, stats.writes


def _entries(root):
    return sorted(name for name in os.listdir(root) if name.endswith(".xla")) if os.path.isdir(root) else []


def _program(x):
    return xnp.tanh(x) * 3.0 - x


_X = np.linspace(-2.0, 2.0, 6, dtype=np.float32)
_EXPECTED = np.tanh(_X) * 3.0 - _X


def _run_jitted():
    numax.clear_caches()
    return np.asarray(numax.jit(_program)(_X))


def test_second_compile_loads_the_stored_executable(cache_dir):
    np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert _counts() == (0, 1, 1) and len(_entries(cache_dir)) == 1
    np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert _counts() == (1, 1, 1)


_TEXT = """module @keyed {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"""


def _compile(text=_TEXT, device_index=0, **options):
    backend = xla.get_backend("cpu")
    return xla.compile_module(text, backend, [backend.devices[device_index]], **options)


def test_a_runtime_that_cannot_load_executables_compiles_and_keeps_the_entry(cache_dir, monkeypatch):
    """A GPU client loads a stored executable only while a GPU plugin is registered under its platform's own
    name ("Supported GPU plugins not found" otherwise, bench/probes/gpu_cache_probe.py), which numax leaves to jax. Then
    nothing is read: a miss, no warning, and the entry stays for processes that can load it."""
    assert xla.get_backend("cpu").loads_serialized_executables()
    gpu_without_plugin = type("GpuBackend", (), {"platform": "gpu"})()
    assert xla.Backend.loads_serialized_executables(gpu_without_plugin) is any(
        xla.xc.pjrt_plugin_loaded(name) and xla.xc.pjrt_plugin_initialized(name) for name in ("cuda", "rocm"))
    np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    stored = _entries(cache_dir)
    monkeypatch.setattr(xla.Backend, "loads_serialized_executables", lambda self: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert _counts() == (0, 2, 2) and _entries(cache_dir) == stored
    monkeypatch.undo()
    np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert _counts() == (1, 2, 2)


def test_the_key_covers_text_options_devices_flags_and_callback_count(cache_dir, monkeypatch):
    _compile()
    assert _counts() == (0, 1, 1)
    _compile()
    assert _counts() == (1, 1, 1)

    def with_other_xla_flags():
        monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_min_max")
        return _compile()

    variants = [
        lambda: _compile(_TEXT.replace("multiply", "add")),
        lambda: _compile(compiler_options={"xla_cpu_enable_fast_math": True}),
        lambda: _compile(device_index=1),
        lambda: _compile(host_callbacks=[print]),
        with_other_xla_flags,
    ]
    for count, variant in enumerate(variants, start=2):
        variant()
        assert _counts() == (1, count, count), count
    assert len(_entries(cache_dir)) == len(variants) + 1


def test_a_loaded_executable_runs_on_the_device_it_was_compiled_for(cache_dir):
    device = xla.get_backend("cpu").devices[1]
    for _ in range(2):
        numax.clear_caches()
        with numax.default_device(device):
            out = numax.jit(_program)(_X)
        assert out.devices() == {device}
        np.testing.assert_allclose(np.asarray(out), _EXPECTED, rtol=1e-6)
    assert _counts() == (1, 1, 1)


def test_cache_off_without_a_directory_or_with_max_size_zero(cache_dir):
    with _cache_settings(compilation_cache_dir=None):
        _run_jitted()
    with _cache_settings(compilation_cache_max_size=0):
        _run_jitted()
    assert _counts() == (0, 0, 0) and _entries(cache_dir) == []


def test_eager_primitives_use_the_cache(cache_dir):
    x = np.arange(5, dtype=np.float32)
    for expected_hits in (0, 1):
        numax.clear_caches()
        np.testing.assert_allclose(np.asarray(xnp.expm1(x)), np.expm1(x), rtol=1e-6)
        assert compile_cache.statistics.hits == expected_hits


def test_log_compiles_says_when_an_executable_came_from_the_cache(cache_dir, capsys):
    _run_jitted()
    previous = numax.config.log_compiles
    numax.config.update("jax_log_compiles", True)
    try:
        _run_jitted()
    finally:
        numax.config.update("jax_log_compiles", previous)
    assert "from the persistent compilation cache" in capsys.readouterr().err


# --- several processes -----------------------------------------------------------------------------------
_WORKER = """
import json, sys
import numpy as np
import numax, numax.numpy as xnp
from numax.lowering import compile_cache
x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
jitted = numax.jit(lambda v: xnp.sin(v) @ xnp.cos(v) + xnp.sum(v * v))(x)
eager = xnp.exp(x) / 2
s = compile_cache.statistics
print(json.dumps({"jitted": float(jitted), "eager": np.asarray(eager).tolist(), "hits": s.hits,
                  "misses": s.misses, "writes": s.writes}))
"""


def _worker_environment(root):
    environment = dict(os.environ, NUMAX_COMPILATION_CACHE_DIR=root, NUMAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                       NUMAX_LOG_COMPILES="1")
    environment.pop("JAX_COMPILATION_CACHE_DIR", None)
    return environment


def _start_worker(root):
    return subprocess.Popen([sys.executable, "-c", _WORKER], env=_worker_environment(root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(process):
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1]), err


def test_fresh_processes_share_a_directory_and_write_it_concurrently(tmp_path):
    root = str(tmp_path / "shared")
    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    expected_jitted, expected_eager = np.sin(x) @ np.cos(x) + np.sum(x * x), np.exp(x) / 2
    writers = [_start_worker(root), _start_worker(root)]  # the same keys, written at the same time
    for report, _ in map(_finish, writers):
        np.testing.assert_allclose(report["jitted"], expected_jitted, rtol=1e-5)
        np.testing.assert_allclose(report["eager"], expected_eager, rtol=1e-6)
    assert not [name for name in os.listdir(root) if name.endswith(".tmp")]
    stored = len(_entries(root))
    assert stored >= 2
    report, log = _finish(_start_worker(root))
    assert report["misses"] == 0 and report["writes"] == 0 and report["hits"] == stored
    assert log.count("from the persistent compilation cache") == stored
    np.testing.assert_allclose(report["jitted"], expected_jitted, rtol=1e-5)
    np.testing.assert_allclose(report["eager"], expected_eager, rtol=1e-6)


def test_threads_compiling_the_same_program_together(cache_dir):
    results, barrier = [], threading.Barrier(4)

    def compile_and_check():
        barrier.wait()
        results.append(xla.serialize(_compile()))

    threads = [threading.Thread(target=compile_and_check) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len(_entries(cache_dir)) == 1
    hits, misses, writes = _counts()
    assert hits + misses == 4 and writes == misses
    compile_cache.reset_statistics()
    _compile()
    assert _counts() == (1, 0, 0)  # the entry the writers left is whole


# --- unusable entries ------------------------------------------------------------------------------------
def _flip_payload_byte(path):
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    return bytes(data)


def _truncate(path):
    return open(path, "rb").read()[: os.path.getsize(path) * 2 // 3]


def _rewrite_with_garbage_payload(path):
    """A whole, checksummed entry for the right key whose payload the runtime cannot load."""
    key = os.path.basename(path)[:-len(".xla")]
    compile_cache._store(os.path.dirname(path), key, b"\x00not an executable\x00" * 8)
    return open(path, "rb").read()


@pytest.mark.parametrize("damage", [_flip_payload_byte, _truncate, _rewrite_with_garbage_payload],
                         ids=["corrupt", "truncated", "rejected"])
def test_an_unusable_entry_is_reported_deleted_and_recompiled(cache_dir, damage):
    _run_jitted()
    [name] = _entries(cache_dir)
    path = os.path.join(cache_dir, name)
    good = open(path, "rb").read()
    damaged = damage(path)
    with open(path, "wb") as file:
        file.write(damaged)
    compile_cache.reset_statistics()
    with pytest.warns(RuntimeWarning, match="persistent compilation cache") as warned:
        np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert len([w for w in warned if "persistent compilation cache" in str(w.message)]) == 1
    stats = compile_cache.statistics
    assert (stats.hits, stats.misses, stats.discarded, stats.writes) == (0, 1, 1, 1)
    assert len(open(path, "rb").read()) == len(good)  # the recompiled program was stored in its place
    np.testing.assert_allclose(_run_jitted(), _EXPECTED, rtol=1e-6)
    assert compile_cache.statistics.hits == 1


# --- thresholds and the size bound -----------------------------------------------------------------------
def test_thresholds_default_to_jax_s():
    names = ["jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes",
             "jax_compilation_cache_max_size", "jax_enable_compilation_cache"]
    variables = [name.upper() for name in names] + [name.replace("jax_", "numax_").upper() for name in names]
    with pytest.MonkeyPatch.context() as patch:
        for variable in variables:
            patch.delenv(variable, raising=False)
        fresh = Config()
    # jax's defaults, read in a process whose environment sets none of them (the suite sets some for its caches)
    environment = {k: v for k, v in os.environ.items() if k not in variables}
    script = f"import jax, json; print(json.dumps([getattr(jax.config, name) for name in {names!r}]))"
    jax_defaults = json.loads(subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True,
                                             text=True, check=True).stdout.splitlines()[-1])
    assert [fresh.read(name) for name in names] == jax_defaults


def test_fast_compiles_and_small_executables_are_not_written(cache_dir):
    with _cache_settings(persistent_cache_min_compile_time_secs=600.0):
        _run_jitted()
    with _cache_settings(persistent_cache_min_entry_size_bytes=10**9):
        _run_jitted()
    assert compile_cache.statistics.skipped == 2 and _entries(cache_dir) == []
    _run_jitted()
    assert len(_entries(cache_dir)) == 1


def test_the_least_recently_used_entries_are_evicted_past_the_size_bound(cache_dir):
    texts = {name: _TEXT.replace("@keyed", f"@{name}") for name in ("first", "second", "third")}
    keys = {}
    for name in ("first", "second"):
        _compile(texts[name])
        keys[name] = (set(_entries(cache_dir)) - set(keys.values())).pop()
    sizes = [os.path.getsize(os.path.join(cache_dir, key)) for key in keys.values()]
    for age, key in zip((200, 100), keys.values()):  # the first stored long ago, the second since
        past = os.path.getmtime(os.path.join(cache_dir, key)) - age
        os.utime(os.path.join(cache_dir, key), (past, past))
    _compile(texts["first"])  # a hit: now the most recently used
    assert compile_cache.statistics.hits == 1
    with _cache_settings(compilation_cache_max_size=sum(sizes) + max(sizes) // 2):
        _compile(texts["third"])
    remaining = _entries(cache_dir)
    assert compile_cache.statistics.evicted == 1 and keys["second"] not in remaining
    assert keys["first"] in remaining and len(remaining) == 2


# --- host callbacks and several devices --------------------------------------------------------------------
def _with_callback(host):
    return lambda x: numax.pure_callback(host, numax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.0


def test_callbacks_are_rebound_to_the_loading_program_s(cache_dir):
    """Two functions whose modules have the same text share an entry; each runs its own callback."""
    doubled = numax.jit(_with_callback(lambda v: (v * 2).astype(v.dtype)))
    tripled = numax.jit(_with_callback(lambda v: (v * 3).astype(v.dtype)))
    np.testing.assert_allclose(np.asarray(doubled(_X)), _X * 2 + 1, rtol=1e-6)
    numax.clear_caches()
    np.testing.assert_allclose(np.asarray(tripled(_X)), _X * 3 + 1, rtol=1e-6)
    assert _counts() == (1, 1, 1)


def test_a_sharded_program_loads_with_its_layout(cache_dir):
    mesh = numax.make_mesh((4,), ("x",), axis_types=(numax.sharding.AxisType.Auto,))
    sharding = NamedSharding(mesh, P("x"))
    x = numax.device_put(np.arange(16, dtype=np.float32).reshape(8, 2), sharding)
    outputs = []
    for _ in range(2):
        numax.clear_caches()
        outputs.append(numax.jit(lambda v: xnp.sin(v) * 2, out_shardings=sharding)(x))
    assert compile_cache.statistics.hits >= 1
    for out in outputs:
        np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(x)) * 2, rtol=1e-6)
        assert out.sharding.devices_indices_map((8, 2)) == sharding.devices_indices_map((8, 2))
