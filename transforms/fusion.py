"""Automatic fusion: regions of elementwise equations, and row-wise reductions with them, become generated
Triton kernels (`fusion="triton"`).

`fuse_elementwise` runs on the final program a jit compiles, after every transformation, so the backward
passes of `grad` fuse too. Two passes find maximal connected, acyclic regions of equations sharing a domain:

- row-wise first: reduce_sum/max/min over the last axis of a 2-D or higher array (rows of at most
  `LONGEST_ROW` elements, the leading axes flattened; rows past `ROW_LIMIT` are walked in chunks by
  lowering/fusion_long_rows_codegen.py) with the elementwise equations over those rows or over one
  value per row, the reshapes of per-row values and their broadcasts back along the rows (softmax,
  log_softmax, logsumexp, layer and RMS norm, and their backward passes), with vectors of one value per
  column broadcast along the rows (layer norm's scale and shift), inputs repeated along other axes (a mask
  passed in), values computed from iotas alone (a causal mask: computed in the kernel at each element's
  coordinates, and copied for each kernel reading it: `_rematerialized`), and sums over the rows (a bias's
  gradient: the programs loop over the rows and store partial sums, `_summed_partials`); row regions reading a
  common input merge (`_siblings_merged`); a region holding a reduction becomes one kernel with one program per
  row (lowering/fusion_rows_codegen.py);
- then elementwise: equations whose outputs share one shape, each operand read as it broadcasts; each region
  then takes in the views (slices, concatenations, pads, reshapes, transposes, ...) and the elementwise work of
  other shapes that only it reads (`_absorbed`), computed at the coordinates each element needs
  (lowering/fusion_elementwise_codegen.py); independent regions whose kernels are the same share one launch
  (`_Fuser.grouped`: the many tensors of an optimizer's update).

Regions are found by transforms/fusion_regions.py. Each region of two or more equations is replaced by one
`triton_call` equation (and, for column sums, the reduction of its partial sums). A value a region computes
becomes a kernel output when something outside the region uses it; nothing is computed twice; regions are
only merged when no path leaves a region and comes back into it, and the equations are re-ordered
topologically around the fused ones. A nested jit's or custom derivative's equation is replaced by its
program's equations (a custom derivative's rules are spent in the final program), so regions cross calls and a
forward pass fuses with the backward pass its rule made; where nothing fuses, calls stay, their programs fused.
Control-flow bodies, collectives, pmap and shard_map are left to XLA. Kernels are generated for the platform
the program is compiled for ("gpu": libdevice's precise math; "cpu": Triton's interpreter).
"""

import dataclasses
import math
import sys

from ..core.avals import ShapedArray
from ..core.config import config
from ..core.dce import live_equations
from ..core.ir import ClosedProgram, Equation, Program, Var
from ..lax.conversions import convert_element_type_p
from ..lax.reductions import reduce_sum_p
from ..lax.shapes import reshape_p
from ..lax.triton_call import triton_call_p
from ..lowering import fusion_codegen as codegen
from ..lowering import fusion_elementwise_codegen as elementwise_codegen
from ..lowering import fusion_long_rows_codegen as long_rows_codegen
from ..lowering import fusion_rows_codegen as rows_codegen
from . import fusion_recompute as recompute
from . import fusion_regions as region_search
from . import fusion_tuning

_CUSTOM_DERIVATIVES = ("custom_jvp_call", "custom_vjp_call")  # their rules are spent in a final program
_INLINED = ("jit",) + _CUSTOM_DERIVATIVES  # calls whose programs join the caller's regions
LONGEST_ROW = 1 << 20  # elements: rows past rows_codegen.ROW_LIMIT are walked in chunks (fusion_long_rows_codegen)
# A row kernel holding column sums (a bias's gradient) runs this many programs at most, each looping over its share
# of the rows; their partial sums are then added by XLA (programs x columns values: little beside the rows).
COLUMN_SUM_PROGRAMS = 256


@dataclasses.dataclass(frozen=True)
class FusedKernel:
    """A generated kernel: its `name`, the region's `equations` as program text, its Triton `source`, the launch
    configuration chosen (`block`: BLOCK, `num_warps`, and for a row kernel `rows_per_program`: ROWS), and the
    tuner's `timing` (None where not timed)."""

    name: str
    equations: str
    source: str
    block: int
    num_warps: int
    rows_per_program: int = None
    timing: object = None


