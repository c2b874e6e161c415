"""Linear algebra primitives: cholesky, triangular_solve, lu, geqrf, householder_product, qr, eigh, eig, svd.

Each factorization acts on the last two dimensions and is batched over the leading ones. On the CPU
it lowers to the LAPACK FFI kernels jaxlib ships (`lapack_<s|d|c|z><routine>_ffi`), on the GPU to
cuSOLVER's (`cusolver_<routine>_ffi`); triangular_solve uses LAPACK's trsm on the CPU (as JAX does) and
StableHLO's own op on the GPU. eig (general matrices) is CPU-only. As in JAX, a failure that a kernel
reports through its `info` output turns that matrix's results into NaNs.
The kernels read column-major matrices; the custom calls say so with their operand and result layouts,
and XLA inserts the transposes. The post-processing around a kernel (masking a triangle, NaNs on
failure, the permutation from LU pivots) is written with lax ops and inlined into the rule.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive
from ..core.staging import trace_to_closed_program
from ..core.trace import get_aval_of
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type
from . import typing as T
from .elementwise import add, conj, div, eq, ge, select, sub
from .elementwise import complex as make_complex
from .reductions import reduce_sum
from .shapes import broadcast_in_dim, broadcasted_iota, full, full_like, pad, transpose
from .slicing import slice as slice_

# jax.lax.linalg's public functions (geqrf, symmetrize and permute_rows stay module-level helpers).
__all__ = ["cholesky", "eig", "eigh", "householder_product", "lu", "lu_pivots_to_permutation", "qr", "svd",
           "triangular_solve"]

_LAPACK_PREFIX = {dtypes.float32: "s", dtypes.float64: "d", dtypes.complex64: "c", dtypes.complex128: "z"}
_LINALG_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


# --- shared checks and helpers ----------------------------------------------------------------------------
def _check_matrix(name, x, square=False):
    """Validates a batch of matrices of a LAPACK dtype; returns (batch shape, rows, columns)."""
    if x.dtype not in _LINALG_DTYPES:
        raise TypeError(f"{name} does not accept dtype {x.dtype.name}; accepted: float32, float64, complex64, "
                        "complex128 (convert integer inputs to a floating dtype first)")
    if x.ndim < 2:
        raise ValueError(f"{name} requires an array of rank >= 2 (a batch of matrices), got shape {x.shape}")
    m, n = x.shape[-2:]
    if square and m != n:
        raise ValueError(f"{name} requires square matrices (shape [..., n, n]), got shape {x.shape}")
    return x.shape[:-2], m, n


def _real_dtype(dtype):
    return T.complex_to_real(dtype)


def _matrix_layout(rank):
    """Minor-to-major order of a column-major batch of matrices: rows fastest, then columns, then batch."""
    return (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))


def _row_major(rank):
    return tuple(range(rank - 1, -1, -1))


def _layout_text(layout):
    if not layout:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, layout))}]> : tensor<{len(layout)}xindex>"


def _alias_text(output_index, operand_index):
    """Operand `operand_index`'s buffer is reused for output `output_index` (None: the single result)."""
    indices = "[]" if output_index is None else f"[{output_index}]"
    return (f"[#stablehlo.output_operand_alias<output_tuple_indices = {indices}, operand_index = {operand_index}, "
            "operand_tuple_indices = []>]")


def _custom_call(ctx, target, operands, operand_avals, result_avals, config, alias_operand=0):
    """Emits an FFI custom call to a solver kernel; matrices (rank >= batch + 2) are column-major.

    `config` maps attribute names to typed attribute text (`"76 : ui8"`, `"true"`); the first result
    reuses the buffer of operand `alias_operand` (None: no buffer is shared).
    """
    batch_rank = operand_avals[0].ndim - 2

    def layout(aval):
        return _matrix_layout(aval.ndim) if aval.ndim >= batch_rank + 2 else _row_major(aval.ndim)

    attributes = {
        "call_target_name": f'"{target}"',
        "api_version": "4 : i32",
        "backend_config": "{" + ", ".join(f"{k} = {v}" for k, v in config.items()) + "}",
        "operand_layouts": "[" + ", ".join(_layout_text(layout(a)) for a in operand_avals) + "]",
        "result_layouts": "[" + ", ".join(_layout_text(layout(a)) for a in result_avals) + "]",
        "mhlo.frontend_attributes": f'{{num_batch_dims = "{batch_rank}"}}',
    }
    if alias_operand is not None:
        attributes["output_operand_aliases"] = _alias_text(0 if len(result_avals) > 1 else None, alias_operand)
    return ctx.builder.op("stablehlo.custom_call", list(operands), [aval_type(a) for a in result_avals], attributes)


def _lapack_target(routine, dtype):
    return f"lapack_{_LAPACK_PREFIX[dtype]}{routine}_ffi"


def _char(letter):
    """LAPACK's character arguments travel as ui8 attributes."""
    return f"{ord(letter)} : ui8"


def _inline(ctx, fn, values, avals):
    """Emits `fn` (written with lax ops) applied to the SSA `values` of `avals`; returns its SSA outputs."""
    closed = trace_to_closed_program(lambda *args: list(fn(*args)), list(avals))
    return ctx.lower_program(closed, list(values))


def _info_aval(batch):
    return ShapedArray(batch, dtypes.int32)


def _nan_unless(ok, x):
    """`x` where the per-matrix flag `ok` (shape batch) holds, NaN (NaN + NaN j for complex) elsewhere."""
    aval = get_aval_of(x)
    ok = broadcast_in_dim(ok, aval.shape, tuple(range(len(get_aval_of(ok).shape))))
    nan = np.asarray(complex(np.nan, np.nan) if dtypes.is_complex(aval.dtype) else np.nan, aval.dtype)
    return select(ok, x, full_like(x, nan))


