"""Behaviours that optax's and chex's own test suites (bench/ecosystem_suites.py) found different from jax's,
each checked on numax's own names against jax (no switch: both libraries live in this process)."""

import inspect
import re

import jax
import jax.test_util
import numpy as np
import pytest

import numax
import numax.test_util


def _signature_of(fun):
    return str(inspect.signature(fun, follow_wrapped=False))


def test_a_jitted_function_has_the_signature_of_the_function_it_wraps():
    # chex.fake_pmap reads it with follow_wrapped=False, which only `__signature__` answers
    def f(x, y=2, *, z):
        return x

    assert _signature_of(numax.jit(f)) == _signature_of(jax.jit(f)) == "(x, y=2, *, z)"
    assert _signature_of(numax.jit(len)) == _signature_of(jax.jit(len))


def test_a_jitted_function_is_named_and_printed_as_jax_names_it():
    # chex.assert_max_traces and is_traceable recognize jitted functions by jaxlib's type name
    def f(x):
        return x

    ours, theirs = numax.jit(f), jax.jit(f)
    assert type(ours).__name__ == type(theirs).__name__ == "PjitFunction"
    assert repr(ours) == repr(theirs) == f"<PjitFunction of {f!r}>"


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_an_absent_backend_is_reported_in_jax_words(platform):
    # chex matches "(failed to initialize)|(Unknown backend)"
    try:
        jax.devices(platform)
    except RuntimeError as error:
        jax_error = error
    else:
        pytest.skip(f"this machine has a {platform} backend")
    with pytest.raises(RuntimeError) as numax_error:
        numax.devices(platform)
    for error in (jax_error, numax_error.value):
        assert re.search("(failed to initialize)|(Unknown backend)", str(error))


def _tangents_drawn_by(check_jvp, jvp, args):
    seen = []

    def f_jvp(primals, tangents):
        seen.append([np.asarray(t) for t in tangents])
        return jvp(lambda *a: sum(x.sum() for x in a), primals, tangents)

    check_jvp(lambda *a: sum(x.sum() for x in a), f_jvp, args)
    return seen[0]


def test_check_jvp_draws_jax_tangents():
    # chex.assert_numerical_grads passes or fails on the random direction: numax draws jax's
    args = (np.float32([0.5, 1.5]), np.complex64([1 + 2j]), np.float64(0.25))
    ours = _tangents_drawn_by(numax.test_util.check_jvp, numax.jvp, args)
    theirs = _tangents_drawn_by(jax.test_util.check_jvp, jax.jvp, args)
    assert len(ours) == len(theirs) == 3
    for mine, jax_tangent in zip(ours, theirs):
        np.testing.assert_array_equal(mine, jax_tangent)


def _hard(lib):
    # chex's NumericalGradsAssertTest.test_hard at the first point its seed draws (where numax's earlier
    # finite differences, along another direction, missed the 2e-3 tolerance that jax's meet)
    def loss(lr, x):
        inner = lambda y: lib.numpy.sum((y - 1.0) ** 2)
        for _ in range(10):
            step = x - lr * lib.grad(inner)(x)
            x = lib.lax.select((x > 3.0).any(), step + 100 * lr ** 2, step - 100 * lr ** 2 + lr)
        return lib.numpy.sum(inner(x))
    return loss


@pytest.mark.parametrize("lib", [jax, numax], ids=["jax", "numax"])
def test_check_grads_passes_where_jax_passes(lib):
    args = (np.float32([0.8250065]), np.float32([0.4326986]))
    lib.test_util.check_grads(_hard(lib), args, order=1, atol=0.01)


@pytest.mark.parametrize("lib", [jax, numax], ids=["jax", "numax"])
def test_check_grads_second_order_passes_and_a_wrong_rule_fails(lib):
    x = np.float32([0.3, 1.1])
    lib.test_util.check_grads(lambda v: lib.numpy.sin(v) * v, (x,), order=2)

    @lib.custom_jvp
    def f(v):
        return lib.numpy.sin(v)

    f.defjvp(lambda primals, tangents: (f(primals[0]), 2 * lib.numpy.cos(primals[0]) * tangents[0]))
    for modes in (("fwd",), ("rev",)):
        with pytest.raises(AssertionError):
            lib.test_util.check_grads(f, (x,), order=1, modes=modes)


