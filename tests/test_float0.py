"""float0 values (the tangents of integers) passed to and returned from compiled programs, against jax.

As in jax, they never reach XLA: `jit` and `pmap` take numpy float0 arguments and return numpy float0 arrays.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as mnp

float0 = numax.float0


def _same(ours, theirs):
    """Same tree, values, dtypes and kinds (numpy float0 arrays where jax gives them, device arrays elsewhere)."""
    ours_leaves, theirs_leaves = numax.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        if b.dtype == jax.dtypes.float0:
            assert isinstance(b, np.ndarray) and type(a) is np.ndarray  # host arrays in both
        else:
            assert not isinstance(a, np.ndarray)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_float0_is_jax_float0():
    assert float0 == jax.dtypes.float0


def test_jit_of_grad_with_integer_argument():
    def f(x, i):
        return x * i

    ours = numax.jit(numax.grad(f, argnums=(0, 1), allow_int=True))
    theirs = jax.jit(jax.grad(f, argnums=(0, 1), allow_int=True))
    for _ in range(2):  # the second call hits the cache
        _same(ours(mnp.float32(2.0), mnp.int32(3)), theirs(jnp.float32(2.0), jnp.int32(3)))


@pytest.mark.parametrize("shape", [(), (3,), (0,), (70, 2)])  # (70, 2): larger than the constants kept inline
def test_jit_identity_on_float0(shape):
    ct = np.zeros(shape, float0)
    for _ in range(2):
        _same(numax.jit(lambda c: c)(ct), jax.jit(lambda c: c)(ct))


def test_jit_float0_among_other_arguments_and_results():
    def f(ct, x, i):
        return {"ct": ct, "x": x * 2, "twice": (ct, ct), "i": i + 1}

    ct, x, i = np.zeros((3,), float0), np.arange(3.0, dtype=np.float32), np.int32(4)
    _same(numax.jit(f)(ct, x, i), jax.jit(f)(ct, x, i))
    _same(numax.jit(f)(ct, mnp.asarray(x), i), jax.jit(f)(ct, jnp.asarray(x), i))


def test_jit_returning_a_float0_constant():
    _same(numax.jit(lambda x: (x, np.zeros((2, 70), float0)))(1.0),
          jax.jit(lambda x: (x, np.zeros((2, 70), jax.dtypes.float0)))(1.0))


def test_jit_reshape_of_float0():
    ct = np.zeros((6,), float0)
    _same(numax.jit(lambda c: c.reshape(2, 3))(ct), jax.jit(lambda c: c.reshape(2, 3))(ct))


def test_jit_float0_arithmetic_raises_type_error():
    ct = np.zeros((2,), float0)
    with pytest.raises(TypeError):
        jax.jit(lambda c: -c)(ct)
    with pytest.raises(TypeError):
        numax.jit(lambda c: -c)(ct)


def test_jit_donating_a_float0_argument():
    ct = np.zeros((4,), float0)
    _same(numax.jit(lambda c: c, donate_argnums=0)(ct), jax.jit(lambda c: c, donate_argnums=0)(ct))


def test_lowered_text_holds_float0_as_i1():
    # jax's module: `func.func public @main(%arg0: tensor<3xi1>) -> (tensor<3xi1> ...)`
    text = numax.jit(lambda c: c).lower(np.zeros((3,), float0)).as_text()
    assert "@main(%arg0: tensor<3xi1>) -> (tensor<3xi1>" in text
    assert "tensor<3xi1>" in jax.jit(lambda c: c).lower(np.zeros((3,), float0)).as_text()


def test_vmap_of_jit_on_float0():
    ct = np.zeros((3, 2), float0)
    _same(numax.vmap(numax.jit(lambda c: c))(ct), jax.vmap(jax.jit(lambda c: c))(ct))


def test_jit_of_vmap_of_grad_with_integer_argument():
    def f(x, i):
        return x * i

    x, i = np.ones(3, np.float32), np.arange(3, dtype=np.int32)
    _same(numax.jit(numax.vmap(numax.grad(f, argnums=(0, 1), allow_int=True)))(x, i),
          jax.jit(jax.vmap(jax.grad(f, argnums=(0, 1), allow_int=True)))(x, i))


def test_grad_of_jit_with_integer_argument():
    def f(x, i):
        return (x * i).sum()

    x, i = np.ones(3, np.float32), np.arange(3, dtype=np.int32)
    _same(numax.grad(numax.jit(f), argnums=(0, 1), allow_int=True)(x, i),
          jax.grad(jax.jit(f), argnums=(0, 1), allow_int=True)(x, i))


# jax's pmap_test test_float0_dtype_input / test_float0_dtype_output (the output one returns a numpy float0
# constant here, where jax's test writes `jnp.array(b'', dtype=float0)`)
def test_pmap_float0_input():
    inputs = np.array([b""] * numax.device_count(), dtype=float0)
    _same(numax.pmap(lambda x: x)(inputs), jax.pmap(lambda x: x)(inputs))


def test_pmap_float0_output():
    inputs = np.ones(numax.device_count(), np.float32)
    _same(numax.pmap(lambda x: (np.zeros((), float0), x + 1))(inputs),
          jax.pmap(lambda x: (np.zeros((), float0), x + 1))(inputs))


def test_jit_of_grad_with_a_sharded_argument():
    def f(x, i):
        return (x * i).sum()

    x, i = np.arange(8.0, dtype=np.float32), np.arange(8, dtype=np.int32)
    ours_x = numax.device_put(x, numax.sharding.NamedSharding(numax.sharding.Mesh(np.array(numax.devices()), ("d",)),
                                                              numax.sharding.PartitionSpec("d")))
    theirs_x = jax.device_put(x, jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()), ("d",)),
                                                            jax.sharding.PartitionSpec("d")))
    _same(numax.jit(numax.grad(f, argnums=(0, 1), allow_int=True))(ours_x, i),
          jax.jit(jax.grad(f, argnums=(0, 1), allow_int=True))(theirs_x, i))


def test_pmap_of_grad_with_integer_argument():
    def f(x, i):
        return x * i

    x, i = np.ones(numax.device_count(), np.float32), np.arange(numax.device_count(), dtype=np.int32)
    ours = numax.pmap(numax.grad(f, argnums=(0, 1), allow_int=True))
    for _ in range(2):  # the second call takes pmap's fast path
        _same(ours(x, i), jax.pmap(jax.grad(f, argnums=(0, 1), allow_int=True))(x, i))


def test_float0_arrays_are_created_on_the_host_as_in_jax():
    """jnp.array/zeros of dtype float0 give a host array of float0 values (no device holds them), eagerly and as a
    jitted function's result, as jax does."""
    for lib, np_ in ((numax, mnp), (jax, jnp)):
        made = [np_.array(b"", dtype=lib.dtypes.float0), np_.zeros((2, 3), dtype=lib.dtypes.float0),
                lib.jit(lambda: np_.array(b"", dtype=lib.dtypes.float0))()]  # noqa: B023  (called at once)
        if lib is numax:
            ours = made
        else:
            assert [(a.shape, a.dtype) for a in ours] == [(a.shape, a.dtype) for a in made]
    assert all(isinstance(a, np.ndarray) for a in ours)
