"""run_interpreted: Triton kernels through Triton's interpreter on numpy arrays, checked against numpy."""

import inspect
import os
import subprocess
import sys
import threading

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
import triton_kernels as kernels
from hypothesis import given
from hypothesis import strategies as st
from numax.lowering.triton_interpret import InterpretedKernelError, run_interpreted

BLOCK = 32


def vector_grid(n, block=BLOCK):
    return (triton.cdiv(n, block),)


def run_add(x, y, out_dtype=None):
    n = x.size
    (out,) = run_interpreted(kernels.add_kernel, [x, y, n], [(x.shape, out_dtype or x.dtype)],
                             grid=vector_grid(n), metaparams={"BLOCK": BLOCK})
    return out


@given(n=st.integers(1, 150), dtype=st.sampled_from([np.float32, np.float16, np.int32, np.int64, np.uint8]))
def test_vector_add_with_masked_tail(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 100, n).astype(dtype)
    y = rng.integers(0, 100, n).astype(dtype)
    out = run_add(x, y)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("alpha", [2.5, np.float32(-1.5), np.float64(0.25), 3, np.int64(-2)])
def test_scalar_arguments_through_a_jit_helper(alpha):
    n = np.int64(70)  # a numpy integer n, passed as a Python int
    x = np.linspace(-1, 1, 70, dtype=np.float32)
    y = np.arange(70, dtype=np.float32)
    (out,) = run_interpreted(kernels.axpy_kernel, [x, y, alpha, n], [((70,), np.float32)],
                             grid=vector_grid(70), metaparams={"BLOCK": BLOCK})
    np.testing.assert_allclose(out, np.float32(alpha) * x + y, rtol=1e-6)


@pytest.mark.parametrize("negate", [True, False, np.bool_(True)])
def test_bool_scalar_argument(negate):
    x = np.arange(40, dtype=np.float32)
    (out,) = run_interpreted(kernels.negate_if_kernel, [x, negate, 40], [((40,), np.float32)],
                             grid=vector_grid(40), metaparams={"BLOCK": BLOCK})
    np.testing.assert_array_equal(out, -x if negate else x)


def test_input_output_alias_shares_the_buffer():
    x = np.arange(50, dtype=np.float32)
    accumulator = np.full(50, 5.0, np.float32)
    before = accumulator.copy()
    # The kernel writes through its input pointer only: the output shows it because the two are one buffer.
    (out,) = run_interpreted(kernels.add_in_place_kernel, [x, accumulator, 50], [((50,), np.float32)],
                             grid=vector_grid(50), metaparams={"BLOCK": BLOCK}, input_output_aliases={1: 0})
    np.testing.assert_array_equal(out, before + x)
    np.testing.assert_array_equal(accumulator, before)  # the caller's array is not written


def test_unaliased_output_does_not_see_input_writes():
    x = np.arange(50, dtype=np.float32)
    accumulator = np.full(50, 5.0, np.float32)
    (out,) = run_interpreted(kernels.add_in_place_kernel, [x, accumulator, 50], [((50,), np.float32)],
                             grid=vector_grid(50), metaparams={"BLOCK": BLOCK})
    np.testing.assert_array_equal(out, np.zeros(50, np.float32))


def test_zeroed_output_is_zeroed_after_the_aliased_copy():
    x = np.arange(50, dtype=np.float32)
    accumulator = np.full(50, 5.0, np.float32)
    (out,) = run_interpreted(kernels.add_in_place_kernel, [x, accumulator, 50], [((50,), np.float32)],
                             grid=vector_grid(50), metaparams={"BLOCK": BLOCK}, input_output_aliases={1: 0},
                             zeroed_outputs=(0,))
    np.testing.assert_array_equal(out, x)


