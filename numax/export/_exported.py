"""`export` and `Exported`: a jitted function traced and lowered for fixed argument types, with the
structure of its arguments and results, callable without the Python function that made it."""

from ..core import pytree as tree
from ..core.avals import get_aval, is_static_shape
from ..core.evaluation import eval_closed_program
from ..lowering import xla
from ..transforms.jit import JitFunction, ShapeDtypeStruct
from ._call import call_exported_p, symbol_prefix
from ._platforms import NUMAX_PLATFORMS, lower_for_platforms
from ._shape_poly import bind_dimensions

# The version of jax's calling convention that numax's modules follow (jax.export reads 9 and 10): `main`
# takes the kept argument leaves (no platform index, dimension or effect token arguments) and returns the
# result leaves.
CALLING_CONVENTION_VERSION = 10


class Exported:
    """A function lowered to StableHLO for fixed argument avals: `call` runs it, `serialize` saves it.

    `in_tree` is the structure of `(args, kwargs)` and `in_avals` the avals of its leaves; `out_tree` and
    `out_avals` are the result's. `platforms` are the ones the module was lowered for ("cpu", "cuda").
    As in JAX, `module_kept_var_idx` are the indices of the `in_avals` leaves that the module's `main` takes
    (jax drops unused arguments; numax keeps all), and `calling_convention_version`, `nr_devices`,
    `uses_global_constants` and `disabled_safety_checks` (as "platform" or "custom_call:<target>") describe the
    module for jax."""

    def __init__(self, fun_name, in_tree, in_avals, out_tree, out_avals, platforms, module_text, *, vjp=None,
                 make_vjp=None, module_kept_var_idx=None, calling_convention_version=CALLING_CONVENTION_VERSION,
                 nr_devices=1, uses_global_constants=False, disabled_safety_checks=()):
        self.fun_name = fun_name
        self.in_tree, self.in_avals = in_tree, tuple(in_avals)
        self.out_tree, self.out_avals = out_tree, tuple(out_avals)
        self.platforms = tuple(platforms)
        all_leaves = tuple(range(len(self.in_avals)))
        self.module_kept_var_idx = all_leaves if module_kept_var_idx is None else tuple(module_kept_var_idx)
        self.calling_convention_version = calling_convention_version
        self.nr_devices = nr_devices
        # jax's flag: the module has a platform index argument or symbolic shapes, which a caller refines
        self.uses_global_constants = uses_global_constants or len(self.platforms) > 1 or not all(
            is_static_shape(a.shape) for a in self.in_avals)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self._module_text = module_text
        self._vjp = vjp  # the Exported of the VJP (from a blob serialized with vjp_order >= 1)
        self._make_vjp = make_vjp  # exports the VJP on demand (on the exporting side only)
        self.symbol_prefix = symbol_prefix(fun_name)
        self._differentiable_call = None

    def mlir_module(self) -> str:
        """The StableHLO module text; its `main` takes the `in_avals` leaves and returns the `out_avals` ones,
        after a leading `platform_index: tensor<i32>` (the index into `platforms`) when there are several."""
        return self._module_text

    def has_vjp(self) -> bool:
        return self._vjp is not None or self._make_vjp is not None

    def vjp(self) -> "Exported":
        """The exported VJP: called with (the primal leaves..., the output cotangent leaves...), it returns the
        cotangent of each primal leaf."""
        if self._vjp is None:
            if self._make_vjp is None:
                raise ValueError(f"function {self.fun_name!r} was deserialized without its VJP: serialize it "
                                 "with `exported.serialize(vjp_order=1)` to differentiate it")
            self._vjp = self._make_vjp()
        return self._vjp

    def serialize(self, vjp_order: int = 0, *, format: str = "numax") -> bytes:
        """Bytes that `numax.export.deserialize` reads back; `vjp_order` VJPs are saved with it (1: grad).
        `format="numax"` (the default) writes numax's format, which keeps weak types; `format="jax"` writes
        jax.export's, which `jax.export.deserialize` reads."""
        if format == "numax":
            from ._format import serialize
        elif format == "jax":
            from ._jax_format import serialize
        else:
            raise ValueError(f"serialize: unknown format {format!r}; use 'numax' or 'jax'")
        return serialize(self, vjp_order)

    def call(self, *args, **kwargs):
        """Runs the exported module on arguments of the exported structure and avals (works under jit, vmap,
        and grad when the VJP was exported)."""
        leaves, in_tree = tree.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"function {self.fun_name!r} was exported for arguments structured as {self.in_tree} "
                            f"and is called with {in_tree}")
        bind_dimensions(self.fun_name, self.in_avals, [get_aval(leaf) for leaf in leaves])
        if self.has_vjp():
            outs = self._differentiable()(*leaves)
        else:
            outs = call_exported_p.bind(*leaves, exported=self)
        return self.out_tree.unflatten(outs)

    def _differentiable(self):
        """The call as a `custom_vjp` whose backward pass calls the exported VJP."""
        if self._differentiable_call is None:
            from ..transforms.custom_derivatives import custom_vjp

            def primal(*leaves):
                return call_exported_p.bind(*leaves, exported=self)

            def forward(*leaves):
                return primal(*leaves), leaves

            def backward(leaves, cotangents):
                return tuple(self.vjp().call(*leaves, *cotangents))

            call = custom_vjp(primal)
            call.defvjp(forward, backward)
            self._differentiable_call = call
        return self._differentiable_call

    def __repr__(self):
        avals = ", ".join(a.str_short() for a in self.in_avals)
        return f"Exported({self.fun_name}({avals}) for {', '.join(self.platforms)})"


