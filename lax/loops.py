"""Loops with a static trip count: `scan` (the `scan` primitive), `map` and `associative_scan`.

`scan_p` holds its body as a closed program taking (consts, carry, x slice) and returning (carry, y).
It lowers to one `stablehlo.while` counting trips, slicing the xs and writing the ys with dynamic
slices; `unroll` puts several copies of the body in each trip (and the remaining steps after the
loop), without changing the program. Reverse mode splits the JVP of a scan into a primal scan that
also stacks each step's residuals and a tangent scan that reads them; the tangent scan transposes
into a scan running the other way. `associative_scan` needs no primitive: it is the parallel prefix
algorithm written with slices and concatenations.
"""


import numpy as np

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import UndefinedPrimal, Zero, is_undefined, tangent_aval
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.dce import dce_program
from ..core.evaluation import eval_closed_program
from ..core.ir import ClosedProgram, Program
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import trace_to_closed_program, trace_to_program
from ..core.trace import concrete_or_error, get_aval_of
from ..lowering import dynamic_shapes
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type
from .ad import add_tangents, instantiate, zeros_like_aval
from .conditionals import check_carry
from .ref_threading import carrying, store, values_of, with_refs_threaded

__all__ = ["scan", "map", "associative_scan", "scan_p"]


def _split3(values, num_consts, num_carry):
    values = list(values)
    return values[:num_consts], values[num_consts:num_consts + num_carry], values[num_consts + num_carry:]


def _typematch(a, b):
    """Equal shapes and dtypes (weak types may differ, as in JAX's `typematch`)."""
    return a.shape == b.shape and a.dtype == b.dtype


def _stacked(aval, length):
    return aval.update(shape=(length,) + aval.shape)


def _unstacked(aval):
    return aval.update(shape=aval.shape[1:])


# --- the primitive ------------------------------------------------------------------------------------
scan_p = Primitive("scan", multiple_results=True)


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    body_in, body_out = jaxpr.in_avals, jaxpr.out_avals
    if len(avals) != len(body_in):
        raise TypeError(f"scan: the body takes {len(body_in)} operands, got {len(avals)}")
    consts, carry, xs = _split3(avals, num_consts, num_carry)
    body_consts, body_carry, body_xs = _split3(body_in, num_consts, num_carry)
    for kind, given, expected in (("const", consts, body_consts), ("carry", carry, body_carry)):
        for i, (g, e) in enumerate(zip(given, expected)):
            if not _typematch(g, e):
                raise TypeError(f"scan {kind} operand {i} has type {g.str_short()} but the body expects "
                                f"{e.str_short()}")
    for i, (x, e) in enumerate(zip(xs, body_xs)):
        if x.shape != (length,) + e.shape or x.dtype != e.dtype:
            raise TypeError(f"scan xs operand {i} has type {x.str_short()} but the body expects slices of type "
                            f"{e.str_short()} along a leading axis of length {length}")
    carry_out = body_out[:num_carry]
    for i, (c_in, c_out) in enumerate(zip(body_carry, carry_out)):
        if not _typematch(c_in, c_out):
            raise TypeError("scan body function carry input and carry output must have equal types, but carry "
                            f"{i} has type {c_in.str_short()} in and {c_out.str_short()} out")
    return list(carry_out) + [_stacked(a, length) for a in body_out[num_carry:]]


scan_p.def_abstract_eval(_scan_abstract_eval)


# --- lowering: one stablehlo.while over trips of `unroll` steps ------------------------------------------
def _run_steps(body, length, reverse, num_carry, first_step, count, consts, xs, carry, ys):
    """`count` body steps from `first_step` (an int, or a traced trip start), reading xs and writing ys."""
    from .conversions import convert_element_type
    from .elementwise import add, sub
    from .shapes import reshape
    from .slicing import dynamic_slice_p, dynamic_update_slice_p

    def starts(index, rank):  # in range by construction: no wrapping or clamping needed
        return [index] + [np.int32(0)] * (rank - 1)

    for k in range(count):
        if isinstance(first_step, int):
            step = first_step + k
            index = np.int32(length - 1 - step if reverse else step)
        else:
            step = add(first_step, np.int32(k))
            last = np.int32(length - 1) if isinstance(length, int) else convert_element_type(length - 1, dtypes.int32)
            index = sub(last, step) if reverse else step
        x = [reshape(dynamic_slice_p.bind(v, *starts(index, v.ndim), slice_sizes=(1,) + v.shape[1:]), v.shape[1:])
             for v in xs]
        outs = eval_closed_program(body, *consts, *carry, *x)
        carry, y = outs[:num_carry], outs[num_carry:]
        ys = [dynamic_update_slice_p.bind(buffer, reshape(value, (1,) + buffer.shape[1:]),
                                          *starts(index, buffer.ndim)) for buffer, value in zip(ys, y)]
    return list(carry), list(ys)