def _entry(hlo_text):
    """The entry computation of an HLO text with its instruction names numbered apart from their spelling
    (jax names parameters after the arguments, numax `Arg_0`), as optax's numerics_test compares programs."""
    entry = re.search(r"ENTRY.*", hlo_text, re.DOTALL).group()
    names = {}
    return re.sub(r"\b([A-Za-z_][\w]*)\.(\d+)\b", lambda m: names.setdefault(m.group(0), f"v{len(names)}"), entry)


def test_the_hlo_dialect_as_in_jax():
    for x in (np.float32([1.5, -2.0]), np.complex64([1 + 2j])):
        square = lambda v: v * v
        entries = []
        for lib in (jax, numax):
            lowered = lib.jit(square).lower(x)
            computation = lowered.compiler_ir(dialect="hlo")
            assert type(computation).__name__ == "XlaComputation"
            assert "ENTRY" in computation.as_hlo_text() and "multiply" in computation.as_hlo_text()
            entries.append(_entry(lowered.as_text(dialect="hlo")))
        assert entries[0] == entries[1]
    with pytest.raises(ValueError, match="unknown dialect"):
        numax.jit(square).lower(x).as_text(dialect="mhlo")


def _key_words(lib, keys):
    return np.asarray(lib.random.key_data(keys))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_asarray_array_stack_and_concatenate_of_typed_keys(jit):
    # optax.inject_hyperparams keeps a key hyperparameter through jnp.asarray; optax.tree.split_key_like's
    # users stack keys
    results = []
    for lib in (jax, numax):
        def join(a, b, lib=lib):
            assert lib.numpy.asarray(a) is a
            copied = lib.numpy.array(a)
            assert copied is not a and copied.dtype == a.dtype
            return (lib.numpy.stack([a, b]), lib.numpy.stack([a, b], axis=-1), lib.numpy.concatenate([a, b]),
                    lib.numpy.concatenate([a, b], axis=-1), copied)

        a, b = lib.random.split(lib.random.key(3), 3)[:2], lib.random.split(lib.random.key(4), 3)[:2]
        joined = (lib.jit(join) if jit else join)(a, b)
        assert all(lib.dtypes.issubdtype(x.dtype, lib.dtypes.prng_key) for x in joined)
        results.append([(x.shape, _key_words(lib, x)) for x in joined])
    for (jax_shape, jax_words), (shape, words) in zip(*results):
        assert shape == jax_shape
        np.testing.assert_array_equal(words, jax_words)
    key = numax.random.key(0)
    with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to float32"):
        numax.numpy.asarray(key, dtype=np.float32)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_where_and_astype_of_typed_keys(jit):
    # optax.MultiSteps keeps its inner state (noisy_sgd's key) with jnp.astype(jnp.where(emit, new, old), dtype)
    results = []
    for lib in (jax, numax):
        def pick(a, b, lib=lib):
            jnp = lib.numpy
            assert jnp.astype(a, a.dtype) is a
            return (jnp.astype(jnp.where(jnp.array([True, False, True]), a, b), a.dtype), jnp.where(False, a, b[1]))

        a, b = lib.random.split(lib.random.key(0), 3), lib.random.split(lib.random.key(1), 3)
        results.append([_key_words(lib, x) for x in (lib.jit(pick) if jit else pick)(a, b)])
    for words, jax_words in zip(results[1], results[0]):
        np.testing.assert_array_equal(words, jax_words)
    with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to float32"):
        numax.numpy.astype(numax.random.key(0), numax.numpy.float32)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_array_equal_of_typed_keys(jit):
    # chex.assert_trees_all_equal (chexified, under jit) compares key leaves with jnp.array_equal
    for lib in (jax, numax):
        equal = lib.jit(lib.numpy.array_equal) if jit else lib.numpy.array_equal
        keys, others = lib.random.split(lib.random.key(1)), lib.random.split(lib.random.key(2))
        assert bool(equal(keys, keys)) and not bool(equal(keys, others))
        assert not bool(equal(keys, lib.random.split(lib.random.key(1), 3)))
