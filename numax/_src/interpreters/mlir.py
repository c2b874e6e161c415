"""`jax.interpreters.mlir` / `jax._src.interpreters.mlir`: registering lowering rules written against jax's API.

A jax lowering rule is `rule(ctx, *operands, **params)` over MLIR values; numax writes StableHLO as text
(lowering/stablehlo.py), so here an operand is a `Value`: its SSA name and a `.type` (`TensorType`), which is what
such rules pass around. While a rule runs, `custom_call`, `ir_constant` and `lower_fun`'s programs emit into the
function being lowered, as jax's emit at MLIR's insertion point. `register_lowering` wraps the rule and stores it
in numax's own table of lowering rules (lowering/lower.py), the one every numax primitive's rule is in, so a
primitive made with `numax.extend.core.Primitive` lowers under `jit`, `export` and eager execution alike.

What jax rules can do and these cannot: build ops through MLIR's Python bindings (`hlo.AddOp`, `ir.Attribute`:
this module has no `hlo` or `ir`), or pass `custom_call` typed MLIR attributes (a dictionary `backend_config`,
`extra_attributes`: NotImplementedError). Write such a rule with `lower_fun` (the computation in numax.lax) or
`custom_call` with a string backend config.
"""

import threading

import numpy as np

from numax.core.avals import ShapedArray
from numax.core.staging import trace_to_closed_program
from numax.lowering import lower
from numax.lowering.stablehlo import aval_type, layout_attr, mlir_string, output_operand_alias

__all__ = ["LoweringRuleContext", "ModuleContext", "TensorType", "Value", "aval_to_ir_type", "custom_call",
           "ir_constant", "lower_fun", "register_lowering"]

# jax's platform names -> numax's (a rule for a platform numax has no backend for is never used)
_PLATFORMS = {"cpu": "cpu", "cuda": "gpu", "rocm": "gpu", "gpu": "gpu"}
_JAX_PLATFORM = {"cpu": "cpu", "gpu": "cuda"}
_UNSUPPORTED_PLATFORMS = ("tpu",)


class TensorType:
    """The type of a value, as `value.type` gives it and `custom_call(result_types=...)` takes it (jax's
    `ir.RankedTensorType`): `shape`, `dtype`, and its StableHLO text as `str()`."""

    __slots__ = ("shape", "dtype", "text")

    def __init__(self, aval):
        self.shape, self.dtype, self.text = aval.shape, aval.dtype, aval_type(aval)

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.text == other.text

    def __hash__(self):
        return hash(self.text)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"TensorType({self.text})"


class Value:
    """An SSA value of the function being lowered: `name` (`%3`) and `type`."""

    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name, self.type = name, type

    def __repr__(self):
        return f"Value({self.name} : {self.type})"


class ModuleContext:
    """What a rule may ask about the whole module: `platforms` (jax's names, such as `("cpu",)`)."""

    __slots__ = ("platforms",)

    def __init__(self, platform):
        self.platforms = (_JAX_PLATFORM.get(platform, platform),)


class LoweringRuleContext:
    """The `ctx` a rule gets: `avals_in`, `avals_out` (the equation's ShapedArrays) and `module_context`."""

    __slots__ = ("avals_in", "avals_out", "module_context", "_numax_context")

    def __init__(self, numax_context):
        self._numax_context = numax_context
        self.avals_in, self.avals_out = list(numax_context.avals_in), list(numax_context.avals_out)
        self.module_context = ModuleContext(numax_context.module.platform)


class _Emitting(threading.local):
    """The numax rule contexts whose jax rules are running on this thread, innermost last."""

    def __init__(self):
        self.contexts = []


_emitting = _Emitting()


def _current_context():
    if not _emitting.contexts:
        raise RuntimeError("numax.interpreters.mlir: ops can be emitted only inside a lowering rule (one registered "
                           "with mlir.register_lowering, while a function is being lowered)")
    return _emitting.contexts[-1]


def _flat_values(results):
    """A rule's result as a flat list of Values (jax's rules return a Value or nested sequences of them)."""
    if isinstance(results, Value):
        return [results]
    if isinstance(results, (list, tuple)):
        return [value for item in results for value in _flat_values(item)]
    raise TypeError(f"a lowering rule must return lowered values (numax.interpreters.mlir.Value), got {results!r}")


