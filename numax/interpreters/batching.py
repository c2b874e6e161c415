"""`jax.interpreters.batching`: the public names of `numax._src.interpreters.batching` (see there)."""

from numax._src.interpreters.batching import *  # noqa: F401, F403
from numax._src.interpreters.batching import __all__  # noqa: F401
