"""numax.Array's waits and readback, and eager one-argument primitives, answered by the native extension
(lowering/_native_dispatch.c: `ArrayBase`, `eager_unary`) exactly as the Python methods and the general
eager path answer them: values, dtypes, read-only caching, errors of deleted arrays, subclasses, threads."""

import subprocess
import sys

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given
from numax.core.avals import ShapedArray
from numax.lowering import array as array_module
from numax.lowering import dispatch
from numax.lowering.array import Array as ArrayImpl  # the concrete class of device arrays
from thread_util import run_in_threads

import numax
import numax.numpy as xnp

_add_one = numax.jit(lambda x: x + 1)  # a fresh, computed result per call; one program per dtype and shape

_DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint32", "float16", "float32", "complex64", "bfloat16"]


def fresh(host):
    """A fresh program output (never read, never waited for) holding `host`."""
    x = xnp.asarray(host)
    return _add_one(x) if x.dtype != np.bool_ else numax.jit(lambda v: ~v)(x)


def expected(host):
    return ~host if host.dtype == np.bool_ else host + host.dtype.type(1)


def test_array_methods_come_from_the_extension():
    base = ArrayImpl.__mro__[1]
    assert base.__module__ == "numax.lowering._native_dispatch"
    assert "block_until_ready" not in vars(ArrayImpl) and "__array__" not in vars(ArrayImpl)


@given(dtype=st.sampled_from(_DTYPES), shape=st.sampled_from([(), (3,), (2, 5), (4, 1, 3)]))
def test_readback_matches_the_python_method_and_numpy(dtype, shape):
    host = (np.arange(int(np.prod(shape))).reshape(shape) % 5).astype(dtype)
    native_result, python_result = fresh(host), fresh(host)
    native_value = np.asarray(native_result)
    python_value = python_result._python_array()
    assert native_value.dtype == python_value.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(native_value, python_value)
    np.testing.assert_array_equal(native_value, expected(host))
    assert not native_value.flags.writeable  # the cached host value is shared: read-only
    assert np.asarray(native_result) is native_value  # read once
    copied = np.array(native_result)  # copy=True: the Python method copies
    assert copied.flags.writeable and copied is not native_value
    np.testing.assert_array_equal(np.asarray(native_result, dtype=np.float32), expected(host).astype(np.float32))


def test_block_until_ready_returns_the_array_and_remembers():
    result = fresh(np.ones(3, np.float32))
    assert result.block_until_ready() is result
    assert result._ready
    assert result.block_until_ready() is result  # again: one deletion check


def test_waits_for_an_unfinished_result():
    # A program long enough that the first wait finds it running: the Python method polls, then blocks.
    step = numax.jit(lambda m: numax.lax.fori_loop(0, 20, lambda i, a: (a @ m) / 256.0, m))
    m = xnp.ones((256, 256), np.float32)
    result = step(m)
    assert result.block_until_ready() is result and result._ready
    np.testing.assert_allclose(np.asarray(result), np.ones((256, 256)), rtol=1e-5)


@pytest.mark.parametrize("operation", ["wait", "read"])
def test_deleted_arrays_raise_the_python_methods_error(operation):
    errors = []
    for method in ("native", "python"):
        result = fresh(np.ones(3, np.float32))
        result.delete()
        with pytest.raises(RuntimeError, match="deleted") as error:
            if operation == "wait":
                result.block_until_ready() if method == "native" else result._python_block_until_ready()
            else:
                np.asarray(result) if method == "native" else result._python_array()
        errors.append(str(error.value))
    assert errors[0] == errors[1]


class _FailedBuffer:
    """A runtime buffer whose program failed (or that was deleted): its wait raises. (A CPU program's own failure,
    a host callback's exception, is raised by the call itself, before any wait.)"""

    def __init__(self, deleted):
        self.deleted = deleted

    def block_until_ready(self):
        raise RuntimeError("INTERNAL: the program failed" if not self.deleted else "called on a deleted buffer")

    def is_deleted(self):
        return self.deleted

    def is_ready(self):  # (asked on a GPU, where waits poll; never of a deleted buffer, where jaxlib's crashes)
        assert not self.deleted, "is_ready() of a deleted buffer"
        return True


@pytest.mark.parametrize("deleted", [False, True])
def test_a_wait_that_the_runtime_refuses_raises_as_the_python_method_does(deleted):
    """A first wait that the runtime refuses: a failed program's error, or, for a deleted buffer, numax's own
    message; the same from the native method (which waits with one runtime call on a CPU) as from the Python method;
    and the Array stays unready, so that the next wait raises again."""
    live = xnp.ones(1)
    messages = []
    for method in ("native", "python", "native"):
        result = array_module.Array(ShapedArray((3,), np.dtype(np.float32)), _FailedBuffer(deleted), live._backend,
                                    live._device)
        wait = result._python_block_until_ready if method == "python" else result.block_until_ready
        with pytest.raises(RuntimeError, match="deleted" if deleted else "the program failed") as error:
            wait()
        assert not result._ready
        messages.append(str(error.value))
    assert messages[0] == messages[1] == messages[2]


