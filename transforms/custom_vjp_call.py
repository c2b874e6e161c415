"""`custom_vjp`: a function with a custom VJP rule, and the primitives that carry it: `custom_vjp_call`,
which holds the function's traced program, and `custom_lin`, the linear map of such a function, known only
through its transpose. Also `closure_convert`, for passing closures to custom_vjp functions.

Staged or run, `custom_vjp_call` is just its program. Its JVP rule runs the user's `fwd` on the primals
(primal work) and produces the output tangents with `custom_lin` over the residuals and the tangents, which
reverse mode stages into the linear program; `custom_lin`'s transpose rule calls the user's `bwd`. Evaluated
on values (forward mode proper), `custom_lin` raises the TypeError JAX raises.
"""

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_differentiable, tangent_aval
from ..core.errors import UnexpectedTracerError
from ..core.evaluation import eval_program
from ..core.ir import ClosedProgram, Program
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import trace_to_program
from ..core.trace import Tracer, get_aval_of
from ..lax.ad import instantiate
from ..lax.batching import batch_at
from ..lax.conversions import convert_element_type
from ..lax.reductions import reduce_sum
from ..lowering.lower import register_lowering
from .custom_function import (
    CustomFunction,
    SymbolicZero,
    batched_aval,
    call_primitive,
    call_rule,
    check_not_perturbed_by,
    check_primal_out,
    name_of,
    vmapped,
)


class CustomVJPException(Exception):
    def __init__(self):
        super().__init__(
            "Detected differentiation of a custom_vjp function with respect to a closed-over value. That isn't "
            "supported because the custom VJP rule only specifies how to differentiate the custom_vjp function "
            "with respect to explicit input parameters. Try passing the closed-over value into the custom_vjp "
            "function as an argument, and adapting the custom_vjp fwd and bwd rules.")


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


class custom_vjp(CustomFunction):
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

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """Sets the forward rule `fwd(*args) -> (out, residuals)` and `bwd(*nondiff_args, residuals, ct)`."""
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    def _check_rules_defined(self):
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name_of(self.fun)} using defvjp.")

    def _check_arguments(self, args):
        for i in self.nondiff_argnums:
            if i < len(args) and any(isinstance(leaf, Tracer) for leaf in tree.tree_leaves(args[i])):
                raise UnexpectedTracerError(
                    "Found a numax Tracer object passed as an argument to a custom_vjp function in a position "
                    "indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
                    "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should only be "
                    "used for arguments that can't be or contain numax tracers, e.g. function-valued arguments. In "
                    "particular, array-valued arguments should typically not be indicated as nondiff_argnums.")

    def _stage(self, closed, consts, arguments, out_tree, dynamic_leaves, diff_leaves):
        fwd = _VJPRule(self.fwd, self.bwd, name_of(self.fun), arguments, out_tree,
                       closed.program.in_avals[len(consts):], closed.out_avals, self.symbolic_zeros)
        return custom_vjp_call_p.bind(*consts, *diff_leaves, program=closed, fwd=fwd, bwd=fwd.backward_rule,
                                      num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                      name=name_of(self.fun))

    def _differentiate_now(self, trace, arguments, dynamic_leaves, primals, tangents):
        # fwd runs at once; custom_lin carries the tangents to bwd.
        rule = _VJPRule(self.fwd, self.bwd, name_of(self.fun), arguments, None, [get_aval_of(p) for p in primals],
                        None, self.symbolic_zeros)
        primal_out, tangent_out = _custom_vjp_jvp(rule, primals, tangents, trace)
        return primal_out, rule.out_tree, tangent_out


class _BackwardRule:
    """The bwd half of a `_VJPRule` as a primitive parameter: prints as bwd's name."""

    def __init__(self, rule):
        self.rule = rule

    def __repr__(self):
        return name_of(self.rule.bwd)


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
        return name_of(self.fwd)

    def forward(self, primals, perturbed):
        """Runs fwd: (flat primal outputs, flat residuals, residual treedef). With symbolic zeros, fwd sees
        each argument leaf as a `CustomVJPPrimal` saying whether it is perturbed."""
        arguments = self.arguments
        if self.symbolic_zeros:
            primals = [CustomVJPPrimal(p, bool(nonzero)) for p, nonzero in zip(primals, perturbed)]
        pair = call_rule("custom_vjp", f"fwd rule {name_of(self.fwd)}", self.fun_name, self.fwd,
                          *arguments.full_args([], primals))
        fwd_name = name_of(self.fwd)
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
        check_primal_out(f"Custom VJP fwd rule {fwd_name}", "fwd rule", "custom_vjp", self.fun_name, out_tree,
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
        bwd_out = call_rule("custom_vjp", f"bwd rule {name_of(self.bwd)}", self.fun_name, self.bwd, *nondiff,
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


custom_vjp_call_p = call_primitive("custom_vjp_call")


def _custom_vjp_call_jvp(primals, tangents, program, fwd, bwd, num_consts, symbolic_zeros, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomVJPException()
    return _custom_vjp_jvp(fwd, primals[num_consts:], tangents[num_consts:])


def _custom_vjp_jvp(fwd, primals, tangents, trace=None):
    """Runs fwd on the primals; the output tangents come from `custom_lin` over the residuals and tangents.
    `trace`: the JVP trace processing an unstaged call, whose perturbation fwd's results must not carry."""
    primal_out, residuals, res_tree = fwd.forward(primals, [type(t) is not Zero for t in tangents])
    if trace is not None:
        check_not_perturbed_by(trace, primal_out + residuals, CustomVJPException)
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

    converted_fun.__name__ = f"closure_convert({name_of(fun)})"
    return converted_fun, hoisted


# --- batching: the program batched, fwd and bwd run under the same vmap ----------------------------------------
def _move_cotangent(ct, dim):
    """A cotangent batched at 0 as the cotangent of an input batched at `dim` (summed when unbatched)."""
    if type(ct) is Zero:
        size, shape = ct.aval.shape[0], ct.aval.shape[1:]
        return Zero(ct.aval.update(shape=shape if dim is None else shape[:dim] + (size,) + shape[dim:]))
    if dim is None:
        return reduce_sum(ct, (0,))
    return batch_at(ct, 0, None, dim)


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

        outs = vmapped(self.axis, per_example, list(primals), self.in_dims)
        count = store["count"]
        return outs[:count], outs[count:], store["res_tree"]

    def backward(self, residuals, res_tree, cts):
        num_res = len(residuals)

        def per_example(*values):
            return self.rule.backward(list(values[:num_res]), res_tree, list(values[num_res:]))

        cts_in = vmapped(self.axis, per_example, list(residuals) + list(cts), [0] * (num_res + len(cts)))
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
    in_avals = [next(tangent_avals) if nonzero else batched_aval(aval, size)
                for nonzero, aval in zip(nonzeros, inner.in_avals)]
    rule = _BatchedVJPRule(inner, axis, [0] * len(nonzeros), in_avals,
                           [batched_aval(aval, size) for aval in inner.out_avals])
    batched_out_avals = tuple(batched_aval(aval, size) for aval in out_avals)
    outs = custom_lin_p.bind(*values, num_res=num_res, bwd=rule.backward_rule, res_tree=res_tree, nonzeros=nonzeros,
                             out_avals=batched_out_avals)
    return outs, [0] * len(outs)


for _primitive, _rule in ((custom_vjp_call_p, _custom_vjp_call_batch), (custom_lin_p, _custom_lin_batch)):
    _rule.needs_axis = True
    batching_rules[_primitive] = _rule
