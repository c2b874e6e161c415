"""Global configuration flags (`numax.config.update(name, value)`), read on hot paths as attributes."""

import os


class Config:
    """Flags with JAX's names; read them as attributes (`config.enable_x64`)."""

    _names = {
        "numax_enable_x64": "enable_x64",
        "jax_enable_x64": "enable_x64",
        "numax_log_compiles": "log_compiles",
        "jax_log_compiles": "log_compiles",
        "numax_platform_name": "platform_name",
        "jax_platform_name": "platform_name",
        "numax_platforms": "platform_name",
        "jax_platforms": "platform_name",
        "numax_debug_nans": "debug_nans",
        "numax_disable_jit": "disable_jit",
        "jax_disable_jit": "disable_jit",
        "numax_default_device": "default_device",
        "jax_default_device": "default_device",
    }

    def __init__(self):
        self.enable_x64 = os.environ.get("NUMAX_ENABLE_X64", "0").lower() in ("1", "true")
        self.log_compiles = os.environ.get("NUMAX_LOG_COMPILES", "0").lower() in ("1", "true")
        self.platform_name = os.environ.get("NUMAX_PLATFORMS", "")
        self.debug_nans = False
        self.disable_jit = False  # jit-decorated functions run op by op in Python
        self.default_device = None  # where new arrays and computations go when no argument says (None: the
        # default backend's first device)
        self._jax_semantics = (0, 10, 2)
        self._listeners = []

    @property
    def jax_semantics(self):
        """(major, minor, patch) of the jax release whose behaviour numax follows where jax releases differ:
        the one matching the installed jaxlib (set by the runtime when it loads), as a user's jax and jaxlib
        match. Read-only for users; `numax.config.update` does not reach it."""
        return self._jax_semantics

    def set_jax_semantics(self, version):
        """For the runtime (lowering/xla.py) only: the installed jaxlib's (major, minor, patch)."""
        self._jax_semantics = tuple(int(part) for part in version[:3])

    def update(self, name, value):
        attribute = self._names.get(name)
        if attribute is None:
            raise AttributeError(f"unknown numax config option {name!r}; known: {sorted(self._names)}")
        setattr(self, attribute, value)
        for listener in self._listeners:
            listener(attribute, value)

    def read(self, name):
        return getattr(self, self._names.get(name, name))

    def __getattr__(self, name):
        # Reached only for names that are not attributes: JAX-style flag names (`config.jax_enable_x64`).
        attribute = type(self)._names.get(name)
        if attribute is None:
            raise AttributeError(f"unknown numax config option {name!r}")
        return getattr(self, attribute)

    def on_change(self, listener):
        """Calls `listener(attribute, value)` after every update (caches keyed on a flag use this)."""
        self._listeners.append(listener)

    def __repr__(self):
        return f"Config(enable_x64={self.enable_x64}, log_compiles={self.log_compiles})"


config = Config()
