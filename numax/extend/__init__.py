"""`jax.extend`: the extension API for library authors, as numax provides it. `numax.extend.core` holds the IR and
primitive names (`Primitive`, `Jaxpr`, `ClosedJaxpr`, `Literal`, `Var`, `jaxpr_as_fun`, ...) and
`numax.extend.core.primitives` numax's lax primitives; lowering rules are registered through
`numax.interpreters.mlir`; `linear_util` wraps functions for jax-style tracing helpers (`numax.api_util`,
`numax.interpreters.partial_eval`), `source_info_util` takes source-location exclusions. The submodules load on
first use."""

from numax.core.lazy_imports import defer_imports as _defer_imports

_defer_imports(globals(), {"core": (), "linear_util": (), "source_info_util": ()})
