"""Host callbacks: numax.pure_callback, numax.debug.callback and numax.debug.print, eager and under jit."""

import time

import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from jaxlib.xla_client import XlaRuntimeError  # numax loads jaxlib on first use, so ask jaxlib itself
from numax.core import dce
from numax.core import dtypes as numax_dtypes
from numax.lowering import xla
from numax.lowering.lower import lower_to_module

import numax
import numax.numpy as xnp

eager = lambda f: f  # noqa: E731
modes = pytest.mark.parametrize("mode", [eager, numax.jit], ids=["eager", "jit"])


def sds(shape, dtype):
    return numax.ShapeDtypeStruct(shape, dtype)


# --- pure_callback: values -----------------------------------------------------------------------------
@modes
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64, np.uint8, numax_dtypes.bfloat16,
                                   np.float16])
def test_pure_callback_roundtrip_dtypes(mode, dtype, rng):
    x = rand(rng, (2, 3), dtype)
    seen = []

    def host(a):
        seen.append((type(a), a.dtype, a.shape))
        return a[::-1]

    out = mode(lambda x: numax.pure_callback(host, sds((2, 3), dtype), x))(x)
    assert isinstance(out, numax.Array)
    assert_close(out, x[::-1])
    assert seen == [(np.ndarray, np.dtype(dtype), (2, 3))]


@modes
def test_pure_callback_with_traced_math_around_it(mode, rng):
    x = rand(rng, (4,), np.float32)

    def f(x):
        y = numax.pure_callback(np.sin, sds((4,), np.float32), x * 2)
        return xnp.cos(y) + 1

    expected = jnp.cos(jax.pure_callback(np.sin, jax.ShapeDtypeStruct((4,), jnp.float32), x * 2)) + 1
    assert_close(mode(f)(x), expected)


@modes
def test_pure_callback_multiple_outputs_and_pytrees(mode, rng):
    x, y = rand(rng, (3,), np.float32), rand(rng, (2, 2), np.int32)

    def host(a, b, *, scale):
        return {"sum": a.sum() * scale, "pair": (b.T, a.astype(np.int32))}

    shapes = {"sum": sds((), np.float32), "pair": (sds((2, 2), np.int32), sds((3,), np.int32))}
    out = mode(lambda x, y: numax.pure_callback(host, shapes, x, y, scale=np.float32(2)))(x, y)
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    assert_close(out["sum"], np.float32(x.sum() * 2))
    assert_close(out["pair"][0], y.T)
    assert_close(out["pair"][1], x.astype(np.int32))


@modes
def test_pure_callback_pytree_arguments_and_scalars(mode):
    def host(tree, k):
        assert isinstance(k, np.ndarray) and k.dtype == np.float32  # Python floats arrive canonical
        return tree["a"] + tree["b"][0] * k

    f = lambda x: numax.pure_callback(host, sds((2,), np.float32), {"a": x, "b": [x]}, 3.0)
    assert_close(mode(f)(np.array([1.0, 2.0], np.float32)), np.array([4.0, 8.0], np.float32))


@modes
def test_pure_callback_no_arguments_and_zero_size(mode):
    f = lambda: numax.pure_callback(lambda: (np.zeros((0, 3), np.float32), np.int32(7)),
                                    (sds((0, 3), np.float32), sds((), np.int32)))
    empty, seven = mode(f)()
    assert empty.shape == (0, 3) and empty.dtype == np.float32
    assert int(seven) == 7 and seven.dtype == np.int32


@modes
def test_pure_callback_converts_results_within_a_kind_or_upwards(mode):
    # Python scalars, float64 arrays, int arrays and lists all become the declared float32 (as jax does).
    for result in (2.0, np.float64(2.0), np.int64(2), [[2.0]], True):
        out = mode(lambda x: numax.pure_callback(lambda a: result, sds((1, 1) if isinstance(result, list) else (),
                                                                       np.float32), x))(np.float32(0))
        assert out.dtype == np.float32
        assert float(np.asarray(out).reshape(())) == float(np.asarray(result).reshape(()))


def test_pure_callback_runs_every_call_but_traces_once():
    calls, traces = [], []

    def host(a):
        calls.append(a.copy())
        return a + 1

    @numax.jit
    def f(x):
        traces.append(1)
        return numax.pure_callback(host, sds((2,), np.int32), x)

    for k in range(3):
        assert_close(f(np.array([k, k], np.int32)), np.array([k + 1, k + 1], np.int32))
    assert len(traces) == 1
    assert [c.tolist() for c in calls] == [[0, 0], [1, 1], [2, 2]]


