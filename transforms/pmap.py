"""`pmap`: run one per-device program on several devices at once, with collectives between them.

Owns the `pmap` call primitive and `numax.pmap`. The function is traced once per signature into a
per-device program (the mapped axis removed from its inputs), with the axis name bound
(`lax.collectives.extend_axis_env`) so that collectives over it are staged as equations. The primitive
holds that program; it is lowered as JAX lowers pmap today: an SPMD program over the global arrays whose
body is an `sdy.manual_computation` (each device runs the per-device program on its block), which XLA's
partitioner compiles once for all the devices. Outputs are ShardedArrays whose blocks stay on their
devices, and such arrays passed to the next call are used where they are.

Transformations see the primitive as they see `jit`: its JVP, partial evaluation, transpose and batching
rules transform the per-device program (with the axis bound again) and bind a new pmap.
"""

import functools
import threading
import weakref

from ..core import caches
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.config import trace_context
from ..core.ir import ClosedProgram, Equation, Program, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.sharding import pmap_sharding
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import Tracer, get_aval_of, is_tracing, trace_state
from ..lax.collectives import extend_axis_env
from ..lowering import native_dispatch, sharded, xla
from ..lowering.array import Array
from ..lowering.lower import lower_program_body, lower_to_module, register_lowering
from ..lowering.process_local import pmap_global_argument, pmap_local_result
from ..lowering.stablehlo import aval_type, tensor_type
from .float0 import bool_arguments, float0_as_bool, float0_results, has_float0_boundary
from .jit import CacheEntry, TracerArgument, jit, leaf_signature
from .jvp import jvp_program
from .partial_eval import partial_eval_program, partial_eval_rules
from .transpose import transpose_program
from .vmap import _argument_names, _axes_of_leaves, _mapped_size

pmap_p = Primitive("pmap", multiple_results=True)
pmap_p.spans_devices = True  # a jit holding it runs it as its own program (lowering/dispatch.py)


def _mapped(aval, axis, size):
    """The global aval of a per-device value mapped at `axis` (None: the same value on every device)."""
    if axis is None:
        return aval
    return ShapedArray(aval.shape[:axis] + (size,) + aval.shape[axis:], aval.dtype, aval.weak_type)


def _block_shape(aval, axis):
    """The shape of one device's block of a global value mapped at `axis`."""
    if axis is None:
        return aval.shape
    return aval.shape[:axis] + (1,) + aval.shape[axis + 1:]


def _pmap_abstract_eval(*avals, program, axis_size, out_axes, **_):
    return [_mapped(a, axis, axis_size) for a, axis in zip(program.out_avals, out_axes)]


pmap_p.def_abstract_eval(_pmap_abstract_eval)


# --- lowering: an SPMD program whose body runs per device ---------------------------------------------------
_MESH_AXIS = "pmap_axis"


def _mesh_sharding(mesh, ndim, axis):
    dims = ", ".join('{"' + _MESH_AXIS + '"}' if d == axis else "{}" for d in range(ndim))
    return f"<@{mesh}, [{dims}]>"


def _per_value(mesh, avals, axes):
    return "#sdy.sharding_per_value<[" + ", ".join(_mesh_sharding(mesh, a.ndim, axis)
                                                    for a, axis in zip(avals, axes)) + "]>"


