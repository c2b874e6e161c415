"""`jit`: trace a function once per signature into a Program, compile it with XLA, and call it.

Owns the `jit` call primitive (a closed Program as a parameter: nested in other programs, inlined
at lowering, run by compiling it), `numax.jit` with its per-signature cache and fast call path,
`make_jaxpr`, `eval_shape`, and the `lower(...).as_text()` inspection API.
"""

import functools
import inspect
import threading
import time
import weakref

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray, get_aval
from ..core.config import TRACE_CONTEXT_NAMES, check_fusion, config, trace_context
from ..core.ir import ClosedProgram, Equation, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.pytree_user import abstract_user_leaves
from ..core.refs import MutableRef, RefArgument
from ..core.sharding import (
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    as_sharding,
    explicit_only,
    explicit_sharding_of,
)
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import Tracer, is_tracing
from ..lowering import dispatch, native_dispatch, xla
from ..lowering.array import Array
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from ..lowering.sharded_array import ShardedArray
from .aot import ClosedJaxpr, Lowered, ShapeDtypeStruct, Traced
from .float0 import compile_with_float0
from .jvp import jvp_program
from .partial_eval import partial_eval_program, partial_eval_rules
from .recompiles import (
    CallDescription,
    JitStatistics,
    explain_miss,
    global_statistics,
    log_explanation,
    reason_text,
    record_compile,
    warn_if_past_limit,
)
from .transpose import transpose_program

# --- the call primitive ---------------------------------------------------------------------------
jit_p = Primitive("jit", multiple_results=True)
jit_p.def_abstract_eval(lambda *avals, program, name: program.out_avals)


class _ProgramExecutables:
    """Executables of jit programs met as primitives (jit inside another transformation, run eagerly),
    keyed by the program itself (programs hash by identity; the cache keeps them alive) and the device."""

    def __init__(self):
        self.cache = caches.ComputeOnceCache()

    def get(self, program, name, backend, device, in_shardings=()):
        return self.cache.get((program, device, in_shardings), lambda: compile_with_float0(
            dispatch.compile_program, program, name, backend, device, in_shardings=in_shardings))


_program_executables = _ProgramExecutables()
_jit_functions = weakref.WeakSet()  # every numax.jit function, for clear_caches
_jit_functions_lock = threading.Lock()  # a WeakSet cannot be copied while another thread adds to it


@caches.register
def _clear_caches():
    _program_executables.cache.clear()
    with _jit_functions_lock:
        functions = list(_jit_functions)
    for function in functions:
        function.clear_cache()
    with _jit_functions_lock:
        shared = [caches for per_function in _shared_caches.values() for caches in per_function.values()]
    for caches_of_function in shared:  # also those of functions whose jit objects are gone
        caches_of_function.clear()


def _jit_impl(*args, program, name):
    backend, device = dispatch._placement_of_args(args)
    in_shardings = dispatch.in_shardings_of(args) if device is None else ()
    outs = _program_executables.get(program, name, backend, device, in_shardings)(*args)
    if config.check_numerics:
        dispatch.check_program_numerics(outs, program, args, f"jit({name})")
    return outs


jit_p.def_impl(_jit_impl)
# A jit function compiled under one numax_fusion default compiles again under another.
config.on_change(lambda attribute, value: _clear_caches() if attribute == "fusion" else None)
register_lowering(jit_p, lambda ctx, *args, program, name: ctx.lower_program(program, list(args)))
polymorphic_primitives.add(jit_p)  # its program's equations are checked as they are lowered


def _jit_jvp(primals, tangents, program, name):
    """JVP of a jitted call, split by partial evaluation into two jitted calls: the primal one (with
    residuals) and the tangent one. Under linearize only the second is staged, so `grad(jit(f))` runs its
    forward pass compiled and transposes the tangent program as a whole."""
    nonzeros = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nonzeros = jvp_program(program, nonzeros)
    n_in, n_out = len(primals), len(program.out_avals)
    unknowns = [False] * n_in + [True] * sum(nonzeros)
    known, unknown, _, num_res = partial_eval_program(jvp_closed, unknowns, [False] * n_out + [True] * sum(
        out_nonzeros))
    outs = jit_p.bind(*primals, program=known, name=name)
    primal_out, residuals = outs[:n_out], outs[n_out:]
    given = [t for t in tangents if type(t) is not Zero]
    tangent_out = iter(jit_p.bind(*residuals, *given, program=unknown, name=f"jvp({name})") if any(out_nonzeros)
                       else [])
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a))
                        for a, nz in zip(program.out_avals, out_nonzeros)]


