"""`numax.scipy`: scipy's special functions and distributions over numax arrays (JAX's numerics).

Its modules load on first use (`numax.scipy.special.logsumexp`, `import numax.scipy.stats`).
"""

from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"linalg": (), "special": (), "stats": ()})
