"""The fusion corpus (bench/fusion_corpus.py: norms, GELU, SwiGLU, causal softmax, rotary embeddings,
cross-entropy, AdamW, dropout; forward and backward; float32, bfloat16, float16) at small sizes through Triton's
interpreter: each program's kernels counted against the regions it should make, and its results against the same
program under plain jit (XLA)."""

import os
import sys

import numpy as np
import pytest

import numax

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import fusion_corpus as corpus  # noqa: E402

# what the fuser forms, on every platform: no tuner leaves regions to XLA (it has tests of its own)
pytestmark = pytest.mark.usefixtures("untuned_fusion")

API = corpus.api_of("numax")
# Of the largest magnitude expected: float32 within rounding; 16-bit results within 3 units of their last place
# (the kernel keeps float32 between steps where XLA rounds, and the gradients' sums over rows add such differences).
TOLERANCE = {corpus.F32: 2e-6, corpus.BF16: 3 * 2.0 ** -7, corpus.F16: 3 * 2.0 ** -10}

# (case, mode) -> kernels generated. What stays with XLA, and why:
# ln, rms (grad): the sums of the kernel's partial sums of the scale's and shift's gradients (one per program and
#   column: the programs loop over the rows);
# softmax: nothing (the (t, t) causal mask is computed in the softmax kernel, from each element's coordinates);
# xent: the mean over the rows (forward: the label's logit, a gather of one element per row, joins the row kernel;
#   backward: three kernels, the scatter-add of the label's gradient included); xent_vocab's rows (9,000 here,
#   50,257 on the GPU) are walked in chunks, with the same kernels;
# adamw: one kernel for the 9 tensors (their regions share a launch); the bias corrections XLA computes.
KERNELS = {
    ("ln", "fwd"): 1, ("ln", "grad"): 1, ("rms", "fwd"): 1, ("rms", "grad"): 1,
    ("swiglu", "fwd"): 1, ("swiglu", "grad"): 1, ("softmax", "fwd"): 1, ("softmax", "grad"): 1,
    ("rotary", "fwd"): 1, ("rotary", "grad"): 1, ("xent", "fwd"): 1, ("xent", "grad"): 3,
    ("xent_vocab", "fwd"): 1, ("xent_vocab", "grad"): 3,
    ("adamw", "fwd"): 1, ("dropout", "fwd"): 1,
}
PROGRAMS = [(key, dtype.name, mode) for key, case in corpus.CASES.items() for dtype in case.dtypes
            for mode in ("fwd", "grad") if mode == "fwd" or case.grad_argnums]


def arguments(case, dtype, mode):
    rng = np.random.default_rng(0)
    args = case.make_inputs(rng, dtype, True)
    if mode == "grad":
        args = args + [corpus.cotangent_like(case, numax.eval_shape(case.forward(API), *args), rng)]
    return args


@pytest.mark.parametrize("key, dtype_name, mode", PROGRAMS)
def test_corpus_program_fuses_and_matches_xla(key, dtype_name, mode):
    case, dtype = corpus.CASES[key], np.dtype(getattr(corpus, {"float32": "F32", "bfloat16": "BF16",
                                                                 "float16": "F16"}[dtype_name]))
    f = case.forward(API) if mode == "fwd" else case.gradient(API)
    args = arguments(case, dtype, mode)
    fused = numax.jit(f, fusion="triton")
    assert len(fused.lower(*args).triton_kernels()) == KERNELS[key, mode]
    actual, expected = (numax.tree_util.tree_leaves(g(*args)) for g in (fused, numax.jit(f)))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        assert a.shape == e.shape
        scale = max(float(np.max(np.abs(e))), 1e-30) if e.size else 1.0
        assert float(np.max(np.abs(a - e), initial=0.0)) <= TOLERANCE[dtype] * scale
