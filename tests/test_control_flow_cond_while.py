"""lax.cond, lax.switch, lax.while_loop and lax.fori_loop against jax: values, dtypes and weak types,
eager and jit, forward and reverse differentiation, vmap, error messages, the IR and eager caching."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given
from hypothesis import strategies as st
from numax.lax import conditionals
from numax.lowering import dispatch
from numax.transforms.vmap import vmap
from oracle import jit_all

import numax
import numax.numpy as nnp
from numax import lax
from numax.test_util import check_grads


def same(actual, expected, scale=1.0):
    """Trees equal in structure, values (to float32 tolerance), dtypes and weak types."""
    actual_leaves, actual_tree = numax.tree_util.tree_flatten(actual)
    expected_leaves, expected_tree = jax.tree_util.tree_flatten(expected)
    assert len(actual_leaves) == len(expected_leaves), (actual, expected)
    for a, e in zip(actual_leaves, expected_leaves):
        assert_close(a, e, scale=scale)
        assert getattr(a, "weak_type", False) == getattr(e, "weak_type", False), (a, e)


def equations(f, *args):
    return [eqn.primitive.name for eqn in numax.make_jaxpr(f)(*args).equations]


# --- cond -------------------------------------------------------------------------------------------------
def _cond_cases(lib, lax_module):
    np_ = lib
    return {
        "scalar": (lambda p, x: lax_module.cond(p, lambda x: np_.sin(x) * 2.0, lambda x: x + 1.0, x),
                   lambda rng: (rng.standard_normal(3).astype(np.float32),)),
        "pytree": (lambda p, x: lax_module.cond(p, lambda d: {"a": d["a"] * d["b"], "b": (d["b"], 1.0)},
                                                lambda d: {"a": d["a"] - 1.0, "b": (d["b"] * 2.0, 2.0)},
                                                {"a": x, "b": x[0]}),
                   lambda rng: (rng.standard_normal(2).astype(np.float32),)),
        "two_operands": (lambda p, x: lax_module.cond(p, lambda a, b: a * b, lambda a, b: a - b, x, x[::-1]),
                         lambda rng: (rng.standard_normal(4).astype(np.float32),)),
        "int_operand": (lambda p, x: lax_module.cond(p, lambda a, n: a * n, lambda a, n: a + n, x, 3),
                        lambda rng: (rng.standard_normal(2).astype(np.float32),)),
    }


@pytest.mark.parametrize("name", list(_cond_cases(jnp, jax.lax)))
@pytest.mark.parametrize("pred", [True, False])
def test_cond_matches_jax(rng, name, pred):
    f, make = _cond_cases(nnp, lax)[name]
    g, _ = _cond_cases(jnp, jax.lax)[name]
    args = make(rng)
    expected = g(pred, *args)
    same(f(pred, *args), expected)
    same(numax.jit(f)(pred, *args), jax.jit(g)(pred, *args))
    same(numax.jit(f)(np.bool_(pred), *args), expected)


def test_cond_predicate_kinds():
    for pred in [0, 1, 2, -1, 0.0, 0.5, np.int8(3), np.uint8(0), np.float32(0.0)]:
        f = lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0)  # noqa: E731
        g = lambda p: jax.lax.cond(p, lambda: 1.0, lambda: 2.0)  # noqa: E731
        same(f(pred), g(pred))
        same(numax.jit(f)(pred), jax.jit(g)(pred))


def test_cond_no_operands_and_operand_keyword():
    x = np.float32(2.0)
    same(lax.cond(True, lambda: x * 3, lambda: x), jax.lax.cond(True, lambda: x * 3, lambda: x))
    same(lax.cond(False, lambda v: v + 1, lambda v: v - 1, operand=x),
         jax.lax.cond(False, lambda v: v + 1, lambda v: v - 1, operand=x))
    # JAX's old form: cond(pred, true_operand, true_fun, false_operand, false_fun).
    for pred in (True, False):
        same(lax.cond(pred, x, lambda v: v * 2, 5.0, lambda v: v),
             jax.lax.cond(pred, x, lambda v: v * 2, 5.0, lambda v: v))
    # Outputs returned unchanged and constants.
    same(lax.cond(True, lambda a, b: (b, a, 7), lambda a, b: (a, b, 8), x, np.float32(1)),
         jax.lax.cond(True, lambda a, b: (b, a, 7), lambda a, b: (a, b, 8), x, np.float32(1)))


_argnums = [0, 1, (0, 1)]


def test_cond_closes_over_outer_values(rng):
    x = rng.standard_normal(3).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)

    def make(lax_module, np_):
        def f(x, y):
            big = np_.ones(100, np.float32)  # a captured array (becomes an operand)
            return lax_module.cond(x[0] > 0, lambda: x * y + big[:3], lambda: np_.cos(y) - x)
        return f

    for p in [x, -x]:
        # jax's value and gradients (the oracle): one jitted program, compiled once for both signs.
        expected_value, *expected_grads = jit_all(
            [make(jax.lax, jnp)] + [jax.grad(lambda a, b: make(jax.lax, jnp)(a, b).sum(), argnums)
                                    for argnums in _argnums], [(p, y)] * (1 + len(_argnums)))
        same(make(lax, nnp)(p, y), expected_value)
        same(numax.jit(make(lax, nnp))(p, y), expected_value)
        for argnums, expected in zip(_argnums, expected_grads):
            same(numax.grad(lambda a, b: make(lax, nnp)(a, b).sum(), argnums)(p, y), expected)


def test_cond_weak_types():
    for t, f in [(lambda: 1.0, lambda: 2.0), (lambda: 1.0, lambda: np.float32(2.0)), (lambda: 1, lambda: 2)]:
        for pred in (True, False):
            same(lax.cond(pred, t, f), jax.lax.cond(pred, t, f))
            same(numax.jit(lambda p: lax.cond(p, t, f))(pred), jax.jit(lambda p: jax.lax.cond(p, t, f))(pred))


def test_cond_ir_and_lowering():
    f = lambda p, x: lax.cond(p, lambda v: nnp.sin(v), lambda v: nnp.cos(v), x)  # noqa: E731
    assert equations(f, True, np.float32(1)) == ["convert_element_type", "cond"]
    text = str(numax.make_jaxpr(f)(True, np.float32(1)))
    assert "branches=(" in text and "sin" in text and "cos" in text
    lowered = numax.jit(f).lower(True, np.float32(1)).as_text()
    assert lowered.count('"stablehlo.case"') == 1
    assert lowered.count('"stablehlo.sine"') == 1 and lowered.count('"stablehlo.cosine"') == 1


# --- switch -----------------------------------------------------------------------------------------------
def _branches(np_):
    return [lambda x: np_.sin(x), lambda x: x * x, lambda x: np_.exp(x) - x, lambda x: x + 1.0]


_switch_indices = [-3, 0, 1, 2, 3, 4, 10]


@functools.cache
def _switch_expected():
    """{index: jax's (switch value, its gradient)} for every index, from one jitted program."""
    def expected(index):
        return lambda x: (jax.lax.switch(index, _branches(jnp), x),
                          jax.grad(lambda x: jax.lax.switch(index, _branches(jnp), x).sum())(x))

    x = np.linspace(-1, 1, 5).astype(np.float32)
    return dict(zip(_switch_indices, jit_all([expected(i) for i in _switch_indices], [(x,)] * len(_switch_indices))))


@pytest.mark.parametrize("index", _switch_indices)
def test_switch_matches_jax(index):
    x = np.linspace(-1, 1, 5).astype(np.float32)
    expected, expected_grad = _switch_expected()[index]
    same(lax.switch(index, _branches(nnp), x), expected)
    same(numax.jit(lambda i, x: lax.switch(i, _branches(nnp), x))(index, x), expected)
    same(numax.jit(lambda i, x: lax.switch(i, _branches(nnp), x))(np.int8(index), x), expected)
    same(numax.grad(lambda x: lax.switch(index, _branches(nnp), x).sum())(x), expected_grad)
    same(numax.jit(numax.grad(lambda x, i: lax.switch(i, _branches(nnp), x).sum()))(x, index), expected_grad)


def test_switch_single_branch_and_keyword():
    assert lax.switch(3, [lambda x: x + 1], 1.0) == 2.0
    assert equations(lambda i: lax.switch(i, [lambda: 1.0], ), 0) == []
    same(lax.switch(1, [lambda x: x, lambda x: x * 2], operand=np.float32(3)),
         jax.lax.switch(1, [lambda x: x, lambda x: x * 2], operand=np.float32(3)))


# --- cond/switch errors -----------------------------------------------------------------------------------
def test_cond_errors():
    with pytest.raises(TypeError, match="(?s)cond branches must have equal output types but they differ.*"
                       "The output of true_fun has type f32\\[3\\] but the corresponding output of false_fun has "
                       "type i32\\[3\\], so the dtypes do not match"):
        lax.cond(True, lambda: np.zeros(3, np.float32), lambda: np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="(?s)true_fun is <lambda> at .*test_control_flow.*the shapes do not match"):
        lax.cond(True, lambda: np.zeros(3, np.float32), lambda: np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="the output of true_fun at path \\[1\\] has type f32\\[\\]"):
        lax.cond(True, lambda: (1.0, 2.0, 3.0), lambda: (1.0, 2, 3))
    with pytest.raises(TypeError, match="cond branch outputs must have the same pytree structure"):
        lax.cond(True, lambda: (1.0, 2.0), lambda: [1.0, 2.0])
    with pytest.raises(TypeError, match="Pred must be a scalar, got .* of shape \\(2,\\)"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number, got complex64"):
        lax.cond(np.complex64(1), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="cond predicate is None"):
        lax.cond(None, lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
        lax.cond(True, 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="'operand' keyword is passed then no positional"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)
    with pytest.raises(TypeError, match="(?s)switch branches must have equal output types.*branch 0 .* branch 2"):
        lax.switch(0, [lambda: 1.0, lambda: 1.0, lambda: np.int32(1)])
    with pytest.raises(TypeError, match="Index type must be an integer, got 1.0 as float32"):
        lax.switch(np.float32(1.0), [lambda: 1.0, lambda: 2.0])
    with pytest.raises(TypeError, match="Branch index must be scalar"):
        lax.switch(np.zeros(2, np.int32), [lambda: 1.0, lambda: 2.0])
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [])
    with pytest.raises(TypeError, match="cond index must be an int32 scalar, got f32\\[\\]"):
        conditionals.cond_p.bind(np.float32(1), branches=())


# --- cond differentiation ---------------------------------------------------------------------------------
def _diff_fun(lax_module, np_):
    def f(x, y):
        def true_fun(x, y):
            return np_.sin(x) * y, np_.exp(y) * x

        def false_fun(x, y):
            return x * x * x, np_.cos(x) * y * y

        a, b = lax_module.cond(np_.sum(x) > 0, true_fun, false_fun, x, y)
        return np_.sum(a * b)

    return f


def test_cond_check_grads(x64):
    f = _diff_fun(lax, nnp)
    for sign in (1.0, -1.0):
        x = sign * np.array([0.3, 0.7], np.float64)
        check_grads(f, (x, np.float64(0.4)), order=2, modes=("fwd", "rev"))


@jax.jit
def _diff_expected(x, y):
    """jax's grad, jvp, jacfwd(grad) and jacrev(grad) of _diff_fun: the oracle, one program for both signs."""
    g = _diff_fun(jax.lax, jnp)
    return (jax.grad(g, (0, 1))(x, y), jax.jvp(g, (x, y), (jnp.ones_like(x), np.float32(0.5))),
            jax.jacfwd(jax.grad(g))(x, y), jax.jacrev(jax.grad(g))(x, y))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_grad_transformations_match_jax(sign):
    x, y = sign * np.array([0.3, 0.7], np.float32), np.float32(0.4)
    f = _diff_fun(lax, nnp)
    expected, expected_jvp, expected_jacfwd, expected_jacrev = _diff_expected(x, y)
    same(numax.grad(f, (0, 1))(x, y), expected)
    same(numax.jit(numax.grad(f, (0, 1)))(x, y), expected)
    same(numax.grad(numax.jit(f), (0, 1))(x, y), expected)
    same(numax.jvp(f, (x, y), (np.ones_like(x), np.float32(0.5))), expected_jvp)
    same(numax.jacfwd(numax.grad(f))(x, y), expected_jacfwd, scale=10)
    same(numax.jacrev(numax.grad(f))(x, y), expected_jacrev, scale=10)


def test_cond_grad_of_jit_splits_into_two_conds():
    """grad(jit(f)): jit's JVP partially evaluates the jvp program; the cond JVP rule already split it into a
    primal cond (in the forward jit) and a tangent cond (in the transposed one)."""
    f = lambda x: lax.cond(x > 0, lambda v: nnp.sin(v) * v, lambda v: v * 3.0, x)  # noqa: E731
    jvp_program = numax.make_jaxpr(lambda x, t: numax.jvp(f, (x,), (t,)))(np.float32(1), np.float32(1))
    assert [e.primitive.name for e in jvp_program.equations].count("cond") == 2
    expected = jax.jit(jax.grad(lambda v: jax.lax.cond(v > 0, lambda v: jnp.sin(v) * v, lambda v: v * 3.0, v)))
    for x in (np.float32(0.8), np.float32(-0.8)):
        same(numax.grad(numax.jit(f))(x), expected(x))


def test_cond_integer_outputs_and_inputs_differentiate():
    def f(lax_module, x):
        n, y = lax_module.cond(x > 1, lambda x: (3, x * 2), lambda x: (4, x * x), x)
        return y * n

    expected = jax.jit(jax.grad(lambda x: f(jax.lax, x)))
    for x in (np.float32(2.0), np.float32(0.5)):
        same(numax.grad(lambda x: f(lax, x))(x), expected(x))


# --- cond under vmap --------------------------------------------------------------------------------------
def test_cond_vmap_batched_predicate_becomes_select(rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    f = lambda v: lax.cond(v[0] > 0, lambda v: nnp.sin(v) * 2.0, lambda v: v + 1.0, v)  # noqa: E731
    g = lambda v: jax.lax.cond(v[0] > 0, lambda v: jnp.sin(v) * 2.0, lambda v: v + 1.0, v)  # noqa: E731
    pred = lambda v: v[:, 0] > 0  # noqa: E731
    f_pred = lambda p, v: lax.cond(p, lambda v: nnp.sin(v) * 2.0, lambda v: v + 1.0, v)  # noqa: E731
    expected = jax.jit(jax.vmap(g))(x)  # the oracle, jitted and computed once
    same(vmap(f_pred)(np.asarray(pred(x)), x), expected)
    same(numax.jit(vmap(f_pred))(np.asarray(pred(x)), x), expected)
    names = equations(vmap(f_pred), np.asarray(pred(x)), x)
    assert "cond" not in names and "select_n" in names
    del f


def test_cond_vmap_unbatched_predicate_stays_cond(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = np.float32(2.0)
    for pred in (True, False):
        f = lambda v, p: lax.cond(p, lambda v, w: (nnp.sin(v) * w, w), lambda v, w: (v + 1.0, w * 2), v, y)  # noqa
        g = lambda v, p: jax.lax.cond(p, lambda v, w: (jnp.sin(v) * w, w), lambda v, w: (v + 1.0, w * 2), v, y)  # noqa
        same(vmap(f, (0, None))(x, pred), jax.vmap(g, (0, None))(x, pred))
        assert "cond" in equations(vmap(f, (0, None)), x, pred)
        # Batched along another axis, with an unbatched output.
        same(vmap(f, (1, None))(x, pred), jax.vmap(g, (1, None))(x, pred))


def test_cond_vmap_composes_with_differentiation():
    def make(lax_module, np_):
        return lambda p, x: lax_module.cond(p > 0, lambda v: np_.sin(v) * v, lambda v: v * 3.0, x)

    f, g = make(lax, nnp), make(jax.lax, jnp)
    ps, xs = np.array([1.0, -1.0, 2.0], np.float32), np.array([0.5, -0.3, 0.8], np.float32)
    expected = jit_all([jax.vmap(jax.grad(lambda p, x: g(p, x) * x, 1)),  # the oracle, in one jitted program
                        jax.vmap(lambda p, x: jax.jvp(lambda x: g(p, x), (x,), (x,))),
                        jax.grad(lambda xs: (jax.vmap(g)(ps, xs) * xs).sum()),
                        jax.grad(lambda x: jax.checkpoint(g)(np.float32(1), x) * x)],
                       [(ps, xs), (ps, xs), (xs,), (np.float32(0.5),)])
    same(vmap(numax.grad(lambda p, x: f(p, x) * x, 1))(ps, xs), expected[0])
    same(vmap(lambda p, x: numax.jvp(lambda x: f(p, x), (x,), (x,)))(ps, xs), expected[1])
    same(numax.grad(lambda xs: (vmap(f)(ps, xs) * xs).sum())(xs), expected[2])
    same(numax.grad(lambda x: numax.checkpoint(f)(np.float32(1), x) * x)(np.float32(0.5)), expected[3])


def test_switch_vmap_batched_index(rng):
    x = rng.standard_normal((6, 2)).astype(np.float32)
    idx = np.array([0, 1, 2, 3, 5, -1], np.int32)
    same(vmap(lambda i, v: lax.switch(i, _branches(nnp), v))(idx, x),
         jax.jit(jax.vmap(lambda i, v: jax.lax.switch(i, _branches(jnp), v)))(idx, x))


# --- effects and eager caching ----------------------------------------------------------------------------
def test_debug_print_in_branch(capsys):
    def f(x):
        def loud(v):
            numax.debug.print("taken {}", v)
            return v * 2

        return lax.cond(x > 0, loud, lambda v: v - 1, x)

    assert f(np.float32(3)) == 6
    assert f(np.float32(-3)) == -4
    assert numax.jit(f)(np.float32(5)) == 10
    assert capsys.readouterr().out == "taken 3.0\ntaken 5.0\n"
    # Differentiated, the print stays in the primal cond: it runs once per call.
    assert numax.grad(f)(np.float32(2)) == 2
    assert numax.grad(numax.jit(f))(np.float32(4)) == 2
    assert capsys.readouterr().out == "taken 2.0\ntaken 4.0\n"


def test_eager_cond_compiles_once():
    def f(x):
        return lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: nnp.sin(v) + 1.0, x)  # fresh lambdas per call

    x = numax.numpy.asarray(np.arange(3, dtype=np.float32))
    f(x)
    f(-x)
    before = len(dispatch.primitive_cache.entries)
    for _ in range(3):
        f(x)
        f(-x)
    assert len(dispatch.primitive_cache.entries) == before
    before = len(dispatch.primitive_cache.entries)
    g = numax.grad(lambda x: f(x).sum())
    g(x)
    middle = len(dispatch.primitive_cache.entries)
    for _ in range(2):
        g(x)
    assert len(dispatch.primitive_cache.entries) == middle > before


def test_eager_while_compiles_once():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))

    x = numax.numpy.asarray(np.float32(1))
    f(x)
    before = len(dispatch.primitive_cache.entries)
    for _ in range(3):
        f(x)
    assert len(dispatch.primitive_cache.entries) == before


# --- while_loop -------------------------------------------------------------------------------------------
def _while_cases(lax_module, np_):
    return {
        "scalar_carries": lambda x: lax_module.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5),
                                                          (0, x)),
        "dict_carry": lambda x: lax_module.while_loop(
            lambda c: np_.sum(c["v"]) < 100.0, lambda c: {"v": c["v"] * 2.0 + 1.0, "n": c["n"] + 1},
            {"v": x, "n": np.int32(0)}),
        "closure": lambda x: lax_module.while_loop(lambda c: c[1] < x[0] * 10, lambda c: (c[0] * x, c[1] + 1.0),
                                                   (x, 0.0)),
        "python_scalars": lambda x: lax_module.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + 0.5),
                                                          (0, 0.0)),
        "promoted_weak": lambda x: lax_module.while_loop(lambda c: c < 7.0, lambda c: c + x[0], 0.0),
        "zero_trips": lambda x: lax_module.while_loop(lambda c: False, lambda c: c * 2, x),
    }


