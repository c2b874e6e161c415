"""`numax.debug`: printing, breakpoints and host callbacks that run each time a (possibly compiled) function runs."""

import functools
import string
import sys
import threading

import numpy as np

from numax.lax.callbacks import debug_callback, pure_callback

__all__ = ["breakpoint", "callback", "print", "pure_callback"]


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """Calls `callback(*args, **kwargs)` on host values for its side effect, eagerly or inside jit.

    Array arguments arrive as numpy arrays. Returns None; the call is never dropped as dead code.
    The debug callbacks of one function body always run in program order (each waits for the one
    before it), so `ordered=True` holds within a program (numax threads no token between programs).
    `partitioned` is accepted for JAX compatibility.
    """
    debug_callback(callback, *args, ordered=ordered, **kwargs)


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting them (they may be tracers):
    missing ones raise IndexError/KeyError, unused ones ValueError, as jax.debug.print's check does."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [arg for i, arg in enumerate(args) if i not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `numax.debug.print`: {unused}")
        unused_names = [name for name in kwargs if name not in used_args]
        if unused_names:
            raise ValueError(f"Unused keyword arguments to `numax.debug.print`: {unused_names}")


def print(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):  # noqa: A001
    """Prints `fmt.format(*args, **kwargs)` with the runtime values of the arguments, each time it runs.

    Unlike Python's print inside `numax.jit`, which runs once while tracing and shows tracers, this
    prints the actual numpy values every time the compiled function is called. The format string is
    checked against the arguments when `print` is called (a missing or unused argument raises there, as
    in JAX), unless `skip_format_check`. Called without `fmt`, returns the printer with these options bound:
    `numax.debug.print(ordered=True)("x = {}", x)`.
    """
    if fmt is None:
        return functools.partial(print, ordered=ordered, partitioned=partitioned, skip_format_check=skip_format_check)
    if not skip_format_check:
        _FormatChecker().format(fmt, *args, **kwargs)
    print_options = np.get_printoptions()

    def show(*values, **named):
        with np.printoptions(**print_options):
            sys.stdout.write(fmt.format(*values, **named) + "\n")

    show.__qualname__ = f"debug.print({fmt!r})"
    debug_callback(show, *args, ordered=ordered, **kwargs)


def visualize_sharding(shape, sharding, **options):
    """Prints how `sharding` lays an array of `shape` out over its devices (with `rich` when installed)."""
    from numax._sharding_text import visualize_sharding as show

    return show(shape, sharding, **options)


def visualize_array_sharding(array, **options):
    """Prints which devices hold which blocks of `array` (a pmap's output, ...)."""
    return visualize_sharding(array.shape, array.sharding, **options)


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False, token=None, **kwargs):  # noqa: A001
    """Opens an interactive debugger where it is called, each time the (possibly jitted or vmapped) function
    runs, with the traced values of the caller's frames concrete.

    `backend` names the debugger ("cli", the default: commands `p`, `pp`, `u`, `d`, `l`, `bt`, `c`, `q`
    read from stdin); `kwargs` go to it (`stdin=`, `stdout=` streams for the CLI). `filter_frames` hides
    numax's own frames, `num_frames` keeps that many from the innermost. `ordered` runs it in program
    order with the other ordered debug callbacks. With `token` (a pytree of arrays) instead, it runs once
    `token` is computed and returns it; the result must then be used, or the breakpoint is dropped.
    """
    from numax import _debugger, lax
    from numax.lowering.array import put

    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    frames = _debugger.capture_frames(filter_frames, num_frames)
    tracers, rebuild = _debugger.split_traced(frames)

    def enter(*values):
        thread_id = None if threading.current_thread() is threading.main_thread() else threading.get_ident()
        debugger = _debugger.get_debugger(backend)
        with _debugger.debug_lock:
            debugger(rebuild([put(np.asarray(value)) for value in values]), thread_id, **kwargs)

    if token is None:
        debug_callback(enter, *tracers, ordered=ordered)
        return None
    token, tracers = lax.stop_gradient((token, tracers))

    def enter_then_pass_token(token_value, *values):
        enter(*values)
        return token_value

    return pure_callback(enter_then_pass_token, token, token, *tracers)
