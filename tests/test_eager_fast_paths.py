"""The eager fast paths (one Array into a unary ufunc, small matmul/dot, lax.dot_general, readback through the
buffer protocol) give what the general path gives: values, dtypes, weak types and errors; and step aside for
tracers, other threads' traces, debug_nans and deleted arrays."""

import threading

import hypothesis.strategies as st
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from numax.core import dtypes
from numax.lowering import dispatch, xla
from numax.lowering.array import Array as ArrayImpl  # the concrete class of device arrays

import numax
import numax.numpy as xnp
from numax import lax

# numax.numpy function -> its lax primitive
UNARY = {"sin": "sin_p", "cos": "cos_p", "tan": "tan_p", "arcsin": "asin_p", "arctan": "atan_p", "sinh": "sinh_p",
         "cosh": "cosh_p", "tanh": "tanh_p", "arcsinh": "asinh_p", "arctanh": "atanh_p", "exp": "exp_p",
         "exp2": "exp2_p", "expm1": "expm1_p", "log": "log_p", "log1p": "log1p_p", "sqrt": "sqrt_p",
         "cbrt": "cbrt_p", "negative": "neg_p"}
FLOATS = [np.float32, np.float16, dtypes.bfloat16]


def took_fast_path(primitive, *arrays):
    """Whether an eager call on `arrays` ran through a fast path (its executable is in the fast paths' table)."""
    device, avals = arrays[0].device, tuple(a.aval for a in arrays)
    return any(key[0] is primitive and key[-1] is device and key[-1 - len(avals):-1] == avals
               for key in dispatch._fast_executables)


def general(fn, *args):
    """`fn(*args)` through the general path: traced and compiled under jit, where no fast path runs."""
    return numax.jit(fn)(*args)


def assert_same(fast, slow):
    assert (fast.dtype, fast.shape, fast.weak_type) == (slow.dtype, slow.shape, slow.weak_type)
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(slow))


def weakly_typed(array):
    return lax.convert_element_type(array, array.dtype, True)


@pytest.mark.parametrize("name", UNARY)
def test_unary_fast_path_matches_the_general_path(name):
    fn = getattr(xnp, name)
    for dtype in FLOATS:
        x = xnp.asarray(np.linspace(0.1, 0.9, 5).astype(dtype))
        for operand in (x, weakly_typed(x)):
            fast = fn(operand)
            assert type(fast) is ArrayImpl
            assert_same(fast, general(fn, operand))
    assert took_fast_path(getattr(lax, UNARY[name]), weakly_typed(x))


def test_unary_fast_path_on_complex_and_integer_inputs():
    z = xnp.asarray(np.array([1 + 2j, -0.5j], np.complex64))
    assert_same(xnp.exp(z), general(xnp.exp, z))
    integers = xnp.arange(4)  # promoted to float32 by the general path
    assert_same(xnp.sin(integers), general(xnp.sin, integers))
    assert xnp.sin(integers).dtype == jnp.sin(jnp.arange(4)).dtype
    assert_same(-integers, general(lambda v: -v, integers))
    unsigned = xnp.asarray(np.array([1, 2], np.uint8))
    assert_same(-unsigned, general(lambda v: -v, unsigned))


def error_of(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value)


def test_unary_errors_are_those_of_the_general_path():
    z = xnp.asarray(np.array([1 + 2j], np.complex64))
    assert error_of(xnp.cbrt, z) == error_of(general, xnp.cbrt, z)  # cbrt takes no complex
    with pytest.raises(TypeError):
        jnp.cbrt(jnp.asarray([1 + 2j], jnp.complex64))
    flags = xnp.asarray([True, False])
    assert error_of(xnp.negative, flags) == error_of(general, xnp.negative, flags)


def test_deleted_arrays_raise_through_the_fast_paths():
    x, m = xnp.ones(3), xnp.ones((2, 2))
    expected = error_of(lax.sin_p.bind, _deleted())  # the general path's error
    x.delete()
    m.delete()
    assert expected[0] is RuntimeError
    assert error_of(xnp.sin, x) == expected
    assert error_of(lambda a: a @ a, m) == error_of(lax.sin_p.bind, m)  # (the message names the array's type)
    assert error_of(lambda a: a + a, x) == expected


def _deleted():
    array = xnp.ones(3)
    array.delete()
    return array


