"""Conditionals: `cond` and `switch`, one primitive `cond` holding a tuple of branch programs.

`cond_p` takes an int32 index and the operands shared by every branch (closed-over values included:
they are hoisted into leading operands), runs `branches[index]` and lowers to `stablehlo.case`. Beside
it: JVP (split by partial evaluation into a primal cond returning residuals and a tangent cond reading
them, so that reverse mode transposes only the tangent one), transpose (each branch transposed),
batching (a batched index becomes a `select_n` of all branches) and the helpers that trace user
functions into sub-programs, shared with `while_loop`, and the check of a loop body's carry (`while_loop`, `scan`).
"""


import numpy as np

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.evaluation import eval_closed_program
from ..core.ir import ClosedProgram, Literal, Program, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import trace_to_closed_program, trace_to_program
from ..core.trace import get_aval_of, is_concrete
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type
from .ref_threading import carrying, store, values_of, with_refs_threaded

__all__ = ["cond", "switch"]


# --- tracing user functions into sub-programs -------------------------------------------------------------
def trace_callable(fun, in_tree, in_avals, spread=True):
    """Traces `fun(*in_tree.unflatten(leaves))` (`fun(in_tree.unflatten(leaves))` unless `spread`) into
    (Program, consts, output treedef)."""
    out_info = {}

    def flat_fun(*leaves):
        args = in_tree.unflatten(leaves)
        out_leaves, out_tree = tree.tree_flatten(fun(*args) if spread else fun(args))
        out_info["tree"] = out_tree
        return out_leaves

    program, consts = trace_to_program(flat_fun, in_avals)
    return program, consts, out_info["tree"]


def closure_convert(traced):
    """Programs of one loop or conditional, their captured values made leading arguments shared by all.

    `traced` is a list of (Program, consts). Every const (an outer tracer or a concrete array) becomes an
    operand, as in JAX, so the programs hold no values: one traced again for the next call is the same
    program (see `intern_program`), and its executable is compiled once. Returns (const-free
    ClosedPrograms each taking all the shared consts first, the shared const values)."""
    shared, index_of = [], {}
    for _, consts in traced:
        for value in consts:
            if id(value) not in index_of:
                index_of[id(value)] = len(shared)
                shared.append(value)
    shared_avals = [get_aval_of(v) for v in shared]
    closed = []
    for program, consts in traced:
        leading = [Var(a) for a in shared_avals]
        for var, value in zip(program.constvars, consts):
            leading[index_of[id(value)]] = var
        closed.append(intern_program(ClosedProgram(
            Program([], leading + program.invars, program.outvars, program.equations), [])))
    return closed, shared


_interned = {}


def intern_program(closed: ClosedProgram) -> ClosedProgram:
    """The one ClosedProgram standing for all const-free programs of this structure.

    Programs are parameters compared by identity (eager executables, jvp and transpose programs are
    cached on them), and a loop body is traced again at each call; interning lets a conditional or loop
    called eagerly in a Python loop compile once."""
    if closed.consts:
        return closed
    try:
        key = (_program_key(closed.program), config.enable_x64)
        existing = _interned.get(key)
    except TypeError:  # a parameter that cannot be hashed: the program stays unshared
        return closed
    if existing is not None:
        return existing
    if len(_interned) > 2048:
        _interned.clear()
    _interned[key] = closed
    return closed


def _program_key(program: Program):
    number = {v: i for i, v in enumerate(program.invars)}

    def atom(a):
        if type(a) is Literal:
            return ("literal", a.aval, type(a.value), repr(a.value))
        return number[a]

    parts = [tuple(v.aval for v in program.invars)]
    for eqn in program.equations:
        inputs = tuple(atom(a) for a in eqn.inputs)
        for v in eqn.outvars:
            number[v] = len(number)
        parts.append((eqn.primitive, inputs, tuple(v.aval for v in eqn.outvars), tuple(sorted(eqn.params.items()))))
    parts.append(tuple(atom(v) for v in program.outvars))
    key = tuple(parts)
    hash(key)
    return key