def _triangle_mask(shape, k, lower):
    # A host constant: the mask depends on shapes only.
    m, n = shape[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


def tril(x, k=0):
    """The lower triangle of each matrix (on and below diagonal `k`), zeros above."""
    shape = get_aval_of(x).shape
    return select(_triangle_mask(shape, k, True), x, full_like(x, 0))


def triu(x, k=0):
    """The upper triangle of each matrix (on and above diagonal `k`), zeros below."""
    shape = get_aval_of(x).shape
    return select(_triangle_mask(shape, k, False), x, full_like(x, 0))


def _adjoint(x):
    rank = get_aval_of(x).ndim
    x = transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))
    return conj(x) if dtypes.is_complex(get_aval_of(x).dtype) else x


def _hermitian_from_lower(x):
    """The Hermitian matrices whose lower triangles are x's (a diagonal's imaginary part dropped)."""
    strict = tril(x, -1)
    diagonal = sub(tril(x), strict)
    if dtypes.is_complex(get_aval_of(x).dtype):
        diagonal = div(add(diagonal, conj(diagonal)), np.asarray(2, get_aval_of(x).dtype))
    return add(add(strict, _adjoint(strict)), diagonal)


def symmetrize(x):
    """(x + x^H) / 2: the Hermitian part, which the symmetric solvers assume they are given."""
    dtype = get_aval_of(x).dtype
    return div(add(x, _adjoint(x)), np.asarray(2, dtype))


# --- cholesky ---------------------------------------------------------------------------------------------
cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x):
    _check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def _lower_cholesky(ctx, x):
    aval = ctx.avals_in[0]
    if aval.size == 0:
        return x
    batch = aval.shape[:-2]
    if ctx.module.platform == "gpu":
        target, config = "cusolver_potrf_ffi", {"lower": "true"}
    else:
        target, config = _lapack_target("potrf", aval.dtype), {"uplo": _char("L")}
    factor, info = _custom_call(ctx, target, [x], [aval], [aval, _info_aval(batch)], config)
    return _inline(ctx, lambda f, i: [tril(_nan_unless(eq(i, np.int32(0)), f))], [factor, info],
                   [aval, _info_aval(batch)])[0]


