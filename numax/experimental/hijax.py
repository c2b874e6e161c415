"""`jax.experimental.hijax`: the classes with which libraries define high-level ("hijax") types and primitives,
values with their own abstract types and rules (flax.nnx's hijax Variables are such types).

numax's tracers and programs carry arrays only (`ShapedArray`s, typed keys included): it has no high-level types,
so it cannot stage a hi primitive into a program nor lower a hi type to arrays at a transformation's boundary. What
this module gives:
- the base classes and helpers such libraries subclass and call when they are imported (`HiPrimitive`, `HiType`,
  `MutableHiType`, `AvalQDD`, `AvalMutableQDD`, `aval_method`, `aval_property`, `register_hitype`, ...), with
  jax's names and signatures, so a library that defines hi types imports and runs its array code on numax;
- eager evaluation: binding a `HiPrimitive` outside any transformation runs its `impl`, `numax.typeof` of a
  value whose class was given to `register_hitype` is what its function says, and `cur_qdd` (also
  `numax.experimental.cur_qdd`) reads a mutable hi value's quasi-dynamic data;
- binding a `HiPrimitive` while jit, grad, vmap, ... trace raises NotImplementedError, naming the primitive.

flax.nnx uses hijax only when its `flax_hijax_variable` option (off by default) is on; its default Variables hold
arrays and run on numax as on jax. `HiPspec`, `VJPHiPrimitive` and `TransformedRef` are not provided.
"""

import collections
import dataclasses

from numax._api_extras import typeof_handlers
from numax._src.core import AbstractValue, ShapedArray  # noqa: F401
from numax._src.effects import control_flow_allowed_effects  # noqa: F401
from numax._src.state.types import AbstractRef  # noqa: F401
from numax.core.ad_util import Zero  # noqa: F401
from numax.core.ad_util import is_undefined as is_undefined_primal  # noqa: F401
from numax.core.primitives import Primitive
from numax.core.trace import Tracer, is_tracing
from numax.lax.ad import instantiate as instantiate_zeros  # noqa: F401

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType", "MutableHiType",
           "ShapedArray", "Zero", "aval_method", "aval_property", "control_flow_allowed_effects", "cur_qdd",
           "instantiate_zeros", "is_undefined_primal", "register_hitype"]

# Markers a hi type's class puts on its attributes: a property or method that applies to the value's type (jax's).
aval_property = collections.namedtuple("aval_property", ["fget"])
aval_method = collections.namedtuple("aval_method", ["fun"])


@dataclasses.dataclass(frozen=True)
class AvalQDD:
    """A mutable hi type with its quasi-dynamic data (the part of its type that can change as it is mutated)."""

    aval: object
    qdd: object

    is_high = True
    has_qdd = True


@dataclasses.dataclass
class AvalMutableQDD:
    """A mutable hi type with quasi-dynamic data that an abstract evaluation rule may update."""

    aval: object
    mutable_qdd: object


def cur_qdd(x):
    """The current quasi-dynamic data of a mutable hi value (`jax.experimental.cur_qdd`): eagerly, what its
    `cur_qdd()` method says (a tracer never holds a hi value on numax)."""
    if isinstance(x, Tracer):
        raise NotImplementedError("cur_qdd of a traced value: numax has no high-level types in its programs "
                                  "(see numax.experimental.hijax)")
    return x.cur_qdd()


def register_hitype(val_cls, typeof_fn):
    """Makes `typeof_fn(value)` the type (`numax.typeof`) of the instances of `val_cls`."""
    typeof_handlers[val_cls] = typeof_fn


class HiPrimitive(Primitive):
    """A primitive over high-level types: subclasses define `impl` (and, for jax, `abstract_eval`, `to_lojax`,
    `jvp`, `transpose`). On numax it evaluates eagerly only (see the module's doc)."""

    def __init__(self, name):
        super().__init__(name, type(self).multiple_results)

    def is_high(self, *avals, **params) -> bool:
        return True

    def is_effectful(self, params) -> bool:
        return False

    def bind(self, *args, **params):
        if is_tracing():
            raise NotImplementedError(
                f"the high-level (hijax) primitive {self.name!r} was applied inside a transformation (jit, grad, "
                "vmap, ...): numax evaluates hijax primitives eagerly only, it has no high-level types in its "
                "programs (see numax.experimental.hijax). For flax.nnx, leave `flax_hijax_variable` off.")
        return self.impl(*args, **params)

    def impl(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} must define impl")

    def abstract_eval(self, *avals, **params):
        raise NotImplementedError(f"{type(self).__name__} must define abstract_eval")

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} must define to_lojax")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(f"{type(self).__name__} must define jvp")

    def transpose(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} must define transpose")


class HiType(AbstractValue):
    """The base class of immutable high-level types (subclasses define equality, hashing and jax's lowering and
    differentiation methods: `lo_ty`, `lower_val`, `raise_val`, `to_tangent_aval`, ...)."""

    is_high = True
    has_qdd = False


class MutableHiType(AbstractValue):
    """The base class of mutable high-level types, whose quasi-dynamic data may change as the value is mutated
    (subclasses define `lo_ty_qdd`, `new_from_loval`, `read_loval`, `update_from_loval`, ...)."""

    is_high = True
    has_qdd = True
    is_writer = False