def _adapted(prim, rule):
    """numax's form of a jax-style rule: SSA names in, SSA names out."""

    def numax_rule(ctx, *operands, **params):
        values = [Value(name, TensorType(aval)) for name, aval in zip(operands, ctx.avals_in)]
        _emitting.contexts.append(ctx)
        try:
            results = rule(LoweringRuleContext(ctx), *values, **params)
        finally:
            _emitting.contexts.pop()
        names = [value.name for value in _flat_values(results)]
        if len(names) != len(ctx.avals_out):
            raise ValueError(f"the lowering rule of {prim} returned {len(names)} values for the "
                             f"{len(ctx.avals_out)} results of its abstract evaluation")
        return names

    numax_rule.__name__ = getattr(rule, "__name__", "jax_style_rule")
    return numax_rule


def register_lowering(prim, rule, platform=None, inline=True, cacheable=True):
    """Registers `rule(ctx, *operands, **params)` as the lowering of `prim` (on every platform, or on `platform`:
    "cpu", "cuda", "rocm" or "gpu"). `inline` and `cacheable` are accepted for jax's signature: numax always
    lowers a rule in place and caches nothing per rule."""
    del inline, cacheable
    if platform in _UNSUPPORTED_PLATFORMS:
        return None  # numax never lowers for this platform, so the rule could never apply
    if platform is not None and platform not in _PLATFORMS:
        raise NotImplementedError(f"Registering an MLIR lowering rule for primitive {prim} for an unknown platform "
                                  f"{platform}. Known platforms are: {', '.join(sorted(_PLATFORMS))}.")
    lower.register_lowering(prim, _adapted(prim, rule), None if platform is None else _PLATFORMS[platform])
    return None


def aval_to_ir_type(aval):
    """The TensorType of values of a ShapedArray."""
    return TensorType(aval)


def _string_attribute(text):
    return mlir_string(text if isinstance(text, bytes) else text.encode())


class CustomCallOp:
    """What `custom_call` returns: the op's `results` (Values)."""

    __slots__ = ("results",)

    def __init__(self, results):
        self.results = results


def custom_call(call_target_name, *, result_types, operands, backend_config="", has_side_effect=False,
                result_shapes=None, called_computations=(), api_version=2, operand_output_aliases=None,
                operand_layouts=None, result_layouts=None, extra_attributes=None):
    """Emits `stablehlo.custom_call @call_target_name(operands)` with results of `result_types` (TensorTypes) into
    the function being lowered; returns the op (its `.results`). `backend_config` is a string (or bytes);
    `operand_output_aliases` maps an operand's index to the index of the result that reuses its buffer; layouts
    are minor-to-major dimension lists."""
    if isinstance(backend_config, dict) or extra_attributes or result_shapes is not None or called_computations:
        raise NotImplementedError("numax.interpreters.mlir.custom_call: dictionary backend configs, extra "
                                  "attributes, result shapes and called computations need MLIR attribute objects, "
                                  "which numax's text lowering does not have")
    ctx = _current_context()
    operands, result_types = list(operands), list(result_types)
    attributes = {"call_target_name": _string_attribute(call_target_name), "api_version": f"{int(api_version)} : i32",
                  "backend_config": _string_attribute(backend_config or "")}
    if has_side_effect:
        attributes["has_side_effect"] = "true"
    if operand_layouts is not None:
        attributes["operand_layouts"] = "[" + ", ".join(map(layout_attr, operand_layouts)) + "]"
    if result_layouts is not None:
        attributes["result_layouts"] = "[" + ", ".join(map(layout_attr, result_layouts)) + "]"
    if operand_output_aliases:
        attributes["output_operand_aliases"] = "[" + ", ".join(
            output_operand_alias(output if len(result_types) > 1 else None, operand)
            for operand, output in operand_output_aliases.items()) + "]"
    names = ctx.builder.op("stablehlo.custom_call", [o.name for o in operands], [str(t) for t in result_types],
                           attributes)
    return CustomCallOp([Value(name, t) for name, t in zip(names, result_types)])


def ir_constant(val):
    """A constant holding `val` (a numpy array or scalar), emitted into the function being lowered."""
    value = np.asarray(val)
    ctx = _current_context()
    return Value(ctx.builder.constant(value), TensorType(ShapedArray(value.shape, value.dtype)))


def lower_fun(fun, multiple_results=True):
    """A lowering rule that lowers `fun(*operands, **params)`, written with numax.lax (or numax.numpy), traced for
    the equation's input types; `fun` returns a sequence of outputs when `multiple_results`, else one output."""

    def rule(ctx, *operands, **params):
        def flat_fun(*args):
            outs = fun(*args, **params)
            return list(outs) if multiple_results else [outs]

        closed = trace_to_closed_program(flat_fun, ctx.avals_in)
        names = ctx._numax_context.lower_program(closed, [o.name for o in operands])
        return [Value(name, TensorType(aval)) for name, aval in zip(names, closed.program.out_avals)]

    rule.__name__ = f"lower_{getattr(fun, '__name__', 'fun')}"
    return rule
