"""numax.numpy's index tricks (mgrid, ogrid, r_, c_, s_, index_exp), assorted functions (diagflat, fill_diagonal,
put, place, copy, fabs, spacing, bitwise_count, packbits/unpackbits, matvec/vecmat, broadcast_shapes, host input,
print options, dtype aliases), i0 and the window functions, against numpy and jax.numpy."""

import io

import numpy as np
import pytest
import scipy.special
from harness import jax, jnp, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import dtypes

import numax
import numax.numpy as xnp
from numax.test_util import check_grads


def weak_type(x):
    return x.aval.weak_type if hasattr(x, "aval") else x.weak_type


def jitted(thunk):
    return numax.jit(thunk)()


def assert_like_jax(actual, jax_thunk, expected=None, rtol=0.0, struct=None):
    """Same dtype, weak type and shape as `jax_thunk()` (found by jax.eval_shape: nothing compiled), and values
    equal (or close) to `expected` (default: jax's own values, computed only then). Lists compare entrywise."""
    struct = jax.eval_shape(jax_thunk) if struct is None else struct
    if isinstance(struct, (list, tuple)):
        assert isinstance(actual, list) and len(actual) == len(struct), (actual, struct)
        expected = jax_thunk() if expected is None else expected
        for a, e, st_ in zip(actual, expected, struct):
            assert_like_jax(a, None, e, rtol, st_)
        return
    assert isinstance(actual, (numax.Array, numax.core.trace.Tracer)), type(actual)
    actual_np = np.asarray(actual)
    assert actual_np.dtype == struct.dtype, (actual_np.dtype, struct.dtype)
    assert actual_np.shape == struct.shape, (actual_np.shape, struct.shape)
    assert weak_type(actual) == struct.weak_type, (weak_type(actual), struct.weak_type)
    expected_np = np.asarray(jax_thunk() if expected is None else expected)
    if np.iscomplexobj(expected_np) and not np.iscomplexobj(actual_np):
        assert not np.any(expected_np.imag)
        expected_np = expected_np.real
    if rtol:
        wide = np.complex128 if np.iscomplexobj(actual_np) else np.float64
        np.testing.assert_allclose(actual_np.astype(wide), expected_np.astype(wide), rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(actual_np, expected_np.astype(actual_np.dtype))


def check_cases(cases, eager=1, rtol=0.0):
    """`cases`: (numax thunk, jax thunk, expected values or None for jax's). The first `eager` run eagerly, the
    rest together in one numax.jit program (one compile instead of one per primitive and shape)."""
    staged = numax.jit(lambda: [case[0]() for case in cases[eager:]])() if len(cases) > eager else []
    results = [case[0]() for case in cases[:eager]] + list(staged)
    for (_, jax_thunk, expected), actual in zip(cases, results):
        assert_like_jax(actual, jax_thunk, expected, rtol)


# --- index tricks ---------------------------------------------------------------------------------------------

grid_keys = [
    np.s_[0:5], np.s_[0:5:0.5], np.s_[0:1:4j], np.s_[5:0:-1], np.s_[3:-2:-0.75], np.s_[:0], np.s_[2:2],
    np.s_[1:2:1j], np.s_[:2, :3], np.s_[0:1:5j, 0:3], np.s_[-1:1:0.25, 2:0:-1], np.s_[()], np.s_[0:2, 0:1:3j, 4:6],
]


@pytest.mark.parametrize("name", ["mgrid", "ogrid"])
def test_grids_match_numpy_and_jax(name):
    grid = getattr(xnp, name)
    check_cases([(lambda key=key: grid[key], lambda key=key: getattr(jnp, name)[key], getattr(np, name)[key])
                 for key in grid_keys], eager=3, rtol=1e-6)


@given(start=st.integers(-6, 6), stop=st.integers(-6, 6), step=st.sampled_from([1, 2, -1, -3, 0.5, -0.25, 4j, 1j]))
def test_mgrid_slices_match_numpy(start, stop, step):
    expected = np.mgrid[start:stop:step]
    actual = jitted(lambda: xnp.mgrid[start:stop:step])
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-6)
    assert np.asarray(actual).dtype == (np.int32 if expected.dtype == np.int64 else np.float32)


