"""The kinds of value a configuration option takes (checked as jax checks them), and the table of jax's options
that numax accepts but that change nothing in numax.

A program written for jax sets options such as `jax_default_matmul_precision` or
`jax_persistent_cache_enable_xla_caches` through `config.update` or `JAX_*` environment variables; numax takes
every option jax 0.10 and 0.11 define once `import jax` has run (jax's test-only flags aside), checks its value as
jax does, and lets it be read back (`config.jax_foo`, `config.read`, `config.values`). The options in
`NO_EFFECT` below are only stored: numax behaves as jax does with the option's default, or the option concerns
machinery numax does not have (the last field of each row says which). The options that act are in `core/config.py`.

Groups of them, and why they change nothing in numax:
- tracing internals (`check_vma`, `jax_auto_pcast`, `jax_use_direct_linearize`, `jax_scan3`, ...): jax's own
  staging and transformation machinery; numax's interpreters are its own.
- checks (`jax_enable_checks`, `jax_check_tracer_leaks`, `jax_debug_key_reuse`, ...): jax's internal checks.
- compiler and caches (`jax_optimization_level`, `jax_enable_pgle`, `jax_persistent_cache_enable_xla_caches`, ...):
  XLA options numax leaves at XLA's defaults; numax's cache keys are its own.
- locations and dumps (`jax_include_full_tracebacks_in_locations`, `jax_dump_ir_to`, ...): numax's StableHLO
  carries no source locations; `Lowered.as_text()` shows the IR.
- logging and guards (`jax_logging_level`, `jax_transfer_guard`, `jax_traceback_filtering`, ...): numax logs
  through its own loggers; transfers are not guarded.
- random numbers (`jax_default_prng_impl`, `jax_threefry_partitionable`, `jax_legacy_prng_key`, ...):
  numax.random is threefry2x32, partitionable, as jax's default.
- numerics (`jax_default_matmul_precision`, `jax_explicit_x64_dtypes`, `jax_allow_f16_reductions`, ...): numax
  computes at each dtype's precision and warns on 64-bit requests, as jax's defaults do.
- devices and hosts (`jax_cuda_visible_devices`, `jax_cross_host_*`, ...): numax's devices come from XLA_FLAGS,
  CUDA_VISIBLE_DEVICES, `jax_num_cpu_devices` (which does count, set before the CPU backend starts) and
  `numax.distributed`.
- other back ends (`jax_pallas_*`, `jax_mosaic_allow_hlo`, `jax_ragged_dot_*`, `jax2tf_*`, ...): not parts of
  numax.
- export (`jax_serialization_version`, `jax_export_calling_convention_version`, ...): numax.export writes its
  own serialization version.
"""

import enum


# --- kinds: how `update` checks a value and how an environment variable's text parses, as jax does ---------------
class Kind:
    """One kind of option value: `check(value, name)` returns the value to store or raises jax's exception for a
    bad one; `parse(text, variable)` reads an environment variable."""

    def __init__(self, check, parse):
        self.check = check
        self.parse = parse


_TRUE = ("y", "yes", "t", "true", "on", "1")
_FALSE = ("n", "no", "f", "false", "off", "0")


def parse_bool(text, variable):
    text = text.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"invalid truth value {text!r} for environment variable {variable}")


def parse_text(text, variable):
    return text


def _parse_with(convert):
    def parse(text, variable):
        try:
            return convert(text)
        except ValueError:
            raise ValueError(f'Invalid value "{text}" for JAX flag {variable.lower()}') from None

    return parse


def _described(value):
    return f"{value} of type {type(value)}"


def _none_or(types, what, type_text, end=""):
    """A value check: `None` or an instance of `types`, else jax's ValueError ("<name>: <what> must be None or of
    type <type_text>, got ...")."""
    def check(value, name):
        if value is not None and not isinstance(value, types):
            raise ValueError(f"{name}: {what} must be None or of type {type_text}, got {_described(value)}{end}")
        return value

    return check


def _check_str(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name}: new string config value must be of type str, got {_described(value)}")
    return value


BOOL = Kind(lambda value, name: bool(value), parse_bool)
INT = Kind(_none_or(int, "new int config value", "int"), _parse_with(int))
FLOAT = Kind(_none_or((float, int), "new float config value", "float"), _parse_with(float))
STR = Kind(_check_str, parse_text)
OPTIONAL_STR = Kind(_none_or(str, "new string config value", "str"), parse_text)
CLIENT_OPTIONS = Kind(_none_or((str, dict), "new value", "dict | str", "."), parse_text)
ANY = Kind(lambda value, name: value, parse_text)  # jax's string-or-object options: any value
# jax's plain flags (not context managers) store any value given to `update`; their environment text parses.
FLAG_BOOL = Kind(lambda value, name: value, parse_bool)
FLAG_INT = Kind(lambda value, name: value, _parse_with(int))


