"""numax.experimental.io_callback: the io_callback cases of jax-v0.10.2 tests/python_callback_test.py
(PythonCallbackTest's io flavours and IOCallbackTest), with jax run beside numax where the outcome is a value
or an error to match."""

import functools
import time

import numpy as np
import pytest
from harness import jax
from jax.experimental import io_callback as jax_io_callback
from jaxlib.xla_client import XlaRuntimeError  # numax loads jaxlib on first use, so ask jaxlib itself
from numax.core import dce

import numax
import numax.numpy as xnp
from numax import lax
from numax.experimental import io_callback
from numax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from numax.sharding import PartitionSpec as P

flavours = pytest.mark.parametrize("callback", [functools.partial(io_callback, ordered=False),
                                                functools.partial(io_callback, ordered=True)],
                                   ids=["io_unordered", "io_ordered"])


def sds(shape, dtype):
    return numax.ShapeDtypeStruct(shape, dtype)


def test_public_names():
    import numax.experimental as experimental

    assert experimental.io_callback is io_callback
    assert numax.experimental.io_callback is io_callback


# --- PythonCallbackTest, io flavours ----------------------------------------------------------------------
@flavours
def test_callback_with_scalar_values(callback):
    f = numax.jit(lambda x: callback(lambda x: x + 1.0, sds(np.shape(x), np.float32), x))
    assert f(0.0) == 1.0


@flavours
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64, np.float64])
def test_callback_returning_python_literal(callback, dtype):
    literal = 42 if np.dtype(dtype).kind == "i" else 42.0
    f = numax.jit(lambda x: callback(lambda x: literal, sds((), dtype), x))
    if np.dtype(dtype).itemsize == 8:  # 64-bit mode is off: declaring a 64-bit result is a ValueError
        with pytest.raises(ValueError, match="64-bit"):
            f(0.0)
    else:
        out = f(0.0)
        assert out == literal and out.dtype == dtype


@flavours
def test_callback_returning_custom_array(callback):
    class CustomArray:
        def __init__(self, a):
            self.a = a

        shape = property(lambda self: self.a.shape)
        dtype = property(lambda self: self.a.dtype)

        def __array__(self, dtype=None, copy=None):
            return self.a

    f = numax.jit(lambda x: callback(lambda x: CustomArray(np.array(42.0, np.float32)), sds((), np.float32), x))
    assert f(0.0) == 42.0


@flavours
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.float16,
                                   np.float32, np.complex64])
def test_callback_works_with_all_types(callback, dtype):
    def host_func(x):
        return ~x if dtype == np.bool_ else x + x

    received = []

    def cb(x):
        received.append(x)
        return host_func(x)

    x = np.array([True, False, True, True]) if dtype == np.bool_ else np.arange(4, dtype=dtype)
    out = numax.jit(lambda x: callback(cb, sds(x.shape, x.dtype), x))(x)
    np.testing.assert_array_equal(out, host_func(x))
    numax.effects_barrier()
    np.testing.assert_array_equal(received[0], x)


@flavours
def test_callback_with_wrong_number_of_args(callback):
    f = numax.jit(lambda: callback(lambda x: np.ones(4, np.float32), sds((4,), np.float32)))
    with pytest.raises(RuntimeError):
        f()
        numax.effects_barrier()


@flavours
def test_callback_with_wrong_number_of_returned_values(callback):
    f = numax.jit(lambda x: callback(lambda x: (x, np.ones(4, np.float32)), x, x))
    with pytest.raises(RuntimeError):
        f(2.0)
        numax.effects_barrier()
    g = numax.jit(lambda: io_callback(lambda: None, (sds((1,), np.float32), sds((2,), np.float32))))
    with pytest.raises(RuntimeError):
        g()
        numax.effects_barrier()


@flavours
def test_callback_with_wrong_shape_outputs(callback):
    f = numax.jit(lambda: callback(lambda: np.float32(1.0), sds((1,), np.float32)))
    with pytest.raises(RuntimeError):
        f()
        numax.effects_barrier()


@flavours
def test_callback_with_wrong_dtype_outputs(callback):
    # A float64 result declared float32 is converted (64-bit mode is off), as in JAX.
    res = numax.jit(lambda: callback(lambda: np.array([1], np.float64), sds((1,), np.float32)))()
    np.testing.assert_array_equal(res, np.array([1], np.float32))
    assert res.dtype == np.float32


@flavours
def test_callback_with_wrongly_specified_64_bit_dtype(callback):
    with pytest.raises(ValueError):
        numax.jit(lambda: callback(lambda: np.float64(1.0), sds((), np.float64)))()


