"""Triton source for a row-wise region whose rows are longer than a program keeps in registers (more than
`ROW_LIMIT` elements: a log-softmax over a 50,257-word vocabulary): each program takes one row and walks along it in
chunks of BLOCK columns, once per stage of its reductions, then once more to store its results.

A reduction's stage is one more than the latest stage of the per-row values its operand depends on (a softmax: the
maximum is stage 1, the sum of exponentials, which needs the maximum, stage 2; a layer norm: the mean, then the
variance). Pass p walks the row computing, chunk by chunk, the row values that stage p's reductions read, and folds
each chunk's partial reduction into an accumulator of float32 (or the register type) per row; after the pass, the
per-row equations that stage p's results complete are computed once. The last pass computes the row results and
stores them, chunk by chunk; per-row results are stored at the end. Row values are recomputed in every pass that
needs them (reading the row's inputs again, from L2 where the row fits): one pass per stage instead of the
registers a long row would need.

    def fused_<ops>_<digest>(in0_ptr, ..., n, m, out0_ptr, ..., BLOCK: tl.constexpr, ROWS: tl.constexpr)

with ROWS = 1 (the grid has one program per row) and the same arguments as a short-row kernel
(lowering/fusion_rows_codegen.py), whose templates and writer it shares.
"""

from ..core.ir import Var
from . import fusion_codegen as codegen
from . import fusion_rows_codegen as rows_codegen

# (BLOCK, num_warps) of the chunks the tuner tries, the first the default
LONG_ROW_LAUNCHES = ((4096, 8), (2048, 4), (8192, 16))
_IDENTITIES = {"reduce_sum": "0.0", "reduce_max": 'float("-inf")', "reduce_min": 'float("inf")', "gather": "0.0"}
_FOLDS = {"reduce_sum": "{acc} + {part}", "gather": "{acc} + {part}",
          "reduce_max": "tl.maximum({acc}, {part}, propagate_nan=tl.PropagateNan.ALL)",
          "reduce_min": "tl.minimum({acc}, {part}, propagate_nan=tl.PropagateNan.ALL)"}


def long_row_launch_candidates():
    return [codegen.Launch(block, warps, 1) for block, warps in LONG_ROW_LAUNCHES]


def _stages(equations, inputs):
    """Each value's stage: 0 for inputs, the latest of its operands', one more after a reduction."""
    stage = {v: 0 for v in inputs}
    for eqn in equations:
        s = max((stage.get(a, 0) for a in eqn.inputs if type(a) is Var), default=0)
        if eqn.primitive.name in rows_codegen.REDUCTIONS:
            s += 1
        for v in eqn.outvars:
            stage[v] = s
    return stage


def _row_equations_feeding(targets, equations, producer, is_row):
    """The row equations (results of whole rows, not reductions) that `targets` (Vars) need, in program order
    (`producer`: Var -> the index of its equation)."""
    needed, stack = set(), [v for v in targets if type(v) is Var]
    while stack:
        index = producer.get(stack.pop())
        if index is None or index in needed:
            continue
        eqn = equations[index]
        if eqn.primitive.name in rows_codegen.REDUCTIONS or not is_row(eqn.outvars[0].aval):
            continue
        needed.add(index)
        stack.extend(a for a in eqn.inputs if type(a) is Var)
    return [equations[index] for index in sorted(needed)]


