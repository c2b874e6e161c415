"""Top-level utilities of `jax`'s namespace over numax's engine: process queries, the `default_device`,
`disable_jit` and `ensure_compile_time_eval` contexts, cache and array housekeeping, naming annotations,
`typeof`, `linear_transpose` and `custom_gradient`."""

import contextlib
import functools
import gc

import numpy as np

from numax import numpy as xnp
from numax._runtime import devices as _devices
from numax.core import caches, dtypes
from numax.core import pytree as tree
from numax.core.ad_util import UndefinedPrimal, tangent_aval
from numax.core.avals import ShapedArray, get_aval
from numax.core.config import config
from numax.core.evaluation import eval_program
from numax.core.sharding import AxisType, NamedSharding, P
from numax.core.staging import trace_to_program
from numax.core.trace import Tracer, ensure_compile_time_eval, get_aval_of  # noqa: F401  (re-exported)
from numax.lax.ad import instantiate
from numax.lowering import xla
from numax.lowering.array import Array
from numax.transforms.autodiff import jacrev
from numax.transforms.custom_derivatives import custom_vjp
from numax.transforms.transpose import backward_pass
from numax.tree_util import Partial

float0 = dtypes.float0
jacobian = jacrev


# --- processes -------------------------------------------------------------------------------------------
# --- contexts --------------------------------------------------------------------------------------------
def disable_jit(disable=True):
    """Context manager under which `jit`-decorated functions run op by op in Python (each operation
    eagerly), so Python control flow on values and printing work inside them; `disable_jit(False)`
    re-enables jit inside an outer block. `lax.cond`/`while_loop`/`scan` still trace their bodies.
    Applies to the calling thread only, as in JAX."""
    return config.override("disable_jit", bool(disable))


def default_device(new_val):
    """Context manager placing new arrays, eager operations and jitted calls without array arguments on
    `new_val` (a Device, a platform name such as 'cpu', or None for no change), in the calling thread.
    Jitted calls with array arguments run where those arrays live (numax arrays are always committed to
    their device)."""
    if isinstance(new_val, str):
        new_val = _devices(new_val)[0]
    if new_val is None:
        return contextlib.nullcontext()
    return config.override("default_device", new_val)


def enable_x64(new_val=True):
    """Context manager turning 64-bit types on (or off, with False) in the calling thread, as
    `numax.config.update('jax_enable_x64', ...)` does for every thread."""
    return config.override("enable_x64", bool(new_val))


def numpy_dtype_promotion(new_val):
    """Context manager (or decorator) for `jax_numpy_dtype_promotion` in the calling thread: 'standard' (JAX's
    promotion lattice) or 'strict' (mixing dtypes implicitly raises `numax.errors.TypePromotionError`; weakly
    typed Python scalars still adapt)."""
    return config.option("jax_numpy_dtype_promotion", new_val)


def numpy_rank_promotion(new_val):
    """Context manager (or decorator) for `jax_numpy_rank_promotion` in the calling thread: what numax.numpy
    does when operands of different ranks broadcast: 'allow', 'warn' (a UserWarning) or 'raise' (a ValueError)."""
    return config.option("jax_numpy_rank_promotion", new_val)


# --- caches and arrays ---------------------------------------------------------------------------------
def clear_caches():
    """Drops every compiled executable and traced-program cache: jit functions', eager operations' and the
    transformations' (the next call traces and compiles again)."""
    caches.clear_all()


def live_arrays(platform=None):
    """Every numax Array not yet deleted (optionally only those on `platform`, e.g. 'cpu')."""
    wanted = None if platform is None else ("gpu" if platform == "cuda" else platform)
    return [value for value in gc.get_objects() if type(value) is Array and not value.is_deleted()
            and (wanted is None or value.platform == wanted)]


def copy_to_host_async(x):
    """Starts copying every Array leaf of `x` to the host, so that a later read does not wait; returns `x`."""
    for leaf in tree.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.copy_to_host_async()
    return x


def effects_barrier():
    """Waits until every program with host callbacks launched so far, and so every callback, has finished (as
    jax's: computations without callbacks are not waited for; block on their outputs for that)."""
    xla.wait_for_effects()


