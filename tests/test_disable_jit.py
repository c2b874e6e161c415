"""`numax.disable_jit()` runs structured control flow as Python, as `jax.disable_jit()` does: `cond` and
`switch` call the chosen branch, `while_loop`, `fori_loop`, `scan` and `map` loop in Python, so their bodies
can read values (float(), a Python `if`), append to lists and print.

Each case runs one body on numax and on jax (both under disable_jit; results compared leaf by leaf: Python
scalar or array, dtype, weak type, value) and on numax's traced path outside the context (same values).
Then: grad and vmap inside the context, tracer operands keeping the traced path, errors and edge cases,
and the flag staying in its thread."""

import threading

import numpy as np
import pytest
from harness import jax, jnp
from numax.core.trace import Tracer

import numax
import numax.numpy as xnp


class Eager:
    """Hooks for bodies run as Python: they read values, keep a log and print."""

    def __init__(self):
        self.log = []

    def note(self, tag, value):
        number = float(value)  # only possible on a concrete value
        self.log.append((tag, number))
        print(f"{tag}={number:g}")

    def pick(self, pred, if_true, if_false):
        return if_true if pred else if_false  # a Python `if` on a value


class Traced:
    """The same hooks for the traced path: nothing is read, `where` makes the choice."""

    def note(self, tag, value):
        assert isinstance(value, Tracer), "outside disable_jit the bodies are traced"

    def pick(self, pred, if_true, if_false):
        return xnp.where(pred, if_true, if_false)


def _array(np_module, values, dtype=np.float32):
    return np_module.asarray(np.asarray(values, dtype))


# --- the cases: (library, its numpy, hooks) -> result ---------------------------------------------------
def cond_case(lib, np_module, hooks):
    def positive(v):
        hooks.note("positive", v.sum())
        return hooks.pick(v[0] > 1, v * 2, v + 1), 1.0

    def other(v):
        hooks.note("other", v.sum())
        return -v, 2.0

    x = _array(np_module, [1.5, -0.5, 2.0])
    return [lib.lax.cond(x.sum() > 0, positive, other, x), lib.lax.cond(np.int32(0), positive, other, x),
            lib.lax.cond(x[1], positive, other, operand=x)]


def switch_case(lib, np_module, hooks):
    def branch(k):
        def run(v):
            hooks.note(f"branch{k}", v)
            return hooks.pick(v > 2, v * k, v - k)

        return run

    branches = [branch(k) for k in range(3)]
    x = _array(np_module, 2.5)
    indices = (np.int32(-4), 1, np.int8(9), _array(np_module, 2, np.int32))  # clamped into range
    return [lib.lax.switch(index, branches, x) for index in indices]


def while_case(lib, np_module, hooks):
    def keep_going(carry):
        hooks.note("count", carry[0])
        return carry[0] < 4

    def step(carry):
        count, value = carry
        hooks.note("value", value)
        return count + 1, hooks.pick(value > 3, value / 2, value * 3)

    return lib.lax.while_loop(keep_going, step, (0, _array(np_module, 1.5)))


def fori_case(lib, np_module, hooks):
    def body(i, v):
        hooks.note("i", i)
        return hooks.pick(v.sum() > 4, v - i, v * 2)

    x = _array(np_module, [1.0, 2.0])
    return [lib.lax.fori_loop(1, 4, body, x),
            lib.lax.fori_loop(np.int32(0), _array(np_module, 2, np.int32), body, x, unroll=2)]


def scan_case(lib, np_module, hooks):
    def step(total, x):
        hooks.note("x", x)
        total = total + x
        return total, (hooks.pick(x > 1, x * 2, total), 1.5)

    def count(c, _):
        hooks.note("c", c)
        return c + 1, None

    xs = _array(np_module, [0.5, 2.0, 1.0, 3.0])
    return [lib.lax.scan(step, 0.0, xs), lib.lax.scan(step, 0.0, xs, reverse=True, unroll=3),
            lib.lax.scan(count, 0, None, length=3),
            lib.lax.scan(lambda c, x: step(c, x["a"]), 1.0, {"a": xs[:2]}, length=2)]


def map_case(lib, np_module, hooks):
    def f(row):
        hooks.note("row", row.sum())
        return hooks.pick(row.sum() > 0, row, -row) * 2

    xs = _array(np_module, [[1.0, -2.0], [-3.0, 1.0], [2.0, 2.0]])
    return [lib.lax.map(f, xs), lib.lax.map(lambda r: {"doubled": r * 2, "first": r[0]}, xs, batch_size=2)]


