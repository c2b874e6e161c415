"""Column sums in row kernels (`jit(fusion="triton")`): a sum over every axis but the last (the gradient of a bias,
of a norm's scale and shift) joins the row-wise region that computes what it sums; the kernel's programs loop over
the rows and store one partial sum per column each, which XLA adds up. Run through Triton's interpreter against
the same functions under plain jit (XLA)."""

import numax.lax as lax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.transforms import fusion
from test_fusion_rows import RowsPerProgram, fused_under

import numax
import numax.nn as nn
import numax.numpy as mnp

# what the fuser forms, on every platform: no tuner leaves regions to XLA (it has tests of its own)
pytestmark = pytest.mark.usefixtures("untuned_fusion")

F32, F16 = np.float32, np.float16


def layer_norm(x, scale, shift):
    mean = mnp.mean(x, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(mnp.var(x, axis=-1, keepdims=True) + 1e-5) * scale + shift


def loss_of(f, shape):
    weights = np.cos(np.arange(int(np.prod(shape)))).reshape(shape).astype(F32)
    return lambda *args: mnp.sum(f(*args).astype(F32) * weights)


def kernel_outputs(lowered):
    """The avals of every triton_call's results in a lowered program."""
    return [aval for eqn in lowered.closed.equations if eqn.primitive.name == "triton_call"
            for aval in eqn.params["out_avals"]]


def assert_matches_xla(f, args, tolerance, floor=1e-30):
    """f fused and under plain jit agree within `tolerance` of the largest expected magnitude (at least `floor`)."""
    actual, expected = (numax.tree_util.tree_leaves(g(*args)) for g in (numax.jit(f, fusion="triton"), numax.jit(f)))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        scale = max(float(np.max(np.abs(e.astype(np.float64)))), floor)
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=0, atol=tolerance * scale)


@pytest.mark.parametrize("shape, dtype", [((6, 40), F32), ((40, 40), F32), ((3, 5, 24), F32), ((1, 6, 24), F32),
                                          ((7, 33), F16)])
def test_scale_and_shift_gradients_are_summed_in_the_row_kernel(shape, dtype):
    # 40x40: the column sums have as many values as the per-row ones; (3, 5, 24): summed over two leading axes
    rng = np.random.RandomState(shape[-1])
    x, scale, shift = (rng.randn(*s).astype(dtype) for s in (shape, shape[-1:], shape[-1:]))
    grad = numax.grad(loss_of(layer_norm, shape), argnums=(0, 1, 2))
    lowered = numax.jit(grad, fusion="triton").lower(x, scale, shift)
    assert len(lowered.triton_kernels()) == 1
    rows = int(np.prod(shape[:-1]))
    programs = min(rows, fusion.COLUMN_SUM_PROGRAMS)
    stored = sorted(aval.shape for aval in kernel_outputs(lowered))
    # the input's gradient, and one partial sum per program of each vector's: no product of whole rows goes to XLA
    assert stored == sorted([shape, (programs, shape[-1]), (programs, shape[-1])])
    assert "for group in range(tl.program_id(0)" in lowered.triton_kernels()[0].source
    assert_matches_xla(grad, (x, scale, shift), 3 * 2.0 ** -10 if dtype == F16 else 2e-6)


def test_a_bias_gradient_joins_the_elementwise_backward_pass():
    rng = np.random.RandomState(1)
    x, bias = rng.randn(12, 50).astype(F32), rng.randn(50).astype(F32)
    grad = numax.grad(loss_of(lambda x, b: nn.gelu(x + b), x.shape), argnums=(0, 1))
    lowered = numax.jit(grad, fusion="triton").lower(x, bias)
    assert len(lowered.triton_kernels()) == 1
    assert sorted(aval.shape for aval in kernel_outputs(lowered)) == [(12, 50), (12, 50)]  # partials: 12 programs
    assert_matches_xla(grad, (x, bias), 2e-6)


def test_what_reads_a_column_sum_is_not_in_its_kernel():
    # x (30, 30): x - sum(x, axis=0) broadcast back could pass for a per-row value; it needs every row's sum first
    x = np.random.RandomState(2).randn(30, 30).astype(F32)
    f = lambda x: mnp.exp(x) * 2.0 - mnp.sum(mnp.exp(x) * 2.0, axis=0) + mnp.sum(x * x, axis=-1, keepdims=True)
    lowered = numax.jit(f, fusion="triton").lower(x)
    assert lowered.triton_kernels()
    assert_matches_xla(f, (x,), 2e-6)


@settings(max_examples=6, deadline=None)  # each example compiles twice and runs the interpreter
@given(st.lists(st.integers(1, 9), min_size=1, max_size=2), st.integers(8, 70), st.integers(1, 4),
       st.sampled_from([1, 2, 4]), st.sampled_from([F32, F16]))
