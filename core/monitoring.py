"""The listener registry behind `numax.monitoring` (as `jax.monitoring`): code records named events, durations,
time spans and scalars; every listener registered for that kind is called with the event's name and keywords.
numax records jax's compile events under jax's names (`BACKEND_COMPILE_EVENT`, the compilation cache's
`/jax/compilation_cache/...` events), so metrics collectors written for jax see numax's compiles."""

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
CACHE_MISS_EVENT = "/jax/compilation_cache/cache_misses"

_event_listeners = []
_duration_listeners = []
_time_span_listeners = []
_scalar_listeners = []


def record_event(event, **kwargs):
    """Calls each event listener with `(event, **kwargs)`."""
    for callback in tuple(_event_listeners):
        callback(event, **kwargs)


def record_event_duration_secs(event, duration, **kwargs):
    """Calls each duration listener with `(event, duration, **kwargs)` (`duration` in seconds)."""
    for callback in tuple(_duration_listeners):
        callback(event, duration, **kwargs)


def record_event_time_span(event, start_time, end_time, **kwargs):
    """Calls each time-span listener with `(event, start_time, end_time, **kwargs)` (times in seconds)."""
    for callback in tuple(_time_span_listeners):
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event, value, **kwargs):
    """Calls each scalar listener with `(event, value, **kwargs)`."""
    for callback in tuple(_scalar_listeners):
        callback(event, value, **kwargs)


def register_event_listener(callback):
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback):
    _duration_listeners.append(callback)


def register_event_time_span_listener(callback):
    _time_span_listeners.append(callback)


def register_scalar_listener(callback):
    _scalar_listeners.append(callback)


def _unregister(listeners, callback):
    # jax asserts the callback was registered: unregistering one that was not is an AssertionError there too.
    assert callback in listeners, f"{callback!r} is not a registered listener"
    listeners.remove(callback)


def unregister_event_listener(callback):
    _unregister(_event_listeners, callback)


def unregister_event_duration_listener(callback):
    _unregister(_duration_listeners, callback)


def unregister_event_time_span_listener(callback):
    _unregister(_time_span_listeners, callback)


def unregister_scalar_listener(callback):
    _unregister(_scalar_listeners, callback)


def get_event_listeners():
    return list(_event_listeners)


def get_event_duration_listeners():
    return list(_duration_listeners)


def get_event_time_span_listeners():
    return list(_time_span_listeners)


def get_scalar_listeners():
    return list(_scalar_listeners)


def clear_event_listeners():
    """Removes every listener of every kind."""
    for listeners in (_event_listeners, _duration_listeners, _time_span_listeners, _scalar_listeners):
        listeners.clear()


def timing_listened():
    """Whether anyone listens to durations or time spans (compile paths skip the bookkeeping otherwise)."""
    return bool(_duration_listeners or _time_span_listeners)
