"""Loops with a dynamic trip count: `while_loop`, and `fori_loop` (through `scan` when its bounds are static).

`while_p` holds a condition program and a body program, each with its leading consts (closed-over values
hoisted into operands, JAX's `cond_nconsts`/`body_nconsts`), and lowers to `stablehlo.while`. Beside it:
JVP (one loop over primal and tangent carries; which carries have tangents is found by a fixpoint), the
transpose rule raising JAX's reverse-mode error, and batching (a batched predicate keeps the loop running
while any example is active, each carry updated only where its example's predicate holds).
"""


import numpy as np

from ..core import caches, dtypes
from ..core import pytree as tree
from ..core.ad_util import Zero, tangent_aval
from ..core.avals import InconclusiveDimensionOperation, ShapedArray
from ..core.config import config
from ..core.dce import dce_program
from ..core.errors import ConcretizationTypeError
from ..core.evaluation import eval_closed_program
from ..core.ir import ClosedProgram, Equation, Program, Var
from ..core.primitives import Primitive, batching_rules, jvp_rules, transpose_rules
from ..core.staging import trace_to_closed_program
from ..core.trace import Tracer, find_top_trace, get_aval_of, is_concrete
from ..lowering.dynamic_shapes import polymorphic_primitives
from ..lowering.lower import lower_program_body, register_lowering
from ..lowering.stablehlo import aval_type
from ..transforms.partial_eval import partial_eval_program, partial_eval_rules  # core-only imports
from .conditionals import (
    avals_text,
    check_carry,
    closure_convert,
    join_weak,
    same_types,
    trace_callable,
    zeros,
)
from .ref_threading import carrying, store, values_of, with_refs_threaded

__all__ = ["fori_loop", "while_loop"]

while_p = Primitive("while", multiple_results=True)


def _split(values, cond_nconsts, body_nconsts):
    return (values[:cond_nconsts], values[cond_nconsts:cond_nconsts + body_nconsts],
            values[cond_nconsts + body_nconsts:])


def _while_abstract_eval(*avals, cond_program, body_program, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carries = _split(list(avals), cond_nconsts, body_nconsts)
    if not same_types(cond_program.in_avals, cond_consts + carries):
        raise TypeError(f"while cond_program takes {avals_text(cond_program.in_avals)} but is given "
                        f"{avals_text(cond_consts + carries)}")
    if [a.strip_weak_type() for a in cond_program.out_avals] != [get_aval_of(np.bool_(True))]:
        raise TypeError(f"while cond_program must return a boolean scalar, got {avals_text(cond_program.out_avals)}")
    if not same_types(body_program.in_avals, body_consts + carries):
        raise TypeError(f"while body_program takes {avals_text(body_program.in_avals)} but is given "
                        f"{avals_text(body_consts + carries)}")
    if not same_types(body_program.out_avals, carries):
        raise TypeError(f"while body_program returns {avals_text(body_program.out_avals)} for carries "
                        f"{avals_text(carries)}")
    return join_weak(carries, body_program.out_avals)


while_p.def_abstract_eval(_while_abstract_eval)


def _while_lowering(ctx, *args, cond_program, body_program, cond_nconsts, body_nconsts):
    # The consts travel through the loop as carries (as JAX lowers them): the regions then use only their
    # own arguments.
    builder = ctx.builder
    types = [aval_type(a) for a in ctx.avals_in]
    num_consts = cond_nconsts + body_nconsts

    def condition(inner, values):
        cond_consts, _, carries = _split(values, cond_nconsts, body_nconsts)
        return lower_program_body(ctx.module, inner, cond_program.program, cond_program.consts,
                                  cond_consts + carries)

    def body(inner, values):
        _, body_consts, carries = _split(values, cond_nconsts, body_nconsts)
        outs = lower_program_body(ctx.module, inner, body_program.program, body_program.consts,
                                  body_consts + carries)
        return values[:num_consts] + outs

    results = builder.op("stablehlo.while", list(args), types, None,
                         [builder.region(types, condition), builder.region(types, body)])
    return results[num_consts:]


register_lowering(while_p, _while_lowering)
polymorphic_primitives.add(while_p)  # its programs' equations are checked as they are lowered


# --- public wrappers ------------------------------------------------------------------------------------------
def _trace_loop(cond_fun, body_fun, in_tree, in_avals):
    cond_program, cond_consts, cond_tree = trace_callable(cond_fun, in_tree, in_avals, spread=False)
    body_program, body_consts, body_tree = trace_callable(body_fun, in_tree, in_avals, spread=False)
    if not tree.treedef_is_leaf(cond_tree) or len(cond_program.outvars) != 1:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
    pred = cond_program.outvars[0].aval
    if pred.shape != () or pred.dtype != dtypes.bool_:
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                        f"[{pred.str_short()}].")
    return (cond_program, cond_consts), (body_program, body_consts), body_tree


