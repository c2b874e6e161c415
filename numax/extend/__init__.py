"""`jax.extend`: the extension API for library authors, as numax provides it. `numax.extend.core` holds the IR and
primitive names (`Primitive`, `Jaxpr`, `ClosedJaxpr`, `Literal`, `Var`, `jaxpr_as_fun`, ...) and
`numax.extend.core.primitives` numax's lax primitives; lowering rules are registered through
`numax.interpreters.mlir`. The submodules load on first use."""

from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"core": ()})
