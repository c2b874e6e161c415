"""`export` and `Exported`: a jitted function traced and lowered for fixed argument types, with the
structure of its arguments and results, callable without the Python function that made it.

Differentiation follows jax.export: `Exported.call` is a `custom_vjp` whose backward pass calls the exported VJP
(`Exported.vjp()`, itself an `Exported` and so differentiable in turn), and an `Exported` deserialized from a
blob written with `serialize(vjp_order=k)` carries k orders of VJP, so it can be differentiated k times; one more
raises jax's ValueError "No VJP is available". The cotangents of integer and bool values are float0 (in the
`in_avals`/`out_avals` of a VJP), which a StableHLO module holds as `i1` tensors of the same shape, as jax's do.

A sharded function (arguments laid out by jit's `in_shardings`, by `ShapeDtypeStruct(sharding=...)` or by their
own layout) exports for `nr_devices` devices, with the sharding of each leaf (`_shardings.py`); its VJP takes
and gives the cotangents with the shardings of the values they are cotangents of.
"""

import types
import typing

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import is_differentiable, tangent_aval
from ..core.avals import get_aval, is_static_shape
from ..core.evaluation import eval_closed_program
from ..core.trace import Tracer
from ..lax.shapes import full
from ..lowering import xla
from ..transforms.jit import PjitFunction, ShapeDtypeStruct, jit
from . import _shardings
from ._call import call_exported_p, symbol_prefix
from ._custom_calls import check_custom_calls
from ._platforms import GENERIC_PLATFORMS, NUMAX_PLATFORMS, lower_for_platforms
from ._shape_binding import bind_dimensions, check_solvable

# The version of jax's calling convention that numax's modules follow (jax.export reads 9 and 10): `main`
# takes the kept argument leaves (no platform index, dimension or effect token arguments) and returns the
# result leaves.
CALLING_CONVENTION_VERSION = 10
minimum_supported_calling_convention_version = 9  # the versions numax runs (jax 0.10's)
maximum_supported_calling_convention_version = 10
# format name -> serialize(exported, vjp_order) -> bytes, for `Exported.serialize`: each format's module (_format.py,
# _jax_format.py) registers its writer, as they import this module; numax.export's __init__ loads both.
serializers = {}


class DisabledSafetyCheck:
    """jax's safety check that an export skips: `platform()` lets the module run on a platform it was not
    exported for; `custom_call(target)` lets the module call that custom-call target (`_custom_calls.py`);
    `shape_assertions()` is recorded (numax makes no such check)."""

    def __init__(self, _impl: str):
        self._impl = _impl  # "platform", "shape_assertions" or "custom_call:<target>", as jax serializes it

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        return cls(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls) -> "DisabledSafetyCheck":
        return cls("shape_assertions")

    def is_custom_call(self):
        """The custom call target this check allows, or None."""
        kind, _, target = self._impl.partition(":")
        return target if kind == "custom_call" and target else None

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)


def default_export_platform() -> str:
    """The platform `export` lowers for by default: the default backend's ("cpu" or "cuda")."""
    return NUMAX_PLATFORMS[xla.default_backend().platform]