def test_grids_under_jit_with_traced_values():
    @numax.jit
    def f(x):
        return xnp.mgrid[0:3, 0:1:4j] * x, xnp.ogrid[0:2, 0:3][1] + x

    dense, sparse = f(2.0)
    np.testing.assert_allclose(np.asarray(dense), np.mgrid[0:3, 0:1:4j] * 2, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(sparse), np.ogrid[0:2, 0:3][1] + 2)


concat_keys = [
    np.s_[1:3, 5, [7, 8]], np.s_[1.5, 2], np.s_[3], np.s_[-1:1:6j, 0, [1, 2, 3]], np.s_["0,2", [1, 2, 3], [4, 5, 6]],
    np.s_["0,2,0", [1, 2, 3], [4, 5, 6]], np.s_["0,2,-2", [1, 2, 3], [4, 5, 6]], np.s_["1,3", [1, 2], [3, 4]],
    np.s_["0,2,1,5", [1, 2], [3, 4]], np.s_["r", [1, 2, 3], [4, 5, 6]], np.s_["c", [1, 2, 3], [4, 5, 6]],
    np.s_["-1", np.ones((2, 2)), np.zeros((2, 1))], np.s_[np.ones((2, 3)), np.zeros((1, 3), np.int32)],
    np.s_[np.float32(1), 2], np.s_[np.array([1, 2], np.int8), 3], np.s_[np.array([1, 2], np.uint8), np.array([3.5])],
    np.s_[[1, 2], [3, 4]], np.s_[1:3, 5:7], np.s_["0,2,-1", [1, 2, 3], [4, 5, 6]],
    np.s_[np.zeros((0,)), [1.0]], np.s_[np.array([True, False]), np.array([True])],
]


@pytest.mark.parametrize("name", ["r_", "c_"])
def test_concatenators_match_numpy_and_jax(name):
    concat = getattr(xnp, name)
    cases = []
    for key in concat_keys:
        directive = key[0] if isinstance(key, tuple) and isinstance(key[0], str) else ""
        if directive in ("r", "c") or directive.count(",") >= 3:
            expected = None  # numpy makes np.matrix for "r"/"c", and reads a fourth field that JAX ignores
        else:
            try:
                expected = getattr(np, name)[key]
            except ValueError:
                # Mismatched pieces: a TypeError, as JAX's concatenate raises.
                # (Both traced only: the error comes before anything is compiled.)
                with pytest.raises(TypeError):
                    jax.eval_shape(lambda key=key: getattr(jnp, name)[key])
                with pytest.raises(TypeError, match="dimension"):
                    jitted(lambda key=key: concat[key])
                continue
        cases.append((lambda key=key: concat[key], lambda key=key: getattr(jnp, name)[key], expected))
    check_cases(cases, eager=2, rtol=1e-6)
    assert len(getattr(xnp, name)) == 0


def test_concatenators_with_traced_items():
    f = numax.jit(lambda x, y: (xnp.r_[x, 0:2, y], xnp.c_[x, y]))
    x, y = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)
    rows, cols = f(x, y)
    assert_like_jax(rows, lambda: jnp.r_[x, 0:2, y], np.r_[x, 0:2, y])
    assert_like_jax(cols, lambda: jnp.c_[x, y], np.c_[x, y])


