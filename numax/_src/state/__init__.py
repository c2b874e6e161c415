"""`jax._src.state`: the types of mutable array references (`types.AbstractRef`, the type of a `numax.ref.Ref`)."""

from numax._src.state.types import AbstractRef  # noqa: F401