def _jit_transpose(cts, *args, program, name):
    linear = [is_undefined(a) for a in args]
    nonzero_cts = [type(ct) is not Zero for ct in cts]
    transposed = transpose_program(program, linear, nonzero_cts)
    cts_in = iter(jit_p.bind(*(a for a in args if not is_undefined(a)), *(ct for ct in cts if type(ct) is not Zero),
                             program=transposed, name=f"transpose({name})"))
    return [next(cts_in) if is_linear else None for is_linear in linear]


def _jit_partial_eval(eqn, in_unknowns):
    """Splits a jit equation with some unknown inputs into a known call and an unknown one."""
    program, name = eqn.params["program"], eqn.params["name"]
    known, unknown, out_unknowns, num_res = partial_eval_program(program, in_unknowns)
    residuals = [Var(aval) for aval in known.out_avals[len(known.out_avals) - num_res:]]
    known_inputs = [a for a, u in zip(eqn.inputs, in_unknowns) if not u]
    unknown_inputs = [a for a, u in zip(eqn.inputs, in_unknowns) if u]
    known_outs = [v for v, u in zip(eqn.outvars, out_unknowns) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_unknowns) if u]
    known_eqn = Equation(jit_p, known_inputs, known_outs + residuals, dict(program=known, name=name))
    unknown_eqn = Equation(jit_p, residuals + unknown_inputs, unknown_outs, dict(program=unknown, name=name))
    return known_eqn, unknown_eqn, out_unknowns, residuals


def _jit_batch(values, dims, axis, program, name):
    """A jitted call under vmap: one jitted call of the batched program."""
    from .vmap import batch_program

    batched, out_dims = batch_program(program, dims, axis)
    return jit_p.bind(*values, program=batched, name=name), out_dims


_jit_batch.needs_axis = True


jvp_rules[jit_p] = _jit_jvp
batching_rules[jit_p] = _jit_batch
transpose_rules[jit_p] = _jit_transpose
partial_eval_rules[jit_p] = _jit_partial_eval


# --- signatures -----------------------------------------------------------------------------------
class TracerArgument(Exception):
    """Raised while computing a call's signature when an argument is a tracer (the call is traced)."""


def leaf_signature(leaf):
    kind = type(leaf)
    if kind is Array:
        # A committed array runs where it lies: its device is part of the key (the native path builds the same
        # `(aval, device)` tuple).
        return OnDevice((leaf.aval, leaf._device)) if leaf._committed else leaf.aval
    if kind is ShardedArray:
        return LaidOut((leaf.aval, leaf._sharding))
    if kind in dtypes.python_scalar_types:
        return kind
    if isinstance(leaf, Tracer):
        raise TracerArgument
    return get_aval(leaf)


def traced_leaf_signature(leaf):
    if isinstance(leaf, Tracer):
        sharding = explicit_sharding_of(leaf)
        return leaf.aval if sharding is None else LaidOut((leaf.aval, sharding))
    return leaf_signature(leaf)


def _struct_sharding(struct):
    """The layout a ShapeDtypeStruct asks its argument to have, where it names devices (a NamedSharding over a
    concrete Mesh): jit lowers for it, as for an array laid out so."""
    sharding = struct.sharding
    return sharding if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, Mesh) else None


def _leaf_aval(leaf, signature):
    if type(signature) is ShapedArray:
        return signature
    return get_aval(leaf)


class CacheEntry:
    __slots__ = ("executable", "out_tree", "program", "donated", "out_kind", "out_plan")

    def __init__(self, executable, out_tree, program, donated):
        self.executable = executable
        self.out_tree = out_tree
        self.program = program
        self.donated = donated
        self.out_plan = _output_plan(out_tree)
        self.out_kind = _output_kind(out_tree, self.out_plan)


def _output_kind(out_tree, plan):
    """How the native call path arranges outputs: 0 one leaf, 1 a flat tuple, 3 by the entry's `out_plan`, 2 through
    `out_tree.unflatten`."""
    if out_tree.kind is None:
        return 0
    if out_tree.kind.type is tuple and all(child.kind is None for child in out_tree.child_defs):
        return 1
    return 2 if plan is False else 3


_PLANNED_NODES = (tuple, list, dict, type(None))