def _pmap_lowering(ctx, *args, program, name, axis_name, axis_size, in_axes, out_axes, devices, backend):
    module = ctx.module
    if module.axis_env:  # (a jit traced outside any pmap, holding one, called inside a pmap)
        raise ValueError(f"a pmap over axis {axis_name!r} inside the pmap over {module.axis_env[-1][0]!r}: nested "
                         "pmaps are not supported; use one pmap over the flattened axes, or vmap inside the pmap")
    if module.num_partitions not in (1, axis_size):
        raise NotImplementedError("one program holding pmaps over different numbers of devices")
    module.num_partitions = axis_size
    builder = ctx.builder
    block_types = [tensor_type(_block_shape(a, axis), a.dtype) for a, axis in zip(ctx.avals_in, in_axes)]

    def body(inner, blocks):
        values = [inner.op1("stablehlo.reshape", [b], aval_type(a)) if axis is not None else b
                  for b, a, axis in zip(blocks, program.in_avals, in_axes)]
        saved, module.axis_env = module.axis_env, ((axis_name, axis_size),)
        try:
            with extend_axis_env(axis_name, axis_size):  # rules that trace sub-programs bind collectives
                outs = lower_program_body(module, inner, program.program, program.consts, values)
        finally:
            module.axis_env = saved
        return [inner.op1("stablehlo.reshape", [o], tensor_type(_block_shape(a, axis), a.dtype))
                if axis is not None else o for o, a, axis in zip(outs, ctx.avals_out, out_axes)]

    if axis_size == 1:  # the one device runs the body on the whole (one-block) arrays, as jax lowers it
        return body(builder, list(args))
    mesh = f"pmap_mesh_{axis_size}"
    module.meshes[mesh] = f'<["{_MESH_AXIS}"={axis_size}]>'
    region = builder.region(block_types, body, terminator="sdy.return")
    attributes = {"in_shardings": _per_value(mesh, ctx.avals_in, in_axes),
                  "out_shardings": _per_value(mesh, ctx.avals_out, out_axes),
                  "manual_axes": '#sdy<manual_axes{"' + _MESH_AXIS + '"}>'}
    return builder.op("sdy.manual_computation", list(args), [aval_type(a) for a in ctx.avals_out], attributes,
                      [region])


register_lowering(pmap_p, _pmap_lowering)


# --- running ---------------------------------------------------------------------------------------------
@caches.lru(1024)
def _shared_pmap_sharding(devices, axis, axis_name):
    """One sharding object per layout, so that a pmap's outputs passed to the next pmap call are recognized
    as laid out right by identity (`ShardedArray.has_layout`'s fast path), not by comparing every device's
    block coordinates on each call (about 60 us per argument with 8 devices)."""
    return pmap_sharding(devices, axis, axis_name)


class _PmapExecutable:
    """A pmap compiled for its devices: places the arguments' blocks, runs, wraps the outputs' blocks."""

    def __init__(self, params, in_avals):
        self.devices = params["devices"]
        self.backend = xla.backend_of_device(self.devices[0])
        self.in_axes, self.out_axes = params["in_axes"], params["out_axes"]
        self.axis_name = params["axis_name"]
        self.in_avals = in_avals
        self.out_avals = _pmap_abstract_eval(*in_avals, **params)
        self.in_shardings = [_shared_pmap_sharding(self.devices, axis, self.axis_name) for axis in self.in_axes]
        self.out_shardings = [_shared_pmap_sharding(self.devices, axis, self.axis_name) for axis in self.out_axes]
        invars, outvars = [Var(a) for a in in_avals], [Var(a) for a in self.out_avals]
        closed = ClosedProgram(Program([], invars, outvars, [Equation(pmap_p, invars, outvars, params)]), [])
        self.has_float0 = has_float0_boundary(closed.program)
        if self.has_float0:  # float0 values never reach XLA: bool stand-ins take their places
            closed = float0_as_bool(closed)
        spmd = len(self.devices) > 1
        mesh = f"pmap_mesh_{len(self.devices)}"

        def shardings(avals, axes):  # the blocks each argument or result is split into, for the partitioner
            return {i: f"sdy.sharding = #sdy.sharding{_mesh_sharding(mesh, a.ndim, axis)}"
                    for i, (a, axis) in enumerate(zip(avals, axes)) if spmd}

        arg_attributes = shardings(in_avals, self.in_axes)
        result_attributes = shardings(self.out_avals, self.out_axes)
        self.text, module = lower_to_module(closed, f"pmap_{params['name']}", self.backend.platform, arg_attributes,
                                            result_attributes=result_attributes)
        self.host_callbacks = module.host_callbacks
        self.compiled = xla.compile_module(self.text, self.backend, self.devices, module.host_callbacks,
                                           num_partitions=len(self.devices), spmd=spmd)
        self.call = sharded.MultiDeviceCall(self.compiled, self.devices, closed.program.in_avals, self.in_shardings,
                                            closed.program.out_avals, self.out_shardings, module.host_callbacks)
        self.native_call = None if self.has_float0 else self.call  # what the native path runs on a cache hit

    def __call__(self, *args):
        call = self.call
        if self.has_float0:
            args = bool_arguments(args, self.in_avals)
        outs = call.wrap(call.run([call.argument(v, k) for k, v in enumerate(args)], args))
        return float0_results(outs, self.out_avals) if self.has_float0 else outs


