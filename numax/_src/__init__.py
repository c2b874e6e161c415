"""jax's private module paths (`jax._src.core`, `jax._src.util`, `jax._src.config`, `jax._src.interpreters.mlir`)
that JAX's own documentation and extension libraries import, each a thin adapter onto the numax object that does
the job. Only the names those users reach for are here; anything else raises AttributeError, as a missing name
should. Nothing is imported until a submodule is."""

import importlib

# jax._src modules that are numax modules elsewhere: the XLA runtime's compiler and backends modules hold what tools
# patch in jax's (`backend_compile_and_load`, `_backends`). `from jax._src import compiler` reads them here;
# `import jax._src.compiler` goes through numax.compat, which reads this table.
modules_elsewhere = {"compiler": "numax.lowering.xla.compiler", "xla_bridge": "numax.lowering.xla.backends",
                     "dtypes": "numax.dtypes", "checkify": "numax.experimental.checkify"}  # (flax.nnx reads checkify)


def __getattr__(name):
    if name in modules_elsewhere:
        return importlib.import_module(modules_elsewhere[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
