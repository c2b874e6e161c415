"""`checkpoint` (alias `remat`): differentiate a function while saving only its inputs for the backward
pass (plus what a policy allows), recomputing its other intermediates there.

Owns the `checkpoint` call primitive (a closed Program as a parameter, like `jit`), its JVP and transpose
rules, the `name` primitive that `checkpoint_name` binds, the policies of `checkpoint_policies`, and
`saved_residuals` (what differentiation keeps for the backward pass, for checking a policy).

How the saving is decided: the JVP of a checkpoint equation is two checkpoint equations. The first computes
the primal outputs from the primal inputs (plus the intermediates the policy allows to save, as extra
outputs); the second computes the output tangents from the primal inputs, the saved intermediates and the
input tangents, recomputing everything else it needs. Under linearize only the second lands in the linear
program, so its primal inputs are the residuals. Its transpose is again a checkpoint equation, whose
program recomputes the forward intermediates and then runs the backward pass.
"""

import functools
import inspect
import types
import weakref

from ..core import caches
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.config import trace_context
from ..core.dce import dce_program, has_effects
from ..core.ir import ClosedProgram, Program, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from .jit import jit_p
from .jvp import jvp_program
from .transpose import transpose_program

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "saved_residuals", "print_saved_residuals"]


# --- the call primitive ---------------------------------------------------------------------------
checkpoint_p = Primitive("checkpoint", multiple_results=True)
checkpoint_p.def_abstract_eval(lambda *avals, program, prevent_cse, differentiated, policy: program.out_avals)


def _checkpoint_impl(*args, program, prevent_cse, differentiated, policy):
    # Run eagerly like a jitted call: one compiled executable per program.
    return jit_p.impl(*args, program=program, name="checkpoint")


def _checkpoint_lowering(ctx, *args, program, prevent_cse, differentiated, policy):
    args = list(args)
    if differentiated and prevent_cse and args:
        # The recomputation reads the same values as the forward pass: without a barrier, XLA's CSE merges
        # the two in one module and keeps the forward intermediates alive, undoing the checkpoint (as JAX).
        args = ctx.builder.op("stablehlo.optimization_barrier", args, [aval_type(a) for a in ctx.avals_in])
    return ctx.lower_program(program, args)


checkpoint_p.def_impl(_checkpoint_impl)
register_lowering(checkpoint_p, _checkpoint_lowering)


# --- differentiation ------------------------------------------------------------------------------
class _RematSplit:
    """A JVP program split for rematerialization.

    `known` (None when nothing is saved) maps the primal inputs to the primal outputs and then the
    intermediates the policy saves; `tangent` maps the primal inputs marked in `used_primals`, the saved
    intermediates and the nonzero input tangents to the nonzero output tangents."""

    __slots__ = ("known", "used_primals", "tangent")

    def __init__(self, known, used_primals, tangent):
        self.known = known
        self.used_primals = used_primals
        self.tangent = tangent


def _saveable(policy, eqn):
    if has_effects(eqn):
        return True  # never run a side effect twice
    if policy is None:
        return False
    return bool(policy(eqn.primitive, *(a.aval for a in eqn.inputs), **eqn.params))


@caches.lru(maxsize=512)
def _remat_split(jvp_closed, num_primals, num_primal_outs, policy):
    """Partial evaluation of a JVP program with the tangents unknown, where a known equation's outputs
    may become residuals only if the policy saves them: the others are recomputed on the tangent side."""
    program = jvp_closed.program
    primal_invars, tangent_invars = program.invars[:num_primals], program.invars[num_primals:]
    unknown = set(tangent_invars)
    known_eqns, tangent_eqns = [], []
    for eqn in program.equations:
        if any(type(a) is Var and a in unknown for a in eqn.inputs):
            tangent_eqns.append(eqn)
            unknown.update(eqn.outvars)
            continue
        known_eqns.append(eqn)
        if not _saveable(policy, eqn):
            tangent_eqns.append(eqn)  # recomputed on the tangent side where needed (DCE drops the rest)

    tangent_outvars = program.outvars[num_primal_outs:]
    staged, _ = dce_program(Program(program.constvars, [], tangent_outvars, tangent_eqns))
    # What the tangent side reads without defining it: primal inputs and saved intermediates.
    defined = set(program.constvars) | set(tangent_invars)
    for eqn in staged.equations:
        defined.update(eqn.outvars)
    free, seen = [], set()
    for atom in [a for eqn in staged.equations for a in eqn.inputs] + list(staged.outvars):
        if type(atom) is Var and atom not in defined and atom not in seen:
            seen.add(atom)
            free.append(atom)
    primal_set = set(primal_invars)
    used_primals = tuple(v in seen for v in primal_invars)
    saved = [v for v in free if v not in primal_set]
    residual_invars = [v for v in primal_invars if v in seen] + saved
    tangent = Program(staged.constvars, residual_invars + list(tangent_invars), staged.outvars, staged.equations)

    known = None
    if saved:
        known, _ = dce_program(Program(program.constvars, primal_invars,
                                       list(program.outvars[:num_primal_outs]) + saved, known_eqns))
        known = _closed(known, jvp_closed)
    return _RematSplit(known, used_primals, _closed(tangent, jvp_closed))