# --- names and types -----------------------------------------------------------------------------------
class named_scope(contextlib.ContextDecorator):
    """Context manager (or decorator) naming the operations inside it. numax records no name stack: the
    annotation is accepted and checked but does not appear in the IR."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def named_call(fun, *, name=None):
    """`fun` wrapped in `named_scope(name)` (its own name by default)."""
    return named_scope(fun.__name__ if name is None else name)(fun)


# Types whose `typeof` is not found from an array type: each maps to `function(value) -> its type`. Typed key arrays
# (numax.random), refs (numax.ref) and the high-level types of numax.experimental.hijax register here.
typeof_handlers = {}


def typeof(x):
    """The abstract value (ShapedArray: shape, dtype, weak type) of an array, tracer or scalar. For an array
    laid out over a mesh with Explicit axes, the type also shows how those axes split it (`float32[8@x,4]`,
    and `.sharding`), as JAX's does. Inside jit, a traced argument's type keeps its layout; the values computed from
    it carry none (their Explicit axes propagate through XLA's partitioner as Auto ones do). A typed key array's
    type is a ShapedArray of its key dtype (`key<fry>[]`), a ref's an AbstractRef (see `typeof_handlers`)."""
    handler = typeof_handlers.get(type(x))
    if handler is not None:
        return handler(x)
    aval = get_aval_of(x)
    sharding = getattr(x, "explicit_sharding" if isinstance(x, Tracer) else "_sharding", None)
    if isinstance(sharding, NamedSharding) and AxisType.Explicit in sharding.mesh.axis_types:
        return ShardedType(aval, sharding)
    return aval


def _axes_of(entry):
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


class ShardedType(ShapedArray):
    """`typeof` of an array split over Explicit mesh axes: its ShapedArray plus the split, `float32[8@x,4]`."""

    __slots__ = ("sharding",)

    def __init__(self, aval, sharding):
        super().__init__(aval.shape, aval.dtype, aval.weak_type)
        explicit = {name for name, kind in zip(sharding.mesh.axis_names, sharding.mesh.axis_types)
                    if kind is AxisType.Explicit}
        self.sharding = NamedSharding(sharding.mesh, P(*(
            tuple(axis for axis in _axes_of(entry) if axis in explicit) for entry in sharding.spec)))

    def str_short(self):
        entries = tuple(self.sharding.spec) + (None,) * (self.ndim - len(self.sharding.spec))
        dims = [str(size) + ("" if not _axes_of(entry) else f"@{entry}" if isinstance(entry, str) else
                             f"@({','.join(entry)})") for size, entry in zip(self.shape, entries)]
        return f"{dtypes.short_name(self.dtype)}[{','.join(dims)}]"

    __str__ = str_short


# --- linear transposition and custom gradients ----------------------------------------------------------
def _abstract_primal(x):
    if isinstance(x, Tracer):
        return x.aval.strip_weak_type()
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, (np.ndarray, np.generic)) or type(x) in dtypes.python_scalar_types:
        return get_aval(x)
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function `fun`, at arguments shaped like `primals` (only their shapes
    and dtypes are read). The result maps a cotangent shaped like `fun`'s output to a tuple of input
    cotangents with `primals`' structure and dtypes."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    leaves, in_tree = tree.tree_flatten(primals)
    in_avals = [_abstract_primal(x) for x in leaves]

    def flat_fun(*args):
        out_leaves, out_tree = tree.tree_flatten(fun(*in_tree.unflatten(args)))
        flat_fun.out_tree = out_tree
        return out_leaves

    program, consts = trace_to_program(flat_fun, in_avals)
    out_tree = flat_fun.out_tree
    out_avals = program.out_avals
    in_dtypes, out_dtypes = [a.dtype for a in in_avals], [a.dtype for a in out_avals]
    if not (all(dtypes.is_inexact(d) for d in in_dtypes + out_dtypes)
            or all(np.issubdtype(d, np.integer) for d in in_dtypes + out_dtypes)):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], and integer -> "
                        f"integer functions, but got {in_dtypes} -> {out_dtypes}.")

    def transposed_fun(consts, out_cotangent):
        cts, ct_tree = tree.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected {out_tree} but got {ct_tree}")
        ct_avals = [get_aval_of(ct) for ct in cts]
        if any((a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(ct_avals, out_avals)):
            raise TypeError("cotangent type does not match function output, expected "
                            f"{[a.str_short() for a in out_avals]} but got {[a.str_short() for a in ct_avals]}")
        cts = [xnp.asarray(ct, a.dtype) for ct, a in zip(cts, out_avals)]
        undefined = [UndefinedPrimal(a.strip_weak_type()) for a in in_avals]
        cts_in = backward_pass(program, consts, undefined, cts)
        return in_tree.unflatten([instantiate(ct) for ct in cts_in])

    # A Partial, so that the transposed function can be passed through jit and other transformations.
    return Partial(transposed_fun, consts)


class _VJPResiduals:
    """What custom_gradient's backward pass needs: the traced VJP program (static) and its constants."""

    def __init__(self, program, consts, ct_tree, in_tree):
        self.program, self.consts, self.ct_tree, self.in_tree = program, consts, ct_tree, in_tree


tree.register_pytree_node(
    _VJPResiduals,
    lambda r: (r.consts, (r.program, r.ct_tree, r.in_tree)),
    lambda aux, consts: _VJPResiduals(aux[0], list(consts), aux[1], aux[2]),
)


def custom_gradient(fun, *, with_logs=False):
    """A function with the gradient `fun` gives, TensorFlow style: `fun(*args)` returns `(value, vjp)`,
    `vjp(output_cotangent)` the cotangents of the arguments (a tuple, or one value for one argument).
    Built on `custom_vjp`: the vjp is traced in the forward pass and run in the backward pass. (JAX 0.11's
    backward-pass logging, `with_logs`, is not supported yet.)"""
    if with_logs:
        raise NotImplementedError("numax.custom_gradient: `with_logs` (new in JAX 0.11) is not supported yet")

    @custom_vjp
    def wrapped(*args):
        value, _ = fun(*args)
        return value

    def forward(*args):
        value, vjp_rule = fun(*args)
        out_leaves, out_tree = tree.tree_flatten(value)
        ct_avals = [tangent_aval(get_aval_of(x).strip_weak_type()) for x in out_leaves]

        def flat_rule(*cts):
            ct_leaves, in_tree = tree.tree_flatten(vjp_rule(out_tree.unflatten(cts)))
            flat_rule.in_tree = in_tree
            return ct_leaves

        program, consts = trace_to_program(flat_rule, ct_avals)
        return value, _VJPResiduals(program, consts, out_tree, flat_rule.in_tree)

    def backward(residuals, cotangent):
        cts, ct_tree = tree.tree_flatten(cotangent)
        if ct_tree != residuals.ct_tree:
            raise TypeError(f"custom_gradient: cotangent structure {ct_tree} does not match the output's "
                            f"{residuals.ct_tree}")
        cts_in = residuals.in_tree.unflatten(eval_program(residuals.program, residuals.consts, *cts))
        return (cts_in,) if tree.treedef_is_leaf(residuals.in_tree) else cts_in

    wrapped.defvjp(forward, backward)
    functools.update_wrapper(wrapped, fun)
    return wrapped
