"""`jax.interpreters`: `ad`, `batching` and `mlir`, the public names of numax._src.interpreters (where each module
says what its jax names become), and `partial_eval` (running a function on partly known inputs). The submodules
load on first use."""

from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"ad": (), "batching": (), "mlir": (), "partial_eval": ()})