def test_index_tricks_errors():
    with pytest.raises(ValueError, match="could not understand directive 'a,b'"):
        xnp.r_["a,b", [1, 2]]
    with pytest.raises(ValueError, match="string directive must be placed at the beginning"):
        xnp.r_[[1, 2], "r"]
    with pytest.raises(TypeError, match="indexed by slices"):
        xnp.mgrid[0:2, 3]
    with pytest.raises(numax.ConcretizationTypeError, match="slice stop of numax.numpy.mgrid"):
        numax.jit(lambda n: xnp.mgrid[0:n])(3)
    with pytest.raises(numax.ConcretizationTypeError, match="slice start of numax.numpy.r_"):
        numax.jit(lambda n: xnp.r_[n:4])(1)


def test_slice_helpers_are_numpys():
    assert xnp.s_[1:2, ..., None] == (slice(1, 2), Ellipsis, None)
    assert xnp.index_exp[3] == (3,) and xnp.s_[3] == 3
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(xnp.asarray(x)[xnp.s_[::2, 1:]]), x[::2, 1:])


# --- diagonals, put, place, copy ---------------------------------------------------------------------------

def test_diagflat_matches_numpy_and_jax(rng):
    cases = [((3, 4), 1, np.float32), ((2,), -2, np.int32), ((2, 2), 3, np.bool_), ((0,), 1, np.float32),
             ((5,), 0, dtypes.bfloat16), ((3,), -1, np.complex64), ((), 2, np.int32)]
    values = [(rand(rng, shape, dtype), k) for shape, k, dtype in cases]
    check_cases([(lambda v=v, k=k: xnp.diagflat(v, k), lambda v=v, k=k: jnp.diagflat(v, k), np.diagflat(v, k))
                 for v, k in values])
    assert_like_jax(xnp.diagflat(3), lambda: jnp.diagflat(3), [[3]])


fill_cases = [((3, 4), np.float32, 5.0), ((4, 3), np.int32, np.array([1, 2])), ((3, 3, 3), np.float32, np.arange(5.0)),
              ((2, 2), np.float32, np.arange(5)), ((2, 5), dtypes.bfloat16, np.array([[1.5, 2.5]])),
              ((0, 3), np.int32, 7), ((3, 3), np.bool_, True)]


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")  # jax, for bfloat16 arrays
def test_fill_diagonal_matches_numpy_and_jax(rng):
    cases = []
    for shape, dtype, val in fill_cases:
        a = rand(rng, shape, dtype)
        expected = a.copy()
        np.fill_diagonal(expected, np.asarray(val).astype(dtype))
        cases.append((lambda a=a, val=val: xnp.fill_diagonal(a, val, inplace=False),
                      lambda a=a, val=val: jnp.fill_diagonal(a, val, inplace=False), expected))
    check_cases(cases)
    a = rand(rng, (3, 3), np.float32)
    with pytest.raises(NotImplementedError, match="must use inplace=False"):
        xnp.fill_diagonal(a, 1.0)
    with pytest.raises(NotImplementedError, match="wrap=True is not implemented"):
        xnp.fill_diagonal(a, 1.0, wrap=True, inplace=False)
    with pytest.raises(ValueError, match="array must be at least 2-d"):
        xnp.fill_diagonal(np.zeros(3), 1.0, inplace=False)
    with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
        xnp.fill_diagonal(np.zeros((2, 2, 3)), 1.0, inplace=False)


def _numpy_put(a, ind, v, mode):
    """JAX's put in numpy: mode None counts negative indices from the end and clips the rest."""
    out, ind = a.copy(), np.asarray(ind).ravel()
    if not out.size or not ind.size or not np.size(v):
        return out
    if mode is None:
        ind = np.clip(np.where(ind < 0, ind + out.size, ind), 0, out.size - 1)
    np.put(out, ind, np.asarray(v).astype(a.dtype), mode=mode or "raise")
    return out