def generate_long_row_source(equations, inputs, outputs, rows, length, platform="cpu", columns=frozenset()):
    """(kernel name, Triton source) for a row-wise region over `rows` rows of `length` elements, `length` past what
    one program holds: inputs and outputs as `rows_codegen.generate_row_source` takes them (no input read along
    other axes)."""
    writer = rows_codegen.RowWriter(platform, rows, length, None, "in_columns")
    narrow = codegen.visibly_narrow(equations, outputs)
    first = "tl.program_id(0).to(tl.int64)" if rows * length >= 2 ** 31 else "tl.program_id(0)"
    writer.lines.append(f"row = {first} * ROWS + tl.arange(0, ROWS)[:, None]")
    producer = {v: index for index, eqn in enumerate(equations) for v in eqn.outvars}
    stage = _stages(equations, inputs)
    positions = {v: i for i, v in enumerate(inputs)}
    walked = [v for v in inputs if v in columns or writer.is_row(v.aval)]  # loaded chunk by chunk
    names = {}
    for var in inputs:  # per-row and single values, once
        if var not in walked:
            address = f"in{positions[var]}_ptr + row" if var.aval.size == rows else f"in{positions[var]}_ptr"
            names[var] = writer.let(codegen.load_text(address, var.aval.dtype))

    def per_row_equations(at_stage):
        done = [eqn for eqn in equations if eqn.primitive.name not in rows_codegen.REDUCTIONS
                and not writer.is_row(eqn.outvars[0].aval) and stage[eqn.outvars[0]] == at_stage]
        codegen.emit_equations(writer, done, names, outputs, rows_codegen.ROW_TEMPLATES, narrow)

    def walk(row_equations, reads, body):
        """A loop over the row's chunks computing `row_equations` (names local to it) from the inputs they and
        `reads` (Vars) need, then `body(local)`."""
        writer.lines.append("for start in range(0, n, BLOCK):")
        opened = len(writer.lines)
        writer.lines += ["columns = start + tl.arange(0, BLOCK)[None, :]", "in_columns = columns < n",
                         "offsets = row * n + columns"]
        local = dict(names)
        read = {a for eqn in row_equations for a in eqn.inputs if a in positions} | set(reads)
        for var in walked:
            if var in read:
                address = f"in{positions[var]}_ptr + {'columns' if var in columns else 'offsets'}"
                local[var] = writer.let(codegen.load_text(address, var.aval.dtype, "in_columns"))
        codegen.emit_equations(writer, row_equations, local, outputs, rows_codegen.ROW_TEMPLATES, narrow)
        body(local)
        writer.lines[opened:] = ["    " + line for line in writer.lines[opened:]]

    per_row_equations(0)
    for at_stage in range(1, max((stage[v] for v in stage), default=0) + 1):
        reductions = [eqn for eqn in equations if eqn.primitive.name in rows_codegen.REDUCTIONS
                      and stage[eqn.outvars[0]] == at_stage]
        if not reductions:
            continue
        accumulators = []
        for eqn in reductions:
            kind = codegen.triton_dtype(codegen.register_dtype(eqn.outvars[0].aval.dtype))
            accumulators.append(writer.let(f"tl.full([ROWS, 1], {_IDENTITIES[eqn.primitive.name]}, {kind})"))

        def fold(local, reductions=reductions, accumulators=accumulators):
            for eqn, accumulator in zip(reductions, accumulators):
                part = rows_codegen.REDUCTIONS[eqn.primitive.name](
                    writer, [local[a] for a in eqn.inputs], [a.aval for a in eqn.inputs], eqn.outvars[0].aval,
                    eqn.params)
                writer.lines.append(f"{accumulator} = " + _FOLDS[eqn.primitive.name].format(acc=accumulator,
                                                                                             part=part))

        operands = [eqn.inputs[0] for eqn in reductions]
        walk(_row_equations_feeding(operands, equations, producer, writer.is_row), operands, fold)
        names.update((eqn.outvars[0], accumulator) for eqn, accumulator in zip(reductions, accumulators))
        per_row_equations(at_stage)

    row_outputs = [(position, var) for position, var in enumerate(outputs) if writer.is_row(var.aval)]

    def store(local):
        for position, var in row_outputs:
            value = codegen.stored_text(local[var], var.aval.dtype)
            writer.lines.append(f"tl.store(out{position}_ptr + offsets, {value}, mask=in_columns)")

    if row_outputs:
        results = [var for _, var in row_outputs]
        walk(_row_equations_feeding(results, equations, producer, writer.is_row), results, store)
    for position, var in enumerate(outputs):
        if not writer.is_row(var.aval):
            address = f"out{position}_ptr + row" if var.aval.size == rows else f"out{position}_ptr"
            writer.lines.append(f"tl.store({address}, {codegen.stored_text(names[var], var.aval.dtype)})")
    parameters = [f"in{i}_ptr" for i in range(len(inputs))] + ["n", "m"] + [f"out{i}_ptr" for i in range(len(outputs))]
    return codegen.kernel_source(writer, equations, parameters, ("BLOCK", "ROWS"))
