"""Configuration as a JAX user sets it: `JAX_*` environment variables (and numax's own `NUMAX_*`, which win),
`numax.config.update` with JAX's names, context managers, and the `jax_debug_nans`/`jax_debug_infs` checks."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as xnp

_PROBE = """
import json, sys
import numax, numax.numpy as xnp
c = numax.config
report = {"x64": c.enable_x64, "dtype": str(xnp.arange(2.0).dtype), "log_compiles": c.log_compiles,
          "disable_jit": c.disable_jit, "debug_nans": c.debug_nans, "debug_infs": c.debug_infs,
          "platform": c.platform_name, "backend": numax.default_backend()}
try:
    xnp.log(-1.0)
    report["nan_error"] = None
except FloatingPointError as error:
    report["nan_error"] = str(error)
print(json.dumps(report))
"""


def _probe(**environment):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "NUMAX_"))}
    env.update(environment)
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    return done


def test_jax_environment_variables_are_read():
    done = _probe(JAX_ENABLE_X64="1", JAX_LOG_COMPILES="true", JAX_DISABLE_JIT="yes", JAX_DEBUG_NANS="on",
                  JAX_PLATFORMS="cpu")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["x64"] is True and report["dtype"] == "float64"
    assert report["log_compiles"] is True and report["disable_jit"] is True and report["debug_nans"] is True
    assert report["debug_infs"] is False
    assert report["platform"] == "cpu" and report["backend"] == "cpu"
    assert report["nan_error"] == "invalid value (nan) encountered in log"


def test_numax_variables_win_over_jax_ones_and_bad_values_are_refused():
    done = _probe(JAX_ENABLE_X64="1", NUMAX_ENABLE_X64="0", JAX_DEBUG_INFS="1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["x64"] is False and report["dtype"] == "float32" and report["debug_infs"] is True
    refused = _probe(JAX_ENABLE_X64="maybe")
    assert refused.returncode != 0
    assert "ValueError: invalid truth value 'maybe' for environment variable JAX_ENABLE_X64" in refused.stderr


def test_update_with_jax_names_and_unknown_names():
    assert numax.config.jax_enable_x64 is numax.config.enable_x64 is False
    numax.config.update("jax_enable_x64", True)
    try:
        assert xnp.arange(2.0).dtype == np.float64 and numax.config.read("jax_enable_x64") is True
    finally:
        numax.config.update("jax_enable_x64", False)
    assert xnp.arange(2.0).dtype == np.float32
    with pytest.raises(AttributeError, match="unknown numax config option 'jax_not_a_flag'"):
        numax.config.update("jax_not_a_flag", True)


def test_enable_x64_context_nests_and_restores():
    with numax.enable_x64():
        assert xnp.ones(1).dtype == np.float64
        with numax.enable_x64(False):
            assert xnp.ones(1).dtype == np.float32
        assert numax.numpy.asarray(1.0).dtype == np.float64
    assert xnp.ones(1).dtype == np.float32 and numax.config.enable_x64 is False


# --- jax_debug_nans / jax_debug_infs ------------------------------------------------------------------
@pytest.fixture
def debug_flags():
    """Sets numax's and jax's debug flags together; both are restored."""
    def set_flags(nans, infs):
        for name, value in (("jax_debug_nans", nans), ("jax_debug_infs", infs)):
            numax.config.update(name, value)
            jax.config.update(name, value)
        jax.clear_caches()  # jax decides on the checks when it caches an executable, numax at every call

    yield set_flags
    set_flags(False, False)


def _error_of(call):
    try:
        call()
    except FloatingPointError as error:
        return str(error)
    return None


@pytest.mark.parametrize("flags", [(True, False), (False, True)], ids=["nans", "infs"])
def test_debug_checks_match_jax(debug_flags, flags):
    debug_flags(*flags)

    def f(lib, x):
        return lib.log(x) * 2

    cases = [
        ("eager log(-1)", lambda lib: lib.log(-1.0)),
        ("eager divide by zero", lambda lib: lib.divide(1.0, 0.0)),
        ("jit, first primitive", lambda lib: (numax.jit if lib is xnp else jax.jit)(lambda x: f(lib, x))(-1.0)),
        ("jit, clean", lambda lib: (numax.jit if lib is xnp else jax.jit)(lambda x: f(lib, x))(2.0)),
        ("grad of jit", lambda lib: (numax.grad if lib is xnp else jax.grad)(
            (numax.jit if lib is xnp else jax.jit)(lambda x: lib.sqrt(x)))(0.0)),
        ("integers are not checked", lambda lib: lib.arange(3) // 1),
        ("eager arrays of one shape", lambda lib: lib.ones(3) / (lib.ones(3) - 1)),
    ]
    debug_flags(False, False)
    xnp.ones(3) / (xnp.ones(3) - 1)  # numax's executables exist already: the checks still run
    debug_flags(*flags)
    raised = 0
    for name, call in cases:
        error = _error_of(lambda: call(xnp))
        assert error == _error_of(lambda: call(jnp)), name
        raised += error is not None
    assert raised == (2 if flags[0] else 3)  # eagerly and through jit or grad


def test_debug_nans_off_lets_nan_through(debug_flags):
    debug_flags(False, False)
    assert np.isnan(float(numax.jit(lambda x: xnp.log(x))(-1.0)))


# --- 64-bit requests with 64-bit mode off --------------------------------------------------------------
_DTYPE_REQUESTS = [
    ("zeros", lambda np_, rnd: np_.zeros(2, "float64")),
    ("asarray", lambda np_, rnd: np_.asarray([1.0], dtype=np.float64)),
    ("arange", lambda np_, rnd: np_.arange(3, dtype="int64")),
    ("astype", lambda np_, rnd: np_.ones(2).astype(np.dtype("float64"))),
    ("ones_like", lambda np_, rnd: np_.ones_like(np_.ones(2), dtype=np.int64)),
    ("sum", lambda np_, rnd: np_.sum(np_.ones(3), dtype=np.float64)),
    ("cumsum", lambda np_, rnd: np_.cumsum(np_.ones(3), dtype=np.float64)),
    ("normal", lambda np_, rnd: rnd.normal(rnd.PRNGKey(0), (2,), dtype=np.float64)),
    ("randint", lambda np_, rnd: rnd.randint(rnd.PRNGKey(0), (2,), 0, 3, dtype=np.int64)),
    (None, lambda np_, rnd: np_.zeros(2, float)),  # Python's types name the defaults: no warning
    (None, lambda np_, rnd: np_.zeros(2, np.float32)),
    (None, lambda np_, rnd: np_.arange(3.0)),
]


@pytest.mark.parametrize("function, call", _DTYPE_REQUESTS, ids=[f"{f}-{i}" for i, (f, _) in
                                                                  enumerate(_DTYPE_REQUESTS)])
def test_64_bit_requests_warn_as_in_jax_while_x64_is_off(function, call):
    import warnings

    def caught(np_, rnd):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = call(np_, rnd)
        return out, [w for w in seen if "Explicitly requested dtype" in str(w.message)]

    ours, our_warnings = caught(xnp, numax.random)
    theirs, their_warnings = caught(jnp, jax.random)
    assert ours.dtype == theirs.dtype and bool(our_warnings) == bool(their_warnings) == (function is not None)
    if function is not None:
        message = str(our_warnings[0].message)
        assert our_warnings[0].category is UserWarning and f"requested in {function} " in message
        assert our_warnings[0].filename == __file__  # points at the caller's line
    with numax.enable_x64(), warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is truncated with 64-bit mode on
        call(xnp, numax.random)


def test_gpu_client_choice_is_checked_and_part_of_the_compile_cache_key():
    from numax.lowering import xla

    assert numax.config.read("numax_gpu_client") in ("stream_executor", "tfrt")  # (NUMAX_GPU_CLIENT may say)
    with pytest.raises(ValueError, match="numax_gpu_client"):
        numax.config.update("numax_gpu_client", "cuda_graphs")
    backend = xla.get_backend("cpu")
    fields = xla._cache_key_fields("module {}", backend, backend.devices[:1], 0, 1, 1, {}, False)
    other_client = xla.Backend("cpu", backend.client, "tfrt")
    other = xla._cache_key_fields("module {}", other_client, backend.devices[:1], 0, 1, 1, {}, False)
    assert fields["platform"] != other["platform"]  # executables of one client are never loaded by the other


# --- every jax option is accepted, checked as jax checks it, and readable back ---------------------------------
# Flags that only jax's own test utilities define (when jax._src.test_util is imported): not options of jax's.
_JAX_TEST_ONLY = {"jax_test_dut", "jax_num_generated_cases", "max_cases_sampling_retries", "jax_skip_slow_tests",
                  "jax_test_with_persistent_compilation_cache", "test_targets", "exclude_test_targets",
                  "jax_test_num_threads", "hypothesis_profile"}
_JAX_0_11_ONLY = {"jax_use_rgv3", "jax_use_cpp_shard_args", "jax_pallas_auto_assign_collective_ids"}


def _jax_options():
    return sorted(set(jax.config._value_holders) - _JAX_TEST_ONLY)


def _numax_spelling(name):
    return "numax_" + name.removeprefix("jax_")


def test_every_jax_option_is_accepted_and_readable():
    from numax.core.config_options import NO_EFFECT

    no_effect = {row[0] for row in NO_EFFECT}
    assert all(row[3] for row in NO_EFFECT)  # each says why it changes nothing
    values = numax.config.values
    for name in _jax_options() + sorted(_JAX_0_11_ONLY):
        value = numax.config.read(name)
        assert getattr(numax.config, name) == value == values[name] == numax.config.read(_numax_spelling(name))
        numax.config.update(name, value)  # (unchanged)
        if name in jax.config._value_holders and (
                name in no_effect or name in ("jax_numpy_dtype_promotion", "jax_numpy_rank_promotion")):
            assert value == jax.config._value_holders[name].value, name  # jax's default (or environment)
    assert _JAX_0_11_ONLY <= no_effect
    numax.config.update("jax_persistent_cache_enable_xla_caches", "none")  # failed before issue 29
    try:
        assert numax.config.jax_persistent_cache_enable_xla_caches == "none"
    finally:
        numax.config.update("jax_persistent_cache_enable_xla_caches", "xla_gpu_per_fusion_autotune_cache_dir")


def _update_outcome(config, name, value):
    before = config.read(name) if config is numax.config else config._value_holders[name].value
    try:
        config.update(name, value)
    except Exception as error:  # noqa: BLE001  (the class is what is compared)
        return type(error)
    after = config.read(name) if config is numax.config else config._value_holders[name].value
    config.update(name, before)
    return ("stored", after)


def test_option_values_are_checked_as_jax_checks_them():
    from numax.core.config_options import NO_EFFECT

    # (jax freezes its CPU topology options once its backends start, and a test cannot restore them; in numax they
    # change nothing, so there is nothing to freeze: they are ints as jax_random_seed_offset is)
    frozen = {"jax_num_cpu_devices", "jax_cpu_get_local_topology_timeout_minutes",
              "jax_cpu_get_global_topology_timeout_minutes"}
    names = [row[0] for row in NO_EFFECT if row[0] not in _JAX_0_11_ONLY | frozen] + [
        "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion", "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes",
        "jax_compilation_cache_max_size"]
    for name in names:
        for value in ("bogus", 1.5, 7, None, "strict", "raise", "O1", "off"):
            ours, theirs = _update_outcome(numax.config, name, value), _update_outcome(jax.config, name, value)
            assert ours == theirs, (name, value, ours, theirs)


def test_unknown_options_raise_as_in_jax():
    for config in (numax.config, jax.config):
        with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_option"):
            config.update("jax_no_such_option", True)
        with pytest.raises(AttributeError):
            config.jax_no_such_option  # noqa: B018


_ENV_PROBE = """
import json
import jax, numax
names = %r
print(json.dumps({name: [str(numax.config.read(name)), str(jax.config._value_holders[name].value)]
                  for name in names}))
"""


def test_jax_options_are_read_from_the_environment():
    settings = {"JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none", "JAX_DEFAULT_MATMUL_PRECISION": "highest",
                "JAX_NUMPY_RANK_PROMOTION": "raise", "JAX_NUMPY_DTYPE_PROMOTION": "strict",
                "JAX_LEGACY_PRNG_KEY": "warn", "JAX_NUM_CPU_DEVICES": "4", "JAX_ENABLE_CHECKS": "true",
                "JAX_TRACEBACK_FILTERING": "off", "JAX_SEND_TRACEBACK_TO_RUNTIME": "on"}
    names = [variable.lower() for variable in settings]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "NUMAX_"))}
    done = subprocess.run([sys.executable, "-c", _ENV_PROBE % names], env={**env, **settings},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name, (ours, theirs) in json.loads(done.stdout.strip().splitlines()[-1]).items():
        assert ours == theirs, name
    refused = subprocess.run([sys.executable, "-c", "import numax"], env={**env, "JAX_NUM_CPU_DEVICES": "four"},
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "ValueError" in refused.stderr and "jax_num_cpu_devices" in refused.stderr
