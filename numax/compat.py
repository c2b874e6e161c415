"""Run code written for jax on numax, unchanged: `numax.compat.install()` makes `import jax` (and every
`jax.*` module) import numax's module of the same name, so libraries built on jax (optax, flax, chex, equinox)
and scripts that cannot be edited run on numax. `python -m numax.run script.py [args]` does the same for a
whole script.

Under the switch every `jax.*` module *is* numax's (the same module object, registered under both names):
`jax.numpy` is `numax.numpy`, `jax.lax` is `numax.lax`, `jax._src.core` is `numax._src.core`. `jax` itself is a
view of `numax` whose `__version__` and `__version_info__` are those of the jax API numax follows
(`numax.version`), so code that compares versions takes jax's current branch. A `jax.*` module that numax
lacks fails to import with ModuleNotFoundError naming both; jaxlib is left alone (numax runs on it).

A process must never mix the two: `install()` refuses (RuntimeError) once jax itself was imported, and jax
cannot be imported after it. Code that needs jax as well (a test oracle) runs the switched side in a
subprocess.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types

from numax._src import modules_elsewhere

_JAX = "jax"


# jax modules whose numax counterpart has another path: `numax.core` is numax's engine package, and the public
# names of `jax.core` are a subset of those `numax._src.core` (`jax._src.core`) maps; some `jax._src` modules are
# numax modules elsewhere (numax._src.modules_elsewhere).
_RENAMED = {"jax.core": "numax._src.core"}
_RENAMED.update({f"jax._src.{name}": path for name, path in modules_elsewhere.items()})


def _numax_name(jax_name):
    return _RENAMED.get(jax_name) or "numax" + jax_name[len(_JAX):]


def _is_jax_module_name(name):
    return name == _JAX or name.startswith(_JAX + ".")


class _NumaxModuleLoader(importlib.abc.Loader):
    """Loads a `jax.*` name as the numax module of the same path: the import system registers numax's own
    module object under the jax name."""

    def __init__(self, numax_module):
        self.numax_module = numax_module
        self.numax_spec = numax_module.__spec__

    def create_module(self, spec):
        return self.numax_module

    def exec_module(self, module):
        # The import system stamped the jax-named spec onto the module; numax's module keeps its own.
        module.__spec__ = self.numax_spec


class _JaxPackage(types.ModuleType):
    """`jax`: numax's top-level namespace under jax's name and version. Reads fall through to `numax`."""

    def __init__(self, numax_package):
        super().__init__(_JAX, numax_package.__doc__)
        from numax import version

        self.__path__ = []  # a package: its submodules come from the finder
        self.__file__ = numax_package.__file__
        self.__version__ = version.__version__
        self.__version_info__ = version.__version_info__
        self._numax = numax_package

    def __getattr__(self, name):
        renamed = _RENAMED.get(f"{_JAX}.{name}")
        if renamed is not None:
            return importlib.import_module(f"{_JAX}.{name}")
        return getattr(self._numax, name)

    def __dir__(self):
        return sorted(set(dir(self._numax)) | set(self.__dict__))


class _JaxPackageLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _JaxPackage(importlib.import_module("numax"))

    def exec_module(self, module):
        pass


class _JaxIsNumaxFinder(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path`: answers every `jax` and `jax.*` import with numax's module."""

    def find_spec(self, fullname, path=None, target=None):
        if not _is_jax_module_name(fullname):
            return None
        if fullname == _JAX:
            return importlib.util.spec_from_loader(_JAX, _JaxPackageLoader(), is_package=True)
        numax_name = _numax_name(fullname)
        try:
            numax_module = importlib.import_module(numax_name)
        except ModuleNotFoundError as error:
            if error.name != numax_name:
                raise
            raise ModuleNotFoundError(f"No module named {fullname!r}: numax, which stands in for jax "
                                      f"(numax.compat.install()), has no {numax_name!r}", name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _NumaxModuleLoader(numax_module))


_finder = _JaxIsNumaxFinder()


def is_installed():
    """True when `import jax` imports numax in this process."""
    return _finder in sys.meta_path


def install():
    """Makes `import jax` and `import jax.<module>` import numax's modules in this process, from now on.

    Call it before anything imports jax: if jax itself is already imported, RuntimeError, since the process
    would otherwise hold arrays, tracers and pytree registries of both libraries. Calling it again is a no-op.
    """
    if is_installed():
        return
    imported_jax = sorted(name for name in sys.modules if _is_jax_module_name(name))
    if imported_jax:
        raise RuntimeError(
            "numax.compat.install(): jax is already imported in this process "
            f"({', '.join(imported_jax[:3])}{', ...' if len(imported_jax) > 3 else ''}); code would see jax's "
            "and numax's modules side by side. Install the switch before anything imports jax (first thing in "
            "the program, or run it with `python -m numax.run script.py`).")
    sys.meta_path.insert(0, _finder)
    importlib.import_module(_JAX)
