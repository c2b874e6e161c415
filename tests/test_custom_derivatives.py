"""custom_jvp, custom_vjp and closure_convert: the same functions written with numax and with jax, compared
under every composition of jit, grad, jvp and vjp; the rules are provably the ones used; JAX's error
messages; the IR shows the call primitives."""

import numpy as np
import pytest
from harness import jax, jnp
from numax.core.errors import UnexpectedTracerError
from numax.transforms.custom_derivatives import CustomJVPException, CustomVJPException, SymbolicZero

import numax
import numax.numpy as xnp
from numax.test_util import check_grads


# --- the same functions in both libraries -------------------------------------------------------------------
def define(lib, np_):
    """Custom-derivative functions written once against `lib` (numax or jax) and its numpy `np_`."""
    fns = {}

    @lib.custom_jvp
    def log1pexp(x):
        return np_.log(1.0 + np_.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + np_.exp(x)))

    @lib.custom_jvp
    def sin_rule3(x):  # the rule says d/dx = 3 cos(x): differs from autodiff, so results show which is used
        return np_.sin(x)

    @sin_rule3.defjvp
    def sin_rule3_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin_rule3(x), 3.0 * np_.cos(x) * t

    @lib.custom_jvp
    def tree_fn(d, s):
        return {"a": d["x"] * d["y"], "b": (np_.sin(d["x"]),)}, s * 2.0

    @tree_fn.defjvp
    def tree_fn_jvp(primals, tangents):
        (d, s), (dd, ds) = primals, tangents
        tangent = {"a": dd["x"] * d["y"] + d["x"] * dd["y"], "b": (np_.cos(d["x"]) * dd["x"],)}
        return tree_fn(d, s), (tangent, ds * 2.0)

    @lib.custom_jvp
    def defjvps_fn(x, y):
        return np_.sin(x) * y

    defjvps_fn.defjvps(lambda x_dot, out, x, y: np_.cos(x) * x_dot * y,
                       lambda y_dot, out, x, y: np_.sin(x) * y_dot * 10.0)

    def apply_fn(fn, x):
        return fn(x)

    apply_jvp = lib.custom_jvp(apply_fn, nondiff_argnums=(0,))

    @apply_jvp.defjvp
    def apply_jvp_rule(fn, primals, tangents):
        return apply_jvp(fn, primals[0]), 7.0 * fn(primals[0]) * tangents[0]

    @lib.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def clip_fwd(lo, hi, x):
        return x, (lo, hi)

    def clip_bwd(res, g):
        lo, hi = res
        return (None, None, np_.clip(g, lo, hi))

    clip_gradient.defvjp(clip_fwd, clip_bwd)

    @lib.custom_vjp
    def sin_vjp(x, y):
        return np_.sin(x) * y

    def sin_fwd(x, y):
        return np_.sin(x) * y, {"cos": np_.cos(x), "pair": [np_.sin(x), y]}

    def sin_bwd(res, g):
        return (5.0 * res["cos"] * g * res["pair"][1], res["pair"][0] * g)

    sin_vjp.defvjp(sin_fwd, sin_bwd)

    def apply_twice(fn, x):
        return fn(x) * x

    apply_vjp = lib.custom_vjp(apply_twice, nondiff_argnums=(0,))

    def apply_vjp_fwd(fn, x):
        return apply_vjp(fn, x), (x, fn(x))

    def apply_vjp_bwd(fn, res, g):
        x, fx = res
        return (g * (fx + 100.0),)

    apply_vjp.defvjp(apply_vjp_fwd, apply_vjp_bwd)

    @lib.custom_vjp
    def tree_vjp(d, n):  # pytree in, pytree out, an integer argument and an integer output
        return {"s": d["u"] * d["v"], "n": n + 1}, [np_.exp(d["u"])]

    def tree_vjp_fwd(d, n):
        return tree_vjp(d, n), (d, np_.exp(d["u"]))

    def tree_vjp_bwd(res, cts):
        d, exp_u = res
        out_ct, (exp_ct,) = cts
        return ({"u": out_ct["s"] * d["v"] + exp_ct * exp_u, "v": None}, None)

    tree_vjp.defvjp(tree_vjp_fwd, tree_vjp_bwd)

    fns.update(locals())
    return fns


X = define(numax, xnp)
J = define(jax, jnp)


def both(run):
    """run(lib, functions) for numax and for jax."""
    return run(numax, X), run(jax, J)