@pytest.mark.parametrize("mode", [None, "clip", "wrap"])
def test_put_matches_numpy_and_jax(mode, rng):
    # Repeated (wrapped or clipped) indices only on the CPU: which update wins is XLA's choice, not a fixed one
    # on GPUs.
    repeated = np.array([-1, 7, -7, 2]) if numax.default_backend() == "cpu" else np.array([0, 1, 2, 3])
    cases = [((2, 3), np.float32, repeated, np.array([1.0, 2.0, 3.0])),
             ((5,), np.int32, np.array([[0, 4], [2, 9]]), 8), ((4,), np.float32, np.array([1, 2, 3]), np.arange(5.0)),
             ((0,), np.float32, np.array([0]), 1.0), ((3,), np.int32, np.zeros(0, np.int32), 1),
             ((2, 2), dtypes.bfloat16, np.array([3]), 2.5)]
    arrays = [(rand(rng, shape, dtype), ind, v) for shape, dtype, ind, v in cases]
    check_cases([(lambda a=a, ind=ind, v=v: xnp.put(a, ind, v, mode=mode, inplace=False),
                  lambda a=a, ind=ind, v=v: jnp.put(a, ind, v, mode=mode, inplace=False), _numpy_put(a, ind, v, mode))
                 for a, ind, v in arrays])


def test_put_errors():
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        xnp.put(np.zeros(3), [0], 1.0)
    with pytest.raises(ValueError, match="mode should be one of 'wrap' or 'clip'"):
        xnp.put(np.zeros(3), np.array([0]), 1.0, mode="bogus", inplace=False)
    with pytest.raises(NotImplementedError, match="'raise' mode"):
        xnp.put(np.zeros(3), np.array([0]), 1.0, mode="raise", inplace=False)


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")  # jax, for bfloat16 arrays
def test_place_matches_numpy_and_jax(rng):
    cases = [((2, 3), np.int32, np.array([5, 6])), ((2, 3), np.float32, 7.0), ((6,), np.float32, np.arange(10.0)),
             ((3, 2), dtypes.bfloat16, np.array([1.5, -2.0, 3.0])), ((0,), np.float32, np.array([1.0]))]
    table = []
    for shape, dtype, vals in cases:
        a, mask = rand(rng, shape, dtype), rng.random(shape) < 0.5
        expected = a.copy()
        np.place(expected, mask, np.asarray(vals).astype(dtype))
        table.append((lambda a=a, mask=mask, vals=vals: xnp.place(a, mask, vals, inplace=False),
                      lambda a=a, mask=mask, vals=vals: jnp.place(a, mask, vals, inplace=False), expected))
    check_cases(table)
    a, mask = rand(rng, (4,), np.float32), np.array([True, False, True, True])
    traced = numax.jit(lambda a, m: xnp.place(a, m, np.array([1.0, 2.0], np.float32), inplace=False))(a, mask)
    np.testing.assert_array_equal(np.asarray(traced), np.where(mask, [1.0, 0.0, 2.0, 1.0], a))
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        xnp.place(a, mask, 1.0)
    with pytest.raises(ValueError, match="arr and mask must be the same size"):
        xnp.place(a, mask[:3], 1.0, inplace=False)
    with pytest.raises(ValueError, match="Cannot place values from an empty array"):
        xnp.place(a, mask, np.zeros(0), inplace=False)


def test_copy_is_a_new_buffer():
    x = xnp.arange(4.0)
    y = xnp.copy(x)
    assert y is not x
    assert_like_jax(y, lambda: jnp.copy(jnp.arange(4.0)), [0.0, 1.0, 2.0, 3.0])
    donate = numax.jit(lambda a: a * 2, donate_argnums=0)
    np.testing.assert_array_equal(np.asarray(donate(y)), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0, 3.0])
    assert_like_jax(xnp.copy(2.5), lambda: jnp.copy(2.5), 2.5)
    int16s = np.arange(3, dtype=np.int16)
    assert_like_jax(xnp.copy(int16s), lambda: jnp.copy(int16s), int16s)
    assert_like_jax(numax.jit(xnp.copy)(x), lambda: jnp.arange(4.0), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="copy requires ndarray or scalar arguments"):
        xnp.copy([1, 2])


