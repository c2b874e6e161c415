"""The `triangular_solve` primitive: solving op(a) x = b or x op(a) = b with a triangular, batched over
leading dimensions, with its wrapper, abstract eval, lowering, JVP, transpose and batching rule.

On the CPU it lowers to LAPACK's trsm (as JAX does, so singular matrices give JAX's exact inf/NaN
pattern); on the GPU to StableHLO's own `triangular_solve`.
"""

from ..core import dtypes
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules, transpose_rules
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type
from . import ad
from . import typing as T
from .batching import move_axis
from .elementwise import conj, neg
from .linalg_kernels import custom_call, inline, lapack_char, lapack_target
from .linalg_matrices import batch_leading, check_matrix, is_complex, matmul, swap_last_two, tril, triu
from .shapes import reshape

triangular_solve_p = Primitive("triangular_solve")


def _triangular_solve_abstract_eval(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    batch, m, _ = check_matrix("triangular_solve", a, square=True)
    if b.dtype != a.dtype:
        raise TypeError(f"triangular_solve requires a and b of the same dtype, got {T.describe((a, b))}")
    if b.ndim != a.ndim:
        raise ValueError(f"triangular_solve requires a and b of equal rank, got shapes {a.shape} and {b.shape}")
    if b.shape[:-2] != batch:
        raise ValueError(f"triangular_solve requires equal batch dimensions, got shapes {a.shape} and {b.shape}")
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != m:
        side = "rows" if left_side else "columns"
        raise ValueError(f"triangular_solve: b's {side} ({common}) must match a's size {m} "
                         f"(left_side={left_side}), got shapes {a.shape} and {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _lower_triangular_solve(ctx, a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a_aval, b_aval = ctx.avals_in
    if ctx.aval_out.size == 0:
        return b
    complex_input = dtypes.is_complex(a_aval.dtype)
    if conjugate_a and not transpose_a and complex_input:  # neither LAPACK nor StableHLO has 'conjugate only'
        a = inline(ctx, lambda x: [conj(x)], [a], [a_aval])[0]
    adjoint = transpose_a and conjugate_a and complex_input
    if ctx.module.platform == "cpu":
        # LAPACK's trsm, as JAX uses on the CPU: singular matrices then give JAX's exact inf/NaN pattern.
        config = {"side": lapack_char("L" if left_side else "R"), "uplo": lapack_char("L" if lower else "U"),
                  "trans_x": lapack_char("C" if adjoint else "T" if transpose_a else "N"),
                  "diag": lapack_char("U" if unit_diagonal else "N")}
        return custom_call(ctx, lapack_target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval], [ctx.aval_out], config,
                           alias_operand=1)[0]
    mode = "ADJOINT" if adjoint else "TRANSPOSE" if transpose_a else "NO_TRANSPOSE"
    flag = lambda value: "true" if value else "false"
    return ctx.builder.op1("stablehlo.triangular_solve", [a, b], aval_type(ctx.aval_out), {
        "left_side": flag(left_side), "lower": flag(lower), "unit_diagonal": flag(unit_diagonal),
        "transpose_a": f"#stablehlo<transpose {mode}>"})


triangular_solve_p.def_abstract_eval(_triangular_solve_abstract_eval)
register_lowering(triangular_solve_p, _lower_triangular_solve)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """Solves op(a) @ x = b (left_side) or x @ op(a) = b for x, with a triangular.

    op(a) is a, its transpose, or its conjugate (transpose), per `transpose_a` and `conjugate_a`; only the
    `lower` (or upper) triangle of a is read, and its diagonal is taken as ones if `unit_diagonal`.
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# --- differentiation: linear in b; in a, X' = -op(A)^-1 op(A') X (left side) or -X op(A') op(A)^-1 -------------
def _triangular_solve_jvp_a(a_dot, ans, a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    k = 1 if unit_diagonal else 0
    a_dot = neg(tril(a_dot, -k) if lower else triu(a_dot, k))
    if transpose_a:
        a_dot = swap_last_two(a_dot)
    if conjugate_a and is_complex(a_dot):
        a_dot = conj(a_dot)

    def solve(rhs):
        return triangular_solve(a, rhs, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)

    # Solves and products cost about the same: order them so the intermediate is the smaller matrix.
    m, n = get_aval_of(b).shape[-2:]
    if left_side:
        return solve(matmul(a_dot, ans)) if m > n else matmul(solve(a_dot), ans)
    return solve(matmul(ans, a_dot)) if m < n else matmul(ans, solve(a_dot))


def _triangular_solve_transpose(ct, a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if is_undefined(a):
        raise TypeError("triangular_solve is not linear in its matrix a: it cannot be transposed with respect to a")
    if type(ct) is Zero:
        return [None, Zero(tangent_aval(b.aval))]
    return [None, triangular_solve(a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
                                   conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a,
           lambda b_dot, ans, a, b, **params: triangular_solve(a, b_dot, **params))
transpose_rules[triangular_solve_p] = _triangular_solve_transpose


# --- batching ---------------------------------------------------------------------------------------------------
def _triangular_solve_batching(values, dims, **params):
    """With one matrix `a` for all examples, the examples of b become extra right-hand sides (columns when
    solving on the left, rows on the right): one solve, no copies of `a` (as JAX does)."""
    (a, b), (a_dim, b_dim) = values, dims
    if a_dim is not None:
        return batch_leading(triangular_solve_p)(values, dims, **params)
    shape = get_aval_of(b).shape
    rank = len(shape)  # b's rank with the batch dimension
    fold_at = rank - 2 if params["left_side"] else rank - 3  # the batch goes beside the free dimension
    b = move_axis(b, b_dim, fold_at)
    moved = get_aval_of(b).shape
    if params["left_side"]:
        folded = moved[:-3] + (moved[-3], moved[-2] * moved[-1])
    else:
        folded = moved[:-3] + (moved[-3] * moved[-2], moved[-1])
    out = triangular_solve_p.bind(a, reshape(b, folded), **params)
    return reshape(out, moved), fold_at


batching_rules[triangular_solve_p] = _triangular_solve_batching