def assert_trees_close(actual, expected, rtol=1e-5, atol=1e-6):
    actual_leaves, actual_tree = jax.tree.flatten(actual)
    expected_leaves, expected_tree = jax.tree.flatten(expected)
    assert len(actual_leaves) == len(expected_leaves), (actual, expected)
    assert str(actual_tree).replace("PyTreeDef", "") == str(expected_tree).replace("PyTreeDef", ""), (
        actual_tree, expected_tree)
    for a, e in zip(actual_leaves, expected_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, (a.shape, e.shape)
        assert a.dtype == e.dtype, (a.dtype, e.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def check_both(run, **tolerances):
    actual, expected = both(run)
    assert_trees_close(actual, expected, **tolerances)
    return actual


# --- custom_jvp -------------------------------------------------------------------------------------------
SCALAR_COMPOSITIONS = {
    "eager": lambda L, f: f,
    "jit": lambda L, f: L.jit(f),
    "grad": lambda L, f: L.grad(f),
    "jit(grad)": lambda L, f: L.jit(L.grad(f)),
    "grad(jit)": lambda L, f: L.grad(L.jit(f)),
    "grad(grad)": lambda L, f: L.grad(L.grad(f)),
    "grad(jit(grad))": lambda L, f: L.grad(L.jit(L.grad(f))),
    "jit(grad(grad))": lambda L, f: L.jit(L.grad(L.grad(f))),
    "jvp": lambda L, f: lambda x: L.jvp(f, (x,), (np.float32(1.5),)),
    "jvp(jit)": lambda L, f: lambda x: L.jvp(L.jit(f), (x,), (np.float32(1.5),)),
    "jit(jvp)": lambda L, f: L.jit(lambda x: L.jvp(f, (x,), (np.float32(1.5),))),
    "jvp(grad)": lambda L, f: lambda x: L.jvp(L.grad(f), (x,), (np.float32(1.5),)),
    "grad(jvp)": lambda L, f: L.grad(lambda x: L.jvp(f, (x,), (x,))[1]),
    "value_and_grad": lambda L, f: L.value_and_grad(f),
}


@pytest.mark.parametrize("composition", list(SCALAR_COMPOSITIONS))
@pytest.mark.parametrize("name", ["log1pexp", "sin_rule3"])
def test_custom_jvp_compositions_match_jax(name, composition):
    make = SCALAR_COMPOSITIONS[composition]
    for x in [np.float32(-2.5), np.float32(0.75)]:
        check_both(lambda L, F: make(L, F[name])(x))


def test_log1pexp_rule_is_numerically_stable():
    """Plain autodiff of log(1 + exp(x)) at x=100 gives nan (inf/inf); the rule gives 1."""
    for x in [np.float32(100.0), np.float32(-100.0)]:
        g = check_both(lambda L, F: L.grad(F["log1pexp"])(x))
        assert np.isfinite(g)
    assert np.isnan(numax.grad(lambda x: xnp.log(1.0 + xnp.exp(x)))(np.float32(100.0)))
    check_both(lambda L, F: L.jit(L.grad(lambda v: F["log1pexp"](v).sum()))(np.array([100.0, -3.0, 0.5], np.float32)))


def test_the_rule_is_used_not_autodiff():
    x = np.float32(0.4)
    assert float(numax.grad(X["sin_rule3"])(x)) == pytest.approx(3 * np.cos(0.4), rel=1e-6)
    assert float(numax.jvp(X["sin_rule3"], (x,), (np.float32(2.0),))[1]) == pytest.approx(6 * np.cos(0.4), rel=1e-6)
    assert float(numax.grad(numax.grad(X["sin_rule3"]))(x)) == pytest.approx(-3 * np.sin(0.4), rel=1e-6)
    # Evaluation, eager or staged, is the function itself.
    assert float(X["sin_rule3"](x)) == pytest.approx(np.sin(0.4), rel=1e-6)
    assert float(numax.jit(X["sin_rule3"])(x)) == pytest.approx(np.sin(0.4), rel=1e-6)


def test_custom_jvp_pytrees_in_and_out():
    d = {"x": np.float32(1.5), "y": np.float32(2.0)}
    dd = {"x": np.float32(1.0), "y": np.float32(0.5)}
    s, ds = np.float32(3.0), np.float32(-1.0)

    def loss(L, F):
        def scalar(d, s):
            out, s2 = F["tree_fn"](d, s)
            return out["a"] + out["b"][0] * 3.0 + s2
        return scalar

    check_both(lambda L, F: L.jvp(F["tree_fn"], (d, s), (dd, ds)))
    check_both(lambda L, F: L.jvp(L.jit(F["tree_fn"]), (d, s), (dd, ds)))
    check_both(lambda L, F: L.grad(loss(L, F), argnums=(0, 1))(d, s))
    check_both(lambda L, F: L.grad(L.jit(loss(L, F)), argnums=(0, 1))(d, s))
    check_both(lambda L, F: L.jit(L.grad(loss(L, F), argnums=(0, 1)))(d, s))


def test_defjvps_matches_jax():
    for argnums in [0, 1, (0, 1)]:
        check_both(lambda L, F: L.grad(F["defjvps_fn"], argnums=argnums)(np.float32(1.0), np.float32(2.0)))
    check_both(lambda L, F: L.jvp(F["defjvps_fn"], (np.float32(1.0), np.float32(2.0)),
                                  (np.float32(0.5), np.float32(-1.0))))


def test_defjvps_none_entry_means_no_dependence():
    f = numax.custom_jvp(lambda x, y: xnp.sin(x) * y)
    f.defjvps(None, lambda y_dot, out, x, y: xnp.sin(x) * y_dot)
    gx, gy = numax.grad(f, argnums=(0, 1))(np.float32(1.0), np.float32(2.0))
    assert float(gx) == 0.0 and float(gy) == pytest.approx(np.sin(1.0), rel=1e-6)
    with pytest.raises(TypeError, match="Can't use ``defjvps`` with ``nondiff_argnums``"):
        numax.custom_jvp(lambda f, x: x, nondiff_argnums=(0,)).defjvps(None)


def test_nondiff_argnums_callable_custom_jvp():
    square = lambda z: z * z  # noqa: E731
    x = np.float32(2.0)
    for wrap in [lambda L, f: f, lambda L, f: L.jit(f)]:
        check_both(lambda L, F: L.grad(wrap(L, lambda x: F["apply_jvp"](square, x)))(x))
        check_both(lambda L, F: L.jit(L.grad(lambda x: F["apply_jvp"](square, x)))(x))
        check_both(lambda L, F: L.jvp(wrap(L, lambda x: F["apply_jvp"](square, x)), (x,), (np.float32(1.0),)))
    assert float(numax.grad(lambda x: X["apply_jvp"](square, x))(x)) == 28.0  # 7 * fn(x) * 1


def test_nondiff_array_argument_is_not_differentiated_custom_jvp():
    """As in JAX, array arguments at nondiff_argnums are stop_gradient-ed and passed to the rule first."""
    def define_scale(lib):
        scale = lib.custom_jvp(lambda c, x: c * x, nondiff_argnums=(0,))
        scale.defjvp(lambda c, primals, tangents: (scale(c, primals[0]), 10.0 * c * tangents[0]))
        return scale

    sx, sj = define_scale(numax), define_scale(jax)
    args = (np.float32(2.0), np.float32(3.0))
    for argnums in [0, 1, (0, 1)]:
        expected = jax.grad(sj, argnums=argnums)(*args)
        assert_trees_close(numax.grad(sx, argnums=argnums)(*args), expected)
        assert_trees_close(numax.grad(numax.jit(sx), argnums=argnums)(*args), expected)
        assert_trees_close(numax.jit(numax.grad(sx, argnums=argnums))(*args), expected)
    assert "stop_gradient" in str(numax.make_jaxpr(sx)(*args))


def test_functions_branching_on_values_work_under_eager_differentiation():
    """As in JAX, eager jvp/grad call the rules without tracing the function, which may then use Python
    control flow on its arguments' values."""
    def define_branching(lib):
        @lib.custom_jvp
        def relu_like(x):
            return x if x > 0 else 0.0 * x

        relu_like.defjvp(lambda primals, tangents: (relu_like(primals[0]), 2.0 * tangents[0]))

        @lib.custom_vjp
        def branchy(x):
            return x * x if x > 0 else -x

        branchy.defvjp(lambda x: (branchy(x), x), lambda x, g: (3.0 * g * x,))
        return relu_like, branchy

    (rx, bx), (rj, bj) = define_branching(numax), define_branching(jax)
    for x in [np.float32(1.5), np.float32(-2.0)]:
        assert_trees_close(numax.grad(rx)(x), jax.grad(rj)(x))
        assert_trees_close(numax.jvp(rx, (x,), (np.float32(1.0),)), jax.jvp(rj, (x,), (np.float32(1.0),)))
        assert_trees_close(numax.grad(bx)(x), jax.grad(bj)(x))
        assert_trees_close(numax.grad(lambda x: rx(x) * bx(x))(x), jax.grad(lambda x: rj(x) * bj(x))(x))


def test_linearize_of_custom_jvp_stages_only_the_rule_tangent():
    x, t = np.float32(0.7), np.float32(2.0)
    out, f_jvp = numax.linearize(X["sin_rule3"], x)
    assert float(out) == pytest.approx(np.sin(0.7), rel=1e-6)
    assert float(f_jvp(t)) == pytest.approx(6 * np.cos(0.7), rel=1e-6)
    assert "sin" not in str(f_jvp.linear.program)  # the primal work ran outside the linear program


def test_nondiff_argnames():
    def define_named(lib):
        f = lib.custom_jvp(lambda x, power: x ** power, nondiff_argnames=("power",))
        f.defjvp(lambda power, primals, tangents: (f(primals[0], power), 100.0 * tangents[0]))
        return f

    fx, fj = define_named(numax), define_named(jax)
    assert fx.nondiff_argnums == (1,)
    assert_trees_close(numax.grad(lambda x: fx(x, 3))(np.float32(2.0)), jax.grad(lambda x: fj(x, 3))(np.float32(2.0)))


def test_custom_jvp_integer_argument_gets_float0_tangent():
    seen = []

    @numax.custom_jvp
    def power(x, n):
        return x ** n

    @power.defjvp
    def power_jvp(primals, tangents):
        (x, n), (t, n_dot) = primals, tangents
        seen.append(np.asarray(n_dot).dtype)
        return power(x, n), n * x ** (n - 1) * t

    assert float(numax.grad(power)(np.float32(2.0), 3)) == 12.0
    assert float(numax.grad(numax.jit(power))(np.float32(2.0), np.int32(3))) == 12.0
    assert seen[0] == jax.dtypes.float0


def test_custom_jvp_keyword_arguments_resolve_to_positions():
    @numax.custom_jvp
    def f(x, y=2.0):
        return x * y

    f.defjvp(lambda primals, tangents: (f(*primals), 100.0 * tangents[0] + tangents[1]))
    assert float(numax.grad(lambda x: f(x, y=3.0))(np.float32(1.0))) == 100.0
    assert float(numax.grad(lambda x: f(x))(np.float32(1.0))) == 100.0
    assert float(f(np.float32(2.0), y=4.0)) == 8.0


def test_symbolic_zeros_custom_jvp():
    seen = []

    @numax.custom_jvp
    def mul(x, y):
        return x * y

    def mul_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append(tuple(type(t) is SymbolicZero for t in tangents))
        out = 0.0
        if type(tx) is not SymbolicZero:
            out = out + tx * y
        if type(ty) is not SymbolicZero:
            out = out + ty * x
        return mul(x, y), out

    mul.defjvp(mul_jvp, symbolic_zeros=True)
    assert float(numax.grad(mul)(np.float32(2.0), np.float32(3.0))) == 3.0
    assert seen[-1] == (False, True)
    assert float(numax.grad(mul, argnums=1)(np.float32(2.0), np.float32(3.0))) == 2.0
    assert seen[-1] == (True, False)


def test_custom_jvp_second_order_through_the_rule_x64(x64):
    check_grads(X["log1pexp"], (np.float64(0.3),), order=2, modes=("fwd", "rev"))
    check_grads(numax.jit(X["log1pexp"]), (np.array([0.3, -1.2], np.float64),), order=2, modes=("fwd", "rev"))
    check_grads(lambda d, s: X["tree_fn"](d, s), ({"x": np.float64(0.7), "y": np.float64(-0.4)}, np.float64(1.1)),
                order=2, modes=("fwd", "rev"))


def test_hessian_and_jacobians_use_the_rule():
    x = np.array([0.5, -1.0], np.float32)
    sigmoid = 1 / (1 + np.exp(-x.astype(np.float64)))
    hessian = numax.jit(numax.hessian(lambda v: X["log1pexp"](v).sum()))(x)
    np.testing.assert_allclose(np.asarray(hessian), np.diag(sigmoid * (1 - sigmoid)), rtol=1e-5, atol=1e-7)
    expected = np.diag(3 * np.cos(x.astype(np.float64)))
    np.testing.assert_allclose(np.asarray(numax.jit(numax.jacfwd(X["sin_rule3"]))(x)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(numax.jit(numax.jacrev(X["sin_rule3"]))(x)), expected, rtol=1e-6)


def test_custom_jvp_applied_to_tangents_inside_a_rule_is_transposed_as_its_function():
    @numax.custom_jvp
    def double(x):
        return 2.0 * x

    double.defjvp(lambda primals, tangents: (double(primals[0]), double(tangents[0])))

    @numax.custom_jvp
    def f(x):
        return xnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), double(xnp.cos(primals[0]) * tangents[0])))
    x = np.float32(0.3)
    assert float(numax.grad(f)(x)) == pytest.approx(2 * np.cos(0.3), rel=1e-6)
    assert float(numax.grad(numax.jit(f))(x)) == pytest.approx(2 * np.cos(0.3), rel=1e-6)