_executables = caches.ComputeOnceCache()
_pmap_functions = weakref.WeakSet()  # every numax.pmap function, for clear_caches
_pmap_functions_lock = threading.Lock()


@caches.register
def _clear_caches():
    _executables.clear()
    with _pmap_functions_lock:
        functions = list(_pmap_functions)
    for function in functions:
        function.traced.clear()
        function.compiled.clear()


def _executable(params, in_avals):
    key = (params["program"], in_avals, params["in_axes"], params["out_axes"], params["devices"], params["axis_name"])
    return _executables.get(key, lambda: _PmapExecutable(params, in_avals))


def _pmap_impl(*args, **params):
    return _executable(params, tuple(get_aval_of(a) for a in args))(*args)


pmap_p.def_impl(_pmap_impl)


# --- transformation rules ------------------------------------------------------------------------------
def _pmap_jvp(primals, tangents, program, axis_name, axis_size, in_axes, out_axes, **params):
    """The JVP of a pmap, split by partial evaluation into two pmaps as jit's is: the primal one (also
    returning the residuals, each device its own, stacked along axis 0) and the tangent one, so that under
    linearize only the second is staged."""
    nonzeros = [type(t) is not Zero for t in tangents]
    n_in, n_out = len(primals), len(program.out_avals)
    with extend_axis_env(axis_name, axis_size):
        jvp_closed, out_nonzeros = jvp_program(program, nonzeros)
        known, unknown, _, num_res = partial_eval_program(
            jvp_closed, [False] * n_in + [True] * sum(nonzeros), [False] * n_out + [True] * sum(out_nonzeros))
    common = dict(params, axis_name=axis_name, axis_size=axis_size)
    outs = pmap_p.bind(*primals, program=known, in_axes=in_axes, out_axes=out_axes + (0,) * num_res, **common)
    primal_out, residuals = outs[:n_out], outs[n_out:]
    avals_out = _pmap_abstract_eval(program=program, axis_size=axis_size, out_axes=out_axes)
    if not any(out_nonzeros):
        return primal_out, [Zero(tangent_aval(a)) for a in avals_out]
    given = [t for t in tangents if type(t) is not Zero]
    tangent_out = iter(pmap_p.bind(
        *residuals, *given, program=unknown,
        in_axes=(0,) * num_res + tuple(a for a, nz in zip(in_axes, nonzeros) if nz),
        out_axes=tuple(a for a, nz in zip(out_axes, out_nonzeros) if nz), **common))
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals_out, out_nonzeros)]


