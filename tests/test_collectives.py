"""Collectives over vmap axis names (psum, pmean, pmax, pmin, all_gather, psum_scatter, axis_index)
against jax.vmap of the same jax.lax code."""

import numpy as np
import pytest
from harness import assert_close, jax
from numax.core import dtypes

import numax
from numax import lax

jlax = jax.lax


def both(f_numax, f_jax, *args, **vmap_kwargs):
    """numax.vmap(f_numax) and jax.vmap(f_jax) on the same arguments, eagerly and under jit."""
    ours = numax.vmap(f_numax, **vmap_kwargs)
    theirs = jax.vmap(f_jax, **vmap_kwargs)
    expected = theirs(*args)
    for result in (ours(*args), numax.jit(ours)(*args)):
        np.testing.assert_equal(jax.tree_util.tree_structure(result).num_leaves,
                                jax.tree_util.tree_structure(expected).num_leaves)
        for a, b in zip(jax.tree_util.tree_leaves(result), jax.tree_util.tree_leaves(expected)):
            assert_close(a, b)
            assert a.weak_type == b.weak_type
    return expected


REDUCTIONS = [(lax.psum, jlax.psum), (lax.pmean, jlax.pmean), (lax.pmax, jlax.pmax), (lax.pmin, jlax.pmin)]


@pytest.mark.parametrize("ours,theirs", REDUCTIONS, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_reductions_match_jax(rng, ours, theirs, in_axes):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    both(lambda v: ours(v, "i"), lambda v: theirs(v, "i"), x, in_axes=in_axes, axis_name="i")


@pytest.mark.parametrize("ours,theirs", REDUCTIONS, ids=lambda f: getattr(f, "__name__", ""))
def test_reductions_of_pytrees_and_unbatched_leaves(rng, ours, theirs):
    x = rng.standard_normal((5, 2)).astype(np.float32)
    y = rng.standard_normal((3,)).astype(np.float32)

    def make(op):
        return lambda a, b: op({"a": a, "b": (b, 2.0 * b)}, "i")

    both(make(ours), make(theirs), x, y, in_axes=(0, None), axis_name="i")


def test_psum_of_constants_is_the_axis_size():
    xs = np.arange(4.0, dtype=np.float32)
    out = both(lambda x: lax.psum(1.0, "i"), lambda x: jlax.psum(1.0, "i"), xs, axis_name="i")
    np.testing.assert_array_equal(out, [4.0] * 4)
    both(lambda x: lax.psum(1, "i"), lambda x: jlax.psum(1, "i"), xs, axis_name="i")
    both(lambda x: lax.psum(True, "i"), lambda x: jlax.psum(True, "i"), xs, axis_name="i")
    both(lambda x: lax.pmean(2, "i"), lambda x: jlax.pmean(2, "i"), xs, axis_name="i")


@pytest.mark.parametrize("value", [2.0, 2, np.float32(2.5), np.int8(3), np.ones((2,), dtypes.bfloat16), True],
                         ids=repr)
@pytest.mark.parametrize("ours,theirs", REDUCTIONS + [(lax.all_gather, jlax.all_gather)],
                         ids=lambda f: getattr(f, "__name__", ""))
def test_unbatched_operands_keep_dtype_and_weak_type(value, ours, theirs):
    if value is True and ours in (lax.pmax, lax.pmin):
        return  # jax rejects booleans in pmax/pmin
    both(lambda v: ours(value, "i"), lambda v: theirs(value, "i"), np.zeros(3, np.float32), axis_name="i")


def test_integer_operands(rng):
    x = rng.integers(-5, 5, (4, 3)).astype(np.int32)
    for ours, theirs in REDUCTIONS:
        both(lambda v: ours(v, "i"), lambda v: theirs(v, "i"), x, axis_name="i")


def test_closed_over_value():
    xs = np.arange(3.0, dtype=np.float32)
    w = np.float32(2.5)
    both(lambda x: x + lax.psum(w, "i"), lambda x: x + jlax.psum(w, "i"), xs, axis_name="i")


def test_nested_vmaps_and_tuples_of_names(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)

    def nest(vmap, op, names):
        return vmap(vmap(lambda v: op(v, names), axis_name="j", in_axes=1), axis_name="i")

    for ours, theirs in REDUCTIONS:
        for names in ["i", "j", ("i", "j"), ("j", "i")]:
            assert_close(nest(numax.vmap, ours, names)(x), nest(jax.vmap, theirs, names)(x))


def test_psum_over_outer_axis_of_value_batched_by_inner_only(rng):
    x = rng.standard_normal((3,)).astype(np.float32)
    y = rng.standard_normal((2,)).astype(np.float32)

    def make(vmap, psum):
        inner = vmap(lambda a, b: psum(a * b, "i"), in_axes=(0, None), axis_name="j")
        return vmap(lambda b: inner(x, b), axis_name="i")

    assert_close(make(numax.vmap, lax.psum)(y), make(jax.vmap, jlax.psum)(y))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("in_axes", [0, 2])
def test_all_gather(rng, axis, tiled, in_axes):
    if tiled and axis == 2:
        return  # rank-2 examples have no tiled axis 2
    x = rng.standard_normal((3, 2, 4) if in_axes == 0 else (2, 4, 3)).astype(np.float32)
    both(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled),
         lambda v: jlax.all_gather(v, "i", axis=axis, tiled=tiled), x, in_axes=in_axes, axis_name="i")