def test_custom_jvp_closing_over_arrays_and_jit_values():
    c = xnp.array([1.0, 2.0], dtype=xnp.float32)

    @numax.custom_jvp
    def f(y):
        return c * y

    f.defjvp(lambda primals, tangents: (f(*primals), 5.0 * tangents[0] * c))
    assert float(numax.grad(lambda y: f(y).sum())(np.float32(1.0))) == 15.0
    assert float(numax.jit(numax.grad(lambda y: f(y).sum()))(np.float32(1.0))) == 15.0

    def g(x, k):  # closes over a jit tracer that is not differentiated
        @numax.custom_jvp
        def h(y):
            return k * y

        h.defjvp(lambda primals, tangents: (h(*primals), 10.0 * k * tangents[0]))
        return h(x)

    assert float(numax.jit(g)(np.float32(2.0), np.float32(3.0))) == 6.0
    assert float(numax.jit(numax.grad(g))(np.float32(2.0), np.float32(3.0))) == 30.0


def test_differentiating_a_closed_over_value_is_an_error():
    def g(x):
        @numax.custom_jvp
        def f(y):
            return x * y

        f.defjvp(lambda primals, tangents: (f(*primals), 5.0 * tangents[0]))
        return f(2.0 * x)

    with pytest.raises(CustomJVPException, match="closed-over value"):
        numax.grad(g)(np.float32(1.0))
    with pytest.raises(CustomJVPException, match="closed-over value"):
        numax.grad(numax.jit(g))(np.float32(1.0))

    def h(x):
        @numax.custom_vjp
        def f(y):
            return x * y

        f.defvjp(lambda y: (f(y), None), lambda res, g: (g,))
        return f(2.0 * x)

    with pytest.raises(CustomVJPException, match="closed-over value"):
        numax.grad(h)(np.float32(1.0))


