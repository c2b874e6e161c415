"""Factorization primitives: cholesky, lu (with lu_pivots_to_permutation and permute_rows, which apply its
pivots), and QR (geqrf, householder_product, qr), each with its wrapper, abstract eval, lowering, JVP
and batching rule.

They act on the last two dimensions and are batched over the leading ones; the kernels are LAPACK's on the
CPU and cuSOLVER's on the GPU (see `linalg_kernels`). Derivatives are JAX's rules written over numax.lax
and assume nonsingular triangular factors. `solve` and `solve_adjoint` (linear solves through LU) serve the
derivative rules here and in `linalg_eigen`.
"""

import numpy as np

from ..core import dtypes
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules, jvp_rules
from ..core.staging import trace_to_closed_program
from ..core.trace import get_aval_of
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type
from . import ad
from . import typing as T
from .conversions import convert_element_type
from .elementwise import add, conj, div, eq, ge, mul, select, sub
from .linalg_kernels import custom_call, info_aval, inline, lapack_char, lapack_target, nan_unless
from .linalg_matrices import (
    adjoint,
    batch_leading,
    check_matrix,
    constant_matrix,
    eye,
    hermitian_from_lower,
    identity_columns,
    is_complex,
    matmul,
    slice_last_two,
    symmetrize,
    tril,
    triu,
)
from .linalg_triangular import triangular_solve
from .reductions import reduce_sum
from .shapes import broadcast_in_dim, broadcasted_iota, concatenate, full, full_like, pad
from .slicing import slice as slice_

# --- cholesky ---------------------------------------------------------------------------------------------
cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x):
    check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def _lower_cholesky(ctx, x):
    aval = ctx.avals_in[0]
    if aval.size == 0:
        return x
    batch = aval.shape[:-2]
    if ctx.module.platform == "gpu":
        target, config = "cusolver_potrf_ffi", {"lower": "true"}
    else:
        target, config = lapack_target("potrf", aval.dtype), {"uplo": lapack_char("L")}
    factor, info = custom_call(ctx, target, [x], [aval], [aval, info_aval(batch)], config)
    return inline(ctx, lambda f, i: [tril(nan_unless(eq(i, np.int32(0)), f))], [factor, info],
                  [aval, info_aval(batch)])[0]


