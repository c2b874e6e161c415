"""`numax.Array` (`numax.numpy.ndarray`), the type user code checks values against, as `jax.Array`: an abstract
base class whose instances are every array value numax hands out, concrete or traced. Device arrays
(lowering.array), sharded arrays, typed key arrays (numax.random) and every tracer are its virtual subclasses, so
`isinstance(x, numax.Array)` holds inside `jit`, `grad` and `vmap` as outside, as libraries such as flax and
equinox expect. numax's own code checks for concrete arrays with their own classes."""

import abc

from .trace import Tracer


class Array(abc.ABC):  # noqa: B024 (a type to check against: nothing to implement)
    """The type of numax arrays, concrete or traced (see the module's docstring)."""

    __slots__ = ()


Array.__module__ = "numax"
Array.register(Tracer)
