"""Spectral decomposition primitives: eigh (Hermitian matrices), eig (general matrices, CPU only) and svd,
each with its wrapper, abstract eval, lowering, JVP and batching rule.

They act on the last two dimensions and are batched over the leading ones; the kernels are LAPACK's on the
CPU and cuSOLVER's on the GPU (see `linalg_kernels`). The derivatives are JAX's rules written over
numax.lax and assume what JAX's do: distinct eigenvalues (eigh, eig) and singular values (svd).
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitives import Primitive, batching_rules, jvp_rules
from ..core.trace import get_aval_of
from ..lowering.lower import register_lowering
from . import typing as T
from .conversions import convert_element_type
from .elementwise import abs as abs_
from .elementwise import add, conj, div, eq, imag, mul, neg, real, sub
from .elementwise import complex as make_complex
from .linalg_factorizations import solve
from .linalg_kernels import custom_call, info_aval, inline, lapack_char, lapack_target, nan_unless
from .linalg_matrices import (
    adjoint,
    batch_leading,
    check_matrix,
    diagonal,
    eye,
    identity_columns,
    is_complex,
    matmul,
    pairwise_gaps_inverse,
    swap_last_two,
    symmetrize,
)
from .reductions import argmax, reduce_sum
from .shapes import broadcast_in_dim, broadcasted_iota, full
from .slicing import slice as slice_


def _all_ok(info):
    return eq(info, np.int32(0))


# --- eigh -----------------------------------------------------------------------------------------------------
eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_abstract_eval(x, lower, sort_eigenvalues):
    batch, _, n = check_matrix("eigh", x, square=True)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (n,), T.complex_to_real(x.dtype))]


def _lower_eigh(ctx, x, lower, sort_eigenvalues):
    aval = ctx.avals_in[0]
    v_aval, w_aval = ctx.avals_out
    if aval.size == 0:
        return [x, inline(ctx, lambda: [full(w_aval.shape, 0, w_aval.dtype)], [], [])[0]]
    status_aval = info_aval(aval.shape[:-2])
    if ctx.module.platform == "gpu":
        target, config = "cusolver_syevd_ffi", {"algorithm": "0 : ui8", "lower": "true" if lower else "false"}
    else:
        routine = "heevd" if dtypes.is_complex(aval.dtype) else "syevd"
        target = lapack_target(routine, aval.dtype)
        config = {"mode": lapack_char("V"), "uplo": lapack_char("L" if lower else "U")}
    v, w, info = custom_call(ctx, target, [x], [aval], [v_aval, w_aval, status_aval], config)
    # LAPACK and cuSOLVER both return eigenvalues in ascending order, so sorting needs no work.
    return inline(ctx, lambda v, w, i: [nan_unless(_all_ok(i), v), nan_unless(_all_ok(i), w)],
                  [v, w, info], [v_aval, w_aval, status_aval])


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
        check_matrix("eigh", get_aval_of(x), square=True)
        x = symmetrize(x)
    return tuple(eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues)))


# First-order perturbation theory for distinct eigenvalues: with A' in the eigenbasis (V^H A' V), w' is its
# diagonal and V' = V (F * V^H A' V), F[i, j] = 1 / (w[j] - w[i]) off the diagonal.
def _eigh_jvp(primals, tangents, lower, sort_eigenvalues):
    (a,), (a_dot,) = primals, tangents
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues)
    gaps = pairwise_gaps_inverse(convert_element_type(w_real, get_aval_of(a).dtype), a)
    rotated = matmul(matmul(adjoint(v), a_dot), v)
    v_dot = matmul(v, mul(gaps, rotated))
    w_dot = diagonal(real(rotated) if is_complex(rotated) else rotated)
    return [v, w_real], [v_dot, w_dot]


jvp_rules[eigh_p] = _eigh_jvp


# --- eig (general matrices) ------------------------------------------------------------------------------
eig_p = Primitive("eig", multiple_results=True)


def _complex_dtype(dtype):
    return dtypes.complex128 if dtype in (dtypes.float64, dtypes.complex128) else dtypes.complex64


def _eig_abstract_eval(x, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs):
    batch, _, n = check_matrix("eig", x, square=True)
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
    status_aval = info_aval(batch)
    if aval.size == 0:
        empty = lambda: [full(w_aval.shape, 0, complex_dtype)] + [full(v_aval.shape, 0, complex_dtype)] * 2
        w, left, right = inline(ctx, empty, [], [])
    else:
        config = {"compute_left": lapack_char("V" if compute_left_eigenvectors else "N"),
                  "compute_right": lapack_char("V" if compute_right_eigenvectors else "N")}
        target = lapack_target("geev", aval.dtype)
        if dtypes.is_complex(aval.dtype):
            outs = custom_call(ctx, target, [x], [aval], [w_aval, v_aval, v_aval, status_aval], config, None)
            parts_avals = [w_aval]
        else:  # real kernels return the eigenvalues' real and imaginary parts apart
            real_w = ShapedArray(w_aval.shape, aval.dtype)
            outs = custom_call(ctx, target, [x], [aval], [real_w, real_w, v_aval, v_aval, status_aval], config, None)
            parts_avals = [real_w, real_w]

        def finish(*values):
            *w_parts, left, right, info = values
            ok = _all_ok(info)
            w = make_complex(*w_parts) if len(w_parts) == 2 else w_parts[0]
            return [nan_unless(ok, w), nan_unless(ok, left), nan_unless(ok, right)]

        w, left, right = inline(ctx, finish, outs, parts_avals + [v_aval, v_aval, status_aval])
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


# w_i' = (V^-1 A' V)_ii with V the right eigenvectors; the eigenvectors' derivatives only when asked for with
# enable_eigvec_derivs (as in JAX), under LAPACK's normalization.
def _eigenvector_jvp(w, v, a_dot):
    """(w', v') for right eigenvectors v of eigenvalues w: with P = V^-1 A' V, w' = diag(P) and
    v_j' = u_j + c_j v_j, u = V (F * P), where c_j keeps v_j of unit norm with its largest component real."""
    rank = get_aval_of(v).ndim
    dtype = get_aval_of(v).dtype
    matrix_shape = get_aval_of(v).shape
    gaps = pairwise_gaps_inverse(w, v)
    rotated = matmul(solve(v, a_dot), v)
    u = matmul(v, mul(gaps, rotated))
    largest = argmax(abs_(v), rank - 2, dtypes.int32)
    at_largest = eq(broadcasted_iota(dtypes.int32, matrix_shape, rank - 2),
                    broadcast_in_dim(largest, matrix_shape, tuple(range(rank - 2)) + (rank - 1,)))
    mask = convert_element_type(at_largest, dtype)
    columns = (rank - 2,)
    scale = neg(real(reduce_sum(mul(conj(v), u), columns)))
    phase = neg(div(imag(reduce_sum(mul(mask, u), columns)), real(reduce_sum(mul(mask, v), columns))))
    c = broadcast_in_dim(make_complex(scale, phase), matrix_shape, tuple(range(rank - 2)) + (rank - 1,))
    return diagonal(rotated), add(u, mul(v, c))


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
        return [w], [reduce_sum(mul(solve(right, a_dot), swap_last_two(right)), (rank - 1,))]
    w_dot, right_dot = _eigenvector_jvp(w, right, a_dot)
    primal_out, tangent_out = [w], [w_dot]
    if compute_left_eigenvectors:  # left eigenvectors: the right ones of A^H, for the eigenvalues conj(w)
        primal_out.append(outs[1])
        tangent_out.append(_eigenvector_jvp(conj(w), outs[1], adjoint(a_dot))[1])
    if compute_right_eigenvectors:
        primal_out.append(right)
        tangent_out.append(right_dot)
    return primal_out, tangent_out


