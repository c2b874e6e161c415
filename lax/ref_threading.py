"""Refs that loop bodies and branches read or write (lax.while_loop, scan, cond, switch, and fori_loop through
them), discharged as JAX discharges them: the construct runs once as it is; where one of its functions touches a
ref of the level the construct was called at (numax.ref's refs raise ForeignRefAccess inside another
transformation), it runs again with that ref's value threaded through, as a carry of a loop or an operand and
result of the branches. Inside, the ref is bound to the traced value; after, it holds the construct's result."""

import contextlib

from ..core.refs import ForeignRefAccess
from ..core.trace import get_aval_of, trace_state


def with_refs_threaded(run):
    """`run(refs)`, the construct with `refs` threaded through (none at first), again with each ref it touched
    added, until it runs; refs of another level (made outside an enclosing grad or vmap) still raise."""
    caller = trace_state.stack[-1]
    refs = []
    while True:
        try:
            return run(refs)
        except ForeignRefAccess as access:
            if access.ref._main is not caller or any(access.ref is ref for ref in refs):
                raise
            refs.append(access.ref)


def values_of(refs):
    return [ref._value for ref in refs]


def store(refs, values):
    for ref, value in zip(refs, values):
        ref._value = value


@contextlib.contextmanager
def _bound(refs, values):
    """`refs` holding `values` and usable by the transformation running now, for the block; as they were after."""
    saved = [(ref._value, ref._main) for ref in refs]
    main = trace_state.stack[-1]
    for ref, value in zip(refs, values):
        ref._value, ref._main = value, main
    try:
        yield
    finally:
        for ref, (value, owner) in zip(refs, saved):
            ref._value, ref._main = value, owner


def carrying(refs, fun):
    """`fun(*args)` as a function of (the refs' values, *args) returning (their values after, fun's result); a
    value keeps the type it came in with (a weakly typed write to a strongly typed ref stays strong)."""
    from .conversions import convert_element_type

    def threaded(values, *args):
        with _bound(refs, values):
            out = fun(*args)
            after = values_of(refs)
        kept = []
        for new, old in zip(after, values):
            old_aval = get_aval_of(old)
            if get_aval_of(new).weak_type != old_aval.weak_type:
                new = convert_element_type(new, old_aval.dtype, weak_type=old_aval.weak_type)
            kept.append(new)
        return kept, out

    return threaded