def test_fast_paths_step_aside_while_tracing():
    x, m = xnp.ones(3), xnp.ones((2, 2))

    def fn(y):
        return xnp.sin(x) + y, m @ m, lax.dot_general(m, m, (((1,), (0,)), ((), ())))

    text = str(numax.make_jaxpr(fn)(xnp.ones(3)))
    assert "sin" in text and text.count("dot_general") == 2  # staged, not computed at trace time
    assert isinstance(numax.jit(lambda y: xnp.tanh(y))(x), numax.Array)


def test_fast_paths_respect_other_threads_traces():
    """A thread tracing (its stack holds a trace) does not make another thread's eager calls trace, nor the
    reverse: the trace stack is per thread."""
    x, m = xnp.asarray([0.5, 1.0]), xnp.ones((2, 2))
    tracing, eager_done = threading.Event(), threading.Event()
    staged = []

    def traced(y):
        tracing.set()
        assert eager_done.wait(60)
        staged.append(type(xnp.sin(x)).__name__)  # a concrete array used while tracing: staged here
        return y

    thread = threading.Thread(target=lambda: numax.make_jaxpr(traced)(x))
    thread.start()
    assert tracing.wait(60)
    eager = xnp.sin(x), m @ m
    eager_done.set()
    thread.join(60)
    assert all(type(value) is ArrayImpl for value in eager)
    np.testing.assert_allclose(np.asarray(eager[0]), np.sin([0.5, 1.0]), rtol=1e-6)
    assert staged and staged[0] != "Array"


def test_debug_nans_still_checks_eager_results():
    x = xnp.asarray([-1.0])
    numax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            xnp.sqrt(x)
        with pytest.raises(FloatingPointError):
            x + xnp.asarray([np.nan])
        with pytest.raises(FloatingPointError):
            xnp.asarray([[np.nan]]) @ xnp.asarray([[1.0]])
    finally:
        numax.config.update("jax_debug_nans", False)


MATMUL_DTYPES = [np.float32, np.int32, np.bool_, np.complex64, np.float16, dtypes.bfloat16, np.uint8]


@given(a_rank=st.sampled_from([1, 2]), b_rank=st.sampled_from([1, 2]), dtype=st.sampled_from(MATMUL_DTYPES),
       weak=st.sampled_from([(False, False), (True, False), (True, True)]), sizes=st.tuples(*[st.integers(1, 3)] * 3))
def test_small_matmul_fast_path_matches_the_general_path(a_rank, b_rank, dtype, weak, sizes):
    m, k, n = sizes
    rng = np.random.default_rng(0)
    a_shape, b_shape = (m, k)[2 - a_rank:], (k, n)[:b_rank]
    a = xnp.asarray((rng.integers(0, 3, a_shape)).astype(dtype))
    b = xnp.asarray((rng.integers(0, 3, b_shape)).astype(dtype))
    a = weakly_typed(a) if weak[0] else a
    b = weakly_typed(b) if weak[1] else b
    for fn in (lambda x, y: x @ y, xnp.matmul, xnp.dot):
        assert_same(fn(a, b), general(fn, a, b))
    weak_booleans = weak[0] and dtype is np.bool_  # promotion makes them strong: the general path's work
    assert took_fast_path(lax.dot_general_p, a, b) == (not weak_booleans)
    expected = jnp.matmul(jnp.asarray(np.asarray(a)), jnp.asarray(np.asarray(b)))
    assert (a @ b).dtype == expected.dtype


def test_matmul_outside_the_fast_path():
    a, b = xnp.ones((2, 3)), xnp.ones((4, 2))
    assert error_of(lambda x, y: x @ y, a, b) == error_of(general, lambda x, y: x @ y, a, b)
    assert error_of(xnp.dot, a, b) == error_of(general, xnp.dot, a, b)
    integers = xnp.ones((3, 2), np.int32)
    assert_same(a @ integers, general(lambda x, y: x @ y, a, integers))  # promoted to float32
    batched = xnp.ones((2, 2, 3))
    assert_same(batched @ integers, general(lambda x, y: x @ y, batched, integers))
    assert_same(a @ np.ones((3, 2), np.float32), general(lambda x, y: x @ y, a, np.ones((3, 2), np.float32)))
    high = xnp.matmul(a, a.T, precision=lax.Precision.HIGHEST)
    assert_same(high, general(lambda x: xnp.matmul(x, x.T, precision=lax.Precision.HIGHEST), a))
    with pytest.raises(ValueError):
        xnp.matmul(xnp.ones(()), a)


