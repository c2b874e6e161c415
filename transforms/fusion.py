"""Automatic fusion: regions of elementwise equations become generated Triton kernels (`fusion="triton"`).

`fuse_elementwise` runs on the final program a jit compiles, after every transformation, so the backward
passes of `grad` fuse too. It finds maximal connected regions of fusible elementwise equations whose outputs
share one shape (their inputs have that shape or one element), and replaces each region of two or more
equations by one `triton_call` equation running a kernel generated for it (lowering/fusion_codegen.py). A value
a region computes becomes a kernel output when something outside the region uses it; nothing is computed
twice; regions are only merged when no path leaves a region and comes back into it, and the equations are
re-ordered topologically around the fused ones. The programs of nested `jit` equations are fused the same
way; control-flow bodies, custom derivatives, collectives, pmap and shard_map are left to XLA.

This slice fuses elementwise chains only; row-wise reductions and autotuning against XLA come later.
"""

import dataclasses
import heapq
import sys

from ..core.config import config
from ..core.ir import ClosedProgram, Equation, Literal, Program, Var
from ..lax.triton_call import triton_call_p
from ..lowering import fusion_codegen as codegen
from .jit import jit_p


@dataclasses.dataclass(frozen=True)
class FusedKernel:
    """A generated kernel: its `name`, the region's `equations` as program text, and its Triton `source`."""

    name: str
    equations: str
    source: str


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


def fuse_with_kernels(closed: ClosedProgram, platform="cpu"):
    """(fused ClosedProgram, [FusedKernel] in the order the regions were generated)."""
    require_triton()
    fuser = _Fuser(platform)
    return fuser.closed(closed), fuser.kernels


class _Fuser:
    """One pass over a program and the programs of its nested jit equations (each fused once)."""

    def __init__(self, platform):
        self.platform = platform
        self.kernels = []
        self.done = {}  # id of a nested ClosedProgram -> its fused form

    def closed(self, closed):
        program = self.program(closed.program)
        return closed if program is closed.program else ClosedProgram(program, closed.consts)

    def nested(self, eqn):
        if eqn.primitive is not jit_p:
            return eqn
        inner = eqn.params["program"]
        if id(inner) not in self.done:
            self.done[id(inner)] = (inner, self.closed(inner))  # the original kept alive: ids stay unique
        fused = self.done[id(inner)][1]
        return eqn if fused is inner else eqn.replace(params={**eqn.params, "program": fused})

    def program(self, program):
        equations = [self.nested(eqn) for eqn in program.equations]
        regions = [r for r in _regions(equations) if len(r) >= 2]
        users = _users(equations, program.outvars)
        fused = {}  # first member's index -> (fused equation, members)
        for members in regions:
            inside = set(members)
            outputs = [v for i in members for v in equations[i].outvars if users.get(v, set()) - inside]
            if outputs:
                fused[members[0]] = (self.fused_equation([equations[i] for i in members], outputs), members)
        if not fused:
            changed = any(a is not b for a, b in zip(equations, program.equations))
            return Program(program.constvars, program.invars, program.outvars, equations) if changed else program
        return Program(program.constvars, program.invars, program.outvars, _ordered(equations, fused))

    def fused_equation(self, members, outputs):
        produced = {v for eqn in members for v in eqn.outvars}
        inputs = list(dict.fromkeys(a for eqn in members for a in eqn.inputs
                                    if type(a) is Var and a not in produced))
        size = outputs[0].aval.size
        block, num_warps = codegen.launch_parameters(size)
        name, source = codegen.generate_source(members, inputs, outputs, size, self.platform)
        kernel = codegen.load_kernel(name, source)
        text = str(Program([], inputs, outputs, members))
        self.kernels.append(FusedKernel(name, text, source))
        if config.log_fusion:
            print(f"numax: fused {len(members)} equations over {outputs[0].aval.str_short()} into {name}: {text}",
                  file=sys.stderr)
        params = dict(kernel=kernel, out_avals=tuple(v.aval for v in outputs), grid=BlockGrid(size),
                      call_spec=tuple(("array", i) for i in range(len(inputs))) + (("scalar", size),),
                      metaparams=(("BLOCK", block),), input_output_aliases=(), zeroed_outputs=(),
                      num_warps=num_warps, num_stages=None, num_ctas=1, debug=False, name=name)
        return Equation(triton_call_p, inputs, outputs, params)


def _fusible_shape(eqn):
    """The shape an equation fuses over, or None when it does not fuse."""
    in_avals, out_avals = [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars]
    if not codegen.fusible(eqn.primitive.name, in_avals, out_avals):
        return None
    shape = out_avals[0].shape
    if out_avals[0].size <= 1 or any(a.shape != shape and a.size != 1 for a in in_avals):
        return None
    if eqn.primitive.name == "broadcast_in_dim" and in_avals[0].size != 1:
        return None
    return shape