CASES = [cond_case, switch_case, while_case, fori_case, scan_case, map_case]


# --- comparisons ---------------------------------------------------------------------------------------------
def _describe(leaf):
    """What disable_jit decides about an output leaf: a Python scalar, or an array's dtype and weak type."""
    if isinstance(leaf, (bool, int, float, complex)):
        return type(leaf).__name__, leaf
    value = np.asarray(leaf)
    kind = "numpy" if isinstance(leaf, (np.ndarray, np.generic)) else "array"
    return kind, value.dtype, getattr(leaf, "weak_type", None), value.shape, value.tolist()


def assert_same_leaves(ours, theirs):
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert _describe(a) == _describe(b)


def assert_same_values(eager, traced):
    assert jax.tree_util.tree_structure(eager) == jax.tree_util.tree_structure(traced)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(traced)):
        if not isinstance(a, (bool, int, float, complex)):
            assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_python_bodies_match_jax_and_the_traced_path(case, capsys):
    ours_hooks, theirs_hooks = Eager(), Eager()
    with numax.disable_jit():
        ours = case(numax, xnp, ours_hooks)
    ours_printed = capsys.readouterr().out
    with jax.disable_jit():
        theirs = case(jax, jnp, theirs_hooks)
    theirs_printed = capsys.readouterr().out
    assert ours_hooks.log and ours_hooks.log == theirs_hooks.log
    assert ours_printed == theirs_printed
    assert_same_leaves(ours, theirs)
    assert_same_values(ours, case(numax, xnp, Traced()))


# --- transformations inside the context -------------------------------------------------------------------------
def _while_power(lib, x):
    return lib.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, x))[1]


def _transformed(lib, np_module):
    lax = lib.lax

    def loss(x):
        y = lax.cond(x > 0, lambda v: v * v, lambda v: -v, x)
        y = _while_power(lib, y)  # reverse-differentiated: possible only because it runs in Python here
        y = lax.fori_loop(0, 2, lambda i, v: v + np_module.sin(v) * i, y)
        carry, ys = lax.scan(lambda c, t: (c * t, c), y, np_module.arange(1.0, 3.0))
        return carry + ys.sum() + lax.switch(1, [np_module.cos, np_module.sin], x)

    def per_example(v):  # batched predicates keep the traced path (the while loop falls back to it)
        return (lax.cond(v > 0, np_module.exp, np_module.negative, v),
                lax.while_loop(lambda c: c < 4, lambda c: c * 2 + 2, v),
                lax.switch((v > 0).astype(np.int32), [np_module.cos, np_module.sin], v),
                lax.fori_loop(0, 3, lambda i, c: c + i * v, v),
                lax.scan(lambda c, t: (c + t * v, c), v, np_module.arange(3.0)),
                lax.map(lambda t: t * v, np_module.arange(2.0)))

    xs = _array(np_module, [-1.0, 0.5, 2.0])
    return [lib.grad(loss)(v) for v in (0.7, -1.3)], lib.vmap(per_example)(xs), lib.jvp(loss, (0.4,), (1.0,))


def test_grad_and_vmap_inside_disable_jit_match_jax():
    with numax.disable_jit():
        ours = _transformed(numax, xnp)
    with jax.disable_jit():
        theirs = _transformed(jax, jnp)
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        numax.grad(lambda x: _while_power(numax, x))(0.7)  # traced, a while_loop has no reverse mode


def _branches_seen(lib, np_module, tracer_type):
    seen = []

    def branch(name):
        def run(v):
            seen.append((name, isinstance(v, tracer_type)))
            return v + 1

        return run

    preds, values = np.array([True, False]), _array(np_module, [1.0, 2.0])
    lib.vmap(lambda p, v: lib.lax.cond(p, branch("t"), branch("f"), v))(preds, values)  # tracer pred: traced
    lib.vmap(lambda v: lib.lax.cond(True, branch("t"), branch("f"), v))(values)  # concrete pred: Python
    lib.vmap(lambda i, v: lib.lax.switch(i, [branch("0"), branch("1")], v))(np.array([0, 1]), values)
    lib.vmap(lambda v: lib.lax.switch(1, [branch("0"), branch("1"), branch("2")], v))(values)
    lib.lax.while_loop(lambda c: c < 3, branch("body"), 0)
    return seen


def test_tracer_operands_keep_the_traced_path():
    with numax.disable_jit():
        ours = _branches_seen(numax, xnp, Tracer)
    with jax.disable_jit():
        theirs = _branches_seen(jax, jnp, jax.core.Tracer)
    assert ours == theirs
    assert ("f", True) in ours and ours.count(("body", False)) == 3


