"""GPU probe: which `.at[index].op(mode=...)` updates differ between numax and jax on the GPU (each case jitted
alone on both sides), for the out-of-bounds tables of tests/test_indexing_out_of_bounds.py.

    JAX_PLATFORMS=cuda,cpu python bench/probes/gpu_scatter_modes_probe.py
"""

import jax
import numpy as np

import numax

A = np.arange(1, 61, dtype=np.float32).reshape(3, 4, 5) / 7
I = np.array
INDICES = [(1, 9), -7, (I([0, 9, 1, 1]), slice(None), I([-1, 2, -6, -6])), (5, slice(None, None, -2))]
OPS = ["set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply"]
MODES = [None, "drop", "fill", "clip", "promise_in_bounds"]


def update(ref, op, mode, wrap):
    options = {"mode": mode, "wrap_negative_indices": wrap}
    if op == "apply":
        return ref.apply(lambda v: v * 2.0 + 1.0, **options)
    return getattr(ref, op)(np.float32(1.5), **options)


print("numax on", numax.default_backend(), "| jax on", jax.default_backend())
for wrap in (True, False):
    for k, index in enumerate(INDICES):
        for op in OPS:
            for mode in MODES:
                ours = np.asarray(numax.jit(lambda x: update(x.at[index], op, mode, wrap))(A))
                theirs = np.asarray(jax.jit(lambda x: update(x.at[index], op, mode, wrap))(A))
                if not np.allclose(ours, theirs, rtol=1e-4, atol=1e-4, equal_nan=True):
                    rows = sorted({tuple(p[:1]) for p in np.argwhere(~np.isclose(ours, theirs, 1e-4, 1e-4, True))})
                    print(f"wrap={wrap} index#{k} {op:9s} mode={mode}: differ in rows {rows}")
print("done")
