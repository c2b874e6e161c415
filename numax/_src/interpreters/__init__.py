"""`jax._src.interpreters`: the rule tables of numax's interpreters under jax's names (`ad`, `batching`) and the
registration of lowering rules written against jax's API (`mlir`). `numax.interpreters` re-exports them."""