@flavours
def test_callback_with_single_and_multiple_return_values(callback):
    np.testing.assert_array_equal(numax.jit(lambda: callback(lambda: np.ones(4, np.float32), sds((4,), np.float32)))(),
                                  np.ones(4, np.float32))
    x, y = numax.jit(lambda: callback(lambda: (np.ones(4, np.float32), np.ones(5, np.int32)),
                                      (sds((4,), np.float32), sds((5,), np.int32))))()
    np.testing.assert_array_equal(x, np.ones(4, np.float32))
    np.testing.assert_array_equal(y, np.ones(5, np.int32))


@flavours
def test_callback_with_multiple_arguments_and_return_values(callback):
    @numax.jit
    def f(x, y, z):
        return callback(lambda x, y, z: (x, y + z), (sds((3,), x.dtype), sds((3,), x.dtype)), x, y, z)

    x, y = f(xnp.ones(3), xnp.arange(3.0), xnp.arange(3.0) + 1.0)
    np.testing.assert_allclose(x, np.ones(3))
    np.testing.assert_allclose(y, np.array([1.0, 3.0, 5.0]))


@flavours
def test_zero_size_arrays_sent_and_received(callback):
    x, y = np.zeros((2, 0), np.float32), np.full((2,), 42.0, np.float32)
    out = numax.jit(lambda x, y: callback(lambda x, y: y, sds((2,), np.float32), x, y))(x, y)
    np.testing.assert_array_equal(out, y)
    results = (np.ones((2, 0), np.float32), y, np.ones((3, 0), np.int32), np.concatenate([y, y]) + 1.0)
    outs = numax.jit(lambda y: callback(lambda y: (results[0], y, results[2], np.concatenate([y, y]) + 1.0),
                                        tuple(sds(r.shape, r.dtype) for r in results), y))(y)
    for out, expected in zip(outs, results):
        np.testing.assert_array_equal(out, expected)
        assert out.shape == expected.shape and out.dtype == expected.dtype


@flavours
def test_callback_with_pytree_arguments_and_return_values(callback):
    out = numax.jit(lambda x: callback(lambda x: dict(y=[x]), dict(y=[sds((), np.float32)]), [x]))(np.float32(2.0))
    assert out == dict(y=[2.0])


@flavours
@pytest.mark.parametrize("shape", [(), (5,)])
def test_callback_inside_of_while_loop(callback, shape):
    @numax.jit
    def f(x):
        body = lambda x: callback(lambda x: (x + 1.0).astype(x.dtype), sds(x.shape, x.dtype), x)  # noqa: E731
        return lax.while_loop(lambda x: xnp.any(x < 10), body, x)

    x = np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(f(x), x + 10.0)


@flavours
@pytest.mark.parametrize("shape", [(), (2,)])
def test_callback_inside_of_cond(callback, shape):
    @numax.jit
    def f(pred, x):
        return lax.cond(pred, lambda x: callback(lambda x: x + 1.0, sds(x.shape, x.dtype), x),
                        lambda x: callback(lambda x: x - 1.0, sds(x.shape, x.dtype), x), x)

    x = np.ones(shape, np.float32)
    np.testing.assert_array_equal(f(True, x), x * 2.0)
    np.testing.assert_array_equal(f(False, x), x * 0.0)


@flavours
@pytest.mark.parametrize("shape", [(), (2,)])
def test_callback_inside_of_scan(callback, shape):
    @numax.jit
    def f(x):
        def body(x, _):
            return callback(lambda x: (x + 1.0).astype(x.dtype), sds(x.shape, x.dtype), x), ()

        return lax.scan(body, x, xnp.arange(10))[0]

    x = np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(f(x), x + 10.0)


def test_callback_inside_of_pmap():
    devices = numax.local_device_count()
    f = numax.pmap(lambda x: io_callback(lambda x: x + 1.0, sds(x.shape, x.dtype), x))
    x = np.arange(2 * devices, dtype=np.float32).reshape(devices, 2)
    np.testing.assert_array_equal(f(x), x + 1.0)


@flavours
def test_exception_in_callback(callback):
    def fail(x):
        raise RuntimeError("Ooops")

    with pytest.raises(RuntimeError, match="Ooops"):
        callback(fail, sds((), np.float32), 0.0)  # eagerly: the callback's own exception
    with pytest.raises(XlaRuntimeError, match="Ooops"):
        numax.jit(lambda x: callback(fail, sds(x.shape, x.dtype), x))(0.0).block_until_ready()


