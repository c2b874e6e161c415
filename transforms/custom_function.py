"""What `custom_jvp` and `custom_vjp` share: `CustomFunction`, a function whose derivative comes from the
user's rules, and the handling of its calls.

A call resolves its arguments to positions (`Signature`) and splits them into differentiable leaves and
`nondiff_argnums` ones (`Arguments`). With nothing traced the function just runs; under an eager `jvp` or
`grad` (nothing staged) the rules are applied at once, as JAX does (so the function may branch on its
arguments' values there); otherwise the function is traced into a program (`trace_call`) held by a call
primitive (`call_primitive`), which evaluates, lowers and transposes as that program. Values the function
closes over become the program's constants; tracers among them become leading inputs of the primitive
(`num_consts`).

Also here: calling a user's rule and checking its primal outputs against the function's, symbolic zero
tangents (`SymbolicZero`), and running rules under the vmap that batches a call (`vmapped`). This module
knows neither rule kind; `custom_jvp_call` and `custom_vjp_call` define them.
"""

import contextlib
import functools
import inspect

from ..core import pytree as tree
from ..core.ad_util import Zero, tangent_aval
from ..core.errors import UnexpectedTracerError
from ..core.evaluation import eval_closed_program
from ..core.primitives import Primitive, transpose_rules
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import Tracer, current_dynamic_main, find_top_trace, full_lower, get_aval_of, new_main, trace_state
from ..lax.ad import stop_gradient
from ..lax.batching import batch_at
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import register_lowering
from .jvp import JVPTrace, JVPTracer
from .transpose import backward_pass


