"""Recomputing instead of storing, between kernels of one domain (issue 32; both fusion passes, rows and elementwise).

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
from ..core.dce import live_equations
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
            copies += region_search.copied([equations[k] for k in sorted(closure)], copied)
            renamed.update((v, copied[v]) for v in values)
            if config.log_fusion:
                print(f"numax: recomputing {len(values)} values ({_bytes(values)} bytes) from {len(closure)} "
                      f"equations reading {_bytes(needed - reads)} bytes more: "
                      f"{', '.join(v.aval.str_short() for v in values)}", file=sys.stderr)
        if not renamed:
            continue
        readers = [i for i in sorted(members) if set(region_search.variables(equations[i].inputs)) & renamed.keys()]
        for i in readers:
            equations[i] = region_search.renamed_inputs(equations[i], renamed)
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
    """`equations` without those whose results nothing reads any more (a forward kernel's values that its backward
    kernel now computes itself), and `regions` indexing what is left."""
    kept = live_equations(equations, program_outvars)[0]
    position = {id(eqn): i for i, eqn in enumerate(kept)}
    regions = [([position[id(equations[i])] for i in members if id(equations[i]) in position], domain)
               for members, domain in regions]
    return kept, [(members, domain) for members, domain in regions if members]
