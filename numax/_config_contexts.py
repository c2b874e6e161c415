"""JAX's configuration context managers (`numax.debug_nans(True)`, `with numax.log_compiles(): ...`, ...): each
sets its option for the calling thread within a `with` block or a decorated function, as jax's do. A boolean
option's context manager turns it on when called without a value; the others need one (jax's TypeError)."""

from numax.core.config import config

_NO_VALUE = object()

# public name -> (option, is it a boolean option)
_CONTEXTS = {
    "enable_checks": ("jax_enable_checks", True),
    "debug_key_reuse": ("jax_debug_key_reuse", True),
    "check_tracer_leaks": ("jax_check_tracer_leaks", True),
    "enable_custom_prng": ("jax_enable_custom_prng", True),
    "softmax_custom_jvp": ("jax_softmax_custom_jvp", True),
    "debug_nans": ("jax_debug_nans", True),
    "debug_infs": ("jax_debug_infs", True),
    "log_compiles": ("jax_log_compiles", True),
    "no_tracing": ("jax_no_tracing", True),
    "no_execution": ("jax_no_execution", True),
    "explain_cache_misses": ("jax_explain_cache_misses", True),
    "default_matmul_precision": ("jax_default_matmul_precision", False),
    "default_prng_impl": ("jax_default_prng_impl", False),
    "allow_f16_reductions": ("jax_allow_f16_reductions", True),
    "jax2tf_associative_scan_reductions": ("jax2tf_associative_scan_reductions", True),
    "legacy_prng_key": ("jax_legacy_prng_key", False),
    "threefry_partitionable": ("jax_threefry_partitionable", True),
    "array_garbage_collection_guard": ("jax_array_garbage_collection_guard", False),
    "transfer_guard_host_to_device": ("jax_transfer_guard_host_to_device", False),
    "transfer_guard_device_to_device": ("jax_transfer_guard_device_to_device", False),
    "transfer_guard_device_to_host": ("jax_transfer_guard_device_to_host", False),
    "remove_size_one_mesh_axis_from_type": ("jax_remove_size_one_mesh_axis_from_type", True),
}


def _context_manager(public_name, option, boolean):
    def set_for_this_thread(new_val=_NO_VALUE):
        if new_val is _NO_VALUE:
            if not boolean:
                raise TypeError(f"Context manager for {public_name} config option requires an argument "
                                "representing the new value for the config option.")
            new_val = True
        return config.option(option, new_val)

    set_for_this_thread.__name__ = set_for_this_thread.__qualname__ = public_name
    set_for_this_thread.__doc__ = f"Sets `{option}` for the calling thread within a block (or a decorated function)."
    return set_for_this_thread


for _name, (_option, _boolean) in _CONTEXTS.items():
    globals()[_name] = _context_manager(_name, _option, _boolean)


def checking_leaks():
    """`check_tracer_leaks(True)`, as jax's."""
    return globals()["check_tracer_leaks"](True)


def transfer_guard(new_val):
    """Sets all three transfer guards (host to device, device to device, device to host) for the calling thread
    within a block; numax accepts and stores them (its transfers are not guarded)."""
    import contextlib

    stack = contextlib.ExitStack()
    for direction in ("host_to_device", "device_to_device", "device_to_host"):
        stack.enter_context(config.option(f"jax_transfer_guard_{direction}", new_val))
    return stack


__all__ = [*_CONTEXTS, "checking_leaks", "transfer_guard"]
