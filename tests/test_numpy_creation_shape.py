"""numax.numpy creation and shape functions against jax.numpy: values, dtypes, weak types, error messages."""

import functools

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close
from oracle import jit_table

import numax
import numax.numpy as xnp


def check_same(got, want, what=""):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            check_same(g, w, what)
        return
    assert isinstance(got, numax.Array), (what, type(got))
    # jax.numpy returns some results on numpy inputs as numpy arrays (never weakly typed).
    want_weak = getattr(want, "weak_type", False)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want_weak), (what, got, want)
    assert_close(got, np.asarray(want), scale=2)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5
V = np.array([0.0, 0.0, 1.5, -2.0, 0.0, 3.0, 0.0], np.float32)

CREATION = [
    ("zeros", lambda m: m.zeros((2, 3))), ("zeros_int", lambda m: m.zeros(3, dtype="int32")),
    ("zeros_str_dtype", lambda m: m.zeros((2,), "bfloat16")), ("ones_bool", lambda m: m.ones((2, 2), bool)),
    ("ones_float64", lambda m: m.ones(2, "float64")), ("empty", lambda m: m.empty((0, 3))),
    ("full", lambda m: m.full((2, 2), 3)), ("full_float", lambda m: m.full((2,), 1.5, dtype=np.float16)),
    ("full_array_fill", lambda m: m.full((2, 3), m.asarray([1, 2, 3]))),
    ("zeros_like", lambda m: m.zeros_like(X)), ("ones_like_dtype", lambda m: m.ones_like(X, dtype=np.int8)),
    ("full_like", lambda m: m.full_like(X, 7)), ("full_like_scalar", lambda m: m.full_like(2.0, 3)),
    ("arange", lambda m: m.arange(5)), ("arange_start_stop", lambda m: m.arange(2, 9, 3)),
    ("arange_float", lambda m: m.arange(0.5, 3.0, 0.5)), ("arange_negative_step", lambda m: m.arange(5, 0, -2)),
    ("arange_empty", lambda m: m.arange(3, 1)), ("arange_dtype", lambda m: m.arange(4, dtype=np.float16)),
    ("arange_float_stop", lambda m: m.arange(2.5)),
    ("linspace", lambda m: m.linspace(0, 1, 5)),
    ("linspace_no_endpoint", lambda m: m.linspace(0, 1, 4, endpoint=False)),
    ("linspace_one", lambda m: m.linspace(2, 3, 1)), ("linspace_zero", lambda m: m.linspace(2, 3, 0)),
    ("linspace_int_dtype", lambda m: m.linspace(0, 10, 6, dtype=np.int32)),
    ("linspace_retstep", lambda m: m.linspace(0, 1, 5, retstep=True)),
    ("linspace_arrays", lambda m: m.linspace(np.array([0.0, 1.0]), np.array([1.0, 3.0]), 3, axis=1)),
    ("logspace", lambda m: m.logspace(0, 2, 3)), ("geomspace", lambda m: m.geomspace(1, 100, 3)),
    ("eye", lambda m: m.eye(3)), ("eye_k", lambda m: m.eye(3, 4, k=1)), ("eye_negative_k", lambda m: m.eye(4, k=-2)),
    ("eye_dtype", lambda m: m.eye(2, dtype=np.int32)), ("identity", lambda m: m.identity(3, dtype=np.bool_)),
    ("tri", lambda m: m.tri(3, 4, k=1)), ("tril", lambda m: m.tril(X[0], k=-1)), ("triu", lambda m: m.triu(X, k=1)),
    ("meshgrid", lambda m: m.meshgrid(np.arange(3), np.arange(2.0))),
    ("meshgrid_ij", lambda m: m.meshgrid(np.arange(3), np.arange(2), indexing="ij")),
    ("array_nested", lambda m: m.array([[1, 2], [3, 4]])), ("array_float", lambda m: m.array([1.5, 2])),
    ("array_scalar", lambda m: m.array(2.5)), ("array_bool", lambda m: m.array([True, False])),
    ("array_of_arrays", lambda m: m.array([m.asarray([1.0, 2.0]), m.asarray([3.0, 4.0])])),
    ("array_mixed", lambda m: m.array([m.asarray(1.0), 2.0])),
    ("array_dtype", lambda m: m.array([1, 2], dtype=np.float16)), ("array_ndmin", lambda m: m.array(3, ndmin=2)),
    ("asarray_bf16", lambda m: m.asarray(np.array([1.5, 2.25], ml_dtypes.bfloat16))),
    ("asarray_f64", lambda m: m.asarray(np.array([1.5, 2.25]))),
    ("asarray_int64", lambda m: m.asarray(np.array([1, 2], np.int64))),
    ("diag_indices_from", lambda m: m.diag_indices_from(np.ones((3, 3)))),
    *[(f"diag_1d_k{k}", lambda m, k=k: m.diag(np.arange(1.0, 4.0), k)) for k in (-2, 0, 1, 3)],
    ("diag_2d_k1", lambda m: m.diag(X[0], 1)),
    ("vander", lambda m: m.vander(np.array([1.0, 2.0, 3.0]), 4)),
    ("vander_increasing", lambda m: m.vander(np.array([1, 2, 3]), increasing=True)),
]