# --- custom_jvp errors --------------------------------------------------------------------------------------
def _bad_rule_function(rule_output):
    @numax.custom_jvp
    def f(x):
        return xnp.sin(x)

    f.defjvp(lambda primals, tangents: rule_output(f, primals[0], tangents[0]))
    return f


@pytest.mark.parametrize("rule_output, message", [
    (lambda f, x, t: (f(x), t.astype(xnp.int32)),
     r"Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes\. Expected "
     r"f32\[3\] \(tangent type of f32\[3\]\) but got i32\[3\]"),
    (lambda f, x, t: (f(x), xnp.stack([t, t])),
     r"Expected f32\[3\] \(tangent type of f32\[3\]\) but got f32\[2,3\]"),
    (lambda f, x, t: (f(x), (t,)),
     r"Custom JVP rule <lambda> for function f must produce primal and tangent outputs with equal container "
     r"\(pytree\) structures, but got PyTreeDef\(\*\) and PyTreeDef\(\(\*,\)\) respectively"),
    (lambda f, x, t: f(x),
     r"must produce a pair \(list or tuple of length two\) representing primal and tangent outputs"),
    (lambda f, x, t: ((f(x),), (t,)),
     r"first element had container/pytree structure:\n    \(f32\[3\],\)\nwhile the custom_jvp-decorated function f "
     r"had output container/pytree structure:\n    f32\[3\]"),
    (lambda f, x, t: (f(x).astype(xnp.float16), t.astype(xnp.float16)),
     r"first element had shapes/dtypes of:\n    f16\[3\]\nwhile the custom_jvp-decorated function f had output "
     r"shapes/dtypes of:\n    f32\[3\]"),
])
def test_custom_jvp_rule_errors(rule_output, message):
    f = _bad_rule_function(rule_output)
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match=message):
        numax.jit(numax.grad(lambda x: f(x).sum()))(x)
    with pytest.raises(TypeError, match=message):
        numax.jvp(numax.jit(f), (x,), (x,))
    if "custom_jvp-decorated function f had" in message:
        return  # as in JAX, the rule's primal output is compared with the function's only where it was traced
    with pytest.raises(TypeError, match=message):
        numax.jvp(f, (x,), (x,))
    with pytest.raises(TypeError, match=message):
        numax.grad(lambda x: f(x).sum())(x)


