"""numax.numpy reductions against jax.numpy: axis, keepdims, where, dtype, initial; values, dtypes, weak types."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from harness import assert_close

import numax
import numax.numpy as xnp

bf16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16, bf16, np.float32, np.complex64)]
NAMES = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std", "argmax", "argmin", "ptp",
         "count_nonzero"]


def sample(dtype, shape=(3, 4)):
    values = (np.arange(np.prod(shape)).reshape(shape) % 5) - 2
    values = values * (1 if dtype.kind in "iub" else 0.75)
    if dtype == np.bool_:
        return values > 0
    if dtype.kind == "u":
        values = np.abs(values)
    if dtype.kind == "c":
        return (values + 0.5j * values[::-1]).astype(dtype)
    return values.astype(dtype)


KWARGS = [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)}, {"axis": None, "keepdims": True}]
EXTRA = {
    "sum": [{"dtype": np.float32}, {"where": np.array([True, False, True, True])}, {"initial": 5}, {"axis": 1,
                                                                                                    "dtype": np.int8}],
    "prod": [{"dtype": np.float32}, {"where": np.array([[True], [False], [True]])}],
    "max": [{"initial": 1, "where": np.array([True, False, True, False])}, {"initial": 10}],
    "min": [{"initial": -1, "where": np.array([True, False, True, False])}],
    "mean": [{"dtype": np.float32}, {"where": np.array([True, False, True, True]), "axis": 1}],
    "var": [{"ddof": 1}, {"axis": 0, "ddof": 1, "keepdims": True}, {"correction": 1}],
    "std": [{"ddof": 1, "axis": 1}],
    "all": [{"where": np.array([True, False, True, False])}],
    "any": [{"where": np.array([False, False, True, False])}],
}


def _accepts(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError):
        return None


def _kwargs_for(name):
    kwargs = KWARGS + EXTRA.get(name, [])
    if name in ("argmax", "argmin"):
        kwargs = [k for k in kwargs if not isinstance(k.get("axis"), tuple)]
    if name in ("count_nonzero", "ptp"):
        kwargs = [k for k in kwargs if set(k) <= {"axis", "keepdims"}]
    return kwargs


def check_same(got, want, name, scale=1.0):
    assert isinstance(got, numax.Array), (name, type(got))
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type), (name, got, want)
    assert_close(got, np.asarray(want), scale=scale)


@pytest.mark.parametrize("name", NAMES)
def test_reduction_matches_jnp(name):
    fn, jfn = getattr(xnp, name), getattr(jnp, name)
    cases = []
    for dtype in DTYPES:
        x = sample(dtype)
        for kwargs in _kwargs_for(name):
            accepted = _accepts(lambda v, k=kwargs: jax.eval_shape(lambda u: jfn(u, **k), v), x)
            got = _accepts(lambda v, k=kwargs: numax.eval_shape(lambda u: fn(u, **k), v), x)
            if (accepted is None) != (got is None):  # jax rejects some types only when compiling
                accepted = _accepts(jax.jit(lambda v, k=kwargs: jfn(v, **k)), x)
            assert (accepted is None) == (got is None), (name, dtype, kwargs, accepted, got)
            if accepted is not None:
                cases.append((x, kwargs))
    # One compiled program per side for all cases (compiling each case alone dominated the test's time).
    wanted = jax.jit(lambda xs: [jfn(x, **k) for x, (_, k) in zip(xs, cases)])([c[0] for c in cases])
    traced = numax.jit(lambda xs: [fn(x, **k) for x, (_, k) in zip(xs, cases)])([c[0] for c in cases])
    cases = [(x, kwargs, want) for (x, kwargs), want in zip(cases, wanted)]
    scale = 8 if name in ("var", "std", "prod") else 2
    for (x, kwargs, want), got_jit in zip(cases, traced):
        check_same(got_jit, want, f"{name} {x.dtype} {kwargs}", scale)
        if x.dtype in (np.float32, np.int32):
            check_same(fn(x, **kwargs), want, f"{name} eager {kwargs}", scale)


def test_reductions_of_python_scalars_and_weak_types():
    for name in ("sum", "prod", "max", "mean"):
        check_same(getattr(xnp, name)(2.5), getattr(jnp, name)(2.5), name)
        check_same(getattr(xnp, name)(xnp.asarray([1.0, 2.0])), getattr(jnp, name)(jnp.asarray([1.0, 2.0])), name)


def test_empty_reductions():
    empty = np.zeros((0, 3), np.float32)
    for name in ("sum", "prod", "mean", "any", "all"):
        check_same(getattr(xnp, name)(empty, axis=0), getattr(jnp, name)(empty, axis=0), name)
    with pytest.raises(ValueError, match="zero-size array"):
        xnp.max(empty, axis=0)
    with pytest.raises(ValueError, match="empty"):
        xnp.argmax(empty)
    check_same(xnp.max(empty, axis=0, initial=-1.0), jnp.max(empty, axis=0, initial=-1.0), "max")


def test_reduction_methods():
    x = sample(np.dtype(np.float32))
    a, ja = xnp.asarray(x), jnp.asarray(x)
    check_same(a.sum(), ja.sum(), "sum")
    check_same(a.sum(axis=0, keepdims=True), ja.sum(axis=0, keepdims=True), "sum")
    check_same(a.mean(1), ja.mean(1), "mean")
    check_same(a.max(), ja.max(), "max")
    check_same(a.argmin(axis=1), ja.argmin(axis=1), "argmin")
    check_same(a.std(), ja.std(), "std")
    check_same(a.any(), ja.any(), "any")
    check_same(a.prod(axis=0), ja.prod(axis=0), "prod")


def test_average():
    x = sample(np.dtype(np.float32))
    w = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    check_same(xnp.average(x), jnp.average(x), "average")
    check_same(xnp.average(x, axis=1, weights=w), jnp.average(x, axis=1, weights=w), "average")
    got, got_sum = xnp.average(x, axis=1, weights=w, returned=True)
    want, want_sum = jnp.average(x, axis=1, weights=w, returned=True)
    check_same(got, want, "average")
    check_same(got_sum, want_sum, "average")


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), bf16])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std"])
def test_16_bit_floats_accumulate_in_float32_as_in_jax(name, dtype):
    # 4096 values near 1.5: a 16-bit running sum would stop growing long before the end
    x = (1.5 + np.random.RandomState(3).rand(3, 4096) * 0.01).astype(dtype)
    x = x[:, :24] if name == "prod" else x  # a product of 4096 values would overflow
    got, want = getattr(xnp, name)(x, axis=-1), getattr(jnp, name)(x, axis=-1)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
    program = numax.make_jaxpr(lambda v: getattr(xnp, name)(v, axis=-1))(x)
    (reduction,) = [e for e in program.equations if e.primitive.name.startswith("reduce_")][-1:]
    assert reduction.inputs[0].aval.dtype == np.float32