@pytest.mark.parametrize("name", list(_while_cases(jax.lax, jnp)))
def test_while_loop_matches_jax(name):
    x = np.array([1.25, 0.5], np.float32)
    f, g = _while_cases(lax, nnp)[name], _while_cases(jax.lax, jnp)[name]
    same(f(x), g(x))
    same(numax.jit(f)(x), jax.jit(g)(x))


def test_while_loop_jvp_and_reverse_error():
    def make(lax_module, np_):
        def f(x, y):
            return lax_module.while_loop(lambda c: c[2] < 4, lambda c: (np_.sin(c[0]) * y, c[1] + c[0], c[2] + 1),
                                         (x, np.float32(0), 0))[:2]
        return f

    x, y = np.float32(0.7), np.float32(1.3)
    jvp = lambda x, y, tx, ty: jax.jvp(make(jax.lax, jnp), (x, y), (tx, ty))  # noqa: E731
    expected = jit_all([jvp, jvp, jvp, jax.jacfwd(lambda x: make(jax.lax, jnp)(x, y)[1])],  # the oracle, one program
                       [(x, y, np.float32(1), np.float32(0.5)), (x, y, np.float32(0), np.float32(1)),
                        (x, y, np.float32(1), y), (x,)])
    same(numax.jvp(make(lax, nnp), (x, y), (np.float32(1), np.float32(0.5))), expected[0])
    same(numax.jvp(make(lax, nnp), (x, y), (np.float32(0), np.float32(1))),  # tangent enters through a const
         expected[1])
    same(numax.jit(lambda x, y: numax.jvp(make(lax, nnp), (x, y), (np.float32(1), y)))(x, y), expected[2])
    same(numax.jacfwd(lambda x: make(lax, nnp)(x, y)[1])(x), expected[3])
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop or "
                       "lax.fori_loop with dynamic start/stop values. Try using lax.scan"):
        numax.grad(lambda x: make(lax, nnp)(x, y)[1])(x)
    # A loop whose carries do not depend on the input differentiates as a constant.
    assert numax.grad(lambda x: x * lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, 0.0))(x) == 3.0


