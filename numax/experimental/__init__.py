"""`numax.experimental`: JAX's experimental API that numax has: `io_callback`, and the modules `checkify`,
`compilation_cache` and `multihost_utils` (loaded on first use, as `from numax.experimental import checkify`)."""

from numax.core.lazy_imports import defer_imports as _defer_imports
from numax.lax.callbacks import io_callback  # noqa: F401

_defer_imports(globals(), {"checkify": (), "compilation_cache": (), "multihost_utils": ()})