def name_of(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


class SymbolicZero:
    """A tangent known to be zero, passed to JVP rules defined with `symbolic_zeros=True` (and accepted
    from them). It has the tangent's shape and dtype but no value: it can't enter numax operations."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @staticmethod
    def from_primal_value(value):
        return SymbolicZero(tangent_aval(get_aval_of(value)))

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


# --- arguments ---------------------------------------------------------------------------------------------
class Signature:
    """Binds a decorated function's arguments to positions, defaults included (as JAX's resolve_kwargs)."""

    def __init__(self, fun, kind):
        self.fun = fun
        self.kind = kind
        try:
            self.signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self.signature = None
        parameters = self.signature.parameters.values() if self.signature is not None else ()
        self.num_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)

    def resolve(self, args, kwargs):
        if self.signature is None or (not kwargs and len(args) >= self.num_positional):
            return tuple(args)
        try:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if bound.kwargs:
                raise TypeError(f"keyword-only arguments {sorted(bound.kwargs)} can't be passed by position")
        except TypeError as error:
            raise TypeError(f"The input arguments to the {self.kind}-decorated function {name_of(self.fun)} could "
                            f"not be resolved to positional-only arguments. Binding failed with the error:\n{error}"
                            ) from error
        return tuple(bound.args)


def _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames):
    nums = {int(i) for i in nondiff_argnums}
    if nondiff_argnames:
        parameters = list(inspect.signature(fun).parameters)
        for name in nondiff_argnames:
            nums.add(parameters.index(name))
    return tuple(sorted(nums))


class Arguments:
    """How a call's arguments split into differentiable ones (flattened: `in_tree`) and the
    `nondiff_argnums` ones, whose tracer leaves (`custom_jvp` only) travel as inputs of the primitive.
    Keeps structure and static values only, never the call's tracers (it lives on in staged programs).

    Built by `split(args, ...) -> (arguments, dynamic nondiff leaves, differentiable leaves)`."""

    @staticmethod
    def split(args, nondiff_argnums, dynamic_nondiff):
        self = Arguments()
        self.num_args = len(args)
        self.nondiff_argnums = [i for i in nondiff_argnums if i < len(args)]
        nondiff = [args[i] for i in self.nondiff_argnums]
        nondiff_leaves, self.nondiff_tree = tree.tree_flatten(nondiff)
        self.dynamic_mask = [dynamic_nondiff and isinstance(leaf, Tracer) for leaf in nondiff_leaves]
        self.static_leaves = [None if dynamic else leaf for leaf, dynamic in zip(nondiff_leaves, self.dynamic_mask)]
        self.num_dynamic = sum(self.dynamic_mask)
        dynamic_leaves = [stop_gradient(leaf) for leaf, dynamic in zip(nondiff_leaves, self.dynamic_mask) if dynamic]
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        diff_leaves, self.in_tree = tree.tree_flatten(diff)
        return self, dynamic_leaves, diff_leaves

    def nondiff_args(self, dynamic_leaves):
        given = iter(dynamic_leaves)
        leaves = [next(given) if dynamic else leaf for leaf, dynamic in zip(self.static_leaves, self.dynamic_mask)]
        return self.nondiff_tree.unflatten(leaves)

    def full_args(self, dynamic_leaves, diff_leaves):
        nondiff = iter(self.nondiff_args(dynamic_leaves))
        diff = iter(self.in_tree.unflatten(diff_leaves))
        return [next(nondiff) if i in self.nondiff_argnums else next(diff) for i in range(self.num_args)]


# --- the decorated function and its calls ---------------------------------------------------------------------
_EAGER = object()


def _unstaged_trace(leaves):
    """`_EAGER` when nothing is traced, the trace to process the call in when nothing is staged (the
    innermost transformation among the arguments), None when a staging trace is active."""
    if current_dynamic_main().level != 0:
        return None
    if not any(isinstance(leaf, Tracer) for leaf in leaves):
        return _EAGER
    return find_top_trace(leaves)


class _Restage(Exception):
    """An unstaged call's rule met tracers of an interpreter above the one processing it (values the function
    closes over, say batched by a vmap inside the differentiation): the call is staged as a primitive instead,
    which that interpreter processes first (its closed-over tracers becoming inputs)."""


def check_not_perturbed_by(trace, values, exception):
    """A rule's results must not carry the perturbation of the trace processing the call: they would if it
    used a closed-over value that this differentiation perturbs."""
    level = trace.main.level
    levels = [value._trace.main.level for value in values if isinstance(value, Tracer)]
    if any(other > level for other in levels):
        raise _Restage()
    if any(other == level for other in levels):
        raise exception()


def _trace_call(fun, arguments, dynamic_leaves, diff_leaves):
    """Traces `fun` on the call's arguments: (ClosedProgram taking consts, dynamic nondiff leaves and
    differentiable leaves; tracer consts; output treedef)."""
    num_dynamic = arguments.num_dynamic
    store = {}

    def flat_fun(*leaves):
        out = fun(*arguments.full_args(leaves[:num_dynamic], leaves[num_dynamic:]))
        out_leaves, store["out_tree"] = tree.tree_flatten(out)
        for leaf in out_leaves:
            get_aval_of(leaf)  # outputs must be arrays
        return out_leaves

    in_avals = [get_aval_of(leaf) for leaf in dynamic_leaves + diff_leaves]
    program, consts = trace_to_program(flat_fun, in_avals)
    closed, hoisted = hoist_tracer_consts(program, consts)
    return closed, hoisted, store["out_tree"]


class CustomFunction:
    """A function whose derivatives come from rules its subclass (`custom_jvp`, `custom_vjp`) holds.

    A call with nothing traced runs the function; one under a JVP trace with nothing staged applies the rules
    at once (`_differentiate_now`); otherwise the function is traced and its call staged (`_stage`)."""

    kind = None  # the decorator's name, for messages
    dynamic_nondiff = False  # whether traced nondiff arguments become inputs of the primitive

    def __init__(self, fun, nondiff_argnums, nondiff_argnames):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
        self.symbolic_zeros = False
        self._signature = Signature(fun, self.kind)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        self._check_rules_defined()
        args = self._signature.resolve(args, kwargs)
        self._check_arguments(args)
        trace = _unstaged_trace(tree.tree_leaves(args))
        if trace is _EAGER:
            return self.fun(*args)
        arguments, dynamic_leaves, diff_leaves = Arguments.split(args, self.nondiff_argnums, self.dynamic_nondiff)
        if type(trace) is JVPTrace:
            try:
                return self._differentiate_unstaged(trace, arguments, dynamic_leaves, diff_leaves)
            except _Restage:
                pass
        closed, consts, out_tree = _trace_call(self.fun, arguments, dynamic_leaves, diff_leaves)
        return out_tree.unflatten(self._stage(closed, consts, arguments, out_tree, dynamic_leaves, diff_leaves))

    def _differentiate_unstaged(self, trace, arguments, dynamic_leaves, diff_leaves):
        """Differentiation with nothing staged (eager `jvp`, `grad`): the rules run at once, as JAX does, and
        the function is not traced (it may branch on the values of its arguments)."""
        tracers = [trace.full_raise(leaf) for leaf in diff_leaves]
        primals, tangents = [t.primal for t in tracers], [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return self(*arguments.full_args(dynamic_leaves, primals))
        primal_out, out_tree, tangent_out = self._differentiate_now(trace, arguments, dynamic_leaves, primals,
                                                                    tangents)
        return out_tree.unflatten([full_lower(JVPTracer(trace, p, t)) for p, t in zip(primal_out, tangent_out)])

    def _check_rules_defined(self):
        raise NotImplementedError

    def _check_arguments(self, args):
        """Raises for arguments the decorator does not accept."""

    def _differentiate_now(self, trace, arguments, dynamic_leaves, primals, tangents):
        """(flat primal outputs, their treedef, flat tangent outputs) from the rules, for a call under `trace`."""
        raise NotImplementedError

    def _stage(self, closed, consts, arguments, out_tree, dynamic_leaves, diff_leaves):
        """Binds the call primitive on the traced program; returns its flat outputs."""
        raise NotImplementedError


def call_primitive(name):
    """A primitive holding a traced program (`program`): it evaluates and lowers as that program, and where it
    is applied to tangents (inside a JVP rule, where it is linear) transposes as the program."""
    primitive = Primitive(name, multiple_results=True)
    primitive.def_abstract_eval(lambda *avals, program, **_: program.out_avals)
    primitive.def_impl(lambda *args, program, **_: eval_closed_program(program, *args))
    register_lowering(primitive, lambda ctx, *args, program, **_: ctx.lower_program(program, list(args)))
    polymorphic_primitives.add(primitive)  # its program's equations are checked as they are lowered
    transpose_rules[primitive] = _call_transpose
    return primitive


def _call_transpose(cts, *args, program, **_):
    return backward_pass(program.program, program.consts, list(args), list(cts))


# --- the user's rules ----------------------------------------------------------------------------------------
def call_rule(kind, rule_text, fun_name, rule, *args):
    """Calls a user's rule. Rules run when differentiation reaches the call, which may be after the trace
    that staged it has finished (`grad(jit(f))`): a traced value they close over is stale by then."""
    try:
        return rule(*args)
    except UnexpectedTracerError as error:
        raise UnexpectedTracerError(
            f"{error}\nWhile running the {rule_text} of the {kind} function {fun_name}: a custom rule (or the "
            "function it calls) closes over a value traced by a transformation that has finished, typically an "
            "argument of an enclosing jit when that jit is differentiated. Pass such values to the custom function "
            "as arguments instead of closing over them.") from None


def same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def _type_tree(treedef, avals):
    return str(treedef.unflatten([a.str_short() for a in avals])).replace("'", "")


def check_primal_out(rule_text, rule_kind, kind, fun_name, out_tree, out_avals, fun_tree, fun_avals):
    """The primal outputs of a rule must have the decorated function's structure, shapes and dtypes."""
    pair_text = ("must produce a pair (list or tuple of length two) where the first element represents the "
                 f"primal output (equal in value to the output of the {kind}-decorated function {fun_name}, ")
    if out_tree != fun_tree:
        raise TypeError(f"{rule_text} for function {fun_name} {pair_text}and in particular of the same "
                        f"container/pytree structure), but instead the {rule_kind} output's first element had "
                        f"container/pytree structure:\n    {_type_tree(out_tree, out_avals)}\nwhile the "
                        f"{kind}-decorated function {fun_name} had output container/pytree structure:\n    "
                        f"{_type_tree(fun_tree, fun_avals)}.")
    if not all(same_type(a, b) for a, b in zip(out_avals, fun_avals)):
        raise TypeError(f"{rule_text} for function {fun_name} {pair_text}and in particular with leaves of the "
                        f"same shape/dtype), but instead the {rule_kind} output's first element had shapes/dtypes of:"
                        f"\n    {_type_tree(out_tree, out_avals)}\nwhile the {kind}-decorated function "
                        f"{fun_name} had output shapes/dtypes of:\n    {_type_tree(fun_tree, fun_avals)}")