def test_all_gather_of_unbatched_and_pytree(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    y = rng.standard_normal((2,)).astype(np.float32)
    both(lambda a, b: lax.all_gather((a, b), "i"), lambda a, b: jlax.all_gather((a, b), "i"), x, y,
         in_axes=(0, None), axis_name="i")


def test_all_gather_over_outer_axis_inside_inner_vmap(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)

    def make(vmap, all_gather):
        return vmap(vmap(lambda v: all_gather(v, "i", axis=1), axis_name="j", in_axes=1), axis_name="i")

    assert_close(make(numax.vmap, lax.all_gather)(x), make(jax.vmap, jlax.all_gather)(x))


@pytest.mark.parametrize("dim,tiled,shape", [(0, True, (3, 6)), (0, False, (3, 3, 2)), (1, False, (3, 2, 3)),
                                              (1, True, (3, 2, 6))])
def test_psum_scatter(rng, dim, tiled, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    both(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled),
         lambda v: jlax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled), x, axis_name="i")


def test_psum_scatter_size_mismatch():
    with pytest.raises(ValueError, match="multiple of the size 3"):
        numax.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(np.ones((3, 4), np.float32))


def test_axis_index():
    x = np.zeros((5, 2), np.float32)
    out = both(lambda v: lax.axis_index("i"), lambda v: jlax.axis_index("i"), x, axis_name="i")
    assert out.dtype == np.int32
    nested = numax.vmap(numax.vmap(lambda v: lax.axis_index("i") * 10 + lax.axis_index("j"), axis_name="j"),
                        axis_name="i")(np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(nested, [[0, 1, 2], [10, 11, 12]])


def test_vmap_of_jit_and_jit_of_vmap(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    expected = jax.vmap(lambda v: v - jlax.pmean(v, "i"), axis_name="i")(x)
    assert_close(numax.vmap(numax.jit(lambda v: v - lax.pmean(v, "i")), axis_name="i")(x), expected)
    assert_close(numax.jit(numax.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i"))(x), expected)


def test_batched_psum_is_one_reduction():
    program = numax.make_jaxpr(numax.vmap(lambda v: lax.psum(v, "i"), axis_name="i"))(np.ones((4, 3), np.float32))
    text = str(program)
    assert text.count("reduce_sum") == 1 and "psum" not in text


@pytest.mark.parametrize("name,f", [
    ("psum_square", lambda L: lambda x: L.psum(x * x, "i").sum()),
    ("pmean_sin", lambda L: lambda x: (L.pmean(x, "i") * x).sum()),
    ("psum_plain", lambda L: lambda x: L.psum(x, "i").sum()),
    ("all_gather", lambda L: lambda x: (L.all_gather(x, "i") * np.arange(1.0, 4.0, dtype=np.float32)[:, None]).sum()),
    ("all_gather_tiled", lambda L: lambda x: (L.all_gather(x, "i", tiled=True) ** 2).sum()),
    ("psum_scatter", lambda L: lambda x: (L.psum_scatter(x, "i", tiled=True) ** 2).sum()),
])
def test_per_example_gradients_match_jax(rng, name, f):
    x = rng.standard_normal((3, 6)).astype(np.float32)
    expected = jax.vmap(jax.grad(f(jlax)), axis_name="i")(x)
    assert_close(numax.vmap(numax.grad(f(lax)), axis_name="i")(x), expected, scale=10)
    assert_close(numax.jit(numax.vmap(numax.grad(f(lax)), axis_name="i"))(x), expected, scale=10)
    # grad of the vmapped function: the vmap is inside the differentiation.
    total = lambda vmap, L: lambda xs: vmap(f(L), axis_name="i")(xs).sum()  # noqa: E731
    assert_close(numax.grad(total(numax.vmap, lax))(x), jax.grad(total(jax.vmap, jlax))(x), scale=10)


def test_jvp_inside_vmap(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    t = rng.standard_normal((3, 2)).astype(np.float32)

    def make(L, jvp):
        return lambda a, b: jvp(lambda v: L.psum(v * v, "i"), (a,), (b,))

    expected = jax.vmap(make(jlax, jax.jvp), axis_name="i")(x, t)
    result = numax.vmap(make(lax, numax.jvp), axis_name="i")(x, t)
    for a, b in zip(result, expected):
        assert_close(a, b)


@pytest.mark.parametrize("op", [lax.pmax, lax.pmin])
def test_pmax_pmin_have_no_derivative_like_jax(op):
    with pytest.raises(NotImplementedError, match="differentiation rule for 'p"):
        numax.vmap(numax.grad(lambda x: op(x, "i")), axis_name="i")(np.ones(3, np.float32))


@pytest.mark.parametrize("collective", [
    lambda x: lax.psum(x, "j"), lambda x: lax.pmean(x, "j"), lambda x: lax.pmax(x, "j"),
    lambda x: lax.all_gather(x, "j"), lambda x: lax.axis_index("j"), lambda x: lax.psum(x, ("i", "j")),
])
def test_unbound_axis_name(collective):
    x = np.ones(3, np.float32)
    with pytest.raises(NameError, match=r"unbound axis name: j\. The following axis names .*available .*\['i'\]"):
        numax.vmap(collective, axis_name="i")(x)
    with pytest.raises(NameError, match=r"unbound axis name: [ij]\."):
        collective(x)
    with pytest.raises(NameError, match=r"unbound axis name: [ij]\."):
        numax.jit(collective)(x)


def test_unnamed_vmap_binds_no_name():
    with pytest.raises(NameError, match="unbound axis name: i"):
        numax.vmap(lambda x: lax.psum(x, "i"))(np.ones(3, np.float32))
    with pytest.raises(NameError, match="unbound axis name: None"):
        numax.vmap(lambda x: lax.psum(x, None))(np.ones(3, np.float32))


def test_collectives_inside_control_flow_under_vmap():
    x = np.arange(3, dtype=np.float32)

    def branchy(L):
        return lambda v: L.cond(v > 0.5, lambda a: L.psum(a, "i"), lambda a: a * 2.0, v)

    def looped(L):
        return lambda v: L.scan(lambda c, a: (c + L.psum(a * c, "i"), c), v, np.ones(2, np.float32))

    def constant_in_branch(L):
        return lambda v: L.cond(True, lambda a: L.psum(1.0, "i") + a, lambda a: a * 2.0, v)

    for make in (branchy, looped, constant_in_branch):
        expected = jax.vmap(make(jlax), axis_name="i")(x)
        for result in (numax.vmap(make(lax), axis_name="i")(x), numax.jit(numax.vmap(make(lax), axis_name="i"))(x)):
            for a, b in zip(jax.tree_util.tree_leaves(result), jax.tree_util.tree_leaves(expected)):
                assert_close(a, b)


def test_collectives_on_a_different_level_than_the_value_jvp_outside_vmap(rng):
    # jvp outside the vmap: the vmap sees jvp tracers and reduces them.
    x, t = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)

    def make(vmap, L, jvp):
        return lambda a, b: jvp(vmap(lambda v: L.pmean(v * v, "i") + L.all_gather(v, "i").sum(0), axis_name="i"),
                                (a,), (b,))

    for a, b in zip(make(numax.vmap, lax, numax.jvp)(x, t), make(jax.vmap, jlax, jax.jvp)(x, t)):
        assert_close(a, b)


def test_axis_size():
    x = np.ones((3, 2), np.float32)

    def make(vmap, L):
        return vmap(vmap(lambda v: (L.axis_size("i"), L.axis_size(("i", "j"))), axis_name="j"), axis_name="i")

    for a, b in zip(make(numax.vmap, lax)(x), make(jax.vmap, jlax)(x)):
        assert_close(a, b)
    with pytest.raises(NameError, match="unbound axis name: k"):
        numax.vmap(lambda v: lax.axis_size("k"), axis_name="i")(x)


def test_gradients_through_jit_and_second_order():
    x = np.arange(1, 4, dtype=np.float32)

    def f(L, jit):
        return lambda v: jit(lambda y: L.psum(y * y, "i") * y)(v)

    assert_close(numax.vmap(numax.grad(f(lax, numax.jit)), axis_name="i")(x),
                 jax.vmap(jax.grad(f(jlax, jax.jit)), axis_name="i")(x))

    def outside(vmap, L, jit, grad):
        return grad(lambda xs: vmap(f(L, jit), axis_name="i")(xs).sum())

    assert_close(outside(numax.vmap, lax, numax.jit, numax.grad)(x), outside(jax.vmap, jlax, jax.jit, jax.grad)(x))

    def second(vmap, L, grad):
        return vmap(grad(grad(lambda v: L.psum(v ** 3, "i"))), axis_name="i")

    assert_close(second(numax.vmap, lax, numax.grad)(x), second(jax.vmap, jlax, jax.grad)(x))


# Sub-programs whose operands the vmap does not batch, but whose collectives use its axis: the vmap must
# still process them (they were compiled alone before, reaching a collective outside any vmap).
UNBATCHED_OPERAND_PROGRAMS = {
    "jit_psum_of_constant": lambda api, L: lambda v: v + api.jit(lambda: L.psum(1.0, "i"))(),
    "jit_axis_index": lambda api, L: lambda v: v + api.jit(lambda y: y * L.axis_index("i"))(2.0),
    "jit_pmean": lambda api, L: lambda v: v + api.jit(lambda: L.pmean(np.float32(3.0), "i"))(),
    "cond_unbatched_predicate": lambda api, L: lambda v: v + L.cond(True, lambda: L.psum(2.0, "i"), lambda: 0.0),
    "scan_axis_index": lambda api, L: lambda v: v + L.scan(lambda c, _: (c + L.axis_index("i"), None), 0.0, None,
                                                           length=3)[0],
    "while_axis_index": lambda api, L: lambda v: v + L.while_loop(lambda c: c < 3 * L.axis_index("i"),
                                                                  lambda c: c + 1, 0),
    "grad_through_jit": lambda api, L: lambda v: v * api.grad(lambda w: api.jit(lambda w: L.psum(w * w, "i"))(w))(3.0),
    "jit_inside_inner_vmap": lambda api, L: lambda v: v + api.vmap(
        lambda u: u + api.jit(lambda: L.axis_index("i"))())(np.ones(2, np.int32)).sum(),
}


@pytest.mark.parametrize("name", sorted(UNBATCHED_OPERAND_PROGRAMS))
def test_programs_on_unbatched_operands_still_see_the_axis(name):
    make = UNBATCHED_OPERAND_PROGRAMS[name]
    x = np.arange(4.0, dtype=np.float32)
    both(make(numax, lax), make(jax, jlax), x, axis_name="i")


def test_programs_on_unbatched_operands_are_batched_once():
    """The jit holding the collective is batched (its program sees the axis), not compiled alone."""
    closed = numax.make_jaxpr(numax.vmap(lambda v: v + numax.jit(lambda y: y * lax.axis_index("i"))(2.0),
                                         axis_name="i"))(np.ones(4, np.float32))
    text = str(closed)
    assert "axis_index" not in text and "iota" in text  # axis_index became the axis' iota inside the jit
    assert text.count("jit[") == 1
