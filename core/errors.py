"""User-facing error types, and finding the user's own source line for a message."""

import os
import sys

_engine_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_engine_dirs = tuple(
    os.path.join(_engine_root, name) + os.sep for name in ("core", "lax", "transforms", "lowering", "numax")
)


def user_frame_summary() -> str:
    """'file.py:LINE (function)' of the innermost frame outside numax's own code."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_engine_dirs) and "contextlib" not in filename:
            return f"{filename}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return "<unknown>"


def user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn`, called from numax's code, that points at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_engine_dirs)
                                 or "contextlib" in frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


class NumaxTypeError(TypeError):
    pass


class ConcretizationTypeError(NumaxTypeError):
    """A traced (abstract) value was used where a concrete Python value is needed."""

    def __init__(self, tracer, context: str):
        location = user_frame_summary()
        super().__init__(
            f"Abstract tracer value encountered where a concrete value is expected: {context}.\n"
            f"The value was {tracer.aval.str_short()} traced by {type(tracer._trace).__name__}, "
            f"at {location}.\n"
            "Its value is not known while the function is being traced (for example inside numax.jit). "
            "If it only depends on arguments that can be known at trace time, mark those with "
            "`static_argnums`/`static_argnames`; for value-dependent control flow use "
            "`numax.lax.cond`, `numax.lax.select`/`numax.numpy.where`, or `numax.lax.while_loop`."
        )


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(ConcretizationTypeError):
    pass


class TracerArrayConversionError(NumaxTypeError):
    def __init__(self, tracer):
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on a traced value "
            f"{tracer.aval.str_short()} at {user_frame_summary()}. Use numax.numpy instead of numpy "
            "inside transformed functions, or numax.pure_callback to run host code."
        )


class UnexpectedTracerError(NumaxTypeError):
    """A tracer escaped the transformation that created it (stored in a global, say). A TypeError, as jax's."""


class NumaxIndexError(IndexError):
    """The base of numax's own IndexErrors (jax's `JAXIndexError`)."""