jvp_rules[eig_p] = _eig_jvp


# --- svd -------------------------------------------------------------------------------------------------------
svd_p = Primitive("svd", multiple_results=True)


def _svd_shapes(batch, m, n, full_matrices):
    k = min(m, n)
    return batch + (m, m if full_matrices else k), batch + (n if full_matrices else k, n)


def _svd_abstract_eval(x, full_matrices, compute_uv):
    batch, m, n = check_matrix("svd", x)
    s = ShapedArray(batch + (min(m, n),), T.complex_to_real(x.dtype))
    if not compute_uv:
        return [s]
    u_shape, vt_shape = _svd_shapes(batch, m, n, full_matrices)
    return [s, ShapedArray(u_shape, x.dtype), ShapedArray(vt_shape, x.dtype)]


def _lower_svd(ctx, x, full_matrices, compute_uv):
    aval = ctx.avals_in[0]
    batch, m, n = aval.shape[:-2], *aval.shape[-2:]
    rank = aval.ndim
    s_aval = ShapedArray(batch + (min(m, n),), T.complex_to_real(aval.dtype))
    u_shape, vt_shape = _svd_shapes(batch, m, n, full_matrices)
    if m == 0 or n == 0:
        empty = lambda: [full(s_aval.shape, 0, s_aval.dtype), identity_columns(u_shape, aval.dtype),
                         identity_columns(vt_shape, aval.dtype)][:3 if compute_uv else 1]
        return inline(ctx, empty, [], [])
    status_aval = info_aval(batch)
    if ctx.module.platform == "gpu":
        # Jacobi SVD with full factors (the batched kernel has no economy mode); it returns V, not V^H.
        u_aval, v_aval = ShapedArray(batch + (m, m), aval.dtype), ShapedArray(batch + (n, n), aval.dtype)
        _, s, u, v, info = custom_call(ctx, "cusolver_gesvdj_ffi", [x], [aval],
                                       [aval, s_aval, u_aval, v_aval, status_aval],
                                       {"compute_uv": "true", "full_matrices": "true"})

        def finish(s, u, v, info):
            u = slice_(u, (0,) * rank, u_shape)
            vt = slice_(adjoint(v), (0,) * rank, vt_shape)
            return [nan_unless(_all_ok(info), a) for a in (s, u, vt)]

        outs = inline(ctx, finish, [s, u, v, info], [s_aval, u_aval, v_aval, status_aval])
    else:
        mode = lapack_char("A" if full_matrices else "S") if compute_uv else lapack_char("N")
        u_aval, vt_aval = ShapedArray(u_shape, aval.dtype), ShapedArray(vt_shape, aval.dtype)
        _, s, u, vt, info = custom_call(ctx, lapack_target("gesdd", aval.dtype), [x], [aval],
                                        [aval, s_aval, u_aval, vt_aval, status_aval], {"mode": mode})
        outs = inline(ctx, lambda s, u, vt, i: [nan_unless(_all_ok(i), a) for a in (s, u, vt)],
                      [s, u, vt, info], [s_aval, u_aval, vt_aval, status_aval])
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


