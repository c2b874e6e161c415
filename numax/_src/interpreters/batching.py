"""`jax.interpreters.batching`: numax's table of batching rules and helpers under jax's names. The table is the one
numax's own primitives fill and `vmap` reads; a rule is `rule(values, dims, **params) -> (out, out_dims)`, a dim
being the operand's batch axis or None where the operand is not batched, as in jax."""

from numax.core.primitives import batching_rules as primitive_batchers
from numax.lax.batching import defbroadcasting, defvectorized

__all__ = ["defbroadcasting", "defvectorized", "primitive_batchers"]