def test_while_loop_linearize_computes_primal_results_outside_the_tangent_program():
    # A loop result read by later non-linear work (z ** 2): linearize gives jax's primal value (not a tracer of
    # the tangent program) and reverse mode raises jax's error, not a failure to transpose that work.
    def make(lax_module, np_):
        def f(w, x):
            z = lax_module.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np_.tanh(c[1] * w)), (0, x))[1]
            return np_.sum(z ** 2)
        return f

    w, x = np.float32(0.8), np.arange(3, dtype=np.float32)
    primal, f_lin = numax.linearize(make(lax, nnp), w, x)
    expected = jax.jit(lambda w, x: (lambda out: (out[0], out[1](w, x)))(jax.linearize(make(jax.lax, jnp), w, x)))(
        w, x)
    same((primal, f_lin(w, x)), expected)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        numax.grad(make(lax, nnp))(w, x)


def test_while_loop_check_grads_forward(x64):
    f = lambda x: lax.while_loop(lambda c: c[1] < 3, lambda c: (nnp.sin(c[0]) + c[0] * x, c[1] + 1), (x, 0))[0]  # noqa
    check_grads(f, (np.float64(0.4),), order=2, modes=("fwd",))


def test_while_loop_errors():
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got output type\\(s\\) "
                       "\\[f32\\[\\]\\]"):
        lax.while_loop(lambda c: c * 1.0, lambda c: c, 1.0)
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
        lax.while_loop(lambda c: (c < 1, c < 2), lambda c: c, 1.0)
    with pytest.raises(TypeError, match="(?s)while_loop body function carry input and carry output must have equal "
                       "types.*The input carry component carry\\[1\\] has type f32\\[\\] but the corresponding "
                       "output carry component has type i32\\[\\]"):
        lax.while_loop(lambda carry: carry[0] < 3, lambda carry: (carry[0] + 1, np.int32(1)), (0, np.float32(0)))
    with pytest.raises(TypeError, match="while_loop body function carry input and carry output must have the same "
                       "pytree structure"):
        lax.while_loop(lambda c: c[0] < 3, lambda c: [c[0] + 1, c[1]], (0, 1.0))
    with pytest.raises(TypeError, match="body_fun and cond_fun arguments should be callable"):
        lax.while_loop(True, lambda c: c, 1.0)