def test_zeroed_output_accumulated_by_atomics():
    x = np.random.default_rng(1).standard_normal(100).astype(np.float32)
    (total,) = run_interpreted(kernels.sum_kernel, [x, 100], [((1,), np.float32)], grid=vector_grid(100),
                               metaparams={"BLOCK": BLOCK}, zeroed_outputs=(0,))
    np.testing.assert_allclose(total, [x.sum()], rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_row_softmax(dtype):
    x = np.random.default_rng(2).standard_normal((6, 20)).astype(dtype)
    (out,) = run_interpreted(kernels.softmax_kernel, [x, 20, 20], [(x.shape, dtype)], grid=(6,),
                             metaparams={"BLOCK": 32})
    x32 = x.astype(np.float32)
    numerator = np.exp(x32 - x32.max(axis=1, keepdims=True))
    expected = (numerator / numerator.sum(axis=1, keepdims=True)).astype(dtype)
    assert out.dtype == dtype
    # One unit in the last place for bfloat16: the interpreter truncates float32 -> bfloat16 where numpy rounds.
    rtol = 2.0**-7 if dtype == ml_dtypes.bfloat16 else 1e-6
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32), rtol=rtol, atol=1e-7)


def test_blocked_matmul_on_a_2d_grid():
    rng = np.random.default_rng(3)
    m, n, k = 40, 36, 24  # not multiples of the 16x16x16 blocks: every edge is masked
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    (c,) = run_interpreted(kernels.matmul_kernel, [a, b, m, n], [((m, n), np.float32)],
                           grid=(triton.cdiv(m, 16), triton.cdiv(n, 16)),
                           metaparams={"K": k, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16})
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_multiple_outputs():
    x = np.arange(40, dtype=np.int32)
    y = np.arange(40, dtype=np.int32)[::-1] * 3
    total, difference = run_interpreted(kernels.add_sub_kernel, [x, y, 40], [((40,), np.int32)] * 2,
                                        grid=vector_grid(40), metaparams={"BLOCK": BLOCK})
    np.testing.assert_array_equal(total, x + y)
    np.testing.assert_array_equal(difference, x - y)


def test_non_contiguous_input_is_passed_row_major():
    x = np.arange(48, dtype=np.float32).reshape(6, 8).T  # a transposed view
    y = np.ones((8, 6), np.float32)
    np.testing.assert_array_equal(run_add(x, y), x + y)


def test_read_only_inputs():
    x = np.arange(40, dtype=np.float32)
    x.setflags(write=False)  # as host callbacks may see XLA's buffers
    np.testing.assert_array_equal(run_add(x, x), 2 * x)


def test_autotune_takes_its_first_config_before_inner_heuristics():
    (out,) = run_interpreted(kernels.tuned_metaparams_kernel, [7], [((3,), np.int32)], grid=(1,), metaparams={})
    np.testing.assert_array_equal(out, [7, 3, 7 + 3])  # n, the first config's A, the heuristic's n + A


def test_heuristic_reads_an_array_argument():
    x = np.arange(100, dtype=np.float32)
    (out,) = run_interpreted(kernels.add_kernel_block_from_size, [x, x, 100], [((100,), np.float32)], grid=(1,),
                             metaparams={})  # BLOCK = next_power_of_2(x.numel()) = 128 covers it in one program
    np.testing.assert_array_equal(out, 2 * x)


def test_autotune_config_and_call_setting_one_metaparameter():
    with pytest.raises(TypeError, match=r"store_metaparams_kernel.*\['A'\]"):
        run_interpreted(kernels.tuned_metaparams_kernel, [7], [((3,), np.int32)], grid=(1,), metaparams={"A": 1})


def test_autotune_config_with_a_pre_hook_is_refused():
    hooked = triton.autotune(configs=[triton.Config({"BLOCK": 32}, pre_hook=lambda args: None)], key=[])(
        kernels.add_kernel)
    x = np.ones(8, np.float32)
    with pytest.raises(NotImplementedError, match="add_kernel.*pre_hook"):
        run_interpreted(hooked, [x, x, 8], [((8,), np.float32)], grid=(1,), metaparams={})


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_inputs_computed_in_float32(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(70).astype(dtype)
    y = rng.standard_normal(70).astype(dtype)
    (out,) = run_interpreted(kernels.add_upcast_kernel, [x, y, 70], [((70,), np.float32)], grid=vector_grid(70),
                             metaparams={"BLOCK": BLOCK})
    np.testing.assert_array_equal(out, x.astype(np.float32) + y.astype(np.float32))


def test_bfloat16_store_truncates():
    """Documents the interpreter's float32 -> bfloat16 conversion: the upper 16 bits, where numpy rounds."""
    x = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    (out,) = run_interpreted(kernels.add_upcast_kernel, [x, np.zeros_like(x), 64], [((64,), ml_dtypes.bfloat16)],
                             grid=(1,), metaparams={"BLOCK": 64})
    np.testing.assert_array_equal(out.view(np.uint16), (x.view(np.uint32) >> 16).astype(np.uint16))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64, np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_every_dtype_round_trips_bit_exact(dtype):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, 0, 1, info.max - 1] * 4, dtype)
    else:
        x = (np.arange(20) % 3 == 1).astype(dtype) if dtype == np.bool_ else np.linspace(-3, 3, 20).astype(dtype)
    (out,) = run_interpreted(kernels.copy_kernel, [x, 20], [((20,), dtype)], grid=(1,), metaparams={"BLOCK": 32})
    assert out.dtype == np.dtype(dtype)
    assert out.tobytes() == x.tobytes()


