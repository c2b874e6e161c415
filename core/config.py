"""Configuration flags: `numax.config.update(name, value)` with JAX's names, their `JAX_*`/`NUMAX_*`
environment variables, and thread-local overrides for the context managers (`numax.enable_x64()`,
`disable_jit()`, `default_device()`), read on hot paths as attributes (`config.enable_x64`).

Every option of jax 0.10/0.11 is accepted, checked as jax checks it and readable back; those that change nothing
in numax, and why, are listed in `core/config_options.py`.

As in JAX, `update` and the environment set a flag for every thread; a context manager sets it for the
thread that enters it, over the global value, until it exits.
"""

import contextlib
import os
import threading

from .config_options import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NO_EFFECT,
    OPTIONAL_STR,
    Kind,
    NumpyDtypePromotion,
    enum_class_kind,
    enum_kind,
)


def _one_of(choices, flag):
    """A check that a value is one of `choices` (for `flag` and its environment variable), else a ValueError."""
    def check(value, where=flag):
        if value not in choices:
            raise ValueError(f"{where} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    return check


# jit(fusion=...), the numax_fusion flag and NUMAX_FUSION
check_fusion = _one_of(("xla", "triton"), "numax_fusion")
check_autotune = _one_of(("auto", "always", "never"), "numax_fusion_autotune")
check_gpu_client = _one_of(("stream_executor", "tfrt"), "numax_gpu_client")


class _Flag:
    """One flag: its attribute name, default, the names `update` knows it by (numax's and JAX's) and its kind: how
    `update` checks a value and how its environment variables parse (`NUMAX_*` first, then `JAX_*`; a flag of
    kind None is not read from the environment and not checked)."""

    def __init__(self, attribute, default, names, kind=BOOL):
        self.attribute = attribute
        self.default = default
        self.names = names
        self.kind = kind

    def initial_value(self):
        if self.kind is None:
            return self.default
        for name in self.names:
            text = os.environ.get(name.upper())
            if text is not None:
                return self.kind.parse(text, name.upper())
        return self.default


def _choice(check):
    """The kind of a numax option whose values `check(value, where)` accepts (environment text included)."""
    return Kind(check, check)


_FLAGS = [
    _Flag("enable_x64", False, ["numax_enable_x64", "jax_enable_x64"]),
    _Flag("log_compiles", False, ["numax_log_compiles", "jax_log_compiles"]),
    # Each jit cache miss after a function's first compile logs what changed (the "numax.jit" logger).
    _Flag("explain_cache_misses", False, ["numax_explain_cache_misses", "jax_explain_cache_misses"]),
    # A RecompileWarning once a jit function has compiled more than this many times (0: never).
    _Flag("recompile_limit", 8, ["numax_recompile_limit"], INT),
    _Flag("platform_name", "", ["numax_platforms", "jax_platforms", "numax_platform_name", "jax_platform_name"], ANY),
    _Flag("debug_nans", False, ["numax_debug_nans", "jax_debug_nans"]),
    _Flag("debug_infs", False, ["numax_debug_infs", "jax_debug_infs"]),
    _Flag("disable_jit", False, ["numax_disable_jit", "jax_disable_jit"]),
    # jit's cache hits run through the native call path (lowering/native_dispatch.py) when it is built.
    _Flag("native_dispatch", True, ["numax_native_dispatch"]),
    # Where new arrays and computations go when no argument says (None: the default backend's first device).
    _Flag("default_device", None, ["numax_default_device", "jax_default_device"], None),
    # How jit compiles elementwise regions: "xla" (XLA fuses them) or "triton" (generated Triton kernels).
    _Flag("fusion", "xla", ["numax_fusion"], _choice(check_fusion)),
    _Flag("log_fusion", False, ["numax_log_fusion"]),
    # Which of XLA's CUDA clients runs GPU programs, read when the GPU backend starts: "stream_executor" (jax's;
    # the lower latency of one call waited for) or "tfrt" (its launches return sooner: more calls per second
    # when calls are queued; bench/RESULTS.md, "Host overhead per call", session 11).
    # How many CPU devices the CPU backend makes, read when it starts (-1: one, or XLA_FLAGS' device count).
    _Flag("num_cpu_devices", -1, ["numax_num_cpu_devices", "jax_num_cpu_devices"], INT),
    _Flag("gpu_client", "stream_executor", ["numax_gpu_client"], _choice(check_gpu_client)),
    # When fusion times each region's kernel against XLA's code: "auto" (on GPUs), "always", "never".
    _Flag("fusion_autotune", "auto", ["numax_fusion_autotune"], _choice(check_autotune)),
    # The persistent compilation cache (lowering/compile_cache.py): off while the directory is unset.
    _Flag("compilation_cache_dir", None, ["numax_compilation_cache_dir", "jax_compilation_cache_dir"], OPTIONAL_STR),
    _Flag("enable_compilation_cache", True, ["numax_enable_compilation_cache", "jax_enable_compilation_cache"]),
    _Flag("persistent_cache_min_compile_time_secs", 1.0, ["numax_persistent_cache_min_compile_time_secs",
                                                          "jax_persistent_cache_min_compile_time_secs"], FLOAT),
    _Flag("persistent_cache_min_entry_size_bytes", 0, ["numax_persistent_cache_min_entry_size_bytes",
                                                       "jax_persistent_cache_min_entry_size_bytes"], INT),
    _Flag("compilation_cache_max_size", -1, ["numax_compilation_cache_max_size", "jax_compilation_cache_max_size"],
          INT),
    # jax.numpy's implicit promotions: "strict" refuses to mix dtypes (core/dtypes.py), "warn"/"raise" report
    # rank promotion (numax/numpy/_util.py).
    _Flag("numpy_dtype_promotion", NumpyDtypePromotion.STANDARD,
          ["numax_numpy_dtype_promotion", "jax_numpy_dtype_promotion"], enum_class_kind(NumpyDtypePromotion)),
    _Flag("numpy_rank_promotion", "allow", ["numax_numpy_rank_promotion", "jax_numpy_rank_promotion"],
          enum_kind(("allow", "warn", "raise"))),
]
# jax's options that numax only stores (core/config_options.py says why each changes nothing).
_FLAGS += [_Flag(name.removeprefix("jax_"), default, ["numax_" + name.removeprefix("jax_"), name], kind)
           for name, kind, default, _ in NO_EFFECT]


_UNSET = object()


class Config:
    """Flags with JAX's names; read them as attributes (`config.enable_x64`).

    Global values are plain instance attributes, so that hot paths (every jit call reads a few) pay a
    dictionary lookup. While any thread holds a thread-local override, the object's class is switched to
    `_ConfigWithOverrides`, whose properties look in the reading thread's overrides first."""

    _names = {name: flag.attribute for flag in _FLAGS for name in flag.names}
    _checks = {flag.attribute: flag.kind.check for flag in _FLAGS if flag.kind is not None}

    def __init__(self):
        for flag in _FLAGS:
            setattr(self, flag.attribute, flag.initial_value())
        # Read once per call by jit and eager dispatch: are outputs checked for NaN/Inf (set by `update`)?
        self.check_numerics = bool(self.debug_nans or self.debug_infs)
        self._thread = threading.local()
        self._overrides_active = 0  # overrides held by all threads together
        self._overrides_lock = threading.Lock()
        self._jax_semantics = (0, 10, 2)
        self._listeners = []

    @property
    def jax_semantics(self):
        """(major, minor, patch) of the jax release whose behaviour numax follows where jax releases differ:
        the one matching the installed jaxlib (set by the runtime when it loads), as a user's jax and jaxlib
        match. Read-only for users; `numax.config.update` does not reach it."""
        return self._jax_semantics

    def set_jax_semantics(self, version):
        """For the runtime (lowering/xla/_jaxlib.py) only: the installed jaxlib's (major, minor, patch)."""
        self._jax_semantics = tuple(int(part) for part in version[:3])

    def update(self, name, value):
        """Sets flag `name` (JAX's name, such as 'jax_enable_x64', or numax's) for every thread."""
        attribute = self._names.get(name)
        if attribute is None:
            raise AttributeError(f"Unrecognized config option: {name} (unknown numax config option {name!r}; "
                                 "numax.config.values lists the known ones)")
        value = self._checked(attribute, name, value)
        setattr(self, attribute, value)
        self.check_numerics = bool(self.__dict__["debug_nans"] or self.__dict__["debug_infs"])
        for listener in self._listeners:
            listener(attribute, value)

    def _checked(self, attribute, name, value):
        check = self._checks.get(attribute)
        return value if check is None else check(value, name)

    def read(self, name):
        """The value of flag `name` (any name `update` takes) as the calling thread sees it."""
        return getattr(self, self._names.get(name, name))

    @property
    def values(self):
        """Every flag by each of its names (JAX's and numax's), as `read` gives it."""
        return {name: getattr(self, attribute) for name, attribute in self._names.items()}

    def option(self, name, value):
        """A context manager (also a decorator) setting flag `name` for the calling thread, its value checked as
        `update` checks it: what `numax.numpy_rank_promotion(...)` and the like return."""
        attribute = self._names[name]
        value = self._checked(attribute, name, value)
        if attribute in ("debug_nans", "debug_infs"):
            return self._numerics_override(attribute, value)
        return self.override(attribute, value)

    @contextlib.contextmanager
    def _numerics_override(self, attribute, value):
        """debug_nans/debug_infs for the calling thread, with the `check_numerics` summary that calls read."""
        other = getattr(self, "debug_infs" if attribute == "debug_nans" else "debug_nans")
        with self.override(attribute, value), self.override("check_numerics", bool(value or other)):
            yield

    @contextlib.contextmanager
    def override(self, attribute, value):
        """Sets `attribute` for the calling thread only, for the duration of the block (nests)."""
        local = self._thread.__dict__
        previous = local.get(attribute, _UNSET)
        local[attribute] = value
        self._count_override(+1)
        try:
            yield
        finally:
            if previous is _UNSET:
                del local[attribute]
            else:
                local[attribute] = previous
            self._count_override(-1)

    def thread_overrides(self):
        """The calling thread's overrides ({attribute: value}), for work it hands to other threads."""
        return dict(self._thread.__dict__)

    @contextlib.contextmanager
    def overridden(self, overrides):
        """The `thread_overrides()` of another thread, set for the calling thread for the duration of the block."""
        with contextlib.ExitStack() as stack:
            for attribute, value in overrides.items():
                stack.enter_context(self.override(attribute, value))
            yield

    def _count_override(self, change):
        with self._overrides_lock:
            self._overrides_active += change
            self.__class__ = _ConfigWithOverrides if self._overrides_active else Config

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


def _overridable(attribute):
    """The flag as the reading thread sees it: its own override if it holds one, else the global value."""

    def read(config):
        value = config._thread.__dict__.get(attribute, _UNSET)
        return config.__dict__[attribute] if value is _UNSET else value

    def write(config, value):
        config.__dict__[attribute] = value

    return property(read, write)


class _ConfigWithOverrides(Config):
    """`Config` while some thread holds an override (see `Config`)."""


for _flag in _FLAGS:
    setattr(_ConfigWithOverrides, _flag.attribute, _overridable(_flag.attribute))
_ConfigWithOverrides.check_numerics = _overridable("check_numerics")

config = Config()

TRACE_CONTEXT_NAMES = ("enable_x64", "default_device", "numpy_dtype_promotion", "numpy_rank_promotion")


def trace_context():
    """The flags a trace depends on, as the calling thread sees them (a context manager's value included): the
    caches of traced programs (jit's, checkpoint's, pmap's, shard_map's) key on them, as jax's do, so that a
    function called under other promotion rules traces again. (The native call path builds the same key:
    lowering/_native_dispatch.c.)"""
    return (config.enable_x64, config.default_device, config.numpy_dtype_promotion, config.numpy_rank_promotion)