def _output_plan(treedef):
    """An output tree of tuples, lists, dicts and None as the native call path builds it: None for a leaf,
    (tuple | list, child plans), (dict, child plans, keys) or (NoneType,) for a node; False where another node
    type is in the tree (`out_tree.unflatten` builds it)."""
    if treedef.kind is None:
        return None
    node_type = treedef.kind.type
    if node_type not in _PLANNED_NODES:
        return False
    children = tuple(_output_plan(child) for child in treedef.child_defs)
    if any(child is False for child in children):
        return False
    if node_type is dict:
        return (dict, children, tuple(treedef.aux))
    return (node_type,) if node_type is type(None) else (node_type, children)


native_dispatch.configure(dispatch.Executable, CacheEntry, global_statistics)


def _hashable_static(value, position):
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"non-hashable static argument {position}: {type(value).__name__} {value!r}. Static arguments "
            "must be hashable (use a tuple instead of a list, or pass the value as a regular argument)"
        ) from None
    return value


class _SharedCaches:
    """What every `numax.jit` of one function with the same options shares, as in JAX: `jit(f)(x)` written
    inline, a new jit object per call, traces and compiles once per signature, not once per call."""

    def __init__(self):
        self.cache = caches.ComputeOnceCache()
        self.traced_cache = caches.ComputeOnceCache()
        self.stats = JitStatistics()
        self.descriptions = []

    def clear(self):
        self.cache.clear()
        self.traced_cache.clear()
        self.descriptions.clear()


_shared_caches = weakref.WeakKeyDictionary()  # function -> {jit options: _SharedCaches}, while the function lives


def _caches_for(fun, options):
    """The caches of `fun` jitted with `options`; fresh ones where either cannot be a key (an unhashable
    option, or a function that cannot be weakly referenced)."""
    try:
        hash(options)
        with _jit_functions_lock:
            return _shared_caches.setdefault(fun, {}).setdefault(options, _SharedCaches())
    except TypeError:
        return _SharedCaches()


def _frozen(compiler_options):
    return tuple(sorted(compiler_options.items())) if compiler_options else None


