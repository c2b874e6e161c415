"""Exception classes against jax: a table of bad calls, each run with jax and with numax on the same arguments.
numax must raise the class jax raises, or a subclass of it; jax's own classes (ConcretizationTypeError and
friends) map to numax's classes of the same name. Almost every error here is found while tracing, before any
compile, so the table stays fast."""

import types

import jax.errors
import numpy as np
import pytest
from harness import jax, jnp

import numax
import numax.numpy as xnp
from numax import lax

JAX = types.SimpleNamespace(np=jnp, lax=jax.lax, jit=jax.jit, grad=jax.grad, vmap=jax.vmap, jvp=jax.jvp,
                            vjp=jax.vjp, value_and_grad=jax.value_and_grad, random=jax.random,
                            linalg=jnp.linalg, scipy=jax.scipy, nn=jax.nn, name="jax")
NUMAX = types.SimpleNamespace(np=xnp, lax=lax, jit=numax.jit, grad=numax.grad, vmap=numax.vmap, jvp=numax.jvp,
                              vjp=numax.vjp, value_and_grad=numax.value_and_grad, random=numax.random,
                              linalg=xnp.linalg, scipy=numax.scipy, nn=numax.nn, name="numax")

F32 = np.float32
_ones = np.ones


def _f32(*shape):
    return np.ones(shape, F32)


def _i32(*shape):
    return np.ones(shape, np.int32)


def _key(m):
    return m.random.key(0)


def _if_positive(x):
    if x > 0:
        return x
    return -x


def _scan_changes_carry_dtype(m):
    return m.lax.scan(lambda c, x: (c.astype(np.int32), x), F32(0), _f32(3))


def _while_changes_carry_shape(m):
    return m.lax.while_loop(lambda c: c.sum() < 3, lambda c: m.np.concatenate([c, c]), _f32(1))


