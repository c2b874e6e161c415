"""Triton source for a fused row-wise region: reductions over the last axis with their elementwise prologue and
epilogue (softmax, logsumexp, layer norm and their backward passes).

The region's arrays are rows of `length` elements (the last axis; the leading axes flattened into `rows`), or
one value per row (`rows` elements: a reduction's result, in any shape of that size), one value per column
(an input only broadcast along the rows, such as layer norm's scale), or one value in all. One program computes
ROWS whole rows in a [ROWS, BLOCK] block, BLOCK the next power of two of `length`:

    def fused_<ops>_<digest>(in0_ptr, ..., n, m, out0_ptr, ..., BLOCK: tl.constexpr, ROWS: tl.constexpr)

with `n` the row length and `m` the number of rows. Rows' values are [ROWS, BLOCK] blocks, per-row values
[ROWS, 1] columns, per-column values [1, BLOCK], single values scalars, so that a reduced row's broadcast back
along it is Triton's own broadcasting. Masks are emitted only where a block can overhang: columns past `n` when
the length is not a power of two, rows past `m` when some candidate's ROWS does not divide the rows.
reduce_sum/max/min fold masked lanes as their identity; max and min propagate NaN as XLA's do. 16-bit floats are
loaded as float32, so sums accumulate in float32. Rows longer than `ROW_LIMIT` are walked in chunks instead
(lowering/fusion_long_rows_codegen.py).
"""

from ..core import dtypes
from ..core.ir import Var
from . import fusion_codegen as codegen
from . import fusion_elementwise_codegen as elementwise_codegen

ROW_LIMIT = 8192  # elements of a row kept in one program's registers
# Rows of at most MULTI_ROW_BLOCK elements (one warp's worth) are also tried several to a program, as many as make
# MULTI_ROW_ELEMENTS elements. Longer rows were never faster so (bench/probes/fusion_rows_probe.py: 4096-element float16
# rows, 1 row per program 102 us, 2 rows 112 us, 4 rows 141 us; 512-element rows kept 1 per program when tuned).
MULTI_ROW_BLOCK = 256
MULTI_ROW_ELEMENTS = (2048, 8192)
MOST_ROWS = 32  # rows per program at most
# Rows of LONG_ROW_BLOCK elements or more are also tried two to a program over twice the warps: on an H100 a bf16
# LayerNorm's 4096-element rows took 188.8 us so against 194.4 for the best one-row launch
# (bench/probes/fusion_rows_candidates_probe.py, bench/RESULTS.md, issue 32).
LONG_ROW_BLOCK = 2048