def export(fun_jit, *, platforms=None):
    """`export(numax.jit(f))(*args)`: an `Exported` of `f` for these arguments (arrays or ShapeDtypeStructs;
    static arguments as the jit function declares them). `platforms`: where it will run ("cpu", "cuda", or a
    sequence of them: one module dispatching on the platform it runs on); by default the default backend's."""
    if not isinstance(fun_jit, JitFunction):
        raise TypeError(f"export expects a function wrapped by numax.jit, got {fun_jit!r}")
    platforms = _checked_platforms(platforms)

    def do_export(*args, **kwargs):
        lowered = fun_jit.lower(*args, **kwargs)
        return _exported_program(lowered.name, lowered.closed, lowered.in_tree, lowered.out_tree, platforms)

    return do_export


def _checked_platforms(platforms):
    if platforms is None:
        return (NUMAX_PLATFORMS[xla.default_backend().platform],)
    platforms = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    unknown = [p for p in platforms if p not in NUMAX_PLATFORMS.values()]
    if unknown:
        raise ValueError(f"export: unknown platforms {unknown}; numax exports for {sorted(NUMAX_PLATFORMS.values())}")
    if not platforms or len(set(platforms)) != len(platforms):
        raise ValueError(f"export: platforms must be distinct and at least one, got {platforms}")
    return platforms


def _exported_program(name, closed, in_tree, out_tree, platforms):
    """The Exported of a closed program (its constants written into the module)."""
    text, modules = lower_for_platforms(closed, name, platforms)
    if any(module.host_callbacks for module in modules):
        raise ValueError(f"export: {name!r} calls back into Python (a callback, debug.print), which a "
                         "serialized module cannot hold")
    program = closed.program
    return Exported(name, in_tree, program.in_avals, out_tree, program.out_avals, platforms, text,
                    make_vjp=lambda: _export_vjp(name, closed, program.in_avals, program.out_avals, platforms))


def _export_vjp(name, closed, in_avals, out_avals, platforms):
    """The Exported of `(primals..., cotangents...) -> primal cotangents` for a closed program."""
    from ..transforms.autodiff import vjp
    from ..transforms.jit import jit

    num_primals = len(in_avals)

    def flat_vjp(*primals_and_cotangents):
        primals, cotangents = primals_and_cotangents[:num_primals], primals_and_cotangents[num_primals:]
        _, pullback = vjp(lambda *xs: eval_closed_program(closed, *xs), *primals)
        return list(pullback(list(cotangents)))

    structs = [ShapeDtypeStruct(a.shape, a.dtype) for a in (*in_avals, *out_avals)]
    lowered = jit(flat_vjp).lower(*structs)
    return _exported_program(f"vjp_{name}", lowered.closed, lowered.in_tree, lowered.out_tree, platforms)
