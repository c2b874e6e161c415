"""numax.checkpoint / remat: same values and derivatives as without it (jax.checkpoint as the oracle),
fewer residuals saved for the backward pass (counted on the linear program, compared with JAX's
`saved_residuals`), policies, names, static arguments, pytrees, and the recomputation visible in the IR."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals  # the oracle's residual list
from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name
from numax.core import pytree as tree
from numax.transforms.checkpoint import checkpoint_p, name_p, saved_residuals
from numax.transforms.linearize import linearize_flat

import numax
import numax.ad_checkpoint
from numax import lax
from numax.test_util import check_grads

policies = numax.checkpoint_policies
jax_policies = jax.checkpoint_policies

_contract = (((1,), (0,)), ((), ()))


# --- functions written twice: with numax.lax and with jax ------------------------------------------------------
def chain(x, lib=lax):
    for _ in range(8):
        x = lib.sin(x)
    return x


def mlp(x, ws, lib=lax):
    for w in ws:
        x = lib.sin(lib.dot_general(w, x, _contract))
    return x


def named(x, lib=lax, name=numax.ad_checkpoint.checkpoint_name):
    a = name(lib.sin(x), "a")
    b = name(lib.sin(a), "b")
    return lib.sin(b) * x


def jax_named(x):
    return named(x, jax.lax, jax_checkpoint_name)


def batched_dots(x, w):
    """A dot without batch dimensions, then one with a batch dimension."""
    y = lax.sin(lax.dot_general(x, w, (((2,), (0,)), ((), ()))))  # [2,3,4] x [4,4] -> [2,3,4]
    z = lax.dot_general(y, y, (((2,), (2,)), ((0,), (0,))))  # batch 0: [2,3,3]
    return lax.sin(z)


def jax_batched_dots(x, w):
    y = jnp.sin(jax.lax.dot_general(x, w, (((2,), (0,)), ((), ()))))
    return jnp.sin(jax.lax.dot_general(y, y, (((2,), (2,)), ((0,), (0,)))))


def _inputs(rng):
    x = rng.uniform(0.1, 1.0, (3,)).astype(np.float32)
    ws = [rng.uniform(-1.0, 1.0, (3, 3)).astype(np.float32) for _ in range(4)]
    return x, ws


# --- counting residuals ----------------------------------------------------------------------------------
def residual_avals(f, *args):
    """(shape, dtype) of each value the linear program of `f` at `args` keeps from the forward pass."""
    leaves, in_tree = tree.tree_flatten(args)

    def flat(*xs):
        return tree.tree_leaves(f(*tree.tree_unflatten(in_tree, xs)))

    _, linear = linearize_flat(flat, leaves)
    return sorted((tuple(np.shape(r)), str(np.asarray(r).dtype)) for r in linear.residuals), linear


def jax_residual_avals(f, *args):
    return sorted((tuple(aval.shape), str(aval.dtype)) for aval, _ in jax_saved_residuals(f, *args))


# --- values and derivatives -----------------------------------------------------------------------------
def test_values_unchanged_eager_and_jit(rng):
    x, ws = _inputs(rng)
    expected = mlp(x, ws)
    assert_close(numax.checkpoint(mlp)(x, ws), expected)
    assert_close(numax.jit(numax.checkpoint(mlp))(x, ws), expected)
    assert_close(numax.remat(chain)(x), chain(x))


@pytest.mark.parametrize("policy_name", [None, "everything_saveable", "nothing_saveable", "dots_saveable",
                                         "dots_with_no_batch_dims_saveable"])
def test_mlp_grad_matches_jax_checkpoint(rng, policy_name):
    x, ws = _inputs(rng)
    policy = getattr(policies, policy_name) if policy_name else None
    jax_policy = getattr(jax_policies, policy_name) if policy_name else None
    loss = lambda x, ws: numax.checkpoint(mlp, policy=policy)(x, ws).sum()  # noqa: E731
    jax_loss = lambda x, ws: jax.checkpoint(lambda x, ws: mlp(x, ws, jax.lax), policy=jax_policy)(x, ws).sum()  # noqa: E731
    got = numax.grad(loss, argnums=(0, 1))(x, ws)
    want = jax.grad(jax_loss, argnums=(0, 1))(x, ws)
    for g, w in zip(tree.tree_leaves(got), tree.tree_leaves(want)):
        assert_close(g, w, scale=10)


def test_chain_grad_and_second_order_match_jax():
    x = np.float32(0.7)
    assert_close(numax.grad(numax.checkpoint(chain))(x), jax.grad(jax.checkpoint(lambda x: chain(x, jax.lax)))(x))
    got = numax.grad(numax.grad(numax.checkpoint(chain)))(x)
    want = jax.grad(jax.grad(jax.checkpoint(lambda x: chain(x, jax.lax))))(x)
    assert_close(got, want, scale=10)
    assert_close(got, numax.grad(numax.grad(chain))(x), scale=10)


def test_grad_of_grad_of_nested_checkpoints():
    inner = numax.checkpoint(lambda x: lax.sin(lax.sin(x)) * x)
    outer = numax.checkpoint(lambda x: lax.cos(inner(lax.sin(x))))
    jinner = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) * x)
    jouter = jax.checkpoint(lambda x: jnp.cos(jinner(jnp.sin(x))))
    x = np.float32(0.4)
    assert_close(numax.grad(outer)(x), jax.grad(jouter)(x))
    assert_close(numax.grad(numax.grad(outer))(x), jax.grad(jax.grad(jouter))(x), scale=10)


def test_forward_mode_and_linearize(rng):
    x, ws = _inputs(rng)
    t = rng.uniform(-1, 1, x.shape).astype(np.float32)
    f = numax.checkpoint(lambda x: mlp(x, ws))
    out, tangent = numax.jvp(f, (x,), (t,))
    jout, jtangent = jax.jvp(jax.checkpoint(lambda x: mlp(x, ws, jax.lax)), (x,), (t,))
    assert_close(out, jout)
    assert_close(tangent, jtangent, scale=10)
    out, f_jvp = numax.linearize(f, x)
    assert_close(f_jvp(t), jtangent, scale=10)


def test_closing_over_a_differentiated_value():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)

    def loss(w):
        return numax.checkpoint(lambda y: lax.sin(lax.sin(y * w)))(x).sum()

    def jax_loss(w):
        return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y * w)))(x).sum()

    assert_close(numax.grad(loss)(np.float32(0.5)), jax.grad(jax_loss)(np.float32(0.5)))
    assert_close(numax.grad(numax.grad(loss))(np.float32(0.5)), jax.grad(jax.grad(jax_loss))(np.float32(0.5)),
                 scale=10)


def test_check_grads_float64():
    numax.config.update("numax_enable_x64", True)
    try:
        x = np.array([0.3, -0.8, 1.1])
        w = np.array([[0.5, -0.2, 0.1], [0.3, 0.9, -0.4], [0.2, 0.1, 0.7]])
        f = numax.checkpoint(lambda x, w: lax.sin(lax.dot_general(w, lax.cos(x), _contract)) * x,
                             policy=policies.dots_saveable)
        check_grads(f, (x, w), order=2, modes=("fwd", "rev"))
        check_grads(numax.checkpoint(named), (x,), order=2, modes=("rev",))
    finally:
        numax.config.update("numax_enable_x64", False)


def test_integer_argument_and_output():
    def f(x, n):
        return lax.sin(x) * lax.convert_element_type(n, np.float32), n

    x, n = np.float32(0.3), np.int32(3)
    out, n_out = numax.checkpoint(f)(x, n)
    assert n_out.dtype == np.int32 and int(n_out) == 3
    assert_close(numax.grad(lambda x: numax.checkpoint(f)(x, n)[0])(x), np.float32(3 * np.cos(0.3)))


# --- residuals ------------------------------------------------------------------------------------------
def test_chain_saves_only_its_input():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    plain, _ = residual_avals(chain, x)
    remat, linear = residual_avals(numax.checkpoint(chain), x)
    assert len(plain) == 8  # cos of every layer
    assert remat == [((3,), "float32")]
    assert linear.residuals[0] is x  # the saved value is the input itself, nothing computed
    assert len(residual_avals(numax.checkpoint(chain, policy=policies.everything_saveable), x)[0]) == 8
    assert remat == jax_residual_avals(jax.checkpoint(lambda x: chain(x, jax.lax)), x)
    # The linear program holds one checkpoint equation and recomputes all sines there.
    (eqn,) = linear.program.equations
    assert eqn.primitive is checkpoint_p and eqn.params["differentiated"]
    assert sum(e.primitive.name == "sin" for e in eqn.params["program"].equations) == 7


@pytest.mark.parametrize("policy_name", [None, "everything_saveable", "nothing_saveable", "dots_saveable",
                                         "checkpoint_dots", "dots_with_no_batch_dims_saveable"])
def test_mlp_residuals_match_jax(rng, policy_name):
    x, ws = _inputs(rng)
    policy = getattr(policies, policy_name) if policy_name else None
    jax_policy = getattr(jax_policies, policy_name) if policy_name else None
    got, _ = residual_avals(numax.checkpoint(mlp, policy=policy), x, ws)
    want = jax_residual_avals(jax.checkpoint(lambda x, ws: mlp(x, ws, jax.lax), policy=jax_policy), x, ws)
    assert got == want
    if policy_name in ("dots_saveable", "checkpoint_dots", "dots_with_no_batch_dims_saveable"):
        assert got.count(((3,), "float32")) == 1 + 4  # x and the four dot outputs; no sin or cos saved
    if policy_name in (None, "nothing_saveable"):
        assert got == sorted([((3,), "float32")] + [((3, 3), "float32")] * 4)  # the inputs only


def test_dots_saveable_keeps_the_dot_outputs(rng):
    x, ws = _inputs(rng)
    _, linear = residual_avals(numax.checkpoint(mlp, policy=policies.dots_saveable), x, ws)
    (eqn,) = linear.program.equations
    inner = eqn.params["program"]
    # No dot_general is recomputed forward: the only ones left are the transposable tangent ones.
    recomputed = [e.primitive.name for e in inner.equations if e.primitive.name in ("sin", "cos", "dot_general")]
    assert "sin" in recomputed and "cos" in recomputed
    _, plain_linear = residual_avals(numax.checkpoint(mlp), x, ws)
    (plain_eqn,) = plain_linear.program.equations
    dots = lambda p: sum(e.primitive.name == "dot_general" for e in p.equations)  # noqa: E731
    assert dots(plain_eqn.params["program"]) > dots(inner)  # without the policy the dots are recomputed too


def test_dots_with_no_batch_dims(rng):
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    for name in ("dots_saveable", "dots_with_no_batch_dims_saveable"):
        got, _ = residual_avals(numax.checkpoint(batched_dots, policy=getattr(policies, name)), x, w)
        want = jax_residual_avals(jax.checkpoint(jax_batched_dots, policy=getattr(jax_policies, name)), x, w)
        assert got == want, name
    with_batch, _ = residual_avals(numax.checkpoint(batched_dots, policy=policies.dots_saveable), x, w)
    without_batch, _ = residual_avals(numax.checkpoint(batched_dots, policy=policies.dots_with_no_batch_dims_saveable),
                                      x, w)
    assert ((2, 3, 3), "float32") in with_batch and ((2, 3, 3), "float32") not in without_batch
    got = numax.grad(lambda x: numax.checkpoint(batched_dots, policy=policies.dots_with_no_batch_dims_saveable)(
        x, w).sum())(x)
    assert_close(got, jax.grad(lambda x: jax_batched_dots(x, w).sum())(x), scale=10)


@pytest.mark.parametrize("make_policy", [
    lambda p: None,
    lambda p: p.save_only_these_names("a"),
    lambda p: p.save_only_these_names("a", "b"),
    lambda p: p.save_any_names_but_these("a"),
    lambda p: p.save_any_names_but_these(),
    lambda p: p.save_from_both_policies(p.save_only_these_names("b"), p.dots_saveable),
])
def test_name_policies_match_jax(make_policy):
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    got, _ = residual_avals(numax.checkpoint(named, policy=make_policy(policies)), x)
    want = jax_residual_avals(jax.checkpoint(jax_named, policy=make_policy(jax_policies)), x)
    assert got == want
    assert_close(numax.grad(lambda x: numax.checkpoint(named, policy=make_policy(policies))(x).sum())(x),
                 jax.grad(lambda x: jax.checkpoint(jax_named, policy=make_policy(jax_policies))(x).sum())(x))


def test_save_only_these_names_saves_the_named_value():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    _, linear = residual_avals(numax.checkpoint(named, policy=policies.save_only_these_names("b")), x)
    expected_b = np.sin(np.sin(x))
    saved = [r for r in linear.residuals if r is not x]
    assert len(saved) == 1
    assert_close(saved[0], expected_b)


def test_checkpoint_name_primitive():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    name = numax.ad_checkpoint.checkpoint_name
    assert name(x, "a") is x  # an identity eagerly
    tree_out = name({"u": x, "v": (x, x)}, "t")
    assert tree.tree_structure(tree_out) == tree.tree_structure({"u": x, "v": (x, x)})
    text = str(numax.make_jaxpr(lambda x: name(lax.sin(x), "hidden"))(x))
    assert "name[name=hidden]" in text
    assert_close(numax.jit(lambda x: name(lax.sin(x), "h") * 2)(x), 2 * np.sin(x))
    assert_close(numax.grad(lambda x: name(lax.sin(x), "h").sum())(x), np.cos(x))
    _, tangent = numax.jvp(lambda x: name(x, "h"), (x,), (x,))
    assert_close(tangent, x)
    # The tangent is not named: the linear program of an un-checkpointed use holds no `name`.
    _, linear = residual_avals(lambda x: name(lax.sin(x), "h"), x)
    assert all(e.primitive is not name_p for e in linear.program.equations)


# --- under jit, and the IR --------------------------------------------------------------------------------
def test_jit_of_grad_and_grad_of_jit(rng):
    x, ws = _inputs(rng)
    loss = lambda x: numax.checkpoint(mlp)(x, ws).sum()  # noqa: E731
    want = jax.grad(lambda x: jax.checkpoint(lambda x: mlp(x, ws, jax.lax))(x).sum())(x)
    assert_close(numax.jit(numax.grad(loss))(x), want, scale=10)
    assert_close(numax.grad(numax.jit(loss))(x), want, scale=10)
    assert_close(numax.jit(numax.grad(numax.jit(loss)))(x), want, scale=10)
    jax_loss = jax.jit(lambda x: jax.checkpoint(lambda x: mlp(x, ws, jax.lax))(x).sum())
    s = np.float32(0.8)
    assert_close(numax.grad(numax.grad(lambda s: numax.jit(loss)(x * s)))(s),
                 jax.grad(jax.grad(lambda s: jax_loss(x * s)))(s), scale=20)


def test_grad_of_jit_saves_only_the_input():
    """The forward jit call of grad(jit(f)) returns its residuals as extra outputs: one with checkpoint."""
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)

    def forward_outputs(f):
        jaxpr = numax.make_jaxpr(numax.grad(numax.jit(lambda x: f(x).sum())))(x)
        first = jaxpr.program.equations[0]
        assert first.primitive.name == "jit"
        return len(first.outvars) - 1  # minus the primal output

    assert forward_outputs(chain) == 8
    assert forward_outputs(numax.checkpoint(chain)) == 1


def _checkpoint_eqns(program):
    return [e for e in program.equations if e.primitive is checkpoint_p]


def _names(program):
    return [e.primitive.name for e in program.equations]


def test_make_jaxpr_of_grad_shows_the_recomputation():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    jaxpr = numax.make_jaxpr(numax.grad(lambda x: numax.checkpoint(chain)(x).sum()))(x).program
    forward, backward = _checkpoint_eqns(jaxpr)
    assert not forward.params["differentiated"] and backward.params["differentiated"]
    assert _names(forward.params["program"].program) == ["sin"] * 8
    backward_names = _names(backward.params["program"].program)
    assert backward_names.count("sin") == 7 and backward_names.count("cos") == 8  # recomputed, then used
    assert backward.inputs[0] is jaxpr.invars[0]  # fed the input, not an intermediate
    # Without checkpoint, nothing is recomputed after the forward pass: the last sin comes before the first mul.
    plain = _names(numax.make_jaxpr(numax.grad(lambda x: chain(x).sum()))(x).program)
    assert plain.count("sin") == 8
    assert max(i for i, n in enumerate(plain) if n == "sin") < plain.index("mul")
    text = str(numax.make_jaxpr(numax.grad(lambda x: numax.checkpoint(chain)(x).sum()))(x))
    assert "checkpoint[" in text and "differentiated=True" in text and "prevent_cse=True" in text


def test_lowering_puts_a_barrier_before_the_recomputation():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    text = numax.jit(numax.grad(lambda x: numax.checkpoint(chain)(x).sum())).lower(x).as_text()
    barrier = text.index("stablehlo.optimization_barrier")
    assert text.count("stablehlo.sine") == 8 + 7
    assert text[barrier:].count("stablehlo.sine") == 7  # the recomputation reads the barrier's results
    no_cse = numax.jit(numax.grad(lambda x: numax.checkpoint(chain, prevent_cse=False)(x).sum())).lower(x).as_text()
    assert "optimization_barrier" not in no_cse
    forward_only = numax.jit(numax.checkpoint(chain)).lower(x).as_text()
    assert "optimization_barrier" not in forward_only  # only the differentiated calls need it
    assert_close(numax.jit(numax.grad(lambda x: numax.checkpoint(chain, prevent_cse=False)(x).sum()))(x),
                 jax.grad(lambda x: chain(x, jax.lax).sum())(x))


# --- the wrapper ------------------------------------------------------------------------------------------
def test_static_argnums():
    traces = []

    def f(x, n, flip):
        traces.append((n, flip))
        for _ in range(n):
            x = lax.sin(x)
        return lax.neg(x) if flip else x

    def jf(x, n, flip):
        for _ in range(n):
            x = jnp.sin(x)
        return -x if flip else x

    x = np.float32(0.9)
    g = numax.checkpoint(f, static_argnums=(1, -1))
    for n, flip in [(2, False), (3, True)]:
        assert_close(g(x, n, flip), jf(x, n, flip))
        assert_close(numax.grad(g)(x, n, flip), jax.grad(jax.checkpoint(jf, static_argnums=(1, 2)))(x, n, flip))
    assert numax.checkpoint(lambda x, n: f(x, n, False), static_argnums=1)(x, 2) == g(x, 2, False)
    count = len(traces)
    numax.grad(g)(x, 3, True)  # traced before for this signature
    assert len(traces) == count
    with pytest.raises(ValueError, match="static_argnums"):
        numax.checkpoint(f, static_argnums=(3,))(x, 2, False)
    with pytest.raises(TypeError, match="static_argnums"):
        numax.checkpoint(f, static_argnums=[1])
    with pytest.raises(TypeError, match="prevent_cse"):
        numax.checkpoint(f, prevent_cse="yes")


def test_pytrees_and_keyword_arguments(rng):
    x = rng.uniform(-1, 1, (3,)).astype(np.float32)
    params = {"a": x, "b": (2 * x, 3 * x)}

    def f(p, scale=1.0):
        return {"o": lax.sin(p["a"]) * p["b"][0] * scale, "p": (lax.cos(p["b"][1]),)}

    def jf(p, scale=1.0):
        return {"o": jnp.sin(p["a"]) * p["b"][0] * scale, "p": (jnp.cos(p["b"][1]),)}

    cf = numax.checkpoint(f)
    out = cf(params, scale=np.float32(2.0))
    want = jf(params, scale=np.float32(2.0))
    assert tree.tree_structure(out) == tree.tree_structure({"o": 0, "p": (0,)})
    for a, b in zip(tree.tree_leaves(out), tree.tree_leaves(want)):
        assert_close(a, b)
    cts = {"o": x, "p": (x,)}
    _, f_vjp = numax.vjp(lambda p: cf(p, scale=np.float32(2.0)), params)
    _, j_vjp = jax.vjp(lambda p: jax.checkpoint(jf)(p, scale=np.float32(2.0)), params)
    for a, b in zip(tree.tree_leaves(f_vjp(cts)), tree.tree_leaves(j_vjp(cts))):
        assert_close(a, b)


def test_public_names():
    assert numax.ad_checkpoint.checkpoint is numax.checkpoint
    assert numax.ad_checkpoint.checkpoint_policies is numax.checkpoint_policies
    assert policies.checkpoint_dots is policies.dots_saveable
    assert policies.everything_saveable() and not policies.nothing_saveable()
    assert numax.remat.__name__ == "remat"
    f = numax.checkpoint(chain)
    assert f.__name__ == "chain" and f.__wrapped__ is chain


def test_python_scalars_hessian_and_jacobians():
    f = numax.checkpoint(lambda x, y: lax.sin(x) * y)
    assert_close(f(1.0, 2.0), jnp.sin(1.0) * 2.0)
    assert_close(numax.grad(f)(1.0, 2.0), jax.grad(lambda x, y: jnp.sin(x) * y)(1.0, 2.0))
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    h = numax.checkpoint(lambda x: (lax.sin(lax.sin(x)) * x).sum())
    jh = jax.checkpoint(lambda x: (jnp.sin(jnp.sin(x)) * x).sum())
    assert_close(numax.hessian(h)(x), jax.hessian(jh)(x), scale=10)
    s = numax.checkpoint(lambda x: lax.sin(x) * x)
    assert_close(numax.jacfwd(s)(x), jax.jacfwd(lambda x: jnp.sin(x) * x)(x))
    assert_close(numax.jacrev(s)(x), jax.jacrev(lambda x: jnp.sin(x) * x)(x))


def test_jit_inside_checkpoint_is_recomputed():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    g = numax.jit(lambda y: lax.sin(lax.sin(y)))
    f = lambda y: g(y) * y  # noqa: E731
    plain, _ = residual_avals(f, x)
    remat, _ = residual_avals(numax.checkpoint(f), x)
    assert len(plain) > 1 and remat == [((3,), "float32")]
    assert_close(numax.grad(lambda x: numax.checkpoint(f)(x).sum())(x),
                 jax.grad(lambda x: (jnp.sin(jnp.sin(x)) * x).sum())(x))


def test_traces_are_shared_between_wrappers_of_one_function():
    """`grad(lambda x: checkpoint(f)(x))` called in a loop must reuse one program (and its executables)."""
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)

    def program_of(wrapper):
        (eqn,) = numax.make_jaxpr(wrapper)(x).program.equations
        return eqn.params["program"]

    assert program_of(numax.checkpoint(chain)) is program_of(numax.checkpoint(chain, policy=policies.dots_saveable))
    closure = np.float32(2.0)
    assert program_of(numax.checkpoint(lambda y: y * closure)) is not program_of(numax.checkpoint(chain))


def _jax_sources(f, *args):
    def short(source):
        return source if source.startswith("from the argument") else source.split(" from ")[0]

    return sorted((tuple(aval.shape), short(source)) for aval, source in jax_saved_residuals(f, *args))


@pytest.mark.parametrize("policy_name", [None, "dots_saveable", "everything_saveable"])
def test_saved_residuals_name_their_sources_like_jax(rng, policy_name):
    x, ws = _inputs(rng)
    policy = getattr(policies, policy_name) if policy_name else None
    jax_policy = getattr(jax_policies, policy_name) if policy_name else None

    def f(x, ws):
        return mlp(x, ws)

    def jf(x, ws):
        return mlp(x, ws, jax.lax)

    got = sorted((aval.shape, source) for aval, source in saved_residuals(numax.checkpoint(f, policy=policy), x, ws))
    assert got == _jax_sources(jax.checkpoint(jf, policy=jax_policy), x, ws)
    if policy_name == "dots_saveable":
        assert got.count(((3,), "output of dot_general")) == 4


def test_saved_residuals_of_names_and_pytrees(capsys):
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)

    def f(d):
        return named(d["a"]) * d["b"][1]

    def jf(d):
        return jax_named(d["a"]) * d["b"][1]

    d = {"a": x, "b": (x, 2 * x)}
    got = sorted((aval.shape, source) for aval, source in saved_residuals(
        numax.checkpoint(f, policy=policies.save_only_these_names("b")), d))
    assert got == _jax_sources(jax.checkpoint(jf, policy=jax_policies.save_only_these_names("b")), d)
    assert ((3,), "named 'b'") in got and ((3,), "from the argument d['b'][1]") in got
    numax.ad_checkpoint.print_saved_residuals(numax.checkpoint(chain), x)
    assert capsys.readouterr().out == "f32[3] from the argument x\n"


def test_checkpointed_blocks_save_the_block_inputs():
    x = np.linspace(0.1, 1.0, 3).astype(np.float32)
    block = numax.checkpoint(lambda x: lax.sin(lax.sin(x)))
    jblock = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))

    def f(x, block=block):
        for _ in range(4):
            x = block(x)
        return x

    got = sorted((aval.shape, source) for aval, source in saved_residuals(f, x))
    assert got == _jax_sources(lambda x: f(x, jblock), x)
    assert len(got) == 4  # each block's input (three are the previous block's final sin); nothing inside
    assert_close(numax.jit(numax.grad(lambda x: f(x).sum()))(x), jax.grad(lambda x: f(x, jblock).sum())(x))