class Exported:
    """A function lowered to StableHLO for fixed argument avals: `call` runs it, `serialize` saves it.

    `in_tree` is the structure of `(args, kwargs)` and `in_avals` the avals of its leaves; `out_tree` and
    `out_avals` are the result's. `platforms` are the ones the module was lowered for ("cpu", "cuda").
    As in JAX, `module_kept_var_idx` are the indices of the `in_avals` leaves that the module's `main` takes
    (jax drops unused arguments; numax keeps all), and `calling_convention_version`, `nr_devices`,
    `uses_global_constants` and `disabled_safety_checks` (`DisabledSafetyCheck`s) describe the module for jax.
    `nr_devices` is the number of devices the module was lowered for; `in_shardings_jax(mesh)` and
    `out_shardings_jax(mesh)` give each leaf's sharding on a mesh of the export mesh's shape (None:
    unspecified). As in jax's exports since 2026, `in_shardings_hlo` and `out_shardings_hlo` are all None."""

    def __init__(self, fun_name, in_tree, in_avals, out_tree, out_avals, platforms, module_text, *, vjp=None,
                 make_vjp=None, module_kept_var_idx=None, calling_convention_version=CALLING_CONVENTION_VERSION,
                 nr_devices=1, uses_global_constants=False, disabled_safety_checks=(), in_shardings=None,
                 out_shardings=None):
        self.fun_name = fun_name
        self.in_tree, self.in_avals = in_tree, tuple(in_avals)
        self.out_tree, self.out_avals = out_tree, tuple(out_avals)
        self.platforms = tuple(platforms)
        all_leaves = tuple(range(len(self.in_avals)))
        self.module_kept_var_idx = all_leaves if module_kept_var_idx is None else tuple(module_kept_var_idx)
        self.calling_convention_version = calling_convention_version
        self.nr_devices = nr_devices
        # Each leaf's sharding, a NamedSharding over an AbstractMesh or None (unspecified), as jax keeps them
        self._in_named_shardings = tuple(in_shardings or (None,) * len(self.in_avals))
        self._out_named_shardings = tuple(out_shardings or (None,) * len(self.out_avals))
        self.in_shardings_hlo = (None,) * len(self.in_avals)
        self.out_shardings_hlo = (None,) * len(self.out_avals)
        # jax's flag: the module has a platform index argument or symbolic shapes, which a caller refines
        self.uses_global_constants = uses_global_constants or len(self.platforms) > 1 or not all(
            is_static_shape(a.shape) for a in self.in_avals)
        self.disabled_safety_checks = tuple(c if isinstance(c, DisabledSafetyCheck) else DisabledSafetyCheck(c)
                                            for c in disabled_safety_checks)
        # What the module's `main` takes and returns: a float0 value is passed as an i1 tensor.
        self._module_in_avals = tuple(map(_module_aval, self.in_avals))
        self._module_out_avals = tuple(map(_module_aval, self.out_avals))
        self._module_text = module_text
        self._vjp = vjp  # the Exported of the VJP (from a blob serialized with vjp_order >= 1)
        self._make_vjp = make_vjp  # exports the VJP on demand (on the exporting side only)
        self.symbol_prefix = symbol_prefix(fun_name)
        self._differentiable_call = None

    def mlir_module(self) -> str:
        """The StableHLO module text; its `main` takes the `in_avals` leaves and returns the `out_avals` ones,
        after a leading `platform_index: tensor<i32>` (the index into `platforms`) when there are several."""
        return self._module_text

    @property
    def mlir_module_serialized(self) -> bytes:
        """The module as a StableHLO portable artifact (MLIR bytecode), as serialized blobs hold it."""
        return xla.serialize_portable_artifact(self.mlir_module())

    def in_shardings_jax(self, mesh):
        """The sharding of each argument leaf on `mesh` (a Mesh or AbstractMesh of the export mesh's axis sizes,
        names and types; ValueError otherwise), None where unspecified: for `device_put` or jit's
        `in_shardings`."""
        return tuple(_shardings.on_mesh(s, mesh) for s in self._in_named_shardings)

    def out_shardings_jax(self, mesh):
        """The sharding of each result leaf on `mesh`, as `in_shardings_jax`."""
        return tuple(_shardings.on_mesh(s, mesh) for s in self._out_named_shardings)

    def has_vjp(self) -> bool:
        return self._vjp is not None or self._make_vjp is not None

    def vjp(self) -> "Exported":
        """The exported VJP: called with (the primal leaves..., the output cotangent leaves...), it returns the
        cotangent of each primal leaf (float0 for integer and bool ones, as their cotangent inputs are)."""
        if self._vjp is None:
            if self._make_vjp is None:
                raise ValueError(f"No VJP is available for {self.fun_name!r}: it was deserialized from a blob "
                                 "serialized with too small a `vjp_order` (`serialize(vjp_order=k)` keeps what k "
                                 "orders of differentiation need)")
            self._vjp = self._make_vjp()
        return self._vjp

    def serialize(self, vjp_order: int = 0, *, format: str = "numax") -> bytes:
        """Bytes that `numax.export.deserialize` reads back; `vjp_order` VJPs are saved with it (1: grad).
        `format="numax"` (the default) writes numax's format, which keeps weak types; `format="jax"` writes
        jax.export's, which `jax.export.deserialize` reads."""
        if format not in serializers:
            raise ValueError(f"serialize: unknown format {format!r}; use 'numax' or 'jax'")
        return serializers[format](self, vjp_order)

    def call(self, *args, **kwargs):
        """Runs the exported module on arguments of the exported structure and avals (works under jit, vmap,
        and grad when the VJP was exported)."""
        leaves, in_tree = tree.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise ValueError(f"The invocation args and kwargs must have the same pytree structure as when the "
                             f"function '{self.fun_name}' was exported, but they are structured as {in_tree} and "
                             f"it was exported for {self.in_tree}")
        bind_dimensions(self.in_avals, [get_aval(leaf) for leaf in leaves], self.in_tree)
        if not any(isinstance(leaf, Tracer) for leaf in leaves):  # concrete values: nothing to differentiate,
            return self.out_tree.unflatten(self._call_module(leaves))  # so skip custom_vjp's cost (~70 us a call)
        return self.out_tree.unflatten(self._differentiable()(*leaves))

    def _differentiable(self):
        """The call as a `custom_vjp` whose backward pass calls the exported VJP (as jax.export's does, also
        without one: differentiating then raises from `vjp()`)."""
        if self._differentiable_call is None:
            from ..transforms.custom_derivatives import custom_vjp

            def primal(*leaves):
                return self._call_module(leaves)

            def forward(*leaves):
                return call(*leaves), leaves  # `call`, not `primal`: the forward pass is differentiable too

            def backward(leaves, cotangents):
                return tuple(self.vjp()._differentiable()(*leaves, *cotangents))

            call = custom_vjp(primal)
            call.defvjp(forward, backward)
            self._differentiable_call = call
        return self._differentiable_call

    def _call_module(self, leaves):
        """`call_exported` on the leaves, float0 ones passed as the module's i1 zeros and given back as float0."""
        leaves = [full(get_aval(leaf).shape, False, np.bool_) if aval.dtype == dtypes.float0 else leaf
                  for leaf, aval in zip(leaves, self.in_avals)]
        outs = call_exported_p.bind(*leaves, exported=self)
        return [np.zeros(out.shape, dtypes.float0) if aval.dtype == dtypes.float0 else out
                for out, aval in zip(outs, self.out_avals)]

    def __repr__(self):
        avals = ", ".join(a.str_short() for a in self.in_avals)
        return f"Exported({self.fun_name}({avals}) for {', '.join(self.platforms)})"