def test_jax_has_the_same_rule_error_messages():
    """The messages above are JAX's (which says float32 where numax says f32)."""
    f = jax.custom_jvp(jnp.sin)
    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0].astype(jnp.int32)))
    with pytest.raises(TypeError, match=r"corresponding shapes and dtypes\. Expected float32\[3\] \(tangent type of "
                                        r"float32\[3\]\) but got int32\[3\]"):
        jax.jvp(f, (np.ones(3, np.float32),), (np.ones(3, np.float32),))


def test_custom_jvp_without_rule_is_an_error():
    f = numax.custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function <lambda> using defjvp"):
        f(1.0)


# --- custom_vjp -------------------------------------------------------------------------------------------
VJP_COMPOSITIONS = {
    "eager": lambda L, f: f,
    "jit": lambda L, f: L.jit(f),
    "grad": lambda L, f: L.grad(f, argnums=(0, 1)),
    "jit(grad)": lambda L, f: L.jit(L.grad(f, argnums=(0, 1))),
    "grad(jit)": lambda L, f: L.grad(L.jit(f), argnums=(0, 1)),
    "grad(grad)": lambda L, f: L.grad(L.grad(f), argnums=(0, 1)),
    "grad(jit(grad))": lambda L, f: L.grad(L.jit(L.grad(f)), argnums=(0, 1)),
    "jvp(grad)": lambda L, f: lambda x, y: L.jvp(L.grad(f), (x, y), (np.float32(1.5), np.float32(-0.5))),
}


@pytest.mark.parametrize("composition", list(VJP_COMPOSITIONS))
def test_custom_vjp_compositions_match_jax(composition):
    make = VJP_COMPOSITIONS[composition]
    check_both(lambda L, F: make(L, F["sin_vjp"])(np.float32(0.3), np.float32(2.0)))


def test_custom_vjp_rule_is_used():
    g = numax.grad(X["sin_vjp"])(np.float32(0.3), np.float32(2.0))
    assert float(g) == pytest.approx(5 * np.cos(0.3) * 2.0, rel=1e-6)


