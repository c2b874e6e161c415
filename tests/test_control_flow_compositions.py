"""Every composition of jit, grad and vmap over each control-flow construct, against jax: cond, switch,
while_loop (forward-mode and vmap only: JAX has no reverse mode for it), fori_loop with static bounds
(a scan) and scan. Hypothesis picks batch sizes and mapped axes."""

import functools

import numpy as np
import pytest
from harness import jax, jnp
from hypothesis import given
from hypothesis import strategies as st
from oracle import jit_table

import numax
import numax.numpy as xnp
from numax import lax


def programs(np_, lax_):
    """Scalar-output functions of (x: f32[3], s: f32[]) built on each construct, in either library."""

    def cond(x, s):
        return lax_.cond(s > 0, lambda v: np_.sum(np_.sin(v) * s), lambda v: np_.sum(v * v), x)

    def switch(x, s):
        index = np_.clip(np_.floor(s + 1.5), 0, 2).astype(np_.int32)
        branches = [lambda v: np_.sum(np_.cos(v)), lambda v: np_.sum(v) * s, lambda v: np_.sum(np_.tanh(v * s))]
        return lax_.switch(index, branches, x)

    def fori(x, s):
        return np_.sum(lax_.fori_loop(0, 4, lambda i, v: np_.sin(v) * s + v * 0.5, x))

    def scan(x, s):
        def step(carry, xi):
            carry = np_.tanh(carry * s + xi)
            return carry, carry * xi

        carry, ys = lax_.scan(step, np_.zeros(()), x)
        return carry + np_.sum(ys)

    def while_(x, s):
        def body(state):
            i, v = state
            return i + 1, v * 0.9 + np_.sin(v) * s

        return np_.sum(lax_.while_loop(lambda state: state[0] < 3, body, (0, x))[1])

    return {"cond": cond, "switch": switch, "fori_loop": fori, "scan": scan, "while_loop": while_}


NUMAX, JAX = programs(xnp, lax), programs(jnp, jax.lax)
REVERSIBLE = ["cond", "switch", "fori_loop", "scan"]


def compositions(lib, reverse):
    transforms = {
        "eager": lambda f: f,
        "jit": lambda f: lib.jit(f),
        "vmap": lambda f: lib.vmap(f, in_axes=(0, 0)),
        "jit(vmap)": lambda f: lib.jit(lib.vmap(f, in_axes=(0, 0))),
        "vmap(jit)": lambda f: lib.vmap(lib.jit(f), in_axes=(0, 0)),
        "jvp": lambda f: lambda x, s: lib.jvp(f, (x, s), (x * 0 + 1, s * 0 + 1))[1],
        "vmap(jvp)": lambda f: lib.vmap(lambda x, s: lib.jvp(f, (x, s), (x * 0 + 1, s * 0 + 1))[1]),
    }
    if reverse:
        transforms.update({
            "grad": lambda f: lib.grad(f, argnums=(0, 1)),
            "jit(grad)": lambda f: lib.jit(lib.grad(f, argnums=(0, 1))),
            "grad(jit)": lambda f: lib.grad(lib.jit(f), argnums=(0, 1)),
            "vmap(grad)": lambda f: lib.vmap(lib.grad(f, argnums=(0, 1))),
            "jit(vmap(grad))": lambda f: lib.jit(lib.vmap(lib.grad(f, argnums=(0, 1)))),
            "grad(vmap)": lambda f: lib.grad(lambda x, s: lib.vmap(f)(x, s).sum(), argnums=(0, 1)),
            "grad(grad)": lambda f: lib.grad(lambda x, s: lib.grad(f, argnums=1)(x, s), argnums=(0, 1)),
        })
    return transforms


def _inputs(batched, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (4, 3) if batched else (3,)).astype(np.float32)
    s = (rng.uniform(-1.2, 1.2, (4,)) if batched else np.asarray(0.7)).astype(np.float32)
    if batched:
        s[0], s[1] = 0.8, -0.6  # both branches of cond are taken by some lane
    return x, s


CASES = [(name, comp) for name in NUMAX for comp in compositions(numax, name in REVERSIBLE)]


@functools.cache
def _expected():
    """JAX's result for every case, from one jax.jit program: the compositions are numax's subject; on jax's
    side they only compute the oracle."""
    return jit_table(CASES, [compositions(jax, name in REVERSIBLE)[comp](JAX[name]) for name, comp in CASES],
                     [_inputs("vmap" in comp) for _, comp in CASES])


@pytest.mark.parametrize("name, composition", CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_composition_matches_jax(name, composition):
    ours = compositions(numax, name in REVERSIBLE)[composition](NUMAX[name])
    got, expected = ours(*_inputs("vmap" in composition)), _expected()[name, composition]
    for a, b in zip(jax.tree.leaves(numax.tree.map(np.asarray, got)), jax.tree.leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["while_loop"])
def test_reverse_mode_through_while_loop_is_refused_like_jax(name):
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        numax.grad(NUMAX[name])(*_inputs(False))


@given(batch=st.integers(1, 5), axis=st.integers(0, 1), name=st.sampled_from(sorted(NUMAX)))
def test_vmap_over_batch_sizes_and_axes(batch, axis, name):
    rng = np.random.default_rng(batch * 7 + axis)
    x = rng.uniform(-1, 1, (batch, 3) if axis == 0 else (3, batch)).astype(np.float32)
    s = rng.uniform(-1, 1, (batch,)).astype(np.float32)
    got = numax.jit(numax.vmap(NUMAX[name], in_axes=(axis, 0)))(x, s)
    expected = jax.jit(jax.vmap(JAX[name], in_axes=(axis, 0)))(x, s)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=2e-5, atol=2e-5)