@flavours
def test_compilation_caching(callback):
    f = numax.jit(lambda x: callback(lambda x: 2 * x, sds(x.shape, x.dtype), x))
    x = np.arange(6, dtype=np.int32).reshape((2, 3))
    for _ in range(3):
        np.testing.assert_array_equal(f(x), 2 * x)
    assert f._cache_size() == 1


# --- IOCallbackTest ----------------------------------------------------------------------------------------
def test_io_callback_can_mutate_state():
    calls = []

    def cb():
        calls.append(None)
        return np.array(len(calls), np.int32)

    def f():
        return io_callback(cb, sds((), np.int32))

    assert f() == 1
    numax.effects_barrier()
    assert numax.jit(f)() == 2
    numax.effects_barrier()
    assert len(calls) == 2


def test_io_callback_is_never_dead_code():
    calls = []

    def f(x):
        io_callback(lambda x: calls.append(x) or x, sds((), np.float32), x)  # result unused
        return x * 2

    program = numax.make_jaxpr(f)(1.0)
    assert "io_callback" in str(program)
    assert "io_callback" in str(dce.dce_program(program.program)[0])
    assert numax.jit(f)(1.0) == 2.0
    numax.effects_barrier()
    assert calls == [1.0]


def test_io_callback_can_be_batched_if_unordered():
    calls = []

    def cb(x):
        calls.append(x)
        return x

    f = lambda x: io_callback(cb, sds((), x.dtype), x)  # noqa: E731
    np.testing.assert_array_equal(numax.vmap(f)(xnp.arange(4)), np.arange(4))
    numax.effects_barrier()
    assert len(calls) == 4
    numax.vmap(f)(xnp.arange(4))
    numax.effects_barrier()
    assert len(calls) == 8


def _error_of(run):
    try:
        run()
    except Exception as error:  # noqa: BLE001  (compared with jax's)
        return type(error), str(error).split("\n")[0]
    return None


@pytest.mark.parametrize("case", ["vmap_ordered", "jvp", "linearize", "grad", "transpose"])
def test_errors_match_jax(case):
    def program(module, callback):
        sds_ = module.ShapeDtypeStruct
        ident = lambda x, ordered=False: callback(lambda x: x, sds_((), np.float32), x, ordered=ordered)  # noqa: E731
        return {
            "vmap_ordered": lambda: module.vmap(functools.partial(ident, ordered=True))(np.arange(4.0, dtype="f4")),
            "jvp": lambda: module.jvp(ident, (0.0,), (1.0,)),
            "linearize": lambda: module.linearize(ident, 0.0),
            "grad": lambda: module.grad(lambda x: ident(x) * 2.0)(1.0),
            "transpose": lambda: module.linear_transpose(ident, np.float32(1.0))(np.float32(1.0)),
        }[case]

    expected = _error_of(program(jax, jax_io_callback))
    assert expected is not None and expected[0] is ValueError
    assert _error_of(program(numax, io_callback)) == expected


def test_grad_through_values_the_callback_does_not_depend_on():
    def f(module, callback, x):
        y = callback(lambda: np.float32(3.0), module.ShapeDtypeStruct((), np.float32))
        return x * y

    expected = jax.grad(functools.partial(f, jax, jax_io_callback))(2.0)
    assert float(numax.grad(functools.partial(f, numax, io_callback))(2.0)) == float(expected) == 3.0


def test_ordered_callbacks_run_in_program_order_within_and_across_programs():
    # (jax's test_sequence_pjit_io_callback_ordered, on one device: callbacks sleeping different times.)
    collected = []

    def cb(i, x):
        time.sleep([0.002, 0.003, 0.004][len(collected) % 3])
        collected.append(int(x.sum()))

    def f_base(i, x):
        io_callback(cb, None, i, x, ordered=True)
        io_callback(cb, None, i, x + 1, ordered=True)

    f = numax.jit(f_base)
    expected = []
    for i in range(6):
        x = np.arange(2, dtype=np.int32) + 10 * i
        f(i, x)
        expected.extend([int(x.sum()), int((x + 1).sum())])
        f(i, x + 5)
        expected.extend([int((x + 5).sum()), int((x + 6).sum())])
    numax.effects_barrier()
    assert collected == expected