def _control_flow_in_program(lib, np_module):
    def f(x, n):
        y = lib.lax.scan(lambda c, t: (c + t, c), 0.0, x)[0]  # unrolled: scan always runs in Python
        y = lib.lax.cond(y > 0, np_module.sin, np_module.cos, y)  # a tracer predicate: traced
        return lib.lax.fori_loop(0, n, lambda i, v: v * 2, y)  # traced bounds: a while loop, traced

    closed = lib.make_jaxpr(f)(np.arange(3.0, dtype=np.float32), 2)
    equations = closed.eqns if lib is jax else closed.program.equations
    return sorted({e.primitive.name for e in equations} & {"scan", "cond", "while"})


def test_programs_traced_inside_disable_jit_match_jax():
    with numax.disable_jit():
        ours = _control_flow_in_program(numax, xnp)
    with jax.disable_jit():
        theirs = _control_flow_in_program(jax, jnp)
    assert ours == theirs == ["cond", "while"]


# --- errors and edge cases -------------------------------------------------------------------------------------
def _outcome(run):
    """("ok", the result described) or (the builtin exception class, its text)."""
    try:
        return "ok", _describe(run())
    except Exception as error:  # noqa: BLE001 (the exception class and text are what is compared)
        return next(c for c in type(error).__mro__ if c.__module__ == "builtins"), str(error)


def _edge_cases(lib):
    lax = lib.lax
    init = np.float32(2.0)
    cases = {
        "zero-length scan": lambda: lax.scan(lambda c, x: (c, x), 0, np.zeros(0)),
        "zero-length map": lambda: lax.map(lambda x: x, np.zeros(0)),
        "map, batch_size 0": lambda: lax.map(lambda x: x * 2, np.arange(3.0), batch_size=0),
        "zero-length map in batches": lambda: lax.map(lambda x: x * 2, np.zeros((0, 2)), batch_size=2),
        "negative unroll, unchecked": lambda: lax.scan(lambda c, x: (c + x, None), 0.0, np.ones(2), unroll=-1)[0],
        "carry changing type, unchecked": lambda: lax.scan(lambda c, x: (c * x, None), 1, np.ones(2))[0],
        "while carry changing type": lambda: lax.while_loop(lambda c: c < 2, lambda c: c + 1.5, 0),
        "ys changing dtype": lambda: lax.scan(lambda c, x: (c * x, c), 1, np.ones(2)),
        "body output not a pair": lambda: lax.scan(lambda c, x: (c, x, x), 0, np.ones(2)),
        "while carry not an array": lambda: lax.while_loop(lambda c: False, lambda c: c, "text"),
        "while carry overflowing": lambda: lax.while_loop(lambda c: False, lambda c: c, 2 ** 40),
        "while numpy carry": lambda: lax.while_loop(lambda c: False, lambda c: c, np.float64(2.5)),
        "while predicate of 2 values": lambda: lax.while_loop(lambda c: c, lambda c: c, np.ones(2)),
        "branches of different types": lambda: lax.cond(True, lambda: 1, lambda: (2.0,)),
        "switch of one branch": lambda: lax.switch(5, [lambda v: v], 7),
    }
    outcomes = {name: _outcome(run) for name, run in cases.items()}
    outcomes["zero-length fori_loop gives its value back"] = lax.fori_loop(3, 3, lambda i, v: v, init) is init
    return outcomes


def test_errors_and_edge_cases_match_jax():
    with numax.disable_jit():
        ours = _edge_cases(numax)
    with jax.disable_jit():
        theirs = _edge_cases(jax)
    own_texts = ("while predicate of 2 values", "ys changing dtype")  # jax's errors, in numax's words
    for name in ours:
        assert (ours[name][0] if name in own_texts else ours[name]) == (
            theirs[name][0] if name in own_texts else theirs[name]), name
    assert ours["zero-length fori_loop gives its value back"] is True
    with pytest.raises(TypeError):  # traced, the checks disable_jit skips are made
        numax.lax.cond(True, lambda: 1, lambda: (2.0,))


# --- threads -----------------------------------------------------------------------------------------------------
def test_disable_jit_stays_in_its_thread():
    traced = {}

    def probe(name):
        def branch(v):
            traced[name] = isinstance(v, Tracer)
            return v

        numax.lax.cond(True, branch, lambda v: v, 1.0)

    with numax.disable_jit():
        other = threading.Thread(target=probe, args=("other thread",))
        other.start()
        other.join()
        probe("this thread")
    assert traced == {"this thread": False, "other thread": True}