def test_pure_callback_arguments_are_copies_the_callback_may_keep():
    kept = []

    def host(a):
        kept.append(a)
        return a * 0

    f = numax.jit(lambda x: numax.pure_callback(host, sds((1000,), np.float32), x * 1))
    for k in range(4):
        f(np.full((1000,), k, np.float32)).block_until_ready()
    for k, a in enumerate(kept):
        np.testing.assert_array_equal(a, np.full((1000,), k, np.float32))


def test_pure_callback_lowering_text():
    f = numax.jit(lambda x: numax.pure_callback(lambda a: a, sds((2, 3), np.float32), x))
    text = f.lower(np.zeros((2, 3), np.float32)).as_text()
    target = f"xla_ffi_python_{numax.default_backend()}_callback"
    assert '"stablehlo.custom_call"' in text and f'call_target_name = "{target}"' in text
    assert "api_version = 4 : i32" in text and "backend_config = {index = 0 : ui64}" in text
    assert "has_side_effect" not in text
    assert "operand_layouts = [dense<[1, 0]> : tensor<2xindex>]" in text


def test_gpu_lowering_uses_the_gpu_target():
    def f(x):
        numax.debug.print("{}", x)
        return numax.pure_callback(lambda a: a, sds((3,), np.float32), x)

    closed = numax.make_jaxpr(f)(np.zeros(3, np.float32))
    text, module = lower_to_module(closed, platform="gpu")
    assert text.count('call_target_name = "xla_ffi_python_gpu_callback"') == 2
    assert "cpu_callback" not in text
    assert "backend_config = {index = 1 : ui64}" in text and len(module.host_callbacks) == 2


def test_pure_callback_inside_nested_jit_and_twice_in_one_program(rng):
    x = rand(rng, (3,), np.float32)
    inner = numax.jit(lambda x: numax.pure_callback(lambda a: a * 2, sds((3,), np.float32), x))
    outer = numax.jit(lambda x: inner(x) + numax.pure_callback(lambda a: a * 10, sds((3,), np.float32), x))
    assert_close(outer(x), x * 12)


# --- pure_callback: errors --------------------------------------------------------------------------------
def _raises_eager_and_jit(fun, x, match):
    with pytest.raises(TypeError, match=match):
        fun(x)
    # Compiled, the callback's exception reaches the caller through XLA (a RuntimeError subclass).
    with pytest.raises(XlaRuntimeError, match=match):
        [np.asarray(leaf) for leaf in numax.tree_leaves(numax.jit(fun)(x))]


@pytest.mark.parametrize("result, match", [
    (lambda a: a[:2], r"result 0 of callback .* has shape \(2,\) \(dtype float32\), but result_shape_dtypes "
                      r"declares shape \(3,\) \(dtype float32\)"),
    (lambda a: a.reshape(3, 1), r"has shape \(3, 1\)"),
    (lambda a: (a + 1j).astype(np.complex64), r"dtype complex64 \(shape \(3,\)\), which does not convert to "
                                              r"the declared dtype float32"),
    (lambda a: np.array(["a", "b", "c"]), r"dtype str32 .* does not convert to the declared dtype float32"),
    (lambda a: (a, a), r"has shape \(2, 3\)"),  # a tuple where an array is declared is one array-like
    (lambda a: None, r"has shape \(\) \(dtype object\), but result_shape_dtypes declares shape \(3,\)"),
])
def test_pure_callback_wrong_results_raise(result, match):
    fun = lambda x: numax.pure_callback(result, sds((3,), np.float32), x)
    _raises_eager_and_jit(fun, np.zeros(3, np.float32), match)


def test_pure_callback_wrong_structure():
    fun = lambda x: numax.pure_callback(lambda a: a, (sds((3,), np.float32), sds((3,), np.float32)), x)
    _raises_eager_and_jit(fun, np.zeros(3, np.float32), r"returned a value of structure PyTreeDef\(\*\), but "
                          r"result_shape_dtypes declares PyTreeDef\(\(\*, \*\)\) \(Expected tuple, got")
    fun = lambda x: numax.pure_callback(lambda a: {"b": a}, {"a": sds((3,), np.float32)}, x)
    _raises_eager_and_jit(fun, np.zeros(3, np.float32), r"returned a value of structure PyTreeDef\(\{'b': \*\}\)")


def test_pure_callback_wrong_dtype_kind_for_integer_result():
    fun = lambda x: numax.pure_callback(lambda a: a * 0.5, sds((3,), np.int32), x)
    _raises_eager_and_jit(fun, np.zeros(3, np.float32), "dtype float32 .* declared dtype int32")


def test_exception_in_callback_is_a_python_exception():
    def host(a):
        raise ZeroDivisionError("host says no")

    fun = lambda x: numax.pure_callback(host, sds((3,), np.float32), x)
    with pytest.raises(ZeroDivisionError, match="host says no"):
        fun(np.zeros(3, np.float32))
    with pytest.raises(XlaRuntimeError, match="ZeroDivisionError: host says no"):
        np.asarray(numax.jit(fun)(np.zeros(3, np.float32)))
    # The process survives and the next call works.
    assert_close(numax.jit(lambda x: numax.pure_callback(np.cos, sds((3,), np.float32), x))(np.zeros(3, np.float32)),
                 np.ones(3, np.float32))


