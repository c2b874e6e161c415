"""Deferred package attributes (PEP 562): child modules that load the first time one of their names is read.

A package keeps `import numax` light by listing the child modules it defers and the names each one provides;
`numax.random`, `numax.lax.qr` or `numax.numpy.linalg` then import their module on first access, and `dir()`
lists them as if loaded. Only misses reach the module-level `__getattr__`, so reading loaded names stays as
fast as in any module. Knows nothing else about numax.
"""

import importlib

# package name -> {deferred module (relative name): the names the package re-exports from it}
deferred_exports = {}


def defer_imports(package_globals, names_by_module):
    """Defers the modules named in `names_by_module` (relative to the package running this call); each maps to
    the names the package re-exports from it (empty for a module reached only as an attribute).

    A deferred child module is also an attribute under its own name; a deeper one (`"transforms.checkpoint"`)
    only provides names. Reading one name binds all of its module's names, so later reads are plain attribute
    reads. A module cannot provide a name equal to its own (`lax.fft` the function, from module `lax.fft`):
    once any code imports such a module, the import system binds the module under that name, over the
    function. Import those eagerly instead.
    """
    package_name = package_globals["__name__"]
    assert not any(module_name in names for module_name, names in names_by_module.items()), names_by_module
    deferred_exports[package_name] = names_by_module
    module_of_name = {module_name: module_name for module_name in names_by_module if "." not in module_name}
    module_of_name.update({name: module_name for module_name, names in names_by_module.items() for name in names})

    def __getattr__(name):
        module_name = module_of_name.get(name)
        if module_name is None:
            raise AttributeError(f"module {package_name!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package_name}.{module_name}")
        for exported in names_by_module[module_name]:
            package_globals[exported] = getattr(module, exported)
        return package_globals[name]

    def __dir__():
        return sorted(set(package_globals) | set(module_of_name))

    package_globals["__getattr__"] = __getattr__
    package_globals["__dir__"] = __dir__

