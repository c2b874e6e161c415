"""jax's private module paths (`jax._src.core`, `jax._src.util`, `jax._src.config`, `jax._src.interpreters.mlir`)
that JAX's own documentation and extension libraries import, each a thin adapter onto the numax object that does
the job. Only the names those users reach for are here; anything else raises AttributeError, as a missing name
should. Nothing is imported until a submodule is."""

import importlib

# jax._src modules that are numax modules elsewhere: the XLA runtime module holds what tools patch in jax's compiler
# and backend modules (`backend_compile_and_load`, `_backends`). `from jax._src import compiler` reads them here;
# `import jax._src.compiler` goes through numax.compat, which reads this table.
modules_elsewhere = {"compiler": "numax.lowering.xla", "xla_bridge": "numax.lowering.xla", "dtypes": "numax.dtypes",
                     "checkify": "numax.experimental.checkify"}  # (flax.nnx's checkify wrapper reads the last)


def __getattr__(name):
    if name in modules_elsewhere:
        return importlib.import_module(modules_elsewhere[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