def zeros(aval: ShapedArray):
    """An array of zeros of `aval` (inside a traced program: a folded constant), typed as varying over the mesh
    axes `aval` varies over (inside a shard_map), so that it can stand for a value of that type."""
    from .collectives import pcast
    from .shapes import full

    value = full(aval.shape, np.zeros((), aval.dtype), aval.dtype)
    return pcast(value, tuple(sorted(aval.vma, key=str)), to="varying") if aval.vma else value


def strong(aval: ShapedArray) -> ShapedArray:
    return aval.strip_weak_type()


def same_types(avals_a, avals_b) -> bool:
    """Equal shapes and dtypes (weak types may differ, as JAX's typematch allows)."""
    return len(avals_a) == len(avals_b) and all(strong(a) == strong(b) for a, b in zip(avals_a, avals_b))


def join_weak(*aval_lists):
    """The first list of avals, weakly typed only where every list's aval is."""
    return [a.update(weak_type=all(avals[i].weak_type for avals in aval_lists)) for i, a in enumerate(aval_lists[0])]


def describe_function(fun) -> str:
    """`name at file:line`, as JAX names the functions of a control-flow error."""
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", None) or type(fun).__name__
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def mismatch_text(a: ShapedArray, b: ShapedArray) -> str:
    """JAX's explanation of why two types differ: `, so the dtypes do not match`."""
    reasons = [text for differs, text in ((a.dtype != b.dtype, "the dtypes do not match"),
                                          (a.shape != b.shape, "the shapes do not match"),
                                          (a.vma != b.vma, "the manual axis types do not match")) if differs]
    return ", so " + ", and ".join(reasons) if reasons else ""


def avals_text(avals) -> str:
    return "[" + ", ".join(a.str_short() for a in avals) + "]"


# --- the primitive ------------------------------------------------------------------------------------------
cond_p = Primitive("cond", multiple_results=True)


def _untyped_by_mesh_axes(avals):
    return [aval.update(vma=frozenset()) if aval.vma else aval for aval in avals]


def _cond_abstract_eval(index, *operands, branches):
    # Branches that vary over different mesh axes are the user's error (cond checks them, as JAX's does); those
    # that the transformations build may differ (a residual one branch computes from varying values and another
    # fills with zeros), and the cond's outputs vary over what any branch's do.
    if index.shape != () or index.dtype != dtypes.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    if not branches:
        raise TypeError("cond requires at least one branch")
    for i, branch in enumerate(branches):
        if not same_types(_untyped_by_mesh_axes(branch.in_avals), _untyped_by_mesh_axes(operands)):
            raise TypeError(f"cond branch {i} takes inputs {avals_text(branch.in_avals)} but the operands are "
                            f"{avals_text(operands)}")
    first = branches[0].out_avals
    for i, branch in enumerate(branches[1:], 1):
        if not same_types(_untyped_by_mesh_axes(first), _untyped_by_mesh_axes(branch.out_avals)):
            raise TypeError(f"cond branches must have equal output types but they differ: branch 0 returns "
                            f"{avals_text(first)} and branch {i} returns {avals_text(branch.out_avals)}")
    outs = []  # JAX's: the types of branch 0 (the false branch of a cond), weak types included
    for k, aval in enumerate(first):
        vma = frozenset().union(*(branch.out_avals[k].vma for branch in branches))
        outs.append(aval if vma == aval.vma else aval.update(vma=vma))
    return outs


cond_p.def_abstract_eval(_cond_abstract_eval)


def _cond_lowering(ctx, index, *operands, branches):
    # The regions of stablehlo.case take no arguments: they read the operands from the enclosing function.
    builder = ctx.builder
    out_types = [aval_type(a) for a in ctx.avals_out]

    def region(branch):
        return builder.region([], lambda inner, _: lower_program_body(
            ctx.module, inner, branch.program, branch.consts, list(operands)))

    return builder.op("stablehlo.case", [index], out_types, None, [region(b) for b in branches])


