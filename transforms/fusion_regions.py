"""The search for fusion regions (transforms/fusion.py's): maximal connected, acyclic sets of equations sharing a
domain (`find_regions`, a union-find over region ids with what each region's outside inputs depend on), the
dependencies between regions, the program's equations re-ordered around the fused ones (`ordered`), and equations
renamed or copied onto fresh variables (`renamed_inputs`, `copied`)."""

import heapq

from ..core.ir import Literal, Var


def region_dependencies(equations, regions):
    """Per region (lists of equation indices), a bit mask of the other regions it depends on through any path."""
    region_of = {i: r for r, members in enumerate(regions) for i in members}
    reaches, depends = {}, [0] * len(regions)  # Var -> mask of the regions its value depends on
    for index, eqn in enumerate(equations):
        mask = 0
        for value in variables(eqn.inputs):
            mask |= reaches.get(value, 0)
        region = region_of.get(index)
        if region is not None:
            depends[region] |= mask & ~(1 << region)
            mask |= 1 << region
        for v in eqn.outvars:
            reaches[v] = mask
    return depends


def groups_acyclic(groups, depends):
    """Do the groups of regions, each taken as one node, still form no cycle?"""
    group_of = {r: g for g, group in enumerate(groups) for r in group}
    needs = [{group_of[q] for r in group for q in range(len(group_of)) if (depends[r] >> q) & 1} - {g}
             for g, group in enumerate(groups)]
    state = [0] * len(groups)  # 0: unseen, 1: on the path, 2: done

    def visit(g):
        state[g] = 1
        for h in needs[g]:
            if state[h] == 1 or (state[h] == 0 and not visit(h)):
                return False
        state[g] = 2
        return True

    return all(state[g] == 2 or visit(g) for g in range(len(groups)))


def merged_domains(first, second):
    """The domains both lists allow: equal ones, and row-wise ones of equal rows where a length is unknown."""
    merged = []
    for a in first:
        for b in second:
            if a == b:
                merged.append(a)
            elif a[0] == b[0] == "rows" and a[1] == b[1] and None in (a[2], b[2]):
                merged.append(("rows", a[1], a[2] if b[2] is None else b[2]))
    return list(dict.fromkeys(merged))


class _UnionFind:
    """Union-find over region ids, with what each region's outside inputs depend on."""

    def __init__(self):
        self.parent = []
        self.domains = []  # region id -> the domains all its equations allow
        self.outside = []  # region id -> ids of the regions its outside inputs depend on
        self.merged = []  # region id -> the ids merged into it (for a root: every id whose find is the root)

    def new(self, domains):
        self.parent.append(len(self.parent))
        self.domains.append(domains)
        self.outside.append(set())
        self.merged.append({len(self.parent) - 1})
        return len(self.parent) - 1

    def find(self, region):
        while self.parent[region] != region:
            self.parent[region] = self.parent[self.parent[region]]
            region = self.parent[region]
        return region

    def joinable(self, roots, eqn, region_of_var, ancestors):
        """Can `eqn` join the union of `roots` without a path out of it and back in (a cycle)? The ids reached
        are tested against the ids merged into each root, never resolved one by one: each test is a set
        disjointness, which costs the smaller set's size (programs of ten thousand equations reach thousands)."""
        reached = [self.outside[r] for r in roots] + [ancestors.get(value, frozenset())
                                                       for value in variables(eqn.inputs)
                                                       if region_of_var.get(value) not in roots]
        return all(ids.isdisjoint(self.merged[r]) for ids in reached for r in roots)

    def join(self, roots, domains, eqn, region_of_var, ancestors):
        root = roots[0]
        self.domains[root] = domains
        for other in roots[1:]:
            self.parent[other] = root
            self.outside[root] |= self.outside[other]
            self.merged[root] |= self.merged[other]
        for value in variables(eqn.inputs):
            if region_of_var.get(value) not in roots:
                self.outside[root] |= ancestors.get(value, frozenset())
        return root


def variables(atoms):
    return [a for a in atoms if type(a) is not Literal]


def renamed_inputs(eqn, renamed):
    """`eqn` reading `renamed[v]` in place of each input v that `renamed` maps."""
    return eqn.replace(inputs=[renamed.get(a, a) if type(a) is Var else a for a in eqn.inputs])


def copied(equations, renamed):
    """Copies of `equations` (in order) on fresh result variables, each reading the earlier copies' results and
    `renamed[v]` for any other input v that `renamed` maps; `renamed` gains each original result -> its copy's."""
    copies = []
    for eqn in equations:
        copies.append(renamed_inputs(eqn, renamed).replace(outvars=[Var(v.aval) for v in eqn.outvars]))
        renamed.update(zip(eqn.outvars, copies[-1].outvars))
    return copies


