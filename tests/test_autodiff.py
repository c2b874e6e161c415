"""The differentiation machinery and API: jvp, linearize, vjp, grad, value_and_grad, jacobians, their
composition with each other and with jit, symbolic zeros, residuals, and JAX's error messages."""

import math

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from numax.transforms.linearize import linearize_flat

import numax
import numax.numpy as xnp
from numax import lax


def f_poly(x, y):
    return lax.sin(x) * y + x * x * y


# --- grad and value_and_grad -------------------------------------------------------------------------------
def test_grad_matches_jax_and_calculus():
    x, y = np.float32(0.7), np.float32(-1.3)
    gx, gy = numax.grad(f_poly, argnums=(0, 1))(x, y)
    assert_close(gx, jax.grad(lambda x, y: jnp.sin(x) * y + x * x * y, argnums=(0, 1))(x, y)[0])
    np.testing.assert_allclose(float(gx), math.cos(0.7) * -1.3 + 2 * 0.7 * -1.3, rtol=1e-6)
    np.testing.assert_allclose(float(gy), math.sin(0.7) + 0.49, rtol=1e-6)
    value, g = numax.value_and_grad(f_poly)(x, y)
    np.testing.assert_allclose(float(value), math.sin(0.7) * -1.3 + 0.49 * -1.3, rtol=1e-6)
    assert_close(g, gx)


def test_grad_of_python_scalar_is_weak_like_jax():
    g = numax.grad(lambda x: x * x)(3.0)
    expected = jax.grad(lambda x: x * x)(3.0)
    assert g.dtype == expected.dtype and g.weak_type == expected.weak_type
    assert float(g) == 6.0