def _closed(program, source: ClosedProgram):
    value_of = dict(zip(source.program.constvars, source.consts))
    return ClosedProgram(program, [value_of[v] for v in program.constvars])


def _checkpoint_jvp(primals, tangents, program, prevent_cse, differentiated, policy):
    """Two checkpoint calls: the primal one saves nothing but what the policy allows; the tangent one
    recomputes the rest from the primal inputs. Under linearize only the tangent one is staged."""
    nonzeros = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nonzeros = jvp_program(program, nonzeros)
    num_out = len(program.out_avals)
    split = _remat_split(jvp_closed, len(primals), num_out, policy)
    params = dict(prevent_cse=prevent_cse, policy=policy)
    if split.known is None:
        primal_out, saved = checkpoint_p.bind(*primals, program=program, differentiated=differentiated, **params), []
    else:
        outs = checkpoint_p.bind(*primals, program=split.known, differentiated=differentiated, **params)
        primal_out, saved = outs[:num_out], outs[num_out:]
    if not any(out_nonzeros):
        return primal_out, [Zero(tangent_aval(a)) for a in program.out_avals]
    residuals = [p for p, used in zip(primals, split.used_primals) if used] + list(saved)
    given = [t for t in tangents if type(t) is not Zero]
    tangent_out = iter(checkpoint_p.bind(*residuals, *given, program=split.tangent, differentiated=True, **params))
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a))
                        for a, nz in zip(program.out_avals, out_nonzeros)]


def _checkpoint_transpose(cts, *args, program, prevent_cse, differentiated, policy):
    """A checkpoint call of the transposed program: it recomputes the forward values the linear part reads
    from the residual inputs, then runs the backward pass."""
    linear = [is_undefined(a) for a in args]
    nonzero_cts = [type(ct) is not Zero for ct in cts]
    if not any(nonzero_cts):
        return [Zero(a.aval) if is_linear else None for a, is_linear in zip(args, linear)]
    transposed = transpose_program(program, linear, nonzero_cts)
    cts_in = iter(checkpoint_p.bind(*(a for a in args if not is_undefined(a)),
                                    *(ct for ct in cts if type(ct) is not Zero),
                                    program=transposed, prevent_cse=prevent_cse, differentiated=True, policy=policy))
    return [next(cts_in) if is_linear else None for is_linear in linear]


jvp_rules[checkpoint_p] = _checkpoint_jvp
transpose_rules[checkpoint_p] = _checkpoint_transpose


def _checkpoint_batch(values, dims, axis, program, prevent_cse, differentiated, policy):
    """A checkpoint under vmap: one checkpoint of the batched program, with the same policy."""
    from .vmap import batch_program

    batched, out_dims = batch_program(program, dims, axis)
    outs = checkpoint_p.bind(*values, program=batched, prevent_cse=prevent_cse, differentiated=differentiated,
                             policy=policy)
    return outs, out_dims


_checkpoint_batch.needs_axis = True
batching_rules[checkpoint_p] = _checkpoint_batch


# --- checkpoint_name ------------------------------------------------------------------------------
name_p = Primitive("name")
name_p.def_abstract_eval(lambda x, name: x)
name_p.def_impl(lambda x, name: x)
register_lowering(name_p, lambda ctx, x, name: x)
# The tangent is not named: only primal values are candidates for saving.
jvp_rules[name_p] = lambda primals, tangents, name: (name_p.bind(primals[0], name=name), tangents[0])
transpose_rules[name_p] = lambda ct, x, name: [ct]
batching_rules[name_p] = lambda values, dims, name: (name_p.bind(values[0], name=name), dims[0])


def checkpoint_name(x, name):
    """`x` itself (any pytree), tagged with `name` for the policies `save_only_these_names` and
    `save_any_names_but_these` of a surrounding `checkpoint`."""
    return tree.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# --- policies -------------------------------------------------------------------------------------