# jax.numpy computes these from their values (an output shape that depends on them): not under jit.
VALUE_DEPENDENT = ("trim_zeros", "trim_zeros_f")


@functools.cache
def _jnp_results(table):
    """jax.numpy's result of every entry of CREATION or SHAPE, from one jax.jit program (the same types, weak
    types and values as eagerly) but for the value-dependent ones, computed eagerly."""
    entries = {"creation": CREATION, "shape": SHAPE}[table]
    jittable = [(name, fn) for name, fn in entries if name not in VALUE_DEPENDENT]
    results = jit_table([name for name, _ in jittable], [functools.partial(fn, jnp) for _, fn in jittable],
                        [()] * len(jittable))
    return results | {name: fn(jnp) for name, fn in entries if name in VALUE_DEPENDENT}


@pytest.mark.parametrize("name, fn", CREATION, ids=[c[0] for c in CREATION])
def test_creation_matches_jnp(name, fn):
    check_same(fn(xnp), _jnp_results("creation")[name], name)


def test_empty_like_matches_jnp_in_shape_and_dtype():
    # empty's values are unspecified (jax on a GPU returns whatever the buffer held): compare types only.
    got, want = xnp.empty_like(X, shape=(3,)), jnp.empty_like(X, shape=(3,))
    assert isinstance(got, numax.Array)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


SHAPE = [
    ("reshape", lambda m: m.reshape(X, (6, -1))), ("reshape_F", lambda m: m.reshape(X, (4, 6), order="F")),
    ("ravel", lambda m: m.ravel(X)), ("transpose", lambda m: m.transpose(X)),
    ("transpose_axes", lambda m: m.transpose(X, (1, 0, 2))), ("permute_dims", lambda m: m.permute_dims(X, (2, 0, 1))),
    ("matrix_transpose", lambda m: m.matrix_transpose(X)), ("swapaxes", lambda m: m.swapaxes(X, 0, -1)),
    ("moveaxis", lambda m: m.moveaxis(X, 0, -1)), ("moveaxis_many", lambda m: m.moveaxis(X, (0, 1), (2, 0))),
    ("rollaxis", lambda m: m.rollaxis(X, 2)), ("expand_dims", lambda m: m.expand_dims(X, (0, -1))),
    ("squeeze", lambda m: m.squeeze(np.ones((1, 3, 1)))), ("squeeze_axis", lambda m: m.squeeze(np.ones((1, 3, 1)), 2)),
    ("concatenate", lambda m: m.concatenate([X, X], axis=1)),
    ("concatenate_none", lambda m: m.concatenate([X, V], None)),
    ("concatenate_promote", lambda m: m.concatenate([np.ones(2, np.int32), np.ones(2, np.float16)])),
    ("concat", lambda m: m.concat([V, V])), ("stack", lambda m: m.stack([V, V], axis=1)),
    ("stack_scalars", lambda m: m.stack([1.0, 2.0])), ("hstack", lambda m: m.hstack([V, V])),
    ("vstack", lambda m: m.vstack([V, V])), ("dstack", lambda m: m.dstack([X, X])),
    ("column_stack", lambda m: m.column_stack([V, V])), ("atleast_1d", lambda m: m.atleast_1d(2.0)),
    ("atleast_2d", lambda m: m.atleast_2d(V)), ("atleast_3d", lambda m: m.atleast_3d(V)),
    ("split", lambda m: m.split(X, 2)), ("split_indices", lambda m: m.split(X, [1, 3], axis=2)),
    ("array_split", lambda m: m.array_split(V, 3)), ("hsplit", lambda m: m.hsplit(X, [1])),
    ("vsplit", lambda m: m.vsplit(X, 2)), ("dsplit", lambda m: m.dsplit(X, 2)),
    ("broadcast_to", lambda m: m.broadcast_to(V, (2, 7))), ("broadcast_arrays", lambda m: m.broadcast_arrays(V, 1.0)),
    ("tile", lambda m: m.tile(V, (2, 2))), ("repeat", lambda m: m.repeat(X, 2, axis=1)),
    ("repeat_list", lambda m: m.repeat(V, np.array([1, 0, 2, 1, 0, 1, 3]))), ("flip", lambda m: m.flip(X, (0, 2))),
    ("fliplr", lambda m: m.fliplr(X)), ("flipud", lambda m: m.flipud(X)), ("rot90", lambda m: m.rot90(X[0], 3)),
    ("roll", lambda m: m.roll(X, 2, axis=2)), ("roll_flat", lambda m: m.roll(X, -5)),
    ("roll_many", lambda m: m.roll(X, (1, -1), (0, 1))), ("resize", lambda m: m.resize(V, (3, 4))),
    ("append", lambda m: m.append(X, X, axis=0)), ("append_flat", lambda m: m.append(V, 3)),
    ("delete", lambda m: m.delete(X, np.array([0, 2]), axis=2)), ("delete_flat", lambda m: m.delete(V, 1)),
    ("insert", lambda m: m.insert(X[0], 1, 9.0, axis=1)),
    ("insert_many", lambda m: m.insert(V, np.array([1, 3]), np.array([5.0, 6.0]))),
    ("trim_zeros", lambda m: m.trim_zeros(V)), ("trim_zeros_f", lambda m: m.trim_zeros(V, "f")),
    ("polyval", lambda m: m.polyval(np.array([1.0, -2.0, 3.0]), V)),
]


