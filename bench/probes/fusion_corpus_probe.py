"""Probe: which equations of the corpus programs stay outside fused regions (CPU, interpreter platform)."""
import collections
import sys

import numpy as np
from numax.transforms.fusion import fuse_with_kernels

import numax

sys.path.insert(0, "bench")
import fusion_corpus as corpus  # noqa: E402

SKIP = {"dot_general", "triton_call"}
api = corpus.api_of("numax")
only = sys.argv[1:]
for name, case in corpus.CASES.items():
    if only and name not in only:
        continue
    for dtype in case.dtypes:
        rng = np.random.default_rng(0)
        args = case.make_inputs(rng, dtype, True)
        for mode in ("fwd", "grad"):
            f = case.forward(api) if mode == "fwd" else case.gradient(api)
            if f is None:
                continue
            call_args = args
            if mode == "grad":
                call_args = args + [corpus.cotangent_like(case, numax.jit(case.forward(api))(*args), rng)]
            closed = numax.make_jaxpr(f)(*call_args)
            fused, kernels = fuse_with_kernels(closed, "cpu")
            left = collections.Counter(e.primitive.name for e in fused.program.equations
                                       if e.primitive.name not in SKIP)
            print(f"{name:8s} {np.dtype(dtype).name:9s} {mode:4s} eqns {len(closed.program.equations):4d} "
                  f"kernels {len(kernels):2d} left {dict(left)}", flush=True)