# A policy is called as `policy(primitive, *input_avals, **params)` for each equation whose outputs the
# backward pass may need, and says whether those outputs may be saved (else they are recomputed).
def everything_saveable(*_, **__):
    """Save every intermediate: as if there were no checkpoint."""
    return True


def nothing_saveable(*_, **__):
    """Save only the inputs: recompute everything (the default)."""
    return False


def _is_dot(primitive):
    return primitive.name in ("dot_general", "conv_general_dilated")


def dots_saveable(primitive, *_, **__):
    """Save the results of matrix multiplications and convolutions; recompute the rest."""
    return _is_dot(primitive)


def dots_with_no_batch_dims_saveable(primitive, *_, **params):
    """Save the results of `dot_general`s without batch dimensions; recompute the rest."""
    if primitive.name != "dot_general":
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_only_these_names(*names):
    """Save only values tagged by `checkpoint_name` with one of `names`."""
    names = frozenset(names)

    def policy(primitive, *_, **params):
        return primitive is name_p and params["name"] in names

    return policy


def save_any_names_but_these(*names):
    """Save values tagged by `checkpoint_name`, except those tagged with one of `names`."""
    names = frozenset(names)

    def policy(primitive, *_, **params):
        return primitive is name_p and params["name"] not in names

    return policy


def save_from_both_policies(policy_1, policy_2):
    """Save what either policy saves."""

    def policy(primitive, *avals, **params):
        return bool(policy_1(primitive, *avals, **params)) or bool(policy_2(primitive, *avals, **params))

    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies,
)


# --- inspecting what is saved ----------------------------------------------------------------------
def saved_residuals(f, *args, **kwargs):
    """What reverse-mode differentiation of `f` at these arguments keeps from the forward pass for the
    backward pass: a list of (ShapedArray, where it comes from), as `jax.ad_checkpoint.saved_residuals`."""
    from .linearize import linearize_flat

    keyed, in_tree = tree.tree_flatten_with_path((args, kwargs))
    leaves = [leaf for _, leaf in keyed]

    def flat_f(*xs):
        call_args, call_kwargs = tree.tree_unflatten(in_tree, xs)
        return tree.tree_leaves(f(*call_args, **call_kwargs))

    def residuals_of(*xs):
        _, linear = linearize_flat(flat_f, list(xs))
        return linear.residuals

    program, _ = trace_to_program(residuals_of, [get_aval_of(leaf) for leaf in leaves])
    names = _argument_names(f, [path for path, _ in keyed])
    # As jax lists them: the arguments kept, in argument order, then the values computed, in program order.
    residuals = sorted(enumerate(program.outvars), key=lambda item: (
        (0, program.invars.index(item[1])) if item[1] in program.invars else (1, item[0])))
    return [(v.aval, _source(v, program, lambda i: f"from the argument {names[i]}")) for _, v in residuals]


def print_saved_residuals(f, *args, **kwargs):
    """Prints `saved_residuals(f, *args, **kwargs)`, one residual a line."""
    for aval, source in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {source}")


def _argument_names(f, paths):
    """`x`, `ws[0]`, `scale` for the flattened argument leaves of `f` (positional then keyword)."""
    try:
        parameters = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        parameters = []
    names = []
    for path in paths:
        (group, first, *rest) = path
        if group.idx == 0:  # positional
            index = first.idx
            base = parameters[index] if index < len(parameters) else f"args[{index}]"
        else:
            base = str(first.key)
        names.append(base + tree.keystr(rest))
    return names


def _source(atom, program, describe_input):
    """Where a residual comes from, looking through the checkpoint calls that produced it."""
    if type(atom) is not Var:
        return "from a literal"
    if atom in program.constvars:
        return "from a constant"
    if atom in program.invars:
        return describe_input(program.invars.index(atom))
    for eqn in program.equations:
        if atom not in eqn.outvars:
            continue
        if eqn.primitive is checkpoint_p:
            inner = eqn.params["program"].program
            return _source(inner.outvars[eqn.outvars.index(atom)], inner,
                           lambda i: _source(eqn.inputs[i], program, describe_input))
        if eqn.primitive is name_p:
            return f"named '{eqn.params['name']}'"
        if eqn.primitive is jit_p:
            return f"output of jitted function '{eqn.params['name']}'"
        return f"output of {eqn.primitive.name}"
    raise AssertionError("a residual defined nowhere")


