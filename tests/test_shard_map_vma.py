"""shard_map's varying-manual-axes types (check_vma=True), against jax 0.10.2 on 8 forced CPU devices: the types
of arguments and of each collective's result, pcast, the pvarys staged before mixed operations, gradients with
respect to invariant values (summed over the devices, and each device's own with check_vma=False), and jax's
errors for out_specs that promise replication and for loop carries and cond branches whose types differ.
Cases ported from jax's tests/shard_map_test.py and its shard_map tutorial."""

import functools
import re
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_same_pytrees, data_parallel_step
from jax.sharding import PartitionSpec as JP
from numax.core.avals import ShapedArray
from oracle import jit_table

import numax
import numax.numpy as mnp
from numax import lax
from numax.sharding import Mesh, P


@functools.cache
def meshes(shape, names=("i", "j", "k")):
    """(numax mesh, jax mesh) of `shape` over the same devices, of type Auto."""
    names = names[:len(shape)]
    devices = int(np.prod(shape))
    return (Mesh(np.array(numax.devices()[:devices]).reshape(shape), names),
            jax.sharding.Mesh(np.array(jax.devices()[:devices]).reshape(shape), names))


# The two libraries side by side.
OURS = SimpleNamespace(lax=lax, np=mnp, P=P, shard_map=numax.shard_map, typeof=numax.typeof, grad=numax.grad,
                       jit=numax.jit, vmap=numax.vmap, make_jaxpr=numax.make_jaxpr, jacrev=numax.jacrev,
                       value_and_grad=numax.value_and_grad, custom_jvp=numax.custom_jvp, checkpoint=numax.checkpoint)
THEIRS = SimpleNamespace(lax=jax.lax, np=jnp, P=JP, shard_map=jax.shard_map, typeof=jax.typeof, grad=jax.grad,
                         jit=jax.jit, vmap=jax.vmap, make_jaxpr=jax.make_jaxpr, jacrev=jax.jacrev,
                         value_and_grad=jax.value_and_grad, custom_jvp=jax.custom_jvp, checkpoint=jax.checkpoint)
BOTH = (OURS, THEIRS)


# jax's side, the oracle, runs under jax.jit (or jax.eval_shape where only types and errors are compared) where
# jax's eager mode is not what is compared: jax's eager shard_map compiles every operation of the body as a program
# of its own (and an eager grad of it as many more), where one jit program computes the same values, and jax types
# and checks the body the same way when it traces it. Each test's numax side runs as before.
def _plain(f):
    return f


def _both(make, shape, in_specs, out_specs, *args, **options):
    """`make(lib)` shard_mapped by numax and by jax over meshes of `shape` (specs built by `in_specs(P)` and
    `out_specs(P)`), run on `args`: numax's as it is called (eagerly), jax's under jax.jit."""
    return [(jax.jit if lib is THEIRS else _plain)(
        lib.shard_map(make(lib), mesh=mesh, in_specs=in_specs(lib.P), out_specs=out_specs(lib.P), **options))(*args)
        for lib, mesh in zip(BOTH, meshes(shape))]


_close = functools.partial(assert_same_pytrees, rtol=1e-5, atol=1e-5)


def _outcome(thunk):
    """None, or the type of the exception `thunk()` raised."""
    try:
        thunk()
    except Exception as error:  # noqa: BLE001 (the two libraries' exception types are what is compared)
        return type(error)
    return None