def row_launch_parameters(length):
    """(BLOCK, num_warps) for rows of `length` elements: BLOCK the next power of two (at least 32), one warp
    per 256 elements of it, from 1 to 8."""
    block = max(32, 1 << (length - 1).bit_length())
    return block, min(8, max(1, block // 256))


def row_launch_candidates(length, rows):
    """The Launches the tuner tries for `rows` rows of `length` elements: one row per program under the default
    warps (`row_launch_parameters`, first), half and twice them (from 1 to 16, at most one per 32 elements);
    then, for rows of at most `MULTI_ROW_BLOCK` elements, several rows per program, as many as make
    `MULTI_ROW_ELEMENTS` elements (at most `MOST_ROWS`, and no more than the rows' next power of two), over one
    warp per 256 of them, at most 8; for rows of `LONG_ROW_BLOCK` or more, two rows over twice the default warps."""
    block, default = row_launch_parameters(length)
    most = max(1, min(16, block // 32))
    warps = [default] + [w for w in (default // 2, default * 2) if 1 <= w <= most and w != default]
    candidates = [codegen.Launch(block, w, 1) for w in warps]
    if block >= LONG_ROW_BLOCK and rows >= 2:
        candidates.append(codegen.Launch(block, min(16, default * 2), 2))
    for elements in MULTI_ROW_ELEMENTS if block <= MULTI_ROW_BLOCK else ():
        per_program = elements // block
        if 2 <= per_program <= min(MOST_ROWS, 1 << (rows - 1).bit_length()):
            candidates.append(codegen.Launch(block, min(8, elements // 256), per_program))
    return candidates


def _reduction(identity, combine):
    def template(writer, ops, avals, out, params):
        if tuple(params["axes"]) != (avals[0].ndim - 1,):  # a column sum (`reduces_columns`): this block's part
            folded = ops[0] if writer.mask is None else f"tl.where({writer.mask}, {ops[0]}, 0.0)"
            return f"tl.sum({folded}, axis=0, keep_dims=True)"
        folded = ops[0] if writer.column_mask is None else f"tl.where({writer.column_mask}, {ops[0]}, {identity})"
        if combine is None:
            return f"tl.sum({folded}, axis=1, keep_dims=True)"
        return f"tl.reduce({folded}, 1, {writer.helper(combine)}, keep_dims=True)"

    return template


def _row_gather(writer, ops, avals, out, params):
    """One element of each row at a per-row column index (take_along_axis along the last axis): the row's sum over
    the one column that matches (exact; a -0.0 comes back as 0.0), NaN or the fill value where the index is out
    of the row (jax's "fill" mode), as a sum over a row walked in chunks too."""
    x, index = ops
    match = f"({writer.column_mask}) & (columns == {index})" if writer.column_mask else f"(columns == {index})"
    picked = f"tl.sum(tl.where({match}, {x}, 0.0), axis=1, keep_dims=True)"
    if str(params["mode"]) == _PROMISE_IN_BOUNDS:
        return picked
    fill = params.get("fill_value")
    fill = 'float("nan")' if fill is None else float(fill)
    return f"tl.where(({index} >= 0) & ({index} < n), {picked}, {fill})"


def _row_scatter_add(writer, ops, avals, out, params):
    """A value per row added to each row at a per-row column index (take_along_axis's gradient); an index out of
    the row adds nothing (jax's "drop" mode)."""
    operand, index, updates = ops
    return f"({operand} + tl.where(columns == {index}, {updates}, 0.0))"


_PROMISE_IN_BOUNDS = "GatherScatterMode.PROMISE_IN_BOUNDS"

REDUCTIONS = {
    "reduce_sum": _reduction("0.0", None),
    "reduce_max": _reduction('float("-inf")', "_max_propagating"),
    "reduce_min": _reduction('float("inf")', "_min_propagating"),
    "gather": _row_gather,  # of one element per row: reduced like a sum
}
INDEXED = ("gather", "scatter_add")  # read a per-row index: see `indexes_rows`


def indexes_rows(eqn):
    """Does a gather or scatter_add equation pick, or add to, one element of each row of its operand at a per-row
    column index (jnp.take_along_axis along the last axis, and its gradient), in a mode the row kernel follows
    (fill or drop, or in bounds promised)? The index array is the rows' shape with two trailing 1s."""
    name, params = eqn.primitive.name, eqn.params
    if name not in INDEXED or str(params.get("mode")) not in ("GatherScatterMode.FILL_OR_DROP", _PROMISE_IN_BOUNDS):
        return False
    operand, indices = eqn.inputs[0].aval, eqn.inputs[1].aval
    batch = tuple(range(operand.ndim - 1))
    if operand.ndim < 2 or indices.shape != operand.shape[:-1] + (1, 1) or not dtypes.is_inexact(operand.dtype):
        return False
    numbers, last = params["dimension_numbers"], (operand.ndim - 1,)
    if name == "gather":
        return (tuple(numbers.offset_dims) == () and tuple(numbers.collapsed_slice_dims) == last
                and tuple(numbers.start_index_map) == last and tuple(numbers.operand_batching_dims) == batch
                and tuple(numbers.start_indices_batching_dims) == batch and all(n == 1 for n in params["slice_sizes"]))
    return (tuple(numbers.update_window_dims) == () and tuple(numbers.inserted_window_dims) == last
            and tuple(numbers.scatter_dims_to_operand_dims) == last and tuple(numbers.operand_batching_dims) == batch
            and tuple(numbers.scatter_indices_batching_dims) == batch
            and eqn.inputs[2].aval.shape == operand.shape[:-1] + (1,))


def reduces_columns(eqn):
    """Is `eqn` a sum over all axes but the last of an array of rows (a bias's or a norm's scale's gradient: one
    value per column), axes of length 1 summed or kept alike? A kernel holding one walks its rows in a loop and
    stores a partial sum per program."""
    if eqn.primitive.name != "reduce_sum" or eqn.inputs[0].aval.ndim < 2:
        return False
    shape, axes = eqn.inputs[0].aval.shape, set(eqn.params["axes"])
    return len(shape) - 1 not in axes and any(shape[a] > 1 for a in axes) and all(
        shape[a] == 1 for a in range(len(shape) - 1) if a not in axes)


def reducible(primitive_name, dtype):
    """True when a reduction over the last axis of `dtype` values has a form here (real floats)."""
    return primitive_name in REDUCTIONS and codegen.has_triton_dtype(dtype) and dtypes.is_inexact(dtype)


class RowWriter(codegen.KernelWriter):
    """A kernel writer for rows of `length` elements: literals are scalars, broadcast where they are used;
    `column_mask` and `mask` (rows' and columns' together) name the masks its reductions and row values need,
    None where they need none."""

    literal_shape = "[]"

    def __init__(self, platform, rows, length, row_mask, column_mask):
        super().__init__(platform)
        self.rows, self.length = rows, length
        self.column_mask = column_mask
        self.mask = " & ".join(m for m in (row_mask, column_mask) if m) or None

    def flat_index(self, aval):
        """A whole row's values are at `offsets`; a per-row value's at `row`."""
        return "offsets" if self.is_row(aval) else "row"

    def is_row(self, aval):
        """True for a whole row's values (a [BLOCK] vector), False for a per-row or single value (a scalar);
        per-column inputs are [BLOCK] vectors too, told apart by the region (`generate_row_source`)."""
        return aval.size == self.rows * self.length


def _broadcast(writer, ops, avals, out, params):
    # a per-row or single value becomes the row's; a per-column vector already is one; anything else keeps its
    # elements (only 1-dims are inserted)
    if writer.is_row(out) and not writer.is_row(avals[0]):
        return f"tl.broadcast_to({ops[0]}, [ROWS, BLOCK])"
    return ops[0]


ROW_TEMPLATES = {**codegen.EQUATION_TEMPLATES, **REDUCTIONS, "scatter_add": _row_scatter_add,
                 "broadcast_in_dim": _broadcast,
                 "reshape": lambda writer, ops, avals, out, params: ops[0],
                 "squeeze": lambda writer, ops, avals, out, params: ops[0]}


def read_kind(placed, shape):
    """How an equation over whole rows of `shape` reads an operand placed as `placed` (codegen.read_shape): "row",
    "per_row", "per_column", "single", or "other" (repeated along another set of axes)."""
    if placed == tuple(shape):
        return "row"
    if all(n == 1 for n in placed):
        return "single"
    if placed[-1] == 1 and tuple(placed[:-1]) == tuple(shape[:-1]):
        return "per_row"
    if all(n == 1 for n in placed[:-1]) and placed[-1] == shape[-1]:
        return "per_column"
    return "other"


def generate_row_source(equations, inputs, outputs, rows, length, platform="cpu", columns=frozenset(),
                        launches=(), column_sums=frozenset(), computed=()):
    """(kernel name, Triton source) for a row-wise region over `rows` rows of `length` elements.

    inputs: the region's array inputs (Vars) in the kernel's order: rows of `length` elements, one value per row,
    a single value, or (those in `columns`) one value per column, loaded once per program as a [1, BLOCK] block
    and only broadcast to rows. outputs: the Vars the kernel stores, in order, rows or per-row values, or (those in
    `column_sums`, results of `reduces_columns` equations) one partial sum per column and program: with any, each
    program walks the blocks of rows program_id, program_id + programs, ... and stores its sums, in the register
    type, as row program_id of a (programs, length) array, summed by whoever reads it.
    launches: the Launches the kernel may run under; rows are masked only if one of them overhangs them.
    computed: equations among `equations` that read no input (a causal mask built from iotas) and whose results the
    others read along other axes: each such read computes them at the element's coordinates instead of loading."""
    block = row_launch_parameters(length)[0]
    row_mask = "in_rows" if any(rows % launch.rows for launch in launches) else None
    column_mask = "in_columns" if length != block else None
    writer = RowWriter(platform, rows, length, row_mask, column_mask)
    writer.lines += ["columns = tl.arange(0, BLOCK)[None, :]"] + (["in_columns = columns < n"] if column_mask else [])
    names, positions, others, read_equations = {}, {v: i for i, v in enumerate(inputs)}, {}, []
    computed_values = {v for eqn in computed for v in eqn.outvars}
    emitter = elementwise_codegen.Emitter(writer, computed, (), (rows, length), ROW_TEMPLATES)
    for position, var in enumerate(inputs):  # the same for every row: loaded before the rows' loop
        if var in columns:
            names[var] = writer.let(codegen.load_text(f"in{position}_ptr + columns", var.aval.dtype, column_mask))
    loop_start = len(writer.lines)
    group = "group" if column_sums else "tl.program_id(0)"
    first = f"{group}.to(tl.int64)" if rows * length >= 2 ** 31 else group
    writer.lines += [f"row = {first} * ROWS + tl.arange(0, ROWS)[:, None]", "offsets = row * n + columns"]
    writer.lines += ["in_rows = row < m"] if row_mask else []

    def address_and_mask(pointer, var):
        if writer.is_row(var.aval):
            return f"{pointer} + offsets", writer.mask
        return (f"{pointer} + row", row_mask) if var.aval.size == rows else (pointer, None)

    for eqn in [eqn for eqn in equations if eqn not in computed]:
        # an input read along other axes: loaded at each element's index, once per pattern (a computed value:
        # computed there)
        operands, shape = list(eqn.inputs), eqn.outvars[0].aval.shape
        for k, operand in enumerate(operands):
            if (operand not in positions and operand not in computed_values
                    or eqn.primitive.name in (*REDUCTIONS, *INDEXED) or not writer.is_row(eqn.outvars[0].aval)):
                continue
            placed = codegen.read_shape(eqn, operand, shape)
            if read_kind(placed, shape) == "other":
                if (operand, placed) not in others:
                    others[operand, placed] = read = Var(eqn.outvars[0].aval)
                    index = codegen.read_index(placed, shape)
                    if operand in computed_values:
                        coordinates = elementwise_codegen.delinearized(index, operand.aval.shape)
                        names[read] = emitter.at(operand, coordinates)
                    else:
                        address = f"in{positions[operand]}_ptr + {index}"
                        names[read] = writer.let(codegen.load_text(address, operand.aval.dtype, writer.mask))
                operands[k] = others[operand, placed]
        read_equations.append(eqn.replace(inputs=operands))
    read_otherwise = {a for eqn in read_equations for a in eqn.inputs if a in positions}
    read_along_other_axes = {var for var, _ in others}
    for position, var in enumerate(inputs):
        if var not in columns and (var in read_otherwise or var not in read_along_other_axes):
            address, mask = address_and_mask(f"in{position}_ptr", var)
            names[var] = writer.let(codegen.load_text(address, var.aval.dtype, mask))
    codegen.emit_equations(writer, read_equations, names, outputs, ROW_TEMPLATES)
    sums = []  # (output position, accumulator)
    for position, var in enumerate(outputs):
        if var in column_sums:
            sums.append((position, f"sum{len(sums)}"))
            writer.lines.append(f"{sums[-1][1]} = {sums[-1][1]} + {names[var]}")
            continue
        address, mask = address_and_mask(f"out{position}_ptr", var)
        value = codegen.stored_text(names[var], var.aval.dtype)
        writer.lines.append(f"tl.store({address}, {value}" + (f", mask={mask})" if mask else ")"))
    if sums:
        body = [f"    {line}" for line in writer.lines[loop_start:]]
        kinds = [codegen.triton_dtype(codegen.register_dtype(outputs[p].aval.dtype)) for p, _ in sums]
        writer.lines[loop_start:] = (
            [f"{total} = tl.zeros([1, BLOCK], dtype={kind})" for (_, total), kind in zip(sums, kinds)]
            + ["for group in range(tl.program_id(0), tl.cdiv(m, ROWS), tl.num_programs(0)):"] + body
            + [f"tl.store(out{p}_ptr + tl.program_id(0) * n + columns, {total}"
               + (f", mask={column_mask})" if column_mask else ")") for p, total in sums])
    parameters = [f"in{i}_ptr" for i in range(len(inputs))] + ["n", "m"] + [f"out{i}_ptr" for i in range(len(outputs))]
    return codegen.kernel_source(writer, equations, parameters, ("BLOCK", "ROWS"))
