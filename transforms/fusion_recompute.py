"""Recomputing instead of storing, between elementwise kernels (issue 32).

A grad's forward pass leaves values for its backward pass: a tanh GELU's forward kernel computes its argument, the
tanh, its square, ... from one matrix product's result, and the backward kernel reads them. Stored, they cost their
writes, their reads and the memory that holds them from the forward pass to the backward pass (five float32 arrays
of the MLP's hidden size per layer). Here a kernel that reads values another kernel of its shape computed from a few
inputs computes them itself from those inputs, when that reads no more bytes than loading them; the kernel that
computed them then stores only what something else still reads, and equations left with no reader go. Arithmetic
is cheap beside memory traffic on a GPU: XLA's fusion copies cheap producers into each consumer alike, and
Inductor's partition of forward and backward recomputes such chains.
"""

import sys

from ..core.config import config
from ..core.ir import Var
from . import fusion_regions as region_search

MOST_RECOMPUTED = 32  # equations copied into one region from one other region, at most


def recomputed(equations, regions, program_outvars, free=frozenset()):
    """(equations, regions): `regions` ((members, domain), members indexing `equations`) where a region reading
    values that another region of its domain computes gets copies of the equations computing them from that
    region's inputs (placed before the first of its equations reading them, which read the copies instead), wherever
    that reads no more bytes; then the members nothing reads any more dropped, the regions indexing the result.
    Values in `free` (computed from literals alone: a causal mask) that the copies read are copied with them, so
    that each region keeps a computation of its own (which a row kernel does in place)."""
    producer = {v: i for i, eqn in enumerate(equations) for v in eqn.outvars}
    region_of = {i: r for r, (members, _) in enumerate(regions) for i in members}
    original, equations = equations, list(equations)
    copies_of = {}  # region -> the copies it was given, in order
    placed_before = {}  # an equation's index -> the copies placed before it
    for r, (members, domain) in enumerate(regions):
        inside = set(members)
        reads = {a for i in members for a in region_search.variables(equations[i].inputs)
                 if producer.get(a) not in inside}
        by_region = {}
        for value in reads:
            p = region_of.get(producer.get(value))
            if p is not None and p != r and p not in copies_of and regions[p][1] == domain:
                by_region.setdefault(p, []).append(value)
        renamed, copies = {}, []
        for p, values in sorted(by_region.items()):
            closure = _closure(equations, producer, set(regions[p][0]), values, free)
            if closure is None:
                continue
            needed = {a for k in closure for a in region_search.variables(equations[k].inputs)
                      if producer.get(a) not in closure}
            if _bytes(needed - reads) > _bytes(values):
                continue
            copied = {}
            for k in sorted(closure):
                eqn = equations[k]
                copies.append(eqn.replace(inputs=[copied.get(a, a) if type(a) is Var else a for a in eqn.inputs],
                                          outvars=[Var(v.aval) for v in eqn.outvars]))
                copied.update(zip(eqn.outvars, copies[-1].outvars))
            renamed.update((v, copied[v]) for v in values)
            if config.log_fusion:
                print(f"numax: recomputing {len(values)} values ({_bytes(values)} bytes) from {len(closure)} "
                      f"equations reading {_bytes(needed - reads)} bytes more: "
                      f"{', '.join(v.aval.str_short() for v in values)}", file=sys.stderr)
        if not renamed:
            continue
        readers = [i for i in sorted(members) if set(region_search.variables(equations[i].inputs)) & renamed.keys()]
        for i in readers:
            equations[i] = equations[i].replace(inputs=[renamed.get(a, a) if type(a) is Var else a
                                                        for a in equations[i].inputs])
        copies_of[r] = copies
        placed_before.setdefault(readers[0], []).extend(copies)
    if not copies_of:
        return original, regions
    result, index, copy_index = [], {}, {}
    for i, eqn in enumerate(equations):
        for copy in placed_before.get(i, ()):
            copy_index[id(copy)] = len(result)
            result.append(copy)
        index[i] = len(result)
        result.append(eqn)
    regions = [(sorted([index[i] for i in members] + [copy_index[id(c)] for c in copies_of.get(r, ())]), domain)
               for r, (members, domain) in enumerate(regions)]
    return _live(result, regions, program_outvars)


def _closure(equations, producer, members, values, free):
    """The indices of the `members` equations computing `values` from what the members read from outside, with
    the equations computing the `free` values among that, or None where that takes more than MOST_RECOMPUTED
    equations."""
    closure, pending = set(), [producer[v] for v in values]
    while pending:
        k = pending.pop()
        if k in closure:
            continue
        closure.add(k)
        if len(closure) > MOST_RECOMPUTED:
            return None
        pending.extend(producer[a] for a in region_search.variables(equations[k].inputs)
                       if producer.get(a) in members or a in free)
    return closure


def _bytes(values):
    return sum(v.aval.size * v.aval.dtype.itemsize for v in values)


def _live(equations, regions, program_outvars):
    """`equations` without the regions' members whose results nothing reads (a forward kernel's values that its
    backward kernel now computes itself), and `regions` indexing what is left. Only members go: they are pure."""
    users = region_search.users_of(equations, program_outvars)
    producer = {v: i for i, eqn in enumerate(equations) for v in eqn.outvars}
    candidates = {i for members, _ in regions for i in members}
    dead, pending = set(), sorted(candidates)
    while pending:
        i = pending.pop()
        if i in dead or any(users.get(v) for v in equations[i].outvars):
            continue
        dead.add(i)
        for a in region_search.variables(equations[i].inputs):
            users[a].discard(i)
            if producer.get(a) in candidates:
                pending.append(producer[a])
    index, kept = {}, []
    for i, eqn in enumerate(equations):
        if i not in dead:
            index[i] = len(kept)
            kept.append(eqn)
    regions = [([index[i] for i in members if i in index], domain) for members, domain in regions]
    return kept, [(members, domain) for members, domain in regions if members]
