"""Custom derivative rules: `custom_jvp`, `custom_vjp` and `closure_convert`, with JAX's API.

A decorated function is traced into a program held by a call primitive (`custom_jvp_call`,
`custom_vjp_call`). Staged or run, that primitive is just the program; only differentiation looks at the
user's rules:
- `custom_jvp_call`'s JVP rule calls the user's JVP rule on the primals and (instantiated) tangents. Since
  linearize stages only tangent work, the rule's primal part runs now and its tangent part lands in the
  linear program, so reverse mode needs nothing more.
- `custom_vjp_call`'s JVP rule runs the user's `fwd` on the primals (primal work) and produces the output
  tangents with `custom_lin`, a primitive over the residuals and the tangents that reverse mode stages
  into the linear program; its transpose rule calls the user's `bwd`. Evaluated on values (forward mode
  proper), `custom_lin` raises the TypeError JAX raises.

When nothing is staged, the function is not traced at all: called on values it just runs, and under an
eager `jvp`/`grad` the rules are applied at once, as JAX does (so the function may branch on its
arguments' values there).

Values a decorated function closes over become the program's constants; tracers among them become
leading inputs of the primitive (`num_consts`), so that staging stays correct. Differentiating with
respect to such a closed-over value is an error, as in JAX: the custom rule only covers the arguments.
"""

import contextlib
import functools
import inspect

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_differentiable, tangent_aval
from ..core.errors import UnexpectedTracerError
from ..core.evaluation import eval_closed_program, eval_program
from ..core.ir import ClosedProgram, Program
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import Tracer, current_dynamic_main, find_top_trace, full_lower, get_aval_of, new_main, trace_state
from ..lax.ad import add_tangents, instantiate, stop_gradient
from ..lax.elementwise import convert_element_type
from ..lowering.lower import register_lowering
from .jvp import JVPTrace, JVPTracer
from .transpose import backward_pass