# --- the types ----------------------------------------------------------------------------------------------------
def _typed_values(lib, seen):
    """A body over a 2x4 mesh ('i', 'j') that records the varying axes of its arguments and of each collective's
    result (in `seen`, by name)."""

    def record(name, value):
        seen[name] = frozenset(lib.typeof(value).manual_axis_type.varying)
        return value

    L, m = lib.lax, lib.np

    def f(x, w):
        record("x", x), record("w", w), record("x*w", x * w), record("w*2", w * 2)
        record("psum_i", L.psum(x * w, "i"))
        record("psum_ij_of_invariant", L.psum(w, ("i", "j")))
        record("pmax_j", L.pmax(x, "j"))
        record("pmin_of_invariant", L.pmin(w, "i"))
        record("all_gather_j", L.all_gather(x, "j"))
        record("all_gather_of_invariant", L.all_gather(w, "i"))
        record("axis_index_i", L.axis_index("i"))
        record("pcast_i", L.pcast(w, "i", to="varying"))
        record("pcast_ij", L.pcast(w, ("i", "j"), to="varying"))
        record("pcast_j_of_x_i", L.pcast(L.psum(x, "j"), "j", to="varying"))
        record("ppermute_i", L.ppermute(x, "i", [(0, 1), (1, 0)]))
        record("ppermute_of_invariant", L.ppermute(w, "j", [(k, (k + 1) % 4) for k in range(4)]))
        record("psum_scatter_of_invariant", L.psum_scatter(w, "j", tiled=True))
        record("psum_scatter_j", L.psum_scatter(x, "j", tiled=True))
        record("all_to_all_j", L.all_to_all(x, "j", 0, 0, tiled=True))
        record("sin_then_psum_j", L.psum(m.sin(x), "j"))
        record("where", m.where(w > 0, x, 0.0))
        record("jit_psum", lib.jit(lambda a: L.psum(a, "i"))(x))
        return L.psum(x * w, "i")

    return f


@pytest.mark.parametrize("check_vma", [True, False])
def test_the_types_of_arguments_and_collectives_match_jax(check_vma):
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    w = np.ones((4, 4), np.float32)
    seen = []
    for lib, mesh in zip(BOTH, meshes((2, 4))):
        seen.append({})
        f = lib.shard_map(_typed_values(lib, seen[-1]), mesh=mesh, in_specs=(lib.P("i", "j"), lib.P()),
                          out_specs=lib.P(None, "j"), check_vma=check_vma)
        (jax.eval_shape(f, x, w) if lib is THEIRS else f(x, w))  # (jax: the types are seen when it traces f)
    assert seen[0] == seen[1]
    if check_vma:
        assert seen[0]["x"] == {"i", "j"} and seen[0]["psum_i"] == {"j"} and seen[0]["axis_index_i"] == {"i"}
    else:
        assert all(not axes for axes in seen[0].values())


def test_vma_is_the_varying_axes_and_shows_in_the_type():
    seen = {}

    def f(x):
        seen["type"], seen["vma"] = numax.typeof(x), numax.typeof(x).vma
        return x

    numax.shard_map(f, mesh=meshes((2, 4))[0], in_specs=P("i", "j"), out_specs=P("i", "j"))(np.zeros((4, 8)))
    assert seen["vma"] == seen["type"].manual_axis_type.varying == {"i", "j"}
    assert str(seen["type"]) == "f32[2,2]{V:(i,j)}"
    # The same set object on both sides: a frozenset's print order depends on the hash seed.
    varying = seen["type"].manual_axis_type.varying
    assert repr(seen["type"].manual_axis_type) == repr(
        jax.core.ShapedArray((2,), np.float32).manual_axis_type.update(varying=varying))
    assert numax.typeof(mnp.ones(3)).vma == frozenset()


def test_avals_that_differ_only_in_their_varying_axes_are_different_types():
    plain = ShapedArray((2,), np.float32)
    varying = ShapedArray((2,), np.float32, vma=frozenset({"i"}))
    assert plain != varying and plain == ShapedArray((2,), np.float32)
    assert hash(varying) == hash(ShapedArray((2,), np.float32, vma=frozenset({"i"})))
    assert varying.update(shape=(3,)).vma == {"i"} and varying.update(vma=frozenset()) == plain.update(shape=(2,))
    assert varying.strip_weak_type() is varying


def _body_text(program_text):
    """The equations of the shard_map body in a printed jaxpr, names of variables dropped."""
    return sorted(re.sub(r"\b[a-z]+:", ":", line.strip()) for line in program_text.splitlines()
                  if "pvary" in line or " = mul " in line or " = pmax" in line or "all_gather" in line)