@pytest.mark.parametrize("wrap", ["plain", "jit_inside", "jit_outside"])
def test_clip_gradient_matches_jax(wrap):
    def run(L, F):
        def loss(x):
            return (F["clip_gradient"](-0.5, 0.75, x) * np.float32(3.0)).sum()
        if wrap == "jit_inside":
            return L.grad(L.jit(loss))
        if wrap == "jit_outside":
            return L.jit(L.grad(loss))
        return L.grad(loss)

    x = np.array([1.0, -2.0, 0.1], np.float32)
    g = check_both(lambda L, F: run(L, F)(x))
    np.testing.assert_array_equal(np.asarray(g), np.array([0.75, 0.75, 0.75], np.float32))
    check_both(lambda L, F: F["clip_gradient"](-0.5, 0.75, x))


def test_custom_vjp_pytrees_integer_argument_and_none_cotangents():
    d = {"u": np.float32(0.5), "v": np.float32(-2.0)}

    def loss(L, F):
        def scalar(d, n):
            out, (e,) = F["tree_vjp"](d, n)
            return out["s"] + 2.0 * e
        return scalar

    check_both(lambda L, F: L.grad(loss(L, F))(d, 3))
    check_both(lambda L, F: L.grad(L.jit(loss(L, F)))(d, 3))
    check_both(lambda L, F: L.jit(L.grad(loss(L, F)))(d, 3))
    check_both(lambda L, F: L.vjp(lambda d: F["tree_vjp"](d, 3)[0]["s"], d)[1](np.float32(1.0)))
    out = check_both(lambda L, F: L.jit(F["tree_vjp"])(d, np.int32(3)))
    assert int(out[0]["n"]) == 4


def test_custom_vjp_nondiff_callable():
    square = lambda z: z * z  # noqa: E731
    x = np.float32(2.0)
    check_both(lambda L, F: L.grad(lambda x: F["apply_vjp"](square, x))(x))
    check_both(lambda L, F: L.grad(L.jit(lambda x: F["apply_vjp"](square, x)))(x))
    check_both(lambda L, F: L.jit(L.grad(lambda x: F["apply_vjp"](square, x)))(x))
    assert float(numax.grad(lambda x: X["apply_vjp"](square, x))(x)) == 104.0


def test_custom_vjp_nondiff_tracer_is_an_error():
    f = numax.custom_vjp(lambda c, x: c * x, nondiff_argnums=(0,))
    f.defvjp(lambda c, x: (c * x, None), lambda c, res, g: (c * g,))
    with pytest.raises(UnexpectedTracerError, match="Tracers cannot be passed as non-differentiable arguments"):
        numax.jit(f)(np.float32(1.0), np.float32(2.0))


def test_vjp_with_has_aux_through_custom_vjp():
    def run(L, F):
        out, pullback, aux = L.vjp(lambda x: (F["sin_vjp"](x, np.float32(2.0)), x * 3.0), np.float32(0.3),
                                   has_aux=True)
        return out, pullback(np.float32(1.0)), aux

    check_both(run)


def test_custom_vjp_second_order_x64(x64):
    @numax.custom_vjp
    def sin_mul(x, y):
        return xnp.sin(x) * y

    sin_mul.defvjp(lambda x, y: (sin_mul(x, y), (xnp.cos(x), xnp.sin(x), y)),
                   lambda res, g: (res[0] * g * res[2], res[1] * g))
    args = (np.array([0.3, -1.1], np.float64), np.array([2.0, 0.5], np.float64))
    check_grads(sin_mul, args, order=2, modes=("rev",))
    check_grads(numax.jit(sin_mul), args, order=2, modes=("rev",))
    # the bwd rule (5 cos(x) g y, sin(x) g) of sin_vjp is differentiated by autodiff for second order
    h = numax.grad(numax.grad(X["sin_vjp"]))(np.float64(0.3), np.float64(2.0))
    assert float(h) == pytest.approx(-5 * np.sin(0.3) * 2.0, rel=1e-12)


@pytest.mark.parametrize("how", ["jvp", "jvp(jit)", "jit(jvp)", "linearize", "jacfwd"])
def test_forward_mode_of_custom_vjp_is_an_error(how):
    f = X["sin_vjp"]
    x, y = np.float32(0.3), np.float32(2.0)
    run = {
        "jvp": lambda: numax.jvp(f, (x, y), (x, y)),
        "jvp(jit)": lambda: numax.jvp(numax.jit(f), (x, y), (x, y)),
        "jit(jvp)": lambda: numax.jit(lambda x, y: numax.jvp(f, (x, y), (x, y)))(x, y),
        "linearize": lambda: numax.linearize(f, x, y)[1](x, y),
        "jacfwd": lambda: numax.jacfwd(f)(x, y),
    }[how]
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\."):
        run()
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\."):
        jax.jvp(J["sin_vjp"], (x, y), (x, y))


