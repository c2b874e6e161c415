"""Triton source for a fused row-wise region: reductions over the last axis with their elementwise prologue and
epilogue (softmax, logsumexp, layer norm and their backward passes).

The region's arrays are rows of `length` elements (the last axis; the leading axes flattened into `rows`), or
one value per row (`rows` elements: a reduction's result, in any shape of that size), one value per column
(an input only broadcast along the rows, such as layer norm's scale), or one value in all. One
program computes one row, whole, in a block of BLOCK = the next power of two of `length`:

    def fused_<ops>_<digest>(in0_ptr, ..., n, out0_ptr, ..., BLOCK: tl.constexpr)

with `n` the row length. A row's values are [BLOCK] vectors (lanes past `n` masked), a per-row value is a scalar,
so the broadcast of a reduced row back to the row is Triton's own broadcasting. reduce_sum/max/min fold the
masked lanes as their identity; max and min propagate NaN as XLA's do. 16-bit floats are loaded as float32, so
sums accumulate in float32. Rows longer than `ROW_LIMIT` stay with XLA.
"""

from ..core import dtypes
from . import fusion_codegen as codegen

ROW_LIMIT = 8192  # elements of a row kept in one program's registers


def row_launch_parameters(length):
    """(BLOCK, num_warps) for rows of `length` elements: BLOCK the next power of two (at least 32), one warp
    per 256 elements of it, from 1 to 8."""
    block = max(32, 1 << (length - 1).bit_length())
    return block, min(8, max(1, block // 256))


def row_launch_candidates(length):
    """The (BLOCK, num_warps) pairs the tuner tries for rows of `length` elements: the default
    (`row_launch_parameters`), then half and twice its warps, from 1 to 16 and at most one per 32 elements."""
    block, default = row_launch_parameters(length)
    most = max(1, min(16, block // 32))
    warps = [default] + [w for w in (default // 2, default * 2) if 1 <= w <= most and w != default]
    return [(block, w) for w in warps]


def _reduction(identity, combine):
    def template(writer, ops, avals, out, params):
        folded = f"tl.where(mask, {ops[0]}, {identity})"
        if combine is None:
            return f"tl.sum({folded}, axis=0)"
        return f"tl.reduce({folded}, 0, {writer.helper(combine)})"

    return template


REDUCTIONS = {
    "reduce_sum": _reduction("0.0", None),
    "reduce_max": _reduction('float("-inf")', "_max_propagating"),
    "reduce_min": _reduction('float("inf")', "_min_propagating"),
}


def reducible(primitive_name, dtype):
    """True when a reduction over the last axis of `dtype` values has a form here (real floats)."""
    return primitive_name in REDUCTIONS and codegen.has_triton_dtype(dtype) and dtypes.is_inexact(dtype)


class RowWriter(codegen.KernelWriter):
    """A kernel writer for one row of `length` elements: literals are scalars, broadcast where they are used."""

    literal_shape = "[]"

    def __init__(self, platform, rows, length):
        super().__init__(platform)
        self.rows, self.length = rows, length

    def is_row(self, aval):
        """True for a whole row's values (a [BLOCK] vector), False for a per-row or single value (a scalar);
        per-column inputs are [BLOCK] vectors too, told apart by the region (`generate_row_source`)."""
        return aval.size == self.rows * self.length


def _broadcast(writer, ops, avals, out, params):
    # a per-row or single value becomes the row's; a per-column vector already is one; anything else keeps its
    # elements (only 1-dims are inserted)
    if writer.is_row(out) and not writer.is_row(avals[0]):
        return f"tl.broadcast_to({ops[0]}, [BLOCK])"
    return ops[0]


ROW_TEMPLATES = {**codegen.EQUATION_TEMPLATES, **REDUCTIONS, "broadcast_in_dim": _broadcast,
                 "reshape": lambda writer, ops, avals, out, params: ops[0]}


def generate_row_source(equations, inputs, outputs, rows, length, platform="cpu", columns=frozenset()):
    """(kernel name, Triton source) for a row-wise region over `rows` rows of `length` elements.

    inputs: the region's array inputs (Vars) in the kernel's order: rows of `length` elements, one value per row,
    a single value, or (those in `columns`) one value per column, loaded once per program as a [BLOCK] vector
    and only broadcast to rows. outputs: the Vars the kernel stores, in order, rows or per-row values."""
    writer = RowWriter(platform, rows, length)
    row = "tl.program_id(0).to(tl.int64)" if rows * length >= 2 ** 31 else "tl.program_id(0)"
    writer.lines += [f"row = {row}", "columns = tl.arange(0, BLOCK)", "mask = columns < n",
                     "offsets = row * n + columns"]

    def address(pointer, aval):
        if writer.is_row(aval):
            return f"{pointer} + offsets"
        return f"{pointer} + row" if aval.size == rows else pointer

    names = {}
    for position, var in enumerate(inputs):
        if var in columns:
            names[var] = writer.let(codegen.load_text(f"in{position}_ptr + columns", var.aval.dtype, "mask"))
            continue
        mask = "mask" if writer.is_row(var.aval) else None
        names[var] = writer.let(codegen.load_text(address(f"in{position}_ptr", var.aval), var.aval.dtype, mask))
    codegen.emit_equations(writer, equations, names, ROW_TEMPLATES)
    for position, var in enumerate(outputs):
        value = codegen.stored_text(names[var], var.aval.dtype)
        mask = ", mask=mask" if writer.is_row(var.aval) else ""
        writer.lines.append(f"tl.store({address(f'out{position}_ptr', var.aval)}, {value}{mask})")
    parameters = [f"in{i}_ptr" for i in range(len(inputs))] + ["n"] + [f"out{i}_ptr" for i in range(len(outputs))]
    return codegen.kernel_source(writer, equations, parameters)