__all__ = ["custom_jvp", "custom_vjp", "closure_convert", "SymbolicZero", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values", "CustomJVPException", "CustomVJPException"]


class CustomJVPException(Exception):
    def __init__(self):
        super().__init__(
            "Detected differentiation of a custom_jvp function with respect to a closed-over value. That isn't "
            "supported because the custom JVP rule only specifies how to differentiate the custom_jvp function "
            "with respect to explicit input parameters. Try passing the closed-over value into the custom_jvp "
            "function as an argument, and adapting the custom_jvp rule.")


class CustomVJPException(Exception):
    def __init__(self):
        super().__init__(
            "Detected differentiation of a custom_vjp function with respect to a closed-over value. That isn't "
            "supported because the custom VJP rule only specifies how to differentiate the custom_vjp function "
            "with respect to explicit input parameters. Try passing the closed-over value into the custom_vjp "
            "function as an argument, and adapting the custom_vjp fwd and bwd rules.")


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


class CustomVJPPrimal:
    """An argument leaf as the fwd rule of a custom_vjp defined with `symbolic_zeros=True` sees it: its
    `value` and whether it is `perturbed` (has a tangent that is not known to be zero)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def custom_vjp_primal_tree_values(tree_of_primals):
    """The values of a tree of `CustomVJPPrimal`s (what a symbolic-zeros fwd rule receives)."""
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return tree.tree_map(value, tree_of_primals)


def _name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


class _Signature:
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
            raise TypeError(f"The input arguments to the {self.kind}-decorated function {_name(self.fun)} could not "
                            f"be resolved to positional-only arguments. Binding failed with the error:\n{error}"
                            ) from error
        return tuple(bound.args)


def _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames):
    nums = {int(i) for i in nondiff_argnums}
    if nondiff_argnames:
        parameters = list(inspect.signature(fun).parameters)
        for name in nondiff_argnames:
            nums.add(parameters.index(name))
    return tuple(sorted(nums))


def _call_rule(kind, rule_text, fun_name, rule, *args):
    """Calls a user's rule. Rules run when differentiation reaches the call, which may be after the trace
    that staged it has finished (`grad(jit(f))`): a traced value they close over is stale by then."""
    try:
        return rule(*args)
    except UnexpectedTracerError as error:
        raise UnexpectedTracerError(
            f"{error}\nWhile running the {rule_text} of the {kind} function {fun_name}: a custom rule (or the function "
            "it calls) closes over a value traced by a transformation that has finished, typically an argument of "
            "an enclosing jit when that jit is differentiated. Pass such values to the custom function as "
            "arguments instead of closing over them.") from None


def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def _type_tree(treedef, avals):
    return str(treedef.unflatten([a.str_short() for a in avals])).replace("'", "")


class _Arguments:
    """How a call's arguments split into differentiable ones (flattened: `in_tree`) and the
    `nondiff_argnums` ones, whose tracer leaves (`custom_jvp` only) travel as inputs of the primitive.
    Keeps structure and static values only, never the call's tracers (it lives on in staged programs).

    Built by `split(args, ...) -> (arguments, dynamic nondiff leaves, differentiable leaves)`."""

    @staticmethod
    def split(args, nondiff_argnums, dynamic_nondiff):
        self = _Arguments()
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


# --- custom_jvp ----------------------------------------------------------------------------------------------
class custom_jvp:
    """A function with a custom JVP rule, used by every differentiation (forward and reverse mode) in place
    of differentiating its implementation:

        @custom_jvp
        def f(x, y):
            return numax.numpy.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            (x, y), (x_dot, y_dot) = primals, tangents
            return f(x, y), numax.numpy.cos(x) * x_dot * y + numax.numpy.sin(x) * y_dot

    Arguments at `nondiff_argnums` (or named in `nondiff_argnames`) are not differentiated: they are passed
    first to the rule, which then takes the primals and tangents of the other arguments."""

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False
        self._signature = _Signature(fun, "custom_jvp")

    def defjvp(self, jvp, symbolic_zeros=False):
        """Sets the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`; returns it."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: `jvps[i](tangent_i, primal_out, *primals)` is argument i's contribution to
        the output tangent (None: the output does not depend on that argument)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            out_leaves, out_tree = tree.tree_flatten(primal_out)
            totals = [Zero(tangent_aval(get_aval_of(p))) for p in out_leaves]
            for rule, tangent in zip(jvps, tangents):
                if rule is None:
                    continue
                contribution = out_tree.flatten_up_to(rule(tangent, primal_out, *primals))
                totals = [add_tangents(total, c) for total, c in zip(totals, contribution)]
            return primal_out, out_tree.unflatten([instantiate(t) for t in totals])

        jvp.__name__ = f"{_name(self.fun)}_jvps"
        self.defjvp(jvp)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {_name(self.fun)} using defjvp.")
        args = self._signature.resolve(args, kwargs)
        trace = _unstaged_trace(tree.tree_leaves(args))
        if trace is _EAGER:
            return self.fun(*args)
        arguments, dynamic_leaves, diff_leaves = _Arguments.split(args, self.nondiff_argnums, dynamic_nondiff=True)
        if type(trace) is JVPTrace:
            try:
                return self._jvp_unstaged(trace, arguments, dynamic_leaves, diff_leaves)
            except _Restage:
                pass
        closed, consts, out_tree = _trace_call(self.fun, arguments, dynamic_leaves, diff_leaves)
        rule = _JVPRule(self.jvp, _name(self.fun), arguments, out_tree, closed.out_avals, self.symbolic_zeros)
        outs = custom_jvp_call_p.bind(*consts, *dynamic_leaves, *diff_leaves, program=closed,
                                      jvp=rule, num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                      name=_name(self.fun))
        return out_tree.unflatten(outs)

    def _jvp_unstaged(self, trace, arguments, dynamic_leaves, diff_leaves):
        """Differentiation with nothing staged (eager `jvp`, `grad`): the rule is called at once, as JAX does,
        and the function is not traced (it may branch on the values of its arguments)."""
        tracers = [trace.full_raise(leaf) for leaf in diff_leaves]
        primals, tangents = [t.primal for t in tracers], [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return self(*arguments.full_args(dynamic_leaves, primals))
        rule = _JVPRule(self.jvp, _name(self.fun), arguments, None, None, self.symbolic_zeros)
        primal_out, out_tree, tangent_out = rule(dynamic_leaves, primals, tangents)
        _check_not_perturbed_by(trace, primal_out + tangent_out, CustomJVPException)
        return out_tree.unflatten([full_lower(JVPTracer(trace, p, t)) for p, t in zip(primal_out, tangent_out)])


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


def _check_not_perturbed_by(trace, values, exception):
    """A rule's results must not carry the perturbation of the trace processing the call: they would if it
    used a closed-over value that this differentiation perturbs."""
    level = trace.main.level
    levels = [value._trace.main.level for value in values if isinstance(value, Tracer)]
    if any(other > level for other in levels):
        raise _Restage()
    if any(other == level for other in levels):
        raise exception()


class _JVPRule:
    """The user's JVP rule with what the primitive's JVP needs to call it and check its result. Hashed by
    identity (it is a primitive parameter); prints as the rule's name."""

    def __init__(self, jvp, fun_name, arguments, out_tree, out_avals, symbolic_zeros):
        self.jvp = jvp
        self.fun_name = fun_name
        self.arguments = arguments
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.symbolic_zeros = symbolic_zeros

    def __repr__(self):
        return _name(self.jvp)

    def __call__(self, dynamic_nondiff, primals, tangents):
        """(flat primal outputs, their treedef, flat tangent outputs with Zeros for symbolic zeros) from flat
        primal and tangent inputs. Without `out_tree` (the function was not traced), outputs are unchecked
        against the function's."""
        arguments = self.arguments
        if self.symbolic_zeros:
            tangents = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
        else:
            tangents = [instantiate(t) for t in tangents]
        nondiff = arguments.nondiff_args(dynamic_nondiff)
        pair = _call_rule("custom_jvp", f"JVP rule {_name(self.jvp)}", self.fun_name, self.jvp, *nondiff,
                          arguments.in_tree.unflatten(primals), arguments.in_tree.unflatten(tangents))
        jvp_name = _name(self.jvp)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {self.fun_name} must produce a pair (list or "
                            f"tuple of length two) representing primal and tangent outputs, but got {pair}.")
        primal_leaves, primal_tree = tree.tree_flatten(pair[0])
        tangent_leaves, tangent_tree = tree.tree_flatten(pair[1])
        if primal_tree != tangent_tree:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {self.fun_name} must produce primal and "
                            f"tangent outputs with equal container (pytree) structures, but got {primal_tree} and "
                            f"{tangent_tree} respectively.")
        primal_avals = [get_aval_of(p) for p in primal_leaves]
        if self.out_tree is not None:
            _check_primal_out(f"Custom JVP rule {jvp_name}", "JVP rule", "custom_jvp", self.fun_name, primal_tree,
                              primal_avals, self.out_tree, self.out_avals)
        out_tangents = [_rule_tangent(t, a) for t, a in zip(tangent_leaves, primal_avals)]
        tangent_avals = [t.aval if type(t) is Zero else get_aval_of(t) for t in out_tangents]
        mismatches = [(p, t) for p, t in zip(primal_avals, tangent_avals) if not _same_type(tangent_aval(p), t)]
        if mismatches:
            if len(primal_avals) == 1:
                (p, t), = mismatches
                raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with corresponding shapes "
                                f"and dtypes. Expected {tangent_aval(p).str_short()} (tangent type of "
                                f"{p.str_short()}) but got {t.str_short()}.")
            lines = "\n".join(f"  primal {p.str_short()} with tangent {t.str_short()}, expecting "
                              f"tangent {tangent_aval(p).str_short()}" for p, t in mismatches)
            raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
                            f"dtypes, but got:\n{lines}")
        return primal_leaves, primal_tree, out_tangents


def _check_primal_out(rule_text, rule_kind, kind, fun_name, out_tree, out_avals, fun_tree, fun_avals):
    """The primal outputs of a rule must have the decorated function's structure, shapes and dtypes."""
    pair_text = ("must produce a pair (list or tuple of length two) where the first element represents the "
                 f"primal output (equal in value to the output of the {kind}-decorated function {fun_name}, ")
    if out_tree != fun_tree:
        raise TypeError(f"{rule_text} for function {fun_name} {pair_text}and in particular of the same "
                        f"container/pytree structure), but instead the {rule_kind} output's first element had "
                        f"container/pytree structure:\n    {_type_tree(out_tree, out_avals)}\nwhile the "
                        f"{kind}-decorated function {fun_name} had output container/pytree structure:\n    "
                        f"{_type_tree(fun_tree, fun_avals)}.")
    if not all(_same_type(a, b) for a, b in zip(out_avals, fun_avals)):
        raise TypeError(f"{rule_text} for function {fun_name} {pair_text}and in particular with leaves of the same "
                        f"shape/dtype), but instead the {rule_kind} output's first element had shapes/dtypes of:\n"
                        f"    {_type_tree(out_tree, out_avals)}\nwhile the {kind}-decorated function {fun_name} had "
                        f"output shapes/dtypes of:\n    {_type_tree(fun_tree, fun_avals)}")


def _rule_tangent(tangent, primal_aval):
    """A tangent returned by a rule as numax sees tangents: symbolic zeros and float0 arrays become `Zero`,
    host scalars become arrays of the tangent dtype when their kind fits."""
    if type(tangent) is SymbolicZero:
        return Zero(tangent.aval)
    if type(tangent) is Zero:
        return tangent
    aval = get_aval_of(tangent)
    if aval.dtype == dtypes.float0:
        return Zero(aval)
    expected = tangent_aval(primal_aval)
    if aval.weak_type and aval.shape == expected.shape and dtypes.is_inexact(expected.dtype) and (
            dtypes.is_complex(expected.dtype) or not dtypes.is_complex(aval.dtype)):
        return convert_element_type(tangent, expected.dtype)  # a Python scalar's weak type adapts, as in JAX
    return tangent


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(lambda *avals, program, **_: program.out_avals)
custom_jvp_call_p.def_impl(lambda *args, program, **_: eval_closed_program(program, *args))
register_lowering(custom_jvp_call_p, lambda ctx, *args, program, **_: ctx.lower_program(program, list(args)))


def _custom_jvp_call_jvp(primals, tangents, program, jvp, num_consts, symbolic_zeros, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomJVPException()
    split = num_consts + jvp.arguments.num_dynamic
    # Tangents of nondiff arguments are ignored: those arguments were stop_gradient-ed at the call.
    primal_out, _, tangent_out = jvp(primals[num_consts:split], primals[split:], tangents[split:])
    return primal_out, tangent_out


def _call_transpose(cts, *args, program, **_):
    """A call applied to tangents inside a JVP rule (linear there): transposed as its program."""
    return backward_pass(program.program, program.consts, list(args), list(cts))


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
transpose_rules[custom_jvp_call_p] = _call_transpose


# --- custom_vjp ----------------------------------------------------------------------------------------------
class custom_vjp:
    """A function with a custom VJP rule for reverse-mode differentiation:

        @custom_vjp
        def f(x, y):
            return numax.numpy.sin(x) * y

        def f_fwd(x, y):
            return f(x, y), (numax.numpy.cos(x), numax.numpy.sin(x), y)

        def f_bwd(residuals, g):
            cos_x, sin_x, y = residuals
            return (cos_x * g * y, sin_x * g)

        f.defvjp(f_fwd, f_bwd)

    `fwd` takes the function's arguments and returns (output, residuals); `bwd(*nondiff_args, residuals,
    output_cotangent)` returns one cotangent per differentiable argument (None for a zero one). Forward-mode
    differentiation of such a function is an error."""

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False
        self._signature = _Signature(fun, "custom_vjp")

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """Sets the forward rule `fwd(*args) -> (out, residuals)` and `bwd(*nondiff_args, residuals, ct)`."""
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {_name(self.fun)} using defvjp.")
        args = self._signature.resolve(args, kwargs)
        for i in self.nondiff_argnums:
            if i < len(args) and any(isinstance(leaf, Tracer) for leaf in tree.tree_leaves(args[i])):
                raise UnexpectedTracerError(
                    "Found a numax Tracer object passed as an argument to a custom_vjp function in a position "
                    "indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
                    "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should only be "
                    "used for arguments that can't be or contain numax tracers, e.g. function-valued arguments. In "
                    "particular, array-valued arguments should typically not be indicated as nondiff_argnums.")
        trace = _unstaged_trace(tree.tree_leaves(args))
        if trace is _EAGER:
            return self.fun(*args)
        arguments, _, diff_leaves = _Arguments.split(args, self.nondiff_argnums, dynamic_nondiff=False)
        if type(trace) is JVPTrace:
            try:
                return self._jvp_unstaged(trace, arguments, diff_leaves)
            except _Restage:
                pass
        closed, consts, out_tree = _trace_call(self.fun, arguments, [], diff_leaves)
        fwd = _VJPRule(self.fwd, self.bwd, _name(self.fun), arguments, out_tree, closed.program.in_avals[len(consts):],
                       closed.out_avals, self.symbolic_zeros)
        outs = custom_vjp_call_p.bind(*consts, *diff_leaves, program=closed, fwd=fwd, bwd=fwd.backward_rule,
                                      num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                      name=_name(self.fun))
        return out_tree.unflatten(outs)

    def _jvp_unstaged(self, trace, arguments, diff_leaves):
        """Differentiation with nothing staged (eager `grad`): fwd runs at once, as JAX does, and the function
        is not traced (it may branch on the values of its arguments)."""
        tracers = [trace.full_raise(leaf) for leaf in diff_leaves]
        primals, tangents = [t.primal for t in tracers], [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return self(*arguments.full_args([], primals))
        rule = _VJPRule(self.fwd, self.bwd, _name(self.fun), arguments, None, [get_aval_of(p) for p in primals],
                        None, self.symbolic_zeros)
        primal_out, tangent_out = _custom_vjp_jvp(rule, primals, tangents, trace)
        return rule.out_tree.unflatten([full_lower(JVPTracer(trace, p, t)) for p, t in zip(primal_out, tangent_out)])


class _BackwardRule:
    """The bwd half of a `_VJPRule` as a primitive parameter: prints as bwd's name."""

    def __init__(self, rule):
        self.rule = rule

    def __repr__(self):
        return _name(self.rule.bwd)


class _VJPRule:
    """The user's fwd and bwd with what the primitives need to call them and check their results. Hashed by
    identity (it is a primitive parameter); prints as fwd's name."""

    def __init__(self, fwd, bwd, fun_name, arguments, out_tree, in_avals, out_avals, symbolic_zeros):
        self.fwd = fwd
        self.bwd = bwd
        self.backward_rule = _BackwardRule(self)
        self.fun_name = fun_name
        self.arguments = arguments
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.in_avals = in_avals
        self.symbolic_zeros = symbolic_zeros

    def __repr__(self):
        return _name(self.fwd)

    def forward(self, primals, perturbed):
        """Runs fwd: (flat primal outputs, flat residuals, residual treedef). With symbolic zeros, fwd sees
        each argument leaf as a `CustomVJPPrimal` saying whether it is perturbed."""
        arguments = self.arguments
        if self.symbolic_zeros:
            primals = [CustomVJPPrimal(p, bool(nonzero)) for p, nonzero in zip(primals, perturbed)]
        pair = _call_rule("custom_vjp", f"fwd rule {_name(self.fwd)}", self.fun_name, self.fwd,
                          *arguments.full_args([], primals))
        fwd_name = _name(self.fwd)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {self.fun_name} must produce a pair (list "
                            "or tuple of length two) where the first element represents the primal output (equal to "
                            f"those of the custom_vjp-decorated function {self.fun_name}) and the second element "
                            "represents residuals (i.e. values stored from the forward pass for use on the backward "
                            f"pass), but instead of a pair the fwd rule {fwd_name} produced {pair}.")
        out_leaves, out_tree = tree.tree_flatten(pair[0])
        out_avals = [get_aval_of(o) for o in out_leaves]
        if self.out_tree is None:  # the function was not traced: fwd's outputs say what it returns
            self.out_tree, self.out_avals = out_tree, out_avals
        _check_primal_out(f"Custom VJP fwd rule {fwd_name}", "fwd rule", "custom_vjp", self.fun_name, out_tree,
                          out_avals, self.out_tree, self.out_avals)
        res_leaves, res_tree = tree.tree_flatten(pair[1])
        for leaf in res_leaves:
            try:
                get_aval_of(leaf)
            except TypeError:
                raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {self.fun_name} produced a residual of "
                                f"type {type(leaf).__name__}; residuals must be arrays (or pytrees of arrays). Pass "
                                "other values with nondiff_argnums.") from None
        return out_leaves, res_leaves, res_tree

    def backward(self, residuals, res_tree, cts):
        """Runs bwd on the residuals and one cotangent per output (Zeros allowed); returns one cotangent per
        differentiable input leaf (None where bwd gave none)."""
        arguments = self.arguments
        zero = (lambda aval: SymbolicZero(tangent_aval(aval))) if self.symbolic_zeros else _zero_cotangent
        full_cts = [zero(a) if type(ct) is Zero else ct for ct, a in zip(cts, self.out_avals)]
        nondiff = arguments.nondiff_args([])
        bwd_out = _call_rule("custom_vjp", f"bwd rule {_name(self.bwd)}", self.fun_name, self.bwd, *nondiff,
                             res_tree.unflatten(residuals), self.out_tree.unflatten(full_cts))
        in_tree = arguments.in_tree
        if isinstance(bwd_out, list) and len(bwd_out) == len(in_tree.children()):
            bwd_out = tuple(bwd_out)
        flat = _bwd_leaves(bwd_out, in_tree)
        paths = [path for path, _ in tree.tree_flatten_with_path(in_tree.unflatten(list(range(in_tree.num_leaves))))[0]]
        return [_checked_bwd_cotangent(ct, aval, path) for ct, aval, path in zip(flat, self.in_avals, paths)]


def _zero_cotangent(aval):
    tangent = tangent_aval(aval)
    if tangent.dtype == dtypes.float0:
        return np.zeros(tangent.shape, dtypes.float0)
    return instantiate(Zero(tangent))


class _NoCotangent:
    """Stands for each leaf under a None returned by bwd."""


def _bwd_leaves(bwd_out, in_tree):
    """bwd's output, one entry per leaf of the differentiable arguments; None expands over its subtree."""
    error = TypeError(
        "Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args tuple of "
        "the primal function, and in particular must produce a tuple of length equal to the number of arguments to "
        f"the primal function, but got bwd output structure {tree.tree_structure(bwd_out)} for primal input "
        f"structure {in_tree}.")
    if not isinstance(bwd_out, tuple):
        raise error
    markers = [_NoCotangent() for _ in range(in_tree.num_leaves)]
    dummy = in_tree.unflatten(markers)
    out_leaves, out_tree = tree.tree_flatten(bwd_out, is_leaf=lambda x: x is None)
    try:
        subtrees = out_tree.flatten_up_to(dummy)
    except ValueError:
        raise error from None
    flat = []
    for leaf, subtree in zip(out_leaves, subtrees):
        subtree_leaves = tree.tree_leaves(subtree)
        if leaf is None:
            flat.extend([None] * len(subtree_leaves))
        elif type(subtree) is _NoCotangent:
            flat.append(leaf)
        else:
            raise error
    if len(flat) != in_tree.num_leaves:
        raise error
    return flat


def _checked_bwd_cotangent(ct, aval, path):
    """A cotangent from bwd for an input of type `aval`: None and float0 inputs give Zero; the shape must
    match; a dtype that differs is converted (JAX accepts it for inexact inputs)."""
    expected = tangent_aval(aval)
    if ct is None or type(ct) is SymbolicZero or expected.dtype == dtypes.float0:
        return Zero(expected)
    ct_aval = get_aval_of(ct)
    if ct_aval.shape != expected.shape or ct_aval.dtype == dtypes.float0:
        why = ", so the shapes do not match" if ct_aval.shape != expected.shape else ""
        raise ValueError(f"Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
                         f"primal function, but at output{tree.keystr(path)} the bwd rule produced an output of type "
                         f"{ct_aval.str_short()} corresponding to an input of type {aval.str_short()}{why}")
    if ct_aval.dtype != expected.dtype:
        ct = convert_element_type(ct, expected.dtype)
    return ct


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(lambda *avals, program, **_: program.out_avals)
custom_vjp_call_p.def_impl(lambda *args, program, **_: eval_closed_program(program, *args))
register_lowering(custom_vjp_call_p, lambda ctx, *args, program, **_: ctx.lower_program(program, list(args)))


def _custom_vjp_call_jvp(primals, tangents, program, fwd, bwd, num_consts, symbolic_zeros, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomVJPException()
    return _custom_vjp_jvp(fwd, primals[num_consts:], tangents[num_consts:])


def _custom_vjp_jvp(fwd, primals, tangents, trace=None):
    """Runs fwd on the primals; the output tangents come from `custom_lin` over the residuals and tangents.
    `trace`: the JVP trace processing an unstaged call, whose perturbation fwd's results must not carry."""
    primal_out, residuals, res_tree = fwd.forward(primals, [type(t) is not Zero for t in tangents])
    if trace is not None:
        _check_not_perturbed_by(trace, primal_out + residuals, CustomVJPException)
    differentiable = [is_differentiable(a) for a in fwd.out_avals]
    if not any(differentiable):
        return primal_out, [Zero(tangent_aval(a)) for a in fwd.out_avals]
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    out_avals = tuple(tangent_aval(a) for a, d in zip(fwd.out_avals, differentiable) if d)
    lin_out = iter(custom_lin_p.bind(*residuals, *(t for t in tangents if type(t) is not Zero),
                                     num_res=len(residuals), bwd=fwd.backward_rule, res_tree=res_tree,
                                     nonzeros=nonzeros, out_avals=out_avals))
    return primal_out, [next(lin_out) if d else Zero(tangent_aval(a)) for a, d in zip(fwd.out_avals, differentiable)]


jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
transpose_rules[custom_vjp_call_p] = _call_transpose


# --- custom_lin: the linear map of a custom_vjp function, known only through its transpose -------------------
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _raise_custom_vjp_error_on_jvp(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p.def_impl(_raise_custom_vjp_error_on_jvp)
register_lowering(custom_lin_p, _raise_custom_vjp_error_on_jvp)
jvp_rules[custom_lin_p] = _raise_custom_vjp_error_on_jvp


def _custom_lin_transpose(cts, *inputs, num_res, bwd, res_tree, nonzeros, out_avals):
    bwd = bwd.rule
    differentiable = iter(cts)
    all_cts = [next(differentiable) if is_differentiable(a) else Zero(tangent_aval(a)) for a in bwd.out_avals]
    cts_in = bwd.backward(list(inputs[:num_res]), res_tree, all_cts)
    return [None] * num_res + [ct for ct, nonzero in zip(cts_in, nonzeros) if nonzero]


transpose_rules[custom_lin_p] = _custom_lin_transpose


# --- closure_convert -----------------------------------------------------------------------------------------
def closure_convert(fun, *example_args):
    """`(converted, hoisted)`: `converted(*args, *hoisted)` computes `fun(*args)` with the traced values `fun`
    closes over (those that may be differentiated: inexact tracers) taken as the explicit trailing arguments
    `hoisted`. For passing closures to custom_vjp functions, whose rules see only explicit arguments."""
    leaves, in_tree = tree.tree_flatten(example_args)
    store = {}

    def flat_fun(*args):
        out_leaves, store["out_tree"] = tree.tree_flatten(fun(*in_tree.unflatten(args)))
        return out_leaves

    program, consts = trace_to_program(flat_fun, [get_aval_of(leaf) for leaf in leaves])
    out_tree = store["out_tree"]
    hoist = [isinstance(c, Tracer) and is_differentiable(get_aval_of(c)) for c in consts]
    kept_vars = [v for v, h in zip(program.constvars, hoist) if not h]
    kept = [c for c, h in zip(consts, hoist) if not h]
    hoisted_vars = [v for v, h in zip(program.constvars, hoist) if h]
    hoisted = [c for c, h in zip(consts, hoist) if h]
    converted_program = Program(kept_vars, list(program.invars) + hoisted_vars, program.outvars, program.equations)
    closed = ClosedProgram(converted_program, kept)
    num_hoisted = len(hoisted)

    def converted_fun(*args_and_hoisted):
        args = args_and_hoisted[:len(args_and_hoisted) - num_hoisted]
        arg_leaves, arg_tree = tree.tree_flatten(tuple(args))
        if arg_tree != in_tree:
            raise TypeError("The inputs to the closure produced by closure_convert must have the same Pytree "
                            f"structure as the example arguments passed when closure_convert was called. Expected "
                            f"{in_tree}, but got {arg_tree}")
        extra = args_and_hoisted[len(args_and_hoisted) - num_hoisted:]
        return out_tree.unflatten(eval_program(closed.program, closed.consts, *arg_leaves, *extra))

    converted_fun.__name__ = f"closure_convert({_name(fun)})"
    return converted_fun, hoisted


# --- batching rules ------------------------------------------------------------------------------------------
# Under vmap a custom function stays custom: its program is batched, and the batched primitive carries rules
# that run the user's rules under the same vmap, so that differentiating the batched function (grad of vmap)
# still uses them. Outputs and residuals come out batched at 0 (an output that the program leaves unbatched
# may get a batched tangent from the rule, and the tangent must have the output's shape).
from ..lax.batching import batch_at  # noqa: E402
from ..lax.reductions import reduce_sum  # noqa: E402


def _unbatched_aval(aval, dim):
    return aval if dim is None else aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def _batched_aval(aval, size):
    return aval.update(shape=(size,) + aval.shape)


def _vmapped(axis, fun, values, dims):
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
                outs.append(Zero(_batched_aval(out.aval, axis.size)))
                continue
            out = trace.full_raise(out)
            outs.append(batch_at(out.value, out.batch_dim, axis.size, 0))
        return outs


def _move_cotangent(ct, dim):
    """A cotangent batched at 0 as the cotangent of an input batched at `dim` (summed when unbatched)."""
    if type(ct) is Zero:
        size, shape = ct.aval.shape[0], ct.aval.shape[1:]
        return Zero(ct.aval.update(shape=shape if dim is None else shape[:dim] + (size,) + shape[dim:]))
    if dim is None:
        return reduce_sum(ct, (0,))
    return batch_at(ct, 0, None, dim)


class _BatchedJVPRule:
    """A custom_jvp rule under vmap: the user's rule (`rule`) run under the same vmap. Hashed by identity."""

    def __init__(self, rule, axis, dynamic_dims, diff_dims):
        self.rule = rule
        self.arguments = rule.arguments
        self.axis = axis
        self.dynamic_dims = list(dynamic_dims)
        self.diff_dims = list(diff_dims)

    def __repr__(self):
        return f"vmap({self.rule!r})"

    def __call__(self, dynamic_nondiff, primals, tangents):
        num_dynamic, num_primals = len(dynamic_nondiff), len(primals)
        store = {}

        def per_example(*values):
            primal_out, store["tree"], tangent_out = self.rule(
                list(values[:num_dynamic]), list(values[num_dynamic:num_dynamic + num_primals]),
                list(values[num_dynamic + num_primals:]))
            store["count"] = len(primal_out)
            return list(primal_out) + list(tangent_out)

        outs = _vmapped(self.axis, per_example, list(dynamic_nondiff) + list(primals) + list(tangents),
                        self.dynamic_dims + self.diff_dims + self.diff_dims)
        count = store["count"]
        return outs[:count], store["tree"], outs[count:]


def _custom_jvp_call_batch(values, dims, axis, program, jvp, num_consts, symbolic_zeros, name):
    from .vmap import batch_program

    batched, out_dims = batch_program(program, dims, axis, force_batched=True)
    split = num_consts + jvp.arguments.num_dynamic
    rule = _BatchedJVPRule(jvp, axis, dims[num_consts:split], dims[split:])
    outs = custom_jvp_call_p.bind(*values, program=batched, jvp=rule, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros, name=name)
    return outs, out_dims


class _BatchedVJPRule:
    """A custom_vjp's fwd and bwd under vmap: the user's (`rule`'s) run under the same vmap. Residuals and
    outputs are batched at 0; `in_dims` says where the cotangents of the differentiable inputs go (summed
    over the batch for unbatched inputs). Hashed by identity; has `_VJPRule`'s interface."""

    def __init__(self, rule, axis, in_dims, in_avals, out_avals):
        self.rule = rule
        self.axis = axis
        self.in_dims = list(in_dims)
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.out_tree = rule.out_tree
        self.backward_rule = _BackwardRule(self)
        self.bwd = rule.bwd

    def __repr__(self):
        return f"vmap({self.rule!r})"

    def forward(self, primals, perturbed):
        store = {}

        def per_example(*values):
            primal_out, residuals, store["res_tree"] = self.rule.forward(list(values), perturbed)
            store["count"] = len(primal_out)
            return list(primal_out) + list(residuals)

        outs = _vmapped(self.axis, per_example, list(primals), self.in_dims)
        count = store["count"]
        return outs[:count], outs[count:], store["res_tree"]

    def backward(self, residuals, res_tree, cts):
        num_res = len(residuals)

        def per_example(*values):
            return self.rule.backward(list(values[:num_res]), res_tree, list(values[num_res:]))

        cts_in = _vmapped(self.axis, per_example, list(residuals) + list(cts), [0] * (num_res + len(cts)))
        return [_move_cotangent(ct, dim) for ct, dim in zip(cts_in, self.in_dims)]


def _custom_vjp_call_batch(values, dims, axis, program, fwd, bwd, num_consts, symbolic_zeros, name):
    from .vmap import batch_program

    batched, out_dims = batch_program(program, dims, axis, force_batched=True)
    in_avals = [get_aval_of(v) for v in values[num_consts:]]
    rule = _BatchedVJPRule(fwd, axis, dims[num_consts:], in_avals, batched.out_avals)
    outs = custom_vjp_call_p.bind(*values, program=batched, fwd=rule, bwd=rule.backward_rule, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros, name=name)
    return outs, out_dims


def _custom_lin_batch(values, dims, axis, num_res, bwd, res_tree, nonzeros, out_avals):
    """custom_lin with batched residuals or tangents: one custom_lin whose bwd is the batched bwd."""
    size = axis.size
    values = [batch_at(v, d, size, 0) for v, d in zip(values, dims)]
    inner = bwd.rule
    tangent_avals = iter(get_aval_of(v) for v in values[num_res:])
    in_avals = [next(tangent_avals) if nonzero else _batched_aval(aval, size)
                for nonzero, aval in zip(nonzeros, inner.in_avals)]
    rule = _BatchedVJPRule(inner, axis, [0] * len(nonzeros), in_avals,
                           [_batched_aval(aval, size) for aval in inner.out_avals])
    batched_out_avals = tuple(_batched_aval(aval, size) for aval in out_avals)
    outs = custom_lin_p.bind(*values, num_res=num_res, bwd=rule.backward_rule, res_tree=res_tree, nonzeros=nonzeros,
                             out_avals=batched_out_avals)
    return outs, [0] * len(outs)


for _primitive, _rule in ((custom_jvp_call_p, _custom_jvp_call_batch), (custom_vjp_call_p, _custom_vjp_call_batch),
                          (custom_lin_p, _custom_lin_batch)):
    _rule.needs_axis = True
    batching_rules[_primitive] = _rule