def _vjp_function(bwd, fwd=None):
    @numax.custom_vjp
    def f(x, y):
        return xnp.sin(x) * y

    f.defvjp(fwd or (lambda x, y: (f(x, y), (x, y))), bwd)
    return f


@pytest.mark.parametrize("bwd, error, message", [
    (lambda res, g: res[0] * g, TypeError,
     r"Custom VJP bwd rule must produce an output with the same container \(pytree\) structure as the args tuple of "
     r"the primal function, and in particular must produce a tuple of length equal to the number of arguments to the "
     r"primal function, but got bwd output structure PyTreeDef\(\*\) for primal input structure "
     r"PyTreeDef\(\(\*, \*\)\)"),
    (lambda res, g: (res[0] * g,), TypeError, r"but got bwd output structure PyTreeDef\(\(\*,\)\)"),
    (lambda res, g: (g.sum(), g), ValueError,
     r"Custom VJP bwd rule must produce an output with the same type as the args tuple of the primal function, but at "
     r"output\[0\] the bwd rule produced an output of type f32\[\] corresponding to an input of type f32\[3\], so the "
     r"shapes do not match"),
])
def test_custom_vjp_bwd_errors(bwd, error, message):
    f = _vjp_function(bwd)
    x = np.ones(3, np.float32)
    with pytest.raises(error, match=message):
        numax.grad(lambda x, y: f(x, y).sum())(x, x)
    with pytest.raises(error, match=message):
        numax.grad(numax.jit(lambda x, y: f(x, y).sum()))(x, x)


def test_custom_vjp_bwd_list_none_and_dtype_are_accepted():
    x = np.ones(3, np.float32)
    f = _vjp_function(lambda res, g: [g * 2.0, None])
    g = numax.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, x)
    np.testing.assert_array_equal(np.asarray(g[0]), 2 * x)
    np.testing.assert_array_equal(np.asarray(g[1]), 0 * x)
    f = _vjp_function(lambda res, g: (g.astype(xnp.float16), g))  # JAX accepts another dtype for inexact inputs
    g = numax.grad(lambda x, y: f(x, y).sum())(x, x)
    assert g.dtype == np.float32


@pytest.mark.parametrize("fwd, message", [
    (lambda x, y: xnp.sin(x) * y, r"Custom VJP fwd rule <lambda> for function f must produce a pair"),
    (lambda x, y: ((xnp.sin(x) * y,), None),
     r"first element had container/pytree structure:\n    \(f32\[3\],\)\nwhile the custom_vjp-decorated function f "
     r"had output container/pytree structure:\n    f32\[3\]"),
    (lambda x, y: (xnp.sin(x) * y, "text"), r"produced a residual of type str; residuals must be arrays"),
])
def test_custom_vjp_fwd_errors(fwd, message):
    f = _vjp_function(lambda res, g: (g, g), fwd)
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match=message):
        numax.grad(numax.jit(lambda x, y: f(x, y).sum()))(x, x)
    if "custom_vjp-decorated function f had" not in message:  # compared only where f was traced, as in JAX
        with pytest.raises(TypeError, match=message):
            numax.grad(lambda x, y: f(x, y).sum())(x, x)


def define_symbolic_zeros_vjp(lib, module):
    log = []

    @lib.custom_vjp
    def f(x, y):
        return lib.numpy.sin(x) * y, x * 2.0

    def fwd(x, y):
        log.append(("fwd", x.perturbed, y.perturbed))
        xv, yv = module.custom_vjp_primal_tree_values((x, y))
        return f(xv, yv), (xv, yv)

    def bwd(res, cts):
        x, y = res
        ct_sin, ct_double = cts
        log.append(("bwd", type(ct_sin) is module.SymbolicZero, type(ct_double) is module.SymbolicZero))
        gx = 0.0
        if type(ct_sin) is not module.SymbolicZero:
            gx = gx + lib.numpy.cos(x) * y * ct_sin
        if type(ct_double) is not module.SymbolicZero:
            gx = gx + 2.0 * ct_double
        return gx, (None if type(ct_sin) is module.SymbolicZero else lib.numpy.sin(x) * ct_sin)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f, log


def test_symbolic_zeros_custom_vjp_matches_jax():
    from numax.transforms import custom_derivatives

    fx, log_x = define_symbolic_zeros_vjp(numax, custom_derivatives)
    fj, log_j = define_symbolic_zeros_vjp(jax, jax.custom_derivatives)
    x, y = np.float32(0.3), np.float32(2.0)
    runs = [lambda L, f: L.grad(lambda x, y: f(x, y)[0], argnums=(0, 1))(x, y),
            lambda L, f: L.grad(lambda x: f(x, y)[1])(x),
            lambda L, f: L.grad(L.jit(lambda x: f(x, y)[1]))(x)]
    for run in runs:
        assert_trees_close(run(numax, fx), run(jax, fj))
        assert log_x == log_j, (log_x, log_j)
        log_x.clear()
        log_j.clear()


