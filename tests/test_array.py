"""numax.Array: printing like jax, conversions to numpy and Python values, methods, readback of
bfloat16/complex/empty/0-d arrays, life cycle (delete, block), devices and transfers, pickling."""

import copy
import gc
import operator
import pickle
import time
import weakref

import ml_dtypes
import numpy as np
import pytest
from harness import jax, jnp

import numax
import numax.numpy as xnp
from numax import lax as xlax

REPR_CASES = {
    "f32_vector": np.array([1.0, 2.0, 3.0], np.float32),
    "i32_matrix": np.arange(6, dtype=np.int32).reshape(2, 3),
    "bool": np.array([True, False]),
    "empty_2d": np.zeros((0, 3), np.float32),
    "empty_int": np.zeros((0,), np.int32),
    "bf16": np.array([1.0, 2.5, -3.0], ml_dtypes.bfloat16),
    "c64": np.array([1 + 2j, -0.5j], np.complex64),
    "f16": np.array([1.0, 0.5], np.float16),
    "u8": np.array([1, 255], np.uint8),
    "i8": np.array([-128, 7], np.int8),
    "scalar_f32": np.float32(2.5),
    "scalar_i32": np.int32(-4),
    "scalar_bool": np.bool_(True),
    "long": np.arange(100, dtype=np.float32),
    "summarized": np.arange(2000, dtype=np.float32).reshape(2, 1000),
    "special": np.array([1.5, np.nan, np.inf, -np.inf], np.float32),
    "three_d": np.arange(8, dtype=np.int16).reshape(2, 2, 2),
    "empty_bool": np.zeros((2, 0), np.bool_),
}


@pytest.mark.parametrize("name", list(REPR_CASES))
def test_repr_and_str_match_jax(name):
    value = REPR_CASES[name]
    mine, theirs = xnp.asarray(value), jnp.asarray(value)
    assert repr(mine) == repr(theirs)
    assert str(mine) == str(theirs)


@pytest.mark.parametrize("value", [1.0, 3, 2j])
def test_repr_of_weak_arrays_matches_jax(value):
    assert repr(xnp.asarray(value)) == repr(jnp.asarray(value))
    assert repr(xnp.asarray(value) * 2) == repr(jnp.asarray(value) * 2)