@pytest.mark.parametrize("body", ["mul", "pmax", "all_gather"])
def test_pvary_is_staged_before_a_mixed_operation_as_jax_stages_it(body):
    bodies = {"mul": lambda L: lambda x, y: x * y,
              "pmax": lambda L: lambda x, y: L.pmax(y, "i") * 0 + x,
              "all_gather": lambda L: lambda x, y: L.all_gather(y, "i").sum(0) + x}
    texts = []
    for lib, mesh in zip(BOTH, meshes((4,))):
        f = lib.shard_map(bodies[body](lib.lax), mesh=mesh, in_specs=(lib.P("i"), lib.P()), out_specs=lib.P("i"))
        texts.append(str(lib.make_jaxpr(f)(np.arange(8.0, dtype=np.float32), np.arange(2.0, dtype=np.float32))))
    assert "pvary[axes=('i',)]" in texts[0]
    pvary_lines = [[line for line in _body_text(text) if "pvary" in line] for text in texts]
    assert pvary_lines[0] == pvary_lines[1]


def test_no_pvary_with_check_vma_false():
    f = numax.shard_map(lambda x, y: x * y, mesh=meshes((4,))[0], in_specs=(P("i"), P()), out_specs=P("i"),
                        check_vma=False)
    assert "pvary" not in str(numax.make_jaxpr(f)(np.arange(8.0), np.arange(2.0)))


# --- pcast --------------------------------------------------------------------------------------------------------
def _pcast_cases(L):
    return {
        "set_of_names": lambda x: L.pcast(x, {"i"}, to="varying"),
        "bad_to": lambda x: L.pcast(x, "i", to="invariant"),
        "already_varying": lambda x: L.pcast(L.pcast(x, "i", to="varying"), "i", to="varying"),
        "partly_varying": lambda x: L.pcast(L.pcast(x, "i", to="varying"), ("i", "j"), to="varying"),
        "empty_axes": lambda x: L.pcast(x, (), to="varying"),
        "fine": lambda x: L.pcast(x, ("i", "j"), to="varying"),
    }


@pytest.mark.parametrize("case", list(_pcast_cases(lax)))
def test_pcast_errors_have_jax_exception_types(case):
    outcomes = []
    for lib, mesh in zip(BOTH, meshes((2, 4))):
        body = _pcast_cases(lib.lax)[case]
        f = lib.shard_map(lambda x: (body(x), x)[1], mesh=mesh, in_specs=lib.P(), out_specs=lib.P())
        # (jax raises its errors when it traces f)
        outcomes.append(_outcome(lambda: jax.eval_shape(f, np.arange(8.0)) if lib is THEIRS else f(np.arange(8.0))))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] is None) == (case in ("fine", "empty_axes"))


def test_pcast_under_vmap_is_an_error_as_in_jax():
    x = np.arange(3.0, dtype=np.float32)
    with pytest.raises(ValueError, match="under jax.shard_map"):
        jax.vmap(lambda a: jax.lax.pcast(a, "b", to="varying"), axis_name="b")(x)
    with pytest.raises(ValueError, match="under numax.shard_map"):
        numax.vmap(lambda a: lax.pcast(a, "b", to="varying"), axis_name="b")(x)


def test_pvary_is_pcast_to_varying():
    seen = []

    def f(x):
        seen.append(numax.typeof(lax.pvary(x, "i")).manual_axis_type.varying)
        return lax.pvary(x, "i")

    out = numax.shard_map(f, mesh=meshes((4,))[0], in_specs=P(), out_specs=P("i"))(np.arange(8.0))
    np.testing.assert_array_equal(np.asarray(out), np.tile(np.arange(8.0), 4))
    assert seen == [{"i"}]


def test_grad_through_pcast_sums_over_the_devices():
    # (jax's test_pvary)
    def run(lib, mesh):
        f = lib.shard_map(lambda x: lib.lax.pcast(x, "i", to="varying"), mesh=mesh, in_specs=lib.P(),
                          out_specs=lib.P("i"))
        return lambda x: (f(x), lib.grad(lambda x: f(x).sum())(x))

    ours, theirs = (run(lib, mesh) for lib, mesh in zip(BOTH, meshes((4,))))
    _close(ours(np.arange(8.0)), jax.jit(theirs)(np.arange(8.0)))