# --- fori_loop --------------------------------------------------------------------------------------------
def test_fori_loop_static_bounds_use_scan_and_reverse_mode():
    def make(lax_module):
        return lambda x: lax_module.fori_loop(1, 5, lambda i, c: c * x + i, x)

    x = np.float32(0.9)
    same(make(lax)(x), make(jax.lax)(x))
    same(numax.jit(make(lax))(x), jax.jit(make(jax.lax))(x))
    expected_grad = jax.jit(jax.grad(make(jax.lax)))(x)  # the oracle, jitted and computed once
    same(numax.grad(make(lax))(x), expected_grad)
    same(numax.jit(numax.grad(make(lax)))(x), expected_grad)
    names = equations(make(lax), x)
    assert "scan" in names and "while" not in names
    # Concrete array bounds are static too; an empty range returns the initial value.
    same(lax.fori_loop(numax.numpy.asarray(2), 4, lambda i, c: c + i, 0),
         jax.lax.fori_loop(2, 4, lambda i, c: c + i, 0))
    same(lax.fori_loop(5, 2, lambda i, c: c + i, 1.5), jax.lax.fori_loop(5, 2, lambda i, c: c + i, 1.5))


def test_fori_loop_dynamic_bounds_use_while():
    f = lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i * x, 0.0)  # noqa: E731
    g = lambda n, x: jax.lax.fori_loop(0, n, lambda i, c: c + i * x, 0.0)  # noqa: E731
    for n in (0, 1, 6):
        same(numax.jit(f)(n, np.float32(1.5)), jax.jit(g)(n, np.float32(1.5)))
        same(numax.jit(f)(np.int8(n), np.float32(1.5)), jax.jit(g)(np.int8(n), np.float32(1.5)))
    assert "while" in equations(f, 3, np.float32(1))
    same(numax.jvp(lambda x: numax.jit(f)(4, x), (np.float32(1.5),), (np.float32(1),)),
         jax.jvp(lambda x: jax.jit(g)(4, x), (np.float32(1.5),), (np.float32(1),)))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        numax.jit(lambda n, x: numax.grad(lambda x: f(n, x))(x))(3, np.float32(1))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        numax.grad(lambda x: numax.jit(f)(3, x))(np.float32(1))
    with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop bounds are statically"):
        numax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 0.0, unroll=2))(3)
    with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have equal types, got int32 "
                       "and int16"):
        lax.fori_loop(np.int32(0), np.int16(3), lambda i, c: c, 0.0)