def test_a_deleted_array_that_was_waited_for_still_raises():
    result = fresh(np.ones(3, np.float32)).block_until_ready()
    result.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        result.block_until_ready()


class _CountingArray(array_module.Array):
    """A subclass: the native methods hand it to its own Python methods."""

    __slots__ = ()
    calls = []

    def _python_block_until_ready(self):
        self.calls.append("wait")
        return super()._python_block_until_ready()

    def _python_array(self, dtype=None, copy=None):
        self.calls.append("read")
        return super()._python_array(dtype, copy)


def test_subclasses_go_to_their_python_methods():
    plain = fresh(np.arange(3, dtype=np.float32))
    sub = _CountingArray(plain.aval, plain._buffer, plain._backend, plain._device)
    _CountingArray.calls.clear()
    assert sub.block_until_ready() is sub
    np.testing.assert_array_equal(np.asarray(sub), np.arange(3) + 1)
    assert _CountingArray.calls == ["wait", "read"]


def test_threads_reading_one_fresh_result_agree():
    results = [fresh(np.arange(1000, dtype=np.float32)) for _ in range(20)]
    seen = []

    def reader(index, barrier):
        barrier.wait()
        for result in results:
            seen.append(np.asarray(result.block_until_ready()).sum())

    run_in_threads(reader, 6)
    assert len(seen) == 6 * 20 and set(seen) == {float(np.arange(1000).sum() + 1000)}


# --- eager one-argument primitives ---------------------------------------------------------------------------

def test_eager_unary_hits_match_the_python_path():
    x = xnp.linspace(-2.0, 2.0, 7)
    first = xnp.sin(x)  # compiles (the Python function), then hits in C
    table_size = len(dispatch._fast_executables)
    native_result = xnp.sin(x)
    python_result = dispatch._python_eager_unary(numax.lax.sin_p, x)
    assert len(dispatch._fast_executables) == table_size
    for result in (first, native_result, python_result):
        assert type(result) is ArrayImpl and result.aval == x.aval and result.device == x.device
        np.testing.assert_array_equal(np.asarray(result), np.asarray(python_result))  # one executable
        # (numpy's sin may differ from a GPU's in the last bits)
        np.testing.assert_allclose(np.asarray(result), np.sin(np.asarray(x)), rtol=1e-6, atol=1e-7)


def test_eager_unary_of_a_deleted_array_raises_the_general_error():
    x = xnp.ones(3)
    xnp.cos(x)
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        xnp.cos(x)


def test_eager_unary_honours_nan_checks_and_traces():
    x = xnp.asarray([np.inf, 0.0], np.float32)
    xnp.sin(x)  # a hit from here on
    numax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            xnp.sin(x)
    finally:
        numax.config.update("jax_debug_nans", False)
    traced = numax.jit(lambda v: xnp.sin(v) * 2)(xnp.ones(2))
    np.testing.assert_allclose(np.asarray(traced), 2 * np.sin(1.0), rtol=1e-6)
    np.testing.assert_allclose(numax.grad(lambda v: xnp.sin(v))(xnp.asarray(0.5)), np.cos(0.5), rtol=1e-6)


def test_eager_unary_in_threads():
    x = xnp.linspace(0.0, 1.0, 16)
    expected_value = np.tanh(np.asarray(x))
    outputs = []

    def worker(index, barrier):
        for _ in range(50):
            outputs.append(np.asarray(xnp.tanh(x)))

    run_in_threads(worker, 4)
    assert len(outputs) == 200
    for output in outputs:
        np.testing.assert_allclose(output, expected_value, rtol=1e-6)


_WITHOUT_EXTENSION = """
import sys
sys.modules["numax.lowering._native_dispatch"] = None  # as if built without a C compiler
import numpy as np
import numax, numax.numpy as xnp
from numax.lowering import array, native_dispatch
assert not native_dispatch.available and array.Array.__mro__[1].__module__ == "numax.lowering.array"
f = numax.jit(lambda a, b: (a * b, {"s": a.sum()}))
x = xnp.arange(4.0)
product, tree = f(x, 2.0)
product, tree = f(x, 2.0)  # a cache hit, by the Python path
assert product.block_until_ready() is product and product._ready
value = np.asarray(product)
assert not value.flags.writeable and np.asarray(product) is value
np.testing.assert_array_equal(value, np.arange(4.0) * 2)
assert float(tree["s"]) == 6.0
np.testing.assert_allclose(np.asarray(xnp.sin(x)), np.sin(np.arange(4.0)), rtol=1e-6)
np.testing.assert_allclose(np.asarray(xnp.sin(x)), np.sin(np.arange(4.0)), rtol=1e-6)  # eager fast path hit
x.delete()
for operation in (lambda: x.block_until_ready(), lambda: np.asarray(x), lambda: xnp.sin(x)):
    try:
        operation()
    except RuntimeError as error:
        assert "deleted" in str(error), error
    else:
        raise AssertionError("a deleted array was used")
print("ok")
"""


def test_everything_works_without_the_extension():
    # A fresh process where the extension cannot be imported: the pure-Python CachedCall, Array base and eager path.
    result = subprocess.run([sys.executable, "-c", _WITHOUT_EXTENSION], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
