"""Lowering Programs to StableHLO modules.

Owns the table of lowering rules (per primitive, with per-platform overrides) and the walk that
turns a ClosedProgram into one `func.func @main`. A rule is `rule(ctx, *operands, **params)`, where
operands are SSA values and `ctx` carries the builder and the equation's avals; it returns the SSA
value of its result, or a list of them for primitives with several results.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import is_static_shape, symbolic_dim_types
from ..core.collector import full_collections_deferred
from ..core.ir import ClosedProgram, Literal, Program
from . import dynamic_shapes
from .stablehlo import FunctionBuilder, aval_type

lowering_rules = {}  # primitive -> rule
platform_lowering_rules = {"cpu": {}, "gpu": {}}  # platform -> primitive -> rule


def register_lowering(primitive, rule, platform=None):
    if platform is None:
        lowering_rules[primitive] = rule
    else:
        platform_lowering_rules[platform][primitive] = rule
    return rule


class ModuleContext:
    """What a whole module shares: the platform, host callbacks, the device meshes its per-device
    (manual) computations run over, and the axes bound where a rule is lowered."""

    def __init__(self, platform, num_replicas=1, axis_env=(), devices=None):
        self.platform = platform
        self.devices = devices  # the program's devices, in order (an SPMD program's logical device ids)
        self.host_callbacks = []
        self.num_replicas = num_replicas
        self.num_partitions = 1  # the devices an SPMD program (one with a pmap) spans
        self.axis_env = axis_env  # ((axis name, size), ...) of the enclosing per-device computation
        self.meshes = {}  # symbol -> `sdy.mesh` body, declared at the top of the module
        self.functions = {}  # symbol -> text of a private function beside @main (an exported module's body)
        self.channels = 0

    def next_channel(self) -> int:
        """A fresh channel id for a collective between devices."""
        self.channels += 1
        return self.channels

    def mesh_symbol(self, mesh) -> str:
        """The symbol of the `sdy.mesh` declaring `mesh` (a numax.sharding.Mesh over the program's devices),
        declared at the top of the module on first use."""
        body = ", ".join(f'"{name}"={size}' for name, size in mesh.shape.items())
        ids = [self.devices.index(device) for device in mesh.devices.flat]
        if ids != list(range(len(ids))):
            body += f", device_ids=[{', '.join(map(str, ids))}]"
        text = f"<[{body}]>"
        for symbol, declared in self.meshes.items():
            if declared == text:
                return symbol
        symbol = "mesh" if not self.meshes else f"mesh_{len(self.meshes)}"
        self.meshes[symbol] = text
        return symbol

    def add_host_callback(self, callback) -> int:
        self.host_callbacks.append(callback)
        return len(self.host_callbacks) - 1


class RuleContext:
    """What one rule sees: the builder to emit into and the avals of its equation."""

    __slots__ = ("module", "builder", "avals_in", "avals_out")

    def __init__(self, module, builder, avals_in, avals_out):
        self.module = module
        self.builder = builder
        self.avals_in = avals_in
        self.avals_out = avals_out

    @property
    def aval_out(self):
        return self.avals_out[0]

    def lower_program(self, closed_program, args):
        """Inlines a sub-program (a jit inside jit, a loop body) into the current builder."""
        return lower_program_body(self.module, self.builder, closed_program.program, closed_program.consts, args)


def find_rule(platform, primitive):
    rule = platform_lowering_rules.get(platform, {}).get(primitive)
    if rule is None:
        rule = lowering_rules.get(primitive)
    if rule is None:
        raise NotImplementedError(f"primitive {primitive.name} has no StableHLO lowering rule")
    return rule


def const_value(value, aval):
    """A host numpy array for a constant: numpy values, Python scalars, or runtime arrays."""
    return np.asarray(value, dtype=aval.dtype)


def lower_program_body(module, builder, program, consts, args):
    """Emits the equations of `program` into `builder`; returns the SSA values of its outputs."""
    env = {}

    def read(atom):
        if type(atom) is Literal:
            return builder.constant(np.asarray(atom.value, dtype=atom.aval.dtype))
        return env[atom]

    for var, value in zip(program.constvars, consts):
        if isinstance(value, str):
            env[var] = value
        elif type(value) in symbolic_dim_types:  # a symbolic dimension used as a value
            env[var] = _symbolic_dimension_constant(builder, value, var.aval)
        else:
            env[var] = builder.constant(const_value(value, var.aval))
    for var, value in zip(program.invars, args):
        env[var] = value
    polymorphic = builder.dimension_values is not None
    rules = {}  # primitive -> its rule on this platform (found once per program, not per equation)
    for eqn in program.equations:
        primitive = eqn.primitive
        rule = rules.get(primitive)
        if rule is None:
            rule = rules[primitive] = find_rule(module.platform, primitive)
        ctx = RuleContext(module, builder, [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars])
        if polymorphic:
            dynamic_shapes.check_polymorphic(primitive, ctx.avals_in + ctx.avals_out)
        outs = rule(ctx, *(read(a) for a in eqn.inputs), **eqn.params)
        if isinstance(outs, str):
            outs = [outs]
        assert len(outs) == len(eqn.outvars), (eqn.primitive, outs)
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in program.outvars]


@full_collections_deferred()
def lower_to_module(closed_program, name="main", platform="cpu", arg_attributes=None, num_replicas=1,
                    axis_env=(), result_attributes=None, devices=None, num_partitions=1):
    """Returns (module text, ModuleContext) for a closed program; consts become constants. Argument and
    result attributes ({index: text}) may be callables of the ModuleContext (to declare meshes)."""
    program = closed_program.program
    module = ModuleContext(platform, num_replicas, axis_env, devices)
    module.num_partitions = num_partitions
    builder = FunctionBuilder()
    args = []
    for aval in program.in_avals:
        arg = builder.fresh().replace("%", "%arg")
        builder.types[arg] = aval_type(aval)
        args.append(arg)
    polymorphic = not all(is_static_shape(aval.shape) for aval in program.in_avals)
    if polymorphic:
        builder.dimension_values = dynamic_shapes.dimension_variable_values(builder, args, program.in_avals)
    outs = lower_program_body(module, builder, program, closed_program.consts, args)
    out_types = [aval_type(a) for a in program.out_avals]
    results = _with_attributes(out_types, result_attributes, module)
    signature = ", ".join(_with_attributes([f"{a}: {builder.types[a]}" for a in args], arg_attributes, module))
    ret = f"    return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    return"
    text = "\n".join([
        f"module @{_symbol(name)} attributes {{mhlo.num_partitions = {module.num_partitions} : i32, "
        f"mhlo.num_replicas = {num_replicas} : i32{_POLYMORPHIC_ATTRIBUTE if polymorphic else ''}}} {{",
        *(f"  sdy.mesh @{symbol} = {mesh}" for symbol, mesh in module.meshes.items()),
        f"  func.func public @main({signature}) -> ({', '.join(results)}) {{",
        *builder.lines,
        ret,
        "  }",
        *module.functions.values(),
        "}",
    ])
    return text, module


def hoist_large_consts(closed_program):
    """(program, hoisted vars, their values): large constants (and device arrays) become leading arguments,
    kept on the device; small ones stay constants written into the module."""
    program = closed_program.program
    embedded_vars, embedded, hoisted_vars, hoisted = [], [], [], []
    for var, value in zip(program.constvars, closed_program.consts):
        # (a float0 constant stays in the module however large: it is a `false` splat, with nothing to transfer)
        if not isinstance(value, np.ndarray | np.generic | int | float | complex | bool) or (
                np.size(value) > 64 and var.aval.dtype != dtypes.float0):
            hoisted_vars.append(var)
            hoisted.append(value)
        else:
            embedded_vars.append(var)
            embedded.append(value)
    lowered = ClosedProgram(Program(embedded_vars, hoisted_vars + program.invars, program.outvars,
                                    program.equations), embedded)
    return lowered, hoisted_vars, hoisted


def _with_attributes(texts, attributes, module):
    """Each argument's or result's text followed by its attribute dictionary ({index: text, or a function of
    the ModuleContext giving the text}), if it has one."""
    attributes = attributes or {}
    texts = list(texts)
    for i, attribute in attributes.items():
        attribute = attribute(module) if callable(attribute) else attribute
        if attribute:
            texts[i] += f" {{{attribute}}}"
    return texts


# As JAX marks its shape-polymorphic modules (its runtime refines their shapes before compiling them).
_POLYMORPHIC_ATTRIBUTE = ", jax.uses_shape_polymorphism = true"


def _symbolic_dimension_constant(builder, dim, aval):
    """A symbolic dimension used as a value (`x.shape[0] * 2.0`, a mean's count): computed from the dimension
    variables and converted to the constant's dtype."""
    value = dynamic_shapes.dimension_value(builder, dim)
    return builder.op1("stablehlo.convert", [value], aval_type(aval)) if aval.dtype != np.int64 else value


def _symbol(name):
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"m_{cleaned}"


# --- helpers for rules ---------------------------------------------------------------------------------
def broadcast_to(ctx, value, aval, shape):
    """`value` (of `aval`) broadcast to `shape`: rank-0 values anywhere, others along equal rank."""
    if aval.shape == tuple(shape):
        return value
    dims = [] if aval.ndim == 0 else list(range(aval.ndim))
    return ctx.builder.broadcast_in_dim(value, shape, aval.dtype, dims)


def broadcast_operands(ctx, operands):
    """Operands of an elementwise op brought to the output's shape (scalars and size-1 dims stretch)."""
    shape = ctx.aval_out.shape
    return [broadcast_to(ctx, v, a, shape) for v, a in zip(operands, ctx.avals_in)]


def elementwise_lowering(op_name, **attributes):
    """The rule of an elementwise primitive that maps to one StableHLO (or CHLO) op."""

    def rule(ctx, *operands, **_params):
        operands = broadcast_operands(ctx, operands)
        return ctx.builder.op1(op_name, operands, aval_type(ctx.aval_out), attributes or None)

    rule.__name__ = f"lower_{op_name.split('.')[-1]}"
    return rule
