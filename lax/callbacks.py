"""Host callbacks: Python functions called on host numpy arrays from inside numax programs.

Three primitives: `pure_callback` (results declared up front; may be dropped when unused, like any pure
op), `debug_callback` (no results, `effectful` and lowered with `has_side_effect`, so neither DCE
nor XLA removes it; the debug callbacks of one body are chained in program order) and `io_callback`
(declared results and a side effect: never dropped; `ordered=True` ones join their body's chain, and
refuse vmap and differentiation as JAX's do). Programs on one device run in launch order, so chaining
within a program is all the ordering between programs needs (lowering/xla/compiler.py). Eagerly they
call the Python function at once; compiled, they lower to XLA's typed-FFI Python callback target
(`xla_ffi_python_{cpu,gpu}_callback`), which finds the callable by its position in the module's
host-callback list. jaxlib copies returned bytes without checking them (RUNTIME.md, traps), so every
result goes through `HostCallback.check_results` before it is handed back.
"""

import weakref

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import ShapedArray, get_aval
from ..core.primitives import Primitive, batching_rules
from ..core.trace import Tracer, get_aval_of
from ..lowering.array import Array, put
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, row_major_layout, tensor_type

__all__ = ["pure_callback", "debug_callback"]  # (io_callback is numax.experimental's, as in JAX)


class HostCallback:
    """A Python function over flat host arrays, returning a tuple of arrays of the declared avals.

    Hashed by identity: it is a primitive parameter, so each call site makes a new one.
    """

    __slots__ = ("function", "name", "result_avals", "result_tree", "device")

    def __init__(self, function, name, result_avals=(), result_tree=None, device=None):
        self.function = function  # flat numpy arrays -> a pytree of results (None for debug callbacks)
        self.name = name
        self.result_avals = tuple(result_avals)
        self.result_tree = result_tree
        self.device = device  # where an SPMD program calls it (None: its first device)

    def __call__(self, *flat_args):
        # XLA's views are valid only during the call: copy so the function may keep what it gets.
        results = self.function(*(np.array(a, copy=True) for a in flat_args))
        if self.result_tree is None:
            return ()
        return self.check_results(results)

    def check_results(self, results):
        """The results as a tuple of contiguous arrays of exactly the declared shapes and dtypes."""
        try:
            # Where a result is declared, any array-like will do (a list, a scalar): it becomes one array.
            leaves, mismatch = self.result_tree.flatten_up_to(results), None
        except ValueError as error:
            leaves, mismatch = None, error
        if leaves is not None and not self._shapes_match(leaves):
            # Where the structure fits, JAX matches the result's leaves whatever their nesting (`[x]` for a
            # declared `x`), not array-likes.
            all_leaves = tree.tree_leaves(results)
            if self._shapes_match(all_leaves):
                leaves = all_leaves
        if leaves is None:
            raise TypeError(f"callback {self.name} returned a value of structure {tree.tree_structure(results)}, "
                            f"but result_shape_dtypes declares {self.result_tree} ({mismatch})")
        return tuple(self._check_leaf(i, leaf, aval) for i, (leaf, aval) in enumerate(zip(leaves, self.result_avals)))

    def _shapes_match(self, leaves):
        return len(leaves) == len(self.result_avals) and all(
            np.shape(leaf) == aval.shape for leaf, aval in zip(leaves, self.result_avals))

    def _check_leaf(self, position, leaf, aval):
        value = np.asarray(leaf)
        where = f"result {position} of callback {self.name}"
        if value.shape != aval.shape:
            raise TypeError(f"{where} has shape {value.shape} (dtype {value.dtype.name}), "
                            f"but result_shape_dtypes declares shape {aval.shape} (dtype {aval.dtype.name})")
        if value.dtype != aval.dtype:
            # Convert within a kind or upwards (int -> float, float64 -> float32), as JAX does; never
            # downwards (float -> int, complex -> float), which would lose information silently.
            if _kind_rank(value.dtype) > _kind_rank(aval.dtype):
                raise TypeError(f"{where} has dtype {value.dtype.name} (shape {value.shape}), which does not "
                                f"convert to the declared dtype {aval.dtype.name}")
            value = value.astype(aval.dtype)
        return np.asarray(value, order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)

    def __repr__(self):
        return self.name


