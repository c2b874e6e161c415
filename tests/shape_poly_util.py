"""The check shared by the shape-polymorphism tests: export once with symbolic shapes, call at several sizes."""

import numpy as np

import numax
from numax import export

SIZES = (1, 2, 5)


def platform_rtol(rtol):
    """`rtol` on the CPU; on a GPU at least 2e-2: float32 matrix products run in TF32 there by default (a 10-bit
    mantissa), as in jax, while the references multiply in float32 or float64."""
    return rtol if numax.default_backend() == "cpu" else max(rtol, 2e-2)


def check_export(fun, reference, specs, make_args, sizes=SIZES, rtol=1e-5):
    """Exports `fun` once for `specs`, then compares its outputs with `reference` for each batch size."""
    exported = export.export(numax.jit(fun))(*specs)
    rng = np.random.default_rng(0)
    for size in sizes:
        args = make_args(rng, size)
        got, want = exported.call(*args), reference(*args)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert np.shape(g) == np.shape(w), (size, i)
            np.testing.assert_allclose(np.asarray(g), w, rtol=platform_rtol(rtol), atol=1e-5,
                                       err_msg=f"size {size}, output {i}")
    return exported
