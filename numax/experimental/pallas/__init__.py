"""`numax.experimental.pallas` (`jax.experimental.pallas`): kernels written over refs to blocks and run on a grid
(`pallas_call`, `BlockSpec`, `program_id`, `pl.ds`, `pl.when`, ...), interpreted as JAX's interpret mode runs them;
`numax.experimental.pallas.triton` holds the GPU-flavoured operations (masked `load`/`store`, `atomic_add`,
`dot`); `numax.experimental.pallas.tpu` the TPU memory spaces a BlockSpec may name."""

from numax.core.lazy_imports import defer_imports as _defer_imports

from ._blocks import BlockSpec, Element, GridSpec, Slice, Squeezed, cdiv, ds, dslice, next_power_of_2, squeezed  # noqa: F401
from ._pallas_call import num_programs, pallas_call, program_id, when  # noqa: F401


def multiple_of(x, values):
    """`x`, declared a multiple of `values` (a hint for the compiler; the interpreter has no use for it)."""
    del values
    return x


_defer_imports(globals(), {"tpu": (), "triton": ()})
