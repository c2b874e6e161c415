"""The array API's device and interchange surface: `to_device`, `device=` in creation functions, DLPack
export (`__dlpack__`'s keywords, `__dlpack_device__`) and import (`from_dlpack`), and immutability."""

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import numax
import numax.numpy as xnp

DLPACK_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16, np.float32,
                 np.complex64]


def _second_device():
    """A device other than the default one: the default platform's second, or (one GPU) a CPU device."""
    devices = numax.devices()
    return devices[1] if len(devices) > 1 else numax.devices("cpu")[1]


def _cpu_device():
    """Where DLPack exchanges with numpy happen (numpy reads CPU memory only)."""
    return numax.devices("cpu")[0]


def _to_numpy(array):
    return np.from_dlpack(array, device="cpu")  # asks a GPU array for a host copy


def test_to_device_moves_values_and_keeps_type():
    target = _second_device()
    x = xnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    moved = x.to_device(target)
    assert moved.device == target and x.device != target
    assert moved.dtype == x.dtype and moved.weak_type == x.weak_type
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(x))
    assert x.to_device(x.device) is x and x.to_device(None) is x
    assert (moved + 1).device == target  # computations follow the argument
    weak = xnp.asarray(2.5).to_device(target)
    assert weak.weak_type and weak.device == target
    bf16 = xnp.asarray(np.array([1.5, -2.0], ml_dtypes.bfloat16)).to_device(target)
    np.testing.assert_array_equal(np.asarray(bf16), np.array([1.5, -2.0], ml_dtypes.bfloat16))
    with pytest.raises(NotImplementedError, match="stream"):
        x.to_device(target, stream=1)
    with pytest.raises(NotImplementedError, match="stream"):
        jnp.ones(2).to_device(None, stream=1)


def test_to_device_under_jit_leaves_tracers():
    fn = numax.jit(lambda x: x.to_device(numax.devices()[0]) * 2)
    np.testing.assert_array_equal(np.asarray(fn(np.ones(3, np.float32))), np.full(3, 2.0, np.float32))


@pytest.mark.parametrize("make", [
    lambda device: xnp.zeros((2, 3), device=device), lambda device: xnp.ones(4, xnp.int8, device=device),
    lambda device: xnp.empty(2, device=device), lambda device: xnp.full((2,), 7, device=device),
    lambda device: xnp.zeros_like(np.ones(3), device=device), lambda device: xnp.full_like(np.ones(2), 3,
                                                                                          device=device),
    lambda device: xnp.arange(5, device=device), lambda device: xnp.arange(0.5, 2, 0.5, device=device),
    lambda device: xnp.linspace(0, 1, 5, device=device), lambda device: xnp.eye(3, device=device),
    lambda device: xnp.asarray([1, 2], device=device), lambda device: xnp.asarray(xnp.ones(2), device=device),
    lambda device: xnp.astype(xnp.ones(2), xnp.int32, device=device),
    lambda device: xnp.from_dlpack(np.ones(3), device=device),
], ids=["zeros", "ones", "empty", "full", "zeros_like", "full_like", "arange_int", "arange_float", "linspace", "eye",
        "asarray_list", "asarray_array", "astype", "from_dlpack"])
def test_creation_functions_place_on_their_device(make):
    target = _second_device()
    placed, default = make(target), make(None)
    assert placed.device == target and default.device == numax.devices()[0]
    np.testing.assert_array_equal(np.asarray(placed), np.asarray(default))


def test_dlpack_device_names_the_array_platform():
    # The default device's array, as jax's on the same platform (kDLCPU here, kDLCUDA on a GPU), and a CPU one.
    device_type, device_id = xnp.ones(3).__dlpack_device__()
    jax_type, jax_id = jnp.ones(3).__dlpack_device__()
    assert (device_type.name, device_id) == (jax_type.name, jax_id) and type(device_id) is int
    device_type, device_id = xnp.ones(2).to_device(numax.devices("cpu")[-1]).__dlpack_device__()
    assert (int(device_type), device_id, device_type.name) == (1, 0, "kDLCPU")


@given(dtype=st.sampled_from(DLPACK_DTYPES), shape=st.sampled_from([(), (0,), (3,), (2, 3)]),
       copy=st.sampled_from([None, True]), max_version=st.sampled_from([None, (0, 8), (1, 0), (1, 2)]),
       dl_device=st.sampled_from([None, (1, 0)]))
def test_dlpack_export_round_trips_through_numpy(dtype, shape, copy, max_version, dl_device):
    values = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    x = xnp.asarray(values, device=_cpu_device())
    capsule_owner = _Exporter(x, copy=copy, max_version=max_version, dl_device=dl_device)
    back = np.from_dlpack(capsule_owner)
    np.testing.assert_array_equal(back, values)
    assert back.dtype == values.dtype
    np.testing.assert_array_equal(np.asarray(x), values)  # the export left the array whole


