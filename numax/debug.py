"""`numax.debug`: printing and host callbacks that run each time a (possibly compiled) function runs."""

import sys

import numpy as np

from numax.lax.callbacks import debug_callback, pure_callback

__all__ = ["callback", "print", "pure_callback"]


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """Calls `callback(*args, **kwargs)` on host values for its side effect, eagerly or inside jit.

    Array arguments arrive as numpy arrays. Returns None; the call is never dropped as dead code.
    The debug callbacks of one function body always run in program order (each waits for the one
    before it), so `ordered=True` holds within a program (numax threads no token between programs).
    `partitioned` is accepted for JAX compatibility.
    """
    debug_callback(callback, *args, ordered=ordered, **kwargs)


def print(fmt, *args, ordered=False, partitioned=False, **kwargs):  # noqa: A001  (JAX's name)
    """Prints `fmt.format(*args, **kwargs)` with the runtime values of the arguments, each time it runs.

    Unlike Python's print inside `numax.jit`, which runs once while tracing and shows tracers, this
    prints the actual numpy values every time the compiled function is called.
    """
    print_options = np.get_printoptions()

    def show(*values, **named):
        with np.printoptions(**print_options):
            sys.stdout.write(fmt.format(*values, **named) + "\n")

    show.__qualname__ = f"debug.print({fmt!r})"
    debug_callback(show, *args, ordered=ordered, **kwargs)