def test_rule_closing_over_a_finished_jit_value_names_the_fix():
    def g(x, k):
        @numax.custom_jvp
        def h(y):
            return k * y

        h.defjvp(lambda primals, tangents: (h(*primals), 10.0 * k * tangents[0]))
        return h(x)

    with pytest.raises(UnexpectedTracerError, match="Pass such values to the custom function as arguments"):
        numax.grad(numax.jit(g))(np.float32(2.0), np.float32(3.0))


def test_custom_vjp_without_rule_is_an_error():
    f = numax.custom_vjp(lambda x: x)
    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function <lambda> using defvjp"):
        f(1.0)


# --- the IR and lowering -----------------------------------------------------------------------------------
def test_make_jaxpr_shows_the_call_primitives():
    x = np.float32(1.0)
    text = str(numax.make_jaxpr(X["log1pexp"])(x))
    assert "custom_jvp_call[" in text and "jvp=log1pexp_jvp" in text and "name=log1pexp" in text
    assert "symbolic_zeros=False" in text and "exp" in text
    text = str(numax.make_jaxpr(X["sin_vjp"])(x, x))
    assert "custom_vjp_call[" in text and "fwd=sin_fwd" in text and "bwd=sin_bwd" in text
    # reverse mode leaves neither custom_lin nor anything of the rule's bookkeeping in the program
    text = str(numax.make_jaxpr(numax.grad(X["sin_vjp"]))(x, x))
    assert "custom_lin" not in text and "cos" in text
    # forward mode stages custom_lin (which fails when compiled or run)
    text = str(numax.make_jaxpr(lambda x, y: numax.jvp(X["sin_vjp"], (x, y), (x, y)))(x, x))
    assert "custom_lin[" in text and "bwd=sin_bwd" in text and "num_res=3" in text
    # the staged call is inlined when lowered
    hlo = numax.jit(X["log1pexp"]).lower(x).as_text()
    assert "custom" not in hlo and "stablehlo.exponential" in hlo


def test_custom_jvp_inside_jit_is_traced_once_per_signature():
    calls = []

    @numax.custom_jvp
    def f(x):
        calls.append(1)
        return xnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0]))
    jitted = numax.jit(lambda x: f(x) * 2.0)
    for value in [1.0, 2.0, 3.0]:
        assert float(jitted(np.float32(value))) == pytest.approx(2 * np.sin(value), rel=1e-6)
    assert len(calls) == 1


def test_eager_call_runs_the_function():
    calls = []

    @numax.custom_vjp
    def f(x):
        calls.append(type(x))
        return x * 2.0

    f.defvjp(lambda x: (f(x), None), lambda res, g: (g,))
    assert float(f(np.float32(3.0))) == 6.0
    assert calls == [np.float32]  # called directly, with the concrete value: no tracing


# --- closure_convert -----------------------------------------------------------------------------------------
def define_minimize_like(lib, np_):
    """JAX's closure_convert example shape: a custom_vjp taking a converted closure as a nondiff argument."""
    def apply(fn, x, *args):
        return fn(x, *args)

    apply_vjp = lib.custom_vjp(apply, nondiff_argnums=(0,))

    def fwd(fn, x, *args):
        return apply_vjp(fn, x, *args), (x, args)

    def bwd(fn, res, g):
        x, args = res
        _, pullback = lib.vjp(fn, x, *args)
        return pullback(g * 2.0)

    apply_vjp.defvjp(fwd, bwd)

    def outer(a, x):
        converted, hoisted = lib.closure_convert(lambda z: np_.sin(a * z), x)
        return apply_vjp(converted, x, *hoisted)

    return outer


def test_closure_convert_with_custom_vjp_matches_jax():
    ox, oj = define_minimize_like(numax, xnp), define_minimize_like(jax, jnp)
    a, x = np.float32(0.5), np.float32(2.0)
    expected = jax.grad(oj, argnums=(0, 1))(a, x)
    assert_trees_close(numax.grad(ox, argnums=(0, 1))(a, x), expected)
    assert_trees_close(numax.jit(numax.grad(ox, argnums=(0, 1)))(a, x), expected)
    assert_trees_close(ox(a, x), oj(a, x))


def test_closure_convert_hoists_only_traced_inexact_values():
    c = np.float32(3.0)

    def run(a):
        converted, hoisted = numax.closure_convert(lambda z: z * a + c, np.float32(1.0))
        assert len(hoisted) == 1 and hoisted[0] is a
        return converted(np.float32(2.0), *hoisted)

    assert float(numax.jit(run)(np.float32(4.0))) == 11.0
    converted, hoisted = numax.closure_convert(lambda z: z * c, np.float32(1.0))
    assert hoisted == [] and float(converted(np.float32(2.0))) == 6.0
    with pytest.raises(TypeError, match="same Pytree structure as the example arguments"):
        converted((np.float32(2.0),))
