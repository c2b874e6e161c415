"""`jax.extend.core`: the IR objects and primitives that interpreters and custom primitives are written with, as
numax's own (see `numax._src.core` for what each name is). `primitives` holds numax.lax's primitives under jax's
names."""

from numax._src.core import (  # noqa: F401
    ClosedJaxpr,
    InconclusiveDimensionOperation,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    Var,
    find_top_trace,
    get_opaque_trace_state,
    jaxpr_as_fun,
    jaxprs_in_params,
    mapped_aval,
    subjaxprs,
    unmapped_aval,
)
from numax._src.effects import Effect  # noqa: F401  (see numax._src.effects for what effects mean in numax)
from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"primitives": ()})