@dataclasses.dataclass(frozen=True)
class RowGrid:
    """A row-wise kernel's launch grid: one program per `ROWS` of the region's `rows`."""

    rows: int

    def __call__(self, metaparams):
        return (-(-self.rows // metaparams["ROWS"]),)


@dataclasses.dataclass(frozen=True)
class FixedGrid:
    """A launch grid of `programs` programs, whatever the launch (a kernel whose programs loop over its rows)."""

    programs: int

    def __call__(self, metaparams):
        return (self.programs,)


@dataclasses.dataclass(frozen=True)
class SegmentsGrid:
    """A kernel over several regions' launch grid: each region's blocks of `BLOCK` elements, one after another."""

    sizes: tuple

    def __call__(self, metaparams):
        return (sum(-(-size // metaparams["BLOCK"]) for size in self.sizes),)


@dataclasses.dataclass(frozen=True)
class BlockGrid:
    """A fused kernel's launch grid: one program per `BLOCK` of the region's `size` elements."""

    size: int

    def __call__(self, metaparams):
        return (-(-self.size // metaparams["BLOCK"]),)


def require_triton():
    try:
        import triton  # noqa: F401
    except ImportError:
        raise ImportError('fusion="triton" generates Triton kernels, but Triton is not installed: '
                          "pip install triton (or use fusion=\"xla\")") from None


def fuse_elementwise(closed: ClosedProgram, platform="cpu") -> ClosedProgram:
    """`closed` with its elementwise regions fused into generated Triton kernels for `platform` ("cpu": run
    through Triton's interpreter, "gpu": compiled for the device; the forms of exp, log, tanh, ... differ)."""
    return fuse_with_kernels(closed, platform)[0]


def fuse_with_kernels(closed: ClosedProgram, platform="cpu", placement=None, tuner=None):
    """(fused ClosedProgram, [FusedKernel] in the order the regions were generated). With a `placement`
    (backend, device) where the numax_fusion_autotune flag asks for it, or with a `tuner`, each region's launch
    candidates are timed against XLA's code for it there (transforms/fusion_tuning.py): the fastest is kept,
    and a region whose kernel is not faster stays with XLA."""
    require_triton()
    if tuner is None and placement is not None and fusion_tuning.should_tune(platform):
        tuner = fusion_tuning.RegionTuner(*placement)
    fuser = _Fuser(platform, tuner)
    fused = fuser.closed(closed)
    if tuner is not None and fuser.kernels:
        faster, decision = tuner.program_is_faster(closed, fused)
        if config.log_fusion and decision is not None:
            verdict = "kept" if faster else "not faster than XLA's: compiled without fusion"
            print(f"numax: the program with {len(fuser.kernels)} fused kernels {verdict} "
                  f"(fused {decision.kernel_us[0]:.1f} us, XLA {decision.xla_us:.1f} us)", file=sys.stderr)
        if not faster:
            return closed, []
    return fused, fuser.kernels


class _Fuser:
    """One pass over a program and the programs of its nested jit equations (each fused once)."""

    def __init__(self, platform, tuner=None):
        self.platform = platform
        self.tuner = tuner
        self.kernels = []
        self.done = {}  # id of a nested ClosedProgram -> its fused form

    def closed(self, closed):
        program = self.program(closed.program)
        return closed if program is closed.program else ClosedProgram(program, closed.consts)

    def nested(self, eqn):
        if eqn.primitive.name not in ("jit",) + _CUSTOM_DERIVATIVES:
            return eqn
        inner = eqn.params["program"]
        if id(inner) not in self.done:
            self.done[id(inner)] = (inner, self.closed(inner))  # the original kept alive: ids stay unique
        fused = self.done[id(inner)][1]
        return eqn if fused is inner else eqn.replace(params={**eqn.params, "program": fused})

    def program(self, program):
        # dead code (a grad's unused forward result) dropped first, so that no kernel stores what nothing reads
        equations = live_equations([self.nested(eqn) for eqn in _inlined(program.equations)], program.outvars)[0]
        equations = _rematerialized(equations, program.outvars)
        fused = self.fuse_regions(equations, program.outvars, _row_domains, self.row_equations)
        fused = self.fuse_regions(fused, program.outvars, _elementwise_domains, self.elementwise_equations,
                                  elementwise=True)
        if fused is equations:  # no region here: custom derivatives stay called (their programs fused)
            fused = [self.nested(eqn) for eqn in program.equations]
            if all(a is b for a, b in zip(fused, program.equations)):
                return program
        return Program(program.constvars, program.invars, program.outvars, fused)

    def fuse_regions(self, equations, program_outvars, domains_of, fused_equations, elementwise=False):
        """`equations` with each region `domains_of` finds replaced by `fused_equations(members, inputs, outputs,
        domain)` where that is not None, in a topological order. For `elementwise` regions, each region first takes
        in the views and elementwise equations of other shapes that only it reads (`_absorbed`), and independent
        regions with the same kernel share one launch (`_grouped`: an optimizer's update of many tensors)."""
        users = region_search.users_of(equations, program_outvars)
        regions = region_search.find_regions(equations, domains_of, 1 if elementwise else 2,
                                             None if elementwise else rows_codegen.reduces_columns)
        if elementwise:
            regions = _absorbed(equations, regions, users)
        recomputing, regions = recompute.recomputed(equations, regions, program_outvars,
                                                    _input_free_values(equations))
        if recomputing is not equations:  # copies given to some regions: who reads what has changed
            equations, users = recomputing, region_search.users_of(recomputing, program_outvars)
        if elementwise:
            regions = _siblings_merged(equations, regions, _reads_whole_domain)
        else:
            regions = _computed_in_place(equations, _siblings_merged(equations, regions), users)
        described = []  # (members, inputs, outputs, domain) of each region worth a kernel
        for members, domain in regions:
            inside = set(members)
            outputs = [v for i in members for v in equations[i].outvars if users.get(v, set()) - inside]
            if len(members) < 2 or not outputs:
                continue
            produced = {v for i in members for v in equations[i].outvars}
            inputs = list(dict.fromkeys(a for i in members for a in equations[i].inputs
                                        if type(a) is Var and a not in produced))
            described.append((members, inputs, outputs, domain))
        groups = self.grouped(equations, described) if elementwise else [([region], None) for region in described]
        fused = {}  # first member's index -> (the equations in the region's place, members)
        for group, segment in groups:
            if len(group) == 1:
                members, inputs, outputs, domain = group[0]
                replacement = fused_equations([equations[i] for i in members], inputs, outputs, domain)
            else:
                replacement = self.foreach_equations(equations, group, segment)
            if replacement is not None:
                members = sorted(i for region in group for i in region[0])
                fused[members[0]] = (replacement, members)
        return region_search.ordered(equations, fused) if fused else equations

    def grouped(self, equations, regions):
        """`regions` in groups, each with its regions' segment kernel (name, source): those whose segment kernels
        have the same source and that do not depend on each other share a group (in their order), unless groups
        would then depend on each other both ways."""
        sources = [elementwise_codegen.generate_source([equations[i] for i in members], inputs, outputs,
                                                       domain[1], self.platform, segment=True)
                   for members, inputs, outputs, domain in regions]
        depends = region_search.region_dependencies(equations, [members for members, *_ in regions])
        groups, by_source = [], {}
        for r, (_, source) in enumerate(sources):
            for group in by_source.get(source, ()):
                if all(not (depends[r] >> q) & 1 and not (depends[q] >> r) & 1 for q in group):
                    group.append(r)
                    break
            else:
                groups.append([r])
                by_source.setdefault(source, []).append(groups[-1])
        if any(len(group) > 1 for group in groups) and not region_search.groups_acyclic(groups, depends):
            groups = [[r] for r in range(len(regions))]
        return [([regions[r] for r in group], sources[group[0]]) for group in groups]

    def foreach_equations(self, equations, group, segment):
        """One kernel for a group of regions with the same `segment` kernel (name, source: `grouped`), or None where
        the tuner leaves them to XLA."""
        inputs = list(dict.fromkeys(v for _, region_inputs, _, _ in group for v in region_inputs))
        outputs = [v for _, _, region_outputs, _ in group for v in region_outputs]
        position = {v: i for i, v in enumerate(inputs)}
        segments, first_output = [], 0
        for _, region_inputs, region_outputs, _ in group:
            segments.append(([position[v] for v in region_inputs],
                             list(range(first_output, first_output + len(region_outputs)))))
            first_output += len(region_outputs)
        name, source = elementwise_codegen.foreach_source(*segment, segments, len(inputs), len(outputs))
        sizes = tuple(region_outputs[0].aval.size for _, _, region_outputs, _ in group)
        member_equations = [equations[i] for members, *_ in group for i in members]
        return self.kernel_equations(member_equations, inputs, outputs, name, source, SegmentsGrid(sizes), sizes,
                                    codegen.launch_candidates(max(sizes)))

    def elementwise_equations(self, members, inputs, outputs, domain):
        shape = domain[1]
        size = outputs[0].aval.size
        name, source = elementwise_codegen.generate_source(members, inputs, outputs, shape, self.platform)
        return self.kernel_equations(members, inputs, outputs, name, source, BlockGrid(size), (size,),
                                    codegen.launch_candidates(size))

    def row_equations(self, members, inputs, outputs, domain):
        """The kernel of a row-wise region, or None where it holds no reduction (the elementwise pass's then)."""
        if not any(eqn.primitive.name in (*rows_codegen.REDUCTIONS, *rows_codegen.INDEXED) for eqn in members):
            return None
        _, rows, length = domain
        columns = _column_inputs(members, inputs)
        others = set().union(*map(_other_pattern_operands, members))
        computed = _input_free_producers(members, others - set(inputs))
        if columns is None or computed is None:
            return None
        if length > rows_codegen.ROW_LIMIT:  # walked in chunks, one row per program
            if others:
                return None
            candidates = long_rows_codegen.long_row_launch_candidates()
            name, source = long_rows_codegen.generate_long_row_source(members, inputs, outputs, rows, length,
                                                                       self.platform, columns)
            return self.kernel_equations(members, inputs, outputs, name, source, RowGrid(rows), (length, rows),
                                        candidates)
        candidates = rows_codegen.row_launch_candidates(length, rows)
        sums = {eqn.outvars[0] for eqn in members if rows_codegen.reduces_columns(eqn)} & set(outputs)
        name, source = rows_codegen.generate_row_source(members, inputs, outputs, rows, length, self.platform,
                                                        columns, candidates, sums, computed)
        if not sums:
            return self.kernel_equations(members, inputs, outputs, name, source, RowGrid(rows), (length, rows),
                                        candidates)
        programs = min(rows, COLUMN_SUM_PROGRAMS)
        partials, finish = _summed_partials(outputs, sums, programs, length)
        return self.kernel_equations(members, inputs, outputs, name, source, FixedGrid(programs), (length, rows),
                                    candidates, partials, finish)

    def kernel_equations(self, members, inputs, outputs, name, source, grid, scalars, candidates,
                        kernel_outputs=None, finish=()):
        """The equations computing a region's `outputs`: the `triton_call` of its kernel (`scalars`: its integer
        arguments after the arrays; `kernel_outputs`: what it stores, the region's `outputs` unless given) under
        the best of the launch `candidates` (codegen.Launch, the default first), then the `finish` equations (which
        complete the outputs from the kernel's); None where the tuner leaves the region to XLA."""
        kernel = codegen.load_kernel(name, source)
        kernel_outputs = outputs if kernel_outputs is None else kernel_outputs

        def call(launch):
            params = dict(kernel=kernel, out_avals=tuple(v.aval for v in kernel_outputs), grid=grid,
                          call_spec=tuple(("array", i) for i in range(len(inputs))) + tuple(
                              ("scalar", s) for s in scalars),
                          metaparams=launch.metaparams(), input_output_aliases=(), zeroed_outputs=(),
                          num_warps=launch.num_warps, num_stages=None, num_ctas=1, debug=False, name=name)
            return [Equation(triton_call_p, inputs, kernel_outputs, params), *finish]

        decision, choice = None, 0
        if self.tuner is not None:
            signature = f"{source}\n{grid}\n{candidates}"
            decision = self.tuner.decide(members, inputs, outputs, [call(c) for c in candidates], signature)
            choice = decision.choice
        text = str(Program([], inputs, outputs, members))
        if config.log_fusion:
            region = f"{len(members)} equations over {outputs[0].aval.str_short()}"
            timing = f"; {decision.describe(candidates)}" if decision else ""
            if choice is None:
                line = f"left {region} to XLA ({decision.describe(candidates)})"
            else:
                line = f"fused {region} into {name} ({candidates[choice]}{timing})"
            print(f"numax: {line}: {text}", file=sys.stderr)
        if choice is None:
            return None
        launch = candidates[choice]
        self.kernels.append(FusedKernel(name, text, source, launch.block, launch.num_warps, launch.rows,
                                        decision.describe(candidates) if decision else None))
        return call(launch)


def _summed_partials(outputs, sums, programs, length):
    """(the kernel's outputs, the equations after it) for a row region whose `outputs` include column `sums`: each
    of those is stored as (programs, length) partial sums in the register type, which a reduce_sum adds up (and a
    conversion narrows to the output's dtype)."""
    kernel_outputs, finish = [], []
    for var in outputs:
        if var not in sums:
            kernel_outputs.append(var)
            continue
        register = codegen.register_dtype(var.aval.dtype)
        partial = Var(ShapedArray((programs, length), register))
        kernel_outputs.append(partial)
        # summed in the register type, narrowed to the output's dtype, given back the axes of length 1 the sum
        # keeps ((1, n) from (1, m, n) summed over its middle axis): each step where it changes something
        steps = [(reduce_sum_p, dict(axes=(0,)), ShapedArray((length,), register))]
        if register != var.aval.dtype:
            steps.append((convert_element_type_p, dict(new_dtype=var.aval.dtype, weak_type=var.aval.weak_type),
                          ShapedArray((length,), var.aval.dtype, var.aval.weak_type)))
        if var.aval.shape != (length,):
            steps.append((reshape_p, dict(new_sizes=var.aval.shape, dimensions=None), var.aval))
        operand = partial
        for i, (primitive, params, aval) in enumerate(steps):
            result = var if i == len(steps) - 1 else Var(aval)
            finish.append(Equation(primitive, [operand], [result], params))
            operand = result
    return kernel_outputs, finish


def _siblings_merged(equations, regions, shares=None):
    """`regions` (members, domain) with those of one domain that read a common input, and do not depend on each
    other through any path, merged: one kernel reads the input once, one launch instead of several (a norm's
    backward pass and the sum of its scale's gradient, both reading the cotangent a matrix product sent back; the
    query, key and value sliced from one projection). `shares(value, regions' members, domain)`, where given, says
    which common inputs count. One pass over the inputs, the regions' dependencies (transitive bit masks) updated at
    each merge instead of found again."""
    members = [list(m) for m, _ in regions]
    domains = [domain for _, domain in regions]
    depends = region_search.region_dependencies(equations, members)
    into = list(range(len(regions)))  # region -> the region it was merged into (itself while it stands)

    def standing(r):
        while into[r] != r:
            r = into[r]
        return r

    readers = {}  # input Var -> the regions reading it
    for r, indices in enumerate(members):
        produced = {v for i in indices for v in equations[i].outvars}
        for value in {a for i in indices for a in region_search.variables(equations[i].inputs)} - produced:
            readers.setdefault(value, []).append(r)
    for value, group in readers.items():
        if shares is not None:
            group = [r for r in group if shares(value, members[r], domains[r])]
        kept = []
        for r in group:
            r = standing(r)
            for k in map(standing, kept):
                if k != r and domains[k] == domains[r] and not (depends[k] >> r) & 1 and not (depends[r] >> k) & 1:
                    members[k] += members[r]
                    into[r] = k
                    both = (1 << k) | (1 << r)
                    merged = (depends[k] | depends[r]) & ~both
                    depends[k] = merged
                    for x in range(len(depends)):  # what depended on either depends on the merged region's all
                        if into[x] == x and x != k and depends[x] & both:
                            depends[x] = (depends[x] | merged | (1 << k)) & ~(1 << r)
                    break
            else:
                kept.append(r)
    return [(sorted(members[r]), domains[r]) for r in range(len(regions)) if into[r] == r]


def _inlined(equations):
    """`equations` with each nested jit's and custom derivative's equation replaced by its program's equations (on
    fresh variables), so that regions cross a call's boundary (XLA inlines calls too) and a function's forward pass
    can fuse with the backward pass its rule produced. A program
    with constants of its own, or whose results are not values its equations compute (once each), stays called."""
    if not any(eqn.primitive.name in _INLINED for eqn in equations):
        return equations
    result = []
    for eqn in equations:
        closed = eqn.params.get("program") if eqn.primitive.name in _INLINED else None
        inner = closed.program if closed is not None else None
        produced = inner and {v for e in inner.equations for v in e.outvars}
        if (inner is None or inner.constvars or len(set(inner.outvars)) != len(inner.outvars)
                or not all(type(v) is Var and v in produced for v in inner.outvars)):
            result.append(eqn)
            continue
        renamed = dict(zip(inner.invars, eqn.inputs))
        renamed.update(zip(inner.outvars, eqn.outvars))
        for inner_eqn in _inlined(inner.equations):
            for v in inner_eqn.outvars:
                renamed.setdefault(v, Var(v.aval))
            result.append(region_search.renamed_inputs(inner_eqn, renamed).replace(
                outvars=[renamed[v] for v in inner_eqn.outvars]))
    return result


def _input_free_producers(members, values):
    """The equations among `members` computing `values` from literals alone (`_input_free_closure` within the
    region: a causal mask), in program order; None where one of `values` is not computed so."""
    producer = {v: i for i, eqn in enumerate(members) for v in eqn.outvars}
    free, needed = _input_free_values(members), set()
    for value in values:
        closure = _input_free_closure(members, producer, value, free)
        if closure is None:
            return None
        needed |= closure
    return [members[i] for i in sorted(needed)]


def _computed_in_place(equations, regions, users):
    """Row `regions` (members, domain) with the equations computing what they read along other axes (a (t, t)
    causal mask under (batch, heads, t, t) scores) taken in where those read no input at all (iotas, literals,
    elementwise work and views of them) and nothing but the region reads them otherwise: the row kernel computes
    them at each element's coordinates instead of loading what another kernel stored."""
    producer = {v: i for i, eqn in enumerate(equations) for v in eqn.outvars}
    free, result = _input_free_values(equations), [set(members) for members, _ in regions]
    for members in result:
        pending = [v for i in sorted(members) for v in _other_pattern_operands(equations[i])]
        for value in pending:
            closure = _input_free_closure(equations, producer, value, free)
            if not closure or closure <= members:
                continue
            readers = {i for k in closure for v in equations[k].outvars for i in users.get(v, ())} - closure
            if not readers <= members or any(
                    value_read not in _other_pattern_operands(equations[i])
                    for i in readers for value_read in region_search.variables(equations[i].inputs)
                    if producer.get(value_read) in closure):
                continue  # read outside the region, or inside it other than along other axes
            for other in result:
                other -= closure
            members |= closure
    return [(sorted(members), domain) for members, (_, domain) in zip(result, regions) if members]


def _rematerialized(equations, program_outvars):
    """`equations` with each value computed from iotas and literals alone (a causal mask, and its broadcast to the
    scores' shape) that several equations read given a copy of its computation per reader, placed before the
    reader: each kernel reading it computes it where it needs it (the forward and the backward pass of a softmax
    are two kernels) instead of one storing it, at the scores' size, for the others to load. Copies nothing read
    uses are dropped."""
    producer = {v: i for i, eqn in enumerate(equations) for v in eqn.outvars}
    free, readers = _input_free_values(equations), {}
    for eqn in equations:
        for value in set(region_search.variables(eqn.inputs)) & free:
            readers[value] = readers.get(value, 0) + 1
    shared = {}  # a value read several times -> its closure's indices, or None (not computed from iotas alone)
    for value, count in readers.items():
        if count > 1 and value not in program_outvars:
            closure = _input_free_closure(equations, producer, value, free)
            shared[value] = closure if closure and any(
                equations[k].primitive.name == "iota" for k in closure) else None
    if not any(shared.values()):
        return equations
    result = []
    for eqn in equations:
        renamed = {}
        for value in region_search.variables(eqn.inputs):
            if shared.get(value) and value not in renamed:
                result += region_search.copied([equations[k] for k in sorted(shared[value])], renamed)
        result.append(region_search.renamed_inputs(eqn, renamed) if renamed else eqn)
    return live_equations(result, program_outvars)[0]


def _input_free_values(equations):
    """The values computed from literals alone, each step with a kernel form at any coordinates (iotas, constants
    broadcast, elementwise work and views of them), in one pass over the program."""
    free = set()
    for eqn in equations:
        if (all(v in free for v in region_search.variables(eqn.inputs))
                and eqn.primitive.name not in rows_codegen.REDUCTIONS and _absorbable(eqn)):
            free.update(eqn.outvars)
    return free


def _input_free_closure(equations, producer, value, free):
    """The indices of the equations computing `value`, one of the `free` values (`_input_free_values`), or None
    where it is not one."""
    if value not in free:
        return None
    closure, stack = set(), [value]
    while stack:
        index = producer[stack.pop()]
        if index not in closure:
            closure.add(index)
            stack.extend(region_search.variables(equations[index].inputs))
    return closure


def _column_inputs(members, inputs):
    """The region's inputs holding one value per column, or None where such a vector is computed inside the
    region or also read another way (in a square region it could not be told from a per-row value)."""
    uses = [_column_operands(eqn) if eqn.primitive.name not in rows_codegen.REDUCTIONS else set()
            for eqn in members]
    columns = set().union(*uses)
    if not columns <= set(inputs):
        return None
    for eqn, used in zip(members, uses):
        if columns & (set(region_search.variables(eqn.inputs)) - used):
            return None
    return columns


def _reads_whole_domain(value, members, domain):
    """Does an elementwise region (`members` over `domain`) read `value` at as many elements as it computes, and
    is it worth a kernel of its own? Siblings merged over a scalar or a per-row operand would save no read, and
    single equations merged would make a kernel of what XLA does alone (a parameter's broadcasts)."""
    return len(members) >= 2 and value.aval.size >= math.prod(domain[1])


def _elementwise_domains(eqn):
    shape = _fusible_shape(eqn)
    return [] if shape is None else [("elementwise", shape)]


def _row_domains(eqn):
    """The row-wise domains ("rows", rows, length) `eqn` can belong to (length None: it sees only per-row values,
    any length will do): a reduction over the last axis of a 2-D or higher array fixes both; an elementwise
    equation over rows (with per-row operands broadcast along them), or over per-row values, or a reshape of
    per-row values."""
    name, params = eqn.primitive.name, eqn.params
    in_avals, out_avals = [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars]
    if len(out_avals) != 1:
        return []
    out = out_avals[0]
    if name in rows_codegen.INDEXED:  # one element of each row picked or added to
        x = in_avals[0]
        fits = rows_codegen.indexes_rows(eqn) and 2 <= x.shape[-1] <= LONGEST_ROW
        return [("rows", x.size // x.shape[-1], x.shape[-1])] if fits else []
    if name in rows_codegen.REDUCTIONS:
        x = in_avals[0]
        if rows_codegen.reduces_columns(eqn):  # summed in a loop over rows: rows a program holds whole
            fits = x.size > x.shape[-1] and 2 <= x.shape[-1] <= rows_codegen.ROW_LIMIT
        else:
            fits = x.ndim >= 2 and tuple(params["axes"]) == (x.ndim - 1,) and 2 <= x.shape[-1] <= LONGEST_ROW
        return [("rows", x.size // x.shape[-1], x.shape[-1])] if fits and rows_codegen.reducible(name, x.dtype) else []
    if name in ("reshape", "squeeze"):  # of per-row values
        fits = params.get("dimensions") is None or name == "squeeze"
        return [("rows", out.size, None)] if fits and codegen.has_triton_dtype(out.dtype) else []
    if not codegen.fusible(name, in_avals, out_avals):
        return []
    domains = []
    if out.ndim >= 1 and 2 <= out.shape[-1] <= LONGEST_ROW and _fits_rows(eqn, in_avals, out.shape):
        domains.append(("rows", out.size // out.shape[-1], out.shape[-1]))
    same_size = name == "broadcast_in_dim" and in_avals[0].size == out.size  # only 1-dims inserted
    row_vector = out.ndim >= 2 and out.size == out.shape[-1] > 1  # (1, ..., 1, n): a column vector's shape
    if not row_vector and (same_size or all(a.shape == out.shape or a.size == 1 for a in in_avals)):
        domains.append(("rows", out.size, None))
    return domains


def _fits_rows(eqn, in_avals, shape):
    """Does an elementwise equation with result `shape` read each operand as a row of that shape, a value per
    row (its last axis 1), a value per column (all its axes but the last 1), a single value, or (an input of the
    region only: `_other_pattern_operands`) repeated along some other axes?"""
    per_row, per_column = shape[:-1] + (1,), (1,) * (len(shape) - 1) + shape[-1:]
    if eqn.primitive.name != "broadcast_in_dim":
        return all(a.aval.shape in (shape, per_row, per_column) or a.aval.size == 1 or _placed_within(eqn, a, shape)
                   for a in eqn.inputs)
    operand, dimensions = in_avals[0].shape, tuple(eqn.params["broadcast_dimensions"])
    return (in_avals[0].size == 1 or operand == shape or (operand == shape[:-1] and dimensions ==
            tuple(range(len(shape) - 1))) or (operand == per_row and dimensions == tuple(range(len(shape))))
            or bool(_column_operands(eqn)) or _placed_within(eqn, eqn.inputs[0], shape))


def _placed_within(eqn, operand, shape):
    """Is `operand` read by `eqn` over `shape` as a broadcast (each axis whole or repeated)?"""
    placed = codegen.read_shape(eqn, operand, shape)
    return len(placed) == len(shape) and all(n in (1, m) for n, m in zip(placed, shape))


def _other_pattern_operands(eqn):
    """The operands an equation over whole rows reads repeated along axes other than the last alone or all but
    the last (a causal mask (t, t) under (batch, heads, t, t) scores): the row kernel loads them at each
    element's index, so they must be inputs of the region."""
    shape = eqn.outvars[0].aval.shape
    if (eqn.primitive.name in (*rows_codegen.REDUCTIONS, *rows_codegen.INDEXED, "reshape") or len(eqn.outvars) != 1
            or len(shape) < 2):
        return set()
    return {a for a in region_search.variables(eqn.inputs)
            if rows_codegen.read_kind(codegen.read_shape(eqn, a, shape), shape) == "other"}


def _column_operands(eqn):
    """The operands `eqn` reads as one value per column of its rows (vectors along the last axis, such as layer
    norm's scale and shift): of shape (1, ..., 1, n) in an elementwise equation over rows of n, or broadcast
    from (n,) along the rows."""
    shape = eqn.outvars[0].aval.shape
    if len(shape) < 2 or shape[-1] < 2 or eqn.outvars[0].aval.size == shape[-1]:  # one row: no columns
        return set()
    if eqn.primitive.name == "broadcast_in_dim":
        fits = (eqn.inputs[0].aval.shape == shape[-1:]
                and tuple(eqn.params["broadcast_dimensions"]) == (len(shape) - 1,))
        return {eqn.inputs[0]} if fits and type(eqn.inputs[0]) is Var else set()
    per_column = (1,) * (len(shape) - 1) + shape[-1:]
    return {a for a in eqn.inputs if type(a) is Var and a.aval.shape == per_column}


def _fusible_shape(eqn):
    """The shape an equation fuses over, or None when it does not fuse: each operand is read as it broadcasts to
    the result (whole, as one value, or repeated along some of the result's axes: `codegen.read_shape`)."""
    in_avals, out_avals = [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars]
    if not codegen.fusible(eqn.primitive.name, in_avals, out_avals):
        return None
    shape = out_avals[0].shape
    if out_avals[0].size <= 1 or not all(_placed_within(eqn, operand, shape) for operand in eqn.inputs):
        return None
    return shape


def _absorbed(equations, regions, users):
    """`regions` (elementwise ones) with each taking in, repeatedly, the equations that produce its inputs (or the
    whole region producing one) where only it reads their results and the kernel can compute them at the elements it
    needs (`_absorbable`: views such as the slices and concatenation of a rotate-half or the pads of its gradient,
    elementwise equations of other shapes such as a per-row value or a scalar), and where that makes no cycle.
    Consumers go first, so that a chain of such equations joins the region that reads it."""
    producer = {v: i for i, eqn in enumerate(equations) for v in eqn.outvars}
    owner = {i: r for r, (members, _) in enumerate(regions) for i in members}
    result = [set(members) for members, _ in regions]
    for r in sorted(range(len(regions)), key=lambda r: -max(regions[r][0])):
        members = result[r]
        if not members:
            continue
        pending = list(members)
        while pending:
            for value in region_search.variables(equations[pending.pop()].inputs):
                j = producer.get(value)
                if j is None or j in members:
                    continue
                group = result[owner[j]] if j in owner else {j}  # a region is taken in whole or not at all
                if not all(_absorbable(equations[k]) for k in group):
                    continue
                if any(users.get(v, set()) - members - group for k in group for v in equations[k].outvars):
                    continue  # read outside: it would be computed twice
                if any(region_search.depends_on(equations, producer, k, members) for k in group):
                    continue
                for k in list(group):
                    result[owner.get(k, r)].discard(k)
                    members.add(k)
                    owner[k] = r
                    pending.append(k)
    return [(sorted(members), domain) for members, (_, domain) in zip(result, regions) if members]


def _absorbable(eqn):
    """Can an elementwise kernel compute `eqn` at any elements it is asked for?"""
    if elementwise_codegen.is_view(eqn):
        return True
    in_avals, out_avals = [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars]
    if not codegen.fusible(eqn.primitive.name, in_avals, out_avals):
        return False
    return all(_placed_within(eqn, operand, out_avals[0].shape) for operand in eqn.inputs)


