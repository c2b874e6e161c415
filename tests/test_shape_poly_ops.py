"""Primitives beyond the MLP's under a symbolic batch: each family is exported once (several ops in one
function) with `symbolic_shape("b, 8")` and called at a few batch sizes against numpy."""

import numpy as np
import pytest
from numax.transforms.aot import ShapeDtypeStruct

import numax
import numax.numpy as jnp
from numax import export, lax
from numax.export import symbolic_shape
from tests.shape_poly_util import check_export

_F32 = np.float32
_BATCH_X = ShapeDtypeStruct(symbolic_shape("b, 8"), _F32)
_SCALAR_INDEX = ShapeDtypeStruct((), np.int32)


def _x_and_start(rng, size):
    return rng.normal(size=(size, 8)).astype(_F32), np.int32(rng.integers(-3, 9))


# --- slicing --------------------------------------------------------------------------------------------------
def _slicing(x, start):
    update = jnp.full((1, 3), 7.0, _F32)
    return (x[1:], x[:, 2:5], x[::2, 1::3], x[:, -3:], x[0], x[:, ::-1],
            lax.dynamic_slice(x, (start, start), (1, 3)),
            lax.dynamic_slice_in_dim(x, start, 3, axis=1),
            lax.dynamic_update_slice(x, update, (start, start)),
            lax.dynamic_index_in_dim(x, -1, axis=0, keepdims=False))


def _clamped(start, size, dimension):
    start = start + dimension if start < 0 else start
    return min(max(start, 0), dimension - size)


def _slicing_reference(x, start):
    rows, columns = _clamped(start, 1, x.shape[0]), _clamped(start, 3, 8)
    updated = x.copy()
    updated[rows, columns:columns + 3] = 7.0
    return (x[1:], x[:, 2:5], x[::2, 1::3], x[:, -3:], x[0], x[:, ::-1], x[rows:rows + 1, columns:columns + 3],
            x[:, columns:columns + 3], updated, x[-1])


def test_static_and_dynamic_slices_on_a_symbolic_batch():
    exported = check_export(_slicing, _slicing_reference, (_BATCH_X, _SCALAR_INDEX), _x_and_start)
    assert "real_dynamic_slice" in exported.mlir_module()
    assert exported.out_avals[0].shape == symbolic_shape("b - 1, 8")


def _x_only(rng, size):
    return (rng.normal(size=(size, 8)).astype(_F32),)


def _slice_loss_grad(x):
    return (numax.grad(lambda y: (y[1:] ** 2).sum() + y[::2, 2:5].sum()
                       + lax.dynamic_slice_in_dim(y, 2, 3, axis=1).sum())(x),)


def _slice_loss_grad_reference(x):
    grad = np.zeros_like(x)
    grad[1:] += 2 * x[1:]
    grad[::2, 2:5] += 1
    grad[:, 2:5] += 1
    return (grad,)


def test_gradient_through_slices_pads_with_symbolic_widths():
    exported = check_export(_slice_loss_grad, _slice_loss_grad_reference, (_BATCH_X,), _x_only)
    assert "dynamic_pad" in exported.mlir_module()


# --- index reductions, sorting, cumulative reductions, pad ----------------------------------------------------------
def _orderings(x):
    keys = jnp.round(x * 2)  # ties, so that stability and the second sort key matter
    return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.sort(x, axis=0), jnp.argsort(keys, axis=1),
            lax.sort((keys, x), dimension=0, num_keys=2), lax.top_k(x, 3),
            jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=1), lax.cummax(x, axis=1, reverse=True),
            lax.cumlogsumexp(x, axis=1), jnp.pad(x, ((1, 2), (0, 1))), lax.pad(x, 0.5, ((1, -1, 1), (2, 0, 0))))


def _orderings_reference(x):
    keys = np.round(x * 2)
    order = np.lexsort((x, keys), axis=0)
    top = np.argsort(-x, axis=1, kind="stable")[:, :3]
    interior = np.full((2 * x.shape[0] - 1, 10), 0.5, _F32)
    interior[::2, 2:] = x
    interior = np.concatenate([np.full((1, 10), 0.5, _F32), interior], axis=0)[:-1]
    return (x.argmax(1), x.argmin(0), np.sort(x, axis=0), np.argsort(keys, axis=1, kind="stable"),
            np.take_along_axis(keys, order, 0), np.take_along_axis(x, order, 0),
            np.take_along_axis(x, top, 1), top, np.cumsum(x, 1), np.cumprod(x, 1),
            np.maximum.accumulate(x[:, ::-1], 1)[:, ::-1], np.logaddexp.accumulate(x, 1),
            np.pad(x, ((1, 2), (0, 1))), interior)