register_lowering(cond_p, _cond_lowering)
polymorphic_primitives.add(cond_p)  # its branches' equations are checked as they are lowered


# --- public wrappers ------------------------------------------------------------------------------------------
_no_operand = object()


def _trace_branches(functions, operands):
    """Branch programs sharing their closed-over values: (programs, consts, operand leaves, out trees)."""
    leaves, in_tree = tree.tree_flatten(operands)
    in_avals = [get_aval_of(leaf) for leaf in leaves]
    traced, out_trees = [], []
    for fun in functions:
        program, consts, out_tree = trace_callable(fun, in_tree, in_avals)
        traced.append((program, consts))
        out_trees.append(out_tree)
    programs, consts = closure_convert(traced)
    return programs, consts, leaves, out_trees


def _check_branch_outputs(api_name, names, functions, programs, out_trees):
    first_name, first_fun = names[0], functions[0]
    for name, fun, program, out_tree in zip(names[1:], functions[1:], programs[1:], out_trees[1:]):
        header = f"{first_name} is {describe_function(first_fun)}\n{name} is {describe_function(fun)}\n\n"
        if out_tree != out_trees[0]:
            raise TypeError(
                f"{api_name} branch outputs must have the same pytree structure, but they differ:\n\n{header}"
                f"{first_name} output is {out_trees[0]} but {name} output is {out_tree}.\n\n"
                f"Revise {first_name} and/or {name} so that they have the same pytree structure.")
        first_avals = programs[0].out_avals
        if not same_types(first_avals, program.out_avals):
            paths = [tree.keystr(p) for p, _ in tree.tree_flatten_with_path(out_tree.unflatten(
                list(range(out_tree.num_leaves))))[0]]
            diffs = [f"the output of {first_name}{f' at path {path}' if path else ''} has type {a.str_short()} but "
                     f"the corresponding output of {name} has type {b.str_short()}{mismatch_text(a, b)}"
                     for path, a, b in zip(paths, first_avals, program.out_avals) if strong(a) != strong(b)]
            differences = "\n".join(f"  * {d};" for d in diffs) if len(diffs) > 1 else diffs[0][0].upper() + \
                diffs[0][1:] + "."
            fixes = [f"This might be fixed by applying `numax.lax.pcast(..., {tuple(sorted(vary, key=str))}, "
                     f"to='varying')` to the output of {branch}.\n"
                     for a, b in zip(first_avals, program.out_avals)
                     for branch, vary in ((first_name, b.vma - a.vma), (name, a.vma - b.vma)) if vary]
            hint = "".join(fixes) + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more "
                                     "information.\n\n") if fixes else ""
            raise TypeError(f"{api_name} branches must have equal output types but they differ.\n\n{header}"
                            f"{differences}\n\n{hint}Revise {first_name} and/or {name} so that all output types "
                            "match.")


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; only the chosen branch runs.

    Both branches are traced; their outputs must agree in tree structure, shapes and dtypes. Under `vmap`
    with a batched `pred`, both branches run and the results are selected elementwise. Under
    `numax.disable_jit()` with a concrete `pred`, the chosen branch is simply called. Refs the branches read or
    write pass through them (lax/ref_threading.py)."""

    def run(refs):
        if not refs:
            return _cond(pred, true_fun, false_fun, *operands, operand=operand)
        given = operands if operand is _no_operand else (operand,)
        after, out = _cond(pred, carrying(refs, true_fun), carrying(refs, false_fun), values_of(refs), *given)
        store(refs, after)
        return out

    return with_refs_threaded(run)


def _cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    if not (callable(true_fun) and callable(false_fun)):
        # JAX's old form: cond(pred, true_operand, true_fun, false_operand, false_fun).
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be passed, got "
                            f"operand={operand} and positional operands {operands}")
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, (list, tuple)) or np.ndim(pred) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of " + (
            f"type {type(pred)}" if isinstance(pred, (list, tuple)) else f"shape {np.shape(pred)}."))
    try:
        pred_dtype = dtypes.dtype(pred)
    except TypeError:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from None
    from .conversions import convert_element_type
    from .elementwise import ne

    if pred_dtype != dtypes.bool_:
        if pred_dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        pred = ne(pred, np.zeros((), pred_dtype))
    if config.disable_jit and is_concrete(pred):
        # As in JAX: only the chosen branch runs, as plain Python on the operands (nothing is traced or checked).
        return true_fun(*operands) if pred else false_fun(*operands)
    functions = (true_fun, false_fun)  # traced in this order, as JAX does (visible to side effects)
    programs, consts, leaves, out_trees = _trace_branches(functions, operands)
    _check_branch_outputs("cond", ("true_fun", "false_fun"), functions, programs, out_trees)
    index = convert_element_type(pred, dtypes.int32)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(programs[::-1]))  # index 0: the false branch
    return out_trees[0].unflatten(outs)


def switch(index, branches, *operands, operand=_no_operand):
    """`branches[index](*operands)`, with `index` clamped to the valid range; only that branch runs (under
    `numax.disable_jit()` with a concrete `index`, it is simply called). Refs the branches read or write pass
    through them (lax/ref_threading.py)."""

    def run(refs):
        if not refs:
            return _switch(index, branches, *operands, operand=operand)
        given = operands if operand is _no_operand else (operand,)
        after, out = _switch(index, [carrying(refs, branch) for branch in branches], values_of(refs), *given)
        store(refs, after)
        return out

    return with_refs_threaded(run)


def _switch(index, branches, *operands, operand=_no_operand):
    if not all(callable(branch) for branch in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be passed, got "
                            f"operand={operand} and positional operands {operands}")
        operands = (operand,)
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        index_dtype = dtypes.dtype(index)
    except TypeError:
        raise TypeError(f"Index type must be an integer, got {index}.") from None
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    from .conversions import convert_element_type
    from .elementwise import clamp

    index = convert_element_type(index, dtypes.int32)
    index = clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
    if config.disable_jit and is_concrete(index):
        return branches[int(index)](*operands)  # as in JAX: the chosen branch runs as plain Python
    programs, consts, leaves, out_trees = _trace_branches(branches, operands)
    _check_branch_outputs("switch", [f"branch {i}" for i in range(len(branches))], branches, programs, out_trees)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(programs))
    return out_trees[0].unflatten(outs)


# --- differentiation --------------------------------------------------------------------------------------------
def _with_tangent_outputs(jvp_closed, out_nonzeros, want, out_avals):
    """A JVP program returning tangents for the outputs marked in `want` (zeros where it has none)."""
    if tuple(out_nonzeros) == tuple(want):
        return jvp_closed
    n_out = len(out_avals)

    def traced(*args):
        outs = eval_closed_program(jvp_closed, *args)
        given = iter(outs[n_out:])
        tangents = [next(given) if nz else zeros(tangent_aval(a))
                    for a, nz, w in zip(out_avals, out_nonzeros, want) if w or nz]
        return outs[:n_out] + tangents

    return trace_to_closed_program(traced, jvp_closed.in_avals)


def merge_residuals(avals_per_branch):
    """Shared residual slots for several branches: slots of one type are reused across branches (JAX's
    `_merge_branch_residuals`). Returns (slot avals, per branch the slot of each of its residuals)."""
    slots, assignments = [], []
    for avals in avals_per_branch:
        used, mine = set(), []
        for aval in avals:
            slot = next((s for s, a in enumerate(slots) if s not in used and a == strong(aval)), None)
            if slot is None:
                slot = len(slots)
                slots.append(strong(aval))
            used.add(slot)
            mine.append(slot)
        assignments.append(mine)
    return slots, assignments


def _writing_slots(known, num_primal, slots, mine):
    """`known` (operands -> primal outs + own residuals) returning every slot, zeros in others' slots."""

    def traced(*args):
        outs = eval_closed_program(known, *args)
        values = [None] * len(slots)
        for slot, value in zip(mine, outs[num_primal:]):
            values[slot] = value
        return outs[:num_primal] + [v if v is not None else zeros(a) for v, a in zip(values, slots)]

    return trace_to_closed_program(traced, known.in_avals)


