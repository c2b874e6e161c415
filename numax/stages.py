"""`numax.stages`, as `jax.stages`: the types of the ahead-of-time stages of a jit function, `f.trace(...)` ->
`Traced`, `.lower()` -> `Lowered`, `.compile()` -> `Compiled` (numax's own classes, from transforms/aot.py),
`ArgInfo` (one argument leaf of a stage), `CompilerOptions` and the `Wrapped` protocol of jit functions."""

from typing import Any, Protocol

from numax.transforms.aot import ArgInfo, Compiled, Lowered, Traced  # noqa: F401

# The options `Lowered.compile(compiler_options=...)` takes: XLA option names to values.
CompilerOptions = dict[str, str | bool]


class Wrapped(Protocol):
    """What `jit` returns: a callable that can also be traced and lowered ahead of time for some arguments."""

    def __call__(self, *args, **kwargs) -> Any:
        """Runs the function."""

    def trace(self, *args, **kwargs) -> Traced:
        """Traces the function for `args` and `kwargs`."""

    def lower(self, *args, **kwargs) -> Lowered:
        """Traces and lowers the function for `args` and `kwargs`."""
