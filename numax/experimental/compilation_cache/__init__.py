"""`numax.experimental.compilation_cache`: jax's module path for the persistent cache's functions (in
`compilation_cache`)."""