# --- out_specs that promise replication -------------------------------------------------------------------------
def _message(error):
    """The error's text, the function's name dropped (jax names an internal wrapper of it)."""
    return re.sub(r"the function '[^']*'", "the function", str(error).replace("jax.shard_map", "numax.shard_map"))


@pytest.mark.parametrize("case", ["three_axes", "one_axis", "tuple_of_outputs"])
def test_out_specs_error_is_jaxs(case):
    shapes = {"three_axes": (2, 2, 2), "one_axis": (4,), "tuple_of_outputs": (2, 4)}
    x = np.arange(16, dtype=np.float32).reshape((4, 2, 2) if case == "three_axes" else (8, 2))
    messages = []
    for lib, mesh in zip(BOTH, meshes(shapes[case])):
        S, shard_map = lib.P, lib.shard_map

        def body(a):
            return a * 2

        def pair(a):
            return a, a * 2

        run = {"three_axes": lambda: shard_map(body, mesh=mesh, in_specs=S("i", "j", "k"), out_specs=S("i"))(x),
               "one_axis": lambda: shard_map(body, mesh=mesh, in_specs=S("i"), out_specs=S())(x),
               "tuple_of_outputs": lambda: shard_map(pair, mesh=mesh, in_specs=S("i", None),
                                                     out_specs=(S("i"), S()))(x)}[case]
        with pytest.raises(ValueError) as error:
            run()
        messages.append(_message(error.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("jit", [False, True])
def test_replication_checker_eager_and_jit(jit):
    # (jax's test_replication_checker_eager / _jit)
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    results = []
    for lib, mesh in zip(BOTH, meshes((2, 2))):
        S = lib.P
        wrap = lib.jit if jit else (lambda f: f)
        with pytest.raises(ValueError, match="statically inferred"):
            wrap(lib.shard_map(lambda a: a * 2, mesh=mesh, in_specs=S("i", "j"), out_specs=S(None, "j")))(x)
        results.append(wrap(lib.shard_map(lambda a: lib.lax.psum(a, "i"), mesh=mesh, in_specs=S("i", "j"),
                                          out_specs=S(None, "j")))(x))
    _close(*results)


def test_repeated_psum_is_allowed():
    _close(*_both(lambda lib: lambda a: lib.lax.psum(lib.lax.psum(a, "i"), "i"), (4,), lambda S: S("i"),
                  lambda S: S(), np.arange(4.0, dtype=np.float32)))


# --- control flow: the outputs' types, and carries / branches whose types differ ---------------------------------
def _control_flow_cases(lib):
    L, m = lib.lax, lib.np

    def scan_rotate(x, y, z):
        x, y, z = x.sum(), y.sum(), z.sum()

        def body(c, _):
            c, *cs = c
            return (*cs, c), None

        x = L.pcast(x, ("i", "j"), to="varying")
        y = L.pcast(y, "j", to="varying")
        out, _ = L.scan(body, (x, y, z), None, length=3)
        return [m.expand_dims(a, 0) for a in out]

    def scan_keep(x, y, z):
        x, y, z = x.sum(), y.sum(), z.sum()
        out, _ = L.scan(lambda c, _: (c, None), (x, y, z), None, length=1)
        return [m.expand_dims(a, 0) for a in out]

    def while_rotate(x, y, z):
        x, y, z = x.sum(), y.sum(), z.sum()
        x = L.pcast(x, ("i", "j"), to="varying")
        y = L.pcast(y, "j", to="varying")
        _, *out = L.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, *c[2:], c[1]), (0, x, y, z))
        return [m.expand_dims(a, 0) for a in out]

    def while_keep(x, y, z):
        x, y, z = x.sum(), y.sum(), z.sum()
        _, *out = L.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, *c[1:]), (0, x, y, z))
        return [m.expand_dims(a, 0) for a in out]

    def cond_same(x, y):
        return L.cond(True, lambda x, y: x, lambda x, y: x + 1, x, y)

    def cond_pcast(x, y):
        return L.cond(True, lambda x, y: L.pcast(x, "j", to="varying"), lambda x, y: L.pcast(y, "i", to="varying"),
                      x, y)

    def cond_varying_predicate(x, y):
        return L.cond(m.any(x > 0), lambda x, y: x, lambda x, y: x + 1, x, y)

    def cond_predicate_on_y(x, y):
        return L.cond(m.any(y > 0), lambda x, y: x, lambda x, y: x + 1, x, y)

    def switch(n, x, y):
        return L.switch(n, [lambda x, _: x, lambda x, _: x + 1, lambda x, _: x + 2], x, y)

    three = (lambda S: (S(None), S("i"), S(("i", "j"))))
    two = (lambda S: (S("i"), S("j")))
    return {
        "scan_all_varying": (scan_rotate, three, lambda S: S(("i", "j"))),
        "scan_promises_i": (scan_rotate, three, lambda S: S("i")),
        "scan_promises_j": (scan_rotate, three, lambda S: S("j")),
        "scan_promises_all": (scan_rotate, three, lambda S: S(None)),
        "scan_keep_matches": (scan_keep, three, lambda S: [S(None), S("i"), S(("i", "j"))]),
        "scan_keep_second_wrong": (scan_keep, three, lambda S: [S(None), S(None), S(("i", "j"))]),
        "while_all_varying": (while_rotate, three, lambda S: S(("i", "j"))),
        "while_promises_i": (while_rotate, three, lambda S: S("i")),
        "while_promises_all": (while_rotate, three, lambda S: S(None)),
        "while_keep_matches": (while_keep, three, lambda S: [S(None), S("i"), S(("i", "j"))]),
        "while_keep_second_wrong": (while_keep, three, lambda S: [S(None), S(None), S(("i", "j"))]),
        "cond_same_i": (cond_same, two, lambda S: S("i")),
        "cond_same_none": (cond_same, two, lambda S: S(None)),
        "cond_pcast_ij": (cond_pcast, two, lambda S: S(("i", "j"))),
        "cond_pcast_i": (cond_pcast, two, lambda S: S("i")),
        "cond_varying_predicate_i": (cond_varying_predicate, two, lambda S: S("i")),
        "cond_varying_predicate_none": (cond_varying_predicate, two, lambda S: S(None)),
        "cond_predicate_on_y_ij": (cond_predicate_on_y, two, lambda S: S(("i", "j"))),
        "cond_predicate_on_y_i": (cond_predicate_on_y, two, lambda S: S("i")),
        "switch": (switch, lambda S: (S(), S("i"), S("j")), lambda S: S("i")),
    }