# (id, bad call of a namespace `m` holding np, lax, jit, grad, vmap, random, ...)
BAD_CALLS = [
    # --- numpy: products and contractions
    ("dot", lambda m: m.np.dot(_f32(2, 3), _f32(4, 5))),
    ("dot_1d", lambda m: m.np.dot(_f32(3), _f32(4))),
    ("matmul", lambda m: m.np.matmul(_f32(2, 3), _f32(4, 5))),
    ("matmul_batch", lambda m: m.np.matmul(_f32(2, 2, 3), _f32(3, 3, 4))),
    ("matmul_scalar", lambda m: m.np.matmul(F32(1), _f32(3))),
    ("matmul_operator", lambda m: m.np.asarray(_f32(2, 3)) @ m.np.asarray(_f32(4))),
    ("vdot", lambda m: m.np.vdot(_f32(3), _f32(4))),
    ("inner", lambda m: m.np.inner(_f32(2, 3), _f32(4))),
    ("tensordot", lambda m: m.np.tensordot(_f32(2, 3), _f32(4, 5), axes=1)),
    ("tensordot_axes", lambda m: m.np.tensordot(_f32(2, 3), _f32(3, 5), axes=([1], [1]))),
    ("einsum_sizes", lambda m: m.np.einsum("ij,jk->ik", _f32(2, 3), _f32(4, 5))),
    ("einsum_operands", lambda m: m.np.einsum("ij,jk->ik", _f32(2, 3))),
    ("einsum_rank", lambda m: m.np.einsum("ijk->i", _f32(2, 3))),
    ("einsum_output", lambda m: m.np.einsum("ij->ik", _f32(2, 3))),
    ("cross", lambda m: m.np.cross(_f32(4), _f32(4))),
    ("vecdot", lambda m: m.np.vecdot(_f32(3), _f32(4))),
    # --- numpy: joining, splitting, shapes
    ("concatenate_shapes", lambda m: m.np.concatenate([_f32(2, 3), _f32(2, 4)])),
    ("concatenate_ranks", lambda m: m.np.concatenate([_f32(2, 3), _f32(3)])),
    ("concatenate_axis", lambda m: m.np.concatenate([_f32(2), _f32(2)], axis=1)),
    ("concatenate_empty", lambda m: m.np.concatenate([])),
    ("stack_shapes", lambda m: m.np.stack([_f32(2), _f32(3)])),
    ("stack_empty", lambda m: m.np.stack([])),
    ("stack_axis", lambda m: m.np.stack([_f32(2), _f32(2)], axis=3)),
    ("hstack_shapes", lambda m: m.np.hstack([_f32(2, 3), _f32(3, 3)])),
    # (Each library's own array: jax.numpy.reshape hands a numpy array to numpy, which raises ValueError.)
    ("reshape_size", lambda m: m.np.reshape(m.np.asarray(_f32(6)), (4, 2))),
    ("reshape_two_unknown", lambda m: m.np.reshape(m.np.asarray(_f32(6)), (-1, -1))),
    ("reshape_method", lambda m: m.np.asarray(_f32(6)).reshape(5)),
    ("broadcast_to", lambda m: m.np.broadcast_to(_f32(3), (4,))),
    ("broadcast_to_rank", lambda m: m.np.broadcast_to(_f32(2, 3), (3,))),
    ("broadcast_arrays", lambda m: m.np.broadcast_arrays(_f32(3), _f32(4))),
    ("broadcast_shapes", lambda m: m.np.broadcast_shapes((3,), (4,))),
    ("add_shapes", lambda m: m.np.add(_f32(3), _f32(4))),
    ("operator_shapes", lambda m: m.np.asarray(_f32(3)) + m.np.asarray(_f32(4))),
    ("where_shapes", lambda m: m.np.where(_f32(3) > 0, _f32(4), _f32(5))),
    ("transpose_repeated", lambda m: m.np.transpose(_f32(2, 3), (0, 0))),
    ("transpose_short", lambda m: m.np.transpose(_f32(2, 3), (0,))),
    ("transpose_range", lambda m: m.np.transpose(_f32(2, 3), (0, 2))),
    ("moveaxis_range", lambda m: m.np.moveaxis(_f32(2, 3), 5, 0)),
    ("moveaxis_repeated", lambda m: m.np.moveaxis(_f32(2, 3), (0, 0), (0, 1))),
    ("swapaxes_range", lambda m: m.np.swapaxes(_f32(2, 3), 0, 4)),
    ("squeeze_non_one", lambda m: m.np.squeeze(_f32(2, 3), 0)),
    ("squeeze_range", lambda m: m.np.squeeze(_f32(1, 3), 4)),
    ("expand_dims_range", lambda m: m.np.expand_dims(_f32(2), 3)),
    ("split_unequal", lambda m: m.np.split(_f32(5), 2)),
    ("split_axis", lambda m: m.np.split(_f32(4), 2, axis=1)),
    ("flip_axis", lambda m: m.np.flip(_f32(2), 1)),
    ("roll_axis", lambda m: m.np.roll(_f32(2, 3), 1, axis=2)),
    ("repeat_lengths", lambda m: m.np.repeat(_f32(3), np.array([1, 2]))),
    ("pad_width", lambda m: m.np.pad(_f32(3), ((1, 2), (3, 4)))),
    ("pad_negative", lambda m: m.np.pad(_f32(3), -1)),
    ("pad_mode", lambda m: m.np.pad(_f32(3), 1, mode="bogus")),
    ("diag_rank", lambda m: m.np.diag(_f32(2, 2, 2))),
    ("trace_rank", lambda m: m.np.trace(_f32(3))),
    ("diagonal_axes", lambda m: m.np.diagonal(_f32(2, 3), 0, 0, 0)),
    ("tile_negative", lambda m: m.np.tile(_f32(2), -1)),
    ("zeros_negative", lambda m: m.np.zeros((-1,))),
    ("zeros_float_shape", lambda m: m.np.zeros((2.5,))),
    ("full_shape", lambda m: m.np.full((2, 3), _f32(4))),
    ("eye_float", lambda m: m.np.eye(2.5)),
    ("arange_zero_step", lambda m: m.np.arange(0, 5, 0)),
    ("astype_bad", lambda m: m.np.asarray(_f32(2)).astype("not-a-dtype")),
    ("asarray_ragged", lambda m: m.np.asarray([[1.0, 2.0], [3.0]])),
    ("asarray_string", lambda m: m.np.asarray("abc")),
    ("asarray_object", lambda m: m.np.asarray(object())),
    # --- numpy: reductions, sorting, cumulative
    ("sum_axis", lambda m: m.np.sum(_f32(2, 3), axis=2)),
    ("sum_repeated_axes", lambda m: m.np.sum(_f32(2, 3), axis=(0, 0))),
    ("mean_axis", lambda m: m.np.mean(_f32(2, 3), axis=-3)),
    ("max_empty", lambda m: m.np.max(_f32(0))),
    ("argmax_axis", lambda m: m.np.argmax(_f32(2, 3), axis=2)),
    ("argmax_empty", lambda m: m.np.argmax(_f32(0))),
    ("cumsum_axis", lambda m: m.np.cumsum(_f32(2, 3), axis=2)),
    ("sort_axis", lambda m: m.np.sort(_f32(2, 3), axis=2)),
    ("argsort_axis", lambda m: m.np.argsort(_f32(2, 3), axis=-3)),
    ("percentile_axis", lambda m: m.np.percentile(_f32(2, 3), 50, axis=3)),
    ("convolve_rank", lambda m: m.np.convolve(_f32(2, 2), _f32(2))),
    ("convolve_empty", lambda m: m.np.convolve(_f32(0), _f32(2))),
    ("searchsorted_rank", lambda m: m.np.searchsorted(_f32(2, 2), F32(1))),
    ("bincount_float", lambda m: m.np.bincount(_f32(3))),
    ("bitwise_float", lambda m: m.np.bitwise_and(_f32(3), _f32(3))),
    ("take_along_axis_float", lambda m: m.np.take_along_axis(_f32(3), _f32(3), axis=0)),
    ("take_float", lambda m: m.np.take(_f32(3), _f32(2))),
    ("take_axis", lambda m: m.np.take(_f32(3), _i32(2), axis=1)),
    # --- numpy: indexing
    ("index_too_many", lambda m: m.np.asarray(_f32(3))[0, 0]),
    ("index_float", lambda m: m.np.asarray(_f32(3))[1.0]),
    ("index_float_array", lambda m: m.np.asarray(_f32(3))[np.array([0.5])]),
    ("index_string", lambda m: m.np.asarray(_f32(3))["a"]),
    ("index_object", lambda m: m.np.asarray(_f32(3))[object()]),
    ("index_broadcast", lambda m: m.np.asarray(_f32(3, 4))[np.array([0, 1]), np.array([0, 1, 2])]),
    ("index_mask_shape", lambda m: m.np.asarray(_f32(3, 4))[np.ones(4, bool)]),
    ("index_two_ellipses", lambda m: m.np.asarray(_f32(3))[..., ...]),
    ("index_empty_axis", lambda m: m.np.asarray(_f32(0))[0]),
    ("index_traced_slice", lambda m: m.jit(lambda x, i: x[i:])(_f32(3), np.int32(1))),
    ("index_float_slice", lambda m: m.np.asarray(_f32(3))[0.5:]),
    ("index_zero_step", lambda m: m.np.asarray(_f32(3))[::0]),
    ("index_traced_mask", lambda m: m.jit(lambda x: x[x > 0])(_f32(3))),
    ("at_set_too_many", lambda m: m.np.asarray(_f32(3)).at[0, 0].set(1.0)),
    ("at_get_fill_value", lambda m: m.np.asarray(_f32(3)).at[0].get(mode="fill", fill_value=_f32(2))),
    ("at_get_mode", lambda m: m.np.asarray(_f32(3)).at[0].get(mode="bogus")),
    ("take_mode", lambda m: m.np.take(_f32(3), _i32(2), mode="promise_in_bounds")),
    ("take_empty_axis", lambda m: m.np.take(_f32(0), _i32(2))),
    ("take_along_axis_ranks", lambda m: m.np.take_along_axis(_f32(3, 2), _i32(3), axis=0)),
    ("put_along_axis_inplace", lambda m: m.np.put_along_axis(_f32(3), _i32(1), 1.0, axis=0)),
    # --- numpy.linalg
    ("inv_non_square", lambda m: m.linalg.inv(_f32(2, 3))),
    ("inv_1d", lambda m: m.linalg.inv(_f32(3))),
    ("det_1d", lambda m: m.linalg.det(_f32(3))),
    ("slogdet_non_square", lambda m: m.linalg.slogdet(_f32(2, 3))),
    ("cholesky_non_square", lambda m: m.linalg.cholesky(_f32(2, 3))),
    ("eigh_non_square", lambda m: m.linalg.eigh(_f32(2, 3))),
    ("eigvalsh_1d", lambda m: m.linalg.eigvalsh(_f32(3))),
    ("svd_1d", lambda m: m.linalg.svd(_f32(3))),
    ("qr_1d", lambda m: m.linalg.qr(_f32(3))),
    ("solve_shapes", lambda m: m.linalg.solve(_f32(2, 2), _f32(3))),
    ("solve_non_square", lambda m: m.linalg.solve(_f32(2, 3), _f32(2))),
    ("lstsq_shapes", lambda m: m.linalg.lstsq(_f32(3, 2), _f32(4))),
    ("matrix_power_non_square", lambda m: m.linalg.matrix_power(_f32(2, 3), 2)),
    ("matrix_power_float", lambda m: m.linalg.matrix_power(_f32(2, 2), 1.5)),
    ("pinv_1d", lambda m: m.linalg.pinv(_f32(3))),
    ("norm_ord", lambda m: m.linalg.norm(_f32(3), ord="fro")),
    ("norm_axis", lambda m: m.linalg.norm(_f32(2, 3), axis=(0, 1, 1))),
    ("eig_non_square", lambda m: m.linalg.eig(_f32(2, 3))),
    ("det_non_square", lambda m: m.linalg.det(_f32(2, 3))),
    ("cond_1d", lambda m: m.linalg.cond(_f32(3))),
    ("lstsq_1d", lambda m: m.linalg.lstsq(_f32(3), _f32(3))),
    ("svdvals_1d", lambda m: m.linalg.svdvals(_f32(3))),
    ("multi_dot_shapes", lambda m: m.linalg.multi_dot([_f32(2, 3), _f32(4, 2)])),
    ("triangular_solve_shapes", lambda m: m.scipy.linalg.solve_triangular(_f32(2, 2), _f32(3))),
    # --- lax: elementwise, shapes, slicing
    ("lax_add_dtypes", lambda m: m.lax.add(_i32(3), _f32(3))),
    ("lax_add_shapes", lambda m: m.lax.add(_f32(3), _f32(4))),
    ("lax_mul_ranks", lambda m: m.lax.mul(_f32(2, 3), _f32(3))),
    ("lax_sin_int", lambda m: m.lax.sin(_i32(3))),
    ("lax_bitwise_float", lambda m: m.lax.bitwise_and(_f32(3), _f32(3))),
    ("lax_shift_dtypes", lambda m: m.lax.shift_left(_i32(3), np.ones(3, np.uint32))),
    ("lax_dot_general_contract", lambda m: m.lax.dot_general(_f32(2, 3), _f32(4, 5), (((1,), (0,)), ((), ())))),
    ("lax_dot_general_batch", lambda m: m.lax.dot_general(_f32(2, 3, 4), _f32(3, 4, 5), (((2,), (1,)), ((0,), (0,))))),
    ("lax_dot_general_dims", lambda m: m.lax.dot_general(_f32(2, 3), _f32(3, 4), (((2,), (0,)), ((), ())))),
    ("lax_dot_ranks", lambda m: m.lax.dot(_f32(2, 3, 4), _f32(4, 5))),
    ("lax_reshape_size", lambda m: m.jit(lambda x: m.lax.reshape(x, (2, 2)))(_f32(3))),
    ("lax_reshape_dimensions", lambda m: m.lax.reshape(_f32(2, 3), (6,), dimensions=(0, 0))),
    ("lax_broadcast_in_dim", lambda m: m.lax.broadcast_in_dim(_f32(3), (2, 4), (1,))),
    ("lax_broadcast_in_dim_rank", lambda m: m.lax.broadcast_in_dim(_f32(2, 3), (3,), (0,))),
    ("lax_transpose", lambda m: m.lax.transpose(_f32(2, 3), (0, 0))),
    ("lax_squeeze", lambda m: m.lax.squeeze(_f32(2, 3), (0,))),
    ("lax_expand_dims", lambda m: m.lax.expand_dims(_f32(2), (3,))),
    ("lax_rev", lambda m: m.lax.rev(_f32(2), (1,))),
    ("lax_slice_bounds", lambda m: m.lax.slice(_f32(3), (0,), (5,))),
    ("lax_slice_rank", lambda m: m.lax.slice(_f32(3, 3), (0,), (2,))),
    ("lax_slice_strides", lambda m: m.lax.slice(_f32(3), (0,), (2,), (0,))),
    ("lax_dynamic_slice_count", lambda m: m.lax.dynamic_slice(_f32(3, 3), (0,), (1, 1))),
    ("lax_dynamic_slice_size", lambda m: m.lax.dynamic_slice(_f32(3), (0,), (4,))),
    ("lax_dynamic_slice_dtypes", lambda m: m.lax.dynamic_slice(_f32(3, 3), (np.int32(0), np.uint8(0)), (1, 1))),
    ("lax_dynamic_slice_float", lambda m: m.lax.dynamic_slice(_f32(3), (F32(0),), (1,))),
    ("lax_dynamic_update_slice", lambda m: m.lax.dynamic_update_slice(_f32(3), _f32(4), (0,))),
    ("lax_dynamic_update_slice_dtype", lambda m: m.lax.dynamic_update_slice(_f32(3), _i32(2), (0,))),
    ("lax_concatenate_shapes", lambda m: m.lax.concatenate([_f32(2, 3), _f32(2, 4)], 0)),
    ("lax_concatenate_dtypes", lambda m: m.lax.concatenate([_f32(2), _i32(2)], 0)),
    ("lax_concatenate_dimension", lambda m: m.lax.concatenate([_f32(2), _f32(2)], 1)),
    ("lax_concatenate_empty", lambda m: m.lax.concatenate([], 0)),
    ("lax_pad_config", lambda m: m.lax.pad(_f32(3), F32(0), [(1, 1, 0), (1, 1, 0)])),
    ("lax_pad_interior", lambda m: m.lax.pad(_f32(3), F32(0), [(1, 1, -1)])),
    ("lax_pad_value_dtype", lambda m: m.lax.pad(_f32(3), np.int32(0), [(1, 1, 0)])),
    ("lax_pad_value_shape", lambda m: m.lax.pad(_f32(3), _f32(1), [(1, 1, 0)])),
    ("lax_select_shapes", lambda m: m.lax.select(np.ones(3, bool), _f32(3), _f32(4))),
    ("lax_select_pred_dtype", lambda m: m.lax.select(_f32(3), _f32(3), _f32(3))),
    ("lax_select_dtypes", lambda m: m.lax.select(np.ones(3, bool), _f32(3), _i32(3))),
    ("lax_clamp_shapes", lambda m: m.lax.clamp(_f32(2), _f32(3), _f32(3))),
    ("lax_convert_bad_type", lambda m: m.lax.convert_element_type(_f32(3), "not-a-dtype")),
    ("lax_convert_object", lambda m: m.lax.convert_element_type(_f32(3), object)),
    ("lax_iota_shape", lambda m: m.lax.iota(np.int32, -1)),
    ("lax_full_shape", lambda m: m.lax.full((2,), _f32(2))),
    ("lax_reduce_sum_axes", lambda m: m.lax.reduce_sum(_f32(2, 3), (2,))),
    ("lax_reduce_max_axes", lambda m: m.lax.reduce_max(_f32(2, 3), (0, 0))),
    ("lax_argmax_axis", lambda m: m.lax.argmax(_f32(2, 3), 2, np.int32)),
    ("lax_argmax_index_dtype", lambda m: m.lax.argmax(_f32(2, 3), 0, np.float32)),
    ("lax_cumsum_axis", lambda m: m.lax.cumsum(_f32(2, 3), axis=2)),
    ("lax_sort_dimension", lambda m: m.lax.sort(_f32(2, 3), dimension=2)),
    ("lax_sort_shapes", lambda m: m.lax.sort((_f32(2, 3), _f32(3, 2)), num_keys=1)),
    ("lax_top_k", lambda m: m.lax.top_k(_f32(3), 5)),
    ("lax_gather_float_indices", lambda m: m.lax.gather(_f32(5), _f32(2, 1), m.lax.GatherDimensionNumbers(
        (), (0,), (0,)), (1,))),
    ("lax_gather_slice_sizes", lambda m: m.lax.gather(_f32(5, 3), _i32(2, 1), m.lax.GatherDimensionNumbers(
        (1,), (0,), (0,)), (1, 4))),
    ("lax_scatter_updates", lambda m: m.lax.scatter_add(_f32(5), _i32(2, 1), _f32(3), m.lax.ScatterDimensionNumbers(
        (), (0,), (0,)))),
    ("lax_scatter_dtypes", lambda m: m.lax.scatter(_f32(5), _i32(2, 1), _i32(2), m.lax.ScatterDimensionNumbers(
        (), (0,), (0,)))),
    ("lax_conv_features", lambda m: m.lax.conv(_f32(1, 2, 5, 5), _f32(3, 4, 2, 2), (1, 1), "SAME")),
    ("lax_conv_ranks", lambda m: m.lax.conv(_f32(1, 2, 5), _f32(3, 2, 2, 2), (1, 1), "SAME")),
    ("lax_conv_strides", lambda m: m.lax.conv(_f32(1, 2, 5, 5), _f32(3, 2, 2, 2), (1,), "SAME")),
    ("lax_conv_padding", lambda m: m.lax.conv(_f32(1, 2, 5, 5), _f32(3, 2, 2, 2), (1, 1), "BOGUS")),
    ("lax_conv_padding_count", lambda m: m.lax.conv(_f32(1, 2, 5, 5), _f32(3, 2, 2, 2), (1, 1), [(0, 0)])),
    ("lax_conv_dilation_count", lambda m: m.lax.conv_general_dilated(_f32(1, 2, 5, 5), _f32(3, 2, 2, 2), (1, 1),
                                                                      "SAME", rhs_dilation=(1,))),
    ("lax_reduce_window_dims", lambda m: m.lax.reduce_window(_f32(4), F32(0), m.lax.add, (2, 2), (1,), "VALID")),
    ("lax_linalg_cholesky", lambda m: m.lax.linalg.cholesky(_f32(2, 3))),
    # --- lax: control flow
    ("scan_carry_dtype", _scan_changes_carry_dtype),
    ("scan_carry_shape", lambda m: m.lax.scan(lambda c, x: (m.np.stack([c, c]), x), F32(0), _f32(3))),
    ("scan_lengths", lambda m: m.lax.scan(lambda c, x: (c, x[0]), F32(0), (_f32(3), _f32(4)))),
    ("scan_length_arg", lambda m: m.lax.scan(lambda c, x: (c, x), F32(0), _f32(3), length=4)),
    ("scan_no_length", lambda m: m.lax.scan(lambda c, x: (c, x), F32(0), None)),
    ("scan_body_output", lambda m: m.lax.scan(lambda c, x: c, F32(0), _f32(3))),
    ("cond_branch_types", lambda m: m.lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), _f32(2))),
    ("cond_branch_shapes", lambda m: m.lax.cond(True, lambda x: x, lambda x: x[:1], _f32(2))),
    ("cond_pred_shape", lambda m: m.lax.cond(np.array([True, False]), lambda x: x, lambda x: x, _f32(2))),
    ("switch_branch_types", lambda m: m.lax.switch(1, [lambda x: x, lambda x: x.astype(np.int32)], _f32(2))),
    ("switch_no_branches", lambda m: m.lax.switch(0, [], _f32(2))),
    ("while_carry_shape", _while_changes_carry_shape),
    ("while_carry_dtype", lambda m: m.lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, np.int32(0))),
    ("while_cond_shape", lambda m: m.lax.while_loop(lambda c: c < 3, lambda c: c + 1, _f32(2))),
    ("while_cond_dtype", lambda m: m.lax.while_loop(lambda c: c, lambda c: c - 1, F32(3))),
    ("fori_loop_carry", lambda m: m.lax.fori_loop(0, 3, lambda i, c: c.astype(np.int32), F32(0))),
    ("map_lengths", lambda m: m.lax.map(lambda x: x[0] + x[1], (_f32(3), _f32(4)))),
    # --- transformations
    ("jit_static_argnums_range", lambda m: m.jit(lambda x: x, static_argnums=3)(F32(1))),
    ("jit_static_unhashable", lambda m: m.jit(lambda x, n: x, static_argnums=1)(F32(1), [1])),
    ("jit_missing_argument", lambda m: m.jit(lambda x, y: x)(F32(1))),
    ("jit_string_argument", lambda m: m.jit(lambda x: x)("abc")),
    ("jit_bool_of_tracer", lambda m: m.jit(_if_positive)(F32(1))),
    ("jit_int_of_tracer", lambda m: m.jit(lambda x: int(x))(F32(1))),
    ("jit_float_of_tracer", lambda m: m.jit(lambda x: float(x))(F32(1))),
    ("jit_numpy_of_tracer", lambda m: m.jit(lambda x: np.asarray(x))(_f32(2))),
    ("jit_traced_shape", lambda m: m.jit(lambda n: m.np.zeros(n))(np.int32(2))),
    ("jit_traced_range", lambda m: m.jit(lambda n: list(range(n)))(np.int32(2))),
    ("jit_nonzero_no_size", lambda m: m.jit(lambda x: m.np.nonzero(x))(_f32(2))),
    ("grad_non_scalar", lambda m: m.grad(lambda x: x * 2)(_f32(3))),
    ("grad_integer_input", lambda m: m.grad(lambda x: x * 2)(np.int32(3))),
    ("grad_complex_output", lambda m: m.grad(lambda x: x * 1j)(F32(1))),
    ("grad_argnums_range", lambda m: m.grad(lambda x: x, argnums=2)(F32(1))),
    ("grad_has_aux_shape", lambda m: m.grad(lambda x: x, has_aux=True)(F32(1))),
    ("value_and_grad_non_scalar", lambda m: m.value_and_grad(lambda x: x)(_f32(2))),
    ("jvp_tangent_dtype", lambda m: m.jvp(lambda x: x, (F32(1),), (np.int32(1),))),
    ("jvp_tangent_shape", lambda m: m.jvp(lambda x: x, (_f32(2),), (_f32(3),))),
    ("jvp_structure", lambda m: m.jvp(lambda x: x, (F32(1),), (F32(1), F32(2)))),
    ("jvp_not_tuple", lambda m: m.jvp(lambda x: x, F32(1), F32(1))),
    ("vjp_cotangent_shape", lambda m: m.vjp(lambda x: x * 2, _f32(2))[1](_f32(3))),
    ("vmap_sizes", lambda m: m.vmap(lambda x, y: x + y)(_f32(3), _f32(4))),
    ("vmap_in_axes_range", lambda m: m.vmap(lambda x: x, in_axes=2)(_f32(3))),
    ("vmap_scalar", lambda m: m.vmap(lambda x: x)(F32(1))),
    ("vmap_in_axes_structure", lambda m: m.vmap(lambda x, y: x, in_axes=(0, 0, 0))(_f32(3), _f32(3))),
    ("vmap_out_axes_range", lambda m: m.vmap(lambda x: x, out_axes=3)(_f32(3))),
    ("vmap_no_batched_inputs", lambda m: m.vmap(lambda x: x, in_axes=None)(_f32(3))),
    ("vmap_axis_size", lambda m: m.vmap(lambda x: x, in_axes=0, axis_size=5)(_f32(3))),
    # --- random
    ("random_shape_negative", lambda m: m.random.normal(_key(m), (-1,))),
    ("random_not_a_key", lambda m: m.random.normal(_f32(2), (2,))),
    ("random_split_count", lambda m: m.random.split(_key(m), -1)),
    ("random_uniform_bounds", lambda m: m.random.uniform(_key(m), (2,), minval=_f32(3))),
    ("random_randint_float", lambda m: m.random.randint(_key(m), (2,), 0, 5, dtype=np.float32)),
    ("random_choice_too_many", lambda m: m.random.choice(_key(m), 3, (5,), replace=False)),
    ("random_choice_p", lambda m: m.random.choice(_key(m), 3, (2,), p=_f32(4))),
    ("random_categorical_axis", lambda m: m.random.categorical(_key(m), _f32(2, 3), axis=2)),
    ("random_normal_dtype", lambda m: m.random.normal(_key(m), (2,), dtype=np.int32)),
    ("random_permutation_axis", lambda m: m.random.permutation(_key(m), _f32(3), axis=1)),
    ("random_bernoulli_shape", lambda m: m.random.bernoulli(_key(m), _f32(3), (2,))),
    ("random_key_float", lambda m: m.random.key(1.5)),
    # --- nn
    ("nn_one_hot_float", lambda m: m.nn.one_hot(_f32(2), 3.5)),
    ("nn_softmax_axis", lambda m: m.nn.softmax(_f32(2, 3), axis=2)),
]