def _reading_slots(unknown, slots, mine):
    """`unknown` (own residuals + tangents -> tangent outs) taking every slot first."""
    tangent_avals = unknown.in_avals[len(mine):]

    def traced(*args):
        slot_values, tangents = args[:len(slots)], args[len(slots):]
        return eval_closed_program(unknown, *(slot_values[s] for s in mine), *tangents)

    return trace_to_closed_program(traced, list(slots) + list(tangent_avals))


@caches.lru(maxsize=256)
def _cond_jvp_programs(branches, nonzeros):
    """(known branches, tangent branches, output tangent nonzero mask) for the JVP of a cond."""
    from ..transforms.jvp import jvp_program
    from ..transforms.partial_eval import partial_eval_program

    out_avals = branches[0].out_avals
    n_in, n_out, n_tangents = len(nonzeros), len(out_avals), sum(nonzeros)
    jvps = [jvp_program(b, nonzeros) for b in branches]
    out_nonzeros = tuple(any(nz[i] for _, nz in jvps) for i in range(n_out))
    jvps = [_with_tangent_outputs(closed, nz, out_nonzeros, out_avals) for closed, nz in jvps]
    splits = []
    for closed in jvps:
        known, unknown, out_unknowns, num_res = partial_eval_program(
            closed, [False] * n_in + [True] * n_tangents, [False] * n_out + [True] * sum(out_nonzeros))
        assert not any(out_unknowns[:n_out]), "primal outputs of a JVP cannot depend on tangents"
        splits.append((known, unknown, num_res))
    residual_avals = [known.out_avals[len(known.out_avals) - num_res:] for known, _, num_res in splits]
    slots, assignments = merge_residuals(residual_avals)
    known = tuple(_writing_slots(k, n_out, slots, mine) for (k, _, _), mine in zip(splits, assignments))
    unknown = tuple(_reading_slots(u, slots, mine) for (_, u, _), mine in zip(splits, assignments))
    return known, unknown, out_nonzeros