def test_pure_callback_argument_and_declaration_errors():
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="64-bit type float64 while 64-bit mode is off"):
        numax.pure_callback(lambda a: a, sds((3,), np.float64), x)
    with pytest.raises(TypeError, match="must have .shape and .dtype .* got int 3"):
        numax.pure_callback(lambda a: a, 3, x)
    with pytest.raises(TypeError, match="arguments must be arrays or scalars .* got str 'text'"):
        numax.pure_callback(lambda a: a, sds((3,), np.float32), "text")
    with pytest.raises(ValueError, match="unknown vmap_method 'bogus'"):
        numax.pure_callback(lambda a: a, sds((3,), np.float32), x, vmap_method="bogus")


def test_pure_callback_64_bit_results_with_x64():
    numax.config.update("numax_enable_x64", True)
    try:
        out = numax.jit(lambda x: numax.pure_callback(lambda a: a * 2, sds((2,), np.float64), x))(
            np.array([1.5, 2.5]))
        assert out.dtype == np.float64
        assert_close(out, np.array([3.0, 5.0]))
    finally:
        numax.config.update("numax_enable_x64", False)


def test_dce_drops_unused_pure_callback_but_keeps_debug_callback():
    def f(x):
        numax.pure_callback(lambda a: a, sds((3,), np.float32), x)
        numax.debug.callback(lambda a: None, x)
        return x + 1

    closed = numax.make_jaxpr(f)(np.zeros(3, np.float32))
    names = [e.primitive.name for e in closed.equations]
    assert names == ["pure_callback", "debug_callback", "add"]
    pruned, _ = dce.dce_program(closed.program)
    assert [e.primitive.name for e in pruned.equations] == ["debug_callback", "add"]


# --- debug.callback / debug.print ---------------------------------------------------------------------------
@modes
def test_debug_callback_values_pytrees_and_static_leaves(mode):
    seen = []

    def host(tree, label, *, scale):
        seen.append((tree["x"].copy(), tree["y"][0].item(), label, scale))

    def f(x, y):
        result = numax.debug.callback(host, {"x": x * 2, "y": [y]}, "tag", scale=3)
        assert result is None
        return x

    f = mode(f)
    f(np.arange(3, dtype=np.float32), np.int32(5))
    f(np.ones(3, np.float32), np.int32(6))
    numax.effects_barrier()  # callbacks run asynchronously (a GPU client may return before they run)
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0][0], np.arange(3, dtype=np.float32) * 2)
    assert seen[0][1:] == (5, "tag", 3) and seen[1][1:] == (6, "tag", 3)
    np.testing.assert_array_equal(seen[1][0], np.full(3, 2, np.float32))


@modes
def test_debug_print_formats_runtime_values(mode, capsys):
    def f(x):
        numax.debug.print("x={} total={t:.1f} n={n}", x, t=x.sum(), n=7)
        return x * 2

    out = mode(f)(xnp.array([1.0, 2.5], dtype=np.float32))
    numax.block_until_ready(out)
    assert capsys.readouterr().out == "x=[1.  2.5] total=3.5 n=7\n"
    assert_close(out, np.array([2.0, 5.0], np.float32))


def test_debug_print_under_jit_prints_on_every_call_not_at_trace_time(capsys):
    traces = []

    @numax.jit
    def f(x):
        traces.append(1)
        numax.debug.print("value {}", x)
        return x + 1

    f(np.int32(1)).block_until_ready()
    f(np.int32(2)).block_until_ready()
    assert capsys.readouterr().out == "value 1\nvalue 2\n"
    assert len(traces) == 1


def test_debug_print_with_unused_result_and_no_outputs_still_prints(capsys):
    @numax.jit
    def only_prints(x):
        numax.debug.print("only {}", x * 3)

    @numax.jit
    def unused(x):
        y = x * 5
        numax.debug.print("unused {}", y)
        return x

    assert only_prints(np.float32(2)) is None
    unused(np.float32(2)).block_until_ready()
    numax.jit(lambda: numax.debug.print("no arguments"))()
    numax.effects_barrier()  # the last program has no outputs to wait for
    assert capsys.readouterr().out == "only 6.0\nunused 10.0\nno arguments\n"
    text = unused.lower(np.float32(2)).as_text()
    assert "has_side_effect = true" in text and f"xla_ffi_python_{numax.default_backend()}_callback" in text


