"""`numax.version`, as `jax.version`: the version of jax's API that numax follows (`__version__`,
`__version_info__`), which is what code written for jax compares against to pick a code path; numax's own
release is `numax_version`."""

numax_version = "0.1.0"
__version__ = "0.10.2"
_version = __version__
__version_info__ = tuple(int(part) for part in __version__.split("."))
_minimum_jaxlib_version = "0.10.2"
_minimum_jaxlib_version_info = tuple(int(part) for part in _minimum_jaxlib_version.split("."))