def _kind_rank(dtype):
    """bool < integers < floats < complex; anything else (strings, objects) converts to nothing."""
    if dtype == dtypes.bool_:
        return 0
    if dtypes.is_integer(dtype):
        return 1
    if dtypes.is_float(dtype):
        return 2
    if dtypes.is_complex(dtype):
        return 3
    return 4


def _host_value(value):
    """A concrete argument as the numpy array a compiled callback would see (canonical dtype)."""
    return np.asarray(value, dtype=get_aval(value).dtype)


# --- pure_callback ------------------------------------------------------------------------------------
pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.def_abstract_eval(lambda *avals, callback, vmap_method: list(callback.result_avals))


def _pure_callback_impl(*args, callback, vmap_method):
    results = callback(*(_host_value(a) for a in args))
    return [put(value) for value in results]


pure_callback_p.def_impl(_pure_callback_impl)

# --- debug_callback -------------------------------------------------------------------------------------
debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True  # kept by DCE although nothing uses its (empty) result
debug_callback_p.def_abstract_eval(lambda *avals, callback, ordered: [])


def _debug_callback_impl(*args, callback, ordered):
    callback(*(_host_value(a) for a in args))
    return []


debug_callback_p.def_impl(_debug_callback_impl)

# --- io_callback ------------------------------------------------------------------------------------------
io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True  # kept by DCE even when its results are unused
io_callback_p.def_abstract_eval(lambda *avals, callback, ordered: list(callback.result_avals))


def _io_callback_impl(*args, callback, ordered):
    return _pure_callback_impl(*args, callback=callback, vmap_method=None)


io_callback_p.def_impl(_io_callback_impl)


# --- lowering -------------------------------------------------------------------------------------------
# XLA may reorder side-effecting calls (the GPU did), so each debug callback of a function body takes
# the previous one's extra zero-size result as an extra operand: a data dependency that keeps them in
# program order. Bodies of loops and conditionals start chains of their own.
_ORDER_TOKEN = np.zeros((0,), np.uint8)
_ORDER_TOKEN_TYPE = tensor_type(_ORDER_TOKEN.shape, dtypes.uint8)
_order_chains = weakref.WeakKeyDictionary()  # FunctionBuilder (one per body) -> SSA value of its last token


class _InProgramOrder:
    """Adapts a callback to take and return the ordering token (which it never sees)."""

    __slots__ = ("callback",)

    def __init__(self, callback):
        self.callback = callback

    @property
    def device(self):
        return self.callback.device

    def __repr__(self):
        return repr(self.callback)

    def __call__(self, *args):
        return tuple(self.callback(*args[:-1])) + (_ORDER_TOKEN,)


def callback_lowering(target, side_effect, in_program_order=None):
    """The lowering of a callback primitive to `target`; `in_program_order(params)` says whether a call
    joins its body's chain of ordered callbacks (by default, every call with a side effect does)."""

    def rule(ctx, *operands, callback, **params):
        ordered_by_token = side_effect if in_program_order is None else in_program_order(params)
        avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
        operand_layouts = [row_major_layout(a) for a in avals_in]
        result_types = [aval_type(a) for a in avals_out]
        result_layouts = [row_major_layout(a) for a in avals_out]
        if ordered_by_token:
            previous = _order_chains.get(ctx.builder)
            if previous is None:
                previous = ctx.builder.constant(_ORDER_TOKEN)
            operands = list(operands) + [previous]
            callback = _InProgramOrder(callback)
            operand_layouts.append("dense<0> : tensor<1xindex>")
            result_types.append(_ORDER_TOKEN_TYPE)
            result_layouts.append("dense<0> : tensor<1xindex>")
        index = ctx.module.add_host_callback(callback)
        attributes = {
            "call_target_name": f'"{target}"',
            "api_version": "4 : i32",
            "backend_config": f"{{index = {index} : ui64}}",
            # The callback reads and writes plain C-order numpy arrays.
            "operand_layouts": "[" + ", ".join(operand_layouts) + "]",
            "result_layouts": "[" + ", ".join(result_layouts) + "]",
        }
        if side_effect:
            attributes["has_side_effect"] = "true"
        if ctx.module.num_partitions > 1 and not ctx.module.axis_env:
            attributes["sdy.sharding"] = _on_one_device(ctx.module, callback, len(result_types))
        results = ctx.builder.op("stablehlo.custom_call", list(operands), result_types, attributes)
        if ordered_by_token:
            _order_chains[ctx.builder] = results.pop()
        return results

    rule.__name__ = f"lower_{target}"
    return rule