# --- elementwise ------------------------------------------------------------------------------------------

unary_inputs = [np.array([-2, 3, 0], np.int32), np.array([True, False]), np.array([-1.5, 2.0, 0.0], np.float16),
                np.array([0.0, -0.0, 1.0, -1.0, 1e30, -np.inf, np.inf, np.nan, 1e-45, -3e38], np.float32),
                np.array([0.0, -2.0, 1e-3], dtypes.bfloat16), np.array([7, 255], np.uint8), np.zeros((0, 2), np.int8),
                3, -2.5]


@pytest.mark.parametrize("name", ["fabs", "spacing"])
def test_float_unary_matches_numpy_and_jax(name):
    fn, jax_fn = getattr(xnp, name), getattr(jnp, name)
    # Eager for the float32 row; spacing's expected values are JAX's, whose sign follows x's also at -0.0 (numpy's
    # is positive there).
    inputs = [unary_inputs[3]] + unary_inputs[:3] + unary_inputs[4:]
    check_cases([(lambda x=x: fn(x), lambda x=x: jax_fn(x),
                  np.fabs(np.asarray(x, dtype=jax.eval_shape(lambda x=x: jax_fn(x)).dtype)) if name == "fabs" else None)
                 for x in inputs])


def test_spacing_float64_matches_numpy(x64):
    x = np.array([0.0, 1.0, -1.0, 1e300, -1e-310, 2.0**-1022], np.float64)
    np.testing.assert_array_equal(np.asarray(xnp.spacing(x)), np.spacing(x))


def test_float_unary_errors():
    with pytest.raises(TypeError, match="'fabs' does not support complex"):
        xnp.fabs(np.array([1j], np.complex64))
    with pytest.raises(ValueError, match="spacing is not defined for complex"):
        xnp.spacing(np.array([1j], np.complex64))


def test_bitwise_count_matches_numpy_and_jax(rng):
    inputs = [np.array([-128, 127, 0, -1], np.int8), np.array([255, 3], np.uint8), np.array([True, False]),
              np.array([2**31 - 1, -(2**31), 5], np.int32), rand(rng, (3, 4), np.uint32),
              rand(rng, (2, 3), np.int16), 7]
    check_cases([(lambda x=x: xnp.bitwise_count(x), lambda x=x: jnp.bitwise_count(x),
                  np.bitwise_count(np.asarray(x).astype(np.int64))) for x in inputs])


# --- bit packing ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_unpackbits_match_numpy(bitorder, rng):
    bits = rng.random((3, 13)) < 0.5
    cases = []
    for source in (bits, bits.astype(np.int32) * rng.integers(-3, 4, size=bits.shape).astype(np.int32)):
        for axis in (None, 0, 1, -1):
            cases.append((lambda source=source, axis=axis: xnp.packbits(source, axis, bitorder),
                          lambda source=source, axis=axis: jnp.packbits(source, axis, bitorder),
                          np.packbits(source, axis, bitorder=bitorder)))
    for axis in (None, 0, 1):
        packed = np.packbits(bits, axis, bitorder=bitorder)
        for count in (None, 3, -2, 20, 0):
            cases.append((lambda packed=packed, axis=axis, count=count: xnp.unpackbits(packed, axis, count, bitorder),
                          lambda packed=packed, axis=axis, count=count: jnp.unpackbits(packed, axis, count, bitorder),
                          np.unpackbits(packed, axis, count, bitorder)))
    empty = np.zeros(0, np.uint8)
    cases.append((lambda: xnp.packbits(empty), lambda: jnp.packbits(empty), np.packbits(empty)))
    cases.append((lambda: xnp.unpackbits(np.uint8(27)), lambda: jnp.unpackbits(np.uint8(27)),
                  np.unpackbits(np.array([27], np.uint8))))
    check_cases(cases)
    roundtrip = numax.jit(lambda b: xnp.unpackbits(xnp.packbits(b, 1, bitorder), 1, 13, bitorder))
    np.testing.assert_array_equal(np.asarray(roundtrip(bits)), bits.astype(np.uint8))