@caches.lru(maxsize=256)
def _trip_program(body, length, reverse, unroll, num_consts, num_carry, state_avals):
    """One trip of the loop as a program over the loop state (trip, consts, xs, carry, ys)."""
    from .elementwise import add, mul

    num_xs = len(body.in_avals) - num_consts - num_carry

    def trip(counter, *state):
        consts, rest = list(state[:num_consts]), list(state[num_consts:])
        xs, carry, ys = rest[:num_xs], rest[num_xs:num_xs + num_carry], rest[num_xs + num_carry:]
        first = mul(counter, np.int32(unroll))
        carry, ys = _run_steps(body, length, reverse, num_carry, first, unroll, consts, xs, carry, ys)
        return [add(counter, np.int32(1)), *consts, *xs, *carry, *ys]

    return trace_to_closed_program(trip, list(state_avals))


@caches.lru(maxsize=256)
def _tail_program(body, length, reverse, first_step, num_consts, num_carry, state_avals):
    """The steps after the last full trip, unrolled, as a program over (consts, xs, carry, ys)."""
    num_xs = len(body.in_avals) - num_consts - num_carry

    def tail(*state):
        consts, rest = list(state[:num_consts]), list(state[num_consts:])
        xs, carry, ys = rest[:num_xs], rest[num_xs:num_xs + num_carry], rest[num_xs + num_carry:]
        carry, ys = _run_steps(body, length, reverse, num_carry, first_step, length - first_step, consts, xs,
                               carry, ys)
        return [*carry, *ys]

    return trace_to_closed_program(tail, list(state_avals))