# --- rules under vmap --------------------------------------------------------------------------------------------
# Under vmap a custom function stays custom: its program is batched, and the batched primitive carries rules
# that run the user's rules under the same vmap, so that differentiating the batched function (grad of vmap)
# still uses them. Outputs and residuals come out batched at 0 (an output that the program leaves unbatched
# may get a batched tangent from the rule, and the tangent must have the output's shape).
def _unbatched_aval(aval, dim):
    return aval if dim is None else aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def batched_aval(aval, size):
    return aval.update(shape=(size,) + aval.shape)


def vmapped(axis, fun, values, dims):
    """`fun(*values)` on one example's view of `values` (batched at `dims`), under the vmap of `axis`: its flat
    outputs batched at 0. Symbolic `Zero`s pass through both ways (a batched Zero stands for zeros of the
    batched shape).

    While that vmap is still running (differentiation of the batched call inside it, as in grad of vmap) and
    the values come from interpreters below it, `fun` runs in the vmap's own interpreter, so that values the
    user's rules close over, batched by that vmap, meet the arguments on one batch axis (as JAX's subtraces
    do). Otherwise in a new vmap of the axis."""
    from .vmap import BatchTrace, BatchTracer

    running = next((main for main in trace_state.stack
                    if main.trace_type is BatchTrace and main.global_data is axis), None)
    if running is not None and any(isinstance(v, Tracer) and v._trace.main.level >= running.level for v in values):
        running = None  # the values come from interpreters above it (a program staged under that vmap)
    context = contextlib.nullcontext(running) if running is not None else new_main(BatchTrace, axis)
    with context as main:
        trace = BatchTrace(main)
        inputs = [Zero(_unbatched_aval(v.aval, d)) if type(v) is Zero else v if d is None else BatchTracer(trace, v, d)
                  for v, d in zip(values, dims)]
        outs = []
        for out in fun(*inputs):
            if type(out) is Zero:
                outs.append(Zero(batched_aval(out.aval, axis.size)))
                continue
            out = trace.full_raise(out)
            outs.append(batch_at(out.value, out.batch_dim, axis.size, 0))
        return outs