def _on_one_device(module, callback, num_results):
    """The sharding that runs a callback of an SPMD program once, on one device, with whole values, as JAX
    does (a side-effecting op must have one; per-device bodies, shard_map's and pmap's, call it per device)."""
    device = getattr(callback, "device", None)  # (through _InProgramOrder too)
    if device is None:
        position = 0
    elif device in module.devices:
        position = module.devices.index(device)
    else:
        raise ValueError(f"Sharding provided to {callback} specifies a device {device} that is not in the "
                         f"device assignment ({module.devices})")
    mesh = f"<mesh<[], device_ids=[{position}]>, []>"
    return "#sdy.sharding_per_value<[" + ", ".join([mesh] * max(1, num_results)) + "]>"


# (pure: no side effect, never chained; debug: always chained, as numax.debug.callback documents; io: chained
# when ordered.)
for _primitive, _effectful, _in_order in ((pure_callback_p, False, None), (debug_callback_p, True, None),
                                          (io_callback_p, True, lambda params: params["ordered"])):
    for _target, _platform in (("xla_ffi_python_cpu_callback", None), ("xla_ffi_python_gpu_callback", "gpu")):
        register_lowering(_primitive, callback_lowering(_target, _effectful, _in_order), platform=_platform)


# --- public wrappers ------------------------------------------------------------------------------------
def _function_name(function):
    return getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or repr(function)