cholesky_p.def_abstract_eval(_cholesky_abstract_eval)
register_lowering(cholesky_p, _lower_cholesky)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L of each Hermitian positive-definite matrix (x = L @ L^H).

    Only the lower triangle is read unless `symmetrize_input`, which first replaces x by (x + x^H) / 2.
    Matrices that are not positive definite give NaNs.
    """
    if symmetrize_input:
        check_matrix("cholesky", get_aval_of(x), square=True)
        x = symmetrize(x)
    return cholesky_p.bind(x)


# L' = L phi(L^-1 A' L^-H), phi taking the lower triangle with the diagonal halved (Murray, arXiv:1602.07527).
# The primitive reads only the lower triangle, so its tangent is first made the Hermitian matrix that
# triangle stands for: the other triangle gets no gradient (as from jax 0.11.2 on; earlier jax gave it one).
def _cholesky_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    factor = cholesky_p.bind(x)
    x_dot = hermitian_from_lower(x_dot)
    n = get_aval_of(x).shape[-1]
    right = triangular_solve(factor, x_dot, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    middle = triangular_solve(factor, right, left_side=True, lower=True)
    halved = mul(tril(middle), constant_matrix(1 - np.eye(n) / 2, middle))
    return factor, matmul(factor, halved)


jvp_rules[cholesky_p] = _cholesky_jvp


# --- LU pivots to permutation -----------------------------------------------------------------------------
def _swap_step(i, pivots, perm):
    """One step of applying LAPACK's row swaps: perm[..., i] <-> perm[..., pivots[..., i]], batched.

    Written with one-hot masks rather than gathers so that every matrix of the batch swaps its own rows.
    """
    shape = get_aval_of(perm).shape
    last = len(shape) - 1
    batch_dims = tuple(range(last))
    at_step = eq(broadcasted_iota(dtypes.int32, get_aval_of(pivots).shape, last), i)
    pivot = reduce_sum(select(at_step, pivots, full_like(pivots, 0)), (last,))
    positions = broadcasted_iota(dtypes.int32, shape, last)
    at_i = eq(positions, i)
    at_pivot = eq(positions, broadcast_in_dim(pivot, shape, batch_dims))
    zeros = full_like(perm, 0)
    value_i = broadcast_in_dim(reduce_sum(select(at_i, perm, zeros), (last,)), shape, batch_dims)
    value_pivot = broadcast_in_dim(reduce_sum(select(at_pivot, perm, zeros), (last,)), shape, batch_dims)
    return add(i, np.int32(1)), pivots, select(at_i, value_pivot, select(at_pivot, value_i, perm))


def _emit_pivots_to_permutation(ctx, pivots, pivots_aval, size):
    """A `stablehlo.while` over the pivots, swapping entries of an identity permutation of `size`."""
    builder = ctx.builder
    batch, k = pivots_aval.shape[:-1], pivots_aval.shape[-1]
    perm_aval = ShapedArray(batch + (size,), dtypes.int32)
    identity = inline(ctx, lambda: [broadcasted_iota(dtypes.int32, perm_aval.shape, len(batch))], [], [])[0]
    if k == 0 or size == 0:
        return identity
    avals = [ShapedArray((), dtypes.int32), pivots_aval, perm_aval]
    types = [aval_type(a) for a in avals]
    step = trace_to_closed_program(lambda *args: list(_swap_step(*args)), avals)

    def condition(inner, args):
        limit = inner.scalar(k, np.int32)
        return [inner.op1("stablehlo.compare", [args[0], limit], "tensor<i1>", {
            "comparison_direction": "#stablehlo<comparison_direction LT>",
            "compare_type": "#stablehlo<comparison_type SIGNED>"})]

    def body(inner, args):
        return lower_program_body(ctx.module, inner, step.program, step.consts, args)

    start = builder.scalar(0, np.int32)
    results = builder.op("stablehlo.while", [start, pivots, identity], types, None,
                         [builder.region(types, condition), builder.region(types, body)])
    return results[2]


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _lu_pivots_to_permutation_abstract_eval(pivots, permutation_size):
    if pivots.dtype != dtypes.int32 or pivots.ndim < 1:
        raise TypeError(f"lu_pivots_to_permutation requires int32 pivots of rank >= 1, got {T.describe((pivots,))}")
    if pivots.shape[-1] > permutation_size:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size {permutation_size} is smaller than the "
                         f"number of pivots {pivots.shape[-1]}")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), dtypes.int32)


lu_pivots_to_permutation_p.def_abstract_eval(_lu_pivots_to_permutation_abstract_eval)
register_lowering(lu_pivots_to_permutation_p, lambda ctx, pivots, permutation_size: _emit_pivots_to_permutation(
    ctx, pivots, ctx.avals_in[0], permutation_size))
ad.defjvp_zero(lu_pivots_to_permutation_p)  # integers in and out: nothing to differentiate


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The row permutation that LAPACK-style 0-based `pivots` (row i swapped with pivots[i]) describe."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


# --- permuting rows (applying an LU permutation to a right-hand side) -------------------------------------
permute_rows_p = Primitive("permute_rows")


def _permute_rows_abstract_eval(x, permutation):
    if x.ndim < 2 or permutation.dtype != dtypes.int32 or permutation.shape != x.shape[:-1]:
        raise TypeError(f"permute_rows requires x of shape batch + (m, n) and int32 permutation of shape "
                        f"batch + (m,), got {T.describe((x, permutation))}")
    return ShapedArray(x.shape, x.dtype)


def _lower_permute_rows(ctx, x, permutation):
    """out[..., i, :] = x[..., permutation[..., i], :]: a gather, exact on every platform (a one-hot
    matmul could run at reduced precision on GPUs)."""
    aval = ctx.aval_out
    if aval.size == 0:
        return x
    rank = aval.ndim
    batch = list(range(rank - 2))
    index_shape = aval.shape[:-1] + (1,)
    indices = ctx.builder.op1("stablehlo.reshape", [permutation], aval_type(ShapedArray(index_shape, dtypes.int32)))
    numbers = (f"#stablehlo.gather<offset_dims = [{rank - 1}], collapsed_slice_dims = [{rank - 2}], "
               f"operand_batching_dims = {batch}, start_indices_batching_dims = {batch}, "
               f"start_index_map = [{rank - 2}], index_vector_dim = {rank - 1}>")
    sizes = ", ".join(["1"] * (rank - 1) + [str(aval.shape[-1])])
    return ctx.builder.op1("stablehlo.gather", [x, indices], aval_type(aval), {
        "dimension_numbers": numbers, "slice_sizes": f"array<i64: {sizes}>", "indices_are_sorted": "false"})


permute_rows_p.def_abstract_eval(_permute_rows_abstract_eval)
register_lowering(permute_rows_p, _lower_permute_rows)


def permute_rows(x, permutation):
    """The rows of each matrix of `x` in the order `permutation` gives (for LU solves)."""
    return permute_rows_p.bind(x, permutation)


def _inverse_permutation(permutation):
    """inverse[..., permutation[..., i]] = i, from one-hot comparisons (exact, batched)."""
    shape = get_aval_of(permutation).shape
    rank = len(shape)
    square = shape + (shape[-1],)
    targets = broadcast_in_dim(permutation, square, tuple(range(rank)))
    hits = eq(targets, broadcasted_iota(dtypes.int32, square, rank))  # hits[..., i, j]: permutation[i] == j
    sources = broadcasted_iota(dtypes.int32, square, rank - 1)
    return reduce_sum(mul(sources, convert_element_type(hits, dtypes.int32)), (rank - 1,))


# permute_rows is linear in x; its transpose sends each row back where it came from.
def _permute_rows_transpose(ct, x, permutation):
    if is_undefined(permutation):
        raise TypeError("permute_rows is not linear in its permutation")
    if type(ct) is Zero:
        return [Zero(tangent_aval(x.aval)), None]
    return [permute_rows(ct, _inverse_permutation(permutation)), None]


ad.deflinear_in(permute_rows_p, (0,), _permute_rows_transpose)


# --- lu -------------------------------------------------------------------------------------------------------
lu_p = Primitive("lu", multiple_results=True)


def _lu_abstract_eval(x):
    batch, m, n = check_matrix("lu", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


def _lower_lu(ctx, x):
    aval = ctx.avals_in[0]
    lu_aval, pivots_aval, _ = ctx.avals_out
    batch, m = aval.shape[:-2], aval.shape[-2]
    if aval.size == 0:
        lu, pivots = x, inline(ctx, lambda: [full(pivots_aval.shape, np.int32(0))], [], [])[0]
    else:
        target = "cusolver_getrf_ffi" if ctx.module.platform == "gpu" else lapack_target("getrf", aval.dtype)
        status_aval = info_aval(batch)
        lu, ipiv, info = custom_call(ctx, target, [x], [aval], [lu_aval, pivots_aval, status_aval], {})
        # info > 0 flags an exactly singular U, which is still a valid factorization (as in JAX).
        lu, pivots = inline(ctx, lambda f, p, i: [nan_unless(ge(i, np.int32(0)), f), sub(p, np.int32(1))],
                            [lu, ipiv, info], [lu_aval, pivots_aval, status_aval])
    return [lu, pivots, _emit_pivots_to_permutation(ctx, pivots, pivots_aval, m)]


lu_p.def_abstract_eval(_lu_abstract_eval)
register_lowering(lu_p, _lower_lu)


def lu(x):
    """LU decomposition with partial pivoting: returns (lu, pivots, permutation).

    `lu` holds L (unit diagonal, below) and U (on and above the diagonal); `pivots[i]` is the row swapped
    with row i; `permutation` is the resulting row order, so that x[..., permutation, :] == L @ U.
    """
    return tuple(lu_p.bind(x))


# With P A = L U, L' = L tril(L^-1 P A' U^-1, -1) and U' = triu(L^-1 P A' U^-1) U (de Hoog, Anderssen and
# Lukas); L and U are completed to square matrices for wide and tall inputs.
def _lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    lu_matrix, pivots, permutation = lu_p.bind(a)
    aval = get_aval_of(a)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    k = min(m, n)
    zero = np.zeros((), aval.dtype)
    no_pad = [(0, 0, 0)] * (rank - 2)
    lower = pad(tril(slice_last_two(lu_matrix, (0, m), (0, k)), -1), zero, no_pad + [(0, 0, 0), (0, m - k, 0)])
    lower = add(lower, eye(m, a))
    upper = pad(triu(slice_last_two(lu_matrix, (0, k), (0, n))), zero, no_pad + [(0, n - k, 0), (0, 0, 0)])
    upper = add(upper, eye(n, a, start=k))
    solved = triangular_solve(lower, permute_rows(a_dot, permutation), left_side=True, lower=True,
                              unit_diagonal=True)
    solved = triangular_solve(upper, solved, left_side=False, lower=False)
    lu_dot = add(matmul(lower, tril(solved, -1)), matmul(triu(solved), upper))
    return ([lu_matrix, pivots, permutation],
            [lu_dot, Zero(tangent_aval(get_aval_of(pivots))), Zero(tangent_aval(get_aval_of(permutation)))])


jvp_rules[lu_p] = _lu_jvp


def solve(a, b):
    """x with a x = b, through the LU factorization of a (a primal; linear in b)."""
    lu_matrix, _, permutation = lu_p.bind(a)
    y = triangular_solve(lu_matrix, permute_rows(b, permutation), left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_matrix, y, left_side=True, lower=False)


def solve_adjoint(a, b):
    """x with a^H x = b, through the LU factorization of a (a primal; linear in b)."""
    lu_matrix, _, permutation = lu_p.bind(a)
    y = triangular_solve(lu_matrix, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    y = triangular_solve(lu_matrix, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True,
                         unit_diagonal=True)
    return permute_rows(y, _inverse_permutation(permutation))


# --- QR: geqrf, householder_product, qr -------------------------------------------------------------------
geqrf_p = Primitive("geqrf", multiple_results=True)


def _geqrf_abstract_eval(x):
    batch, m, n = check_matrix("geqrf", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), x.dtype)]


def _emit_geqrf(ctx, x, aval):
    batch, m, n = aval.shape[:-2], *aval.shape[-2:]
    taus_aval = ShapedArray(batch + (min(m, n),), aval.dtype)
    if aval.size == 0:
        return x, inline(ctx, lambda: [full(taus_aval.shape, 0, aval.dtype)], [], [])[0]
    target = "cusolver_geqrf_ffi" if ctx.module.platform == "gpu" else lapack_target("geqrf", aval.dtype)
    return tuple(custom_call(ctx, target, [x], [aval], [aval, taus_aval], {}))


geqrf_p.def_abstract_eval(_geqrf_abstract_eval)
register_lowering(geqrf_p, lambda ctx, x: list(_emit_geqrf(ctx, x, ctx.avals_in[0])))


def geqrf(x):
    """LAPACK's geqrf: (R above the diagonal with Householder vectors below it, the reflectors' taus)."""
    return tuple(geqrf_p.bind(x))


householder_product_p = Primitive("householder_product")


def _householder_product_abstract_eval(a, taus):
    batch, m, n = check_matrix("householder_product", a)
    if taus.dtype != a.dtype or taus.shape[:-1] != batch or taus.ndim != a.ndim - 1:
        raise TypeError(f"householder_product requires taus of shape batch + (k,) and a's dtype, got "
                        f"{T.describe((a, taus))}")
    if m < n or taus.shape[-1] > n:
        raise ValueError(f"householder_product requires m >= n >= k, got a of shape {a.shape} and "
                         f"{taus.shape[-1]} taus")
    return ShapedArray(a.shape, a.dtype)


def _emit_householder_product(ctx, a, taus, aval, taus_aval):
    if aval.size == 0:
        return a
    if taus_aval.shape[-1] == 0:  # no reflectors: the first columns of the identity
        return inline(ctx, lambda: [identity_columns(aval.shape, aval.dtype)], [], [])[0]
    if ctx.module.platform == "gpu":
        target = "cusolver_orgqr_ffi"
    else:
        target = lapack_target("ungqr" if dtypes.is_complex(aval.dtype) else "orgqr", aval.dtype)
    return custom_call(ctx, target, [a, taus], [aval, taus_aval], [aval], {})[0]


householder_product_p.def_abstract_eval(_householder_product_abstract_eval)
register_lowering(householder_product_p, lambda ctx, a, taus: _emit_householder_product(
    ctx, a, taus, *ctx.avals_in))


def householder_product(a, taus):
    """The product of the Householder reflectors geqrf stores in `a` and `taus` (LAPACK's orgqr/ungqr)."""
    return householder_product_p.bind(a, taus)


qr_p = Primitive("qr", multiple_results=True)


def _qr_abstract_eval(x, full_matrices):
    batch, m, n = check_matrix("qr", x)
    k = m if full_matrices else min(m, n)
    return [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]


def _lower_qr(ctx, x, full_matrices):
    aval = ctx.avals_in[0]
    batch, m, n = aval.shape[:-2], *aval.shape[-2:]
    rank = aval.ndim
    factors, taus = _emit_geqrf(ctx, x, aval)
    taus_aval = ShapedArray(batch + (min(m, n),), aval.dtype)
    # orgqr needs m >= n columns of reflectors: crop a wide matrix, pad a tall one to square for full Q.
    if m < n:
        q_in = inline(ctx, lambda f: [slice_(f, (0,) * rank, batch + (m, m))], [factors], [aval])[0]
    elif full_matrices and m > n:
        q_in = inline(ctx, lambda f: [pad(f, np.zeros((), aval.dtype), [(0, 0, 0)] * (rank - 1) + [(0, m - n, 0)])],
                      [factors], [aval])[0]
    else:
        q_in = factors
    q_aval = ctx.avals_out[0]
    q = _emit_householder_product(ctx, q_in, taus, ShapedArray(batch + (m, q_aval.shape[-1]), aval.dtype), taus_aval)
    r_shape = ctx.avals_out[1].shape
    r = inline(ctx, lambda f: [triu(slice_(f, (0,) * rank, r_shape))], [factors], [aval])[0]
    return [q, r]


qr_p.def_abstract_eval(_qr_abstract_eval)
register_lowering(qr_p, _lower_qr)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: (q, r) with q unitary (m x m, or m x k when not `full_matrices`) and r upper
    triangular, so that x == q @ r."""
    if pivoting:
        raise NotImplementedError("qr(pivoting=True) is not supported by numax yet")
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# JAX's rule (J. Townsend's derivation for m >= n; wide matrices split into a square block and the rest;
# complete Q of a tall matrix per arXiv:2409.13374).
def _thin_qr_jvp(q, r, x_dot):
    x_dot_r_inv = triangular_solve(r, x_dot)  # x' r^-1 (a right-side solve with upper r)
    qh_x_dot_r_inv = matmul(adjoint(q), x_dot_r_inv)
    below = tril(qh_x_dot_r_inv, -1)
    omega = sub(below, adjoint(below))  # skew-Hermitian
    if is_complex(q):  # the imaginary part of the diagonal, which a skew-Hermitian matrix also has
        n = get_aval_of(r).shape[-1]
        imaginary = div(sub(qh_x_dot_r_inv, conj(qh_x_dot_r_inv)), np.asarray(2, get_aval_of(q).dtype))
        omega = add(omega, mul(eye(n, omega), imaginary))
    q_dot = add(matmul(q, sub(omega, qh_x_dot_r_inv)), x_dot_r_inv)
    r_dot = matmul(sub(qh_x_dot_r_inv, omega), r)
    return q_dot, r_dot


def _qr_jvp(primals, tangents, full_matrices):
    (x,), (x_dot,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    aval = get_aval_of(x)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    if m < n:  # X = [X1 X2] = Q [R1 R2]: the square block's rule, then R2' = Q'^H X2 + Q^H X2'
        q_dot, r1_dot = _thin_qr_jvp(q, slice_last_two(r, (0, m), (0, m)), slice_last_two(x_dot, (0, m), (0, m)))
        r2_dot = add(matmul(adjoint(q_dot), slice_last_two(x, (0, m), (m, n))),
                     matmul(adjoint(q), slice_last_two(x_dot, (0, m), (m, n))))
        return [q, r], [q_dot, concatenate([r1_dot, r2_dot], rank - 1)]
    q_thin = slice_last_two(q, (0, m), (0, n)) if full_matrices else q
    r_square = slice_last_two(r, (0, n), (0, n)) if full_matrices else r
    q_thin_dot, r_square_dot = _thin_qr_jvp(q_thin, r_square, x_dot)
    if not full_matrices or m == n:
        return [q, r], [q_thin_dot, r_square_dot]
    # The complete Q's last m - n columns: with Z = Q_pn (Q_nn - I)^-1 (Q_nn: Q's top n x n block, Q_pn
    # the rows below it), Q_mp' = Q_mn' Z^H - (Q_mn + Q_mp Z) (Q_pn' - Z Q_nn')^H.
    q_top = slice_last_two(q_thin, (0, n), (0, n))
    q_bottom = slice_last_two(q_thin, (n, m), (0, n))
    q_rest = slice_last_two(q, (0, m), (n, m))
    z_adjoint = solve_adjoint(sub(q_top, eye(n, q_top)), adjoint(q_bottom))
    z = adjoint(z_adjoint)
    q_top_dot = slice_last_two(q_thin_dot, (0, n), (0, n))
    q_bottom_dot = slice_last_two(q_thin_dot, (n, m), (0, n))
    q_rest_dot = sub(matmul(q_thin_dot, z_adjoint),
                     matmul(add(q_thin, matmul(q_rest, z)), adjoint(sub(q_bottom_dot, matmul(z, q_top_dot)))))
    r_dot = pad(r_square_dot, np.zeros((), aval.dtype), [(0, 0, 0)] * (rank - 2) + [(0, m - n, 0), (0, 0, 0)])
    return [q, r], [concatenate([q_thin_dot, q_rest_dot], rank - 1), r_dot]


jvp_rules[qr_p] = _qr_jvp


def _no_derivative(name):
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"differentiation rule for '{name}' not implemented (JAX has none either): "
                                  "differentiate numax.lax.linalg.qr (or numax.numpy.linalg.qr) instead")

    return rule


jvp_rules[geqrf_p] = _no_derivative("geqrf")
jvp_rules[householder_product_p] = _no_derivative("householder_product")

for _primitive in (cholesky_p, lu_pivots_to_permutation_p, permute_rows_p, lu_p, geqrf_p, householder_product_p,
                   qr_p):
    batching_rules[_primitive] = batch_leading(_primitive)
