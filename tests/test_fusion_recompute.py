"""Kernels that compute values again instead of loading them from another kernel (transforms/fusion_recompute.py),
through Triton's interpreter on the CPU: a GELU MLP's and a causal softmax's backward kernels recompute their
forward kernels' values from the matrix products' results, so the forward kernels store only what the next matrix
product reads; a value computed from more bytes than it holds is still loaded; results against plain jit (XLA),
forward and backward, on hypothesis-drawn programs too."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numax
import numax.nn as nn
import numax.numpy as mnp

# what the fuser forms, on every platform: no tuner leaves regions to XLA (it has tests of its own)
pytestmark = pytest.mark.usefixtures("untuned_fusion")

F32, BF16 = np.float32, ml_dtypes.bfloat16


def kernels_of(lowered):
    closed = getattr(lowered, "closed", lowered)  # a Lowered or its ClosedProgram
    return [eqn for eqn in closed.equations if eqn.primitive.name == "triton_call"]


def assert_matches_xla(f, args, tolerance):
    """`f` fused and under plain jit agree within `tolerance` of each result's largest magnitude."""
    actual, expected = (numax.tree_util.tree_leaves(g(*args)) for g in (numax.jit(f, fusion="triton"), numax.jit(f)))
    for a, e in zip(actual, expected):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        np.testing.assert_allclose(a, e, rtol=0, atol=tolerance * max(float(np.max(np.abs(e))), 1e-30))


def mlp(x, w1, b1, w2):
    # as GPT-2's block writes it: bfloat16 matrix products, float32 bias and tanh GELU
    h = (x.astype(BF16) @ w1.astype(BF16)).astype(F32) + b1
    return (nn.gelu(h, approximate=True).astype(BF16) @ w2.astype(BF16)).astype(F32)


def mlp_arguments(rows=48, width=24, hidden=96):
    rng = np.random.RandomState(0)
    return (rng.randn(rows, width).astype(F32), (rng.randn(width, hidden) / 5).astype(F32),
            rng.randn(hidden).astype(F32), (rng.randn(hidden, width) / 10).astype(F32))


def test_gelu_backward_recomputes_what_its_forward_kernel_stored():
    args = mlp_arguments()
    grad = numax.grad(lambda *a: mnp.sum(mlp(*a) ** 2), argnums=(0, 1, 2, 3))
    forward, backward = (e for e in kernels_of(numax.jit(grad, fusion="triton").lower(*args))
                         if e.outvars[0].aval.shape == (48, 96) or len(e.params["out_avals"]) > 1)
    # the forward kernel stores the activation the second matrix product reads, and nothing for the backward pass
    assert [str(a) for a in forward.params["out_avals"]] == ["bf16[48,96]"]
    # the backward kernel reads the first product's bfloat16 result (and the cotangent), no float32 array of the
    # hidden size
    hidden_inputs = [a.aval for a in backward.inputs if a.aval.shape == (48, 96)]
    assert hidden_inputs and all(aval.dtype == BF16 for aval in hidden_inputs)
    assert_matches_xla(grad, args, 2e-2)  # bfloat16 products: XLA's CPU code and the kernel round alike, mostly
    exact = numax.jit(grad)(*args)
    fused = numax.jit(grad, fusion="triton")(*args)
    for a, e in zip(fused, exact):
        assert a.shape == e.shape and a.dtype == e.dtype


def test_causal_softmax_backward_loads_no_float32_probabilities():
    rng = np.random.RandomState(1)
    q, k, v = (rng.randn(2, 3, 16, 8).astype(F32) for _ in range(3))

    def attention(q, k, v):
        scores = (q.astype(BF16) @ mnp.swapaxes(k, -1, -2).astype(BF16)).astype(F32) / np.sqrt(8.0)
        mask = mnp.tril(mnp.ones((16, 16), bool))
        probabilities = nn.softmax(mnp.where(mask, scores, -1e9), axis=-1)
        return (probabilities.astype(BF16) @ v.astype(BF16)).astype(F32)

    # squared: the cotangent of the probabilities needs the forward pass's output (one kernel could not do both)
    grad = numax.grad(lambda *a: mnp.sum(attention(*a) ** 2), argnums=(0, 1, 2))
    lowered = numax.jit(grad, fusion="triton").lower(q, k, v)
    stored = [aval for e in kernels_of(lowered) for aval in e.params["out_avals"] if aval.shape == (2, 3, 16, 16)]
    assert len(stored) >= 2 and all(aval.dtype == BF16 for aval in stored)  # no float32 probabilities kept
    # the mask the recomputed softmax reads is computed in each kernel, never stored
    assert not [aval for e in kernels_of(lowered) for aval in e.params["out_avals"] if aval.dtype == np.bool_]
    assert_matches_xla(grad, (q, k, v), 2e-2)