def test_bit_packing_errors():
    with pytest.raises(TypeError, match="integer or boolean data type"):
        xnp.packbits(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="unsigned byte data type"):
        xnp.unpackbits(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
        xnp.packbits(np.ones(3, np.int32), bitorder="middle")
    with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
        xnp.unpackbits(np.ones(3, np.uint8), bitorder="middle")


# --- products and shapes -------------------------------------------------------------------------------

def test_matvec_vecmat_match_numpy_and_jax(rng):
    cases = [((2, 1, 3, 4), (5, 4), np.float32), ((3, 4), (4,), np.int32), ((4, 2), (2, 3, 2), np.complex64),
             ((0, 3), (3,), np.float32), ((2, 3), (1, 3), dtypes.bfloat16)]
    table = []
    for x1_shape, x2_shape, dtype in cases:
        matrix, vector = rand(rng, x1_shape, dtype), rand(rng, x2_shape, dtype)
        matrix_t = np.swapaxes(matrix, -1, -2)
        wide_matrix, wide_vector = matrix.astype(np.complex128), vector.astype(np.complex128)
        table.append((lambda m=matrix, v=vector: xnp.matvec(m, v), lambda m=matrix, v=vector: jnp.matvec(m, v),
                      (wide_matrix @ wide_vector[..., None])[..., 0]))
        table.append((lambda m=matrix_t, v=vector: xnp.vecmat(v, m), lambda m=matrix_t, v=vector: jnp.vecmat(v, m),
                      (np.conj(wide_vector)[..., None, :] @ np.swapaxes(wide_matrix, -1, -2))[..., 0, :]))
    # On GPUs XLA's default (and jax's) matmul precision is TF32-like: ~1e-3 against the exact reference.
    check_cases(table[:-2], eager=2, rtol=1e-5 if numax.default_backend() == "cpu" else 1e-2)
    check_cases(table[-2:], eager=0, rtol=2e-2)  # bfloat16
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        xnp.matvec(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        xnp.vecmat(np.ones(3), np.ones(3))


@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3).map(tuple), max_size=4))
def test_broadcast_shapes_matches_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
            xnp.broadcast_shapes(*shapes)
        return
    assert xnp.broadcast_shapes(*shapes) == expected == jnp.broadcast_shapes(*shapes)


def test_broadcast_shapes_scalar_sizes_and_iterable():
    assert xnp.broadcast_shapes() == () and xnp.broadcast_shapes(3, (2, 1)) == (2, 3)
    assert xnp.iterable([1]) and xnp.iterable(xnp.arange(2)) and not xnp.iterable(3)


# --- host input, print options, dtype names -------------------------------------------------------------

def test_host_readers():
    data = np.arange(5, dtype=np.float64).tobytes()
    assert_like_jax(xnp.frombuffer(data), lambda: jnp.frombuffer(data), np.arange(5))
    raw = b"\x01\x02\x03\x04"
    assert_like_jax(xnp.frombuffer(raw, dtype=np.uint8, count=2, offset=1),
                    lambda: jnp.frombuffer(raw, dtype=np.uint8, count=2, offset=1), [2, 3])
    assert_like_jax(xnp.fromstring("1 2 3", sep=" "), lambda: jnp.fromstring("1 2 3", sep=" "), [1, 2, 3])
    assert_like_jax(xnp.fromstring("1,2,4", dtype=int, count=2, sep=","),
                    lambda: jnp.fromstring("1,2,4", dtype=int, count=2, sep=","), [1, 2])
    for name in ("fromiter", "fromfile"):
        with pytest.raises(NotImplementedError, match=f"numpy.{name}"):
            getattr(xnp, name)(iter([1, 2]), dtype=float)


