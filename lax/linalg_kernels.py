"""Calling the solver kernels jaxlib ships, for the linear algebra lowerings: LAPACK's FFI kernels on the CPU
(`lapack_<s|d|c|z><routine>_ffi`), cuSOLVER's on the GPU (`cusolver_<routine>_ffi`).

The kernels read column-major matrices: `custom_call` says so with its operand and result layouts, and XLA
inserts the transposes. A kernel reports a failure through its `info` output; `nan_unless` turns that
matrix's results into NaNs, as JAX does. Post-processing around a kernel is written with lax ops and
emitted into the rule with `inline`. This module knows the StableHLO text of a custom call, not the
primitives that use it.
"""

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.staging import trace_to_closed_program
from ..core.trace import get_aval_of
from ..lowering.stablehlo import aval_type, layout_attr, output_operand_alias
from .elementwise import select
from .shapes import broadcast_in_dim, full_like

_LAPACK_PREFIX = {dtypes.float32: "s", dtypes.float64: "d", dtypes.complex64: "c", dtypes.complex128: "z"}


def _matrix_layout(rank):
    """Minor-to-major order of a column-major batch of matrices: rows fastest, then columns, then batch."""
    return (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))


def _row_major(rank):
    return tuple(range(rank - 1, -1, -1))


def custom_call(ctx, target, operands, operand_avals, result_avals, config, alias_operand=0):
    """Emits an FFI custom call to a solver kernel; matrices (rank >= batch + 2) are column-major.

    `config` maps attribute names to typed attribute text (`"76 : ui8"`, `"true"`); the first result
    reuses the buffer of operand `alias_operand` (None: no buffer is shared).
    """
    batch_rank = operand_avals[0].ndim - 2

    def layout(aval):
        return _matrix_layout(aval.ndim) if aval.ndim >= batch_rank + 2 else _row_major(aval.ndim)

    attributes = {
        "call_target_name": f'"{target}"',
        "api_version": "4 : i32",
        "backend_config": "{" + ", ".join(f"{k} = {v}" for k, v in config.items()) + "}",
        "operand_layouts": "[" + ", ".join(layout_attr(layout(a)) for a in operand_avals) + "]",
        "result_layouts": "[" + ", ".join(layout_attr(layout(a)) for a in result_avals) + "]",
        "mhlo.frontend_attributes": f'{{num_batch_dims = "{batch_rank}"}}',
    }
    if alias_operand is not None:
        alias = output_operand_alias(0 if len(result_avals) > 1 else None, alias_operand)
        attributes["output_operand_aliases"] = f"[{alias}]"
    return ctx.builder.op("stablehlo.custom_call", list(operands), [aval_type(a) for a in result_avals], attributes)


def lapack_target(routine, dtype):
    return f"lapack_{_LAPACK_PREFIX[dtype]}{routine}_ffi"


def lapack_char(letter):
    """LAPACK's character arguments travel as ui8 attributes."""
    return f"{ord(letter)} : ui8"


def inline(ctx, fn, values, avals):
    """Emits `fn` (written with lax ops) applied to the SSA `values` of `avals`; returns its SSA outputs."""
    closed = trace_to_closed_program(lambda *args: list(fn(*args)), list(avals))
    return ctx.lower_program(closed, list(values))


def info_aval(batch):
    """The type of a kernel's `info` output: one int32 status per matrix."""
    return ShapedArray(batch, dtypes.int32)


def nan_unless(ok, x):
    """`x` where the per-matrix flag `ok` (shape batch) holds, NaN (NaN + NaN j for complex) elsewhere."""
    aval = get_aval_of(x)
    ok = broadcast_in_dim(ok, aval.shape, tuple(range(len(get_aval_of(ok).shape))))
    nan = np.asarray(complex(np.nan, np.nan) if dtypes.is_complex(aval.dtype) else np.nan, aval.dtype)
    return select(ok, x, full_like(x, nan))