def test_dot_general_fast_path():
    rng = np.random.default_rng(1)
    lhs = xnp.asarray(rng.normal(size=(2, 3, 4)).astype(np.float32))
    rhs = xnp.asarray(rng.normal(size=(2, 4, 5)).astype(np.float32))
    numbers = (((2,), (1,)), ((0,), (0,)))
    for given_numbers in (numbers, [[[2], [1]], [[0], [0]]], (((np.int64(2),), (1,)), ((0,), (0,)))):
        fast = lax.dot_general(lhs, rhs, given_numbers)
        assert_same(fast, general(lambda x, y: lax.dot_general(x, y, numbers), lhs, rhs))
    assert took_fast_path(lax.dot_general_p, lhs, rhs)
    wide = lax.dot_general(lhs, rhs, numbers, preferred_element_type=np.float32)
    assert_same(wide, general(lambda x, y: lax.dot_general(x, y, numbers, preferred_element_type=np.float32),
                              lhs, rhs))
    halves = xnp.ones((2, 4), np.float16)
    for bad_args in ((lhs, halves, (((2,), (1,)), ((), ()))), (lhs, rhs, (((1,), (1,)), ((), ())))):
        assert error_of(lax.dot_general, *bad_args) == error_of(
            general, lambda x, y: lax.dot_general(x, y, bad_args[2]), *bad_args[:2])


READBACK_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float16, np.float32,
                   np.complex64, dtypes.bfloat16]


@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (2, 0, 3)])
def test_readback_of_every_dtype_and_shape(shape):
    for dtype in READBACK_DTYPES:
        host = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
        array = xnp.asarray(host) + xnp.asarray(host)  # a program's output, never read before
        value = np.asarray(array)
        expected = (host.astype(np.float32) + host.astype(np.float32)).astype(dtype) if dtype != np.bool_ else host
        assert value.dtype == expected.dtype and value.shape == shape
        np.testing.assert_array_equal(value, expected)
        assert not value.flags.writeable
        array.delete()  # the host copy is the array's own: deleting the device buffer is safe
        np.testing.assert_array_equal(value, expected)


def test_readback_of_64_bit_dtypes():
    with numax.enable_x64(True):
        for dtype in (np.int64, np.uint64, np.float64, np.complex128):
            host = np.array([[1, 2], [3, 2**40 if dtype != np.complex128 else 5]], dtype)
            value = np.asarray(xnp.asarray(host) * xnp.asarray(host))
            assert value.dtype == dtype
            np.testing.assert_array_equal(value, host * host)


def on_the_cpu():
    """CPU readback's tests place their arrays on the CPU (on a GPU machine, arrays default to the GPU)."""
    return numax.default_device(numax.devices("cpu")[0])


def test_readback_falls_back_to_dlpack_where_the_buffer_protocol_is_refused(monkeypatch):
    with on_the_cpu():
        array = xnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3)) * 2

    def refused(buffer):
        raise BufferError("stands for a jaxlib or a buffer that refuses the buffer protocol")

    monkeypatch.setattr(xla, "memoryview", refused, raising=False)
    value = xla.to_numpy(array._buffer)
    np.testing.assert_array_equal(value, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    assert value.flags.owndata  # a copy: numax's buffer can be deleted while the value lives


def test_readback_is_a_read_only_view_that_outlives_deletion_and_donation():
    # As jax's: np.asarray of a CPU array shares its memory; the runtime's external reference keeps that memory
    # alive after a deletion, and a donation of the array copies instead of overwriting it.
    values = np.arange(50_000, dtype=np.float32)
    overwrite = numax.jit(lambda a: a * 0 - 7, donate_argnums=0)
    views = []
    for i in range(6):
        with on_the_cpu():
            array = xnp.asarray(values) + i
        view = np.asarray(array)
        assert not view.flags.writeable and not view.flags.owndata
        with pytest.raises(ValueError, match="read-only"):
            view[0] = 1
        if i % 2:
            array.delete()
        else:
            np.testing.assert_array_equal(overwrite(array), np.full_like(values, -7))
        views.append(view)
        del array
        with on_the_cpu():
            [(xnp.zeros(values.shape) - 5).block_until_ready() for _ in range(3)]  # reuse freed memory, if any
    for i, view in enumerate(views):
        np.testing.assert_array_equal(view, values + i)
    copy = np.array(xnp.asarray(values), copy=True)
    assert copy.flags.writeable and copy.flags.owndata