def _pmap_partial_eval(eqn, in_unknowns):
    """A pmap with some unknown inputs: a known pmap that also returns the residuals (each device its own,
    stacked along a new axis 0) and an unknown pmap that takes them back."""
    params = dict(eqn.params)
    program, in_axes, out_axes = params.pop("program"), params.pop("in_axes"), params.pop("out_axes")
    with extend_axis_env(params["axis_name"], params["axis_size"]):
        known, unknown, out_unknowns, num_res = partial_eval_program(program, in_unknowns)
    size = params["axis_size"]
    residual_avals = known.out_avals[len(known.out_avals) - num_res:]
    residuals = [Var(_mapped(a, 0, size)) for a in residual_avals]
    known_inputs = [a for a, u in zip(eqn.inputs, in_unknowns) if not u]
    unknown_inputs = [a for a, u in zip(eqn.inputs, in_unknowns) if u]
    known_outs = [v for v, u in zip(eqn.outvars, out_unknowns) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_unknowns) if u]
    known_eqn = Equation(pmap_p, known_inputs, known_outs + residuals, dict(
        params, program=known, in_axes=tuple(a for a, u in zip(in_axes, in_unknowns) if not u),
        out_axes=tuple(a for a, u in zip(out_axes, out_unknowns) if not u) + (0,) * num_res))
    unknown_eqn = Equation(pmap_p, residuals + unknown_inputs, unknown_outs, dict(
        params, program=unknown, in_axes=(0,) * num_res + tuple(a for a, u in zip(in_axes, in_unknowns) if u),
        out_axes=tuple(a for a, u in zip(out_axes, out_unknowns) if u)))
    return known_eqn, unknown_eqn, out_unknowns, residuals


def _pmap_transpose(cts, *args, program, axis_name, axis_size, in_axes, out_axes, **params):
    """The transpose: a pmap of the transposed per-device program. A linear input that every device shares
    (in_axes None) gets the sum of the devices' cotangents."""
    from ..lax.reductions import reduce_sum

    linear = [is_undefined(a) for a in args]
    nonzero_cts = [type(ct) is not Zero for ct in cts]
    with extend_axis_env(axis_name, axis_size):
        transposed = transpose_program(program, linear, nonzero_cts)
    fixed = [a for a in args if not is_undefined(a)]
    given = [ct for ct in cts if type(ct) is not Zero]
    t_in_axes = tuple(a for a, lin in zip(in_axes, linear) if not lin) + \
        tuple(a for a, nz in zip(out_axes, nonzero_cts) if nz)
    linear_axes = [a for a, lin in zip(in_axes, linear) if lin]
    outs = iter(pmap_p.bind(*fixed, *given, program=transposed, axis_name=axis_name, axis_size=axis_size,
                            in_axes=t_in_axes, out_axes=tuple(0 if a is None else a for a in linear_axes), **params))
    result = []
    for is_linear, axis in zip(linear, in_axes):
        if not is_linear:
            result.append(None)
            continue
        ct = next(outs)
        result.append(reduce_sum(ct, (0,)) if axis is None else ct)
    return result


def _pmap_batch(values, dims, axis, program, axis_size, in_axes, out_axes, **params):
    """vmap of a pmap: a pmap of the batched per-device program. The batch dimension of each input keeps
    its place once the device axis is taken out; outputs put the device axis back where it was."""
    from .vmap import batch_program

    inner_dims = []
    new_in_axes = []
    for dim, in_axis in zip(dims, in_axes):
        if in_axis is None:
            new_in_axes.append(None)
            inner_dims.append(dim)
            continue
        if dim is None:
            new_in_axes.append(in_axis)
            inner_dims.append(None)
            continue
        device_axis = in_axis if in_axis < dim else in_axis + 1  # in the batched value
        new_in_axes.append(device_axis)
        inner_dims.append(dim if dim < device_axis else dim - 1)
    with extend_axis_env(params["axis_name"], axis_size):
        batched, inner_out_dims = batch_program(program, inner_dims, axis)
    new_out_axes, out_dims = [], []
    for out_axis, inner_dim in zip(out_axes, inner_out_dims):
        if out_axis is None or inner_dim is None:
            new_out_axes.append(out_axis)
            out_dims.append(inner_dim)
            continue
        position = out_axis if out_axis <= inner_dim else out_axis + 1
        new_out_axes.append(position)
        out_dims.append(inner_dim if inner_dim < position else inner_dim + 1)
    outs = pmap_p.bind(*values, program=batched, axis_size=axis_size, in_axes=tuple(new_in_axes),
                       out_axes=tuple(new_out_axes), **params)
    return outs, out_dims