def test_concurrent_runs_from_threads():
    results, expected = {}, {}

    def worker(index):
        x = np.full(64, index, np.float32)
        expected[index] = x + 1
        results[index] = run_add(x, np.ones(64, np.float32))

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in range(4):
        np.testing.assert_array_equal(results[index], expected[index])


def test_kernel_error_names_the_kernel_and_keeps_the_cause():
    x = -np.ones(40, np.float32)
    call = dict(kernel=kernels.positive_kernel, call_args=[x, 40], out_avals=[((40,), np.float32)],
                grid=vector_grid(40), metaparams={"BLOCK": BLOCK})
    np.testing.assert_array_equal(run_interpreted(**call)[0], x)  # device asserts are off without debug
    with pytest.raises(InterpretedKernelError, match=r"'positive_kernel'.*program id \(0, 0, 0\).*positive") as info:
        run_interpreted(**call, debug=True)
    assert isinstance(info.value.__cause__, AssertionError)


@triton.jit
def sum_then_assert_negative_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """out = sum(x), asserting (under debug) after the sum that it is negative."""
    total = tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0)
    tl.device_assert(total < 0, "the sum must be negative")
    tl.store(out_ptr, total)


def language_namespaces():
    """What Triton's interpreter patches while it runs (`_patch_lang` in triton/runtime/interpreter.py): the
    builtins of triton.language, triton.language.core and triton.language.math, and methods of the tensor, dtype,
    condition and tensor_descriptor_base classes."""
    core = tl.core
    return [tl, core, tl.math, core.tensor, core.dtype, core.condition, core.tensor_descriptor_base]


def changed_names(before):
    """The names of `language_namespaces()` bound to other objects than in `before` (a snapshot of their vars), or
    added since: except submodules (imported meanwhile) and `__annotations__` (which Python makes on first read)."""
    missing = object()
    changed = []
    for namespace, held in zip(language_namespaces(), before):
        now = dict(vars(namespace))
        changed += [f"{namespace.__name__}.{name}" for name in sorted(held.keys() | now.keys())
                    if held.get(name, missing) is not now.get(name, missing)
                    and (name in held or not (inspect.ismodule(now[name]) or name == "__annotations__"))]
    return changed


def test_interpreted_runs_leave_triton_language_as_they_found_it():
    """tl.sum is a @triton.jit helper of Triton's own, whose module sees triton.language.core: calling it patches
    tl.core, and a GPU compile later in the process must still find the real builtins, after a kernel that
    returns and after one that raises."""
    before = [dict(vars(namespace)) for namespace in language_namespaces()]
    assert tl.core.is_builtin(tl.core.mul) and tl.core.is_builtin(tl.core.reduce)
    x = np.ones(32, np.float32)
    call = dict(kernel=sum_then_assert_negative_kernel, call_args=[x], out_avals=[((1,), np.float32)], grid=(1,),
                metaparams={"BLOCK": 32})
    with pytest.raises(InterpretedKernelError, match="negative"):
        run_interpreted(**call, debug=True)
    assert changed_names(before) == []
    np.testing.assert_array_equal(run_interpreted(**call)[0], [32])  # device asserts are off without debug
    assert changed_names(before) == []
    assert tl.core.is_builtin(tl.core.mul) and tl.core.is_builtin(tl.core.reduce)
    assert "__bool__" not in vars(tl.core.condition)  # added by the interpreter, not only replaced


