"""`jax._src.effects`: the effect objects and effect-type sets through which jax's extension API declares side
effects (`jax.extend.core.Effect` is the base class).

numax records side effects per primitive (`Primitive.effectful`: kept by dead-code elimination, never reordered)
rather than by effect objects, and lets any primitive run inside control flow, custom derivatives and remat. So the
sets below only record what libraries declare in them (flax.nnx adds its Variable effect to
`control_flow_allowed_effects`): declaring an effect allowed somewhere changes nothing numax does, as nothing there
is refused."""

__all__ = ["Effect", "EffectTypeSet", "Effects", "control_flow_allowed_effects", "custom_derivatives_allowed_effects",
           "no_effects", "ordered_effects", "remat_allowed_effects"]


class Effect:
    """The base class of effect objects that primitives declare (jax's `jax.extend.core.Effect`)."""


Effects = frozenset  # a set of effect objects
no_effects: frozenset = frozenset()


class EffectTypeSet:
    """A set of effect types: `contains(effect)` is True for an instance of one of them."""

    def __init__(self):
        self._effect_types: set[type] = set()

    def __repr__(self):
        return f"EffectTypeSet({self._effect_types})"

    def add_type(self, effect_type):
        self._effect_types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, effect_type) for effect_type in self._effect_types)

    def filter_in(self, effects):
        return [effect for effect in effects if self.contains(effect)]

    def filter_not_in(self, effects):
        return [effect for effect in effects if not self.contains(effect)]


ordered_effects = EffectTypeSet()
control_flow_allowed_effects = EffectTypeSet()
custom_derivatives_allowed_effects = EffectTypeSet()
remat_allowed_effects = EffectTypeSet()
