"""`numax.scipy`: scipy's special functions, distributions, linalg and signal over numax arrays (JAX's numerics).

Its modules load on first use (`numax.scipy.special.logsumexp`, `import numax.scipy.stats`).
"""

from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"linalg": (), "signal": (), "special": (), "stats": ()})