def _as_carry_array(value):
    """JAX's `lax.asarray`, applied to every carry leaf of a loop run in Python: arrays and tracers pass,
    Python scalars become weakly typed arrays, numpy values arrays of their (canonical) dtype."""
    from .shapes import as_array

    if isinstance(getattr(value, "aval", None), ShapedArray):
        return value
    if not isinstance(value, (bool, int, float, complex, np.ndarray, np.generic)):
        raise TypeError(f"asarray: expected ArrayLike, got {value} of type {type(value)}.")
    if isinstance(value, int) and not isinstance(value, bool):
        dtypes.check_int_fits(value, dtypes.default_int_dtype())
    return as_array(value)


def while_loop(cond_fun, body_fun, init_val):
    """`while cond_fun(val): val = body_fun(val)`, compiled into one loop; `val` may be any pytree.

    Forward-mode differentiable; for reverse mode use `scan` or `fori_loop` with static bounds. Under
    `numax.disable_jit()` the loop runs in Python (as in JAX: carries made arrays, their types unchecked),
    unless its predicate is a tracer without a value (under `vmap`, say). Refs the functions read or write are
    carried through the loop (lax/ref_threading.py)."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")

    def run(refs):
        if not refs:
            return _while_loop(cond_fun, body_fun, init_val)
        condition, body = carrying(refs, cond_fun), carrying(refs, body_fun)
        after, result = _while_loop(lambda carry: condition(*carry)[1], lambda carry: body(*carry),
                                    (values_of(refs), init_val))
        store(refs, after)
        return result

    return with_refs_threaded(run)


def _while_loop(cond_fun, body_fun, init_val):
    if config.disable_jit:
        try:
            val = tree.tree_map(_as_carry_array, init_val)
            while cond_fun(val):
                val = tree.tree_map(_as_carry_array, body_fun(val))
            return val
        except ConcretizationTypeError:
            pass  # a predicate Python cannot read: the loop is traced after all, as JAX falls back
    from .conversions import convert_element_type

    leaves, in_tree = tree.tree_flatten(init_val)
    in_avals = [get_aval_of(leaf) for leaf in leaves]
    cond_traced, body_traced, body_tree = _trace_loop(cond_fun, body_fun, in_tree, in_avals)
    out_avals = body_traced[0].out_avals
    if body_tree == in_tree and len(out_avals) == len(in_avals):
        # A weakly typed initial value (a Python scalar) takes the type the body gives it, as in JAX.
        promoted = [convert_element_type(leaf, dtypes.result_type(leaf, out, return_weak_type_flag=True)[0])
                    if a.weak_type and a.strip_weak_type() != out.strip_weak_type() else leaf
                    for leaf, a, out in zip(leaves, in_avals, out_avals)]
        if any(p is not leaf for p, leaf in zip(promoted, leaves)):
            leaves = promoted
            in_avals = [get_aval_of(leaf) for leaf in leaves]
            cond_traced, body_traced, body_tree = _trace_loop(cond_fun, body_fun, in_tree, in_avals)
    check_carry("while_loop body", body_fun, in_tree, body_tree, in_avals, body_traced[0].out_avals)
    (cond_program,), cond_consts = closure_convert([cond_traced])
    (body_program,), body_consts = closure_convert([body_traced])
    outs = while_p.bind(*cond_consts, *body_consts, *leaves, cond_program=cond_program, body_program=body_program,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return in_tree.unflatten(outs)


def _loop_bound_dtype(lower, upper):
    lower_dtype, lower_weak = dtypes.dtype_and_weak_of(lower)
    upper_dtype, upper_weak = dtypes.dtype_and_weak_of(upper)
    if lower_dtype == upper_dtype:
        return lower_dtype
    if all(dtypes.is_integer(d) and not dtypes.is_unsigned(d) for d in (lower_dtype, upper_dtype)):
        if lower_weak and not upper_weak:
            return upper_dtype
        if upper_weak and not lower_weak:
            return lower_dtype
    raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got {lower_dtype.name} and "
                    f"{upper_dtype.name}")


def _static_int(value):
    """`value` as a Python int when it is known now, else None (a traced value, a symbolic dimension)."""
    if isinstance(value, Tracer) and not is_concrete(value):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, InconclusiveDimensionOperation):
        return None


def _as_bound(bound, dtype):
    from .conversions import convert_element_type

    bound_dtype, weak = dtypes.dtype_and_weak_of(bound)
    return bound if bound_dtype == dtype else convert_element_type(bound, dtype)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, compiled into one loop.

    With static bounds (Python ints or concrete arrays) this is a `scan`, reverse-differentiable like JAX's;
    with traced bounds it is a `while_loop`."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    from .conversions import convert_element_type
    from .elementwise import add, lt

    dtype = _loop_bound_dtype(lower, upper)
    static_lower, static_upper = _static_int(lower), _static_int(upper)
    if static_lower is not None and static_upper is not None:
        try:
            from .loops import scan
        except ImportError:  # scan not available yet: the static loop runs as a while_loop
            scan = None
        if scan is not None:
            def scan_body(carry, _):
                i, val = carry
                return (i + 1, body_fun(i, val)), None

            length = max(static_upper - static_lower, 0)
            if config.disable_jit and length == 0:
                return init_val  # as in JAX, whose Python scan cannot run zero steps: the value as given
            (_, result), _ = scan(scan_body, (static_lower, init_val), None, length=length,
                                  unroll=False if unroll is None else unroll)
            return result
    elif unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    lower, upper = (_as_bound(bound, dtype) for bound in (lower, upper))

    def while_body(carry):
        i, stop, val = carry
        return add(i, convert_element_type(1, get_aval_of(i).dtype, get_aval_of(i).weak_type)), stop, body_fun(i, val)

    _, _, result = while_loop(lambda carry: lt(carry[0], carry[1]), while_body, (lower, upper, init_val))
    return result


# --- differentiation --------------------------------------------------------------------------------------------
def _carry_tangent_nonzeros(body_program, const_nonzeros, carry_nonzeros):
    """The carries whose tangents can be nonzero after any number of steps (a fixpoint)."""
    from ..transforms.jvp import jvp_program

    carry_nonzeros = tuple(carry_nonzeros)
    while True:
        _, out_nonzeros = jvp_program(body_program, tuple(const_nonzeros) + carry_nonzeros)
        joined = tuple(a or b for a, b in zip(carry_nonzeros, out_nonzeros))
        if joined == carry_nonzeros:
            return carry_nonzeros
        carry_nonzeros = joined


@caches.lru(maxsize=256)
def _while_jvp_programs(cond_program, body_program, cond_nconsts, const_nonzeros, carry_nonzeros):
    """Programs of the loop over primal and tangent carries: (cond, body). The body takes
    (body consts, their nonzero tangents, carries, carry tangents) and returns (carries, carry tangents)."""
    from ..transforms.jvp import jvp_program

    body_jvp, out_nonzeros = jvp_program(body_program, const_nonzeros + carry_nonzeros)
    nb, n = len(const_nonzeros), len(carry_nonzeros)
    carry_avals = body_program.in_avals[nb:]
    const_avals = body_program.in_avals[:nb]
    const_tangent_avals = [tangent_aval(a) for a, nz in zip(const_avals, const_nonzeros) if nz]
    carry_tangent_avals = [tangent_aval(a) for a, nz in zip(carry_avals, carry_nonzeros) if nz]
    nct = len(const_tangent_avals)

    def body(*args):
        consts, const_tangents = args[:nb], args[nb:nb + nct]
        carries, carry_tangents = args[nb + nct:nb + nct + n], args[nb + nct + n:]
        outs = eval_closed_program(body_jvp, *consts, *carries, *const_tangents, *carry_tangents)
        given = iter(outs[n:])
        tangents = [next(given) if out_nz else zeros(tangent_aval(a))
                    for a, nz, out_nz in zip(carry_avals, carry_nonzeros, out_nonzeros) if nz or out_nz]
        return outs[:n] + tangents

    def condition(*args):
        return eval_closed_program(cond_program, *args[:cond_nconsts + n])

    body_closed = trace_to_closed_program(body, const_avals + const_tangent_avals + carry_avals + carry_tangent_avals)
    cond_closed = trace_to_closed_program(condition, cond_program.in_avals + carry_tangent_avals)
    return cond_closed, body_closed


def _while_jvp(primals, tangents, cond_program, body_program, cond_nconsts, body_nconsts):
    """One loop carrying primals and tangents (forward mode; reverse mode cannot transpose it)."""
    from .ad import instantiate

    cond_consts, body_consts, init = _split(list(primals), cond_nconsts, body_nconsts)
    _, const_tangents, init_tangents = _split(list(tangents), cond_nconsts, body_nconsts)
    const_nonzeros = tuple(type(t) is not Zero for t in const_tangents)
    carry_nonzeros = _carry_tangent_nonzeros(body_program, const_nonzeros, [type(t) is not Zero for t in init_tangents])
    if not any(carry_nonzeros):
        outs = while_p.bind(*primals, cond_program=cond_program, body_program=body_program,
                            cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
        return outs, [Zero(tangent_aval(get_aval_of(o))) for o in outs]
    cond_closed, body_closed = _while_jvp_programs(cond_program, body_program, cond_nconsts, const_nonzeros,
                                                   carry_nonzeros)
    given_const_tangents = [t for t in const_tangents if type(t) is not Zero]
    carry_tangents = [instantiate(t) for t, nz in zip(init_tangents, carry_nonzeros) if nz]
    outs = while_p.bind(*cond_consts, *body_consts, *given_const_tangents, *init, *carry_tangents,
                        cond_program=cond_closed, body_program=body_closed, cond_nconsts=cond_nconsts,
                        body_nconsts=body_nconsts + len(given_const_tangents))
    n = len(init)
    primal_out = outs[:n]
    if find_top_trace(primals).main is not find_top_trace([*primals, *given_const_tangents, *carry_tangents]).main:
        # The tangents are staged apart from the primals (linearize, reverse mode): the joint loop lands in the
        # tangent program, so the primal results come from a loop of their own (as JAX's partial evaluation
        # recomputes them), and the tangent program's loop fails to transpose with JAX's error.
        primal_out = while_p.bind(*primals, cond_program=cond_program, body_program=body_program,
                                  cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    tangent_out = iter(outs[n:])
    return primal_out, [next(tangent_out) if nz else Zero(tangent_aval(get_aval_of(p)))
                        for p, nz in zip(primal_out, carry_nonzeros)]


def _while_transpose(*_args, **_params):
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                     "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


def _while_partial_eval(eqn, in_unknowns):
    """Splits a loop with some unknown inputs (the JVP loop of a jitted function, its tangents unknown):
    a known loop computes the known carries; the unknown loop, which cannot save per-step residuals,
    recomputes everything (as JAX's rule does)."""
    params = eqn.params
    cond_program, body_program = params["cond_program"], params["body_program"]
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond_uk, body_uk, carry_uk = _split(list(in_unknowns), nc, nb)
    while True:
        _, _, out_uk, _ = partial_eval_program(body_program, body_uk + carry_uk)
        joined = [a or b for a, b in zip(carry_uk, out_uk)]
        if joined == carry_uk:
            break
        carry_uk = joined
    everything_unknown = (None, eqn, [True] * len(eqn.outvars), [])
    cond_dced, cond_used = dce_program(cond_program.program)
    if any(used and unknown for used, unknown in zip(cond_used, cond_uk + carry_uk)) or all(carry_uk):
        return everything_unknown
    known_body, _, _, num_res = partial_eval_program(body_program, body_uk + carry_uk)
    known_body_program, _ = dce_program(known_body.program, [True] * (len(known_body.out_avals) - num_res) +
                                        [False] * num_res)
    known_body = ClosedProgram(known_body_program, known_body.consts)
    known_cond = ClosedProgram(Program(cond_dced.constvars, [v for v, u in zip(cond_dced.invars, cond_uk + carry_uk)
                                                             if not u], cond_dced.outvars, cond_dced.equations),
                               cond_program.consts)
    cond_in, body_in, carry_in = _split(list(eqn.inputs), nc, nb)
    known_inputs = ([a for a, u in zip(cond_in, cond_uk) if not u] + [a for a, u in zip(body_in, body_uk) if not u]
                    + [a for a, u in zip(carry_in, carry_uk) if not u])
    known_eqn = Equation(while_p, known_inputs, [v for v, u in zip(eqn.outvars, carry_uk) if not u], dict(
        cond_program=known_cond, body_program=known_body, cond_nconsts=nc - sum(cond_uk),
        body_nconsts=nb - sum(body_uk)))
    unknown_eqn = eqn.replace(outvars=[v if u else Var(v.aval) for v, u in zip(eqn.outvars, carry_uk)])
    return known_eqn, unknown_eqn, carry_uk, []


jvp_rules[while_p] = _while_jvp
partial_eval_rules[while_p] = _while_partial_eval
transpose_rules[while_p] = _while_transpose


# --- batching ---------------------------------------------------------------------------------------------------
def _while_batch(values, dims, axis, cond_program, body_program, cond_nconsts, body_nconsts):
    from ..transforms.vmap import batch_program
    from .batching import batch_at, move_axis
    from .callbacks import io_callback_kinds

    io_kinds = io_callback_kinds((cond_program, body_program))
    if "ordered" in io_kinds:  # (jax's plain Exception, here and below)
        raise Exception("Ordered IO effects not supported in vmap.")
    values = [v if d is None else move_axis(v, d, 0) for v, d in zip(values, dims)]
    dims = [None if d is None else 0 for d in dims]
    cond_dims, body_dims, carry_dims = _split(dims, cond_nconsts, body_nconsts)
    carry_batched = [d is not None for d in carry_dims]
    while True:  # a carry is batched if it starts batched or a step can make it so
        _, out_dims = batch_program(body_program, body_dims + [0 if b else None for b in carry_batched], axis)
        joined = [b or d is not None for b, d in zip(carry_batched, out_dims)]
        if joined == carry_batched:
            break
        carry_batched = joined
    _, (pred_dim,) = batch_program(cond_program, cond_dims + [0 if b else None for b in carry_batched], axis)
    if pred_dim is not None:
        if io_kinds:  # a step would call it for examples whose loop has ended
            raise Exception("Unordered IO effects not supported in while_loop with batched predicate")
        carry_batched = [True] * len(carry_batched)
    new_carry_dims = [0 if b else None for b in carry_batched]
    cond_consts, body_consts, carries = _split(values, cond_nconsts, body_nconsts)
    carries = [batch_at(c, d, axis.size, 0) if b and d is None else c
               for c, d, b in zip(carries, carry_dims, carry_batched)]
    batched_cond, _ = batch_program(cond_program, cond_dims + new_carry_dims, axis, force_batched=pred_dim is not None)
    batched_body, _ = batch_program(body_program, body_dims + new_carry_dims, axis, force_batched=carry_batched)
    if pred_dim is None:
        outs = while_p.bind(*cond_consts, *body_consts, *carries, cond_program=batched_cond,
                            body_program=batched_body, cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
        return outs, new_carry_dims
    cond_closed, body_closed = _any_lane_programs(batched_cond, batched_body, cond_nconsts)
    outs = while_p.bind(*cond_consts, *cond_consts, *body_consts, *carries, cond_program=cond_closed,
                        body_program=body_closed, cond_nconsts=cond_nconsts, body_nconsts=cond_nconsts + body_nconsts)
    return outs, [0] * len(outs)


@caches.lru(maxsize=256)
def _any_lane_programs(batched_cond, batched_body, cond_nconsts):
    """A loop over a batch with one predicate per example: it runs while any example's predicate holds, and
    a step changes only the carries of examples whose predicate holds. The body takes the cond consts too."""
    from .elementwise import select_n
    from .reductions import reduce_or
    from .shapes import broadcast_in_dim

    num_body_consts = len(batched_body.in_avals) - (len(batched_cond.in_avals) - cond_nconsts)

    def condition(*args):
        (pred,) = eval_closed_program(batched_cond, *args)
        return [reduce_or(pred, (0,))]

    def body(*args):
        cond_consts, body_consts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + num_body_consts]
        carries = args[cond_nconsts + num_body_consts:]
        (pred,) = eval_closed_program(batched_cond, *cond_consts, *carries)
        new = eval_closed_program(batched_body, *body_consts, *carries)
        return [select_n(broadcast_in_dim(pred, get_aval_of(c).shape, (0,)), c, n) for c, n in zip(carries, new)]

    body_avals = batched_cond.in_avals[:cond_nconsts] + batched_body.in_avals
    return trace_to_closed_program(condition, batched_cond.in_avals), trace_to_closed_program(body, body_avals)


_while_batch.needs_axis = True
batching_rules[while_p] = _while_batch