def test_ordered_callbacks_are_chained_in_the_lowered_program():
    def f(x):
        io_callback(lambda x: None, None, x, ordered=True)
        io_callback(lambda x: None, None, x + 1, ordered=True)
        return x

    text = numax.jit(f).lower(np.float32(1.0)).as_text()
    calls = [line for line in text.splitlines() if "xla_ffi_python_cpu_callback" in line]
    assert len(calls) == 2 and all("has_side_effect = true" in line for line in calls)
    first_token = calls[0].split(" = ")[0].strip()  # the first call's only result: its token
    second_operands = calls[1].split('"(')[1].split(")")[0].split(", ")
    assert second_operands[-1] == first_token  # the second call waits for the first


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("with_sharding", [True, False])
def test_can_use_io_callback_in_sharded_jit(ordered, with_sharding):
    devices = numax.devices()
    mesh = Mesh(np.array(devices), ["dev"])
    collected = []

    def cb(x):
        collected.append(int(x.sum()))

    kwargs = dict(ordered=ordered)
    callback_device = devices[0]
    if with_sharding:
        callback_device = devices[-1]
        kwargs["sharding"] = SingleDeviceSharding(callback_device)

    def f(x):
        io_callback(cb, None, x, **kwargs)
        io_callback(cb, None, x + 1, **kwargs)
        return x

    f = numax.jit(f, in_shardings=NamedSharding(mesh, P("dev")), out_shardings=NamedSharding(mesh, P()))
    x = xnp.arange(mesh.size)
    f(x)
    f(x + 5)
    numax.effects_barrier()
    expected = [int(x.sum()), int((x + 1).sum()), int((x + 5).sum()), int((x + 6).sum())]
    if ordered:
        assert collected == expected
    else:
        assert sorted(collected) == sorted(expected)
    # Called once, on one device: the callback's custom call runs on a one-device mesh.
    text = f.lower(x).as_text()
    assert f"<mesh<[], device_ids=[{devices.index(callback_device)}]>, []>" in text


def test_ordered_io_callback_with_results_in_sharded_jit():
    mesh = Mesh(np.array(numax.devices()), ["x"])

    @functools.partial(numax.jit, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P()))
    def f(x):
        return io_callback(lambda x: x + 1.0, sds(x.shape, x.dtype), x, ordered=True)

    x = xnp.arange(mesh.size, dtype=np.float32)
    np.testing.assert_array_equal(f(x), np.arange(mesh.size, dtype=np.float32) + 1.0)


def test_can_shard_io_callback_manually():
    mesh = Mesh(np.array(numax.devices()), axis_names=("x",))
    spec = P("x")
    collected = {}

    def func(shard_id, x):
        collected.setdefault(shard_id.item(), []).append(x)

    def f(shard_ids, x):
        io_callback(func, None, shard_ids, x, ordered=True)
        io_callback(func, None, shard_ids, x + 1, ordered=True)

    f = numax.shard_map(f, mesh=mesh, in_specs=spec, out_specs=None)
    shard_ids = xnp.arange(mesh.devices.size)
    numax.jit(f)(shard_ids, xnp.arange(2 * numax.local_device_count()))
    numax.effects_barrier()
    assert len(collected) == mesh.devices.size
    for shard in collected.values():  # no order across shards; in order within each
        assert len(shard) == 2
        np.testing.assert_array_equal(shard[0] + 1, shard[1])


def _batched_appends(module, callback, loop):
    appended = []

    def append_x(x):
        appended.append(float(x))

    @module.jit
    def f(x):
        def body(i):
            callback(append_x, None, x, ordered=False)
            callback(append_x, None, 2 * x, ordered=False)
            return i + 1

        if loop:
            module.lax.while_loop(lambda i: i < 2, body, 0)
        else:
            body(0)

    module.vmap(f)(np.arange(3.0, dtype=np.float32))
    module.effects_barrier()
    return appended


@pytest.mark.parametrize("loop", [False, True], ids=["straight", "while_loop"])
def test_batching_with_side_effects(loop):
    appended = _batched_appends(numax, io_callback, loop)
    expected = _batched_appends(jax, jax_io_callback, loop)
    if loop:  # unordered callbacks: XLA may run the two of one loop step in either order
        assert sorted(appended) == sorted(expected)
    else:
        assert appended == expected == [0.0, 1.0, 2.0, 0.0, 2.0, 4.0]


def test_debug_and_pure_callbacks_in_sharded_jit_run_once(capsys):
    # A side-effecting custom call needs a sharding in an SPMD program (XLA's RET_CHECK otherwise): callbacks
    # run once, on one device, with whole values, as in JAX.
    mesh = Mesh(np.array(numax.devices()), ["x"])

    @functools.partial(numax.jit, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P()))
    def f(x):
        numax.debug.print("x={}", x)
        return numax.pure_callback(lambda v: v * 2, sds(x.shape, x.dtype), x)

    x = xnp.arange(mesh.size)
    np.testing.assert_array_equal(f(x), 2 * np.arange(mesh.size))
    numax.effects_barrier()
    assert capsys.readouterr().out == f"x={np.arange(mesh.size)}\n"