def _control_flow_run(lib, case):
    """(the shard_map of a control-flow case, its arguments)."""
    fun, in_specs, out_specs = _control_flow_cases(lib)[case]
    x = np.arange(4, dtype=np.int32)
    args = (1, x, x) if case == "switch" else (x,) * (len(in_specs(lib.P)))
    return lib.shard_map(fun, mesh=meshes((2, 2))[BOTH.index(lib)], in_specs=in_specs(lib.P),
                         out_specs=out_specs(lib.P)), args


def _run_or_required_replication(f, *args):
    """f(*args), or ValueError where it raises shard_map's error for out_specs that require replication."""
    try:
        return f(*args)
    except ValueError as error:
        assert "require replication" in str(error)
        return ValueError


@functools.cache
def _their_control_flow_results():
    """{case: jax's result, or ValueError}: jax raises its error when it traces the shard_map, and the results of
    the cases that pass come from one jax program."""
    runs = {case: _control_flow_run(THEIRS, case) for case in _control_flow_cases(THEIRS)}
    errors = {case: _run_or_required_replication(jax.eval_shape, f, *args) for case, (f, args) in runs.items()}
    passing = [case for case in runs if errors[case] is not ValueError]
    results = jit_table(passing, [runs[case][0] for case in passing], [runs[case][1] for case in passing])
    return {case: results.get(case, ValueError) for case in runs}


@pytest.mark.parametrize("case", list(_control_flow_cases(OURS)))
def test_control_flow_types_check_out_specs_as_jax_does(case):
    # (jax's test_scan_rep_rule, test_while_rep_rule, test_cond_rep_rule, test_switch_rep_rule)
    f, args = _control_flow_run(OURS, case)
    ours = _run_or_required_replication(f, *args)
    theirs = _their_control_flow_results()[case]
    if theirs is ValueError:
        assert ours is ValueError
    else:
        _close(ours, theirs)


