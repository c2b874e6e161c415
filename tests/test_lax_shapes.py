"""Shape primitives against jax.lax: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev,
concatenate, pad, iota, broadcasted_iota, full and slice, eagerly and under jit, incl. empty shapes."""

import ml_dtypes
import numpy as np
import pytest
from harness import rand
from jax import lax as jlax

import numax
from numax import lax

DTYPES = [np.float32, np.int32, np.bool_, ml_dtypes.bfloat16, np.uint8, np.complex64]

# (name, numax fn, jax fn, operand shapes): the functions take the operands as positional arguments.
CASES = [
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
     lambda x: jlax.broadcast_in_dim(x, (2, 3, 4), (0, 2)), [(2, 4)]),
    ("broadcast_in_dim_size1", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     lambda x: jlax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), [(1, 4)]),
    ("broadcast_in_dim_scalar", lambda x: lax.broadcast_in_dim(x, (3, 0), ()),
     lambda x: jlax.broadcast_in_dim(x, (3, 0), ()), [()]),
    ("broadcast", lambda x: lax.broadcast(x, (2,)), lambda x: jlax.broadcast(x, (2,)), [(3,)]),
    ("reshape", lambda x: lax.reshape(x, (3, 4)), lambda x: jlax.reshape(x, (3, 4)), [(2, 6)]),
    ("reshape_dimensions", lambda x: lax.reshape(x, (6, 2), (1, 0)),
     lambda x: jlax.reshape(x, (6, 2), (1, 0)), [(2, 6)]),
    ("reshape_empty", lambda x: lax.reshape(x, (0, 5)), lambda x: jlax.reshape(x, (0, 5)), [(5, 0)]),
    ("reshape_scalar", lambda x: lax.reshape(x, ()), lambda x: jlax.reshape(x, ()), [(1, 1)]),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), lambda x: jlax.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("transpose_empty", lambda x: lax.transpose(x, (1, 0)), lambda x: jlax.transpose(x, (1, 0)), [(0, 3)]),
    ("squeeze", lambda x: lax.squeeze(x, (0, 2)), lambda x: jlax.squeeze(x, (0, 2)), [(1, 3, 1)]),
    ("squeeze_negative", lambda x: lax.squeeze(x, (-1,)), lambda x: jlax.squeeze(x, (-1,)), [(3, 1)]),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, 3)), lambda x: jlax.expand_dims(x, (0, 3)), [(2, 3)]),
    ("expand_dims_negative", lambda x: lax.expand_dims(x, (-1,)), lambda x: jlax.expand_dims(x, (-1,)), [(2,)]),
    ("rev", lambda x: lax.rev(x, (0, 2)), lambda x: jlax.rev(x, (0, 2)), [(2, 3, 4)]),
    ("rev_empty", lambda x: lax.rev(x, (0,)), lambda x: jlax.rev(x, (0,)), [(0, 2)]),
    ("concatenate", lambda a, b, c: lax.concatenate([a, b, c], 1),
     lambda a, b, c: jlax.concatenate([a, b, c], 1), [(2, 1), (2, 3), (2, 0)]),
    ("concatenate_one", lambda a: lax.concatenate([a], 0), lambda a: jlax.concatenate([a], 0), [(3,)]),
    ("pad", lambda x: lax.pad(x, np.zeros((), x.dtype), ((1, 2, 0), (0, 1, 1))),
     lambda x: jlax.pad(x, np.zeros((), x.dtype), ((1, 2, 0), (0, 1, 1))), [(2, 3)]),
    ("pad_negative", lambda x: lax.pad(x, np.ones((), x.dtype), ((-1, 1, 0), (2, -2, 2))),
     lambda x: jlax.pad(x, np.ones((), x.dtype), ((-1, 1, 0), (2, -2, 2))), [(3, 4)]),
    ("pad_interior_negative", lambda x: lax.pad(x, np.zeros((), x.dtype), ((-3, -1, 2),)),
     lambda x: jlax.pad(x, np.zeros((), x.dtype), ((-3, -1, 2),)), [(4,)]),
    ("pad_empty", lambda x: lax.pad(x, np.zeros((), x.dtype), ((1, 1, 3),)),
     lambda x: jlax.pad(x, np.zeros((), x.dtype), ((1, 1, 3),)), [(0,)]),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 4), (1, 2)),
     lambda x: jlax.slice(x, (1, 0), (3, 4), (1, 2)), [(3, 5)]),
    ("slice_empty", lambda x: lax.slice(x, (2, 0), (2, 5)), lambda x: jlax.slice(x, (2, 0), (2, 5)), [(3, 5)]),
    ("slice_in_dim", lambda x: lax.slice_in_dim(x, 1, -1, 2, axis=1),
     lambda x: jlax.slice_in_dim(x, 1, -1, 2, axis=1), [(2, 7)]),
    ("index_in_dim", lambda x: lax.index_in_dim(x, -1, 0, keepdims=False),
     lambda x: jlax.index_in_dim(x, -1, 0, keepdims=False), [(3, 2)]),
]