def vjp_for_serialization(exported):
    """`exported.vjp()`, or jax's ValueError when it has none (it was deserialized with fewer VJPs)."""
    if not exported.has_vjp():
        raise ValueError("serialization of an Exported that does not have vjps of high-enough order: "
                         f"{exported.fun_name!r} was deserialized without its VJP")
    return exported.vjp()


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """`export(numax.jit(f))(*args)`: an `Exported` of `f` for these arguments (arrays or ShapeDtypeStructs;
    static arguments as the jit function declares them). `platforms`: where it will run ("cpu", "cuda", or a
    sequence of them: one module dispatching on the platform it runs on); by default the default backend's.
    `disabled_checks`: `DisabledSafetyCheck`s the export skips (and its VJPs too).

    numax's own library functions (`numax.numpy.cos`, ...) export as they are, as jax's jitted ones do."""
    if _is_library_function(fun_jit):
        fun_jit = jit(fun_jit)
    if not isinstance(fun_jit, PjitFunction):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit!r} (wrap it with "
                         "numax.jit)")
    platforms = _checked_platforms(platforms)
    disabled_checks = tuple(disabled_checks)
    if not all(isinstance(check, DisabledSafetyCheck) for check in disabled_checks):
        raise TypeError(f"export: disabled_checks must be DisabledSafetyCheck objects, got {disabled_checks}")

    def do_export(*args, **kwargs):
        lowered = fun_jit.lower(*args, **kwargs)
        check_solvable(lowered.closed, lowered.in_tree)  # jax's errors, naming the leaves
        return _exported_program(lowered.name, lowered.closed, lowered.in_tree, lowered.out_tree, platforms,
                                 disabled_checks, _sharding_of(fun_jit, lowered, args, kwargs))

    return do_export


def _is_library_function(fun):
    """numax's own functions (numax.numpy's, numax.lax's, ...), which jax's counterparts are jitted (a user's
    custom_jvp or partial object is not one, even though its class is numax's)."""
    return isinstance(fun, types.FunctionType) and (fun.__module__ or "").startswith("numax.")


class _Sharding(typing.NamedTuple):
    """How an exported program is laid out: the devices it is lowered over (None: one device or an abstract
    mesh), their number, and each argument's and result's recorded sharding (None: all unspecified)."""
    devices: list | None
    nr_devices: int
    in_shardings: tuple | None
    out_shardings: tuple | None


_UNSHARDED = _Sharding(None, 1, None, None)


def _sharding_of(fun_jit, lowered, args, kwargs):
    """The `_Sharding` of an export: each argument leaf's from jit's `in_shardings`, else its own (an array's
    layout over several devices, a ShapeDtypeStruct's `sharding`); each result's from jit's `out_shardings`."""
    program = lowered.closed.program
    leaves = tree.tree_leaves(fun_jit._split(args, kwargs)[:2])
    asked = lowered.in_shardings or [None] * len(leaves)
    in_shardings = [a if a is not None else getattr(leaf, "sharding", None) if isinstance(leaf, ShapeDtypeStruct)
                    else None for a, leaf in zip(asked, leaves)]
    # (`asked` holds an array's own layout and a ShapeDtypeStruct's over a concrete Mesh: jit compiles for those;
    # a struct's over an AbstractMesh, which names no devices, is read here)
    out_shardings = list(lowered.out_shardings or [None] * len(program.out_avals))
    mesh, nr_devices = _shardings.export_mesh(program, in_shardings, out_shardings)
    if nr_devices == 1 and mesh is None:
        return _UNSHARDED
    return _Sharding(None if mesh is None else list(mesh.devices.flat), nr_devices,
                     tuple(map(_shardings.abstract_sharding, in_shardings, program.in_avals)),
                     tuple(map(_shardings.abstract_sharding, out_shardings, program.out_avals)))