def _carry_cases(L):
    def scan_swap(x, y):
        (a, b), _ = L.scan(lambda c, _: ((c[1], c[0]), ()), (x, y), (), length=2)
        return a, b

    def scan_swap_fixed(x, y):
        return scan_swap(x, L.pcast(y, "i", to="varying"))

    def while_swap(x, y):
        return L.while_loop(lambda c: c[2] < 3, lambda c: (c[1], c[0], c[2] + 1), (x, y, 0))[:2]

    def fori_accumulate(x, y):
        return L.fori_loop(0, 3, lambda i, c: c + x, y)

    def cond_branches(x, y):
        return L.cond(True, lambda: x, lambda: y)

    def cond_pytree(x, y):
        return L.cond(True, lambda x, y: (x, y), lambda x, y: (y, x), x, y)

    return {"scan": scan_swap, "scan_fixed": scan_swap_fixed, "while": while_swap, "fori": fori_accumulate,
            "cond": cond_branches, "cond_pytree": cond_pytree}


@pytest.mark.parametrize("case", list(_carry_cases(lax)))
def test_carries_and_branches_whose_types_differ_raise_jaxs_type_error(case):
    # (jax's test_scan_pvary_errors, test_cond_pvary_errors, and the tutorial's scan cells)
    x, y = np.arange(4.0, dtype=np.float32), np.arange(2.0, dtype=np.float32)
    errors = []
    for lib, mesh in zip(BOTH, meshes((2,))):
        fun = _carry_cases(lib.lax)[case]
        try:
            f = lib.shard_map(fun, mesh=mesh, in_specs=(lib.P("i"), lib.P()), out_specs=lib.P("i"))
            errors.append((jax.jit(f) if lib is THEIRS else f)(x, y))  # (jax raises when it traces f)
        except TypeError as error:
            errors.append(str(error))
    if case == "scan_fixed":
        _close(errors[0], errors[1])
        return
    ours, theirs = errors
    assert isinstance(ours, str) and isinstance(theirs, str), errors
    assert "so the manual axis types do not match" in ours
    headline = theirs.split(":")[0].split(".")[0]
    assert ours.startswith(headline)
    if case.startswith("cond"):
        assert "This might be fixed by applying `numax.lax.pcast(..., ('i',), to='varying')` to the output of" in ours
    else:
        assert ("This might be fixed by applying `numax.lax.pcast(..., ('i',), to='varying')`, to the initial carry "
                "value corresponding to the input carry component") in ours


# --- gradients --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("check_vma", [True, False])
def test_grad_inside_the_body_with_respect_to_an_invariant_value_matches_jax(check_vma):
    def make(lib):
        def f(x, w):
            g = lib.grad(lambda w: (lib.np.sin(w * x)).sum())(w)
            return g, lib.grad(lambda x: (w * x).sum())(x)

        return f

    x, w = np.arange(8.0, dtype=np.float32) / 3, np.float32(0.5)
    _close(*_both(make, (4,), lambda S: (S("i"), S()), lambda S: (S(), S("i")), x, w, check_vma=check_vma))


def test_data_parallel_step_with_check_vma_sums_the_gradients_as_jax_does():
    rng = np.random.default_rng(0)
    params = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    xs, ys = rng.normal(size=(16, 3)).astype(np.float32), rng.normal(size=(16, 2)).astype(np.float32)
    steps = [lib.jit(lib.shard_map(data_parallel_step(lib.lax, lib.np, lib.grad, "i"), mesh=mesh,
                                   in_specs=(lib.P(), lib.P("i"), lib.P("i")), out_specs=lib.P()))
             for lib, mesh in zip(BOTH, meshes((8,)))]
    ours, theirs = steps[0](params, xs, ys), steps[1](params, xs, ys)
    _close(ours, theirs, rtol=1e-5, atol=1e-6)