def _scan_lowering(ctx, *operands, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    builder = ctx.builder
    consts, carry, xs = _split3(operands, num_consts, num_carry)
    const_avals, carry_avals, x_avals = _split3(ctx.avals_in, num_consts, num_carry)
    y_avals = ctx.avals_out[num_carry:]
    ys = [builder.broadcast_scalar(0, a.shape, a.dtype) for a in y_avals]
    avals = tuple(const_avals + x_avals + carry_avals + list(y_avals))
    symbolic_length = not isinstance(length, int)
    if symbolic_length:  # one step per trip, counted up to the length's dimension value
        unroll = 1
    trips = length // unroll if unroll else 0
    done = 0
    if symbolic_length or trips > 1:
        counter_aval = ShapedArray((), dtypes.int32)
        trip = _trip_program(jaxpr, length, reverse, unroll, num_consts, num_carry, (counter_aval,) + avals)
        types = [aval_type(a) for a in (counter_aval,) + avals]

        def condition(inner, args):
            limit = (inner.op1("stablehlo.convert", [dynamic_shapes.dimension_value(inner, trips)], "tensor<i32>")
                     if symbolic_length else inner.scalar(trips, np.int32))
            return [inner.op1("stablehlo.compare", [args[0], limit], "tensor<i1>", {
                "comparison_direction": "#stablehlo<comparison_direction LT>",
                "compare_type": "#stablehlo<comparison_type SIGNED>"})]

        def body(inner, args):
            return lower_program_body(ctx.module, inner, trip.program, trip.consts, args)

        start = builder.scalar(0, np.int32)
        results = builder.op("stablehlo.while", [start, *consts, *xs, *carry, *ys], types, None,
                             [builder.region(types, condition), builder.region(types, body)])
        state = results[1 + num_consts + len(xs):]
        carry, ys = state[:num_carry], state[num_carry:]
        done = trips * unroll
    if not symbolic_length and done < length:
        tail = _tail_program(jaxpr, length, reverse, done, num_consts, num_carry, avals)
        outs = lower_program_body(ctx.module, builder, tail.program, tail.consts, [*consts, *xs, *carry, *ys])
        carry, ys = outs[:num_carry], outs[num_carry:]
    return list(carry) + list(ys)


register_lowering(scan_p, _scan_lowering)
dynamic_shapes.polymorphic_primitives.add(scan_p)  # its body's equations are checked as they are lowered


# --- forward mode: a primal scan stacking residuals, and a tangent scan reading them --------------------
def _jvp_body(body, nonzeros, num_consts, num_carry):
    """The JVP of the body: (primals, nonzero tangents) -> (primal outs, tangents of the carries marked in
    `nonzeros` (zeros instantiated), nonzero ys tangents). Returns (program, natural out nonzero mask).
    At a carry fixpoint no unmarked carry has a nonzero tangent, so the marked ones are exactly those out."""
    from ..transforms.jvp import jvp_program

    carry_nonzero = tuple(nonzeros[num_consts:num_consts + num_carry])
    num_ys = len(body.out_avals) - num_carry
    return jvp_program(body, nonzeros, carry_nonzero + (False,) * num_ys)


def _carry_fixpoint(step_nonzeros, carry_nonzero):
    """Marks carries until a step maps the marked set into itself; `step_nonzeros(mask)` gives the
    carry outputs a step marks for input mask `mask`."""
    carry_nonzero = list(carry_nonzero)
    while True:
        outs = step_nonzeros(carry_nonzero)
        grown = [a or b for a, b in zip(carry_nonzero, outs)]
        if grown == carry_nonzero:
            return carry_nonzero
        carry_nonzero = grown


@caches.lru(maxsize=256)
def _split_jvp(body, nonzeros, num_consts, num_carry):
    """The known and tangent scan bodies of the JVP of `body` with tangents `nonzeros` (carries at their
    fixpoint). Returns (known body, tangent body, ys nonzero mask, indices of the operands (consts) that are
    loop-invariant residuals, and for each per-step residual the index of the xs operand it is or None when
    the known scan stacks it)."""
    from ..transforms.partial_eval import partial_eval_program

    jvp_body, out_nonzeros = _jvp_body(body, nonzeros, num_consts, num_carry)
    n_in, n_out = len(body.in_avals), len(body.out_avals)
    carry_nonzero = nonzeros[num_consts:num_consts + num_carry]
    ys_nonzero = out_nonzeros[num_carry:]
    n_tangents_out = sum(carry_nonzero) + sum(ys_nonzero)
    known, unknown, out_unknowns, num_res = partial_eval_program(
        jvp_body, [False] * n_in + [True] * sum(nonzeros), [False] * n_out + [True] * n_tangents_out)
    assert not any(out_unknowns[:n_out])
    known_program = known.program
    residuals = known_program.outvars[n_out:]
    const_position = {v: i for i, v in enumerate(known_program.invars[:num_consts])}
    xs_position = {v: i for i, v in enumerate(known_program.invars) if i >= num_consts + num_carry}
    invariant = [r for r in residuals if r in const_position]
    stacked = [r for r in residuals if r not in const_position]
    # Residuals that are slices of xs are read from the xs themselves; the others are stacked outputs.
    computed = [r for r in stacked if r not in xs_position]
    stacked_sources = tuple(xs_position.get(r) for r in stacked)
    primal_body, _ = dce_program(Program(known_program.constvars, known_program.invars,
                                         known_program.outvars[:n_out] + computed, known_program.equations))
    known_body = ClosedProgram(primal_body, known.consts)
    # Tangent body: (invariant residuals, consts tangents ; carry tangents ; stacked residuals, xs tangents).
    unknown_program = unknown.program
    residual_vars, tangent_vars = unknown_program.invars[:num_res], unknown_program.invars[num_res:]
    var_of = dict(zip(residuals, residual_vars))
    n_const_t = sum(nonzeros[:num_consts])
    n_carry_t = sum(carry_nonzero)
    invars = ([var_of[r] for r in invariant] + tangent_vars[:n_const_t + n_carry_t] + [var_of[r] for r in stacked]
              + tangent_vars[n_const_t + n_carry_t:])
    tangent_body = ClosedProgram(Program(unknown_program.constvars, invars, unknown_program.outvars,
                                         unknown_program.equations), unknown.consts)
    invariant_consts = tuple(const_position[r] for r in invariant)
    return known_body, tangent_body, ys_nonzero, invariant_consts, stacked_sources


def _scan_jvp(primals, tangents, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    nonzeros = [type(t) is not Zero for t in tangents]
    consts_nz, carry_nz, xs_nz = _split3(nonzeros, num_consts, num_carry)

    def step_nonzeros(carry_mask):
        mask = tuple(consts_nz + list(carry_mask) + xs_nz)
        return _jvp_body(jaxpr, mask, num_consts, num_carry)[1][:num_carry]

    carry_nz = _carry_fixpoint(step_nonzeros, carry_nz)
    nonzeros = tuple(consts_nz + carry_nz + xs_nz)
    known_body, tangent_body, ys_nz, invariant, stacked_sources = _split_jvp(jaxpr, nonzeros, num_consts,
                                                                             num_carry)
    params = dict(reverse=reverse, length=length, unroll=unroll)
    outs = scan_p.bind(*primals, jaxpr=known_body, num_consts=num_consts, num_carry=num_carry,
                       linear=(False,) * len(primals), **params)
    n_out = len(jaxpr.out_avals)
    primal_out, computed = outs[:n_out], iter(outs[n_out:])
    stacked = [next(computed) if source is None else primals[source] for source in stacked_sources]
    out_avals = [get_aval_of(v) for v in primal_out]
    if not any(carry_nz) and not any(ys_nz):
        return primal_out, [Zero(tangent_aval(a)) for a in out_avals]
    consts_t, carry_t, xs_t = _split3([instantiate(t) if nz else None for t, nz in zip(tangents, nonzeros)],
                                      num_consts, num_carry)
    consts_t, carry_t, xs_t = ([t for t in ts if t is not None] for ts in (consts_t, carry_t, xs_t))
    invariant_values = [primals[i] for i in invariant]
    operands = [*invariant_values, *consts_t, *carry_t, *stacked, *xs_t]
    linear_mask = ((False,) * len(invariant) + (True,) * (len(consts_t) + len(carry_t)) + (False,) * len(stacked)
                   + (True,) * len(xs_t))
    tangent_out = iter(scan_p.bind(*operands, jaxpr=tangent_body, num_consts=len(invariant) + len(consts_t),
                                   num_carry=len(carry_t), linear=linear_mask, **params))
    out_nz = carry_nz + list(ys_nz)
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(a)) for a, nz in zip(out_avals, out_nz)]