class _Exporter:
    """Hands numpy the capsule of one `__dlpack__` call with the given keywords."""

    def __init__(self, array, **keywords):
        self.array, self.keywords = array, keywords

    def __dlpack__(self, **_):
        return self.array.__dlpack__(**self.keywords)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_exports_never_alias_the_device_buffer():
    # A consumer holding numax's own buffer would abort the process once the array is deleted or donated.
    x = xnp.arange(4.0) * 2
    view = _to_numpy(x)
    x.delete()
    donated = xnp.arange(4.0) * 3
    view_of_donated = _to_numpy(donated)
    numax.jit(lambda v: v + 1, donate_argnums=0)(donated)
    np.testing.assert_array_equal(view, [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(view_of_donated, [0.0, 3.0, 6.0, 9.0])


def test_dlpack_export_errors():
    x = xnp.ones(3, device=_cpu_device())
    with pytest.raises(BufferError, match="stream=None"):
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="cannot export"):
        x.__dlpack__(dl_device=(2, 0))  # CUDA, for a CPU array
    with pytest.raises(BufferError, match="read-?only|readonly"):
        x.__dlpack__(copy=False)  # DLPack before 1.0 cannot mark the shared host value read-only
    assert x.__dlpack__(copy=False, max_version=(1, 0)) is not None
    with pytest.raises(BufferError, match="DLPack"):
        xnp.ones(2, xnp.bfloat16, device=_cpu_device()).__dlpack__()


@pytest.mark.skipif(numax.default_backend() != "gpu", reason="GPU arrays: their DLPack exports are CUDA capsules")
def test_dlpack_exports_gpu_arrays_as_private_copies():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = xnp.asarray(values)
    through_jax = jnp.from_dlpack(x)  # a CUDA capsule of a copy on the same GPU
    assert through_jax.devices() == {jnp.ones(1).device}
    x.delete()  # the consumer keeps its copy
    np.testing.assert_array_equal(np.asarray(through_jax), values)
    y = xnp.asarray(values)
    np.testing.assert_array_equal(_to_numpy(y), values)  # a host copy, asked for with dl_device
    with pytest.raises(BufferError, match="copy"):
        y.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        y.__dlpack__(dl_device=(1, 0), copy=False)


def test_from_dlpack_round_trips_numpy_and_numax():
    values = np.arange(6, dtype=np.int16).reshape(2, 3)
    from_numpy = xnp.from_dlpack(values)
    assert isinstance(from_numpy, xnp.ndarray) and from_numpy.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(from_numpy), values)
    assert xnp.from_dlpack(from_numpy) is from_numpy
    assert xnp.from_dlpack(from_numpy, copy=False) is from_numpy
    copied = xnp.from_dlpack(from_numpy, copy=True)
    assert copied is not from_numpy
    from_numpy.delete()
    np.testing.assert_array_equal(np.asarray(copied), values)
    np.testing.assert_array_equal(np.asarray(xnp.from_dlpack(jnp.asarray(values))), values)
    back = _to_numpy(xnp.from_dlpack(values[::-1]))  # a strided producer
    np.testing.assert_array_equal(back, values[::-1])


def test_from_dlpack_copy_and_device_errors():
    with pytest.raises(ValueError, match="copy=False"):
        xnp.from_dlpack(np.ones(3), copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xnp.from_dlpack(xnp.ones(3), device=_second_device(), copy=False)
    with pytest.raises(TypeError, match="__dlpack__"):
        xnp.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError):
        jnp.from_dlpack([1, 2, 3])


def test_from_dlpack_canonicalizes_64_bit_values_as_jax():
    for values in (np.arange(3, dtype=np.int64), np.ones(2, np.float64), np.ones(2, np.complex128)):
        assert xnp.from_dlpack(values).dtype == jnp.from_dlpack(values).dtype


def test_from_dlpack_keeps_64_bit_values_under_x64(x64):
    values = np.array([2**40, -3], np.int64)
    out = xnp.from_dlpack(values)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(out), values)


def _setitem_message(array):
    with pytest.raises(TypeError) as error:
        array[0] = 1
    return str(error.value)


def test_setitem_raises_jax_type_error_pointing_to_at():
    message = _setitem_message(xnp.ones(3))
    assert message == _setitem_message(jnp.ones(3)).replace("JAX arrays", "numax arrays").split(
        ": https")[0]
    assert "x.at[idx].set(y)" in message
    messages = []
    numax.jit(lambda x: messages.append(_setitem_message(x)) or x)(np.ones(3, np.float32))
    assert messages == [message]