def _flat_orderings(x):
    return numax.tree_util.tree_leaves(_orderings(x))


def test_index_reductions_sorts_cumulative_reductions_and_pad():
    check_export(_flat_orderings, _orderings_reference, (_BATCH_X,), _x_only)


def test_cumulative_reduction_along_the_symbolic_axis_raises():
    with pytest.raises(NotImplementedError, match="cumsum is not supported .* along a symbolic axis"):
        export.export(numax.jit(lambda x: jnp.cumsum(x, axis=0)))(_BATCH_X)


# --- gather and scatter ----------------------------------------------------------------------------------------------
_BATCH_LABELS = ShapeDtypeStruct(symbolic_shape("b"), np.int32)


def _x_and_labels(rng, size):
    return rng.normal(size=(size, 8)).astype(_F32), rng.integers(0, 8, size).astype(np.int32)


def _cross_entropy(logits, labels):
    picked = jnp.take_along_axis(numax.nn.log_softmax(logits), labels[:, None], axis=1)
    return -jnp.mean(picked)


def _indexed(x, labels):
    rows = jnp.argmin(x, axis=0)  # in bounds for every batch size
    accuracy = jnp.mean((jnp.argmax(x, axis=1) == labels).astype(_F32))
    return (x[rows], jnp.take_along_axis(x, labels[:, None], axis=1), x.at[0].set(1.0), x.at[0].add(2.0),
            numax.grad(_cross_entropy)(x, labels), accuracy)


def _indexed_reference(x, labels):
    rows = x.argmin(axis=0)
    shifted = np.exp(x - x.max(axis=1, keepdims=True))
    softmax = shifted / shifted.sum(axis=1, keepdims=True)
    one_hot = np.eye(8, dtype=_F32)[labels]
    set_row, add_row = x.copy(), x.copy()
    set_row[0] = 1.0
    add_row[0] += 2.0
    return (x[rows], np.take_along_axis(x, labels[:, None], axis=1), set_row, add_row,
            (softmax - one_hot) / x.shape[0], np.mean(x.argmax(axis=1) == labels))


def test_gathers_scatters_and_a_cross_entropy_gradient():
    check_export(_indexed, _indexed_reference, (_BATCH_X, _BATCH_LABELS), _x_and_labels)


# --- numpy corners: index-based pad modes, slices beside index arrays, a dimension used as a value --------------
_BATCH_LABELS_16 = ShapeDtypeStruct(symbolic_shape("b"), np.int16)
_COLUMNS = np.array([0, 3])


def _numpy_corners(x, labels):
    columns = jnp.asarray(_COLUMNS)
    return (jnp.pad(x, ((1, 2), (0, 1)), mode="edge"), jnp.pad(x, ((2, 1), (1, 1)), mode="reflect"),
            jnp.pad(x, ((1, 3), (0, 0)), mode="symmetric"), jnp.pad(x, ((2, 2), (0, 0)), mode="wrap"),
            x[:, columns], x[1:, columns], x[::2, jnp.array([1, 7])], x.at[:, 2].set(5.0),
            x.at[1:, columns].add(1.0), x.at[:, 4].get(), labels % x.shape[0], x.shape[0] - labels)


def _numpy_corners_reference(x, labels):
    set_column, added = x.copy(), x.copy()
    set_column[:, 2] = 5.0
    added[1:, _COLUMNS] += 1.0
    return (np.pad(x, ((1, 2), (0, 1)), mode="edge"), np.pad(x, ((2, 1), (1, 1)), mode="reflect"),
            np.pad(x, ((1, 3), (0, 0)), mode="symmetric"), np.pad(x, ((2, 2), (0, 0)), mode="wrap"),
            x[:, _COLUMNS], x[1:, _COLUMNS], x[::2, [1, 7]], set_column, added, x[:, 4],
            labels % x.shape[0], x.shape[0] - labels)


def _x_and_int16_labels(rng, size):
    return rng.normal(size=(size, 8)).astype(_F32), rng.integers(-20, 20, size).astype(np.int16)


def test_pad_modes_mixed_indexing_and_a_dimension_as_a_weak_int():
    exported = check_export(_numpy_corners, _numpy_corners_reference, (_BATCH_X, _BATCH_LABELS_16),
                            _x_and_int16_labels)
    assert exported.out_avals[1].shape == symbolic_shape("b + 3, 10")
    # A dimension promotes as a Python int does: the labels keep their dtype.
    assert [a.dtype for a in exported.out_avals[-2:]] == [np.int16, np.int16]