@pytest.mark.parametrize("name, fn", SHAPE, ids=[s[0] for s in SHAPE])
def test_shape_matches_jnp(name, fn):
    check_same(fn(xnp), _jnp_results("shape")[name], name)


def test_shape_functions_under_jit():
    names = [name for name, _ in SHAPE if name not in ("repeat_list", "trim_zeros", "trim_zeros_f", "delete",
                                                       "delete_flat", "insert", "insert_many")]
    got = numax.jit(lambda: [fn(xnp) for name, fn in SHAPE if name in names])()
    for g, name in zip(got, names, strict=True):
        check_same(g, _jnp_results("shape")[name], name)


def test_shape_queries_and_methods():
    a, ja = xnp.asarray(X), jnp.asarray(X)
    assert xnp.shape(X) == (2, 3, 4) and xnp.ndim(X) == 3 and xnp.size(X) == 24 and xnp.size(X, 1) == 3
    check_same(a.T, ja.T)
    check_same(a.reshape(4, 6), ja.reshape(4, 6))
    check_same(a.reshape((4, -1)), ja.reshape((4, -1)))
    check_same(a.transpose(2, 0, 1), ja.transpose(2, 0, 1))
    check_same(a.astype(np.int32), ja.astype(np.int32))
    check_same(a.astype("bfloat16"), ja.astype("bfloat16"))
    check_same(a.flatten(), ja.flatten())
    check_same(a.squeeze(), ja.squeeze())
    check_same(a.swapaxes(0, 1), ja.swapaxes(0, 1))
    check_same(a.mT, ja.mT)
    check_same(a.clip(-1, 3), ja.clip(-1, 3))
    check_same(a.copy(), ja.copy())
    check_same(xnp.float32(3), jnp.float32(3))
    check_same(xnp.int8(-2), jnp.int8(-2))
    assert np.dtype(xnp.bfloat16) == ml_dtypes.bfloat16 and xnp.float16 == np.float16


@pytest.mark.parametrize("fn, error, message", [
    (lambda: xnp.reshape(X, (5, 5)), TypeError, "cannot reshape array of size 24"),  # (jax's classes)
    (lambda: xnp.reshape(X, (-1, -1)), TypeError, "only specify one unknown dimension"),
    (lambda: xnp.concatenate([X, V]), TypeError, "different numbers of dimensions"),
    (lambda: xnp.concatenate([]), ValueError, "at least one array"),
    (lambda: xnp.stack([V, X]), ValueError, "same shape"),
    (lambda: xnp.split(V, 2), ValueError, "equal division"),
    (lambda: xnp.broadcast_to(X, (3, 4)), ValueError, "cannot broadcast"),
    (lambda: xnp.squeeze(X, 0), ValueError, "cannot select an axis to squeeze"),
    (lambda: xnp.transpose(X, (0, 1)), TypeError, "not a permutation"),
    (lambda: xnp.linspace(0, 1, -1), ValueError, "must be non-negative"),
    (lambda: xnp.delete(V, 9), IndexError, "out of bounds"),
    (lambda: xnp.array([object()]), TypeError, "Python objects"),
    (lambda: numax.jit(lambda n: xnp.arange(n))(3), Exception, "concrete"),
])
def test_errors(fn, error, message):
    with pytest.raises(error, match=message):
        fn()