# jax's own exception classes and numax's classes of the same name.
_SAME_NAME = {
    jax.errors.ConcretizationTypeError: numax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError: numax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError: numax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError: numax.errors.TracerArrayConversionError,
    jax.errors.UnexpectedTracerError: numax.errors.UnexpectedTracerError,
    jax.errors.NonConcreteBooleanIndexError: xnp.NonConcreteBooleanIndexError,
}


# Calls jax rejects only by an accident of its implementation (a failure to lower, an internal zip or division):
# numax checks these on purpose and raises the class given here.
JAX_ACCIDENTS = {
    "tile_negative": TypeError,  # jax: MLIRError lowering a negative dimension
    "lax_reshape_size": TypeError,  # jax: ValueError from the StableHLO verifier (its shape rule says TypeError)
    "lax_slice_rank": TypeError,  # jax: ValueError from an internal safe_map
    "lax_slice_strides": TypeError,  # jax: ZeroDivisionError
    "lax_linalg_cholesky": ValueError,  # jax: TypeError adding the matrix to its transpose (symmetrize_input)
    "random_shape_negative": ValueError,  # jax: MLIRError lowering a negative dimension
    "random_split_count": ValueError,  # jax: MLIRError lowering a negative dimension
}


def _exception_of(call, namespace):
    try:
        call(namespace)
    except Exception as error:  # noqa: BLE001  (any class: the class is what is compared)
        return error
    return None


@pytest.mark.parametrize("name, call", BAD_CALLS, ids=[name for name, _ in BAD_CALLS])
def test_numax_raises_the_class_jax_raises(name, call):
    theirs = _exception_of(call, JAX)
    assert theirs is not None, f"{name}: jax accepts this call; the table wants calls jax rejects"
    ours = _exception_of(call, NUMAX)
    expected = JAX_ACCIDENTS.get(name) or _SAME_NAME.get(type(theirs), type(theirs))
    assert ours is not None, f"{name}: numax accepted a call jax rejects with {type(theirs).__name__}: {theirs}"
    assert isinstance(ours, expected), (
        f"{name}: numax raised {type(ours).__name__}: {ours}\n  jax raised {type(theirs).__name__}: {theirs}")