jvp_rules[scan_p] = _scan_jvp


# --- transposition: a scan running the other way, carrying cotangents -----------------------------------
@caches.lru(maxsize=256)
def _transpose_body(body, consts_linear, xs_linear, ys_nonzero, num_consts, num_carry):
    """(fixed consts ; consts cotangent sums, carry cotangents ; fixed xs, ys cotangents) ->
    (updated sums, carry cotangents of the step's input ; xs cotangents)."""
    from ..transforms.transpose import backward_pass

    const_avals, carry_avals, x_avals = _split3(body.in_avals, num_consts, num_carry)
    y_avals = body.out_avals[num_carry:]
    fixed_consts = [a for a, lin in zip(const_avals, consts_linear) if not lin]
    sums = [tangent_aval(a) for a, lin in zip(const_avals, consts_linear) if lin]
    carry_cts = [tangent_aval(a) for a in carry_avals]
    fixed_xs = [a for a, lin in zip(x_avals, xs_linear) if not lin]
    ys_cts = [tangent_aval(a) for a, nz in zip(y_avals, ys_nonzero) if nz]
    sizes = [len(fixed_consts), len(sums), len(carry_cts), len(fixed_xs)]

    def traced(*values):
        values = list(values)
        pieces = []
        for size in sizes:
            pieces.append(values[:size])
            values = values[size:]
        fixed_c, old_sums, ct_carry, fixed_x = (iter(p) for p in pieces)
        ct_ys = iter(values)
        args = ([UndefinedPrimal(a) if lin else next(fixed_c) for a, lin in zip(const_avals, consts_linear)]
                + [UndefinedPrimal(a) for a in carry_avals]
                + [UndefinedPrimal(a) if lin else next(fixed_x) for a, lin in zip(x_avals, xs_linear)])
        cts = list(ct_carry) + [next(ct_ys) if nz else Zero(tangent_aval(a)) for a, nz in zip(y_avals, ys_nonzero)]
        cts_in = backward_pass(body.program, body.consts, args, cts)
        ct_consts, ct_carry_in, ct_xs = _split3(cts_in, num_consts, num_carry)
        new_sums = [instantiate(add_tangents(old, ct))
                    for old, ct in zip(old_sums, (c for c, lin in zip(ct_consts, consts_linear) if lin))]
        return (new_sums + [instantiate(ct) for ct in ct_carry_in]
                + [instantiate(ct) for ct, lin in zip(ct_xs, xs_linear) if lin])

    return trace_to_closed_program(traced, fixed_consts + sums + carry_cts + fixed_xs + ys_cts)


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    # A carry given as a value is a tangent materialized as zeros (the JVP instantiates the tangents of
    # carries that become nonzero): the body is linear in it all the same, and its cotangent is dropped.
    consts, carry, xs = _split3(args, num_consts, num_carry)
    consts_linear = tuple(is_undefined(c) for c in consts)
    xs_linear = tuple(is_undefined(x) for x in xs)
    ct_carry, ct_ys = list(cts[:num_carry]), list(cts[num_carry:])
    ys_nonzero = tuple(type(ct) is not Zero for ct in ct_ys)
    transposed = _transpose_body(jaxpr, consts_linear, xs_linear, ys_nonzero, num_consts, num_carry)
    fixed_consts = [c for c in consts if not is_undefined(c)]
    sums = [zeros_like_aval(tangent_aval(c.aval)) for c in consts if is_undefined(c)]
    carry_cts = [instantiate(ct) for ct in ct_carry]
    fixed_xs = [x for x in xs if not is_undefined(x)]
    given_ys = [ct for ct in ct_ys if type(ct) is not Zero]
    num_sums = len(sums)
    outs = scan_p.bind(*fixed_consts, *sums, *carry_cts, *fixed_xs, *given_ys, reverse=not reverse, length=length,
                       jaxpr=transposed, num_consts=len(fixed_consts), num_carry=num_sums + num_carry,
                       linear=(False,) * len(fixed_consts) + (True,) * (num_sums + num_carry) + (False,) * len(
                           fixed_xs) + (True,) * len(given_ys), unroll=unroll)
    const_sums, carry_in, xs_cts = iter(outs[:num_sums]), outs[num_sums:num_sums + num_carry], iter(
        outs[num_sums + num_carry:])
    return ([next(const_sums) if lin else None for lin in consts_linear]
            + [ct if is_undefined(c) else None for c, ct in zip(carry, carry_in)]
            + [next(xs_cts) if lin else None for lin in xs_linear])


