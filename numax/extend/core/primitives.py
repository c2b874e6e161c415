"""`jax.extend.core.primitives`: the primitives of `numax.lax` under their jax names (`add_p`, `sin_p`,
`dot_general_p`, ...). They are numax.lax's own objects, read from it on demand, so the two never disagree; a name
numax has no primitive for raises AttributeError."""

import numax.lax as _lax


def __getattr__(name):
    if name.endswith("_p") and not name.startswith("_"):
        primitive = getattr(_lax, name, None)
        if primitive is not None:
            return primitive
    raise AttributeError(f"module {__name__!r} has no attribute {name!r} (numax.lax has no primitive of that name)")


def __dir__():
    return sorted(name for name in dir(_lax) if name.endswith("_p") and not name.startswith("_"))