def find_regions(equations, domains_of, smallest=2, complete_after=None):
    """Maximal acyclic regions of at least `smallest` equations that share a domain (`domains_of(eqn)`: the
    domains an equation fuses in, none when it does not), as (sorted equation indices, domain). An equation for
    which `complete_after(eqn)` holds (a column sum: complete only once the whole kernel has run) is read by no
    other member of its region."""
    regions = _UnionFind()
    region_of_eqn, region_of_var, ancestors = [None] * len(equations), {}, {}
    current_region_of_var = _Resolved(regions, region_of_var)
    for index, eqn in enumerate(equations):
        inherited = frozenset().union(*(ancestors.get(v, frozenset()) for v in variables(eqn.inputs)))
        domains = domains_of(eqn)
        if domains:
            candidates = list(dict.fromkeys(
                regions.find(region_of_var[v]) for v in variables(eqn.inputs) if v in region_of_var))
            candidates = [r for r in candidates if merged_domains(regions.domains[r], domains)]
            options = [candidates] + ([[r] for r in candidates] if len(candidates) > 1 else []) if candidates else []
            chosen, shared = None, domains
            for option in options:
                allowed = domains
                for r in option:
                    allowed = merged_domains(allowed, regions.domains[r])
                if allowed and regions.joinable(option, eqn, current_region_of_var, ancestors):
                    chosen, shared = option, allowed
                    break
            region = regions.join(chosen or [regions.new(domains)], shared, eqn, current_region_of_var, ancestors)
            region_of_eqn[index] = region
            inherited = inherited | {region}
            if complete_after is None or not complete_after(eqn):
                for v in eqn.outvars:
                    region_of_var[v] = region
        for v in eqn.outvars:
            ancestors[v] = inherited
    groups = {}
    for index, region in enumerate(region_of_eqn):
        if region is not None:
            groups.setdefault(regions.find(region), []).append(index)
    return [(members, regions.domains[root][0]) for root, members in groups.items() if len(members) >= smallest]


def depends_on(equations, producer, index, members):
    """Does equation `index` depend, through any path, on one of `members` (equation indices)?"""
    earliest, seen, stack = min(members), set(), [index]
    while stack:
        for value in variables(equations[stack.pop()].inputs):
            j = producer.get(value)
            if j is None or j < earliest or j in seen:
                continue
            if j in members:
                return True
            seen.add(j)
            stack.append(j)
    return False


class _Resolved:
    """region_of_var seen through the union-find (a value's region as it is now)."""

    def __init__(self, regions, region_of_var):
        self.regions, self.region_of_var = regions, region_of_var

    def get(self, value):
        region = self.region_of_var.get(value)
        return None if region is None else self.regions.find(region)


def users_of(equations, program_outvars):
    """Each value's users: the indices of the equations reading it, and -1 for the program's results."""
    users = {}
    for index, eqn in enumerate(equations):
        for v in variables(eqn.inputs):
            users.setdefault(v, set()).add(index)
    for v in variables(program_outvars):
        users.setdefault(v, set()).add(-1)
    return users


def ordered(equations, fused):
    """The equations with each fused region's equations in place of its members, in a topological order that keeps
    the original order wherever it can (a region sits where its first member was, unless an input comes later)."""
    member_of = {i: first for first, (_, members) in fused.items() for i in members}
    nodes = {}  # position -> equations; a fused region's position is its first member's
    for index, eqn in enumerate(equations):
        if index not in member_of:
            nodes[index] = [eqn]
        elif member_of[index] == index:
            nodes[index] = fused[index][0]
    producer = {v: position for position, node in nodes.items() for eqn in node for v in eqn.outvars}
    waiting_on = {position: {producer[v] for eqn in node for v in variables(eqn.inputs) if v in producer} - {position}
                  for position, node in nodes.items()}
    dependents = {position: [] for position in nodes}
    for position, needs in waiting_on.items():
        for need in needs:
            dependents[need].append(position)
    ready = [position for position, needs in waiting_on.items() if not needs]
    heapq.heapify(ready)
    ordered = []
    while ready:
        position = heapq.heappop(ready)
        ordered.extend(nodes[position])
        for dependent in dependents[position]:
            waiting_on[dependent].discard(position)
            if not waiting_on[dependent]:
                heapq.heappush(ready, dependent)
    assert len(ordered) == sum(map(len, nodes.values())), "fusion regions formed a cycle"
    return ordered