transpose_rules[scan_p] = _scan_transpose


# --- batching: the batch rides at axis 0 of consts and carries, at axis 1 of xs and ys ------------------
@caches.lru(maxsize=256)
def _batched_body(body, in_dims, size, name, force):
    from ..transforms.vmap import AxisData, batch_program

    program, out_dims = batch_program(body, list(in_dims), AxisData(size, name), list(force))
    return program, tuple(out_dims)


def _scan_batch(values, dims, axis, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    from .batching import batch_at

    size = axis.size
    consts_b, carry_b, xs_b = _split3([d is not None for d in dims], num_consts, num_carry)
    n_ys = len(jaxpr.out_avals) - num_carry

    def batched(carry_mask):
        in_dims = tuple(0 if b else None for b in consts_b + list(carry_mask) + xs_b)
        return _batched_body(jaxpr, in_dims, size, axis.name, tuple(carry_mask) + (False,) * n_ys)

    carry_b = _carry_fixpoint(lambda mask: [d is not None for d in batched(mask)[1][:num_carry]], carry_b)
    body, out_dims = batched(carry_b)
    consts, carry, xs = _split3(values, num_consts, num_carry)
    c_dims, carry_dims, x_dims = _split3(dims, num_consts, num_carry)
    consts = [batch_at(v, d, size, 0) if d is not None else v for v, d in zip(consts, c_dims)]
    carry = [batch_at(v, d, size, 0) if b else v for v, d, b in zip(carry, carry_dims, carry_b)]
    xs = [batch_at(v, d, size, 1) if d is not None else v for v, d in zip(xs, x_dims)]
    outs = scan_p.bind(*consts, *carry, *xs, reverse=reverse, length=length, jaxpr=body, num_consts=num_consts,
                       num_carry=num_carry, linear=linear, unroll=unroll)
    result_dims = [0 if b else None for b in carry_b] + [None if d is None else 1 for d in out_dims[num_carry:]]
    return outs, result_dims


_scan_batch.needs_axis = True
batching_rules[scan_p] = _scan_batch


# --- lax.scan -----------------------------------------------------------------------------------------
def _scan_length(xs_flat, length):
    try:
        lengths = [x.shape[0] for x in xs_flat]
    except (AttributeError, IndexError):
        bad = [x for x in xs_flat if not getattr(x, "shape", ())]
        bad_text = ", ".join(str(x) for x in bad)
        raise ValueError(f"scan got value with no leading axis to scan over: {bad_text}.") from None
    if length is not None:
        length = int(concrete_or_error(length, "The `length` argument to `scan` expects a concrete `int` value. "
                                               "For scan-like iteration with a dynamic length, use `while_loop` "
                                               "or `fori_loop`."))
        if not all(length == n for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with leading axis sizes "
                             f"{lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _trace_body(f, init_tree, xs_tree, carry_avals, x_avals):
    """Traces `f(carry, x) -> (carry, y)`; every constant becomes a leading operand.

    Returns (Program taking (consts, carry, x), const values, carry tree, carry out avals, y tree)."""
    num_carry = len(carry_avals)
    info = {}

    def flat_body(*args):
        carry = init_tree.unflatten(args[:num_carry])
        x = xs_tree.unflatten(args[num_carry:])
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"scan body output must be a pair, got {out}.")
        carry_leaves, info["carry_tree"] = tree.tree_flatten(out[0])
        y_leaves, info["y_tree"] = tree.tree_flatten(out[1])
        info["num_carry_out"] = len(carry_leaves)
        return carry_leaves + y_leaves

    program, consts = trace_to_program(flat_body, list(carry_avals) + list(x_avals))
    program = Program([], program.constvars + program.invars, program.outvars, program.equations)
    carry_out_avals = program.out_avals[:info["num_carry_out"]]
    return program, consts, info["carry_tree"], carry_out_avals, info["y_tree"]


class _BodyCache:
    """Traced bodies by their text and types, so that a scan traced again (each eager call traces its body:
    closed-over values may have changed) reuses one program, and with it one compiled executable."""

    def __init__(self, limit=1024):
        self.entries = {}
        self.limit = limit

    def canonical(self, program):
        key = (str(program), tuple(program.in_avals), tuple(program.out_avals), tuple(_unprinted_params(program)))
        closed = self.entries.get(key)
        if closed is None:
            if len(self.entries) >= self.limit:
                self.entries.clear()
            closed = self.entries[key] = ClosedProgram(program, [])
        return closed


def _unprinted_params(program):
    """Identities of what a program's text does not show: the constants of nested closed programs (a jit
    created inside the body) and functions held as parameters (custom derivative rules)."""
    for eqn in program.equations:
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, ClosedProgram):
                    if item.consts:
                        yield id(item)
                    yield from _unprinted_params(item.program)
                elif isinstance(item, Program):
                    yield from _unprinted_params(item)
                elif callable(item) and not isinstance(item, (type, np.dtype)):
                    yield id(item)