class PjitFunction(native_dispatch.CachedCall):
    """The callable `numax.jit(f)` returns, named and printed as jax's (jaxlib's `PjitFunction`): tools written for
    jax recognize jitted functions by that name (chex's `assert_max_traces`). A call that hits the cache may be
    answered by the native call path (lowering/native_dispatch.py) without entering `_call`, the Python path it
    mirrors."""

    library = False  # numax's own functions (named_jit): no RecompileWarning

    def __init__(self, fun, *, static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=(),
                 device=None, backend=None, inline=False, compiler_options=None, name=None, in_shardings=None,
                 out_shardings=None, fusion=None):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        self.fun = fun
        self.__wrapped__ = fun
        functools.update_wrapper(self, fun, updated=())
        self.name = name or getattr(fun, "__name__", "function")
        self.signature = _safe_signature(fun)
        self.static_argnums, self.static_argnames = _resolve_argnums(
            self.signature, _as_tuple(static_argnums), _as_tuple(static_argnames), "static")
        self.donate_argnums, self.donate_argnames = _resolve_argnums(
            self.signature, _as_tuple(donate_argnums), _as_tuple(donate_argnames), "donate")
        both = set(self.static_argnums) & set(self.donate_argnums)
        if both:
            raise ValueError(f"jit: arguments {sorted(both)} are both static and donated; static arguments "
                             "are not arrays and cannot be donated")
        self.placement = _fixed_placement(device, backend)  # (backend, device), or None: where the arguments are
        self.inline = bool(inline)
        self.compiler_options = dict(compiler_options) if compiler_options else None
        self.in_shardings, self.out_shardings = in_shardings, out_shardings  # tree prefixes (None: unspecified)
        self.fusion = None if fusion is None else check_fusion(fusion, "jit fusion")  # None: numax_fusion's
        shared = _caches_for(fun, (self.static_argnums, self.static_argnames, self.donate_argnums,
                                   self.donate_argnames, self.placement, self.inline, _frozen(compiler_options),
                                   in_shardings, out_shardings, self.fusion, self.name))
        self.cache = shared.cache  # signature -> CacheEntry (compiled)
        self.traced_cache = shared.traced_cache  # signature -> (ClosedProgram, out_tree), under transforms
        self.last_key = None
        self.stats = shared.stats  # compiles, cache hits and compile seconds of this function
        self._descriptions = shared.descriptions  # a CallDescription per compiled call, to explain the next miss
        self._native_entries, self._native_statistics = self.cache.entries, self.stats  # what the native path reads
        self._native_positional = not self.static_argnums
        with _jit_functions_lock:
            _jit_functions.add(self)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    # -- splitting arguments --
    def _split(self, args, kwargs):
        static_argnums = self.static_argnums
        if static_argnums:
            # As in JAX, a static position not given positionally is skipped: its argument comes by
            # keyword (static through its name) or from its default.
            static = tuple((i, _hashable_static(args[i], f"at position {i}")) for i in static_argnums
                           if i < len(args))
            dynamic_args = tuple(a for i, a in enumerate(args) if i not in static_argnums)
        else:
            static, dynamic_args = (), args
        if kwargs:
            static_kw = tuple(sorted((k, _hashable_static(v, f"named {k!r}")) for k, v in kwargs.items()
                                     if k in self.static_argnames))
            dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        else:
            static_kw, dynamic_kwargs = (), {}
        return dynamic_args, dynamic_kwargs, static + static_kw

    def _flat_fun(self, static, in_tree):
        static_positional = {i: v for i, v in static if isinstance(i, int)}
        static_named = {k: v for k, v in static if isinstance(k, str)}

        def flat_fun(*leaves):
            if self.in_shardings is not None:
                leaves = _constrained(leaves, self._leaf_in_shardings(in_tree.unflatten(leaves)[0], len(leaves)))
            dynamic_args, dynamic_kwargs = in_tree.unflatten(leaves)
            args = list(dynamic_args)
            for i in sorted(static_positional):
                args.insert(i, static_positional[i])
            out = self.fun(*args, **dynamic_kwargs, **static_named)
            out_leaves, out_tree = tree.tree_flatten(out)
            if self.out_shardings is not None:
                out_leaves = _constrained(out_leaves, self._leaf_out_shardings(out))
            flat_fun.out_tree = out_tree
            return out_leaves

        return flat_fun

    def _leaf_in_shardings(self, dynamic_args, num_leaves):
        """The in_shardings asked for, one per leaf of (dynamic args, dynamic kwargs) (None: unspecified)."""
        if self.in_shardings is None:
            return [None] * num_leaves
        per_arg = _per_leaf(self.in_shardings, tuple(dynamic_args), "in_shardings")
        return per_arg + [None] * (num_leaves - len(per_arg))  # keyword arguments: unspecified

    def _leaf_out_shardings(self, out):
        return [None] * len(tree.tree_leaves(out)) if self.out_shardings is None else _per_leaf(
            self.out_shardings, out, "out_shardings")

    def trace_program(self, args, kwargs):
        """Traces for these arguments: (Program, consts, in_tree, out_tree, static, donated mask)."""
        args, kwargs = tree.tree_map(_standing_for_extended, (args, kwargs),
                                     is_leaf=lambda leaf: isinstance(leaf, ShapeDtypeStruct))
        dynamic_args, dynamic_kwargs, static = self._split(args, kwargs)
        leaves, in_tree = tree.tree_flatten((dynamic_args, dynamic_kwargs))
        in_avals = [leaf.aval if isinstance(leaf, Tracer) else _leaf_aval(leaf, leaf_signature(leaf))
                    for leaf in leaves]
        flat_fun = self._flat_fun(static, in_tree)
        layouts = [explicit_sharding_of(leaf) for leaf in leaves]
        if self.in_shardings is not None:
            asked = self._leaf_in_shardings(dynamic_args, len(leaves))
            layouts = [layout if a is None else explicit_only(a) for a, layout in zip(asked, layouts)]
        program, consts = trace_to_program(flat_fun, in_avals, layouts)
        donated = self._donated_mask(dynamic_args, dynamic_kwargs, static)
        return program, consts, in_tree, flat_fun.out_tree, donated

    def _donated_mask(self, dynamic_args, dynamic_kwargs, static):
        """Per leaf of (dynamic_args, dynamic_kwargs): donated or not (None when nothing is)."""
        if not self.donate_argnums and not self.donate_argnames:
            return None
        static_positions = {i for i, _ in static if isinstance(i, int)}
        positions = [i for i in range(len(dynamic_args) + len(static_positions)) if i not in static_positions]
        mask = []
        for i, arg in zip(positions, dynamic_args):
            mask += [i in self.donate_argnums] * len(tree.tree_leaves(arg))
        for name in sorted(dynamic_kwargs):  # the order in which the keyword arguments flatten
            mask += [name in self.donate_argnames] * len(tree.tree_leaves(dynamic_kwargs[name]))
        return mask

    # -- calling --
    def _call(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        if self.static_argnums or kwargs:
            dynamic_args, dynamic_kwargs, static = self._split(args, kwargs)
        else:
            dynamic_args, dynamic_kwargs, static = args, None, ()
        leaves = []
        try:
            signature = tree.flatten_with_signature(dynamic_args, leaves, leaf_signature)
            kw_signature = (tree.flatten_with_signature(dynamic_kwargs, leaves, leaf_signature)
                            if dynamic_kwargs else None)
        except TracerArgument:
            try:
                return self._call_traced(args, kwargs)
            except RefArgument:
                return self._call_with_refs(args, kwargs)
        except RefArgument:
            return self._call_with_refs(args, kwargs)
        if is_tracing():
            return self._call_traced(args, kwargs)
        key = (signature, kw_signature, static, *trace_context())
        entry = self.cache.entries.get(key)
        hit = entry is not None
        if hit:
            self.stats.cache_hits += 1
            global_statistics.cache_hits += 1
        else:
            entry = self.cache.get(key, lambda: self._compile(key, args, kwargs, leaves))
        executable = entry.executable
        try:
            outs = executable.wrap_outputs(executable.run_on(leaves))
        except ValueError:
            if not hit:
                dispatch.deleted_as_eager(leaves)
            raise
        if any(type(leaf) is Array and leaf._committed for leaf in leaves):  # as jax: committed in, committed out
            for out in outs:
                if type(out) is Array:
                    out._committed = True
        if config.check_numerics:
            self._check_numerics(outs, args, kwargs)
        if entry.donated:
            for leaf, donated in zip(leaves, entry.donated):
                if donated and type(leaf) is Array:
                    dispatch.mark_donated(leaf)
                    if not leaf.is_deleted():
                        leaf.delete()
        return entry.out_tree.unflatten(outs)

    def _check_numerics(self, outs, args, kwargs):
        """`jax_debug_nans`/`jax_debug_infs` on a result: as JAX does, the function runs again de-optimized, as
        Python on the arguments as given, op by op, so that the first operation producing the value raises (a
        Python `0. / 0.` raises ZeroDivisionError, an array op the FloatingPointError naming its primitive)."""
        try:
            dispatch.check_numerics(outs, f"jit({self.name})")
        except FloatingPointError as error:
            print("Invalid nan value encountered in the output of a numax.jit function. Calling the de-optimized "
                  "version.")  # (on stdout, as jax's notice)
            with config.override("disable_jit", True):
                self.fun(*args, **kwargs)
            raise FloatingPointError(f"{error} (the function run op by op produced no such value: it arises only "
                                     "in the compiled program)") from None

    def _compile(self, key, args, kwargs, leaves):
        start = time.perf_counter()
        description = CallDescription(self.signature, args, kwargs, self.static_argnums, self.static_argnames,
                                      dict(zip(TRACE_CONTEXT_NAMES, key[3:])))
        changes = explain_miss(self._descriptions, description)
        if self._descriptions and config.explain_cache_misses:
            log_explanation(self.name, self.fun, changes)
        entry = self._compile_entry(key, args, kwargs, leaves, reason_text(changes))
        self._descriptions.append(description)
        record_compile(self.stats, time.perf_counter() - start)
        if not self.library:
            warn_if_past_limit(self, config.recompile_limit, changes)
        return entry

    def _compile_entry(self, key, args, kwargs, leaves, reason):
        program, consts, in_tree, out_tree, donated = self.trace_program(args, kwargs)
        closed = ClosedProgram(program, consts)
        backend, device = self.placement or dispatch._placement_of_args(leaves)
        in_shardings, out_shardings = self._shardings(args, kwargs, leaves, out_tree)
        if in_shardings or out_shardings:  # over several devices: partitioned by XLA (no donation yet)
            asked = self._leaf_in_shardings(self._split(args, kwargs)[0], len(leaves))  # committed args must match
            executable = compile_with_float0(dispatch.compile_program, closed, self.name, reason=reason,
                                             compiler_options=self.compiler_options, in_shardings=in_shardings,
                                             out_shardings=out_shardings, asked_in_shardings=asked)
            self.last_key = key
            return CacheEntry(executable, out_tree, closed, None)
        attributes = _donation_attributes(program, donated)
        closed, _ = self._fused(closed, backend, device)
        executable = compile_with_float0(dispatch.compile_program, closed, self.name, backend, device, attributes,
                                         reason, self.compiler_options)
        self.last_key = key
        return CacheEntry(executable, out_tree, closed, donated if attributes else None)

    def _fused(self, closed, backend, device):
        """(the program to compile, [FusedKernel]): with fusion "triton", its elementwise and row-wise regions
        fused into kernels generated for `backend`'s platform (timed against XLA's code on `device` where the
        numax_fusion_autotune flag says so)."""
        if (self.fusion or config.fusion) != "triton":
            return closed, []
        from .fusion import fuse_with_kernels  # loaded only when asked for

        if backend is None:
            backend, device = xla.default_placement()
        return fuse_with_kernels(closed, backend.platform, (backend, device or backend.default_device))

    def _shardings(self, args, kwargs, leaves, out_tree):
        """(in, out) shardings per leaf for a call: those asked for, else an argument's own layout over
        devices; both empty when nothing asks for more than one device."""
        in_shardings = tuple(_struct_sharding(leaf) if isinstance(leaf, ShapeDtypeStruct) else sharding
                             for leaf, sharding in zip(leaves, dispatch.in_shardings_of(leaves)))
        if self.in_shardings is not None:
            asked = self._leaf_in_shardings(self._split(args, kwargs)[0], len(leaves))
            in_shardings = tuple(a if a is not None else s for a, s in zip(asked, in_shardings))
        out_shardings = () if self.out_shardings is None else tuple(
            self._leaf_out_shardings(out_tree.unflatten([0] * out_tree.num_leaves)))
        if not any(s is not None for s in in_shardings + out_shardings):
            return (), ()
        return in_shardings, out_shardings

    def _call_with_refs(self, args, kwargs):
        """A call with mutable array refs (numax.ref) among its arguments: each ref enters the program as its value,
        the function reads and writes a ref made over it inside the trace, and the final values leave the program
        as extra results written back into the refs after the call (JAX's discharge of ref effects at jit's
        boundary). One jitted program per argument structure, refs' places and static arguments; donation and
        in/out shardings are not applied to such calls."""
        dynamic_args, dynamic_kwargs, static = self._split(args, kwargs)
        leaves, in_tree = tree.tree_flatten((dynamic_args, dynamic_kwargs))
        ref_types = tuple(type(leaf) if isinstance(leaf, MutableRef) else None for leaf in leaves)
        refs = [leaf for leaf in leaves if isinstance(leaf, MutableRef)]
        for ref in refs:
            ref._check_usable("pass to jit")
        calls = self.__dict__.setdefault("_ref_calls", {})
        key = (in_tree, ref_types, static)
        discharged = calls.get(key)
        if discharged is None:
            discharged = calls[key] = PjitFunction(self._discharging(in_tree, ref_types, static), name=self.name)
        out, finals = discharged(*[leaf._value if kind else leaf for leaf, kind in zip(leaves, ref_types)])
        for ref, value in zip(refs, finals):
            ref._value = value
        return out

    def _discharging(self, in_tree, ref_types, static):
        """`self.fun` over the flat arguments, a ref of the type `ref_types` names made over the value at each of its
        places, returning (its result, the refs' final values)."""
        static_positional = {i: v for i, v in static if isinstance(i, int)}
        static_named = {k: v for k, v in static if isinstance(k, str)}

        def discharged(*leaves):
            inner = [kind(value) if kind else value for value, kind in zip(leaves, ref_types)]
            dynamic_args, dynamic_kwargs = in_tree.unflatten(inner)
            full_args = list(dynamic_args)
            for i in sorted(static_positional):
                full_args.insert(i, static_positional[i])
            out = self.fun(*full_args, **dynamic_kwargs, **static_named)
            return out, [ref._value for ref, kind in zip(inner, ref_types) if kind]

        return discharged

    def _call_traced(self, args, kwargs):
        """Under another transformation: stage a `jit` equation holding the traced program.

        The program is traced once per signature (tracers count by their avals), so that transformations
        caching on a program's identity (jvp, transpose, the executables of eager `grad(jit(f))`) hit."""
        if self.inline:  # traced into the enclosing program, with no `jit` equation of its own
            return self.fun(*args, **kwargs)
        dynamic_args, dynamic_kwargs, static = self._split(args, kwargs)
        leaves = []
        signature = tree.flatten_with_signature((dynamic_args, dynamic_kwargs), leaves, traced_leaf_signature)
        key = (signature, static, *trace_context())
        entry = self.traced_cache.entries.get(key)
        if entry is not None:
            closed, out_tree = entry
            return out_tree.unflatten(jit_p.bind(*leaves, program=closed, name=self.name))
        traced = []

        def trace():
            program, consts, in_tree, out_tree, _ = self.trace_program(args, kwargs)
            closed, hoisted = hoist_tracer_consts(program, consts)
            traced.append((closed, out_tree, hoisted))
            # A program closing over outer tracers belongs to this call only: it is not kept.
            return None if hoisted else (closed, out_tree)

        entry = self.traced_cache.get(key, trace)
        closed, out_tree, hoisted = traced[0] if traced else (*entry, ())
        outs = jit_p.bind(*hoisted, *leaves, program=closed, name=self.name)
        return out_tree.unflatten(outs)

    # -- inspection --
    def trace(self, *args, **kwargs):
        """Traces for these arguments (arrays or ShapeDtypeStructs): a `Traced` with `.jaxpr` and `.lower()`."""
        program, consts, in_tree, out_tree, donated = self.trace_program(args, kwargs)
        return Traced(self, ClosedProgram(program, consts), in_tree, out_tree, donated, args, kwargs)

    def lower(self, *args, **kwargs):
        """Traces and lowers for these arguments (arrays or ShapeDtypeStructs): a `Lowered`."""
        return self.trace(*args, **kwargs).lower()

    def lower_traced(self, traced):
        """The `Lowered` of a `Traced` of this function: placed, fused and given its shardings as a call is."""
        leaves = tree.tree_leaves((traced.args, traced.kwargs))
        backend, device = self.placement or dispatch._placement_of_args(leaves)
        dynamic = tree.tree_leaves(self._split(traced.args, traced.kwargs)[:2])
        shardings = self._shardings(traced.args, traced.kwargs, dynamic, traced.out_tree)
        closed, kernels = traced.jaxpr, []
        if not any(shardings):  # programs over several devices are left to XLA
            closed, kernels = self._fused(closed, backend, device)
        attributes = _donation_attributes(traced.jaxpr.program, traced.donated)
        return Lowered(self.name, closed, traced.in_tree, traced.out_tree, attributes, backend, device,
                       self.compiler_options, shardings, kernels, traced.donated)

    def eval_shape(self, *args, **kwargs):
        program, _, _, out_tree, _ = self.trace_program(args, kwargs)
        out = out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in program.out_avals])
        return abstract_user_leaves(out)  # (a typed key array's struct has the key dtype, as in jax)

    def clear_cache(self):
        self.cache.clear()
        self.traced_cache.clear()
        self._descriptions.clear()

    def _cache_size(self):
        return len(self.cache)

    def __repr__(self):
        return f"<PjitFunction of {self.fun!r}>"

    @property
    def __signature__(self):
        # As jax's: the wrapped function's signature, also for `inspect.signature(f, follow_wrapped=False)`.
        return self.signature