def _cond_jvp(primals, tangents, branches):
    """The primal cond returns residuals of the branch taken (zeros in the slots of the others); the
    tangent cond, linear in the tangents, reads them: under linearize only the second is staged."""
    index, operands = primals[0], primals[1:]
    operand_tangents = tangents[1:]
    nonzeros = tuple(type(t) is not Zero for t in operand_tangents)
    known, unknown, out_nonzeros = _cond_jvp_programs(branches, nonzeros)
    n_out = len(branches[0].out_avals)
    outs = cond_p.bind(index, *operands, branches=known)
    primal_out, residuals = outs[:n_out], outs[n_out:]
    if not any(out_nonzeros):
        return primal_out, [Zero(tangent_aval(a)) for a in branches[0].out_avals]
    given = [t for t in operand_tangents if type(t) is not Zero]
    tangent_out = iter(cond_p.bind(index, *residuals, *given, branches=unknown))
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a))
                        for a, nz in zip(branches[0].out_avals, out_nonzeros)]


def _cond_transpose(cts, index, *operands, branches):
    from ..transforms.transpose import transpose_program

    assert not is_undefined(index), "the index of a cond is never linear"
    linear = tuple(is_undefined(x) for x in operands)
    nonzero_cts = tuple(type(ct) is not Zero for ct in cts)
    transposed = tuple(transpose_program(b, linear, nonzero_cts) for b in branches)
    cts_in = iter(cond_p.bind(index, *(x for x in operands if not is_undefined(x)),
                              *(ct for ct in cts if type(ct) is not Zero), branches=transposed))
    return [None] + [next(cts_in) if is_linear else None for is_linear in linear]


jvp_rules[cond_p] = _cond_jvp
transpose_rules[cond_p] = _cond_transpose