_body_cache = _BodyCache()


def _promote_weak_init(init_flat, init_avals, carry_avals):
    """Weakly typed init values whose carry output type differs are converted to it, as in JAX."""
    from .conversions import convert_element_type

    changed, out = False, []
    for value, in_aval, out_aval in zip(init_flat, init_avals, carry_avals):
        if in_aval.weak_type and not _typematch(in_aval, out_aval):
            dtype = dtypes.result_type(value, out_aval.dtype)
            value = convert_element_type(value, dtype)
            changed = True
        out.append(value)
    return out, changed


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loops `f(carry, x) -> (carry, y)` over the leading axis of `xs`; returns (final carry, stacked ys).

    `xs` and the carry may be pytrees; with `xs=None`, `length` gives the number of steps. `reverse` runs
    from the last slice to the first (ys stay in order); `unroll` steps are done per loop trip (True: all).
    Under `numax.disable_jit()` the loop runs in Python, as in JAX. `_split_transpose` is JAX's private switch
    for how its transpose is scheduled (flax.nnx passes it); it changes no value, and numax ignores it. Refs `f`
    reads or writes are carried through the loop (lax/ref_threading.py).
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")

    def run(refs):
        if not refs:
            return _scan(f, init, xs, length, reverse, unroll)
        step = carrying(refs, f)

        def threaded(carry, x):
            after, (new_carry, y) = step(carry[0], carry[1], x)
            return (after, new_carry), y

        (after, carry), ys = _scan(threaded, (values_of(refs), init), xs, length, reverse, unroll)
        store(refs, after)
        return carry, ys

    return with_refs_threaded(run)


