"""`numax.monitoring`, as `jax.monitoring`: register listeners for the events, durations, time spans and scalars
that code records by name. numax's compiles record jax's events (`/jax/core/compile/backend_compile_duration`
with `fun_name`, and the persistent compilation cache's requests, hits and misses)."""

from numax.core.monitoring import (  # noqa: F401
    clear_event_listeners,
    get_event_duration_listeners,
    get_event_listeners,
    get_event_time_span_listeners,
    get_scalar_listeners,
    record_event,
    record_event_duration_secs,
    record_event_time_span,
    record_scalar,
    register_event_duration_secs_listener,
    register_event_listener,
    register_event_time_span_listener,
    register_scalar_listener,
    unregister_event_duration_listener,
    unregister_event_listener,
    unregister_event_time_span_listener,
    unregister_scalar_listener,
)