def test_repr_with_x64():
    old = numax.config.enable_x64, jax.config.jax_enable_x64
    numax.config.update("numax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        for value in (np.arange(3.0), np.arange(3), np.ones(2, np.complex128), 1.5):
            assert repr(xnp.asarray(value)) == repr(jnp.asarray(value))
    finally:
        numax.config.update("numax_enable_x64", old[0])
        jax.config.update("jax_enable_x64", old[1])


def test_format():
    assert f"{xnp.asarray(2.5):.2f}" == f"{jnp.asarray(2.5):.2f}" == "2.50"
    assert f"{xnp.asarray(7)}" == "7"
    assert format(xnp.arange(3), "") == str(xnp.arange(3))


# --- conversions -------------------------------------------------------------------------------------------
def test_array_protocol_and_numpy_asarray():
    x = xnp.arange(6.0).reshape(2, 3)
    host = np.asarray(x)
    assert isinstance(host, np.ndarray) and host.dtype == np.float32 and host.shape == (2, 3)
    np.testing.assert_array_equal(host, np.arange(6.0).reshape(2, 3))
    assert np.asarray(x, dtype=np.int64).dtype == np.int64
    assert np.array(x).flags.writeable  # np.array copies
    copied = x.__array__(copy=True)
    copied[0, 0] = 100.0
    assert float(x[0, 0]) == 0.0  # the array is immutable: copies never alias its value
    with pytest.raises(ValueError):
        host[0, 0] = 1.0  # the cached host view is read-only


def test_numpy_functions_on_arrays():
    x = xnp.arange(4.0)
    assert np.sum(x) == 6.0
    assert np.mean(x) == 1.5
    np.testing.assert_array_equal(np.sqrt(x), np.sqrt(np.arange(4.0, dtype=np.float32)))
    np.testing.assert_array_equal(np.concatenate([x, x]), np.tile(np.arange(4.0), 2))
    assert np.allclose(x, np.arange(4.0))


def test_python_scalar_conversions():
    assert float(xnp.asarray(2.5)) == 2.5 and type(float(xnp.asarray(2.5))) is float
    assert int(xnp.asarray(7)) == 7 and int(xnp.asarray(7.9)) == 7
    assert complex(xnp.asarray(1 + 2j)) == 1 + 2j
    assert bool(xnp.asarray(True)) is True and bool(xnp.asarray(0.0)) is False
    assert bool(xnp.ones((1, 1)))
    assert operator.index(xnp.asarray(3)) == 3
    assert [10, 20, 30, 40][xnp.asarray(2)] == 30
    assert list(range(5))[xnp.asarray(1):xnp.asarray(3)] == [1, 2]
    with pytest.raises(TypeError, match="only integer arrays"):
        operator.index(xnp.asarray(1.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(xnp.ones(2))
    with pytest.raises(TypeError):
        float(xnp.ones((1,)))  # as in jax: only 0-d arrays convert to Python scalars
    with pytest.raises(TypeError):
        float(jnp.ones((1,)))


def test_len_and_iteration():
    x = xnp.arange(6).reshape(3, 2)
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, numax.Array) for r in rows)
    np.testing.assert_array_equal(np.asarray(rows[2]), [4, 5])
    assert [int(v) for v in xnp.arange(3)] == [0, 1, 2]
    with pytest.raises(TypeError, match="len"):
        len(xnp.asarray(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(xnp.asarray(1.0))
    assert list(xnp.zeros((0, 2))) == []


def test_tolist_and_item():
    x = xnp.arange(6).reshape(2, 3)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] == jnp.arange(6).reshape(2, 3).tolist()
    assert xnp.asarray(2.5).item() == 2.5 and type(xnp.asarray(2.5).item()) is float
    assert x.item(4) == 4 and x.item(1, 2) == 5
    assert xnp.asarray([True]).tolist() == [True]
    with pytest.raises(ValueError):
        x.item()


def test_attributes():
    x = xnp.ones((2, 3), np.float16)
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes, x.itemsize) == ((2, 3), np.float16, 2, 6, 12, 2)
    assert not x.weak_type
    assert isinstance(x, numax.Array) and isinstance(x, xnp.ndarray)
    assert x.aval.str_short() == "f16[2,3]"


def test_methods():
    x = xnp.arange(6.0).reshape(2, 3)
    host = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x.T), host.T)
    np.testing.assert_array_equal(np.asarray(x.mT), host.T)
    assert x.astype(np.int32).dtype == np.int32 and x.astype("float16").dtype == np.float16
    assert x.reshape(3, 2).shape == (3, 2) and x.reshape((6,)).shape == (6,) and x.reshape(-1).shape == (6,)
    np.testing.assert_array_equal(np.asarray(x.transpose()), host.T)
    np.testing.assert_array_equal(np.asarray(x.transpose(1, 0)), host.T)
    np.testing.assert_array_equal(np.asarray(x.transpose((1, 0))), host.T)
    assert float(x.sum()) == 15.0 and float(x.max()) == 5.0 and float(x.min()) == 0.0
    np.testing.assert_array_equal(np.asarray(x.sum(axis=0)), host.sum(axis=0))
    np.testing.assert_allclose(np.asarray(x.mean(axis=1)), host.mean(axis=1))
    np.testing.assert_array_equal(np.asarray(x.ravel()), host.ravel())
    np.testing.assert_array_equal(np.asarray(x.flatten()), host.ravel())
    assert x[None].squeeze().shape == (2, 3)
    assert int(x.argmax()) == 5
    np.testing.assert_array_equal(np.asarray(x.clip(1, 3)), host.clip(1, 3))
    np.testing.assert_array_equal(np.asarray(x.copy()), host)
    np.testing.assert_array_equal(np.asarray(abs(-x)), host)
    assert (x.real.dtype, xnp.asarray([1j]).imag.dtype) == (np.float32, np.float32)
    np.testing.assert_array_equal(np.asarray(round(x / 4)), np.round(host / 4))


