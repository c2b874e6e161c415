"""Implicitly differentiated solvers: `custom_linear_solve` (the `custom_linear_solve` primitive) and
`custom_root`.

`linear_solve_p` holds four closed programs, each taking its captured values first and then a vector (a
flat list of leaves shaped like `b`): `matvec` (x -> A x), `vecmat` (y -> A^T y, the transpose of matvec
or matvec itself when symmetric), `solve` (b -> A^{-1} b, maybe with auxiliary outputs) and
`transpose_solve` (b -> A^{-T} b). Running it runs `solve` alone. Its derivatives never differentiate the
solver: the JVP solves again for dx = A^{-1} (db - dA x), and the transpose swaps the roles of matvec /
vecmat and solve / transpose_solve, so reverse mode uses the user's transpose solver. `custom_root`
differentiates a root finder the same way, through `custom_jvp` and the user's `tangent_solve`.
"""

import functools
from typing import NamedTuple

from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.evaluation import eval_closed_program
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.trace import get_aval_of
from ..lowering.lower import lower_program_body, register_lowering
from .ad import add_tangents, instantiate, zeros_like_aval
from .conditionals import closure_convert, trace_callable
from .conversions import convert_element_type
from .elementwise import neg

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]


class _LinearSolveTuple(NamedTuple):
    """One entry per program of a linear solve (programs, their operand counts, their operands)."""

    matvec: object
    vecmat: object
    solve: object
    transpose_solve: object

    def transpose(self):
        """The entries of the transposed system: A^T's matvec is A's vecmat, its solve A's transpose_solve."""
        return _LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split_operands(operands, const_lengths):
    """(per program its captured operands, the leaves of b)."""
    groups, start = [], 0
    for length in const_lengths:
        groups.append(list(operands[start:start + length]))
        start += length
    return _LinearSolveTuple(*groups), list(operands[start:])


def _flatten(groups):
    return [value for group in groups for value in group]


# --- tracing the user's functions --------------------------------------------------------------------------
def _trace_vector_function(fun, vector_tree, vector_avals):
    """`fun(vector) -> ...` as (const-free ClosedProgram taking its captured values first, those values,
    output treedef)."""
    program, consts, out_tree = trace_callable(fun, vector_tree, vector_avals, spread=False)
    (closed,), captured = closure_convert([(program, consts)])
    return closed, captured, out_tree


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
    if has_aux:
        children = actual_tree.children()
        if len(children) != 2:
            raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, but a pytree tuple "
                             "with auxiliary output was expected because has_aux was set to True.")
        actual_tree = children[0]
    if actual_tree != expected_tree:
        raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got {actual_tree} "
                        f"and {expected_tree}.")


def _check_outputs(func_name, expected_name, out_avals, expected_avals):
    """The first outputs of a traced function match the vector it maps (shapes as JAX checks them, and dtypes,
    which the primitive's result types are taken from)."""
    actual = [a.shape for a in out_avals[:len(expected_avals)]]
    expected = [a.shape for a in expected_avals]
    if actual != expected:
        raise ValueError(f"{func_name}() output shapes must match {expected_name}, got {actual} and {expected}")
    actual_dtypes = [a.dtype for a in out_avals[:len(expected_avals)]]
    expected_dtypes = [a.dtype for a in expected_avals]
    if actual_dtypes != expected_dtypes:
        raise TypeError(f"{func_name}() output dtypes must match {expected_name}, got "
                        f"{[str(d) for d in actual_dtypes]} and {[str(d) for d in expected_dtypes]}")