# --- while under vmap -------------------------------------------------------------------------------------
def test_while_vmap_batched_predicate(rng):
    ns = np.array([0, 3, 1, 5], np.int32)

    def make(lax_module):
        return lambda n, x: lax_module.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x + 1.0),
                                                  (0, np.float32(1)))

    x = rng.standard_normal(4).astype(np.float32)
    same(vmap(make(lax))(ns, x), jax.vmap(make(jax.lax))(ns, x))
    same(numax.jit(vmap(make(lax)))(ns, x), jax.vmap(make(jax.lax))(ns, x))
    same(vmap(make(lax), (0, None))(ns, np.float32(2)), jax.vmap(make(jax.lax), (0, None))(ns, np.float32(2)))
    assert "reduce_or" in str(numax.make_jaxpr(vmap(make(lax)))(ns, x))


def test_while_vmap_composes_with_jvp():
    def make(lax_module, np_):
        return lambda x: lax_module.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np_.sin(c[1]) * x),
                                               (0, x))[1]

    xs = np.array([0.5, -0.3], np.float32)
    f, g = make(lax, nnp), make(jax.lax, jnp)
    same(vmap(lambda x: numax.jvp(f, (x,), (x,)))(xs), jax.vmap(lambda x: jax.jvp(g, (x,), (x,)))(xs))
    same(numax.jvp(numax.jit(vmap(f)), (xs,), (xs,)), jax.jvp(jax.vmap(g), (xs,), (xs,)))