@pytest.mark.parametrize("name, fn, jax_fn, shapes", CASES, ids=[c[0] for c in CASES])
def test_shape_op_matches_jax(rng, name, fn, jax_fn, shapes):
    dtypes = DTYPES if name in ("transpose", "pad", "concatenate") else DTYPES[:2]
    for dtype in dtypes:
        args = [rand(rng, s, dtype) for s in shapes]
        want = jax_fn(*args)
        for f in (fn, numax.jit(fn)):
            got = f(*args)
            assert isinstance(got, numax.Array)
            assert (got.shape, got.dtype) == (want.shape, want.dtype), (name, dtype)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_shape_ops_keep_weak_types():
    weak = numax.numpy.asarray(2.0)
    assert weak.weak_type
    for fn in (lambda x: lax.broadcast_in_dim(x, (2,), ()), lambda x: lax.reshape(x, (1,)),
               lambda x: lax.expand_dims(x, (0,)), lambda x: lax.pad(lax.reshape(x, (1,)), 0.0, ((1, 1, 0),))):
        assert fn(weak).weak_type
    assert lax.concatenate([lax.reshape(weak, (1,)), lax.reshape(weak, (1,))], 0).weak_type


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, ml_dtypes.bfloat16, np.int8])
def test_iota_and_broadcasted_iota(dtype):
    for fn, jax_fn in [
        (lambda: lax.iota(dtype, 7), lambda: jlax.iota(dtype, 7)),
        (lambda: lax.iota(dtype, 0), lambda: jlax.iota(dtype, 0)),
        (lambda: lax.broadcasted_iota(dtype, (2, 3, 4), 1), lambda: jlax.broadcasted_iota(dtype, (2, 3, 4), 1)),
        (lambda: lax.broadcasted_iota(dtype, (3, 0), 0), lambda: jlax.broadcasted_iota(dtype, (3, 0), 0)),
    ]:
        want = jax_fn()
        for got in (fn(), numax.jit(fn)()):
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("shape, value, dtype", [
    ((2, 3), 1.5, None), ((2, 3), 2, None), ((), 7, np.int8), ((0, 2), 1.0, np.float32), ((3,), True, None),
    ((2,), np.float16(3), None), ((2, 2), 3, ml_dtypes.bfloat16), ((1,), 1 + 2j, None),
])
def test_full(shape, value, dtype):
    want = jlax.full(shape, value, dtype)
    for got in (lax.full(shape, value, dtype), numax.jit(lambda: lax.full(shape, value, dtype))()):
        assert isinstance(got, numax.Array)
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    like = lax.full_like(np.zeros((2, 1), np.int16), 4)
    assert (like.shape, like.dtype) == ((2, 1), np.int16)


@pytest.mark.parametrize("fn, message", [
    (lambda: lax.broadcast_in_dim(np.ones(3), (2, 4), (1,)), "cannot broadcast"),
    (lambda: lax.broadcast_in_dim(np.ones((2, 3)), (2, 3), (1, 0)), "strictly increasing"),
    (lambda: lax.broadcast_in_dim(np.ones(3), (3,), ()), "needs 1 broadcast_dimensions"),
    (lambda: lax.reshape(np.ones((2, 3)), (4, 2)), "reshape total size must be unchanged"),
    (lambda: lax.reshape(np.ones((2, 3)), (3, 2), (0, 0)), "not a permutation"),
    (lambda: lax.transpose(np.ones((2, 3)), (0, 0)), "not a permutation"),
    (lambda: lax.squeeze(np.ones((2, 3)), (0,)), "cannot remove dimension 0"),
    (lambda: lax.rev(np.ones((2, 3)), (2,)), "rev dimensions"),
    (lambda: lax.concatenate([np.ones((2, 3)), np.ones((3, 3))], 1), "must match except in dimension 1"),
    (lambda: lax.concatenate([np.ones(2, np.float32), np.ones(2, np.int32)], 0), "same dtype"),
    (lambda: lax.concatenate([np.ones(2), np.ones(2)], 1), "out of range"),
    (lambda: lax.pad(np.ones(3, np.float32), np.float32(0), ((1, 1, -1),)), "interior padding must be non-negative"),
    (lambda: lax.pad(np.ones(3, np.float32), np.float32(0), ((-3, -1, 0),)), "negative dimension"),
    (lambda: lax.pad(np.ones(3, np.float32), np.float32(0), ((1, 1, 0), (0, 0, 0))), "padding_config has 2"),
    (lambda: lax.pad(np.ones(3, np.float32), np.zeros(1, np.float32), ((1, 1, 0),)), "must be a scalar"),
    (lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), "iota dimension 2 is out of range"),
    (lambda: lax.slice(np.ones((3,)), (2,), (1,)), "slice: invalid start"),
    (lambda: lax.full((2,), np.ones(2)), "fill_value must be a scalar"),
])
def test_errors(fn, message):
    with pytest.raises((TypeError, ValueError), match=message):
        fn()
