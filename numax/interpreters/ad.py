"""`jax.interpreters.ad`: the public names of `numax._src.interpreters.ad` (see there)."""

from numax._src.interpreters.ad import *  # noqa: F401, F403
from numax._src.interpreters.ad import __all__  # noqa: F401