def test_while_vmap_unbatched_predicate(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    f = lambda v: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5 + v, c[2]), (0, v, 1.0))  # noqa
    g = lambda v: jax.lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5 + v, c[2]), (0, v, 1.0))  # noqa
    for axis in (0, 1):
        same(vmap(f, axis)(x), jax.vmap(g, axis)(x))
    assert "reduce_or" not in str(numax.make_jaxpr(vmap(f))(x))


# --- hypothesis over shapes -------------------------------------------------------------------------------
@given(shape=st.lists(st.integers(0, 3), max_size=2), pred=st.booleans(), trips=st.integers(0, 4))
def test_cond_while_shapes(shape, pred, trips):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 1.0
    f = lambda v, lax_module: lax_module.cond(pred, lambda v: v * 2.0, lambda v: v - 1.0, v)  # noqa: E731
    w = lambda v, lax_module: lax_module.while_loop(lambda c: c[0] < trips, lambda c: (c[0] + 1, c[1] * 1.5 + 1),  # noqa
                                                    (0, v))
    # jax's values (the oracle) from one jitted program per example.
    expected_cond, expected_while = jax.jit(lambda v: (f(v, jax.lax), w(v, jax.lax)))(x)
    same(numax.jit(lambda v: f(v, lax))(x), expected_cond)
    same(numax.jit(lambda v: w(v, lax))(x), expected_while)