_pmap_batch.needs_axis = True
jvp_rules[pmap_p] = _pmap_jvp
transpose_rules[pmap_p] = _pmap_transpose
batching_rules[pmap_p] = _pmap_batch
partial_eval_rules[pmap_p] = _pmap_partial_eval


# --- numax.pmap ---------------------------------------------------------------------------------------
def _device_count_error(size, available, backend):
    hint = ""
    if backend.platform == "cpu":
        hint = (f" On the CPU, more devices can be had with XLA_FLAGS=--xla_force_host_platform_device_count={size}"
                " set before numax starts its runtime.")
    return ValueError(f"compiling a pmap that requires {size} devices, but only {available} {backend.platform} "
                      f"devices are available.{hint}")


# --- across processes (numax.distributed): as in JAX, a pmap spans every process's devices, each process
# passes and gets back its own part (mapped axis: its local device count), collectives span all processes.
def _devices_of_every_process(backend, local_size):
    """The first `local_size` devices of each process, process by process (JAX orders them so)."""
    if local_size > len(backend.devices):
        raise _device_count_error(local_size, len(backend.devices), backend)
    by_process = {}
    for device in backend.global_devices:
        by_process.setdefault(device.process_index, []).append(device)
    return tuple(device for index in sorted(by_process) for device in by_process[index][:local_size])


@functools.lru_cache(maxsize=64)
def _spans_processes(devices):
    return not all(xla.is_addressable(device) for device in devices)


def _global_arguments(leaves, axes, devices, axis_name):
    """Each process's arguments as the global arrays the pmap over all processes' `devices` takes."""
    if any(isinstance(leaf, Tracer) for leaf in leaves):
        raise NotImplementedError("a pmap across processes runs only outside transformations (jit, grad, vmap): "
                                  "call it at the top level, and transform the function it maps instead")
    return [pmap_global_argument(leaf, devices, axis, axis_name) for leaf, axis in zip(leaves, axes)]


def _checked_devices(devices):
    """`pmap(devices=...)` as a tuple, refused (as jax does) when empty, and when a device is not one of numax's
    (`xla.backend_of_device` says so: a program run on another runtime's device would crash the process)."""
    devices = tuple(devices)
    if not devices:
        raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    for device in devices:
        xla.backend_of_device(device)
    return devices