cholesky_p.def_abstract_eval(_cholesky_abstract_eval)
register_lowering(cholesky_p, _lower_cholesky)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L of each Hermitian positive-definite matrix (x = L @ L^H).

    Only the lower triangle is read unless `symmetrize_input`, which first replaces x by (x + x^H) / 2.
    Matrices that are not positive definite give NaNs.
    """
    if symmetrize_input:
        _check_matrix("cholesky", get_aval_of(x), square=True)
        x = symmetrize(x)
    return cholesky_p.bind(x)


# --- triangular_solve -----------------------------------------------------------------------------------
triangular_solve_p = Primitive("triangular_solve")


def _triangular_solve_abstract_eval(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    batch, m, _ = _check_matrix("triangular_solve", a, square=True)
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
    is_complex = dtypes.is_complex(a_aval.dtype)
    if conjugate_a and not transpose_a and is_complex:  # neither LAPACK nor StableHLO has 'conjugate only'
        a = _inline(ctx, lambda x: [conj(x)], [a], [a_aval])[0]
    adjoint = transpose_a and conjugate_a and is_complex
    if ctx.module.platform == "cpu":
        # LAPACK's trsm, as JAX uses on the CPU: singular matrices then give JAX's exact inf/NaN pattern.
        config = {"side": _char("L" if left_side else "R"), "uplo": _char("L" if lower else "U"),
                  "trans_x": _char("C" if adjoint else "T" if transpose_a else "N"),
                  "diag": _char("U" if unit_diagonal else "N")}
        return _custom_call(ctx, _lapack_target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval], [ctx.aval_out], config,
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
    identity = _inline(ctx, lambda: [broadcasted_iota(dtypes.int32, perm_aval.shape, len(batch))], [], [])[0]
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


# --- lu -------------------------------------------------------------------------------------------------------
lu_p = Primitive("lu", multiple_results=True)


def _lu_abstract_eval(x):
    batch, m, n = _check_matrix("lu", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


def _lower_lu(ctx, x):
    aval = ctx.avals_in[0]
    lu_aval, pivots_aval, _ = ctx.avals_out
    batch, m = aval.shape[:-2], aval.shape[-2]
    if aval.size == 0:
        lu, pivots = x, _inline(ctx, lambda: [full(pivots_aval.shape, np.int32(0))], [], [])[0]
    else:
        target = "cusolver_getrf_ffi" if ctx.module.platform == "gpu" else _lapack_target("getrf", aval.dtype)
        info_aval = _info_aval(batch)
        lu, ipiv, info = _custom_call(ctx, target, [x], [aval], [lu_aval, pivots_aval, info_aval], {})
        # info > 0 flags an exactly singular U, which is still a valid factorization (as in JAX).
        lu, pivots = _inline(ctx, lambda f, p, i: [_nan_unless(ge(i, np.int32(0)), f), sub(p, np.int32(1))],
                             [lu, ipiv, info], [lu_aval, pivots_aval, info_aval])
    return [lu, pivots, _emit_pivots_to_permutation(ctx, pivots, pivots_aval, m)]


lu_p.def_abstract_eval(_lu_abstract_eval)
register_lowering(lu_p, _lower_lu)


def lu(x):
    """LU decomposition with partial pivoting: returns (lu, pivots, permutation).

    `lu` holds L (unit diagonal, below) and U (on and above the diagonal); `pivots[i]` is the row swapped
    with row i; `permutation` is the resulting row order, so that x[..., permutation, :] == L @ U.
    """
    return tuple(lu_p.bind(x))


# --- QR: geqrf, householder_product, qr -------------------------------------------------------------------
geqrf_p = Primitive("geqrf", multiple_results=True)


def _geqrf_abstract_eval(x):
    batch, m, n = _check_matrix("geqrf", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), x.dtype)]


def _emit_geqrf(ctx, x, aval):
    batch, m, n = aval.shape[:-2], *aval.shape[-2:]
    taus_aval = ShapedArray(batch + (min(m, n),), aval.dtype)
    if aval.size == 0:
        return x, _inline(ctx, lambda: [full(taus_aval.shape, 0, aval.dtype)], [], [])[0]
    target = "cusolver_geqrf_ffi" if ctx.module.platform == "gpu" else _lapack_target("geqrf", aval.dtype)
    return tuple(_custom_call(ctx, target, [x], [aval], [aval, taus_aval], {}))


geqrf_p.def_abstract_eval(_geqrf_abstract_eval)
register_lowering(geqrf_p, lambda ctx, x: list(_emit_geqrf(ctx, x, ctx.avals_in[0])))


def geqrf(x):
    """LAPACK's geqrf: (R above the diagonal with Householder vectors below it, the reflectors' taus)."""
    return tuple(geqrf_p.bind(x))


householder_product_p = Primitive("householder_product")


def _householder_product_abstract_eval(a, taus):
    batch, m, n = _check_matrix("householder_product", a)
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
        return _inline(ctx, lambda: [identity_columns(aval.shape, aval.dtype)], [], [])[0]
    if ctx.module.platform == "gpu":
        target = "cusolver_orgqr_ffi"
    else:
        target = _lapack_target("ungqr" if dtypes.is_complex(aval.dtype) else "orgqr", aval.dtype)
    return _custom_call(ctx, target, [a, taus], [aval, taus_aval], [aval], {})[0]


def identity_columns(shape, dtype):
    """Ones on the main diagonal of each (possibly rectangular) matrix of `shape`, zeros elsewhere."""
    rank = len(shape)
    ones = eq(broadcasted_iota(dtypes.int32, shape, rank - 2), broadcasted_iota(dtypes.int32, shape, rank - 1))
    return select(ones, full(shape, 1, dtype), full(shape, 0, dtype))


householder_product_p.def_abstract_eval(_householder_product_abstract_eval)
register_lowering(householder_product_p, lambda ctx, a, taus: _emit_householder_product(
    ctx, a, taus, *ctx.avals_in))


def householder_product(a, taus):
    """The product of the Householder reflectors geqrf stores in `a` and `taus` (LAPACK's orgqr/ungqr)."""
    return householder_product_p.bind(a, taus)


qr_p = Primitive("qr", multiple_results=True)


def _qr_abstract_eval(x, full_matrices):
    batch, m, n = _check_matrix("qr", x)
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
        q_in = _inline(ctx, lambda f: [slice_(f, (0,) * rank, batch + (m, m))], [factors], [aval])[0]
    elif full_matrices and m > n:
        q_in = _inline(ctx, lambda f: [pad(f, np.zeros((), aval.dtype), [(0, 0, 0)] * (rank - 1) + [(0, m - n, 0)])],
                       [factors], [aval])[0]
    else:
        q_in = factors
    q_aval = ctx.avals_out[0]
    q = _emit_householder_product(ctx, q_in, taus, ShapedArray(batch + (m, q_aval.shape[-1]), aval.dtype), taus_aval)
    r_shape = ctx.avals_out[1].shape
    r = _inline(ctx, lambda f: [triu(slice_(f, (0,) * rank, r_shape))], [factors], [aval])[0]
    return [q, r]


qr_p.def_abstract_eval(_qr_abstract_eval)
register_lowering(qr_p, _lower_qr)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: (q, r) with q unitary (m x m, or m x k when not `full_matrices`) and r upper
    triangular, so that x == q @ r."""
    if pivoting:
        raise NotImplementedError("qr(pivoting=True) is not supported by numax yet")
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# --- eigh -----------------------------------------------------------------------------------------------------
eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_abstract_eval(x, lower, sort_eigenvalues):
    batch, _, n = _check_matrix("eigh", x, square=True)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (n,), _real_dtype(x.dtype))]


def _lower_eigh(ctx, x, lower, sort_eigenvalues):
    aval = ctx.avals_in[0]
    v_aval, w_aval = ctx.avals_out
    if aval.size == 0:
        return [x, _inline(ctx, lambda: [full(w_aval.shape, 0, w_aval.dtype)], [], [])[0]]
    info_aval = _info_aval(aval.shape[:-2])
    if ctx.module.platform == "gpu":
        target, config = "cusolver_syevd_ffi", {"algorithm": "0 : ui8", "lower": "true" if lower else "false"}
    else:
        routine = "heevd" if dtypes.is_complex(aval.dtype) else "syevd"
        target, config = _lapack_target(routine, aval.dtype), {"mode": _char("V"), "uplo": _char("L" if lower else "U")}
    v, w, info = _custom_call(ctx, target, [x], [aval], [v_aval, w_aval, info_aval], config)
    # LAPACK and cuSOLVER both return eigenvalues in ascending order, so sorting needs no work.
    return _inline(ctx, lambda v, w, i: [_nan_unless(eq(i, np.int32(0)), v), _nan_unless(eq(i, np.int32(0)), w)],
                   [v, w, info], [v_aval, w_aval, info_aval])


eigh_p.def_abstract_eval(_eigh_abstract_eval)
register_lowering(eigh_p, _lower_eigh)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None):
    """Eigendecomposition of Hermitian matrices: (v, w), eigenvectors as columns of v, w ascending.

    Only the `lower` (or upper) triangle is read unless `symmetrize_input` (the default) first replaces x
    by (x + x^H) / 2.
    """
    if subset_by_index is not None:
        raise NotImplementedError("eigh(subset_by_index=...) is not supported by numax yet")
    if symmetrize_input:
        _check_matrix("eigh", get_aval_of(x), square=True)
        x = symmetrize(x)
    return tuple(eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues)))


# --- eig (general matrices) ------------------------------------------------------------------------------
eig_p = Primitive("eig", multiple_results=True)


def _complex_dtype(dtype):
    return dtypes.complex128 if dtype in (dtypes.float64, dtypes.complex128) else dtypes.complex64


def _eig_abstract_eval(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    batch, _, n = _check_matrix("eig", x, square=True)
    complex_dtype = _complex_dtype(x.dtype)
    vectors = ShapedArray(x.shape, complex_dtype)
    return ([ShapedArray(batch + (n,), complex_dtype)] + [vectors] * compute_left_eigenvectors
            + [vectors] * compute_right_eigenvectors)


def _lower_eig(ctx, x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    aval = ctx.avals_in[0]
    if ctx.module.platform != "cpu":
        raise NotImplementedError("eig (nonsymmetric eigendecomposition) is only implemented on the CPU; "
                                  "use eigh for Hermitian matrices, or place the input on the CPU")
    batch, n = aval.shape[:-2], aval.shape[-1]
    complex_dtype = _complex_dtype(aval.dtype)
    w_aval, v_aval = ShapedArray(batch + (n,), complex_dtype), ShapedArray(aval.shape, complex_dtype)
    info_aval = _info_aval(batch)
    if aval.size == 0:
        empty = lambda: [full(w_aval.shape, 0, complex_dtype)] + [full(v_aval.shape, 0, complex_dtype)] * 2
        w, left, right = _inline(ctx, empty, [], [])
    else:
        config = {"compute_left": _char("V" if compute_left_eigenvectors else "N"),
                  "compute_right": _char("V" if compute_right_eigenvectors else "N")}
        target = _lapack_target("geev", aval.dtype)
        if dtypes.is_complex(aval.dtype):
            outs = _custom_call(ctx, target, [x], [aval], [w_aval, v_aval, v_aval, info_aval], config, None)
            parts_avals = [w_aval]
        else:  # real kernels return the eigenvalues' real and imaginary parts apart
            real_w = ShapedArray(w_aval.shape, aval.dtype)
            outs = _custom_call(ctx, target, [x], [aval], [real_w, real_w, v_aval, v_aval, info_aval], config, None)
            parts_avals = [real_w, real_w]

        def finish(*values):
            *w_parts, left, right, info = values
            ok = eq(info, np.int32(0))
            w = make_complex(*w_parts) if len(w_parts) == 2 else w_parts[0]
            return [_nan_unless(ok, w), _nan_unless(ok, left), _nan_unless(ok, right)]

        w, left, right = _inline(ctx, finish, outs, parts_avals + [v_aval, v_aval, info_aval])
    return [w] + [left] * compute_left_eigenvectors + [right] * compute_right_eigenvectors


eig_p.def_abstract_eval(_eig_abstract_eval)
register_lowering(eig_p, _lower_eig)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of general square matrices (CPU only): [w, vl, vr], complex, in LAPACK's order;
    vl and vr are present when asked for. Right eigenvectors satisfy x @ vr == vr * w.

    The eigenvalues are differentiable. The eigenvectors are only with `enable_eigvec_derivs`, under LAPACK's
    normalization (unit 2-norm, largest-magnitude component real), and only where all eigenvalues are
    distinct and no eigenvector has two components tied for largest magnitude (which numax cannot check).
    """
    return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors),
                      enable_eigvec_derivs=bool(enable_eigvec_derivs))