def test_a_value_computed_from_more_bytes_than_it_holds_is_loaded():
    a, b, c = (np.random.RandomState(s).randn(20, 30).astype(F32) for s in range(3))
    w = (np.random.RandomState(3).randn(30, 30) / 30).astype(F32)

    def f(a, b, c):
        v = mnp.tanh(a * b + c)  # three arrays read for one value
        return mnp.exp(v @ w) * v  # read again after the product: loading it reads a third of the bytes

    lowered = numax.jit(f, fusion="triton").lower(a, b, c)
    first, second = kernels_of(lowered)
    assert first.outvars[0] in second.inputs and len(second.inputs) == 2
    assert_matches_xla(f, (a, b, c), 4e-6)


def test_a_value_also_read_by_xla_stays_stored_and_is_recomputed_where_cheaper():
    x = np.linspace(-2, 2, 600, dtype=F32).reshape(20, 30)
    w = np.linspace(-1, 1, 900, dtype=F32).reshape(30, 30) / 30

    def f(x):
        y = mnp.sin(x * 3.0)
        return mnp.cos(y @ w) + y * 2.0, y  # y read by the matmul, the second kernel and the program's results

    closed = numax.jit(f, fusion="triton").lower(x).closed
    first, second = kernels_of(closed)
    # the first kernel stores y alone (for the product and the results); the second computes y * 2 from x
    assert len(first.outvars) == 1 and closed.program.invars[0] in second.inputs
    assert_matches_xla(f, (x,), 4e-6)


_STEPS = {  # an elementwise step from h, also reading the input x
    "tanh": lambda h, x: mnp.tanh(h), "gelu": lambda h, x: nn.gelu(h, approximate=False),
    "silu": lambda h, x: nn.silu(h), "square": lambda h, x: h * h, "scale": lambda h, x: h * 1.5 - x,
    "sigmoid": lambda h, x: nn.sigmoid(h) * x, "down_up": lambda h, x: h.astype(BF16).astype(F32),
}


@settings(max_examples=8, deadline=None)  # each example compiles two programs and runs the interpreter
@given(st.lists(st.sampled_from(sorted(_STEPS)), min_size=1, max_size=5), st.integers(1, 3))
def test_random_chains_between_products_forward_and_backward(steps, layers):
    rng = np.random.RandomState(len(steps) * 7 + layers)
    x = rng.randn(12, 20).astype(F32)
    ws = [(rng.randn(20, 20) / 5).astype(F32) for _ in range(layers)]

    def f(x, *ws):
        h = x
        for w in ws:
            h = (h.astype(BF16) @ w.astype(BF16)).astype(F32)
            for step in steps:
                h = _STEPS[step](h, x)
        return mnp.sum(h * np.cos(np.arange(20, dtype=F32)))

    grad = numax.grad(f, argnums=tuple(range(1 + layers)))
    assert_matches_xla(grad, (x, *ws), 3e-2)


def test_the_fusion_log_names_what_is_recomputed(capsys):
    args = mlp_arguments(rows=8, width=8, hidden=16)
    grad = numax.grad(lambda *a: mnp.sum(mlp(*a) ** 2), argnums=(0, 1, 2, 3))
    numax.config.update("numax_log_fusion", True)
    try:
        numax.jit(grad, fusion="triton").lower(*args)
    finally:
        numax.config.update("numax_log_fusion", False)
    lines = [line for line in capsys.readouterr().err.splitlines() if "recomputing" in line]
    # the tanh GELU's argument and the tanh-derived values the backward pass reads, each f32[8,16]
    assert len(lines) == 1 and lines[0].startswith("numax: recomputing 5 values (2560 bytes)")