def test_argument_conversion_error_names_the_kernel():
    x = np.ones(4, np.float32)
    with pytest.raises(InterpretedKernelError, match="'add_kernel' failed in Triton's interpreter: OverflowError"):
        run_interpreted(kernels.add_kernel, [x, x, 2**70], [((4,), np.float32)], grid=(1,), metaparams={"BLOCK": 4})


def not_a_kernel(x_ptr, out_ptr):
    pass


@pytest.mark.parametrize("kernel", [not_a_kernel, kernels.add_kernel.fn, "add_kernel"])
def test_not_a_triton_kernel(kernel):
    with pytest.raises(TypeError, match="must be a @triton.jit function"):
        run_interpreted(kernel, [], [((1,), np.float32)], grid=(1,), metaparams={})


@pytest.mark.parametrize("call_args", [[np.ones(4, np.float32), 4], [np.ones(4), np.ones(4), 4, 5]])
def test_wrong_number_of_arguments(call_args):
    with pytest.raises(TypeError, match=r"add_kernel\(x_ptr, y_ptr, n, out_ptr, BLOCK: constexpr\)' takes 4"):
        run_interpreted(kernels.add_kernel, call_args, [((4,), np.float32)], grid=(1,), metaparams={"BLOCK": 4})


def test_missing_constexpr():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="add_kernel.*missing the constexpr metaparameter 'BLOCK'"):
        run_interpreted(kernels.add_kernel, [x, x, 4], [((4,), np.float32)], grid=(1,), metaparams={})


def test_unknown_metaparameter():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"add_kernel.*no parameters named \['BLOCK_SIZE'\]"):
        run_interpreted(kernels.add_kernel, [x, x, 4], [((4,), np.float32)], grid=(1,),
                        metaparams={"BLOCK": 4, "BLOCK_SIZE": 4})


@pytest.mark.parametrize("grid", [(), (1, 1, 1, 1), (1.5,), 4])
def test_bad_grid(grid):
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="grid for Triton kernel 'add_kernel'"):
        run_interpreted(kernels.add_kernel, [x, x, 4], [((4,), np.float32)], grid=grid, metaparams={"BLOCK": 4})


@pytest.mark.parametrize("aliases", [{2: 0}, {0: 0}])  # no third array; a float64 input for a float32 output
def test_bad_input_output_alias(aliases):
    x = np.ones(4, np.float64)
    with pytest.raises(ValueError, match="input_output_aliases for Triton kernel 'add_kernel'"):
        run_interpreted(kernels.add_kernel, [x, x, 4], [((4,), np.float32)], grid=(1,), metaparams={"BLOCK": 4},
                        input_output_aliases=aliases)


def test_unsupported_argument_type():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="argument 1 of Triton kernel 'add_kernel'.*list"):
        run_interpreted(kernels.add_kernel, [x, [1.0] * 4, 4], [((4,), np.float32)], grid=(1,),
                        metaparams={"BLOCK": 4})


_NO_TORCH_RUN = """
import sys


class NoTorch:  # torch cannot be found, as if it were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {{name!r}}")


sys.meta_path.insert(0, NoTorch())
sys.path.insert(0, {kernels!r})
import numpy as np
import triton_kernels
from numax.lowering.triton_interpret import run_interpreted
ones = np.ones(4, np.float32)
(out,) = run_interpreted(triton_kernels.add_kernel, [ones, ones, 4], [((4,), np.float32)], grid=(1,),
                         metaparams=dict(BLOCK=4))
assert (out == 2).all(), out
"""


def test_no_torch_needed_and_no_triton_at_import():
    script = "import sys, numax, numax.lowering.triton_interpret; assert 'triton' not in sys.modules"
    subprocess.run([sys.executable, "-c", script], check=True)
    # With torch unimportable (where it is installed, Triton may import it by itself), a kernel still runs.
    script = _NO_TORCH_RUN.format(kernels=os.path.dirname(os.path.abspath(kernels.__file__)))
    subprocess.run([sys.executable, "-c", script], check=True)