class _Regions:
    """Union-find over region ids, with what each region's outside inputs depend on."""

    def __init__(self):
        self.parent = []
        self.shape = []
        self.outside = []  # region id -> ids of the regions its outside inputs depend on

    def new(self, shape):
        self.parent.append(len(self.parent))
        self.shape.append(shape)
        self.outside.append(set())
        return len(self.parent) - 1

    def find(self, region):
        while self.parent[region] != region:
            self.parent[region] = self.parent[self.parent[region]]
            region = self.parent[region]
        return region

    def joinable(self, roots, eqn, region_of_var, ancestors):
        """Can `eqn` join the union of `roots` without a path out of it and back in (a cycle)?"""
        reached = set().union(*(self.outside[r] for r in roots))
        for value in _vars(eqn.inputs):
            if region_of_var.get(value) not in roots:
                reached |= ancestors.get(value, frozenset())
        return not {self.find(r) for r in reached} & set(roots)

    def join(self, roots, eqn, region_of_var, ancestors):
        root = roots[0]
        for other in roots[1:]:
            self.parent[other] = root
            self.outside[root] |= self.outside[other]
        for value in _vars(eqn.inputs):
            if region_of_var.get(value) not in roots:
                self.outside[root] |= ancestors.get(value, frozenset())
        return root


def _vars(atoms):
    return [a for a in atoms if type(a) is not Literal]


def _regions(equations):
    """Maximal acyclic regions of fusible equations of one shape, as sorted lists of equation indices."""
    regions = _Regions()
    region_of_eqn, region_of_var, ancestors = [None] * len(equations), {}, {}
    current_region_of_var = _Resolved(regions, region_of_var)
    for index, eqn in enumerate(equations):
        inherited = frozenset().union(*(ancestors.get(v, frozenset()) for v in _vars(eqn.inputs)))
        shape = _fusible_shape(eqn)
        if shape is not None:
            candidates = list(dict.fromkeys(
                regions.find(region_of_var[v]) for v in _vars(eqn.inputs) if v in region_of_var))
            candidates = [r for r in candidates if regions.shape[r] == shape]
            options = [candidates] + ([[r] for r in candidates] if len(candidates) > 1 else []) if candidates else []
            chosen = next((o for o in options if regions.joinable(o, eqn, current_region_of_var, ancestors)), None)
            region = regions.join(chosen or [regions.new(shape)], eqn, current_region_of_var, ancestors)
            region_of_eqn[index] = region
            inherited = inherited | {region}
            for v in eqn.outvars:
                region_of_var[v] = region
        for v in eqn.outvars:
            ancestors[v] = inherited
    groups = {}
    for index, region in enumerate(region_of_eqn):
        if region is not None:
            groups.setdefault(regions.find(region), []).append(index)
    return list(groups.values())


class _Resolved:
    """region_of_var seen through the union-find (a value's region as it is now)."""

    def __init__(self, regions, region_of_var):
        self.regions, self.region_of_var = regions, region_of_var

    def get(self, value):
        region = self.region_of_var.get(value)
        return None if region is None else self.regions.find(region)


def _users(equations, program_outvars):
    """Each value's users: the indices of the equations reading it, and -1 for the program's results."""
    users = {}
    for index, eqn in enumerate(equations):
        for v in _vars(eqn.inputs):
            users.setdefault(v, set()).add(index)
    for v in _vars(program_outvars):
        users.setdefault(v, set()).add(-1)
    return users


def _ordered(equations, fused):
    """The equations with each fused region in place of its members, in a topological order that keeps the
    original order wherever it can (a region sits where its first member was, unless an input comes later)."""
    member_of = {i: first for first, (_, members) in fused.items() for i in members}
    nodes = {}  # position -> equation; a fused region's position is its first member's
    for index, eqn in enumerate(equations):
        if index not in member_of:
            nodes[index] = eqn
        elif member_of[index] == index:
            nodes[index] = fused[index][0]
    producer = {v: position for position, eqn in nodes.items() for v in eqn.outvars}
    waiting_on = {position: {producer[v] for v in _vars(eqn.inputs) if v in producer} for position, eqn in
                  nodes.items()}
    dependents = {position: [] for position in nodes}
    for position, needs in waiting_on.items():
        for need in needs:
            dependents[need].append(position)
    ready = [position for position, needs in waiting_on.items() if not needs]
    heapq.heapify(ready)
    ordered = []
    while ready:
        position = heapq.heappop(ready)
        ordered.append(nodes[position])
        for dependent in dependents[position]:
            waiting_on[dependent].discard(position)
            if not waiting_on[dependent]:
                heapq.heappush(ready, dependent)
    assert len(ordered) == len(nodes), "fusion regions formed a cycle"
    return ordered