def test_grad_pytrees_keep_structure():
    params = {"w": np.arange(3, dtype=np.float32), "b": (np.float32(2.0), [np.float32(-1.0)])}

    def f(p):
        return lax.reduce_sum(lax.sin(p["w"]), (0,)) * p["b"][0] + p["b"][1][0] * p["b"][0]

    g = numax.grad(f)(params)
    assert numax.tree.structure(g) == numax.tree.structure(params)
    np.testing.assert_allclose(np.asarray(g["w"]), np.cos(np.arange(3)) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(float(g["b"][0]), np.sin(np.arange(3)).sum() - 1.0, rtol=1e-6)
    np.testing.assert_allclose(float(g["b"][1][0]), 2.0)


def test_has_aux_and_kwargs():
    def f(x, scale=1.0):
        return lax.sin(x) * scale, {"twice": x * 2}

    (value, aux), g = numax.value_and_grad(f, has_aux=True)(np.float32(0.5), scale=3.0)
    np.testing.assert_allclose(float(g), 3 * math.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(float(aux["twice"]), 1.0)
    g2, aux2 = numax.grad(f, has_aux=True)(np.float32(0.5))
    np.testing.assert_allclose(float(g2), math.cos(0.5), rtol=1e-6)
    assert not isinstance(aux2["twice"], numax.core.trace.Tracer)


@pytest.mark.parametrize("fun, args, message", [
    (lambda x: x * 2.0, (np.int32(3),), "grad requires real- or complex-valued inputs"),
    (lambda x: x * 2.0, (np.ones(3, np.float32),), r"Gradient only defined for scalar-output functions. Output "
                                                   r"had shape: \(3,\)"),
    (lambda x: lax.complex(x, x), (np.float32(1.0),), "grad requires real-valued outputs"),
])
def test_grad_errors_like_jax(fun, args, message):
    with pytest.raises(TypeError, match=message):
        numax.grad(fun)(*args)


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match="argnums"):
        numax.grad(lambda x: x, argnums=2)(1.0)


def test_allow_int_gives_float0():
    g = numax.grad(lambda x, n: x * 2.0, argnums=(0, 1), allow_int=True)(np.float32(1.0), np.int32(3))
    assert float(g[0]) == 2.0
    assert g[1].dtype == numax.core.dtypes.float0 and g[1].shape == ()


# --- jvp, vjp, linearize ----------------------------------------------------------------------------------
def test_jvp_matches_jax():
    x, y = np.float32([0.1, 0.5, 2.0]), np.float32([1.0, -2.0, 0.5])
    tx, ty = np.float32([1.0, 0.0, -1.0]), np.float32([0.5, 0.5, 0.5])
    out, t = numax.jvp(f_poly, (x, y), (tx, ty))
    jout, jt = jax.jvp(lambda x, y: jnp.sin(x) * y + x * x * y, (x, y), (tx, ty))
    assert_close(out, jout)
    assert_close(t, jt)


def test_jvp_errors():
    with pytest.raises(TypeError, match="must be tuples or lists"):
        numax.jvp(lax.sin, np.float32(1.0), np.float32(1.0))
    with pytest.raises(TypeError, match="expected tangent dtype float32, but got tangent dtype float16"):
        numax.jvp(lax.sin, (np.float32(1.0),), (np.float16(1.0),))
    with pytest.raises(TypeError, match="tangent dtype must be float0"):
        numax.jvp(lambda n: n, (np.int32(1),), (np.int32(1),))
    with pytest.raises(ValueError, match="different primal and tangent shapes"):
        numax.jvp(lax.sin, (np.ones(3, np.float32),), (np.ones(2, np.float32),))


def test_jvp_integer_input_has_float0_tangent_output():
    zero = np.zeros((), numax.core.dtypes.float0)
    out, t = numax.jvp(lambda n, x: (n * 2, x * 3.0), (np.int32(2), np.float32(1.0)), (zero, np.float32(1.0)))
    assert int(out[0]) == 4 and t[0].dtype == numax.core.dtypes.float0
    assert float(t[1]) == 3.0


def test_vjp_multiple_outputs_and_unused_inputs():
    def f(x, y, unused):
        return lax.sin(x) * y, x + y

    primals = (np.float32(0.3), np.float32(2.0), np.float32(5.0))
    out, pullback = numax.vjp(f, *primals)
    cts = (np.float32(1.0), np.float32(-1.0))
    gx, gy, gu = pullback(cts)
    jout, jpullback = jax.vjp(lambda x, y, u: (jnp.sin(x) * y, x + y), *primals)
    for a, b in zip(pullback(cts), jpullback(cts)):
        assert_close(a, b)
    assert float(gu) == 0.0


def test_vjp_cotangent_errors():
    _, pullback = numax.vjp(lambda x: (x, x), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="Tree structure of cotangent input"):
        pullback(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="Shape of cotangent input"):
        pullback((np.ones(3, np.float32), np.ones(2, np.float32)))
    with pytest.raises(TypeError, match="not the expected tangent type"):
        pullback((np.ones(2, np.float16), np.ones(2, np.float32)))


def test_linearize_holds_only_tangent_work():
    x = np.float32([0.2, 0.4])
    out, f_jvp = numax.linearize(lambda x: lax.sin(lax.sin(x)), x)
    assert_close(out, np.sin(np.sin(x)))
    t = np.float32([1.0, 2.0])
    assert_close(f_jvp(t), jax.jvp(lambda x: jnp.sin(jnp.sin(x)), (x,), (t,))[1])
    program = f_jvp.linear.program
    assert {e.primitive.name for e in program.equations} == {"mul"}
    # The residuals are the two cosines, nothing else.
    assert len(program.constvars) == 2


def test_residuals_are_only_what_the_backward_pass_reads():
    def chain(x):
        for _ in range(6):
            x = lax.sin(x)
        return x

    flat = lambda x: [chain(x)]
    _, linear = linearize_flat(flat, [np.float32([0.5, 0.1])])
    assert len(linear.residuals) == 6  # one cosine per layer; the sines themselves are not kept
    assert all(e.primitive.name == "mul" for e in linear.program.equations)


def test_symbolic_zeros_do_no_work_for_unused_arguments():
    def f(x, *others):
        return lax.sin(x) * 2.0 + others[0] * 0.0

    for count in (2, 20):
        args = [np.float32(i) for i in range(count + 1)]
        _, linear = linearize_flat(lambda *a: [f(*a)], args)
        names = [e.primitive.name for e in linear.program.equations]
        assert len(names) <= 4, names  # independent of the number of arguments
        grads = numax.grad(f, argnums=tuple(range(count + 1)))(*args)
        assert float(grads[0]) == pytest.approx(2 * math.cos(0.0))
        assert all(float(g) == 0.0 for g in grads[2:])


# --- higher order, nesting, jit ---------------------------------------------------------------------------
def test_third_derivative():
    f = lambda x: lax.sin(x) * x
    d3 = numax.grad(numax.grad(numax.grad(f)))(np.float32(0.8))
    # (x sin x)''' = -3 sin x - x cos x
    np.testing.assert_allclose(float(d3), -3 * math.sin(0.8) - 0.8 * math.cos(0.8), rtol=1e-5)
    assert_close(d3, jax.grad(jax.grad(jax.grad(lambda x: jnp.sin(x) * x)))(np.float32(0.8)), scale=10)


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] at any point is 1: the inner derivative must not see x's perturbation.
    f = lambda x: x * numax.grad(lambda y: x + y)(np.float32(1.0))
    assert float(numax.grad(f)(np.float32(3.0))) == 1.0
    g = lambda x: numax.jvp(lambda y: x * y, (np.float32(2.0),), (np.float32(1.0),))[1]
    assert float(numax.jvp(g, (np.float32(3.0),), (np.float32(1.0),))[1]) == 1.0


