"""Primitives beyond the MLP's under a symbolic batch: each family is exported once (several ops in one
function) with `symbolic_shape("b, 8")` and called at a few batch sizes against numpy."""

import numpy as np
from numax.transforms.aot import ShapeDtypeStruct

import numax
import numax.numpy as jnp
from numax import export, lax
from numax.export import symbolic_shape

_F32 = np.float32
_BATCH_X = ShapeDtypeStruct(symbolic_shape("b, 8"), _F32)
_SCALAR_INDEX = ShapeDtypeStruct((), np.int32)
_SIZES = (1, 2, 5)


def _check_export(fun, reference, specs, make_args, sizes=_SIZES, rtol=1e-5):
    """Exports `fun` once for `specs`, then compares its outputs with `reference` for each batch size."""
    exported = export.export(numax.jit(fun))(*specs)
    rng = np.random.default_rng(0)
    for size in sizes:
        args = make_args(rng, size)
        got, want = exported.call(*args), reference(*args)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert np.shape(g) == np.shape(w), (size, i)
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-5, err_msg=f"size {size}, output {i}")
    return exported


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
    exported = _check_export(_slicing, _slicing_reference, (_BATCH_X, _SCALAR_INDEX), _x_and_start)
    assert "real_dynamic_slice" in exported.mlir_module()
    assert exported.out_avals[0].shape == symbolic_shape("b - 1, 8")