def _scan(f, init, xs, length, reverse, unroll):
    init_flat, init_tree = tree.tree_flatten(init)
    xs_flat, xs_tree = tree.tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    if config.disable_jit:
        return _scan_in_python(f, init, xs_flat, xs_tree, length, reverse)
    unroll = concrete_or_error(unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
    if isinstance(unroll, (bool, np.bool_)):
        # (A symbolic length is lowered one step per trip whatever `unroll` says.)
        unroll = max(length, 1) if unroll and isinstance(length, int) else 1
    unroll = int(unroll)
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    x_avals = [_unstacked(get_aval_of(x)) for x in xs_flat]
    init_avals = [get_aval_of(v) for v in init_flat]
    program, consts, carry_tree, carry_avals, y_tree = _trace_body(f, init_tree, xs_tree, init_avals, x_avals)
    if carry_tree == init_tree:
        init_flat, changed = _promote_weak_init(init_flat, init_avals, carry_avals)
        if changed:
            init_avals = [get_aval_of(v) for v in init_flat]
            program, consts, carry_tree, carry_avals, y_tree = _trace_body(f, init_tree, xs_tree, init_avals, x_avals)
    check_carry("scan body", f, init_tree, carry_tree, init_avals, carry_avals)
    body = _body_cache.canonical(program)
    operands = [*consts, *init_flat, *xs_flat]
    outs = scan_p.bind(*operands, reverse=bool(reverse), length=length, jaxpr=body, num_consts=len(consts),
                       num_carry=len(init_flat), linear=(False,) * len(operands), unroll=unroll)
    return carry_tree.unflatten(outs[:len(init_flat)]), y_tree.unflatten(outs[len(init_flat):])


def _scan_in_python(f, init, xs_flat, xs_tree, length, reverse):
    """`scan` under `disable_jit`, as JAX runs it: a Python loop over the slices of `xs`, the carry passed
    along unchecked (`unroll` unused), each leaf of the ys stacked along a new leading axis."""
    from .shapes import concatenate, expand_dims
    from .slicing import index_in_dim

    if length == 0:
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the output type is "
                         "unknown.")
    steps = range(length - 1, -1, -1) if reverse else range(length)
    carry, ys = init, []
    for i in steps:
        carry, y = f(carry, xs_tree.unflatten([index_in_dim(x, i, keepdims=False) for x in xs_flat]))
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = tree.tree_map(lambda *leaves: concatenate([expand_dims(y, (0,)) for y in leaves], 0), *ys)
    return carry, stacked