def _as_function(closed, captured, vector_tree):
    """A traced vector program as a Python function of a vector pytree again."""

    def fun(vector):
        leaves = vector_tree.flatten_up_to(vector)
        return vector_tree.unflatten(eval_closed_program(closed, *captured, *leaves))

    return fun


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """x with `matvec(x) == b`, computed by `solve(matvec, b)` and differentiated implicitly.

    Derivatives never differentiate through `solve`: forward mode solves again (dx = solve(db - dA x)) and
    reverse mode calls `transpose_solve(vecmat, b)` (by default `solve` when `symmetric`), where `vecmat` is the
    transpose of `matvec`. `matvec` must be linear in x; `b` may be any pytree of arrays. With `has_aux`,
    `solve` (and `transpose_solve`) return `(x, aux)` and so does this function; aux gets no derivative."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, b_tree = tree.tree_flatten(b)
    b_avals = [get_aval_of(leaf) for leaf in b_leaves]

    def checked(fun, name, with_aux):
        def traced(x):
            out = fun(x)
            result = out[0] if with_aux else out
            result_avals = [get_aval_of(leaf) for leaf in tree.tree_leaves(result)]
            _check_outputs(name, "b", result_avals, b_avals)
            return out

        return traced

    matvec_closed, matvec_consts, out_tree = _trace_vector_function(checked(matvec, "matvec", False), b_tree,
                                                                    b_avals)
    _check_tree("matvec", "b", out_tree, b_tree)
    solve_closed, solve_consts, out_tree = _trace_vector_function(
        checked(functools.partial(solve, matvec), "solve", has_aux), b_tree, b_avals)
    _check_tree("solve", "b", out_tree, b_tree, has_aux)
    solution_tree = out_tree
    if transpose_solve is None:
        vecmat_closed = transpose_closed = None
        vecmat_consts, transpose_consts = [], []
    else:
        if symmetric:
            vecmat_closed, vecmat_consts, vecmat = matvec_closed, matvec_consts, matvec
        else:
            from ..transforms.transpose import transpose_program

            # A^T y is the transpose of the linear map x -> A x; it reads the values matvec captured.
            num_consts = len(matvec_consts)
            vecmat_closed = transpose_program(matvec_closed, [False] * num_consts + [True] * len(b_leaves),
                                              [True] * len(b_leaves))
            vecmat_consts = matvec_consts
            vecmat = _as_function(vecmat_closed, vecmat_consts, b_tree)
        transpose_closed, transpose_consts, out_tree = _trace_vector_function(
            checked(functools.partial(transpose_solve, vecmat), "transpose_solve", has_aux), b_tree, b_avals)
        _check_tree("transpose_solve", "b", out_tree, b_tree, has_aux)
    groups = _LinearSolveTuple(matvec_consts, vecmat_consts, solve_consts, transpose_consts)
    outs = linear_solve_p.bind(*_flatten(groups), *b_leaves,
                               const_lengths=_LinearSolveTuple(*(len(g) for g in groups)),
                               jaxprs=_LinearSolveTuple(matvec_closed, vecmat_closed, solve_closed, transpose_closed))
    return solution_tree.unflatten(outs)


# --- the primitive ------------------------------------------------------------------------------------------
linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)


def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
    b_avals = list(avals[sum(const_lengths):])
    solve_out = jaxprs.solve.out_avals
    if len(solve_out) < len(b_avals):
        raise TypeError(f"custom_linear_solve: solve returns {len(solve_out)} values for {len(b_avals)} leaves of b")
    return b_avals + list(solve_out[len(b_avals):])


linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)


def _linear_solve_lowering(ctx, *operands, const_lengths, jaxprs):
    # Running the primitive is running the user's solver on b.
    groups, b = _split_operands(operands, const_lengths)
    solve = jaxprs.solve
    return lower_program_body(ctx.module, ctx.builder, solve.program, solve.consts, groups.solve + b)


register_lowering(linear_solve_p, _linear_solve_lowering)


# --- differentiation ----------------------------------------------------------------------------------------
def _linear_solve_jvp(primals, tangents, const_lengths, jaxprs):
    # A x = b, so dA x + A dx = db and dx = A^{-1} (db - dA x): one more solve, linear in the tangents.
    from ..transforms.jvp import jvp_flat

    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    outs = linear_solve_p.bind(*primals, **params)
    groups, b = _split_operands(primals, const_lengths)
    groups_dot, b_dot = _split_operands(tangents, const_lengths)
    x = outs[:len(b)]
    aux_zeros = [Zero(tangent_aval(get_aval_of(a))) for a in outs[len(b):]]
    rhs = list(b_dot)
    if not all(type(t) is Zero for t in groups_dot.matvec):
        _, matvec_dot = jvp_flat(lambda *consts: eval_closed_program(jaxprs.matvec, *consts, *x),
                                 groups.matvec, groups_dot.matvec)
        rhs = [add_tangents(r, neg(t)) if type(t) is not Zero else r for r, t in zip(rhs, matvec_dot)]
    if all(type(r) is Zero for r in rhs):
        return outs, [Zero(tangent_aval(get_aval_of(v))) for v in x] + aux_zeros
    rhs = [instantiate(r) for r in rhs]
    x_dot = linear_solve_p.bind(*_flatten(groups), *rhs, **params)
    return outs, list(x_dot[:len(b)]) + aux_zeros


def _linear_solve_transpose(cts, *operands, const_lengths, jaxprs):
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation of "
                        "custom_linear_solve")
    groups, b = _split_operands(operands, const_lengths)
    if any(is_undefined(v) for v in _flatten(groups)):
        raise NotImplementedError("custom_linear_solve: reverse-mode differentiation with respect to the values "
                                  "that matvec or the solvers capture needs them known (they are linear here)")
    x_cts = [instantiate(ct) if type(ct) is Zero else ct for ct in cts[:len(b)]]
    b_cts = linear_solve_p.bind(*_flatten(groups.transpose()), *x_cts, const_lengths=const_lengths.transpose(),
                                jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(b_cts[:len(b)])


jvp_rules[linear_solve_p] = _linear_solve_jvp
transpose_rules[linear_solve_p] = _linear_solve_transpose


# --- batching -----------------------------------------------------------------------------------------------
def _linear_solve_batch(values, dims, axis, const_lengths, jaxprs):
    # Every vector is batched (b broadcast when it is not): a batched A or b makes x batched anyway.
    from ..transforms.vmap import batch_program
    from .batching import batch_at_front

    groups, b = _split_operands(values, const_lengths)
    group_dims, b_dims = _split_operands(dims, const_lengths)
    b = [batch_at_front(v, d, axis.size) for v, d in zip(b, b_dims)]
    vector_dims = [0] * len(b)
    batched = _LinearSolveTuple(*(
        None if closed is None else batch_program(closed, list(closed_dims) + vector_dims, axis,
                                                  force_batched=True)[0]
        for closed, closed_dims in zip(jaxprs, group_dims)))
    outs = linear_solve_p.bind(*_flatten(groups), *b, const_lengths=const_lengths, jaxprs=batched)
    return outs, [0] * len(outs)


_linear_solve_batch.needs_axis = True
batching_rules[linear_solve_p] = _linear_solve_batch


# --- custom_root --------------------------------------------------------------------------------------------
def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root of `f` found by `solve(f, initial_guess)`, differentiated implicitly.

    The derivative with respect to the values `f` captures comes from the implicit function theorem:
    du* = -(df/du)^{-1} (df/dm dm), with the linear system solved by `tangent_solve(g, y)` (`g` the
    linearization of `f` at the root). `solve` is never differentiated; `initial_guess` gets no derivative.
    With `has_aux`, `solve` returns `(root, aux)` and so does this function."""
    from ..transforms.custom_derivatives import custom_jvp
    from ..transforms.jvp import jvp_flat

    guess_leaves, guess_tree = tree.tree_flatten(initial_guess)
    guess_avals = [get_aval_of(leaf) for leaf in guess_leaves]
    f_closed, f_consts, out_tree = _trace_vector_function(f, guess_tree, guess_avals)
    _check_tree("f", "initial_guess", out_tree, guess_tree)
    solve_closed, solve_consts, solution_tree = _trace_vector_function(functools.partial(solve, f), guess_tree,
                                                                       guess_avals)
    _check_tree("solve", "initial_guess", solution_tree, guess_tree, has_aux)

    def linearize_and_solve(x, rhs):
        def f_jvp(tangent):
            # Tangents may come as Python scalars (`g(1.0)`): give them the primal's dtype.
            tangent_leaves = [convert_element_type(t, a.dtype)
                              for t, a in zip(guess_tree.flatten_up_to(tangent), guess_avals)]
            _, out = jvp_flat(lambda *xs: tree.tree_leaves(f(guess_tree.unflatten(xs))),
                              guess_tree.flatten_up_to(x), tangent_leaves)
            return guess_tree.unflatten([instantiate(t) for t in out])

        return tangent_solve(f_jvp, rhs)

    pair_tree = tree.tree_structure((initial_guess, initial_guess))
    program, consts, out_tree = trace_callable(linearize_and_solve, pair_tree, guess_avals * 2)
    _check_tree("tangent_solve", "x", out_tree, guess_tree)
    (solve_tangents,), tangent_consts = closure_convert([(program, consts)])
    num_leaves = len(guess_leaves)
    num_f, num_solve = len(f_consts), len(solve_consts)

    @custom_jvp
    def root(*args):
        solve_args = args[num_f:num_f + num_solve]
        return eval_closed_program(solve_closed, *solve_args, *args[len(args) - num_leaves:])

    @root.defjvp
    def root_jvp(primals, tangents):
        # f(m, u*(m)) = 0, so du* = -(d_u f)^{-1} (d_m f dm): tangent_solve at the root, on d_m f dm.
        outs = root(*primals)
        solution, aux = outs[:num_leaves], outs[num_leaves:]
        f_params, f_params_dot = primals[:num_f], tangents[:num_f]
        _, rhs = jvp_flat(lambda *params: eval_closed_program(f_closed, *params, *solution), f_params,
                          f_params_dot)
        rhs = [instantiate(t) for t in rhs]
        tangent_args = primals[num_f + num_solve:len(primals) - num_leaves]
        solution_dot = [neg(t) for t in eval_closed_program(solve_tangents, *tangent_args, *solution, *rhs)]
        return list(outs), solution_dot + [zeros_like_aval(tangent_aval(get_aval_of(a))) for a in aux]

    outs = root(*f_consts, *solve_consts, *tangent_consts, *guess_leaves)
    return solution_tree.unflatten(outs)
