"""`numax.scipy`: scipy's special functions and distributions over numax arrays (JAX's numerics)."""

from . import linalg, special, stats  # noqa: F401