def _result_aval(name, leaf):
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{name}: result_shape_dtypes leaves must have .shape and .dtype "
                        f"(for example numax.ShapeDtypeStruct), got {type(leaf).__name__} {leaf!r}")
    dtype = np.dtype(dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError(f"{name}: result_shape_dtypes cannot declare the 64-bit type {dtype.name} "
                         "while 64-bit mode is off (numax.config.update('numax_enable_x64', True) turns it on)")
    return ShapedArray(tuple(int(d) for d in shape), dtype)


def _check_argument(name, leaf):
    if isinstance(leaf, (Tracer, Array)):
        return leaf
    try:
        get_aval(leaf)
    except TypeError:
        raise TypeError(f"{name}: arguments must be arrays or scalars (pytrees of them), "
                        f"got {type(leaf).__name__} {leaf!r}") from None
    return leaf


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Calls the Python function `callback(*args, **kwargs)` on host numpy arrays, eagerly or compiled.

    `result_shape_dtypes` is a pytree of objects with `.shape` and `.dtype` (numax.ShapeDtypeStruct)
    that the callback's result must match; results are converted to the declared dtypes when that
    loses no kind (int -> float is fine, float -> int is an error). The callback must be pure: an
    unused result lets the call be dropped. A program over several devices calls it once, on the device of
    `sharding` (a single-device sharding; by default the program's first device).
    """
    if vmap_method not in (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                           "legacy_vectorized"):
        raise ValueError(f"pure_callback: unknown vmap_method {vmap_method!r}")
    leaves, host_callback = _flat_host_callback("pure_callback", callback, result_shape_dtypes, sharding, args,
                                                kwargs)
    outs = pure_callback_p.bind(*leaves, callback=host_callback, vmap_method=vmap_method)
    return host_callback.result_tree.unflatten(outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Calls the impure Python function `callback(*args, **kwargs)` on host numpy arrays, eagerly or compiled.

    Like `pure_callback` (results declared by `result_shape_dtypes`, None for none), but never dropped as
    dead code, not differentiable, and with `ordered=True` run in program order: then it cannot be
    vmapped. Unordered, vmap calls it once per example. A program over several devices calls it once, on
    the device of `sharding` (a single-device sharding; by default the program's first device).
    """
    leaves, host_callback = _flat_host_callback("io_callback", callback, result_shape_dtypes, sharding, args,
                                                kwargs)
    outs = io_callback_p.bind(*leaves, callback=host_callback, ordered=bool(ordered))
    return host_callback.result_tree.unflatten(outs)


def _flat_host_callback(name, callback, result_shape_dtypes, sharding, args, kwargs):
    """(the checked array leaves of (args, kwargs), a HostCallback calling `callback` on them)."""
    device = None
    if sharding is not None:
        devices = list(sharding.device_set)
        if len(devices) != 1:
            raise NotImplementedError(f"{name} only supports a sharding over a single device, got {sharding}")
        device = devices[0]
    leaves, in_tree = tree.tree_flatten((args, kwargs))
    leaves = [_check_argument(name, leaf) for leaf in leaves]
    result_leaves, result_tree = tree.tree_flatten(result_shape_dtypes)
    result_avals = [_result_aval(name, leaf) for leaf in result_leaves]

    def flat_function(*flat_args):
        call_args, call_kwargs = in_tree.unflatten(flat_args)
        return callback(*call_args, **call_kwargs)

    return leaves, HostCallback(flat_function, _function_name(callback), result_avals, result_tree, device)


def _is_dynamic(leaf):
    return isinstance(leaf, (Tracer, Array, np.ndarray, np.generic))


def debug_callback(callback, *args, ordered=False, **kwargs):
    """Calls `callback(*args, **kwargs)` for its side effect, each time the program runs; returns None.

    Array leaves of the arguments reach the callback as numpy arrays; other leaves (Python scalars,
    strings) are passed through unchanged. Not removed as dead code although it has no result.
    """
    leaves, in_tree = tree.tree_flatten((args, kwargs))
    dynamic = [_is_dynamic(leaf) for leaf in leaves]
    static_leaves = [None if is_dynamic else leaf for leaf, is_dynamic in zip(leaves, dynamic)]

    def flat_function(*dynamic_values):
        values = iter(dynamic_values)
        full = [next(values) if is_dynamic else leaf for leaf, is_dynamic in zip(static_leaves, dynamic)]
        call_args, call_kwargs = in_tree.unflatten(full)
        callback(*call_args, **call_kwargs)

    host_callback = HostCallback(flat_function, _function_name(callback))
    debug_callback_p.bind(*(leaf for leaf, d in zip(leaves, dynamic) if d), callback=host_callback,
                          ordered=bool(ordered))


# --- differentiation ------------------------------------------------------------------------------------
# A pure or io callback is opaque: numax cannot see its derivative, so differentiating through one is an
# error (as in JAX). A debug callback has no outputs: differentiation runs it on the primal values and carries on.
from ..core.primitives import jvp_rules, transpose_rules  # noqa: E402


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `numax.custom_jvp` to use callbacks while "
                     "taking gradients.")


def _pure_callback_transpose(cotangents, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `numax.custom_vjp` to use callbacks "
                     "while taking gradients.")


def _debug_callback_jvp(primals, tangents, **params):
    return debug_callback_p.bind(*primals, **params), []


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cotangents, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


jvp_rules[pure_callback_p] = _pure_callback_jvp
jvp_rules[io_callback_p] = _io_callback_jvp
transpose_rules[io_callback_p] = _io_callback_transpose
transpose_rules[pure_callback_p] = _pure_callback_transpose
jvp_rules[debug_callback_p] = _debug_callback_jvp
transpose_rules[debug_callback_p] = lambda cotangents, *args, **params: [None] * len(args)


# --- batching rules ------------------------------------------------------------------------------------
# Under vmap a callback stays one host call. `vmap_method` says what the Python function sees (as in JAX):
# "sequential" (and "sequential_unrolled") call it once per example inside that one host call and stack the
# results; "expand_dims" calls it once on the batched arrays (batch first), unbatched arguments getting a
# leading axis of size 1; "broadcast_all" broadcasts them to the batch size; "legacy_vectorized" passes them
# unchanged. A debug callback, and an unordered io callback, run once per example, as JAX's do, again inside
# one host call.
def _host_slices(values, batched, size):
    """One argument list per example: batched host arrays sliced along their leading axis."""
    return [[value[i] if is_batched else value for value, is_batched in zip(values, batched)] for i in range(size)]


def _sequential(callback, batched, size):
    """A host callback looping over the examples of its batched (leading-axis) arguments."""
    result_avals = [aval.update(shape=(size,) + aval.shape) for aval in callback.result_avals]

    def per_example(*values):
        results = [callback.check_results(callback.function(*example)) for example in
                   _host_slices(values, batched, size)]
        stacked = [np.stack([r[i] for r in results]) if results else np.zeros(aval.shape, aval.dtype)
                   for i, aval in enumerate(result_avals)]
        return callback.result_tree.unflatten(stacked)

    return HostCallback(per_example, callback.name, result_avals, callback.result_tree, callback.device)


def _pure_callback_batch(values, dims, callback, vmap_method):
    from .batching import axis_size_of, batch_at_front
    from .shapes import broadcast_in_dim

    size = axis_size_of(values, dims)
    batched = [d is not None for d in dims]
    values = [batch_at_front(v, d, size) if d is not None else v for v, d in zip(values, dims)]
    if vmap_method in ("sequential", "sequential_unrolled"):
        host_callback = _sequential(callback, batched, size)
    elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        if vmap_method != "legacy_vectorized":
            lead = size if vmap_method == "broadcast_all" else 1
            values = [v if is_batched else broadcast_in_dim(v, (lead,) + get_aval_of(v).shape,
                                                            tuple(range(1, get_aval_of(v).ndim + 1)))
                      for v, is_batched in zip(values, batched)]
        result_avals = [aval.update(shape=(size,) + aval.shape) for aval in callback.result_avals]
        host_callback = HostCallback(callback.function, callback.name, result_avals, callback.result_tree,
                                     callback.device)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
            "'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            f"Got vmap_method={vmap_method!r}.")
    outs = pure_callback_p.bind(*values, callback=host_callback, vmap_method=vmap_method)
    return outs, [0] * len(outs)


def _debug_callback_batch(values, dims, callback, ordered):
    from .batching import axis_size_of, batch_at_front

    size = axis_size_of(values, dims)
    batched = [d is not None for d in dims]

    def per_example(*host_values):
        for example in _host_slices(host_values, batched, size):
            callback.function(*example)

    values = [batch_at_front(v, d, size) if d is not None else v for v, d in zip(values, dims)]
    outs = debug_callback_p.bind(*values, callback=HostCallback(per_example, callback.name), ordered=ordered)
    return outs, []


def _io_callback_batch(values, dims, callback, ordered):
    from .batching import axis_size_of, batch_at_front

    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    size = axis_size_of(values, dims)
    batched = [d is not None for d in dims]
    values = [batch_at_front(v, d, size) if d is not None else v for v, d in zip(values, dims)]
    outs = io_callback_p.bind(*values, callback=_sequential(callback, batched, size), ordered=False)
    return outs, [0] * len(outs)


def io_callback_kinds(programs):
    """Which io callbacks `programs` (Programs or ClosedPrograms) and the programs nested in their equations
    call: a subset of {"ordered", "unordered"}. (jax's IO effects, which its control flow's batching rules
    refuse in some places.)"""
    from ..core.ir import all_equations

    return {"ordered" if eqn.params["ordered"] else "unordered"
            for program in programs for eqn in all_equations(program) if eqn.primitive is io_callback_p}


batching_rules[pure_callback_p] = _pure_callback_batch
batching_rules[io_callback_p] = _io_callback_batch
batching_rules[debug_callback_p] = _debug_callback_batch