# --- svd -------------------------------------------------------------------------------------------------------
svd_p = Primitive("svd", multiple_results=True)


def _svd_shapes(batch, m, n, full_matrices):
    k = min(m, n)
    return batch + (m, m if full_matrices else k), batch + (n if full_matrices else k, n)


def _svd_abstract_eval(x, full_matrices, compute_uv):
    batch, m, n = _check_matrix("svd", x)
    s = ShapedArray(batch + (min(m, n),), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u_shape, vt_shape = _svd_shapes(batch, m, n, full_matrices)
    return [s, ShapedArray(u_shape, x.dtype), ShapedArray(vt_shape, x.dtype)]


def _lower_svd(ctx, x, full_matrices, compute_uv):
    aval = ctx.avals_in[0]
    batch, m, n = aval.shape[:-2], *aval.shape[-2:]
    rank = aval.ndim
    s_aval = ShapedArray(batch + (min(m, n),), _real_dtype(aval.dtype))
    u_shape, vt_shape = _svd_shapes(batch, m, n, full_matrices)
    if m == 0 or n == 0:
        empty = lambda: [full(s_aval.shape, 0, s_aval.dtype), identity_columns(u_shape, aval.dtype),
                         identity_columns(vt_shape, aval.dtype)][:3 if compute_uv else 1]
        return _inline(ctx, empty, [], [])
    info_aval = _info_aval(batch)
    if ctx.module.platform == "gpu":
        # Jacobi SVD with full factors (the batched kernel has no economy mode); it returns V, not V^H.
        u_aval, v_aval = ShapedArray(batch + (m, m), aval.dtype), ShapedArray(batch + (n, n), aval.dtype)
        _, s, u, v, info = _custom_call(ctx, "cusolver_gesvdj_ffi", [x], [aval],
                                        [aval, s_aval, u_aval, v_aval, info_aval],
                                        {"compute_uv": "true", "full_matrices": "true"})

        def finish(s, u, v, info):
            ok = eq(info, np.int32(0))
            u = slice_(u, (0,) * rank, u_shape)
            vt = slice_(_adjoint(v), (0,) * rank, vt_shape)
            return [_nan_unless(ok, s), _nan_unless(ok, u), _nan_unless(ok, vt)]

        outs = _inline(ctx, finish, [s, u, v, info], [s_aval, u_aval, v_aval, info_aval])
    else:
        mode = _char("A" if full_matrices else "S") if compute_uv else _char("N")
        u_aval, vt_aval = ShapedArray(u_shape, aval.dtype), ShapedArray(vt_shape, aval.dtype)
        _, s, u, vt, info = _custom_call(ctx, _lapack_target("gesdd", aval.dtype), [x], [aval],
                                         [aval, s_aval, u_aval, vt_aval, info_aval], {"mode": mode})
        outs = _inline(ctx, lambda s, u, vt, i: [_nan_unless(eq(i, np.int32(0)), a) for a in (s, u, vt)],
                       [s, u, vt, info], [s_aval, u_aval, vt_aval, info_aval])
    return outs[:3 if compute_uv else 1]


svd_p.def_abstract_eval(_svd_abstract_eval)
register_lowering(svd_p, _lower_svd)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: (u, s, vh) with x == u @ diag(s) @ vh, s descending; only s when
    not `compute_uv`."""
    if subset_by_index is not None:
        raise NotImplementedError("svd(subset_by_index=...) is not supported by numax yet")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt


# --- differentiation ---------------------------------------------------------------------------------------
# JAX's rules, written over numax.lax. Tangent work must stay linear in the tangents: every product below
# has one tangent factor and one primal factor. Derivatives of decompositions assume what JAX's do: distinct
# eigenvalues (eigh) and singular values (svd), nonsingular triangular factors (lu, qr, cholesky).
from ..core.ad_util import Zero, is_undefined, tangent_aval  # noqa: E402
from ..core.primitives import jvp_rules, transpose_rules  # noqa: E402
from . import ad  # noqa: E402
from .elementwise import abs as abs_  # noqa: E402
from .elementwise import convert_element_type, imag, mul, neg, real  # noqa: E402
from .linear import dot_general  # noqa: E402
from .reductions import argmax  # noqa: E402
from .shapes import concatenate  # noqa: E402


def _matmul(a, b):
    """Batched matrix product over the leading dimensions, at full precision (as JAX's rules use)."""
    rank = get_aval_of(a).ndim
    batch = tuple(range(rank - 2))
    return dot_general(a, b, (((rank - 1,), (rank - 2,)), (batch, batch)), precision=("HIGHEST", "HIGHEST"))


def _constant_matrix(value, like):
    """A host matrix broadcast to the batch shape of `like` (a batch of matrices), in `like`'s dtype."""
    aval = get_aval_of(like)
    batch = aval.shape[:-2]
    return broadcast_in_dim(np.asarray(value, aval.dtype), batch + value.shape, (len(batch), len(batch) + 1))


def _eye(n, like, start=0):
    """Identity matrices (n, n) of `like`'s batch shape and dtype; ones from diagonal entry `start` on."""
    return _constant_matrix(np.diag((np.arange(n) >= start).astype(np.float64)), like)


def _diagonal(x):
    """The main diagonals of a batch of square matrices, shape (..., n)."""
    n = get_aval_of(x).shape[-1]
    return reduce_sum(mul(x, _eye(n, x)), (get_aval_of(x).ndim - 1,))


def _slice_last_two(x, rows, cols):
    aval = get_aval_of(x)
    batch = aval.shape[:-2]
    return slice_(x, (0,) * len(batch) + (rows[0], cols[0]), batch + (rows[1], cols[1]))


def _is_complex(x):
    return dtypes.is_complex(get_aval_of(x).dtype)


# cholesky: L' = L phi(L^-1 A' L^-H), phi taking the lower triangle with the diagonal halved
# (Murray, arXiv:1602.07527).
# The primitive reads only the lower triangle, so its tangent is first made the Hermitian matrix that
# triangle stands for: the other triangle gets no gradient (as from jax 0.11.2 on; earlier jax gave it one).
def _cholesky_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    factor = cholesky_p.bind(x)
    x_dot = _hermitian_from_lower(x_dot)
    n = get_aval_of(x).shape[-1]
    right = triangular_solve(factor, x_dot, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    middle = triangular_solve(factor, right, left_side=True, lower=True)
    halved = mul(tril(middle), _constant_matrix(1 - np.eye(n) / 2, middle))
    return factor, _matmul(factor, halved)


jvp_rules[cholesky_p] = _cholesky_jvp


# triangular_solve: linear in b; in a, X' = -op(A)^-1 op(A') X (left side) or -X op(A') op(A)^-1.
def _triangular_solve_jvp_a(a_dot, ans, a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    k = 1 if unit_diagonal else 0
    a_dot = neg(tril(a_dot, -k) if lower else triu(a_dot, k))
    if transpose_a:
        rank = get_aval_of(a_dot).ndim
        a_dot = transpose(a_dot, tuple(range(rank - 2)) + (rank - 1, rank - 2))
    if conjugate_a and _is_complex(a_dot):
        a_dot = conj(a_dot)

    def solve(rhs):
        return triangular_solve(a, rhs, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)

    # Solves and products cost about the same: order them so the intermediate is the smaller matrix.
    m, n = get_aval_of(b).shape[-2:]
    if left_side:
        return solve(_matmul(a_dot, ans)) if m > n else _matmul(solve(a_dot), ans)
    return solve(_matmul(ans, a_dot)) if m < n else _matmul(ans, solve(a_dot))


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


# lu_pivots_to_permutation: integers in and out, nothing to differentiate. permute_rows: linear in x;
# its transpose sends each row back where it came from, with the inverse permutation.
ad.defjvp_zero(lu_pivots_to_permutation_p)


def _inverse_permutation(permutation):
    """inverse[..., permutation[..., i]] = i, from one-hot comparisons (exact, batched)."""
    shape = get_aval_of(permutation).shape
    rank = len(shape)
    square = shape + (shape[-1],)
    targets = broadcast_in_dim(permutation, square, tuple(range(rank)))
    hits = eq(targets, broadcasted_iota(dtypes.int32, square, rank))  # hits[..., i, j]: permutation[i] == j
    sources = broadcasted_iota(dtypes.int32, square, rank - 1)
    return reduce_sum(mul(sources, convert_element_type(hits, dtypes.int32)), (rank - 1,))


def _permute_rows_transpose(ct, x, permutation):
    if is_undefined(permutation):
        raise TypeError("permute_rows is not linear in its permutation")
    if type(ct) is Zero:
        return [Zero(tangent_aval(x.aval)), None]
    return [permute_rows(ct, _inverse_permutation(permutation)), None]


ad.deflinear_in(permute_rows_p, (0,), _permute_rows_transpose)


# lu: with P A = L U, L' = L tril(L^-1 P A' U^-1, -1) and U' = triu(L^-1 P A' U^-1) U
# (de Hoog, Anderssen and Lukas); L and U are completed to square matrices for wide and tall inputs.
def _lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    lu_matrix, pivots, permutation = lu_p.bind(a)
    aval = get_aval_of(a)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    k = min(m, n)
    zero = np.zeros((), aval.dtype)
    no_pad = [(0, 0, 0)] * (rank - 2)
    lower = pad(tril(_slice_last_two(lu_matrix, (0, m), (0, k)), -1), zero, no_pad + [(0, 0, 0), (0, m - k, 0)])
    lower = add(lower, _eye(m, a))
    upper = pad(triu(_slice_last_two(lu_matrix, (0, k), (0, n))), zero, no_pad + [(0, n - k, 0), (0, 0, 0)])
    upper = add(upper, _eye(n, a, start=k))
    solved = triangular_solve(lower, permute_rows(a_dot, permutation), left_side=True, lower=True,
                              unit_diagonal=True)
    solved = triangular_solve(upper, solved, left_side=False, lower=False)
    lu_dot = add(_matmul(lower, tril(solved, -1)), _matmul(triu(solved), upper))
    return ([lu_matrix, pivots, permutation],
            [lu_dot, Zero(tangent_aval(get_aval_of(pivots))), Zero(tangent_aval(get_aval_of(permutation)))])


jvp_rules[lu_p] = _lu_jvp


# qr: JAX's rule (J. Townsend's derivation for m >= n; wide matrices split into a square block and the
# rest; complete Q of a tall matrix per arXiv:2409.13374).
def _thin_qr_jvp(q, r, x_dot):
    x_dot_r_inv = triangular_solve(r, x_dot)  # x' r^-1 (a right-side solve with upper r)
    qh_x_dot_r_inv = _matmul(_adjoint(q), x_dot_r_inv)
    below = tril(qh_x_dot_r_inv, -1)
    omega = sub(below, _adjoint(below))  # skew-Hermitian
    if _is_complex(q):  # the imaginary part of the diagonal, which a skew-Hermitian matrix also has
        n = get_aval_of(r).shape[-1]
        imaginary = div(sub(qh_x_dot_r_inv, conj(qh_x_dot_r_inv)), np.asarray(2, get_aval_of(q).dtype))
        omega = add(omega, mul(_eye(n, omega), imaginary))
    q_dot = add(_matmul(q, sub(omega, qh_x_dot_r_inv)), x_dot_r_inv)
    r_dot = _matmul(sub(qh_x_dot_r_inv, omega), r)
    return q_dot, r_dot


def _solve_adjoint(a, b):
    """x with a^H x = b, through the LU factorization of a (primal values only)."""
    lu_matrix, _, permutation = lu_p.bind(a)
    y = triangular_solve(lu_matrix, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    y = triangular_solve(lu_matrix, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True,
                         unit_diagonal=True)
    return permute_rows(y, _inverse_permutation(permutation))


def _qr_jvp(primals, tangents, full_matrices):
    (x,), (x_dot,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    aval = get_aval_of(x)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    if m < n:  # X = [X1 X2] = Q [R1 R2]: the square block's rule, then R2' = Q'^H X2 + Q^H X2'
        q_dot, r1_dot = _thin_qr_jvp(q, _slice_last_two(r, (0, m), (0, m)), _slice_last_two(x_dot, (0, m), (0, m)))
        r2_dot = add(_matmul(_adjoint(q_dot), _slice_last_two(x, (0, m), (m, n))),
                     _matmul(_adjoint(q), _slice_last_two(x_dot, (0, m), (m, n))))
        return [q, r], [q_dot, concatenate([r1_dot, r2_dot], rank - 1)]
    q_thin = _slice_last_two(q, (0, m), (0, n)) if full_matrices else q
    r_square = _slice_last_two(r, (0, n), (0, n)) if full_matrices else r
    q_thin_dot, r_square_dot = _thin_qr_jvp(q_thin, r_square, x_dot)
    if not full_matrices or m == n:
        return [q, r], [q_thin_dot, r_square_dot]
    # The complete Q's last m - n columns: with Z = Q_pn (Q_nn - I)^-1 (Q_nn: Q's top n x n block, Q_pn
    # the rows below it), Q_mp' = Q_mn' Z^H - (Q_mn + Q_mp Z) (Q_pn' - Z Q_nn')^H.
    q_top = _slice_last_two(q_thin, (0, n), (0, n))
    q_bottom = _slice_last_two(q_thin, (n, m), (0, n))
    q_rest = _slice_last_two(q, (0, m), (n, m))
    z_adjoint = _solve_adjoint(sub(q_top, _eye(n, q_top)), _adjoint(q_bottom))
    z = _adjoint(z_adjoint)
    q_top_dot = _slice_last_two(q_thin_dot, (0, n), (0, n))
    q_bottom_dot = _slice_last_two(q_thin_dot, (n, m), (0, n))
    q_rest_dot = sub(_matmul(q_thin_dot, z_adjoint),
                     _matmul(add(q_thin, _matmul(q_rest, z)), _adjoint(sub(q_bottom_dot, _matmul(z, q_top_dot)))))
    r_dot = pad(r_square_dot, np.zeros((), aval.dtype), [(0, 0, 0)] * (rank - 2) + [(0, m - n, 0), (0, 0, 0)])
    return [q, r], [concatenate([q_thin_dot, q_rest_dot], rank - 1), r_dot]


jvp_rules[qr_p] = _qr_jvp


def _no_derivative(name, advice):
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"differentiation rule for '{name}' not implemented (JAX has none either): "
                                  f"{advice}")

    return rule


jvp_rules[geqrf_p] = _no_derivative("geqrf", "differentiate numax.lax.linalg.qr (or numax.numpy.linalg.qr) instead")
jvp_rules[householder_product_p] = _no_derivative(
    "householder_product", "differentiate numax.lax.linalg.qr (or numax.numpy.linalg.qr) instead")


# eigh: first-order perturbation theory for distinct eigenvalues: with A' in the eigenbasis
# (V^H A' V), w' is its diagonal and V' = V (F * V^H A' V), F[i, j] = 1 / (w[j] - w[i]) off the diagonal.
def _eigh_jvp(primals, tangents, lower, sort_eigenvalues):
    (a,), (a_dot,) = primals, tangents
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues)
    aval = get_aval_of(a)
    rank, n = aval.ndim, aval.shape[-1]
    w = convert_element_type(w_real, aval.dtype)
    matrix_shape = aval.shape[:-2] + (n, n)
    w_columns = broadcast_in_dim(w, matrix_shape, tuple(range(rank - 2)) + (rank - 1,))  # [i, j] = w[j]
    w_rows = broadcast_in_dim(w, matrix_shape, tuple(range(rank - 1)))  # [i, j] = w[i]
    eye = _eye(n, a)
    gaps = div(np.asarray(1, aval.dtype), add(eye, sub(w_columns, w_rows)))
    gaps = sub(gaps, eye)
    rotated = _matmul(_matmul(_adjoint(v), a_dot), v)
    v_dot = _matmul(v, mul(gaps, rotated))
    w_dot = _diagonal(real(rotated) if _is_complex(rotated) else rotated)
    return [v, w_real], [v_dot, w_dot]


jvp_rules[eigh_p] = _eigh_jvp


# eig: w_i' = (V^-1 A' V)_ii with V the right eigenvectors; the eigenvectors' derivatives only when asked
# for with enable_eigvec_derivs (as in JAX), under LAPACK's normalization.
def _solve(a, b):
    """x with a x = b, through the LU factorization of a (a primal; linear in b)."""
    lu_matrix, _, permutation = lu_p.bind(a)
    y = triangular_solve(lu_matrix, permute_rows(b, permutation), left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_matrix, y, left_side=True, lower=False)


def _eigenvector_jvp(w, v, a_dot):
    """(w', v') for right eigenvectors v of eigenvalues w: with P = V^-1 A' V, w' = diag(P) and
    v_j' = u_j + c_j v_j, u = V (F * P), where c_j keeps v_j of unit norm with its largest component real."""
    rank, n = get_aval_of(v).ndim, get_aval_of(v).shape[-1]
    dtype = get_aval_of(v).dtype
    matrix_shape = get_aval_of(v).shape
    w_columns = broadcast_in_dim(w, matrix_shape, tuple(range(rank - 2)) + (rank - 1,))  # [i, j] = w[j]
    w_rows = broadcast_in_dim(w, matrix_shape, tuple(range(rank - 1)))  # [i, j] = w[i]
    eye = _eye(n, v)
    gaps = sub(div(np.asarray(1, dtype), add(eye, sub(w_columns, w_rows))), eye)
    rotated = _matmul(_solve(v, a_dot), v)
    u = _matmul(v, mul(gaps, rotated))
    largest = argmax(abs_(v), rank - 2, dtypes.int32)
    at_largest = eq(broadcasted_iota(dtypes.int32, matrix_shape, rank - 2),
                    broadcast_in_dim(largest, matrix_shape, tuple(range(rank - 2)) + (rank - 1,)))
    mask = convert_element_type(at_largest, dtype)
    columns = (rank - 2,)
    scale = neg(real(reduce_sum(mul(conj(v), u), columns)))
    phase = neg(div(imag(reduce_sum(mul(mask, u), columns)), real(reduce_sum(mul(mask, v), columns))))
    c = broadcast_in_dim(make_complex(scale, phase), matrix_shape, tuple(range(rank - 2)) + (rank - 1,))
    return _diagonal(rotated), add(u, mul(v, c))


def _eig_jvp(primals, tangents, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    (a,), (a_dot,) = primals, tangents
    wants_vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if wants_vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that numax "
            "cannot check (see the enable_eigvec_derivs argument to numax.lax.linalg.eig). Pass "
            "enable_eigvec_derivs=True to numax.lax.linalg.eig to opt in, or differentiate only the eigenvalues "
            "(numax.numpy.linalg.eigvals), or use eigh for Hermitian matrices. See "
            "https://github.com/jax-ml/jax/issues/2748 for discussion.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors, compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, right = outs[0], outs[-1]
    rank = get_aval_of(a).ndim
    a_dot = convert_element_type(a_dot, get_aval_of(right).dtype)
    if not wants_vectors:
        right_t = transpose(right, tuple(range(rank - 2)) + (rank - 1, rank - 2))
        return [w], [reduce_sum(mul(_solve(right, a_dot), right_t), (rank - 1,))]
    w_dot, right_dot = _eigenvector_jvp(w, right, a_dot)
    primal_out, tangent_out = [w], [w_dot]
    if compute_left_eigenvectors:  # left eigenvectors: the right ones of A^H, for the eigenvalues conj(w)
        primal_out.append(outs[1])
        tangent_out.append(_eigenvector_jvp(conj(w), outs[1], _adjoint(a_dot))[1])
    if compute_right_eigenvectors:
        primal_out.append(right)
        tangent_out.append(right_dot)
    return primal_out, tangent_out


jvp_rules[eig_p] = _eig_jvp


# svd: JAX's rule (Townsend's derivation): with dS = U^H A' V, s' = Re diag(dS); U' and V' from dS and
# F[i, j] = 1 / (s[j]^2 - s[i]^2), plus the parts of A' outside the span of U (tall) or V (wide).
def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    (a,), (a_dot,) = primals, tangents
    aval = get_aval_of(a)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices: use "
                                  "full_matrices=False (or a square matrix), or compute_uv=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    uh, v = _adjoint(u), _adjoint(vt)
    d_s = _matmul(_matmul(uh, a_dot), v)
    s_dot = _diagonal(real(d_s) if _is_complex(d_s) else d_s)
    if not compute_uv:
        return [s], [s_dot]
    k = min(m, n)
    batch = aval.shape[:-2]
    square = batch + (k, k)
    s_columns = broadcast_in_dim(s, square, tuple(range(rank - 2)) + (rank - 1,))  # [i, j] = s[j]
    s_rows = broadcast_in_dim(s, square, tuple(range(rank - 1)))  # [i, j] = s[i]
    real_eye = _eye(k, s_columns)
    s_diffs = mul(add(s_columns, s_rows), sub(s_columns, s_rows))
    real_dtype = get_aval_of(s).dtype
    f = sub(div(np.asarray(1, real_dtype), add(s_diffs, real_eye)), real_eye)
    f = convert_element_type(f, aval.dtype)
    s_columns_c = convert_element_type(s_columns, aval.dtype)
    s_rows_c = convert_element_type(s_rows, aval.dtype)
    dss = mul(s_columns_c, d_s)  # dS diag(s)
    sds = mul(s_rows_c, d_s)  # diag(s) dS
    u_inner = mul(f, add(dss, _adjoint(dss)))
    if _is_complex(d_s):  # the diagonal's imaginary part, which only complex inputs have
        is_zero = convert_element_type(eq(s, np.zeros((), real_dtype)), real_dtype)
        s_inv = sub(div(np.asarray(1, real_dtype), add(s, is_zero)), is_zero)
        s_inv_matrix = mul(broadcast_in_dim(s_inv, square, tuple(range(rank - 1))), real_eye)
        half_skew = mul(sub(d_s, _adjoint(d_s)), np.asarray(0.5, aval.dtype))
        u_inner = add(u_inner, mul(half_skew, convert_element_type(s_inv_matrix, aval.dtype)))
    u_dot = _matmul(u, u_inner)
    v_dot = _matmul(v, mul(f, add(sds, _adjoint(sds))))
    if m != n:  # dividing the columns by s
        s_matrix = broadcast_in_dim(convert_element_type(s, aval.dtype), batch + (max(m, n), k),
                                    tuple(range(rank - 2)) + (rank - 1,))
    if m > n:
        a_dot_v = _matmul(a_dot, v)
        u_dot = add(u_dot, div(sub(a_dot_v, _matmul(u, _matmul(uh, a_dot_v))), s_matrix))
    if n > m:
        a_dot_h_u = _matmul(_adjoint(a_dot), u)
        v_dot = add(v_dot, div(sub(a_dot_h_u, _matmul(v, _matmul(vt, a_dot_h_u))), s_matrix))
    return [s, u, vt], [s_dot, u_dot, _adjoint(v_dot)]


jvp_rules[svd_p] = _svd_jvp


# --- batching rules ------------------------------------------------------------------------------------------
# Every primitive here already maps over leading batch dimensions: the vmapped dimension moves to the front
# (unbatched operands are broadcast) and the primitive runs once on the whole batch.
from ..core.primitives import batching_rules  # noqa: E402
from .batching import axis_size_of, batch_at_front, move_axis  # noqa: E402
from .shapes import reshape  # noqa: E402


def _batch_leading(primitive):
    def rule(values, dims, **params):
        size = axis_size_of(values, dims)
        out = primitive.bind(*(batch_at_front(v, d, size) for v, d in zip(values, dims)), **params)
        return out, ([0] * len(out) if primitive.multiple_results else 0)

    rule.__name__ = f"_{primitive.name}_batching"
    return rule


def _triangular_solve_batching(values, dims, **params):
    """With one matrix `a` for all examples, the examples of b become extra right-hand sides (columns when
    solving on the left, rows on the right): one solve, no copies of `a` (as JAX does)."""
    (a, b), (a_dim, b_dim) = values, dims
    if a_dim is not None:
        return _batch_leading(triangular_solve_p)(values, dims, **params)
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


for _primitive in (cholesky_p, triangular_solve_p, lu_pivots_to_permutation_p, permute_rows_p, lu_p, geqrf_p,
                   householder_product_p, qr_p, eigh_p, eig_p, svd_p):
    batching_rules[_primitive] = _batch_leading(_primitive)
batching_rules[triangular_solve_p] = _triangular_solve_batching
