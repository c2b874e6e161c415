"""chex as its users write it: dataclasses through jit and tree functions, shape/type/tree assertions that pass
and that fail, and `chex.chexify` (see ecosystem_case.py for how these run on jax and on numax)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
from ecosystem_case import case


@chex.dataclass
class State:
    position: chex.Array
    velocity: chex.Array
    steps: int = 0


@case
def dataclass_under_jit_and_tree_map():
    state = State(position=jnp.arange(3.0), velocity=jnp.ones(3), steps=2)

    @jax.jit
    def advance(state):
        return state.replace(position=state.position + 0.1 * state.velocity, velocity=state.velocity * 0.9)

    state = advance(advance(state))
    doubled = jax.tree_util.tree_map(lambda leaf: leaf * 2, state)
    leaves = jax.tree_util.tree_leaves(state)
    return {"position": state.position, "velocity": state.velocity, "doubled": doubled.position,
            "steps": np.asarray(state.steps), "leaf_count": np.asarray(len(leaves))}


def _outcome(assertion, *args, **kwargs):
    """1 if the assertion passes, 0 if it raises AssertionError (anything else propagates)."""
    try:
        assertion(*args, **kwargs)
        return np.asarray(1)
    except AssertionError:
        return np.asarray(0)


@case
def assertions_pass_and_fail():
    x, y = jnp.ones((2, 3)), jnp.zeros((2, 3), jnp.int32)
    tree = {"a": x, "b": [x, x]}
    return {
        "shape": _outcome(chex.assert_shape, x, (2, 3)),
        "shape_wrong": _outcome(chex.assert_shape, x, (3, 2)),
        "rank": _outcome(chex.assert_rank, [x, y], 2),
        "type": _outcome(chex.assert_type, y, jnp.int32),
        "type_wrong": _outcome(chex.assert_type, x, jnp.int32),
        "equal_shape": _outcome(chex.assert_equal_shape, [x, y]),
        "trees_close": _outcome(chex.assert_trees_all_close, tree, tree),
        "trees_differ": _outcome(chex.assert_trees_all_close, tree, jax.tree_util.tree_map(lambda v: v + 1, tree)),
        "tree_finite": _outcome(chex.assert_tree_all_finite, tree),
        "tree_nan": _outcome(chex.assert_tree_all_finite, {"a": jnp.array([1.0, jnp.nan])}),
        "tree_structure": _outcome(chex.assert_trees_all_equal_structs, tree, {"a": 1, "b": [2, 3]}),
        "scalar_positive": _outcome(chex.assert_scalar_positive, 3),
        "max_traces": _outcome(_traced_twice),
    }


def _traced_twice():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(x):
        return x + 1

    f(jnp.ones(3))
    f(jnp.ones(4))  # a new shape traces again: the assertion fails


@case
def chexify_checks_values_in_jit():
    @chex.chexify
    @jax.jit
    def positive_log(x):
        chex.assert_tree_all_finite(x)
        return jnp.log(x)

    value = positive_log(jnp.array([1.0, 2.0]))
    caught = _outcome(lambda: positive_log(jnp.array([1.0, jnp.inf])))
    return {"value": value, "caught": caught}


@case
def numerical_grads_and_fakes():
    # chex.assert_numerical_grads runs jax.test_util.check_grads (random directions, as jax draws them);
    # chex.fake_pmap_and_jit reads the jitted function's signature; key trees compared under chexify
    def hard(lr, x):
        inner = lambda y: jnp.sum((y - 1.0) ** 2)
        for _ in range(10):
            step = x - lr * jax.grad(inner)(x)
            x = jax.lax.select((x > 3.0).any(), step + 100 * lr ** 2, step - 100 * lr ** 2 + lr)
        return jnp.sum(inner(x))

    args = [jnp.array([0.8250065]), jnp.array([0.4326986])]
    with chex.fake_pmap_and_jit():
        @jax.pmap
        @jax.jit
        def scaled(x, y):
            return x * 2 + y

        faked = scaled(x=jnp.ones((1, 2)), y=jnp.arange(2.0)[None])
    keys = {"a": jnp.array([3]), "key": jax.random.split(jax.random.key(1))}
    same_keys = chex.chexify(jax.jit(lambda t: chex.assert_trees_all_equal(t, t)), async_check=False)
    same_keys(keys)
    return {"numerical_grads": _outcome(chex.assert_numerical_grads, hard, args, order=1),
            "numerical_grads_order2": _outcome(chex.assert_numerical_grads, lambda v: jnp.sin(v) * v,
                                               [jnp.array([0.3, 1.1])], order=2),
            "faked_pmap": faked,
            "key_trees_equal": _outcome(chex.assert_trees_all_equal, keys, keys),
            "key_trees_differ": _outcome(chex.assert_trees_all_equal, keys,
                                         {"a": jnp.array([3]), "key": jax.random.split(jax.random.key(2))})}