def test_debug_print_order_within_a_program(capsys):
    @numax.jit
    def f(x):
        numax.debug.print("first {}", x)
        y = x + 1
        numax.debug.print("second {}", y)
        numax.debug.print("third {}", y * 2, ordered=True)
        return y

    f(np.int32(1)).block_until_ready()
    assert capsys.readouterr().out == "first 1\nsecond 2\nthird 4\n"


def test_debug_callbacks_are_chained_in_program_order(capsys):
    @numax.jit
    def f(x):
        for k in range(6):
            numax.debug.print("step {} {}", k, x + k)  # independent of each other: only the chain orders them
        return x

    f(np.int32(10)).block_until_ready()
    assert capsys.readouterr().out == "".join(f"step {k} {10 + k}\n" for k in range(6))
    text = f.lower(np.int32(10)).as_text()
    calls = [line for line in text.splitlines() if "custom_call" in line]
    assert len(calls) == 6 and all("-> tensor<0xui8>" in line for line in calls)
    # Each call after the first consumes the token the previous one returned.
    for previous, current in zip(calls, calls[1:]):
        token = previous.split("=")[0].strip()
        assert f", {token})" in current, (previous, current)


def test_debug_print_in_nested_jit_and_make_jaxpr(capsys):
    inner = numax.jit(lambda x: (numax.debug.print("inner {}", x), x * 2)[1])
    outer = numax.jit(lambda x: inner(x) + 1)
    outer(np.int32(4)).block_until_ready()
    assert capsys.readouterr().out == "inner 4\n"
    text = str(numax.make_jaxpr(lambda x: numax.debug.print("p {}", x))(np.int32(1)))
    assert "debug_callback" in text and "ordered=False" in text
    assert capsys.readouterr().out == ""  # tracing alone prints nothing


def test_debug_print_respects_numpy_print_options_at_trace_time(capsys):
    with np.printoptions(precision=2):
        f = numax.jit(lambda x: numax.debug.print("{}", x))
        f(np.array([1 / 3], np.float32))
    numax.effects_barrier()
    assert capsys.readouterr().out == "[0.33]\n"


def test_debug_print_bad_format_raises():
    # Checked when traced, as in JAX: a missing argument raises KeyError/IndexError, an unused one ValueError.
    with pytest.raises(KeyError, match="missing"):
        numax.jit(lambda x: (numax.debug.print("{missing}", x), x)[1])(np.float32(1))
    with pytest.raises(KeyError, match="missing"):
        numax.debug.print("{missing}", np.float32(1))
    with pytest.raises(IndexError):
        numax.debug.print("{} {}", np.float32(1))
    with pytest.raises(ValueError, match="Unused positional arguments"):
        numax.jit(lambda x: numax.debug.print("no placeholder", x))(np.float32(1))
    # Unchecked, the error happens in the callback and reaches the caller through the outputs (on a GPU, with
    # no outputs to wait for, it may not).
    f = numax.jit(lambda x: (numax.debug.print("{missing}", x, skip_format_check=True), x)[1])
    with pytest.raises(XlaRuntimeError, match="KeyError: 'missing'"):
        np.asarray(f(np.float32(1)))


def test_compiling_a_callback_module_without_its_callbacks_is_refused_not_a_crash():
    from numax.lowering import xla

    f = numax.jit(lambda x: numax.pure_callback(lambda a: a, sds((3,), np.float32), x))
    text = f.lower(np.zeros(3, np.float32)).as_text()
    backend = xla.get_backend("cpu")
    with pytest.raises(xla.LoweringError, match="calls host callback 0, but only 0 were given"):
        xla.compile_module(text, backend, [backend.default_device], [])


def test_effects_barrier_waits_for_callbacks_of_programs_without_outputs():
    seen = []

    def slow(x):
        time.sleep(0.3)
        seen.append(float(x))

    launch = numax.jit(lambda x: numax.debug.callback(slow, x))
    started = time.perf_counter()
    assert launch(np.float32(1.5)) is None
    # (CPU clients may run the callback before the call returns; GPU clients, the TFRT one above all, do not)
    assert xla._latest_effect_tokens  # the program's runtime token, kept for the barrier
    numax.effects_barrier()
    assert not xla._latest_effect_tokens
    assert seen == [1.5] and time.perf_counter() - started >= 0.3
    launch(np.float32(2.5))  # a cache hit: the Python path keeps the token (the native path leaves it there)
    numax.effects_barrier()
    assert seen == [1.5, 2.5]


def test_effects_barrier_waits_for_pmapped_callbacks():
    seen = []
    devices = numax.local_device_count()
    launch = numax.pmap(lambda x: numax.debug.callback(lambda v: seen.append(float(v)), x))
    assert launch(np.arange(devices, dtype=np.float32)) is None
    assert xla._latest_effect_tokens  # the multi-device program's token, kept for the barrier
    numax.effects_barrier()
    assert not xla._latest_effect_tokens and sorted(seen) == list(range(devices))