def _donation_attributes(program, donated):
    """`tf.aliasing_output` on donated arguments that match an output's type."""
    if not donated:
        return None
    attributes, taken = {}, set()
    for i, (var, is_donated) in enumerate(zip(program.invars, donated)):
        if not is_donated:
            continue
        for k, out in enumerate(program.outvars):
            if k not in taken and out.aval.shape == var.aval.shape and out.aval.dtype == var.aval.dtype:
                attributes[i] = f"tf.aliasing_output = {k} : i32"
                taken.add(k)
                break
    return attributes or None


class LaidOut(tuple):
    """The signature of an argument laid out over devices: (aval, sharding)."""


class OnDevice(tuple):
    """The signature of an array committed to one device: (aval, device)."""


def _per_leaf(shardings, tree_of_values, what):
    """One Sharding (or None) per leaf of `tree_of_values` from `shardings`: one for all, or a tree prefix."""
    if _is_sharding_leaf(shardings):
        per_leaf = [shardings] * len(tree.tree_leaves(tree_of_values))
    else:
        try:
            per_leaf = tree.broadcast_prefix_leaves(shardings, tree_of_values, is_leaf=_is_sharding_leaf)
        except (TypeError, ValueError) as error:
            raise ValueError(f"jit {what} must be one sharding or a tree prefix of the {what.split('_')[0]}puts: "
                             f"{error}") from None
    return [None if s is None else as_sharding(s, f"jit {what}") for s in per_leaf]