def test_operators_with_numpy_and_scalars():
    x = xnp.arange(3.0)
    host = np.arange(3.0, dtype=np.float32)
    assert isinstance(x + host, numax.Array) and isinstance(host + x, numax.Array)
    np.testing.assert_array_equal(np.asarray(host - x), host - host)
    np.testing.assert_array_equal(np.asarray(2 ** x), 2**host)
    np.testing.assert_array_equal(np.asarray(x == 1), host == 1)
    np.testing.assert_array_equal(np.asarray(x @ x), host @ host)
    for op in (operator.add, operator.lt, operator.mul):
        with pytest.raises(TypeError):
            op(x, "text")
    assert (x == "text") is False  # equality with an unknown type falls back to identity


# --- readback of special dtypes and shapes -------------------------------------------------------------------
def test_bfloat16_readback():
    values = np.array([1.0, -2.5, 3.25e5, np.inf, np.nan, 1e-40], ml_dtypes.bfloat16)
    x = xnp.asarray(values)
    assert x.dtype == ml_dtypes.bfloat16
    back = np.asarray(x)
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))
    computed = xnp.asarray(np.float32(1.5)).astype(ml_dtypes.bfloat16) * 2
    assert np.asarray(computed).dtype == ml_dtypes.bfloat16 and float(computed) == 3.0
    matrix = xnp.ones((3, 4), ml_dtypes.bfloat16)
    assert np.asarray(matrix).shape == (3, 4) and np.asarray(matrix[1:, ::2]).shape == (2, 2)


def test_complex_readback():
    values = np.array([1 + 2j, -3.5 - 0.25j, np.inf + 1j], np.complex64)
    x = xnp.asarray(values)
    np.testing.assert_array_equal(np.asarray(x), values)
    assert np.asarray(x * 1j).dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(x * 1j), values * 1j)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.uint8, np.float16, ml_dtypes.bfloat16,
                                   np.complex64, np.int8])
def test_round_trip_all_dtypes(dtype, rng):
    values = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    x = xnp.asarray(values)
    assert x.dtype == np.dtype(dtype)
    back = np.asarray(x)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.astype(np.float64) if dtype != np.complex64 else back, values.astype(
        np.float64) if dtype != np.complex64 else values)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2), (1, 0)])
def test_empty_arrays(shape):
    x = xnp.zeros(shape)
    assert x.shape == shape and x.size == 0
    assert np.asarray(x).shape == shape
    assert x.tolist() == np.zeros(shape).tolist()
    assert (x + 1).shape == shape
    assert repr(x) == repr(jnp.zeros(shape))


def test_zero_dimensional_arrays():
    x = xnp.asarray(np.float32(4.0))
    assert x.shape == () and x.ndim == 0 and x.size == 1
    assert np.asarray(x).shape == () and np.asarray(x)[()] == 4.0
    assert x.tolist() == 4.0 and float(x) == 4.0
    assert repr(x) == "Array(4., dtype=float32)"
    assert x.reshape(1).shape == (1,)


# --- life cycle ---------------------------------------------------------------------------------------------
def test_block_until_ready_and_is_ready():
    x = xnp.arange(10.0) * 2
    assert x.block_until_ready() is x
    assert x.is_ready()
    tree = {"a": x, "b": [xnp.ones(2), 3]}
    assert numax.block_until_ready(tree) is tree