class PmapFunction(native_dispatch.CachedCall):
    """The callable `numax.pmap(f)` returns. A top-level call that hits `compiled` may be answered by the native
    call path (lowering/native_dispatch.py) without entering `_call`, the Python path it mirrors."""

    def __init__(self, fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend, axis_size,
                 donate_argnums):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        self.fun = fun
        functools.update_wrapper(self, fun, updated=())
        self.name = getattr(fun, "__name__", "function")
        self.axis_name = axis_name
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        self.static_argnums = tuple(sorted(static_broadcasted_argnums)) if isinstance(
            static_broadcasted_argnums, (tuple, list)) else (static_broadcasted_argnums,)
        self.devices = None if devices is None else _checked_devices(devices)
        self.backend = backend
        self.axis_size = axis_size
        self.donate_argnums = tuple(donate_argnums) if isinstance(donate_argnums, (tuple, list)) else (donate_argnums,)
        self.traced = caches.ComputeOnceCache()
        self.compiled = {}  # call signature (as jit's cache keys it) -> CacheEntry, for top-level calls
        # What the native path reads: no hit statistics; donating calls take the Python path.
        self._native_entries, self._native_statistics = self.compiled, None
        self._native_positional = not self.static_argnums and not self.donate_argnums
        with _pmap_functions_lock:
            _pmap_functions.add(self)

    def _devices_for(self, size):
        if self.devices is not None:
            if len(self.devices) != size:
                raise ValueError(f"Leading axis size of input to pmapped function must equal the number of local "
                                 f"devices passed to pmap. Got axis_size={size}, num_local_devices="
                                 f"{len(self.devices)}.")
            return self.devices
        backend = xla.get_backend(self.backend) if self.backend else xla.default_placement()[0]
        if len(backend.global_devices) > len(backend.devices):
            return _devices_of_every_process(backend, size)
        if size > len(backend.devices):
            raise _device_count_error(size, len(backend.devices), backend)
        return tuple(backend.devices[:size])

    def _call(self, *args, **kwargs):
        fast = self._fast_key(args, kwargs)
        if fast is not None:
            entry = self.compiled.get(fast[0])
            if entry is not None:  # called before with arguments of these types: straight to the executable
                leaves = fast[1]
                outs = entry.executable(*leaves)
                self._donate(leaves, args)
                return entry.out_tree.unflatten(outs)
        if trace_state.axis_frames:
            raise ValueError(f"pmap of {self.name!r} inside the pmap over axis {trace_state.axis_frames[-1].name!r}: "
                             "nested pmaps are not supported (nor are they in JAX since pmap is built on shard_map); "
                             "use one pmap over the flattened axes, or vmap (with an axis_name) inside the pmap")
        static = tuple((i, args[i]) for i in self.static_argnums if i < len(args))
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        in_axes = self.in_axes
        if isinstance(in_axes, tuple):
            in_axes = tuple(a for i, a in enumerate(in_axes) if i not in self.static_argnums)
            if len(in_axes) != len(dynamic):
                keywords = (" Arguments passed by keyword are not matched with in_axes: each argument passed by "
                            "keyword is mapped over its leading axis.") if kwargs else ""
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                                 f"positional arguments passed to the function, but got len(in_axes)="
                                 f"{len(self.in_axes)}, len(args)={len(args)}.{keywords}")
        leaves, in_tree = tree.tree_flatten((dynamic, kwargs))
        axes = _axes_of_leaves((in_axes, 0), (dynamic, kwargs), "in_axes", "pmap")
        size = _mapped_size(leaves, axes, lambda: _argument_names(self.fun, dynamic, kwargs), "pmap")
        if size is None:
            if self.axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis (in_axes not None), or "
                                 "axis_size")
            size = self.axis_size
        axes = tuple(a if a is None else a % get_aval_of(leaf).ndim for a, leaf in zip(axes, leaves))
        devices = self._devices_for(size)
        across_processes = _spans_processes(devices)
        if across_processes:
            leaves, size = _global_arguments(leaves, axes, devices, self.axis_name), len(devices)
        avals = tuple(_unmapped_aval(leaf, axis) for leaf, axis in zip(leaves, axes))
        key = (in_tree, avals, axes, size, tuple((i, _hashable(v)) for i, v in static), *trace_context())
        traced = []

        def trace():
            entry = self._trace(static, in_tree, avals, size)
            traced.append(entry)
            return None if entry[3] else entry

        entry = self.traced.get(key, trace)
        closed, out_tree, out_axes, hoisted = traced[0] if traced else entry
        params = dict(program=closed, name=self.name, axis_name=self.axis_name, axis_size=size,
                      in_axes=(None,) * len(hoisted) + axes, out_axes=out_axes, devices=devices, backend=self.backend)
        if fast is not None and not across_processes and not hoisted:
            executable = _executable(params, tuple(get_aval_of(leaf) for leaf in leaves))
            self.compiled[fast[0]] = CacheEntry(executable, out_tree, None, None)
            outs = executable(*leaves)
        else:
            outs = pmap_p.bind(*hoisted, *leaves, **params)
        if across_processes:
            outs = [pmap_local_result(out, devices, axis, self.axis_name) for out, axis in zip(outs, out_axes)]
        self._donate(leaves, dynamic)
        return out_tree.unflatten(outs)

    def _fast_key(self, args, kwargs):
        """(key, flat arguments) for a call at the top level (no tracers, no static arguments): calls whose
        arguments have the same types, structure and layouts share the key, built as jit's (and the native
        path's) is. None for other calls."""
        if self.static_argnums or is_tracing():
            return None
        leaves = []
        try:
            signature = tree.flatten_with_signature(args, leaves, leaf_signature)
            kw_signature = tree.flatten_with_signature(kwargs, leaves, leaf_signature) if kwargs else None
        except TracerArgument:
            return None
        return (signature, kw_signature, (), *trace_context()), leaves

    def _trace(self, static, in_tree, avals, size):
        static_positional = dict(static)
        out_info = {}

        def flat_fun(*flat):
            dynamic, kwargs = in_tree.unflatten(flat)
            call_args = list(dynamic)
            for i in sorted(static_positional):
                call_args.insert(i, static_positional[i])
            out = self.fun(*call_args, **kwargs)
            out_leaves, out_info["tree"] = tree.tree_flatten(out)
            out_info["axes"] = _axes_of_leaves(self.out_axes, out, "out_axes", "pmap")
            return out_leaves

        with extend_axis_env(self.axis_name, size):
            program, consts = trace_to_program(flat_fun, list(avals))
        closed, hoisted = hoist_tracer_consts(program, consts)
        out_axes = []
        for axis, aval in zip(out_info["axes"], closed.out_avals):
            if axis is not None and not -(aval.ndim + 1) <= axis <= aval.ndim:
                raise ValueError(f"pmap out_axes: axis {axis} is out of bounds for an output of rank {aval.ndim + 1}")
            out_axes.append(axis if axis is None else axis % (aval.ndim + 1))
        return closed, out_info["tree"], tuple(out_axes), tuple(hoisted)

    def _donate(self, leaves, dynamic):
        if not self.donate_argnums:
            return
        positions = [i for i in range(len(dynamic) + len(self.static_argnums)) if i not in self.static_argnums]
        for i, arg in zip(positions, dynamic):
            if i in self.donate_argnums:
                for leaf in tree.tree_leaves(arg):
                    if isinstance(leaf, Array) and not isinstance(leaf, Tracer) and not leaf.is_deleted():
                        leaf.delete()

    def lower(self, *args, **kwargs):
        """Ahead-of-time lowering, as `jax.pmap(f).lower(...)`: the pmap as one program over its devices (what
        `jit` of it lowers); as with jit, the compiled pmap is called without the static arguments."""
        return jit(self, static_argnums=self.static_argnums or None,
                   donate_argnums=self.donate_argnums or None).lower(*args, **kwargs)

    def __get__(self, instance, owner):  # a pmapped method binds its instance, as a function does
        return self if instance is None else functools.partial(self, instance)

    def __repr__(self):
        return f"<numax.pmap of {self.name}>"


def _unmapped_aval(leaf, axis):
    aval = get_aval_of(leaf)
    if axis is None:
        return aval
    return ShapedArray(aval.shape[:axis] + aval.shape[axis + 1:], aval.dtype, aval.weak_type)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        raise ValueError(f"Non-hashable static arguments are not supported: {value!r} of type "
                         f"{type(value).__name__} (static_broadcasted_argnums)") from None
    return value


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(), devices=None,
         backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None):
    """Maps `fun` over devices: each runs it on its slice of the mapped inputs (`in_axes`), with collectives
    (`lax.psum`, ...) over `axis_name` between them, and the results are stacked along `out_axes`."""
    if global_arg_shapes is not None:
        raise NotImplementedError("pmap global_arg_shapes (removed from JAX) is not supported")
    if fun is None:
        return lambda f: pmap(f, axis_name, in_axes=in_axes, out_axes=out_axes,
                              static_broadcasted_argnums=static_broadcasted_argnums, devices=devices,
                              backend=backend, axis_size=axis_size, donate_argnums=donate_argnums)
    return PmapFunction(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend, axis_size,
                        donate_argnums)