def test_random_shapes_programs_and_rows_per_program(leading, length, programs, rows_per_program, dtype):
    # fewer programs than blocks of rows (each loops), more than there are (idle ones store zeros), blocks of rows
    # overhanging the rows (masked)
    shape = tuple(leading) + (length,)
    rng = np.random.RandomState(length * 10 + programs)
    x, scale, shift = (rng.randn(*s).astype(dtype) for s in (shape, shape[-1:], shape[-1:]))
    grad = numax.grad(loss_of(layer_norm, shape), argnums=(0, 1, 2))
    original = fusion.COLUMN_SUM_PROGRAMS
    try:
        fusion.COLUMN_SUM_PROGRAMS = programs
        results, kernels = fused_under(RowsPerProgram(rows_per_program), grad, x, scale, shift)
    finally:
        fusion.COLUMN_SUM_PROGRAMS = original
    (kernel,) = kernels
    assert ("for group in range(" in kernel.source) == (len(shape) * (np.prod(leading) > 1) > 1)
    tolerance = 3 * 2.0 ** -10 if dtype == F16 else 2e-5
    # the reference: the same gradient of the inputs in float32 (no 16-bit rounding anywhere in it)
    reference = numax.jit(grad)(*(a.astype(F32) for a in (x, scale, shift)))
    for actual, by_xla, exact in zip(results, numax.jit(grad)(x, scale, shift), reference):
        exact = np.asarray(exact, np.float64)
        allowed = tolerance * max(float(np.max(np.abs(exact))), 1e-30)
        if dtype == F16:  # XLA's CPU code sums 16-bit columns in 16 bits: the kernel must be as close as it, or closer
            allowed = max(allowed, float(np.max(np.abs(np.asarray(by_xla, np.float64) - exact))))
        np.testing.assert_allclose(np.asarray(actual, np.float64), exact, rtol=0, atol=allowed)


def test_row_regions_reading_one_input_share_a_kernel_unless_one_depends_on_the_other():
    x, w = np.random.RandomState(3).randn(10, 24).astype(F32), np.random.RandomState(4).randn(24, 24).astype(F32)
    siblings = lambda x: (nn.softmax(x, axis=-1), mnp.sum(x * 2.0, axis=0))
    lowered = numax.jit(siblings, fusion="triton").lower(x)
    assert len(lowered.triton_kernels()) == 1  # x read once for both
    assert_matches_xla(siblings, (x,), 2e-6)
    # the column sum reads a product of the softmax: the two regions keep their own kernels
    chained = lambda x: (nn.softmax(x, axis=-1), mnp.sum((nn.softmax(x, axis=-1) @ w) * x, axis=0))
    lowered = numax.jit(chained, fusion="triton").lower(x)
    assert len(lowered.triton_kernels()) == 2
    assert_matches_xla(chained, (x,), 2e-6)


# Steps of a random row program on h, over the input x (rows of d) and a vector v (d,): casts, per-column and per-row
# operands, reductions along the rows, elementwise work (no maximum: 16-bit ties would make its gradient flip).
_ROW_STEPS = {
    "upcast": lambda h, x, v: h.astype(F32),
    "downcast": lambda h, x, v: h.astype(x.dtype),
    "scale": lambda h, x, v: h * v,
    "bias": lambda h, x, v: h + v,
    "center": lambda h, x, v: h - mnp.mean(h, axis=-1, keepdims=True),
    "normalize": lambda h, x, v: h * lax.rsqrt(mnp.mean(h * h, axis=-1, keepdims=True) + 1.0),
    "tanh": lambda h, x, v: mnp.tanh(h),
    "residual": lambda h, x, v: h + x,
    "row_sum_scale": lambda h, x, v: h * (mnp.sum(h, axis=-1, keepdims=True) / h.shape[-1]),
}
_REDUCING = ("center", "normalize", "row_sum_scale")


@settings(max_examples=5, deadline=None)  # each example compiles four programs and runs the interpreter
@given(st.lists(st.sampled_from(sorted(_ROW_STEPS)), min_size=1, max_size=6), st.sampled_from([F32, F16]),
       st.sampled_from([(6, 20), (2, 3, 17)]))
def test_random_row_programs_forward_and_backward(steps, dtype, shape):
    rng = np.random.RandomState(len(steps) * 31 + shape[-1])
    x, v = rng.randn(*shape).astype(dtype), (1 + 0.5 * rng.randn(shape[-1])).astype(dtype)

    def program(x, v):
        h = x
        for step in steps:
            h = _ROW_STEPS[step](h, x, v)
        return h

    # 16-bit: XLA rounds every step, a kernel at casts; relative to values of order one (a row centred, then summed,
    # is rounding noise on both sides)
    tolerance = 8 * 2.0 ** -10 if dtype == F16 else 2e-5
    if any(step in _REDUCING for step in steps):
        assert len(numax.jit(program, fusion="triton").lower(x, v).triton_kernels()) == 1
    assert_matches_xla(program, (x, v), tolerance, floor=1.0)
    grad = numax.grad(loss_of(program, shape), argnums=(0, 1))
    assert_matches_xla(grad, (x, v), tolerance, floor=1.0)