def _checked_platforms(platforms):
    if platforms is None:
        return (NUMAX_PLATFORMS[xla.default_backend().platform],)
    platforms = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    known = (*NUMAX_PLATFORMS.values(), *GENERIC_PLATFORMS)
    unknown = [p for p in platforms if p not in known]
    if unknown:
        raise ValueError(f"export: unknown platforms {unknown}; numax exports for {sorted(known)}")
    if not platforms or len(set(platforms)) != len(platforms):
        raise ValueError(f"export: platforms must be distinct and at least one, got {platforms}")
    return platforms


def _exported_program(name, closed, in_tree, out_tree, platforms, disabled_checks, sharding=_UNSHARDED,
                      in_avals=None, out_avals=None):
    """The Exported of a closed program (its constants written into the module), laid out by `sharding`.
    `in_avals`/`out_avals`: the avals the Exported shows when they differ from the program's (float0 where the
    program has bool)."""
    text, modules = lower_for_platforms(closed, name, platforms, sharding.devices)
    if any(module.host_callbacks for module in modules):
        raise ValueError(f"export: {name!r} calls back into Python (a callback, debug.print), which a "
                         "serialized module cannot hold")
    check_custom_calls(text, disabled_checks)
    in_avals = closed.program.in_avals if in_avals is None else in_avals
    out_avals = closed.program.out_avals if out_avals is None else out_avals
    return Exported(name, in_tree, in_avals, out_tree, out_avals, platforms, text,
                    make_vjp=lambda: _export_vjp(name, closed, in_avals, out_avals, platforms, disabled_checks,
                                                 sharding),
                    disabled_safety_checks=disabled_checks, nr_devices=sharding.nr_devices,
                    in_shardings=sharding.in_shardings, out_shardings=sharding.out_shardings)


def _export_vjp(name, closed, in_avals, out_avals, platforms, disabled_checks, sharding):
    """The Exported of `(primals..., cotangents...) -> primal cotangents` for a closed program with avals
    `in_avals -> out_avals`. As in jax, a cotangent of an integer or bool value has dtype float0: the module
    takes and returns it as i1 zeros; only the inexact primals are differentiated."""
    from ..transforms.autodiff import vjp

    num_primals = len(in_avals)
    inexact = [i for i, aval in enumerate(in_avals) if is_differentiable(aval)]

    def flat_vjp(*primals_and_cotangents):
        primals, cotangents = primals_and_cotangents[:num_primals], primals_and_cotangents[num_primals:]

        def of_inexact(*xs):
            leaves = list(primals)
            for i, x in zip(inexact, xs):
                leaves[i] = x
            return eval_closed_program(closed, *leaves)

        _, pullback = vjp(of_inexact, *(primals[i] for i in inexact))
        inexact_cts = dict(zip(inexact, pullback(list(cotangents))))
        return [inexact_cts[i] if i in inexact_cts else full(aval.shape, False, np.bool_)
                for i, aval in enumerate(in_avals)]

    vjp_in_avals = (*in_avals, *map(tangent_aval, out_avals))
    vjp_out_avals = tuple(map(tangent_aval, in_avals))
    structs = [ShapeDtypeStruct(a.shape, a.dtype) for a in map(_module_aval, vjp_in_avals)]
    lowered = jit(flat_vjp).lower(*structs)
    if sharding.in_shardings is not None:  # cotangents laid out as the values they are cotangents of
        sharding = sharding._replace(in_shardings=sharding.in_shardings + sharding.out_shardings,
                                     out_shardings=sharding.in_shardings)
    return _exported_program(f"vjp_{name}", lowered.closed, lowered.in_tree, lowered.out_tree, platforms,
                             disabled_checks, sharding, vjp_in_avals, vjp_out_avals)


def _module_aval(aval):
    """The aval a module holds a value of `aval` as: float0 (which has no StableHLO type) as i1, as jax does."""
    return aval.update(dtype=np.dtype(np.bool_), weak_type=False) if aval.dtype == dtypes.float0 else aval
