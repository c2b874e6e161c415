"""jax's private module paths (`jax._src.core`, `jax._src.util`, `jax._src.config`, `jax._src.interpreters.mlir`)
that JAX's own documentation and extension libraries import, each a thin adapter onto the numax object that does
the job. Only the names those users reach for are here; anything else raises AttributeError, as a missing name
should. Nothing is imported until a submodule is."""