def _grad_cases():
    """(body, in_specs, out_specs, mesh shape): a few of jax's systematic test_grads programs."""
    return {
        "mul_invariant_weight": (lambda L, m: lambda x, w: m.sin(x * w), lambda S: (S("i", "j"), S()),
                                 lambda S: S("i", "j"), (2, 4)),
        "psum_to_invariant": (lambda L, m: lambda x, w: L.psum(m.tanh(x) * w, "i"), lambda S: (S("i", "j"), S()),
                              lambda S: S(None, "j"), (2, 4)),
        "matmul_fsdp": (lambda L, m: lambda x, w: L.psum(x @ L.all_gather(w, "j", tiled=True), "j"),
                        lambda S: (S("i", None), S("j")), lambda S: S("i"), (2, 4)),
        "pmean_loss": (lambda L, m: lambda x, w: L.pmean(((x * w) ** 2).sum(), ("i", "j")),
                       lambda S: (S("i", "j"), S()), lambda S: S(), (2, 4)),
        "ppermute": (lambda L, m: lambda x, w: L.ppermute(x * w, "i", [(k, (k + 1) % 8) for k in range(8)]),
                     lambda S: (S("i"), S()), lambda S: S("i"), (8,)),
    }


def _grad_inputs(case):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 8)).astype(np.float32)
    w = rng.normal(size=(8, 8) if case == "matmul_fsdp" else (8,) if case == "ppermute" else ()).astype(np.float32)
    return (x[:, 0] if case == "ppermute" else x), w


def _grad_of_shard_map(lib, case, check_vma, jit):
    """The gradient function of a case: of (f(x, w) ** 2).sum() / 7, f the case's shard_map (jitted if `jit`)."""
    body, in_specs, out_specs, shape = _grad_cases()[case]
    f = lib.shard_map(body(lib.lax, lib.np), mesh=meshes(shape)[BOTH.index(lib)], in_specs=in_specs(lib.P),
                      out_specs=out_specs(lib.P), check_vma=check_vma)
    f = lib.jit(f) if jit else f
    return lib.grad(lambda x, w: (f(x, w) ** 2).sum() / 7, argnums=(0, 1))


@functools.cache
def _their_grads_of_shard_map(check_vma):
    """{case: jax's gradients}, from one jax program for all the cases."""
    cases = list(_grad_cases())
    return jit_table(cases, [_grad_of_shard_map(THEIRS, case, check_vma, jit=False) for case in cases],
                     [_grad_inputs(case) for case in cases])


@pytest.mark.parametrize("check_vma", [True, False])
@pytest.mark.parametrize("case, jit", [(case, True) for case in _grad_cases()] + [("mul_invariant_weight", False)])
def test_grad_of_shard_map_matches_jax(case, jit, check_vma):
    ours = _grad_of_shard_map(OURS, case, check_vma, jit)(*_grad_inputs(case))
    _close(ours, _their_grads_of_shard_map(check_vma)[case], rtol=1e-4, atol=1e-5)


def test_value_and_grad_inside_the_body():
    # (jax's test_pvary_in_shmap_of_grad)
    def make(lib):
        def f(x):
            val, g = lib.value_and_grad(lambda x: lib.np.mean(x ** 2))(x)
            return lib.np.atleast_1d(val), lib.np.atleast_1d(g)

        return f

    _close(*_both(make, (2,), lambda S: S("i"), lambda S: S("i"), np.ones(2, np.float32)))


def test_jacrev_inside_the_body_keeps_each_output_varying_over_its_own_axis():
    # (jax's test_jacrev_explicit_complex, on an Auto mesh)
    rng = np.random.default_rng(3)
    w, x, y = (rng.normal(size=shape).astype(np.float32) for shape in ((6, 8), (20, 6), (20, 6)))
    seen = []

    def make(lib):
        def f(w, xs):
            return [lib.np.sum(z @ w, axis=-1) for z in xs]

        def g(w, x, y):
            ret = lib.jacrev(f, argnums=1)(w, (x, y))
            seen.append([frozenset(lib.typeof(r).manual_axis_type.varying) for row in ret for r in row])
            return ret[0][0], ret[0][1], ret[1][0], ret[1][1]

        return g

    results = [lib.jit(lib.shard_map(make(lib), mesh=mesh, in_specs=(lib.P(), lib.P("i"), lib.P("j")),
                                     out_specs=(lib.P("i"), lib.P("j"), lib.P("i"), lib.P("j"))))(w, x, y)
               for lib, mesh in zip(BOTH, meshes((2, 2)))]
    assert seen[0] == seen[1] == [{"i"}, {"j"}, {"i"}, {"j"}]
    _close(*results, rtol=1e-5, atol=1e-5)