# --- the public wrapper ---------------------------------------------------------------------------
def _static_positions(static_argnums, num_args):
    if not all(-num_args <= i < num_args for i in static_argnums):
        raise ValueError("the `static_argnums` argument to `numax.checkpoint` / `numax.remat` can only take "
                         "integer values greater than or equal to `-len(args)` and less than `len(args)`, but got "
                         f"{static_argnums}, while `len(args)` = {num_args}")
    return frozenset(i % num_args for i in static_argnums)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


# fun -> {signature: (ClosedProgram, out_tree)}: traces of functions that close over no tracers, shared by every
# `checkpoint(fun)` wrapper so that `grad(lambda x: checkpoint(f)(x))` in a loop reuses one program (and its
# compiled executables), as JAX caches its traces on the function.
_traces = weakref.WeakKeyDictionary()


def _traces_of(fun):
    try:
        return _traces.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: traced on every call
        return None


class _Deprecated:
    def __repr__(self):
        return "Deprecated"


_DEPRECATED = _Deprecated()


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=(), concrete=_DEPRECATED):
    """`fun`, made to recompute its intermediates in the backward pass instead of saving them.

    Differentiated in reverse mode (`grad`, `vjp`, `linearize`), the checkpointed function saves only its
    inputs and the intermediates `policy` allows (one of `numax.checkpoint_policies`; None saves nothing
    else), and recomputes the others when the cotangents are computed. Values are unchanged.
    `prevent_cse` keeps XLA from merging the recomputation with the forward pass under `jit`.
    `static_argnums`/`static_argnames` mark arguments that are Python values the function is traced for
    (one trace each). `concrete` was removed from JAX and raises as there."""
    if concrete is not _DEPRECATED:
        raise NotImplementedError(
            "The `concrete` option to `numax.checkpoint` was removed (as from jax.checkpoint in JAX v0.10.0): use "
            "`static_argnums` for arguments the function's Python control flow depends on.")
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    static_argnames = frozenset(static_argnames)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if not (isinstance(static_argnums, tuple) and all(type(i) is int for i in static_argnums)):
        raise TypeError("the `static_argnums` argument to `numax.checkpoint` / `numax.remat` must be an int or "
                        f"a tuple of ints, but got value {static_argnums}")
    if not isinstance(prevent_cse, bool):
        raise TypeError(f"prevent_cse must be a bool, got {type(prevent_cse)=}")

    def trace(static, leaves, in_tree):
        def flat_fun(*leaf_values):
            dynamic, named = tree.tree_unflatten(in_tree, leaf_values)
            args = list(dynamic)
            for i in sorted(i for i in static if type(i) is int):
                args.insert(i, static[i])
            named = {**named, **{k: v for k, v in static.items() if type(k) is str}}
            out_leaves, flat_fun.out_tree = tree.tree_flatten(fun(*args, **named))
            return out_leaves

        program, consts = trace_to_program(flat_fun, [get_aval_of(leaf) for leaf in leaves])
        closed, hoisted = hoist_tracer_consts(program, consts)
        return closed, hoisted, flat_fun.out_tree

    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        static = {}
        if static_argnums:
            positions = _static_positions(static_argnums, len(args))
            static = {i: args[i] for i in positions}
            args = tuple(a for i, a in enumerate(args) if i not in positions)
        if static_argnames and kwargs:
            static.update((k, v) for k, v in kwargs.items() if k in static_argnames)
            kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        leaves, in_tree = tree.tree_flatten((tuple(args), kwargs))
        static_key = tuple(sorted(static.items(), key=lambda item: (type(item[0]) is str, item[0])))
        key = (in_tree, tuple(get_aval_of(leaf) for leaf in leaves), static_key, *trace_context())
        cache = _traces_of(fun) if _hashable(static_key) else None
        entry = cache.get(key) if cache is not None else None
        if entry is None:
            closed, hoisted, out_tree = trace(static, leaves, in_tree)
            if cache is not None and not hoisted:
                cache[key] = (closed, out_tree)
        else:
            (closed, out_tree), hoisted = entry, []
        outs = checkpoint_p.bind(*hoisted, *leaves, program=closed, prevent_cse=prevent_cse, differentiated=False,
                                 policy=policy)
        return tree.tree_unflatten(out_tree, outs)

    return fun_remat


def remat(fun, *, prevent_cse=True, policy=None, static_argnums=(), concrete=_DEPRECATED):
    """Alias of `checkpoint` (with JAX's `remat` options)."""
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums, concrete=concrete)

