"""Row-wise fusion (`jit(fusion="triton")`): reductions over the last axis with their elementwise prologue and
epilogue as one kernel, one program per row, run through Triton's interpreter against the same functions under
plain jit (XLA): softmax, log_softmax, logsumexp, layer norm, RMS norm, forward and grad, leading axes
flattened, NaN, 16-bit inputs summed in float32, random shapes, and what stays with XLA."""

import numax.lax as lax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.lowering import dispatch
from numax.lowering.fusion_rows_codegen import ROW_LIMIT, row_launch_candidates
from numax.transforms.fusion import LONGEST_ROW, fuse_with_kernels
from numax.transforms.fusion_tuning import Decision

import numax
import numax.nn as nn
import numax.numpy as mnp
from numax.scipy.special import logsumexp

# what the fuser forms, on every platform: no tuner leaves regions to XLA (it has tests of its own)
pytestmark = pytest.mark.usefixtures("untuned_fusion")

F32, F16 = np.float32, np.float16
X = (np.random.RandomState(0).randn(5, 37) * 3).astype(F32)  # 37: rows shorter than their block (64)


def layer_norm(x):
    mean = mnp.mean(x, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(mnp.var(x, axis=-1, keepdims=True) + 1e-5) * 1.5 + 0.25


def rms_norm(x):
    return x * lax.rsqrt(mnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


FORWARD = {
    "softmax": nn.softmax, "log_softmax": nn.log_softmax, "logsumexp": lambda x: logsumexp(x, axis=-1),
    "layer_norm": layer_norm, "rms_norm": rms_norm,
}


def kernel_calls(closed):
    """The triton_call equations of a program and of the programs nested in its equations."""
    calls = []
    for eqn in closed.equations:
        if eqn.primitive.name == "triton_call":
            calls.append(eqn)
        elif "program" in eqn.params:
            calls += kernel_calls(eqn.params["program"])
    return calls


def assert_close(actual, expected, rtol=4e-6, atol=1e-6):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def check_rows(f, x, kernels=1, rtol=4e-6, atol=1e-6):
    """`f` with fusion="triton" has `kernels` kernels, row-wise ones among them, and equals `f` under plain jit."""
    fused = numax.jit(f, fusion="triton")
    lowered = fused.lower(x)
    assert len(lowered.triton_kernels()) == kernels
    assert any(k.source.count("tl.sum(") + k.source.count("tl.reduce(") for k in lowered.triton_kernels())
    assert_close(fused(x), numax.jit(f)(x), rtol, atol)
    return lowered


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_is_one_kernel_with_one_program_per_row(name):
    lowered = check_rows(FORWARD[name], X)
    (call,) = kernel_calls(lowered.closed)
    metaparams = dict(call.params["metaparams"])
    assert call.params["grid"](metaparams) == (5,) and metaparams == {"BLOCK": 64, "ROWS": 1}
    assert not {"reduce_sum", "reduce_max", "exp", "sub"} & {e.primitive.name for e in lowered.closed.equations}


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
def test_grad_regions_are_fused(name):
    weights = np.linspace(-1, 1, 37, dtype=F32)
    loss = lambda x: mnp.sum(FORWARD[name](x) * weights)
    # softmax's custom derivative is inlined: its forward pass fuses with the backward pass its rule made
    lowered = check_rows(numax.grad(loss), X, atol=1e-5)
    assert "custom_jvp_call" not in {e.primitive.name for e in lowered.closed.equations}
    # what stays with XLA: the loss's own sum over both axes and the weights' broadcast along the columns
    for eqn in lowered.closed.equations:
        assert eqn.primitive.name not in ("reduce_sum", "reduce_max") or eqn.params["axes"] == (0, 1)


def test_leading_axes_are_flattened_into_rows():
    x = np.random.RandomState(1).randn(2, 3, 19).astype(F32)
    lowered = check_rows(layer_norm, x)
    (call,) = kernel_calls(lowered.closed)
    metaparams = dict(call.params["metaparams"])
    assert call.params["grid"](metaparams) == (6,) and metaparams == {"BLOCK": 32, "ROWS": 1}


@pytest.mark.parametrize("dtype", [F32, F16])
def test_a_causal_mask_is_computed_in_the_softmax_kernel(dtype):
    # the (t, t) mask under (batch, heads, t, t) scores, built from iotas: the softmax kernel computes it at each
    # element's coordinates (no kernel of its own, nothing broadcast to the scores' shape by XLA)
    def attention_probabilities(scores):
        mask = mnp.tril(mnp.ones((7, 7), dtype=bool))
        return nn.softmax(mnp.where(mask, scores.astype(F32) * 0.5, -mnp.inf), axis=-1).astype(scores.dtype)

    scores = (np.random.RandomState(3).randn(2, 3, 7, 7) * 2).astype(dtype)
    lowered = check_rows(attention_probabilities, scores, kernels=1, rtol=2e-3 if dtype == F16 else 4e-6)
    assert [e.primitive.name for e in lowered.closed.equations] == ["triton_call"]
    (kernel,) = lowered.triton_kernels()
    assert "% 49) // 7" in kernel.source and "% 49) % 7" in kernel.source  # the mask's row and column


def test_a_mask_read_by_two_row_kernels_is_computed_in_each():
    # two softmaxes under one causal mask with a matrix product between them (two row kernels, as a forward and a
    # backward pass are): each computes the mask; no kernel stores it (nor its broadcast to the scores' shape)
    rng = np.random.RandomState(5)
    scores, w = rng.randn(2, 3, 7, 7).astype(F32), rng.randn(7, 7).astype(F32)

    def twice(scores):
        mask = mnp.tril(mnp.ones((7, 7), dtype=bool))
        first = nn.softmax(mnp.where(mask, scores, -mnp.inf), axis=-1)
        return nn.softmax(mnp.where(mask, first @ w, -mnp.inf), axis=-1)

    fused = numax.jit(twice, fusion="triton")
    lowered = fused.lower(scores)
    assert len(lowered.triton_kernels()) == 2
    names = [e.primitive.name for e in lowered.closed.equations]
    assert "iota" not in names and "select_n" not in names
    stored = [a for e in lowered.closed.equations if e.primitive.name == "triton_call" for a in e.params["out_avals"]]
    assert all(a.dtype != np.bool_ for a in stored)
    assert_close(fused(scores), numax.jit(twice)(scores), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_a_mask_given_as_an_argument_is_read_in_place_by_the_softmax_kernel(dtype):
    # a (t, t) mask the caller passes: loaded at each element's index, never broadcast to the scores' shape
    def attention_probabilities(scores, mask):
        return nn.softmax(mnp.where(mask, scores.astype(F32) * 0.5, -mnp.inf), axis=-1).astype(scores.dtype)

    scores = (np.random.RandomState(3).randn(2, 3, 7, 7) * 2).astype(dtype)
    mask = np.tril(np.ones((7, 7), bool)) | (np.random.RandomState(4).rand(7, 7) < 0.3)
    fused = numax.jit(attention_probabilities, fusion="triton")
    lowered = fused.lower(scores, mask)
    (kernel,) = lowered.triton_kernels()
    assert not [e for e in lowered.closed.equations  # (XLA only inserts the mask's leading axes of size 1)
                if e.primitive.name == "broadcast_in_dim" and e.outvars[0].aval.size == scores.size]
    assert "% 49" in kernel.source  # the mask's index: the element's offset modulo t * t
    assert_close(fused(scores, mask), numax.jit(attention_probabilities)(scores, mask),
                 rtol=2e-3 if dtype == F16 else 4e-6)


def test_nan_propagates_through_row_max_and_min():
    x = X.copy()
    x[1, 4] = np.nan

    def f(v):
        top = mnp.max(v * 2.0, axis=-1, keepdims=True)
        bottom = mnp.min(v - top, axis=-1, keepdims=True)
        return top, bottom, mnp.exp(v * 2.0 - top) + bottom

    fused = numax.jit(f, fusion="triton")
    assert len(fused.lower(x).triton_kernels()) == 1
    results = fused(x)
    for actual, expected in zip(results, numax.jit(f)(x)):
        assert_close(actual, expected)
    assert np.isnan(np.asarray(results[0])[1, 0]) and np.isnan(np.asarray(results[1])[1, 0])
    assert not np.isnan(np.asarray(results[0])[0, 0])


def test_16_bit_rows_are_summed_in_float32():
    x = (X[:, :32] * 8).astype(F16)  # sums of 32 values of this size lose bits in float16
    fused = numax.jit(layer_norm, fusion="triton")
    source = fused.lower(x).triton_kernels()[0].source
    # rows of 32, a power of two, one per program: nothing to mask
    assert "tl.load(in0_ptr + offsets).to(tl.float32)" in source and ".to(tl.float16)" in source
    in_float32 = np.asarray(numax.jit(layer_norm)(x.astype(F32))).astype(F16)  # rounded once
    assert_close(fused(x), in_float32, rtol=1e-3, atol=1e-3)


def scaled_layer_norm_gelu(x, scale, shift):
    return nn.gelu(layer_norm(x) * scale + shift) + x


@pytest.mark.parametrize("shape, dtype", [((6, 40), F32), ((40, 40), F32), ((3, 5, 24), F16)])
def test_per_column_scale_and_shift_join_the_row_kernel(shape, dtype):
    # 40x40: a per-column vector has as many values as a per-row one, and must still be read per column
    rng = np.random.RandomState(len(shape) * 7 + shape[-1])
    x, scale, shift = (rng.randn(*s).astype(dtype) for s in (shape, shape[-1:], shape[-1:]))
    tolerance = dict(rtol=2e-3, atol=2e-3) if dtype == F16 else dict(rtol=4e-6, atol=2e-6)
    fused = numax.jit(scaled_layer_norm_gelu, fusion="triton")
    lowered = fused.lower(x, scale, shift)
    (kernel,) = lowered.triton_kernels()
    assert "+ columns, mask=in_columns)" in kernel.source  # scale and shift loaded once per program
    assert_close(fused(x, scale, shift), numax.jit(scaled_layer_norm_gelu)(x, scale, shift), **tolerance)
    loss = lambda x, s, b: mnp.sum(scaled_layer_norm_gelu(x, s, b).astype(F32) * np.cos(np.arange(shape[-1])))
    grad = numax.grad(loss, argnums=(0, 1, 2))
    for actual, expected in zip(numax.jit(grad, fusion="triton")(x, scale, shift), numax.jit(grad)(x, scale, shift)):
        assert_close(actual, expected, **(dict(rtol=2e-2, atol=2e-2) if dtype == F16 else dict(rtol=2e-5, atol=2e-5)))


@settings(max_examples=5)  # each example compiles twice and runs the interpreter
@given(st.integers(1, 4), st.integers(2, 70), st.sampled_from(["softmax", "log_softmax", "layer_norm"]))
def test_random_row_shapes(rows, length, name):
    x = np.random.RandomState(rows * 100 + length).randn(rows, length).astype(F32)
    check_rows(FORWARD[name], x, atol=2e-6)


class RowsPerProgram:
    """A tuner that picks, in each row region, the launch candidate with `rows` rows per program."""

    def __init__(self, rows):
        self.rows = rows

    def decide(self, members, inputs, outputs, candidates, signature):
        rows = [dict(candidate[0].params["metaparams"]).get("ROWS") for candidate in candidates]
        return Decision(rows.index(self.rows) if self.rows in rows else 0, (0.0,) * len(rows), 1.0)

    def program_is_faster(self, original, fused):
        return True, None


def fused_under(tuner, f, *args):
    """f's program, fused under `tuner`, compiled: (its results on args, its kernels)."""
    closed = numax.make_jaxpr(f)(*args)
    fused, kernels = fuse_with_kernels(closed, "cpu", tuner=tuner)
    return dispatch.compile_program(fused)(*args), kernels


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "scaled_layer_norm_gelu_grad"])
def test_several_rows_per_program(name):
    # 21 rows of 100: BLOCK 128 and 16 rows per program, so the second program overhangs the rows (masked)
    rng = np.random.RandomState(4)
    x, scale, shift = rng.randn(3, 7, 100).astype(F32), rng.randn(100).astype(F32), rng.randn(100).astype(F32)
    if name == "scaled_layer_norm_gelu_grad":
        f = numax.grad(lambda x, s, b: mnp.sum(scaled_layer_norm_gelu(x, s, b) * np.sin(np.arange(100))), (0, 1, 2))
        args = (x, scale, shift)
    else:
        f, args = FORWARD[name], (x,)
    results, kernels = fused_under(RowsPerProgram(16), f, *args)
    row_kernels = [k for k in kernels if k.rows_per_program is not None]
    assert row_kernels and all(k.rows_per_program == 16 and "in_rows" in k.source for k in row_kernels)
    for actual, expected in zip(results, numax.tree_util.tree_leaves(numax.jit(f)(*args))):
        assert_close(actual, expected, rtol=2e-5, atol=2e-5)


def test_long_rows_two_to_a_program():
    # 3 rows of 2100 (BLOCK 4096): the second program's second row is past the rows (masked)
    x = (np.random.RandomState(5).randn(3, 2100) * 3).astype(F32)
    results, kernels = fused_under(RowsPerProgram(2), nn.softmax, x)
    (kernel,) = kernels
    assert kernel.rows_per_program == 2 and kernel.block == 4096 and "in_rows" in kernel.source
    assert_close(results[0], numax.jit(nn.softmax)(x), rtol=2e-5, atol=2e-7)


def test_row_launch_candidates():
    # one row per program first (default warps, then half and twice them), then several rows per program
    # (for rows of at most 256 elements)
    assert [(c.block, c.num_warps, c.rows) for c in row_launch_candidates(4096, 16384)] == [
        (4096, 8, 1), (4096, 4, 1), (4096, 16, 1), (4096, 16, 2)]  # long rows: also two to a program
    assert [(c.block, c.num_warps, c.rows) for c in row_launch_candidates(2000, 9)] == [
        (2048, 8, 1), (2048, 4, 1), (2048, 16, 1), (2048, 16, 2)]
    assert [c.rows for c in row_launch_candidates(1024, 100)] == [1, 1, 1]
    assert [(c.block, c.num_warps, c.rows) for c in row_launch_candidates(100, 16384)] == [
        (128, 1, 1), (128, 2, 1), (128, 8, 16)]  # 64 rows of 128 would be more than MOST_ROWS
    assert [c.rows for c in row_launch_candidates(256, 16384)] == [1, 1, 8, 32]
    assert [c.rows for c in row_launch_candidates(64, 9)] == [1, 1]  # no more rows than their power of 2 (16)
    assert [c.rows for c in row_launch_candidates(64, 40)] == [1, 1, 32]


def test_other_axes_and_long_rows_stay_with_xla():
    over_columns = lambda x: mnp.exp(x - mnp.max(x, axis=0, keepdims=True)) * 2.0
    lowered = numax.jit(over_columns, fusion="triton").lower(X)
    assert "reduce_max" in [e.primitive.name for e in lowered.closed.equations]
    assert all("tl.sum(" not in k.source and "tl.reduce(" not in k.source for k in lowered.triton_kernels())
    assert_close(numax.jit(over_columns, fusion="triton")(X), numax.jit(over_columns)(X))
    whole = lambda x: mnp.sum(mnp.exp(x) * 2.0)  # over every axis
    assert "reduce_sum" in [e.primitive.name for e in numax.jit(whole, fusion="triton").lower(X).closed.equations]
    column_maxima = numax.make_jaxpr(lambda x: mnp.max(nn.relu(x), axis=0))(X)  # nothing fuses: still called
    assert fuse_with_kernels(column_maxima)[0] is column_maxima
    too_long = np.zeros((2, LONGEST_ROW + 1), F32)
    lowered = numax.jit(nn.log_softmax, fusion="triton").lower(too_long)
    assert {"reduce_max", "reduce_sum"} <= {e.primitive.name for e in lowered.closed.equations}


LONG = (np.random.RandomState(6).randn(2, ROW_LIMIT + 808) * 3).astype(F32)  # past what a program holds


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_long_rows_are_walked_in_chunks(name):
    # one program per row, one pass along it per stage of reductions (softmax: the maximum, then the sum), then
    # one that stores; chunked sums differ from XLA's order by rounding
    lowered = check_rows(FORWARD[name], LONG, rtol=2e-5, atol=2e-6)
    (kernel,) = lowered.triton_kernels()
    passes = kernel.source.count("for start in range(0, n, BLOCK):")
    assert passes == {"logsumexp": 2, "rms_norm": 2}.get(name, 3) and kernel.rows_per_program == 1


@pytest.mark.parametrize("dtype", [F32, F16])
def test_long_rows_with_per_column_vectors_forward_and_backward(dtype):
    x = LONG.astype(dtype)
    scale = np.linspace(0.5, 1.5, x.shape[1]).astype(dtype)
    shift = np.linspace(-0.1, 0.1, x.shape[1]).astype(dtype)
    # float16: within 3 units of the last place of the largest value (16-bit rounding at other steps than XLA's)
    tolerance = 3 * 2.0 ** -10 if dtype == F16 else 2e-5

    def check(actual, expected):
        scale_of = float(np.max(np.abs(np.asarray(expected, np.float64))))
        assert_close(actual, expected, rtol=tolerance, atol=tolerance * scale_of)

    forward = numax.jit(scaled_layer_norm_gelu, fusion="triton")
    assert len(forward.lower(x, scale, shift).triton_kernels()) == 1
    check(forward(x, scale, shift), numax.jit(scaled_layer_norm_gelu)(x, scale, shift))
    weights = np.cos(np.arange(x.shape[1])).astype(np.float32)
    loss = lambda x, s, b: mnp.sum(scaled_layer_norm_gelu(x, s, b).astype(F32) * weights)
    gradient = numax.grad(loss, argnums=(0, 1, 2))
    for actual, expected in zip(numax.jit(gradient, fusion="triton")(x, scale, shift),
                                numax.jit(gradient)(x, scale, shift)):
        check(actual, expected)


@pytest.mark.parametrize("length", [37, ROW_LIMIT + 808])
def test_one_element_per_row_is_picked_in_the_row_kernel(length):
    # take_along_axis along the last axis (a cross-entropy's label logit) and its gradient (a scatter-add) join the
    # row kernels; labels past the row give NaN (jax's fill mode), negative ones count from the end
    # (2 rows of the long length, and only forward: Triton's interpreter folds a row maximum pair by pair, in Python)
    labels = np.array([0, length - 1, 5, -1, length, -length - 3] if length < 100 else [-1, length], np.int32)
    logits = (np.random.RandomState(7).randn(len(labels), length) * 2).astype(F32)

    def nll(x, y):
        return logsumexp(x, axis=-1) - mnp.take_along_axis(x, y[:, None], axis=-1)[:, 0]

    fused = numax.jit(nll, fusion="triton")
    lowered = fused.lower(logits, labels)
    assert "gather" not in [e.primitive.name for e in lowered.closed.equations]
    assert len(lowered.triton_kernels()) == 1
    losses = np.asarray(fused(logits, labels))
    np.testing.assert_allclose(losses, numax.jit(nll)(logits, labels), rtol=2e-6, atol=2e-6)
    outside = (labels >= length) | (labels < -length)  # negative labels count from the end, once
    assert np.isnan(losses[outside]).all() and not np.isnan(losses[~outside]).any()
    if length > 100:
        return  # the gradient's scatter-add is elementwise along the row: the short rows check it
    in_bounds = np.where(outside, 2, labels).astype(np.int32)
    gradient = numax.grad(lambda x, y: mnp.sum(nll(x, y) * np.arange(1, len(labels) + 1)))
    lowered = numax.jit(gradient, fusion="triton").lower(logits, in_bounds)
    assert "scatter_add" not in [e.primitive.name for e in lowered.closed.equations]
    assert_close(numax.jit(gradient, fusion="triton")(logits, in_bounds), numax.jit(gradient)(logits, in_bounds),
                 rtol=2e-5, atol=2e-7)


def test_row_kernels_for_the_gpu_use_libdevice():
    closed = numax.make_jaxpr(nn.log_softmax)(X)
    (kernel,) = fuse_with_kernels(closed, "gpu")[1]
    assert "libdevice.exp(" in kernel.source and "libdevice.log(" in kernel.source
    assert "tl.reduce(" in kernel.source and "tl.sum(" in kernel.source and "tl.exp(" not in kernel.source
    (interpreted,) = fuse_with_kernels(closed, "cpu")[1]
    assert "libdevice" not in interpreted.source and "tl.exp(" in interpreted.source