def test_closure_over_outer_tracer():
    f = lambda x: numax.grad(lambda y: lax.sin(x * y))(np.float32(2.0))
    # d/dx [x cos(2x)] = cos(2x) - 2x sin(2x)
    np.testing.assert_allclose(float(numax.grad(f)(np.float32(0.3))),
                               math.cos(0.6) - 0.6 * math.sin(0.6), rtol=1e-5)


def test_python_control_flow_on_primals_under_grad():
    def f(x):
        if x > 0:
            return lax.sin(x)
        return lax.cos(x)

    assert float(numax.grad(f)(np.float32(1.0))) == pytest.approx(math.cos(1.0))
    assert float(numax.grad(f)(np.float32(-1.0))) == pytest.approx(math.sin(1.0))


@pytest.mark.parametrize("compose", [
    lambda f: numax.jit(numax.grad(f)),
    lambda f: numax.grad(numax.jit(f)),
    lambda f: numax.jit(numax.grad(numax.jit(f))),
    lambda f: numax.grad(numax.grad(numax.jit(f))),
    lambda f: numax.jit(numax.grad(numax.grad(f))),
])
def test_jit_and_grad_compose(compose):
    f = lambda x: lax.sin(x) * x * x
    value = compose(f)(np.float32(0.9))
    first = numax.grad(f)(np.float32(0.9))
    second = numax.grad(numax.grad(f))(np.float32(0.9))
    assert_close(value, first if abs(float(value) - float(first)) < 1e-5 else second)


def test_grad_of_jit_differentiates_the_program_without_retracing():
    calls = []

    @numax.jit
    def f(x):
        calls.append(1)
        return lax.sin(x) * x

    g = numax.grad(f)
    for x in (0.1, 0.5, 0.9):
        np.testing.assert_allclose(float(g(np.float32(x))), math.cos(x) * x + math.sin(x), rtol=1e-6)
    assert len(calls) == 1
    jaxpr = str(numax.make_jaxpr(g)(np.float32(0.3)))
    assert "transpose(jvp(f))" in jaxpr and jaxpr.count("sin") == 1


def test_jacobians_agree_and_match_jax():
    def f(x):
        return lax.sin(x) * x[0] + lax.exp(x) * x[1]

    x = np.float32([0.3, -0.4, 1.1])
    jf, jr = numax.jacfwd(f)(x), numax.jacrev(f)(x)
    expected = jax.jacfwd(lambda x: jnp.sin(x) * x[0] + jnp.exp(x) * x[1])(x)
    assert_close(jf, expected)
    assert_close(jr, expected)


def test_hessian_of_a_polynomial():
    a = np.float32([[1.0, 2.0], [0.5, -1.0]])

    def f(x):
        return x[0] * x[0] * a[0, 0] + x[0] * x[1] * (a[0, 1] + a[1, 0]) + x[1] * x[1] * a[1, 1]

    h = numax.hessian(f)(np.float32([0.3, 0.7]))
    np.testing.assert_allclose(np.asarray(h), a + a.T, rtol=1e-6)


def test_jacobian_pytree_structure():
    def f(p):
        return {"out": p["a"] * p["b"]}

    p = {"a": np.float32([1.0, 2.0]), "b": np.float32([3.0, 4.0])}
    jac = numax.jacrev(f)(p)
    assert np.asarray(jac["out"]["a"]).shape == (2, 2)
    np.testing.assert_allclose(np.asarray(jac["out"]["b"]), np.diag([1.0, 2.0]))
    jac_f = numax.jacfwd(f)(p)
    np.testing.assert_allclose(np.asarray(jac_f["out"]["a"]), np.diag([3.0, 4.0]))


def test_stop_gradient():
    f = lambda x: lax.sin(x) * lax.stop_gradient(x)
    np.testing.assert_allclose(float(numax.grad(f)(np.float32(0.5))), math.cos(0.5) * 0.5, rtol=1e-6)
    assert "stop_gradient" in str(numax.make_jaxpr(f)(np.float32(0.5)))


def test_escaped_tracer_is_reported():
    saved = []

    def f(x):
        saved.append(x)
        return x * 2.0

    numax.grad(f)(np.float32(1.0))
    with pytest.raises(numax.errors.UnexpectedTracerError):
        saved[0] * 3.0


def test_grad_through_numpy_code_matches_jax():
    w = np.float32([[0.5, -0.2], [0.1, 0.3], [-0.7, 0.4]])
    x = np.float32([[1.0, 2.0, 3.0], [0.5, -1.0, 0.2]])

    def loss(w, x, np_):
        return np_.mean(np_.tanh(x @ w) ** 2)

    assert_close(numax.grad(loss)(w, x, xnp), jax.grad(loss)(w, x, jnp), scale=10)
    assert_close(numax.jit(numax.grad(loss), static_argnums=2)(w, x, xnp), jax.grad(loss)(w, x, jnp), scale=10)
