"""Triton kernels shared by the numax.triton tests (@triton.jit needs its source in a file).

Each kernel takes its inputs (arrays and scalars), then its output pointers, then its constexprs: the order in
which jax-triton (and numax.triton.triton_call) passes them.
"""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, out_ptr, BLOCK: tl.constexpr):
    """out = x + y over n elements; the last block is masked."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def _axpy(alpha, x, y):
    return alpha * x + y


@triton.jit
def axpy_kernel(x_ptr, y_ptr, alpha, n, out_ptr, BLOCK: tl.constexpr):
    """out = alpha * x + y, through a @triton.jit helper; alpha and n are kernel scalars."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, _axpy(alpha, x, y), mask=mask)


@triton.jit
def negate_if_kernel(x_ptr, negate, n, out_ptr, BLOCK: tl.constexpr):
    """out = -x if the bool scalar negate else x."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if negate:
        x = -x
    tl.store(out_ptr + offsets, x, mask=mask)


@triton.jit
def add_upcast_kernel(x_ptr, y_ptr, n, out_ptr, BLOCK: tl.constexpr):
    """out = x + y computed in float32 and stored in out's dtype (the way to add bfloat16 in the interpreter)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def copy_kernel(x_ptr, n, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def sum_kernel(x_ptr, n, total_ptr, BLOCK: tl.constexpr):
    """total += sum(x), one atomic add per program: total must start at zero."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


@triton.jit
def add_in_place_kernel(x_ptr, accumulator_ptr, n, accumulator_out_ptr, BLOCK: tl.constexpr):
    """accumulator += x, written through the input pointer: the output sees it only when the two alias."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(accumulator_ptr + offsets, tl.load(accumulator_ptr + offsets, mask=mask) + x, mask=mask)


@triton.jit
def add_sub_kernel(x_ptr, y_ptr, n, sum_ptr, difference_ptr, BLOCK: tl.constexpr):
    """Two outputs: x + y and x - y."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(sum_ptr + offsets, x + y, mask=mask)
    tl.store(difference_ptr + offsets, x - y, mask=mask)


@triton.jit
def softmax_kernel(x_ptr, n_cols, row_stride, out_ptr, BLOCK: tl.constexpr):
    """Softmax of each row of a row-major matrix, one program per row; BLOCK >= n_cols."""
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < n_cols
    x = tl.load(x_ptr + row * row_stride + columns, mask=mask, other=-float("inf")).to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=0))
    result = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * row_stride + columns, result.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_backward_kernel(y_ptr, dy_ptr, n_cols, row_stride, dx_ptr, BLOCK: tl.constexpr):
    """The cotangent of a row softmax from its output y and output cotangent dy: y * (dy - sum(dy * y))."""
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < n_cols
    y = tl.load(y_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * row_stride + columns, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(dy * y, axis=0))
    tl.store(dx_ptr + row * row_stride + columns, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, M, N, c_ptr, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """c = a @ b for row-major a (M, K), b (K, N), c (M, N) in float32, on a 2-D grid of (BLOCK_M, BLOCK_N) tiles.
    K is a constexpr: Triton 3.6's interpreter cannot loop up to a runtime scalar with numpy >= 2.4."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        accumulator += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], accumulator, mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def store_metaparams_kernel(n, out_ptr, A: tl.constexpr, B: tl.constexpr):
    """out[:3] = (n, A, B): shows which metaparameters a wrapper chose."""
    tl.store(out_ptr, n)
    tl.store(out_ptr + 1, A)
    tl.store(out_ptr + 2, B)


# Autotune outside heuristics: the first config's A is visible to the heuristic for B, as in Triton.
tuned_metaparams_kernel = triton.autotune(configs=[triton.Config({"A": 3}, num_warps=2), triton.Config({"A": 5})],
                                          key=["n"])(
    triton.heuristics({"B": lambda args: args["n"] + args["A"]})(store_metaparams_kernel))

# A heuristic reading an array argument through the torch-like adapter (numel), as torch-era heuristics do.
add_kernel_block_from_size = triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["x_ptr"].numel())})(
    add_kernel)


@triton.jit
def positive_kernel(x_ptr, n, out_ptr, BLOCK: tl.constexpr):
    """out = x, asserting (under debug) that x is positive."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.device_assert(x > 0, "x must be positive")
    tl.store(out_ptr + offsets, x, mask=mask)
