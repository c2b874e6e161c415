"""`numax.experimental`: JAX's experimental API that numax has: `io_callback`, and the modules
`checkify`, `compilation_cache`, `hijax`, `layout`, `multihost_utils` and `pallas` (loaded on first use, as
`from numax.experimental import checkify`); `cur_qdd` comes from `hijax`."""

from numax.core.lazy_imports import defer_imports as _defer_imports
from numax.lax.callbacks import io_callback  # noqa: F401

_defer_imports(globals(), {"checkify": (), "compilation_cache": (), "hijax": ("cur_qdd",), "layout": (),
                          "multihost_utils": (), "pallas": ()})
