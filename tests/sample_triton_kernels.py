"""Triton kernels of bench/gpu_triton_check.py and tests/test_triton_gpu_compile.py, beside those of
tests/triton_kernels.py (which this module re-exports where they are the same). Arguments are the inputs, then
the outputs, as jax-triton 0.3 passes them."""

import triton
import triton.language as tl
from triton_kernels import add_kernel  # noqa: F401  (the shared kernels, under the names the GPU check uses)
from triton_kernels import add_sub_kernel as sum_and_difference_kernel  # noqa: F401
from triton_kernels import sum_kernel as atomic_sum_kernel  # noqa: F401


@triton.jit
def softmax_kernel(x_ptr, n_cols, out_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.jit
def axpy_kernel(a, x_ptr, y_ptr, n, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, a * tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@triton.jit
def accumulate_kernel(x_ptr, y_ptr, n, out_ptr, BLOCK: tl.constexpr):
    """out += y, reading out: right only when out is x's buffer (aliased)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(out_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@triton.jit
def atomic_sum_into_kernel(x_ptr, acc_ptr, n, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))


_TUNING = [triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4),
           triton.Config({"BLOCK": 4096}, num_warps=8)]
autotuned_add_kernel = triton.autotune(configs=_TUNING, key=["n"])(add_kernel)
autotuned_accumulate_kernel = triton.autotune(configs=_TUNING, key=["n"])(accumulate_kernel)
heuristic_softmax_kernel = triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})(
    softmax_kernel)