def enum_kind(choices, optional=False):
    """A value from `choices` (or None when `optional`); anything else is jax's ValueError."""
    def check(value, name):
        if (value is None and optional) or (type(value) is str and value in choices):
            return value
        allowed = f"None or in {list(choices)}" if optional else f"in {list(choices)}"
        raise ValueError(f"{name}: new enum value must be {allowed}, got {_described(value)}.")

    def parse(text, variable):
        if text not in choices:
            raise ValueError(f'Invalid value "{text}" for JAX flag {variable.lower()}')
        return text

    return Kind(check, parse)


def enum_class_kind(enum_class):
    """A member of `enum_class`, or a string naming one (else ValueError); other types are jax's TypeError."""
    def check(value, name):
        if isinstance(value, str):
            return enum_class(value)
        if not isinstance(value, enum_class):
            raise TypeError(f"{name}: new enum value must be an instance of {enum_class}, got {_described(value)}.")
        return value

    return Kind(check, _parse_with(enum_class))


class NumpyDtypePromotion(enum.StrEnum):
    STANDARD = "standard"
    STRICT = "strict"


class LegacyPrngKeyState(enum.StrEnum):
    ALLOW = "allow"
    WARN = "warn"
    ERROR = "error"


class RuntimeTracebackMode(enum.StrEnum):
    OFF = "off"
    ON = "on"
    FULL = "full"

    @classmethod
    def _missing_(cls, value):
        return cls.__members__.get(value.upper()) if isinstance(value, str) else None


class ExplicitX64Mode(enum.IntEnum):
    WARN = 1
    ERROR = 2
    ALLOW = 3

    @classmethod
    def _missing_(cls, value):
        return cls.__members__.get(value.upper()) if isinstance(value, str) else None


_TRANSFER_GUARD = enum_kind(("allow", "log", "disallow", "log_explicit", "disallow_explicit"), optional=True)
_EFFORT_LEVELS = enum_kind(("UNKNOWN", "O0", "O1", "O2", "O3"))
_MATMUL_PRECISIONS = enum_kind((
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "ANY_F8_ANY_F8_F32",
    "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32",
    "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32",
    "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"), optional=True)

_TRACING = "jax's own staging and transformation machinery; numax's interpreters are its own"
_CHECKS = "an internal check of jax's"
_COMPILER = "an XLA option or cache detail numax leaves at its default"
_LOCATIONS = "numax's StableHLO carries no source locations and dumps nothing (Lowered.as_text() shows it)"
_LOGGING = "numax logs through its own loggers and guards no transfers"
_RANDOM = "numax.random is threefry2x32, partitionable, as jax's default"
_NUMERICS = "numax computes at each dtype's precision and warns on 64-bit requests, as jax's defaults do"
_DEVICES = "numax's devices come from XLA_FLAGS, CUDA_VISIBLE_DEVICES and numax.distributed"
_BACKENDS = "Pallas, Mosaic, TPU and jax2tf are not parts of numax"
_EXPORT = "numax.export writes its own serialization version"

