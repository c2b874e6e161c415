"""jaxlib itself: where numax imports jaxlib's runtime, learns which jaxlib is installed, and lets go of what
jaxlib's threads dropped.

jaxlib's runtime costs about a third of `import jax`, so it loads on first need: when the first backend is made,
which every transfer, compile and device query goes through (`load_jaxlib`). Until then the package and each of
its modules that call jaxlib hold `_jax` (jaxlib's runtime extension) and `xc` (`jaxlib.xla_client`) as None;
`load_jaxlib` sets them there. (jaxlib's MLIR bindings cost another ~60 ms and load later still, where `hlo`
first parses a module.)
"""

import gc
import importlib.util
import os
import re
import sys
import threading

from ...core.config import config

# The runtime's one lock: backends and the distributed runtime are set up under it, and the MLIR context and
# LAPACK's kernels once each. Reentrant: making a backend loads jaxlib under it.
lock = threading.RLock()

_jax = None
xc = None


def load_jaxlib():
    """Imports jaxlib's XLA runtime (once)."""
    global _jax, xc
    if xc is not None:
        return
    with lock:
        if xc is not None:
            return
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # read when jaxlib loads
        from jaxlib import _jax as runtime
        from jaxlib import xla_client as client

        for suffix in _READERS:
            module = sys.modules[__package__ + suffix]
            module._jax, module.xc = runtime, client
        _jax, xc = runtime, client  # (xc last: it says that jaxlib is loaded)
        gc.callbacks.append(collect_runtime_garbage)


# The package (`xla.xc.Device`, `xla.xc.XlaRuntimeError`) and its modules that call jaxlib read `_jax` and `xc` as
# plain globals, set by `load_jaxlib`: reading them through this module on every call would add 15-30 ns to each
# transfer, and a module `__getattr__` standing in for them would slow every `xla.` read on the dispatch path.
# (The package has imported them all before anything can load jaxlib.)
_READERS = ("", ".backends", ".compiler", ".hlo", ".transfers")


def collect_runtime_garbage(*_gc_callback_arguments):
    """Drops the Python references that jaxlib's own threads let go of: it defers them (the destination of a
    finished host copy, a source array kept alive until its transfer is done, a host callback's arguments) until
    this is called. jax calls it on every jitted call and at each garbage collection; numax after a readback and,
    as jax does, whenever Python collects garbage (registered when jaxlib loads)."""
    _jax.collect_garbage()


def jaxlib_version() -> str:
    """The installed jaxlib's version string."""
    from jaxlib import version

    return version.__version__


def _installed_jaxlib_release():
    """(major, minor, patch) of the installed jaxlib, from its distribution's metadata directory
    (`jaxlib-<version>.dist-info`): importing jaxlib to ask would import subprocess and more."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is not None and spec.submodule_search_locations:
        site_packages = os.path.dirname(next(iter(spec.submodule_search_locations)))
        for entry in os.listdir(site_packages):
            found = entry.startswith("jaxlib-") and re.fullmatch(r"jaxlib-(\d+)\.(\d+)\.(\d+)[^-]*\.dist-info", entry)
            if found:
                return found.groups()
    return re.findall(r"\d+", jaxlib_version())[:3]


# Where jax releases differ, numax follows the one matching this jaxlib (config.jax_semantics).
config.set_jax_semantics(_installed_jaxlib_release())
