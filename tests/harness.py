"""Shared test helpers: random inputs per dtype, dtype-aware tolerances, the jax oracle (and the same call's
outcome under both libraries), the vmap checks
(numax.vmap against jax.vmap and a loop over examples; counting ops in a program), a data-parallel training
step written once for numax and jax, and a script run in a fresh CPU-only process."""

import json
import os
import re
import subprocess
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402  (the oracle: tests only)
import jax.numpy as jnp  # noqa: E402
from numax.core import dtypes  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

float_dtypes = [np.float32, dtypes.bfloat16, np.float16]
int_dtypes = [np.int32, np.int8, np.int16, np.uint8, np.uint32]
all_dtypes = [np.bool_] + int_dtypes + float_dtypes + [np.complex64]

_tolerances = {
    np.dtype(np.float16): 1e-2, np.dtype(dtypes.bfloat16): 5e-2, np.dtype(np.float32): 1e-5,
    np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12,
}


def tolerance(dtype, scale=1.0):
    return _tolerances.get(np.dtype(dtype), 0) * scale


def rand(rng, shape, dtype, low=-3.0, high=3.0):
    """Random values of `dtype`: uniform floats, small integers, random bools, complex pairs."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, int(low) * 10), min(info.max, int(high) * 10)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def assert_close(actual, expected, dtype=None, scale=1.0, check_dtype=True):
    """Compares a numax result to a numpy/jax one with a tolerance fitting the dtype."""
    actual_np = np.asarray(actual)
    expected_np = np.asarray(expected)
    if check_dtype:
        assert actual_np.dtype == expected_np.dtype, (actual_np.dtype, expected_np.dtype)
    assert actual_np.shape == expected_np.shape, (actual_np.shape, expected_np.shape)
    dtype = np.dtype(dtype or expected_np.dtype)
    tol = tolerance(dtype, scale)
    if dtype == dtypes.bfloat16 or dtype == np.float16:
        actual_np, expected_np = actual_np.astype(np.float32), expected_np.astype(np.float32)
    if tol == 0:
        np.testing.assert_array_equal(actual_np, expected_np)
    else:
        np.testing.assert_allclose(actual_np, expected_np, rtol=tol, atol=tol)


def check_vmap(numax_fn, jax_fn, args, in_axes=0, out_axes=0, loop=True, jit=True, scale=1.0, expected=None):
    """numax.vmap(numax_fn) against jax.vmap(jax_fn) (both jitted unless `jit` is False), and against a loop
    of numax_fn over the examples (stacked at `out_axes`), with tolerances `scale` times the dtype's. Outputs
    may be pytrees; returns numax's. `expected`: jax.vmap's result computed beforehand (a table's one jax
    program) instead of from `jax_fn`."""
    args = [np.asarray(a) for a in args]
    batched = numax.vmap(numax_fn, in_axes, out_axes)
    batched = numax.jit(batched) if jit else batched
    if expected is None:
        expected_fn = jax.vmap(jax_fn, in_axes, out_axes)
        expected = (jax.jit(expected_fn) if jit else expected_fn)(*args)
    actual = batched(*args)
    actual_leaves, expected_leaves = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves), (len(actual_leaves), len(expected_leaves))
    for a, e in zip(actual_leaves, expected_leaves):
        assert_close(a, np.asarray(e), scale=scale)
    if loop:
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        size = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
        per_example = [numax_fn(*[xnp.asarray(a if ax is None else np.take(a, b, axis=ax))
                                 for a, ax in zip(args, axes)])
                       for b in range(size)]
        for i, leaf in enumerate(actual_leaves):
            stacked = np.stack([np.asarray(jax.tree_util.tree_leaves(p)[i]) for p in per_example], axis=out_axes)
            assert_close(leaf, stacked, scale=scale)
    return actual


def count_ops(fn, args, name):
    """How many equations of primitive `name` the program of `fn(*args)` holds."""
    text = str(numax.make_jaxpr(fn)(*args))
    return len(re.findall(rf"= {name}\[", text)) + len(re.findall(rf"= {name} ", text))


__all__ = ["jax", "jnp", "rand", "assert_close", "tolerance", "float_dtypes", "int_dtypes", "all_dtypes",
           "check_vmap", "count_ops"]


def data_parallel_step(lax_module, np_module, grad, axis_name):
    """A one-layer tanh regression's SGD step whose gradient and loss are averaged (pmean) over `axis_name`,
    written once for both libraries: (params {"w", "b"}, x, y) -> (new params, loss)."""
    def loss(p, x, y):
        return np_module.mean((np_module.tanh(x @ p["w"] + p["b"]) - y) ** 2)

    def step(p, x, y):
        g = lax_module.pmean(grad(loss)(p, x, y), axis_name)
        return {k: p[k] - 0.1 * g[k] for k in p}, lax_module.pmean(loss(p, x, y), axis_name)

    return step


def run_in_fresh_process(script):
    """The JSON object that `script` prints last, run by a fresh Python process on the CPU."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NUMAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# (numpy, lax, the top-level API) of each library, for calls written once as `call(np_, lax_, api)`
NUMAX_LIBS = (xnp, numax.lax, numax)
JAX_LIBS = (jnp, jax.lax, jax)


def raised(call, libs):
    """The exception `call(*libs)` raises, or None."""
    try:
        call(*libs)
    except Exception as error:  # noqa: BLE001  (the class is what callers compare)
        return error
    return None


def same_outcome(call):
    """numax and jax both succeed, or raise exceptions of the same class: (numax's, jax's) exception."""
    ours, theirs = raised(call, NUMAX_LIBS), raised(call, JAX_LIBS)
    assert type(ours) is type(theirs), (ours, theirs)
    return ours, theirs


def assert_same_pytrees(ours, theirs, rtol=1e-5, atol=1e-6):
    """numax's result and jax's have the same leaves: shapes, dtypes, and values (exact for bools, integers,
    strings and bytes, such as the dtype names cases may return; within tolerance otherwise)."""
    ours_leaves, theirs_leaves = numax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves), (ours, theirs)
    for a, b in zip(ours_leaves, theirs_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), (a.shape, a.dtype, b.shape, b.dtype)
        if a.dtype.kind in "biuUSV":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def case_registry():
    """(cases, case): `@case` registers a function `case_<name>` as `cases[<name>]`, named after the jax test it
    ports."""
    cases = {}

    def case(fn):
        cases[fn.__name__.removeprefix("case_")] = fn
        return fn

    return cases, case