def test_load_restores_arrays_and_bfloat16():
    for value in (np.arange(6, dtype=np.int16).reshape(2, 3), np.array([1.5, -2.0], dtypes.bfloat16)):
        buffer = io.BytesIO()
        np.save(buffer, value)
        buffer.seek(0)
        loaded = xnp.load(buffer)
        assert isinstance(loaded, numax.Array) and loaded.dtype == value.dtype
        np.testing.assert_array_equal(np.asarray(loaded), value)
    buffer = io.BytesIO()
    np.save(buffer, np.array(["ab", "c"]))
    buffer.seek(0)
    strings = xnp.load(buffer)  # no numax dtype: numpy's array, as jax.numpy.load gives
    assert isinstance(strings, np.ndarray) and list(strings) == ["ab", "c"]
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(3))
    buffer.seek(0)
    with xnp.load(buffer) as archive:
        np.testing.assert_array_equal(archive["a"], np.arange(3))


def test_printoptions_apply_to_arrays():
    x = xnp.asarray(np.array([1.0 / 3.0], np.float32))
    with xnp.printoptions(precision=2):
        assert xnp.get_printoptions()["precision"] == 2
        assert "0.33" in repr(x) and "0.333" not in repr(x)
    original = xnp.get_printoptions()
    try:
        xnp.set_printoptions(precision=3)
        assert "0.333" in repr(x) and "0.3333" not in repr(x)
    finally:
        xnp.set_printoptions(**original)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")  # jax, for jnp.double(3) without x64
def test_dtype_aliases_match_jax():
    for name in ("double", "single", "cdouble", "csingle", "uint", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn",
                 "int4", "uint4", "int2", "uint2", "float8_e8m0fnu", "float6_e2m3fn"):
        assert np.dtype(getattr(xnp, name)) == np.dtype(getattr(jnp, name)), name
        assert getattr(xnp, name).__name__ == getattr(jnp, name).__name__ == np.dtype(getattr(jnp, name)).name
    for name in ("character", "flexible", "object_"):
        assert getattr(xnp, name) is getattr(jnp, name)
    assert_like_jax(xnp.double(3), lambda: jnp.double(3), 3.0)
    assert_like_jax(xnp.uint(3), lambda: jnp.uint(3), 3)


# --- i0 -------------------------------------------------------------------------------------------------

i0_edges = [0.0, -0.0, 1e-8, -1e-20, 7.999, 8.0, 8.0001, -8.0, 30.0, -88.0, 91.0, 700.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, dtypes.bfloat16])
def test_i0_matches_scipy_and_jax(dtype, rng):
    x = np.concatenate([rng.uniform(-20, 20, 40), rng.uniform(-90, 90, 10), i0_edges]).astype(dtype)
    actual = xnp.i0(x)
    with np.errstate(over="ignore"):
        reference = scipy.special.i0(x.astype(np.float64)).astype(dtype)  # nan at +-inf, as numpy's and JAX's
    tol = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1e-3, np.dtype(dtypes.bfloat16): 8e-3}[np.dtype(dtype)]
    assert_like_jax(actual, lambda: jnp.i0(x), reference, rtol=tol)
    expected = np.asarray(jnp.i0(x)).astype(np.float64)
    finite = np.isfinite(expected) & (np.abs(x.astype(np.float64)) < 85)
    np.testing.assert_allclose(np.asarray(actual)[finite].astype(np.float64), expected[finite], rtol=4 * tol)


def test_i0_float64_is_accurate(x64, rng):
    x = np.concatenate([rng.uniform(-40, 40, 200), rng.uniform(-710, 710, 50), i0_edges])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(np.asarray(xnp.i0(x)), scipy.special.i0(x), rtol=2e-15)
        np.testing.assert_allclose(np.asarray(xnp.i0(x)), np.i0(x), rtol=2e-15)
    assert xnp.i0(x).dtype == np.float64


