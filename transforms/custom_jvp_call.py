"""`custom_jvp`: a function with a custom JVP rule, and the `custom_jvp_call` primitive that holds its
traced program, with the primitive's JVP, transpose and batching rules.

Staged or run, `custom_jvp_call` is just its program; only differentiation looks at the user's rule: its
JVP rule calls the user's JVP rule on the primals and (instantiated) tangents. Since linearize stages only
tangent work, the rule's primal part runs now and its tangent part lands in the linear program, so reverse
mode needs nothing more. Traced `nondiff_argnums` arguments travel as inputs of the primitive.
"""

from ..core import dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, tangent_aval
from ..core.primitives import batching_rules, jvp_rules
from ..core.trace import get_aval_of
from ..lax.ad import add_tangents, instantiate
from ..lax.conversions import convert_element_type
from .custom_function import (
    CustomFunction,
    SymbolicZero,
    call_primitive,
    call_rule,
    check_not_perturbed_by,
    check_primal_out,
    name_of,
    same_type,
    vmapped,
)


class CustomJVPException(Exception):
    def __init__(self):
        super().__init__(
            "Detected differentiation of a custom_jvp function with respect to a closed-over value. That isn't "
            "supported because the custom JVP rule only specifies how to differentiate the custom_jvp function "
            "with respect to explicit input parameters. Try passing the closed-over value into the custom_jvp "
            "function as an argument, and adapting the custom_jvp rule.")


class custom_jvp(CustomFunction):
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

    kind = "custom_jvp"
    dynamic_nondiff = True

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None

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

        jvp.__name__ = f"{name_of(self.fun)}_jvps"
        self.defjvp(jvp)

    def _check_rules_defined(self):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name_of(self.fun)} using defjvp.")

    def _stage(self, closed, consts, arguments, out_tree, dynamic_leaves, diff_leaves):
        rule = _JVPRule(self.jvp, name_of(self.fun), arguments, out_tree, closed.out_avals, self.symbolic_zeros)
        return custom_jvp_call_p.bind(*consts, *dynamic_leaves, *diff_leaves, program=closed, jvp=rule,
                                      num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                      name=name_of(self.fun))

    def _differentiate_now(self, trace, arguments, dynamic_leaves, primals, tangents):
        rule = _JVPRule(self.jvp, name_of(self.fun), arguments, None, None, self.symbolic_zeros)
        primal_out, out_tree, tangent_out = rule(dynamic_leaves, primals, tangents)
        check_not_perturbed_by(trace, primal_out + tangent_out, CustomJVPException)
        return primal_out, out_tree, tangent_out


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
        return name_of(self.jvp)

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
        jvp_name = name_of(self.jvp)
        pair = call_rule("custom_jvp", f"JVP rule {jvp_name}", self.fun_name, self.jvp, *nondiff,
                         arguments.in_tree.unflatten(primals), arguments.in_tree.unflatten(tangents))
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
            check_primal_out(f"Custom JVP rule {jvp_name}", "JVP rule", "custom_jvp", self.fun_name, primal_tree,
                             primal_avals, self.out_tree, self.out_avals)
        out_tangents = [_rule_tangent(t, a) for t, a in zip(tangent_leaves, primal_avals)]
        tangent_avals = [t.aval if type(t) is Zero else get_aval_of(t) for t in out_tangents]
        mismatches = [(p, t) for p, t in zip(primal_avals, tangent_avals) if not same_type(tangent_aval(p), t)]
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


custom_jvp_call_p = call_primitive("custom_jvp_call")


def _custom_jvp_call_jvp(primals, tangents, program, jvp, num_consts, symbolic_zeros, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomJVPException()
    split = num_consts + jvp.arguments.num_dynamic
    # Tangents of nondiff arguments are ignored: those arguments were stop_gradient-ed at the call.
    primal_out, _, tangent_out = jvp(primals[num_consts:split], primals[split:], tangents[split:])
    return primal_out, tangent_out


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


# --- batching: the program batched, the user's rule run under the same vmap ------------------------------------
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

        outs = vmapped(self.axis, per_example, list(dynamic_nondiff) + list(primals) + list(tangents),
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


_custom_jvp_call_batch.needs_axis = True
batching_rules[custom_jvp_call_p] = _custom_jvp_call_batch
