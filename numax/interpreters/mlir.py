"""`jax.interpreters.mlir`: the public names of `numax._src.interpreters.mlir` (see there)."""

from numax._src.interpreters.mlir import *  # noqa: F401, F403
from numax._src.interpreters.mlir import __all__  # noqa: F401
