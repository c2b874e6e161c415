"""`numax.errors`, as `jax.errors`: the exceptions numax raises for user mistakes inside transformations, and
`JaxRuntimeError`, what a failing compiled program raises (jaxlib's class: numax runs programs with jaxlib's
runtime, which loads on first use, so this name does too)."""

from numax.core.avals import InconclusiveDimensionOperation  # noqa: F401
from numax.core.errors import (  # noqa: F401
    ConcretizationTypeError,
    NumaxIndexError,
    NumaxTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

JAXTypeError = NumaxTypeError  # jax's names for the bases of its own TypeErrors and IndexErrors
JAXIndexError = NumaxIndexError


def __getattr__(name):
    if name == "JaxRuntimeError":
        from numax.lowering import xla

        xla.load_jaxlib()
        return xla.xc.XlaRuntimeError  # jaxlib._jax.JaxRuntimeError, under its older name
    if name == "NonConcreteBooleanIndexError":  # numax.numpy's; numax.errors loads before numax.numpy
        from numax.numpy._advanced import NonConcreteBooleanIndexError

        return NonConcreteBooleanIndexError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # (and the two names loaded on first use, JaxRuntimeError and NonConcreteBooleanIndexError)
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "NumaxIndexError",
    "NumaxTypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