# --- batching ---------------------------------------------------------------------------------------------------
def _cond_batch(values, dims, axis, branches):
    from ..transforms.vmap import batch_program
    from .batching import move_axis
    from .callbacks import io_callback_kinds
    from .elementwise import select_n
    from .shapes import broadcast_in_dim

    if io_callback_kinds(branches):  # (as jax: whether or not the index is batched)
        raise NotImplementedError("IO effect not supported in vmap-of-cond.")
    index, operands = values[0], values[1:]
    index_dim, operand_dims = dims[0], dims[1:]
    if index_dim is not None:
        # A batched index: every branch runs on the whole batch, each example picks its branch's result.
        batched = [batch_program(b, operand_dims, axis, force_batched=True)[0] for b in branches]
        results = [eval_closed_program(b, *operands) for b in batched]
        index = move_axis(index, index_dim, 0)
        outs = []
        for cases in zip(*results):
            shape = get_aval_of(cases[0]).shape
            outs.append(select_n(broadcast_in_dim(index, shape, (0,)), *cases))
        return outs, [0] * len(outs)
    out_batched = [False] * len(branches[0].out_avals)
    for branch in branches:
        _, out_dims = batch_program(branch, operand_dims, axis)
        out_batched = [b or d is not None for b, d in zip(out_batched, out_dims)]
    batched = tuple(batch_program(b, operand_dims, axis, force_batched=out_batched)[0] for b in branches)
    outs = cond_p.bind(index, *operands, branches=batched)
    return outs, [0 if b else None for b in out_batched]


_cond_batch.needs_axis = True
batching_rules[cond_p] = _cond_batch


# --- the carry check of loops (while_loop, fori_loop, scan) ----------------------------------------------
def _carry_name(body_fun):
    import inspect

    try:
        return next(iter(inspect.signature(body_fun).parameters))
    except (TypeError, ValueError, StopIteration):
        return None


def check_carry(name, body_fun, in_tree, out_tree, in_avals, out_avals):
    """JAX's check that a loop body returns its carry's tree and types (weak types aside); `name` is the
    loop body's name in the message ("while_loop body", "scan body")."""
    carry_name = _carry_name(body_fun)

    def component(path):
        if carry_name:
            return f"the input carry component {carry_name}{path}" if path else f"the input carry {carry_name}"
        return f"the input carry at path {path}" if path else "the input carry"

    if in_tree != out_tree:
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree structure, but they "
            f"differ:\n\nthe input tree structure is:\n{in_tree}\nthe output tree structure is:\n{out_tree}\n\n"
            "Revise the function so that the carry output has the same pytree structure as the carry input.")
    if not same_types(in_avals, out_avals):
        paths = [tree.keystr(p) for p, _ in tree.tree_flatten_with_path(
            in_tree.unflatten(list(range(in_tree.num_leaves))))[0]]
        diffs = [f"{component(path)} has type {a.str_short()} but the corresponding output carry component has "
                 f"type {b.str_short()}{mismatch_text(a, b)}" for path, a, b in zip(paths, in_avals, out_avals)
                 if a.strip_weak_type() != b.strip_weak_type()]
        differences = (diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1
                       else "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n")
        raise TypeError(f"{name} function carry input and carry output must have equal types, but they differ:"
                        f"\n\n{differences}\n{_pcast_hint(paths, in_avals, out_avals, component)}Revise the function "
                        "so that all output types match the corresponding input types.")


def _pcast_hint(paths, in_avals, out_avals, component):
    """JAX's advice for a carry that the body makes vary over more mesh axes (inside a shard_map)."""
    fixes = [f"This might be fixed by applying `numax.lax.pcast(..., {tuple(sorted(b.vma - a.vma, key=str))}, "
             f"to='varying')`, to the initial carry value corresponding to {component(path)}.\n"
             for path, a, b in zip(paths, in_avals, out_avals) if b.vma - a.vma]
    if not fixes:
        return ""
    return "".join(fixes) + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more "
                             "information.\n\n")