# --- lax.map ------------------------------------------------------------------------------------------
def map(f, xs, *, batch_size=None):  # noqa: A001 (jax.lax's name)
    """`f` applied to each slice of `xs` along its leading axis, sequentially (a scan); with `batch_size`,
    `f` is vmapped over batches of that many slices (0: one batch of all)."""
    from .shapes import concatenate, reshape

    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    from ..transforms.vmap import vmap

    leaves, xs_tree = tree.tree_flatten(xs)
    length = _scan_length(leaves, None)
    batch_size = int(batch_size)
    num_batches, remainder = divmod(length, batch_size) if batch_size else (0, length)
    batched_f = vmap(f)
    if not num_batches:  # batch_size 0 or fewer slices than one batch: one vmap over them all, as in JAX
        return batched_f(xs)
    main = [reshape(_slice_leading(x, 0, num_batches * batch_size), (num_batches, batch_size) + x.shape[1:])
            for x in leaves]
    _, ys = scan(lambda _, x: ((), batched_f(x)), (), xs_tree.unflatten(main))
    ys_leaves, ys_tree = tree.tree_flatten(ys)
    ys_leaves = [reshape(y, (num_batches * batch_size,) + y.shape[2:]) for y in ys_leaves]
    if remainder:
        rest = batched_f(xs_tree.unflatten([_slice_leading(x, num_batches * batch_size, length) for x in leaves]))
        ys_leaves = [concatenate([y, r], 0) for y, r in zip(ys_leaves, tree.tree_leaves(rest))]
    return ys_tree.unflatten(ys_leaves)


def _slice_leading(x, start, stop):
    from .slicing import slice_in_dim

    return slice_in_dim(x, start, stop, 1, 0)


# --- lax.associative_scan -----------------------------------------------------------------------------
def associative_scan(fn, elems, reverse=False, axis=0):
    """All prefix combinations `fn(...fn(fn(e0, e1), e2)..., ek)` along `axis`, by the parallel prefix
    algorithm (O(log n) depth): `fn` must be associative and act elementwise on stacked slices."""
    from .shapes import concatenate, expand_dims, reshape, rev
    from .slicing import slice_in_dim

    leaves, elems_tree = tree.tree_flatten(elems)
    if not leaves:
        return elems
    ndim = get_aval_of(leaves[0]).ndim
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for arrays of rank {ndim}")
    axis = axis % ndim if ndim else axis
    sizes = [get_aval_of(x).shape[axis] for x in leaves]
    if len(set(sizes)) > 1:
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. (saw: {sizes})")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(elems_tree.unflatten(a), elems_tree.unflatten(b))
        out_leaves, out_tree = tree.tree_flatten(out)
        if out_tree != elems_tree:
            raise ValueError(f"The input and output of `fn` must have the same pytree structure: input "
                             f"{elems_tree}, output {out_tree}")
        return out_leaves

    def take(xs, start, stop, stride=1):
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(evens, odds):
        """[e0, o0, e1, o1, ...] along `axis`: there are as many odds as evens, or one fewer."""
        out = []
        for e, o in zip(evens, odds):
            n_odd = get_aval_of(o).shape[axis]
            pairs = concatenate([expand_dims(slice_in_dim(e, 0, n_odd, 1, axis), (axis + 1,)),
                                 expand_dims(o, (axis + 1,))], axis + 1)
            shape = get_aval_of(pairs).shape
            merged = reshape(pairs, shape[:axis] + (2 * n_odd,) + shape[axis + 2:])
            if get_aval_of(e).shape[axis] > n_odd:
                merged = concatenate([merged, slice_in_dim(e, n_odd, n_odd + 1, 1, axis)], axis)
            out.append(merged)
        return out

    def prefix(xs):
        n = get_aval_of(xs[0]).shape[axis]
        if n < 2:
            return xs
        pair_sums = combine(take(xs, 0, n - 1, 2), take(xs, 1, n, 2))  # (x0 x1), (x2 x3), ...
        odds = prefix(pair_sums)  # prefixes ending at x1, x3, ...
        if n % 2 == 0:
            evens = combine(take(odds, 0, n // 2 - 1), take(xs, 2, n, 2))
        else:
            evens = combine(odds, take(xs, 2, n, 2))
        evens = [concatenate([first, e], axis) for first, e in zip(take(xs, 0, 1), evens)]
        return interleave(evens, odds)

    out = prefix(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return elems_tree.unflatten(out)
