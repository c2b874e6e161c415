"""The one compiled part of numax: the native call path of jitted functions (lowering/_native_dispatch.c).

Optional: without a C compiler the build goes on and numax uses its Python path. Everything else about the
package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("numax.lowering._native_dispatch", ["lowering/_native_dispatch.c"], optional=True)])