def test_vmap_inside_the_body_and_of_the_shard_map():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    w = np.arange(8, dtype=np.float32)

    def make(lib):
        return lambda x, w: lib.lax.psum(lib.vmap(lambda row: row * w)(x), "i")

    _close(*_both(make, (8,), lambda S: (S(None, "i"), S("i")), lambda S: S(), x, w))
    outer = [(jax.jit if lib is THEIRS else _plain)(lib.vmap(
        lib.shard_map(lambda a, b: a * b, mesh=mesh, in_specs=(lib.P("i"), lib.P()), out_specs=lib.P("i")),
        in_axes=(0, None)))(x, w[:1]) for lib, mesh in zip(BOTH, meshes((8,)))]
    _close(*outer)


def _control_flow_losses(lib):
    """Losses of (x varying, w invariant) through control flow, remat and custom_jvp."""
    L, m = lib.lax, lib.np

    def varying_zero(x):
        return L.pcast(m.zeros((), x.dtype), "i", to="varying")

    @lib.custom_jvp
    def scaled(x, w):
        return x * w

    scaled.defjvp(lambda p, t: (scaled(*p), t[0] * p[1] + p[0] * t[1]))
    return {
        "scan": lambda x, w: L.scan(lambda c, xi: (c * w + m.sin(xi).sum(), None), varying_zero(x), x)[0],
        "cond": lambda x, w: L.cond(w > 0, lambda: (x * w).sum(), lambda: (x / w).sum()),
        "fori": lambda x, w: L.fori_loop(0, 3, lambda i, c: c + (x * w).sum(), varying_zero(x)),
        "remat": lambda x, w: lib.checkpoint(lambda x, w: m.sin(x * w).sum())(x, w),
        "custom_jvp": lambda x, w: scaled(x, w).sum(),
    }


def _control_flow_grads(lib, case):
    """A function of (x, w): (the gradient inside the body with respect to w, the gradient of the psum'd loss
    outside it with respect to (x, w)), for a loss of `_control_flow_losses`."""
    loss, mesh = _control_flow_losses(lib)[case], meshes((4,))[BOTH.index(lib)]
    inside = lib.shard_map(lambda x, w: lib.np.atleast_1d(lib.grad(loss, argnums=1)(x, w)), mesh=mesh,
                           in_specs=(lib.P("i"), lib.P()), out_specs=lib.P())
    total = lib.shard_map(lambda x, w: lib.lax.psum(loss(x, w), "i"), mesh=mesh, in_specs=(lib.P("i"), lib.P()),
                          out_specs=lib.P())
    return lambda x, w: (inside(x, w), lib.grad(total, argnums=(0, 1))(x, w))


def _control_flow_inputs():
    return np.linspace(-1, 1, 16).astype(np.float32).reshape(8, 2), np.float32(0.7)


@functools.cache
def _their_control_flow_grads():
    """{case: jax's (inside, outside) gradients}, from one jax program for all the cases."""
    cases = list(_control_flow_losses(THEIRS))
    return jit_table(cases, [_control_flow_grads(THEIRS, case) for case in cases], [_control_flow_inputs()] * 5)


@pytest.mark.parametrize("case", ["scan", "cond", "fori", "remat", "custom_jvp"])
def test_grads_through_control_flow_inside_and_outside_the_body_match_jax(case):
    inside, outside = _control_flow_grads(OURS, case)(*_control_flow_inputs())
    their_inside, their_outside = _their_control_flow_grads()[case]
    _close(inside, their_inside, atol=1e-5)
    _close(outside, their_outside, rtol=1e-4, atol=1e-5)