def _is_sharding_leaf(value):
    return value is None or isinstance(value, Sharding | PartitionSpec)


def _constrained(leaves, shardings):
    """Leaves with a sharding constraint where a sharding is given."""
    from ..lax.sharding_constraint import reshard  # loaded only by sharded jits (any axis types)

    # (a one-device sharding constrains nothing inside the program: it says where the program runs)
    return [x if s is None or isinstance(s, SingleDeviceSharding) else reshard(x, s) for x, s in zip(leaves, shardings)]


def _as_tuple(value):
    if value is None:
        return ()
    if isinstance(value, (int, str)):
        return (value,)
    return tuple(value)


def _safe_signature(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _resolve_argnums(signature, argnums, argnames, what):
    """Like JAX, for static and donated (`what`) arguments alike: names imply their positions and positions
    imply their names (positions counted from the end made positive)."""
    nums, names = set(argnums), set(argnames)
    if signature is not None:
        parameters = list(signature.parameters.values())
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if not any(p.kind is p.VAR_POSITIONAL for p in parameters) and any(
                not -len(positional) <= i < len(positional) for i in nums):
            raise ValueError(f"jitted function has {what}_argnums={tuple(argnums)}, but only accepts "
                             f"{len(positional)} positional arguments")
        for i, p in enumerate(positional):
            if p.name in names:
                nums.add(i)
            if i in nums and p.kind is p.POSITIONAL_OR_KEYWORD:
                names.add(p.name)
        nums = {i if i >= 0 else len(positional) + i for i in nums}
    return tuple(sorted(nums)), frozenset(names)


def _fixed_placement(device, backend):
    """(backend, device) that jit's `device=`/`backend=` fix for every call, or None."""
    if device is not None and backend is not None:
        raise ValueError("jit: specify either `device` or `backend`, not both")
    if device is not None:
        return xla.backend_of_device(device), device
    if backend is not None:
        chosen = xla.get_backend(backend)
        return chosen, chosen.default_device
    return None


def jit(fun=None, /, *, in_shardings=None, out_shardings=None, static_argnums=None, static_argnames=None,
        donate_argnums=None, donate_argnames=None, keep_unused=False, device=None, backend=None, inline=False,
        compiler_options=None, fusion=None):
    """Compiles `fun` with XLA: traced once per signature of its arguments, then called directly.

    JAX's options: `static_argnums`/`static_argnames` (hashable arguments the trace depends on),
    `donate_argnums`/`donate_argnames` (arguments whose buffers the outputs may reuse; they are deleted),
    `device`/`backend` (where every call runs), `inline` (traced into an enclosing jit's program, with no
    call of its own), `compiler_options` (XLA options for this function's compiles), `in_shardings` /
    `out_shardings` (a Sharding, or a PartitionSpec under `set_mesh`, or None, for all positional arguments or
    results, or a tree prefix of them: the program is compiled for the mesh's devices and partitioned by
    XLA; arguments already laid out over devices are taken as they are). `keep_unused` is accepted: numax
    never prunes unused arguments. numax's own option `fusion`: "xla" leaves fusion to XLA; "triton" compiles
    regions of elementwise equations to generated Triton kernels (on a CPU, run by Triton's interpreter);
    None takes the `numax_fusion` config flag (default "xla")."""
    options = dict(in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
                   static_argnames=static_argnames, donate_argnums=donate_argnums,
                   donate_argnames=donate_argnames, device=device, backend=backend, inline=inline,
                   compiler_options=compiler_options, fusion=fusion)
    if fun is None:
        return functools.partial(jit, keep_unused=keep_unused, **options)
    return PjitFunction(fun, **options)


def named_jit(fun, name, **options):
    """`jit` for numax's own library functions: `name` labels them in printed programs and compile logs. They
    compile per shape the user's code asks for (a sampler per parameter shape), so they give no RecompileWarning."""
    jitted = PjitFunction(fun, name=name, **options)
    jitted.library = True
    return jitted


# --- make_jaxpr ------------------------------------------------------------------------------------------
def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
    """`make_jaxpr(f)(*args)` is the ClosedProgram that `f` traces to (printed like a jaxpr). (`axis_env`,
    which names axes for collectives outside any vmap/pmap, raises NotImplementedError until pmap exists.)"""
    if axis_env:
        raise NotImplementedError("make_jaxpr: `axis_env` is not supported yet (it comes with pmap); trace the "
                                  "collectives inside `numax.vmap(..., axis_name=...)` instead")

    @functools.wraps(fun)
    def make(*args, **kwargs):
        jitted = PjitFunction(fun, static_argnums=static_argnums)
        program, consts, _, out_tree, _ = jitted.trace_program(args, kwargs)
        closed = ClosedJaxpr(program, consts)  # a ClosedProgram answering to jax's ClosedJaxpr names
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in program.out_avals]
            return closed, out_tree.unflatten(shapes)
        return closed

    return make


def _standing_for_extended(leaf):
    """A ShapeDtypeStruct of an extended dtype (typed keys) as what stands for such arrays; other leaves as they are."""
    if isinstance(leaf, ShapeDtypeStruct) and isinstance(leaf.dtype, dtypes.ExtendedDType):
        return leaf.dtype.abstract_array(leaf)
    return leaf


def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes `fun` would return, found by tracing without running anything."""
    return PjitFunction(fun).eval_shape(*args, **kwargs)