# (jax's name, kind, jax 0.10.2's default, why it has no effect in numax)
NO_EFFECT = [
    ("check_vma", BOOL, False, _TRACING),
    ("eager_constant_folding", BOOL, False, _TRACING),
    ("jax_auto_pcast", BOOL, True, _TRACING),
    ("jax_custom_vjp3", BOOL, False, _TRACING),
    ("jax_disable_bwd_checks", BOOL, False, _TRACING),
    ("jax_disable_vmap_shmap_error", BOOL, False, _TRACING),
    ("jax_embedded_constants_max_bytes", INT, 32, _TRACING),
    ("jax_mutable_array_checks", BOOL, True, _TRACING),
    ("jax_no_execution", BOOL, False, _TRACING),
    ("jax_no_tracing", BOOL, False, _TRACING),
    ("jax_refs_to_pins", BOOL, False, _TRACING),
    ("jax_remat3", BOOL, False, _TRACING),
    ("jax_scan3", BOOL, False, _TRACING),
    ("jax_softmax_custom_jvp", BOOL, False, _TRACING),
    ("jax_use_direct_linearize", BOOL, True, _TRACING),
    ("jax_use_simplified_jaxpr_constants", BOOL, False, _TRACING),
    ("jax_use_shardy_partitioner", BOOL, True, _TRACING),
    ("jax_use_cpp_shard_args", BOOL, False, _TRACING),  # jax 0.11
    ("jax_use_rgv3", BOOL, True, _TRACING),  # jax 0.11
    ("jax_disallow_mesh_context_manager", BOOL, False, _TRACING),
    ("jax_remove_size_one_mesh_axis_from_type", BOOL, False, _TRACING),
    ("jax_captured_constants_report_frames", INT, 0, _CHECKS),
    ("jax_captured_constants_warn_bytes", INT, 2000000000, _CHECKS),
    ("jax_check_static_indices", BOOL, False, _CHECKS),
    ("jax_check_tracer_leaks", BOOL, False, _CHECKS),
    ("jax_debug_key_reuse", BOOL, False, _CHECKS),
    ("jax_enable_checks", BOOL, False, _CHECKS),
    ("jax_log_checkpoint_residuals", BOOL, False, _CHECKS),
    ("jax_error_checking_behavior_divide", enum_kind(("ignore", "raise")), "ignore", _CHECKS),
    ("jax_error_checking_behavior_nan", enum_kind(("ignore", "raise")), "ignore", _CHECKS),
    ("jax_error_checking_behavior_oob", enum_kind(("ignore", "raise")), "ignore", _CHECKS),
    ("jax_experimental_unsafe_xla_runtime_errors", BOOL, False, _CHECKS),
    ("jax_compilation_cache_check_contents", BOOL, False, _COMPILER),
    ("jax_compilation_cache_expect_pgle", BOOL, False, _COMPILER),
    ("jax_compilation_cache_include_metadata_in_key", BOOL, False, _COMPILER),
    ("jax_compiler_detailed_logging_min_ops", FLAG_INT, 10, _COMPILER),
    ("jax_compiler_enable_remat_pass", BOOL, True, _COMPILER),
    ("jax_disable_most_optimizations", FLAG_BOOL, False, _COMPILER),
    ("jax_enable_pgle", BOOL, False, _COMPILER),
    ("jax_exec_time_optimization_effort", FLOAT, 0.0, _COMPILER),
    ("jax_memory_fitting_effort", FLOAT, 0.0, _COMPILER),
    ("jax_memory_fitting_level", _EFFORT_LEVELS, "O2", _COMPILER),
    ("jax_optimization_level", _EFFORT_LEVELS, "UNKNOWN", _COMPILER),
    ("jax_persistent_cache_enable_xla_caches", OPTIONAL_STR, "xla_gpu_per_fusion_autotune_cache_dir", _COMPILER),
    ("jax_pgle_aggregation_percentile", INT, 90, _COMPILER),
    ("jax_pgle_profiling_runs", INT, 3, _COMPILER),
    ("jax_raise_persistent_cache_errors", BOOL, False, _COMPILER),
    ("jax_remove_custom_partitioning_ptr_from_cache_key", BOOL, False, _COMPILER),
    ("jax_share_binary_between_hosts", BOOL, False, _COMPILER),
    ("jax_share_binary_between_hosts_timeout_ms", INT, 1200000, _COMPILER),
    ("jax_xla_profile_version", INT, 0, _COMPILER),
    ("jax_dump_ir_modes", ANY, "stablehlo", _LOCATIONS),
    ("jax_dump_ir_to", ANY, "", _LOCATIONS),
    ("jax_hlo_source_file_canonicalization_regex", OPTIONAL_STR, None, _LOCATIONS),
    ("jax_include_debug_info_in_dumps", FLAG_BOOL, True, _LOCATIONS),
    ("jax_include_full_tracebacks_in_locations", BOOL, True, _LOCATIONS),
    ("jax_source_url_schema", OPTIONAL_STR, None, _LOCATIONS),
    ("jax_traceback_in_locations_limit", INT, 100, _LOCATIONS),
    ("jax_array_garbage_collection_guard", enum_kind(("allow", "log", "fatal"), optional=True), None, _LOGGING),
    ("jax_debug_leaked_clients_on_clear_backends", BOOL, False, _LOGGING),
    ("jax_debug_log_modules", STR, "", _LOGGING),
    ("jax_distributed_debug", BOOL, False, _LOGGING),
    ("jax_logging_level", enum_kind(("NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), optional=True),
     "NOTSET", _LOGGING),
    ("jax_pprint_use_color", BOOL, True, _LOGGING),
    ("jax_send_traceback_to_runtime", enum_class_kind(RuntimeTracebackMode), RuntimeTracebackMode.OFF, _LOGGING),
    ("jax_thread_guard", BOOL, False, _LOGGING),
    ("jax_traceback_filtering", enum_kind(("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")),
     "auto", _LOGGING),
    ("jax_tracer_error_num_traceback_frames", FLAG_INT, 5, _LOGGING),
    ("jax_transfer_guard", _TRANSFER_GUARD, None, _LOGGING),
    ("jax_transfer_guard_device_to_device", _TRANSFER_GUARD, None, _LOGGING),
    ("jax_transfer_guard_device_to_host", _TRANSFER_GUARD, None, _LOGGING),
    ("jax_transfer_guard_host_to_device", _TRANSFER_GUARD, None, _LOGGING),
    ("jax_default_prng_impl", enum_kind(("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                                         "philox4x32")), "threefry2x32", _RANDOM),
    ("jax_enable_custom_prng", BOOL, False, _RANDOM),
    ("jax_high_dynamic_range_gumbel", BOOL, False, _RANDOM),
    ("jax_legacy_prng_key", enum_class_kind(LegacyPrngKeyState), LegacyPrngKeyState.ALLOW, _RANDOM),
    ("jax_random_seed_offset", INT, 0, _RANDOM),
    ("jax_threefry_gpu_kernel_lowering", BOOL, False, _RANDOM),
    ("jax_threefry_partitionable", BOOL, True, _RANDOM),
    ("jax_allow_f16_reductions", BOOL, True, _NUMERICS),
    ("jax_bcoo_cusparse_lowering", BOOL, False, _NUMERICS),
    ("jax_default_matmul_precision", _MATMUL_PRECISIONS, None, _NUMERICS),
    ("jax_explicit_x64_dtypes", enum_class_kind(ExplicitX64Mode), ExplicitX64Mode.WARN, _NUMERICS),
    ("mock_num_gpu_processes", FLAG_INT, 0, _DEVICES),
    ("jax_backend_target", ANY, "", _DEVICES),
    ("jax_check_proxy_envs", FLAG_BOOL, True, _DEVICES),
    ("jax_cpu_collectives_implementation", enum_kind(("gloo", "mpi", "megascale"), optional=True), "gloo",
     _DEVICES),
    ("jax_cpu_enable_async_dispatch", FLAG_BOOL, True, _DEVICES),
    ("jax_cpu_get_global_topology_timeout_minutes", INT, 5, _DEVICES),
    ("jax_cpu_get_local_topology_timeout_minutes", INT, 2, _DEVICES),
    ("jax_cross_host_transfer_socket_address", ANY, "", _DEVICES),
    ("jax_cross_host_transfer_timeout_seconds", FLAG_INT, None, _DEVICES),
    ("jax_cross_host_transfer_transfer_size", FLAG_INT, None, _DEVICES),
    ("jax_cross_host_transport_addresses", ANY, "", _DEVICES),
    ("jax_cuda_visible_devices", ANY, "all", _DEVICES),
    ("jax_enable_preemption_service", BOOL, True, _DEVICES),
    ("jax_enable_recoverability", BOOL, False, _DEVICES),
    ("jax_force_dcn_cross_host_transfers", FLAG_BOOL, False, _DEVICES),
    ("jax_mock_gpu_topology", ANY, "", _DEVICES),
    ("jax_oneapi_visible_devices", ANY, "all", _DEVICES),
    ("jax_pjrt_client_create_options", CLIENT_OPTIONS, None, _DEVICES),
    ("jax_rocm_visible_devices", ANY, "all", _DEVICES),
    ("jax_sort_devices_by_process_index", FLAG_BOOL, True, _DEVICES),
    ("jax_use_magma", enum_kind(("off", "on", "auto")), "auto", _DEVICES),
    ("jax_xla_backend", ANY, "", _DEVICES),
    ("jax2tf_associative_scan_reductions", BOOL, False, _BACKENDS),
    ("jax2tf_default_native_serialization", BOOL, True, _BACKENDS),
    ("jax_mosaic_allow_hlo", BOOL, False, _BACKENDS),
    ("jax_pallas_auto_assign_collective_ids", enum_kind(("no", "yes", "override")), "no", _BACKENDS),  # jax 0.11
    ("jax_pallas_enable_debug_checks", BOOL, False, _BACKENDS),
    ("jax_pallas_poison_buffers", BOOL, False, _BACKENDS),
    ("jax_pallas_use_mosaic_gpu", BOOL, True, _BACKENDS),
    ("jax_pallas_verbose_errors", FLAG_BOOL, False, _BACKENDS),
    ("jax_ragged_dot_use_gpu_pallas_triton_lowering", BOOL, False, _BACKENDS),
    ("jax_ragged_dot_use_ragged_dot_instruction", BOOL, True, _BACKENDS),
    ("jax_use_emit_pipeline_primitive", BOOL, False, _BACKENDS),
    ("jax_export_calling_convention_version", INT, 10, _EXPORT),
    ("jax_export_ignore_forward_compatibility", BOOL, False, _EXPORT),
    ("jax_serialization_version", INT, 0, _EXPORT),
]
