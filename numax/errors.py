"""`numax.errors`: the exceptions numax raises for user mistakes inside transformations."""

from numax.core.errors import (  # noqa: F401
    ConcretizationTypeError,
    NumaxTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

__all__ = [
    "ConcretizationTypeError",
    "NumaxTypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
