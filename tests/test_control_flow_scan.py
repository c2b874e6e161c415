"""lax.scan, lax.map and lax.associative_scan against jax: values, pytrees, reverse/unroll, derivatives
(forward, reverse, nested, through jit), vmap, the IR they stage and the errors they raise."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.lax import elementwise as E
from numax.lowering import dispatch
from numax.transforms.vmap import vmap
from oracle import jit_all

import numax
import numax.numpy as nnp
from numax import lax
from numax.test_util import check_grads


def _both(numax_fn, jax_fn, *args, scale=1.0, check_dtype=True):
    """numax_fn(*args) (eager and jitted) against jax_fn(*args), leaf by leaf. jax's values (the oracle) come
    jitted: one compile, where eagerly every op outside the scan compiles too."""
    expected = jax.jit(jax_fn)(*args)
    for fn in (numax_fn, numax.jit(numax_fn)):
        actual = fn(*args)
        actual_leaves, actual_tree = jax.tree_util.tree_flatten(
            numax.core.pytree.tree_map(np.asarray, actual))
        expected_leaves, expected_tree = jax.tree_util.tree_flatten(expected)
        assert actual_tree == expected_tree, (actual_tree, expected_tree)
        for a, e in zip(actual_leaves, expected_leaves):
            assert_close(a, np.asarray(e), scale=scale, check_dtype=check_dtype)


def _scan_eqns(program):
    return [e for e in program.equations if e.primitive.name == "scan"]


# --- values -------------------------------------------------------------------------------------------
def _cumulative(lax_module):
    def run(xs):
        def step(c, x):
            s, p = c
            return (s + x, p * x), (s + x, p * x)

        return lax_module.scan(step, (xs[0] * 0, xs[0] * 0 + 1), xs)

    return run


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cumulative_sum_and_product(rng, dtype):
    xs = rng.uniform(0.5, 1.5, (7, 3)).astype(dtype) if dtype == np.float32 else rng.integers(-3, 4, (7, 3)).astype(
        dtype)
    _both(_cumulative(lax), _cumulative(jax.lax), xs)
    _, (sums, prods) = _cumulative(lax)(xs)
    assert_close(sums, np.cumsum(xs, 0, dtype=dtype))
    assert_close(prods, np.cumprod(xs, 0, dtype=dtype), scale=10)


@given(length=st.integers(0, 9), width=st.integers(0, 3))
def test_cumsum_shapes(length, width):
    xs = np.arange(length * width, dtype=np.float32).reshape(length, width)
    carry, ys = lax.scan(lambda c, x: (c + x, c), np.zeros(width, np.float32), xs)
    assert_close(carry, xs.sum(0))
    assert_close(ys, np.concatenate([np.zeros((1, width), np.float32), np.cumsum(xs, 0)[:-1]])[:length])


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, True, False, 0, 10])
def test_reverse_and_unroll(rng, reverse, unroll):
    xs = rng.normal(size=(7, 2)).astype(np.float32)
    w = rng.normal(size=(2,)).astype(np.float32)

    def run(module):
        def f(xs, w):
            return module.scan(lambda c, x: (module.sin(c) * x + w, c * x), w, xs, reverse=reverse, unroll=unroll)
        return f

    _both(run(lax), run(jax.lax), xs, w)


def test_pytrees_in_carry_xs_and_ys(rng):
    xs = {"a": rng.normal(size=(5, 3)).astype(np.float32), "b": (rng.normal(size=(5,)).astype(np.float32),)}
    init = (np.float32(1.0), {"h": np.zeros(3, np.float32)})

    def run(module):
        def f(init, xs):
            def step(carry, x):
                scale, state = carry
                h = state["h"] * scale + x["a"] * x["b"][0]
                return (scale * 0.5, {"h": h}), {"out": h.sum(), "pair": (h, x["b"][0])}
            return module.scan(step, init, xs)
        return f

    _both(run(lax), run(jax.lax), init, xs)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.float16, "bfloat16", np.complex64])
def test_dtypes_of_carry_and_ys(rng, dtype):
    dtype = jnp.dtype(dtype)
    xs = rng.integers(0, 3, (5, 2)).astype(dtype)

    def run(module):
        def f(xs):
            def step(c, x):
                if dtype == np.bool_:
                    return c ^ x, c & x
                return c + x, c * x
            return module.scan(step, xs[0], xs, reverse=True, unroll=2)
        return f

    _both(run(lax), run(jax.lax), xs)


def test_xs_none_with_length():
    def run(module):
        return lambda c: module.scan(lambda c, _: (c * 2 + 1, c), c, None, length=5)

    _both(run(lax), run(jax.lax), np.float32(1))
    _both(run(lax), run(jax.lax), np.int32(1))


def test_zero_length(rng):
    xs = np.zeros((0, 3), np.float32)

    def run(module):
        return lambda c, xs: module.scan(lambda c, x: (c + x, c * x), c, xs)

    _both(run(lax), run(jax.lax), np.ones(3, np.float32), xs)


def test_weak_typed_init_is_promoted():
    xs = np.arange(4, dtype=np.float32)

    def run(module):
        return lambda xs: module.scan(lambda c, x: (c + x, c), 0, xs)

    _both(run(lax), run(jax.lax), xs)
    carry, _ = lax.scan(lambda c, x: (c + x, c), 0, xs)
    assert carry.dtype == np.float32


def test_integer_and_float_carries_mixed(rng):
    xs = rng.normal(size=(6,)).astype(np.float32)

    def run(module):
        def f(xs):
            def step(c, x):
                i, h = c
                return (i + 1, h * 0.9 + x * i), h
            return module.scan(step, (np.int32(0), np.float32(0)), xs)
        return f

    _both(run(lax), run(jax.lax), xs)


def test_nested_scan(rng):
    xs = rng.normal(size=(3, 4)).astype(np.float32)

    def run(module):
        def f(xs):
            def outer(c, row):
                inner_c, inner_ys = module.scan(lambda a, x: (a * x + 1, a), c, row)
                return inner_c, inner_ys.sum()
            return module.scan(outer, np.float32(0.5), xs)
        return f

    _both(run(lax), run(jax.lax), xs)


def test_closure_over_traced_value_under_jit(rng):
    xs = rng.normal(size=(5, 2)).astype(np.float32)
    w = rng.normal(size=(2,)).astype(np.float32)

    def run(module):
        return lambda w, xs: module.scan(lambda c, x: (c + w * x, c), w * 0, xs)

    _both(run(lax), run(jax.lax), w, xs)


# --- derivatives --------------------------------------------------------------------------------------
def _loss(module, np_like):
    def loss(w, h0, xs):
        def step(h, x):
            h = np_like.sin(h * w) + x * h
            return h, np_like.cos(h) * w
        h, ys = module.scan(step, h0, xs)
        return ys.sum() + (h * h).sum()
    return loss


@pytest.fixture
def loss_args(rng):
    return (rng.normal(size=(3,)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32),
            rng.normal(size=(6, 3)).astype(np.float32))


# jax's gradient of _loss (the oracle), one jitted function shared by the tests (compiled once per process).
_jax_loss_grad = jax.jit(jax.grad(_loss(jax.lax, jnp), (0, 1, 2)))


@pytest.mark.parametrize("transform", ["grad", "jit_grad", "grad_jit"])
def test_grad_through_scan(loss_args, transform):
    ours = _loss(lax, nnp)
    argnums = (0, 1, 2)
    expected = _jax_loss_grad(*loss_args)
    fn = {"grad": numax.grad(ours, argnums), "jit_grad": numax.jit(numax.grad(ours, argnums)),
          "grad_jit": numax.grad(numax.jit(ours), argnums)}[transform]
    for a, e in zip(fn(*loss_args), expected):
        assert_close(a, np.asarray(e), scale=10)


def test_jvp_through_scan(loss_args, rng):
    tangents = tuple(rng.normal(size=a.shape).astype(np.float32) for a in loss_args)
    out, tan = numax.jvp(_loss(lax, nnp), loss_args, tangents)
    expected_out, expected_tan = jax.jit(lambda p, t: jax.jvp(_loss(jax.lax, jnp), p, t))(loss_args, tangents)
    assert_close(out, np.asarray(expected_out), scale=10)
    assert_close(tan, np.asarray(expected_tan), scale=10)
    out, tan = numax.jit(lambda p, t: numax.jvp(_loss(lax, nnp), p, t))(loss_args, tangents)
    assert_close(tan, np.asarray(expected_tan), scale=10)


def test_grad_of_grad_through_scan(loss_args):
    def second(module, np_like, grad):
        return lambda w, h0, xs: grad(_loss(module, np_like))(w, h0, xs).sum()

    expected = jax.jit(jax.grad(second(jax.lax, jnp, jax.grad)))(*loss_args)
    assert_close(numax.grad(second(lax, nnp, numax.grad))(*loss_args), np.asarray(expected), scale=30)


@pytest.mark.parametrize("reverse,unroll", [(True, 1), (False, 2), (True, 3)])
def test_grad_reverse_and_unroll(loss_args, reverse, unroll):
    def loss(module, np_like):
        def f(w, xs):
            h, ys = module.scan(lambda h, x: (np_like.tanh(h * w + x), h * x), w, xs, reverse=reverse, unroll=unroll)
            return h.sum() + ys.sum()
        return f

    w, _, xs = loss_args
    expected = jax.jit(jax.grad(loss(jax.lax, jnp), (0, 1)))(w, xs)
    for a, e in zip(numax.grad(loss(lax, nnp), (0, 1))(w, xs), expected):
        assert_close(a, np.asarray(e), scale=10)


def test_check_grads_float64(loss_args):
    numax.config.update("numax_enable_x64", True)
    try:
        args = tuple(a.astype(np.float64) for a in loss_args)
        check_grads(_loss(lax, nnp), args, order=2)
    finally:
        numax.config.update("numax_enable_x64", False)


def test_grad_with_carry_that_becomes_differentiable(rng):
    """The initial carry is a constant (zero tangent); a step makes it depend on w: the fixpoint marks it."""
    xs = rng.normal(size=(5,)).astype(np.float32)

    def loss(module):
        def f(w, xs):
            def step(c, x):
                a, b = c
                return (b * w, a + x), a
            (a, b), ys = module.scan(step, (np.float32(1), np.float32(0)), xs)
            return a + b + ys.sum()
        return f

    expected = jax.jit(jax.grad(loss(jax.lax)))(np.float32(1.3), xs)
    assert_close(numax.grad(loss(lax))(np.float32(1.3), xs), np.asarray(expected), scale=10)


def test_rnn_training_matches_jax(rng):
    hidden, inputs, steps = 4, 3, 6
    params = {"W": (rng.normal(size=(hidden, hidden)) * 0.5).astype(np.float32),
              "U": (rng.normal(size=(hidden, inputs)) * 0.5).astype(np.float32)}
    xs = rng.normal(size=(steps, inputs)).astype(np.float32)
    targets = rng.normal(size=(steps, hidden)).astype(np.float32)

    def loss(module, np_like):
        def f(params, xs, targets):
            def step(h, xt):
                x, t = xt
                h = np_like.tanh(params["W"] @ h + params["U"] @ x)
                return h, ((h - t) ** 2).sum()
            _, errors = module.scan(step, np_like.zeros(hidden, np.float32), (xs, targets))
            return errors.mean()
        return f

    def train(module, np_like, grad, params):
        for _ in range(3):
            grads = grad(loss(module, np_like))(params, xs, targets)
            params = {k: params[k] - 0.1 * grads[k] for k in params}
        return params

    ours = train(lax, nnp, numax.grad, params)
    theirs = jax.jit(lambda params: train(jax.lax, jnp, jax.grad, params))(params)  # the oracle: one compile
    for k in params:
        assert_close(ours[k], np.asarray(theirs[k]), scale=20)
    first = loss(lax, nnp)(params, xs, targets)
    assert float(loss(lax, nnp)(ours, xs, targets)) < float(first)


def test_grad_residuals_are_stacked_once(rng):
    """grad(f) stages one forward scan (primal outputs plus stacked per-step residuals) and one transposed
    scan running the other way; loop-invariant values (W) are passed as consts, never stacked."""
    hidden, steps = 4, 6
    W = rng.normal(size=(hidden, hidden)).astype(np.float32)
    xs = rng.normal(size=(steps, hidden)).astype(np.float32)

    def loss(W, xs):
        h, ys = lax.scan(lambda h, x: (nnp.tanh(W @ h + x), h.sum()), nnp.zeros(hidden, np.float32), xs)
        return ys.sum() + h.sum()

    program = numax.make_jaxpr(numax.grad(loss))(W, xs)
    forward, backward = _scan_eqns(program)
    assert not forward.params["reverse"] and backward.params["reverse"]
    residuals = [v.aval for v in forward.outvars[2:]]  # after the carry h and the ys
    assert residuals and all(a.shape[0] == steps for a in residuals)
    assert all(a.shape[1:] != W.shape for a in residuals)  # W is not stacked
    assert len(residuals) <= 4
    # W reaches the backward scan as a const (its first operand), once.
    assert backward.params["num_consts"] >= 1
    invars = program.program.invars
    assert sum(1 for a in backward.inputs if any(a is v for v in invars) and a.aval.shape == W.shape) == 1


def test_grad_with_int_carry_forwarded_xs_and_unchanged_carry(rng):
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    ints = np.arange(3, dtype=np.int32)

    def loss(module):
        def f(w, xs):
            def step(c, x):
                a, b, k = c
                return (a, b * w + x * ints, k + 1), (x, a * b)
            (a, b, k), (xx, ab) = module.scan(step, (w, w * 2, np.int32(0)), xs)
            return b.sum() + (ab ** 2).sum() + xx.sum() * 2 + k
        return f

    for a, e in zip(numax.grad(loss(lax), (0, 1))(w, xs), jax.jit(jax.grad(loss(jax.lax), (0, 1)))(w, xs)):
        assert_close(a, np.asarray(e), scale=10)


@pytest.mark.parametrize("where", ["body", "outside", "outside_jit"])
def test_grad_nested_scan_and_checkpoint(rng, where):
    xs = rng.normal(size=(3, 4)).astype(np.float32)
    w = rng.normal(size=(4,)).astype(np.float32)

    def loss(module, np_like, checkpoint):
        def f(w):
            def outer(c, row):
                inner = (lambda a, x: (np_like.sin(a * x * w), a))
                cc, ys = module.scan(checkpoint(inner) if where == "body" else inner, c, row)
                return cc, ys.sum()
            c, ys = module.scan(outer, w, xs)
            return c.sum() + ys.sum()
        return f

    ours = loss(lax, nnp, numax.checkpoint)
    if where == "outside":
        ours = numax.checkpoint(ours)
    elif where == "outside_jit":
        ours = numax.jit(numax.checkpoint(ours))
    expected = jax.jit(jax.grad(loss(jax.lax, jnp, jax.checkpoint)))(w)
    assert_close(numax.grad(ours)(w), np.asarray(expected), scale=10)


def test_eager_grad_through_scan_compiles_once(loss_args):
    grad = numax.grad(_loss(lax, nnp))
    first = grad(*loss_args)
    size = len(dispatch.primitive_cache.entries)
    assert_close(grad(*loss_args), np.asarray(first))
    assert len(dispatch.primitive_cache.entries) == size


def test_grad_reads_xs_residuals_from_xs(rng):
    """A residual that is a slice of xs is not stacked again: the backward scan reads the xs operand."""
    xs = rng.normal(size=(5, 3)).astype(np.float32)
    program = numax.make_jaxpr(numax.grad(lambda c, xs: lax.scan(lambda c, x: (c * x, c), c, xs)[0].sum()))(
        xs[0], xs)
    forward, backward = _scan_eqns(program)
    assert len(forward.outvars) == 2  # carry and ys: the only residual, x, is read from xs
    assert any(a is program.program.invars[1] for a in backward.inputs)
    actual = numax.grad(lambda c, xs: lax.scan(lambda c, x: (c * x, c), c, xs)[0].sum(), (0, 1))(xs[0], xs)
    expected = jax.jit(jax.grad(lambda c, xs: jax.lax.scan(lambda c, x: (c * x, c), c, xs)[0].sum(), (0, 1)))(
        xs[0], xs)
    for a, e in zip(actual, expected):
        assert_close(a, np.asarray(e), scale=10)


def test_scan_in_jit_grad_twice_compiles_once(loss_args):
    f = numax.jit(numax.grad(_loss(lax, nnp)))
    first = f(*loss_args)
    assert f._cache_size() == 1
    assert_close(f(*loss_args), np.asarray(first))
    assert f._cache_size() == 1


# --- IR and lowering ----------------------------------------------------------------------------------
def test_make_jaxpr_has_one_scan_equation():
    xs = np.ones((8, 3), np.float32)
    for unroll in (1, 3, True):
        program = numax.make_jaxpr(lambda c, xs: lax.scan(lambda c, x: (nnp.sin(c) + x, c), c, xs, unroll=unroll))(
            xs[0], xs)
        (eqn,) = program.equations
        assert sum(e.primitive.name == "sin" for e in eqn.params["jaxpr"].equations) == 1
        assert eqn.params["length"] == 8 and eqn.params["unroll"] == (8 if unroll is True else unroll)
    text = str(numax.make_jaxpr(lambda xs: lax.scan(lambda c, x: (c + x, c), xs[0], xs))(xs))
    assert "scan[" in text and "length=8" in text and "num_carry=1" in text


@pytest.mark.parametrize("unroll,copies", [(1, 1), (2, 2), (3, 3 + 2), (8, 8)])
def test_lowering_unrolls_body_copies(unroll, copies):
    xs = np.ones((8, 3), np.float32)
    text = numax.jit(lambda xs: lax.scan(lambda c, x: (nnp.sin(c) + x, c), xs[0], xs, unroll=unroll)).lower(
        xs).as_text()
    assert text.count("stablehlo.sine") == copies
    assert ("stablehlo.while" in text) == (8 // unroll > 1)


def test_eager_scan_compiles_once_in_a_python_loop(rng):
    xs = rng.normal(size=(5, 2)).astype(np.float32)
    results = []
    for i in range(3):
        scale = np.full(2, i, np.float32)  # an array: a const operand of the scan, not a literal of its body

        def step(c, x):
            return c * scale + x, c  # a fresh closure each time, over a different value

        results.append(lax.scan(step, np.ones(2, np.float32), xs)[0])
        if i == 0:
            size = len(dispatch.primitive_cache.entries)
    assert len(dispatch.primitive_cache.entries) == size
    for i, r in enumerate(results):
        expected = jax.lax.scan(lambda c, x: (c * np.float32(i) + x, c), np.ones(2, np.float32), xs)[0]
        assert_close(r, np.asarray(expected))


def test_eager_scan_sees_new_values_of_a_nested_jit_closure():
    xs = np.ones((3, 2), np.float32)
    for i in range(3):
        w = np.full(2, i, np.float32)
        scaled = numax.jit(lambda x: x * w)  # a fresh jit each time, closing over a different array
        carry, _ = lax.scan(lambda c, x: (c + scaled(x), c), np.zeros(2, np.float32), xs)
        assert_close(carry, np.full(2, 3 * i, np.float32))


def test_grad_through_custom_jvp_in_scan_body():
    @numax.custom_jvp
    def f(x):
        return nnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), 2.0 * tangents[0]))

    @jax.custom_jvp
    def jf(x):
        return jnp.sin(x)

    jf.defjvp(lambda primals, tangents: (jf(primals[0]), 2.0 * tangents[0]))
    xs = np.linspace(0, 1, 6).astype(np.float32).reshape(3, 2)
    w = np.full(2, 0.7, np.float32)
    actual = numax.grad(lambda w: lax.scan(lambda c, x: (f(c * x), c), w, xs)[0].sum())(w)
    expected = jax.grad(lambda w: jax.lax.scan(lambda c, x: (jf(c * x), c), w, xs)[0].sum())(w)
    assert_close(actual, np.asarray(expected))


# --- errors -------------------------------------------------------------------------------------------
def test_carry_type_mismatch_error():
    with pytest.raises(TypeError, match=r"scan body function carry input and carry output must have equal types"
                                        r"(.|\n)*The input carry c has type f32\[3\] but the corresponding output "
                                        r"carry component has type f32\[1\]"):
        lax.scan(lambda c, x: (c[:1], x), np.zeros(3, np.float32), np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"input carry component c\[1\] has type i32\[\] but the corresponding "
                                        r"output carry component has type f32\[\]"):
        lax.scan(lambda c, x: ((c[0], c[1] * 1.5), x), (np.float32(0), np.int32(1)), np.ones(2, np.float32))


def test_carry_tree_mismatch_error():
    with pytest.raises(TypeError, match="carry input and carry output must have the same pytree structure"):
        lax.scan(lambda c, x: ((c, c), x), np.float32(0), np.ones(2, np.float32))


def test_length_errors():
    with pytest.raises(ValueError, match=r"scan got values with different leading axis sizes: 3, 4\."):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4)))
    with pytest.raises(ValueError, match=r"scan got `length` argument of 5 which disagrees with leading axis sizes "
                                         r"\[3\]\."):
        lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=5)
    with pytest.raises(ValueError, match="scan got no values to scan over and `length` not provided"):
        lax.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(ValueError, match="scan got value with no leading axis to scan over"):
        lax.scan(lambda c, x: (c, x), 0.0, np.float32(1))


def test_other_errors():
    with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
        lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), unroll=-1)
    with pytest.raises(TypeError, match="scan body output must be a pair"):
        lax.scan(lambda c, x: c, 0.0, np.ones(3))
    with pytest.raises(TypeError, match="f argument should be a callable"):
        lax.scan(3, 0.0, np.ones(3))


# --- vmap ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 1), (0, 0, 1), (1, None, 0)])
def test_vmap_of_scan(rng, in_axes):
    batch = 3
    w = rng.normal(size=(2,)).astype(np.float32)
    h0 = rng.normal(size=(2,)).astype(np.float32)
    xs = rng.normal(size=(5, 2)).astype(np.float32)
    args = []
    for a, ax in zip((w, h0, xs), in_axes):
        if ax is None:
            args.append(a)
        else:
            args.append(np.stack([a + i for i in range(batch)], axis=ax).astype(np.float32))

    def run(module, np_like):
        def f(w, h0, xs):
            return module.scan(lambda h, x: (np_like.sin(h) * w + x, h * x), h0, xs)
        return f

    actual = vmap(run(lax, nnp), in_axes)(*args)
    expected = jax.jit(jax.vmap(run(jax.lax, jnp), in_axes))(*args)
    for a, e in zip(actual, expected):
        assert_close(a, np.asarray(e), scale=10)


def test_jit_of_vmap_of_scan(rng):
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    ws = rng.normal(size=(2, 3)).astype(np.float32)

    def run(module, vmap):
        return vmap(lambda w: module.scan(lambda c, x: (c * x, c + x), w, xs, reverse=True))

    actual = numax.jit(run(lax, vmap))(ws)
    expected = jax.jit(run(jax.lax, jax.vmap))(ws)
    for a, e in zip(actual, expected):
        assert_close(a, np.asarray(e))


def test_vmap_carry_becomes_batched_only_after_a_step(rng):
    xs = rng.normal(size=(3, 4)).astype(np.float32)  # batched over axis 0, scanned over 4

    def run(module):
        def f(xs):
            def step(c, x):
                a, b = c
                return (b, a + x), a
            return module.scan(step, (np.float32(0), np.float32(0)), xs)
        return f

    actual = vmap(run(lax))(xs)
    expected = jax.jit(jax.vmap(run(jax.lax)))(xs)
    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
        assert_close(a, np.asarray(e))


# --- lax.map ------------------------------------------------------------------------------------------
def test_map_matches_python_loop(rng):
    xs = rng.normal(size=(5, 3)).astype(np.float32)

    def f(x):
        return {"s": nnp.sin(x) * 2, "sum": x.sum()}

    out = lax.map(f, xs)
    for i in range(5):
        assert_close(out["s"][i], np.asarray(f(xs[i])["s"]))
        assert_close(out["sum"][i], np.asarray(f(xs[i])["sum"]))
    expected = jax.jit(lambda xs: jax.lax.map(lambda x: {"s": jnp.sin(x) * 2, "sum": x.sum()}, xs))(xs)
    assert_close(out["s"], np.asarray(expected["s"]))
    (eqn,) = _scan_eqns(numax.make_jaxpr(lambda xs: lax.map(nnp.sin, xs))(xs))
    assert eqn.params["length"] == 5


@pytest.mark.parametrize("batch_size", [1, 2, 5, 7])
def test_map_with_batch_size(rng, batch_size):
    xs = rng.normal(size=(5, 3)).astype(np.float32)
    actual = lax.map(lambda x: nnp.sin(x) * x, xs, batch_size=batch_size)
    expected = jax.jit(lambda xs: jax.lax.map(lambda x: jnp.sin(x) * x, xs, batch_size=batch_size))(xs)
    assert_close(actual, np.asarray(expected))


# --- lax.associative_scan -----------------------------------------------------------------------------
@numax.jit
def _prefix_ops(xs):
    return (lax.associative_scan(E.add, xs), lax.associative_scan(E.max, xs),
            lax.associative_scan(E.add, xs, reverse=True), lax.associative_scan(E.add, xs.T, axis=1))


@settings(max_examples=6)
@given(length=st.integers(1, 17))
def test_associative_scan_add_and_max(length):
    rng = np.random.default_rng(length)
    xs = rng.normal(size=(length, 2)).astype(np.float32)
    sums, maxes, reversed_sums, axis1_sums = _prefix_ops(xs)
    assert_close(sums, np.cumsum(xs, 0), scale=10)
    assert_close(maxes, np.maximum.accumulate(xs, 0))
    assert_close(reversed_sums, np.cumsum(xs[::-1], 0)[::-1], scale=10)
    assert_close(axis1_sums, np.cumsum(xs.T, 1), scale=10)
    ints = rng.integers(-5, 5, (length,)).astype(np.int32)
    assert_close(numax.jit(lambda x: lax.associative_scan(E.add, x))(ints), np.cumsum(ints, dtype=np.int32))


_lengths = [1, 2, 5, 8]


def _affine(f, g):
    """Affine maps (a, b): x -> a x + b, composed as pytrees."""
    return (g[0] * f[0], g[0] * f[1] + g[1])


def _matmul_affine_operands(length):
    rng = np.random.default_rng(0)  # the rng fixture's seed
    mats = rng.normal(size=(length, 3, 3)).astype(np.float32)
    return mats, rng.uniform(0.5, 1.5, (length,)).astype(np.float32), rng.normal(size=(length,)).astype(np.float32)


@functools.cache
def _matmul_affine_expected():
    """{length: jax's (matmul scan, reversed affine scan, affine scan)}, every length in one jitted program."""
    def expected(mats, a, b):
        return (jax.lax.associative_scan(lambda x, y: jnp.matmul(x, y), mats),
                jax.lax.associative_scan(_affine, (a, b), reverse=True), jax.lax.associative_scan(_affine, (a, b)))

    return dict(zip(_lengths, jit_all([expected] * len(_lengths), [_matmul_affine_operands(n) for n in _lengths])))


@pytest.mark.parametrize("length", _lengths)
def test_associative_scan_matmul_compose_and_pytrees(length):
    mats, a, b = _matmul_affine_operands(length)
    expected_matmul, expected_reversed, expected_affine = _matmul_affine_expected()[length]

    actual = numax.jit(lambda m: lax.associative_scan(lambda a, b: nnp.matmul(a, b), m))(mats)
    assert_close(actual, np.asarray(expected_matmul), scale=100)
    actual = numax.jit(lambda a, b: lax.associative_scan(_affine, (a, b), reverse=True))(a, b)
    for x, y in zip(actual, expected_reversed):
        assert_close(x, np.asarray(y), scale=10)
    jitted = numax.jit(lambda a, b: lax.associative_scan(_affine, (a, b)))(a, b)
    for x, y in zip(jitted, expected_affine):
        assert_close(x, np.asarray(y), scale=10)


def test_associative_scan_errors_and_grad(rng):
    with pytest.raises(ValueError, match="must have the same first dimension"):
        lax.associative_scan(E.add, (np.ones(3, np.float32), np.ones(4, np.float32)))
    xs = rng.normal(size=(6,)).astype(np.float32)
    actual = numax.jit(numax.grad(lambda xs: (lax.associative_scan(E.mul, xs) ** 2).sum()))(xs)
    expected = jax.jit(jax.grad(lambda xs: (jax.lax.associative_scan(jax.lax.mul, xs) ** 2).sum()))(xs)
    assert_close(actual, np.asarray(expected), scale=10)