# JAX's rule (Townsend's derivation): with dS = U^H A' V, s' = Re diag(dS); U' and V' from dS and
# F[i, j] = 1 / (s[j]^2 - s[i]^2), plus the parts of A' outside the span of U (tall) or V (wide).
def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    (a,), (a_dot,) = primals, tangents
    aval = get_aval_of(a)
    rank, (m, n) = aval.ndim, aval.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices: use "
                                  "full_matrices=False (or a square matrix), or compute_uv=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    uh, v = adjoint(u), adjoint(vt)
    d_s = matmul(matmul(uh, a_dot), v)
    s_dot = diagonal(real(d_s) if is_complex(d_s) else d_s)
    if not compute_uv:
        return [s], [s_dot]
    k = min(m, n)
    batch = aval.shape[:-2]
    square = batch + (k, k)
    s_columns = broadcast_in_dim(s, square, tuple(range(rank - 2)) + (rank - 1,))  # [i, j] = s[j]
    s_rows = broadcast_in_dim(s, square, tuple(range(rank - 1)))  # [i, j] = s[i]
    real_eye = eye(k, s_columns)
    s_diffs = mul(add(s_columns, s_rows), sub(s_columns, s_rows))
    real_dtype = get_aval_of(s).dtype
    f = sub(div(np.asarray(1, real_dtype), add(s_diffs, real_eye)), real_eye)
    f = convert_element_type(f, aval.dtype)
    s_columns_c = convert_element_type(s_columns, aval.dtype)
    s_rows_c = convert_element_type(s_rows, aval.dtype)
    dss = mul(s_columns_c, d_s)  # dS diag(s)
    sds = mul(s_rows_c, d_s)  # diag(s) dS
    u_inner = mul(f, add(dss, adjoint(dss)))
    if is_complex(d_s):  # the diagonal's imaginary part, which only complex inputs have
        is_zero = convert_element_type(eq(s, np.zeros((), real_dtype)), real_dtype)
        s_inv = sub(div(np.asarray(1, real_dtype), add(s, is_zero)), is_zero)
        s_inv_matrix = mul(broadcast_in_dim(s_inv, square, tuple(range(rank - 1))), real_eye)
        half_skew = mul(sub(d_s, adjoint(d_s)), np.asarray(0.5, aval.dtype))
        u_inner = add(u_inner, mul(half_skew, convert_element_type(s_inv_matrix, aval.dtype)))
    u_dot = matmul(u, u_inner)
    v_dot = matmul(v, mul(f, add(sds, adjoint(sds))))
    if m != n:  # dividing the columns by s
        s_matrix = broadcast_in_dim(convert_element_type(s, aval.dtype), batch + (max(m, n), k),
                                    tuple(range(rank - 2)) + (rank - 1,))
    if m > n:
        a_dot_v = matmul(a_dot, v)
        u_dot = add(u_dot, div(sub(a_dot_v, matmul(u, matmul(uh, a_dot_v))), s_matrix))
    if n > m:
        a_dot_h_u = matmul(adjoint(a_dot), u)
        v_dot = add(v_dot, div(sub(a_dot_h_u, matmul(v, matmul(vt, a_dot_h_u))), s_matrix))
    return [s, u, vt], [s_dot, u_dot, adjoint(v_dot)]


jvp_rules[svd_p] = _svd_jvp

for _primitive in (eigh_p, eig_p, svd_p):
    batching_rules[_primitive] = batch_leading(_primitive)