def test_i0_types_and_errors():
    for value in (3, 2.5, np.array([1, 2], np.int32), np.array([True]), np.float32(1.5)):
        assert_like_jax(xnp.i0(value), lambda: jnp.i0(value), scipy.special.i0(np.asarray(value, np.float64)),
                        rtol=1e-6)
    x = np.array([0.5, -9.0], np.float32)
    assert_like_jax(numax.jit(xnp.i0)(x), lambda: jnp.i0(x), scipy.special.i0(x.astype(np.float64)), rtol=1e-6)
    with pytest.raises(ValueError, match="Unsupported input type to numax.numpy.i0: complex64"):
        xnp.i0(np.array([1j], np.complex64))


def test_i0_derivatives(x64):
    points = np.array([-12.0, -0.5, 0.25, 7.9, 8.1, 25.0])
    check_grads(xnp.i0, (points,), order=1, rtol=1e-6, atol=1e-6)
    with_zero = np.concatenate([points, [0.0, 100.0]])
    first, second = numax.jit(lambda x: (numax.vmap(numax.grad(xnp.i0))(x),
                                         numax.vmap(numax.grad(numax.grad(xnp.i0)))(x)))(with_zero)
    np.testing.assert_allclose(np.asarray(first), scipy.special.i1(with_zero), rtol=1e-14)
    # jax runs in float32 here (its x64 flag is off).
    np.testing.assert_allclose(np.asarray(first)[:6], np.asarray(jax.vmap(jax.grad(jnp.i0))(points)), rtol=2e-6)
    # I0'' = I1' = I0 - I1 / x, and 1/2 at 0 (where JAX's JVP rule returns 0 to every order).
    np.testing.assert_allclose(np.asarray(second)[:6], scipy.special.i0(points) - scipy.special.i1(points) / points,
                               rtol=1e-12)
    assert float(first[6]) == 0.0
    np.testing.assert_allclose(float(second[6]), 0.5, rtol=1e-14)
    assert np.isfinite(float(second[7]))


def test_i0_derivative_float32():
    points = np.array([-5.0, -0.1, 0.0, 3.0, 20.0], np.float32)
    grad = numax.jit(numax.vmap(numax.grad(xnp.i0)))(points)
    np.testing.assert_allclose(np.asarray(grad), scipy.special.i1(points.astype(np.float64)), rtol=2e-6)


# --- windows --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows_match_numpy_and_jax(name):
    fn = getattr(xnp, name)
    check_cases([(lambda M=M: fn(M), lambda M=M: getattr(jnp, name)(M), getattr(np, name)(M))
                 for M in (8, 0, 1, 2, 3, 17)], rtol=1e-6)
    with pytest.raises(numax.ConcretizationTypeError, match=f"M argument of numax.numpy.{name}"):
        numax.jit(fn)(4)


def test_kaiser_matches_numpy_and_jax():
    check_cases([(lambda M=M, beta=beta: xnp.kaiser(M, beta), lambda M=M, beta=beta: jnp.kaiser(M, beta),
                  np.kaiser(M, beta)) for M, beta in ((5, 1.5), (0, 1.5), (1, 0.0), (2, 8.6), (16, 14.0), (16, 0.0),
                                                       (7, 3.5))], rtol=1e-5)
    beta = np.float32(3.0)
    traced_beta = numax.jit(xnp.kaiser, static_argnums=0)(6, beta)
    assert_like_jax(traced_beta, lambda: jnp.kaiser(6, beta), np.kaiser(6, 3.0), rtol=1e-5)
    with pytest.raises(TypeError, match="negative"):
        xnp.kaiser(-1, 1.0)


def test_kaiser_float64(x64):
    np.testing.assert_allclose(np.asarray(xnp.kaiser(12, 6.0)), np.kaiser(12, 6.0), rtol=1e-14)
    assert xnp.kaiser(12, 6.0).dtype == np.float64
