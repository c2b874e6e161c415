"""`jax._src.config`: the configuration object (`config`) and one state object per option under jax's Python
names (`config.enable_checks`, `config.jax_export_calling_convention_version`, ...), as JAX's docs use them:
`.value` reads the option for the calling thread, and calling the object with a value sets it for the calling
thread within a `with` block or a decorated function (a boolean option without a value turns it on). Both write
numax's one configuration (`numax.config`), so `config.update` and these agree."""

from numax.core.config import config

_NO_VALUE = object()


class State:
    """One configuration option, by the name `numax.config.update` takes."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    @property
    def value(self):
        return config.read(self.name)

    def __call__(self, new_val=_NO_VALUE):
        if new_val is _NO_VALUE:
            # A boolean option's value is always a bool (config checks it so): only those turn on with no value.
            if not isinstance(self.value, bool):
                raise TypeError(f"Context manager for {self.name} config option requires an argument representing "
                                "the new value for the config option.")
            new_val = True
        return config.option(self.name, new_val)

    def __repr__(self):
        return f"State({self.name}={self.value!r})"


def __getattr__(name):
    # jax names most states by the option without its `jax_` prefix, a few with it.
    known = config.values
    for option in (name, "jax_" + name):
        if option in known and not name.startswith("_"):
            state = globals()[name] = State(option)
            return state
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
