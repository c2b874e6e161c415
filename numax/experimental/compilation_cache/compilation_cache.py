"""jax.experimental.compilation_cache.compilation_cache: `set_cache_dir` and `reset_cache` over numax's persistent
compilation cache (lowering/compile_cache.py)."""

from numax.core.config import config
from numax.lowering import compile_cache


def set_cache_dir(path) -> None:
    """Sets the persistent compilation cache directory (the option `jax_compilation_cache_dir`): jitted functions
    are then stored in `path` and loaded from it instead of compiled again, also by later processes. The
    directory must be trusted: loading an entry runs the machine code in it."""
    config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
    """Back to a pristine state: the cache's statistics are zeroed and the entries already reported as unusable
    may be reported again. (numax's cache holds no other state: each compile reads the options anew.)"""
    compile_cache.reset_statistics()