def test_waits_on_slow_programs_and_deleted_arrays():
    # a program slower than the wait's polling budget: the wait goes on blocking, and its result is ready
    def slow(v):
        time.sleep(0.01)
        return v * 2

    x = numax.jit(lambda v: numax.pure_callback(slow, numax.ShapeDtypeStruct((3,), np.float32), v) + 1)(
        np.ones(3, np.float32))
    assert x.block_until_ready() is x and x.is_ready()
    np.testing.assert_array_equal(np.asarray(x), np.full(3, 3.0, np.float32))
    # jaxlib's is_ready() crashes the process on a deleted buffer: numax raises instead, as jax means to
    x.delete()
    for method in (x.is_ready, x.block_until_ready):
        with pytest.raises(RuntimeError, match="deleted"):
            method()


def test_delete():
    x = xnp.arange(3.0)
    assert not x.is_deleted()
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="deleted"):
        x + 1
    assert repr(x) == "Array(<deleted>, shape=(3,), dtype=float32)"
    x.delete()  # deleting twice is harmless


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])  # DLPack readback, and the bitcast program's
def test_readback_of_a_deleted_array_says_so(dtype):
    x = xnp.arange(3.0, dtype=dtype)
    x.delete()
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        np.asarray(x)


def test_arrays_of_one_type_share_one_aval_object():
    """Transfers and program outputs carry canonical avals, so that jit's cache keys match by identity."""
    a, b = xnp.asarray(np.ones(3, np.float32)), xnp.asarray(np.zeros(3, np.float32))
    assert a.aval is b.aval
    assert numax.jit(lambda x: x * 2)(a).aval is a.aval
    assert (a + b).aval is a.aval
    weak, strong = xnp.asarray(1.0), xnp.asarray(np.float32(1.0))  # equal but for the weak type
    assert weak.aval.weak_type == jnp.asarray(1.0).weak_type
    assert weak.aval != strong.aval and weak.aval is not strong.aval


def test_delete_after_readback_drops_the_cached_value():
    x = xnp.arange(3.0)
    np.asarray(x)
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        x.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_host_copy_readback_owns_its_memory(dtype):
    """jaxlib's host copy (the readback of a non-CPU buffer): where jaxlib copied, its array is used as it is; where
    it returned a view of the runtime's memory (a CPU buffer), the value is copied. Either way the host value is
    right, survives deleting the device array, and writing to it leaves the device value alone."""
    from numax.lowering import xla

    expected = (2 * np.arange(12) - 12).astype(dtype).reshape(3, 4)
    x = numax.jit(lambda v: v * 2)(xnp.asarray(expected // 2))
    host = xla.to_numpy_via_host_copy(x._buffer)
    assert host.dtype == np.dtype(dtype) and host.shape == (3, 4)
    np.testing.assert_array_equal(host, expected)
    if host.flags.writeable:
        host[0, 0] = 99
        np.testing.assert_array_equal(np.asarray(x), expected)
    x.delete()
    np.testing.assert_array_equal(host.ravel()[1:], expected.ravel()[1:])


def test_dropped_readbacks_free_their_host_memory():
    """A readback's host array does not outlive its holders for long: jaxlib keeps a reference to a GPU host copy's
    destination until its deferred garbage is collected, after the copy is done. numax's readback collects it, so
    that at most the latest dropped readback is still held (its copy may finish just after the collection, as with
    jax), and a garbage collection frees that one too. (Before, ten dropped 16 MB readbacks on an H100 still held
    160 MB: bench/RESULTS.md, "Host overhead per call", session 13.) The same with copy_to_host_async first, which
    starts the copy that the readback then returns."""
    double = numax.jit(lambda v: v * 2)
    for start_copy_first in (False, True):
        held = []
        for _ in range(3):
            x = double(xnp.arange(1024.0))
            if start_copy_first:
                x.copy_to_host_async()
            host = np.asarray(x)
            np.testing.assert_array_equal(host, 2 * np.arange(1024.0))
            held.append(weakref.ref(host))
            del host, x
        assert [ref() is None for ref in held[:-1]] == [True, True]
        gc.collect()
        assert held[-1]() is None


def test_hash_raises():
    with pytest.raises(TypeError, match="unhashable"):
        hash(xnp.ones(2))
    with pytest.raises(TypeError, match="unhashable"):
        {xnp.ones(2): 1}


def test_pickle_round_trip():
    for value in (np.arange(6.0, dtype=np.float32).reshape(2, 3), np.array([1, 2], np.int8),
                  np.array([1.5], ml_dtypes.bfloat16), np.float32(2.0)):
        x = xnp.asarray(value)
        back = pickle.loads(pickle.dumps(x))
        assert isinstance(back, numax.Array)
        assert back.dtype == x.dtype and back.shape == x.shape
        np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    weak = xnp.asarray(2.0)
    assert pickle.loads(pickle.dumps(weak)).weak_type == weak.weak_type


def test_copy_module():
    x = xnp.arange(3)
    for duplicate in (copy.copy(x), copy.deepcopy(x)):
        assert isinstance(duplicate, numax.Array)
        np.testing.assert_array_equal(np.asarray(duplicate), [0, 1, 2])


def test_array_namespace():
    x = xnp.ones(2)
    assert x.__array_namespace__() is xnp
    assert hasattr(x, "__array_namespace__")
    namespace = x.__array_namespace__(api_version="2024.12")
    assert namespace.sum(x) == 2.0


# --- devices and transfers -----------------------------------------------------------------------------------
def test_devices_and_default_backend():
    devices = numax.devices()
    assert len(devices) >= 1
    # Arrays live on the GPU when numax finds one (the CUDA PJRT plugin), else on the CPU.
    expected = "gpu" if devices[0].platform in ("cuda", "gpu") else "cpu"
    assert numax.default_backend() == expected
    x = xnp.ones(2)
    assert x.device == devices[0]
    assert x.devices() == {devices[0]}
    assert x.platform == expected
    assert numax.devices("cpu")[0].platform == "cpu"


def test_device_put_and_get_on_pytrees():
    tree = {"a": np.arange(3, dtype=np.float32), "b": (1.5, np.int8(2)), "c": None, "d": [xnp.ones(2)]}
    placed = numax.device_put(tree)
    assert placed["c"] is None
    assert all(isinstance(leaf, numax.Array) for leaf in numax.tree_leaves(placed))
    assert placed["d"][0] is tree["d"][0]  # already on the default device: kept
    assert placed["b"][1].dtype == np.int8
    assert placed["b"][0].dtype == jax.device_put(1.5).dtype
    fetched = numax.device_get(placed)
    assert all(isinstance(leaf, np.ndarray) for leaf in numax.tree_leaves(fetched))
    np.testing.assert_array_equal(fetched["a"], tree["a"])
    assert numax.device_get(3) == 3


def test_device_put_onto_a_device():
    device = numax.devices()[-1]
    x = numax.device_put(np.ones(3, np.float32), device)
    assert x.device == device
    y = numax.device_put(x, numax.devices()[0])
    assert y.device == numax.devices()[0]
    np.testing.assert_array_equal(np.asarray(y), np.ones(3))


def test_device_put_keeps_weak_type_of_python_scalars():
    assert numax.device_put(1.0).weak_type == jax.device_put(1.0).weak_type
    assert numax.device_put(np.float32(1.0)).weak_type == jax.device_put(np.float32(1.0)).weak_type


def test_x64_arrays_are_canonicalized_on_transfer():
    x = numax.device_put(np.arange(3, dtype=np.int64))
    assert x.dtype == jnp.asarray(np.arange(3, dtype=np.int64)).dtype == np.int32
    assert xnp.asarray(np.ones(2)).dtype == np.float32


def test_dlpack_round_trip():
    x = xnp.arange(4.0)
    # device="cpu" asks a GPU array for a host copy (numpy reads CPU memory only); a CPU array exports its own.
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), np.arange(4.0, dtype=np.float32))


def test_arrays_work_with_lax_directly():
    x = xnp.ones(3)
    assert isinstance(xlax.add(x, x), numax.Array)
