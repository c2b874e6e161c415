"""vmap of the shape, slicing, gather and scatter primitives (and the numpy indexing built on them), against
jax.vmap of the same code and a Python loop over examples; the IR of batched indexing is one gather/scatter.

jax's results for a parametrized test's cases come from one jax.jit program (see tests/oracle.py and
`check_case`); eager jax calls are jitted (eager jax compiles one program per op)."""

import functools
import itertools
import re

import numax.lax as nl
import numpy as np
import pytest
from harness import assert_close, check_vmap, count_ops, jax, jnp
from hypothesis import given
from hypothesis import strategies as st
from oracle import jit_all

import numax
import numax.numpy as xnp

jl = jax.lax


@functools.cache
def _expected_table(build, params):
    """jax.vmap's results for every case of a parametrized test from one jax.jit program; `build(*key)` gives a
    case's (numax function, jax function, arguments, in_axes)."""
    cases = [build(*key) for key in params]
    return jit_all([jax.vmap(jax_fn, in_axes) for _, jax_fn, _, in_axes in cases],
                   [[np.asarray(a) for a in args] for _, _, args, _ in cases])


def check_case(build, params, key, loop=True):
    """check_vmap of the case `build(*key)` of a parametrized test whose cases are `params`, against jax's result
    from the test's table; returns numax's result and the case."""
    numax_fn, jax_fn, args, in_axes = case = build(*key)
    expected = _expected_table(build, params)[params.index(key)]
    return check_vmap(numax_fn, None, args, in_axes, loop=loop, expected=expected), case


# --- shape primitives --------------------------------------------------------------------------------------
X = np.random.default_rng(0).normal(size=(4, 4, 4)).astype(np.float32)

UNARY = {
    "broadcast_in_dim": lambda lax: lambda v: lax.broadcast_in_dim(v, (2, 4, 3, 4), (1, 3)),
    "broadcast_in_dim_size1": lambda lax: lambda v: lax.broadcast_in_dim(v[:1], (3, 4, 2), (0, 1)),
    "reshape": lambda lax: lambda v: lax.reshape(v, (2, 8)),
    "reshape_dimensions": lambda lax: lambda v: lax.reshape(v, (16,), (1, 0)),
    "transpose": lambda lax: lambda v: lax.transpose(v, (1, 0)),
    "squeeze": lambda lax: lambda v: lax.squeeze(lax.reshape(v, (4, 1, 4)), (1,)),
    "rev": lambda lax: lambda v: lax.rev(v, (1,)),
    "rev_both": lambda lax: lambda v: lax.rev(v, (0, 1)),
    "concatenate": lambda lax: lambda v: lax.concatenate([v, lax.rev(v, (0,))], 1),
    "pad": lambda lax: lambda v: lax.pad(v, np.float32(1.5), ((1, 2, 1), (0, -1, 0))),
    "slice": lambda lax: lambda v: lax.slice(v, (1, 0), (3, 4), (1, 2)),
    "dynamic_slice": lambda lax: lambda v: lax.dynamic_slice(v, (1, np.int32(-2)), (2, 2)),
    "dynamic_update_slice": lambda lax: lambda v: lax.dynamic_update_slice(v, v[:2, :3] * 2, (np.int32(3), 1)),
}


UNARY_AXES = [0, 1, -1]


def _unary_case(name, axis):
    return UNARY[name](nl), UNARY[name](jl), [X], axis


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("axis", UNARY_AXES)
def test_unary_shape_ops(name, axis):
    check_case(_unary_case, tuple(itertools.product(sorted(UNARY), UNARY_AXES)), (name, axis), loop=axis == 1)


def test_transpose_keeps_batch_dim_in_place():
    """A batched transpose is one transpose: the batch dimension stays where it is, the others permute around it."""
    from numax.core.primitives import batching_rules
    from numax.lax.shapes import transpose_p

    x = np.zeros((2, 3, 4, 5), np.float32)
    assert count_ops(numax.vmap(lambda v: nl.transpose(v, (2, 0, 1))), [x], "transpose") == 1
    out, out_dim = batching_rules[transpose_p]([x], [1], permutation=(2, 0, 1))
    assert (out.shape, out_dim) == ((5, 3, 2, 4), 1)
    check_vmap(lambda v: nl.transpose(v, (2, 0, 1)), lambda v: jl.transpose(v, (2, 0, 1)), [x], in_axes=1, loop=False)


def test_broadcast_in_dim_no_transpose():
    """The batch dimension lands after the output dimension of the operand dimension before it: no transpose."""
    from numax.core.primitives import batching_rules
    from numax.lax.shapes import broadcast_in_dim_p

    x = np.zeros((3, 5, 6), np.float32)
    out, out_dim = batching_rules[broadcast_in_dim_p]([x], [2], shape=(3, 4, 5), broadcast_dimensions=(0, 2))
    assert (out.shape, out_dim) == ((3, 4, 5, 6), 3)
    out, out_dim = batching_rules[broadcast_in_dim_p]([x], [1], shape=(3, 4, 6), broadcast_dimensions=(0, 2))
    assert (out.shape, out_dim) == ((3, 5, 4, 6), 1)
    assert count_ops(numax.vmap(lambda v: nl.broadcast_in_dim(v, (2, 5, 6), (1, 2))), [x], "transpose") == 0
    check_vmap(lambda v: nl.broadcast_in_dim(v, (3, 4, 5), (0, 2)), lambda v: jl.broadcast_in_dim(v, (3, 4, 5), (0, 2)),
          [x], in_axes=2, loop=False)


def _batched(per_example, axis, size=4, seed=0):
    """A random array whose examples have shape `per_example`, stacked at `axis` (one example when None)."""
    rng = np.random.default_rng(seed)
    if axis is None:
        return rng.normal(size=per_example).astype(np.float32)
    return np.moveaxis(rng.normal(size=(size,) + per_example).astype(np.float32), 0, axis)


CONCATENATE_AXES = ((0, None), (None, 1), (1, 0), (-1, -1))


def _concatenate_case(in_axes):
    x, y = _batched((4, 3), in_axes[0]), _batched((2, 3), in_axes[1], seed=1)
    return (lambda a, b: nl.concatenate([a, b, a], 0), lambda a, b: jl.concatenate([a, b, a], 0), [x, y], in_axes)


@pytest.mark.parametrize("in_axes", CONCATENATE_AXES)
def test_concatenate_mixed(in_axes):
    check_case(_concatenate_case, tuple((a,) for a in CONCATENATE_AXES), (in_axes,))


PAD_AXES = ((0, 0), (None, 0), (1, None))


def _pad_case(in_axes):
    config = ((1, 2, 1), (0, -1, 0))
    x = X if in_axes[0] is not None else X[0]
    value = X[0, 0] if in_axes[1] is not None else X[0, 0, 0]
    return lambda a, p: nl.pad(a, p, config), lambda a, p: jl.pad(a, p, config), [x, value], in_axes


@pytest.mark.parametrize("in_axes", PAD_AXES)
def test_pad_batched_value(in_axes):
    check_case(_pad_case, tuple((a,) for a in PAD_AXES), (in_axes,))


def test_iota_under_vmap():
    check_vmap(lambda v: v + nl.iota(np.float32, 4), lambda v: v + jl.iota(np.float32, 4), [X[0]], in_axes=0)


# --- dynamic_slice / dynamic_update_slice --------------------------------------------------------------------
STARTS = np.array([0, 3, -1, 2], np.int32)


DYNAMIC_SLICE_AXES = ((0, 0), (None, 0), (2, 0), (1, None))


def _dynamic_slice_case(in_axes):
    x = X if in_axes[0] is not None else X[0]
    starts = STARTS if in_axes[1] is not None else STARTS[1]

    def fn(lax):
        return lambda a, i: lax.dynamic_slice(a, (i, 1), (2, 3))

    return fn(nl), fn(jl), [x, starts], in_axes


@pytest.mark.parametrize("in_axes", DYNAMIC_SLICE_AXES)
def test_dynamic_slice_per_example_starts(in_axes):
    _, (numax_fn, _, args, _) = check_case(_dynamic_slice_case, tuple((a,) for a in DYNAMIC_SLICE_AXES), (in_axes,))
    batched = numax.vmap(numax_fn, in_axes)
    if in_axes[1] is not None:
        assert count_ops(batched, args, "gather") == 1
        assert count_ops(batched, args, "dynamic_slice") == 0
    else:
        assert count_ops(batched, args, "dynamic_slice") == 1


DYNAMIC_UPDATE_SLICE_AXES = ((0, 0, 0), (None, 0, 0), (0, None, 0), (None, None, 0), (2, 1, None), (None, 0, None))


def _dynamic_update_slice_case(in_axes):
    x = X if in_axes[0] is not None else X[0]
    update = X[:, :2, :3] * 10 if in_axes[1] is not None else X[0, :2, :3] * 10
    if in_axes[1] == 1:
        update = X[:2, :, :3] * 10
    starts = STARTS if in_axes[2] is not None else STARTS[1]

    def fn(lax):
        return lambda a, u, i: lax.dynamic_update_slice(a, u, (i, 1))

    return fn(nl), fn(jl), [x, update, starts], in_axes


@pytest.mark.parametrize("in_axes", DYNAMIC_UPDATE_SLICE_AXES)
def test_dynamic_update_slice_per_example(in_axes):
    _, (numax_fn, _, args, _) = check_case(_dynamic_update_slice_case, tuple((a,) for a in DYNAMIC_UPDATE_SLICE_AXES),
                                           (in_axes,))
    if in_axes[2] is not None:
        assert count_ops(numax.vmap(numax_fn, in_axes), args, "scatter") == 1


# --- gather / scatter ----------------------------------------------------------------------------------------
def _gather_fn(lax, mode):
    numbers = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lambda a, i: lax.gather(a, i, numbers, (1, 3), mode=mode, fill_value=-7.0 if mode == "fill" else None)


GATHER_INDICES = np.array([[[0], [3]], [[1], [5]], [[2], [2]], [[-1], [1]]], np.int32)  # (4, 2, 1), some OOB


GATHER_MODES = ["clip", "fill", "promise_in_bounds"]
GATHER_AXES = [(0, None), (None, 0), (0, 0), (2, 1), (1, -1)]


@pytest.mark.parametrize("mode", GATHER_MODES)
@pytest.mark.parametrize("in_axes", GATHER_AXES)
def test_gather(mode, in_axes):
    _, (numax_fn, _, args, _) = check_case(_gather_case, tuple(itertools.product(GATHER_MODES, GATHER_AXES)),
                                           (mode, in_axes))
    assert count_ops(numax.vmap(numax_fn, in_axes), args, "gather") == 1


def _gather_case(mode, in_axes):
    x = X if in_axes[0] is not None else X[0]
    indices = GATHER_INDICES if in_axes[1] is not None else GATHER_INDICES[1]
    if in_axes[1] == 1:
        indices = np.moveaxis(GATHER_INDICES, 0, 1)
    if in_axes[1] == -1:
        indices = np.moveaxis(GATHER_INDICES, 0, -1)
    if mode == "promise_in_bounds":
        indices = np.clip(indices, 0, 3)
    return _gather_fn(nl, mode), _gather_fn(jl, mode), [x, indices], in_axes


def test_gather_with_batching_dims_nested_vmap():
    """A gather that already pairs operand and indices batching dims, under two vmaps."""
    numbers_n = nl.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
                                          operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    numbers_j = jl.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
                                          operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    x = np.random.default_rng(1).normal(size=(2, 3, 4, 5, 6)).astype(np.float32)  # inner (4, 5, 6)
    indices = np.random.default_rng(2).integers(0, 5, size=(3, 4, 2, 1)).astype(np.int32)  # inner (4, 1)

    def fn(lax, numbers):
        return lambda a, i: lax.gather(a, i, numbers, (1, 1, 6), mode="clip")

    inner_n = numax.vmap(fn(nl, numbers_n), in_axes=(0, 1))
    inner_j = jax.vmap(fn(jl, numbers_j), in_axes=(0, 1))
    actual = numax.jit(numax.vmap(inner_n, in_axes=(1, 0)))(x, indices)
    assert_close(actual, np.asarray(jax.jit(jax.vmap(inner_j, in_axes=(1, 0)))(x, indices)))
    assert count_ops(numax.vmap(inner_n, in_axes=(1, 0)), [x, indices], "gather") == 1


SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]


def _scatter_fn(lax, name, mode):
    numbers = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
    op = getattr(lax, name)
    return lambda a, i, u: op(a, i, u, numbers, mode=mode, unique_indices=name == "scatter")


SCATTER_INDICES = np.array([[[0], [3]], [[1], [1]], [[2], [7]], [[3], [0]]], np.int32)  # (4, 2, 1)


SCATTER_AXES = [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0), (1, None, 2), (None, 1, 0)]


@pytest.mark.parametrize("name", SCATTERS)
@pytest.mark.parametrize("in_axes", SCATTER_AXES)
def test_scatter(name, in_axes):
    _, (numax_fn, _, args, _) = check_case(_scatter_case, tuple(itertools.product(SCATTERS, SCATTER_AXES)),
                                           (name, in_axes))
    assert count_ops(numax.vmap(numax_fn, in_axes), args, name) == 1


def _scatter_case(name, in_axes):
    x, updates = X, np.random.default_rng(3).normal(size=(4, 2, 4)).astype(np.float32)
    indices = SCATTER_INDICES
    if name == "scatter":
        indices = np.array([[[0], [3]], [[1], [2]], [[2], [1]], [[3], [0]]], np.int32)
    if in_axes[0] is None:
        x = x[0]
    if in_axes[1] is None:
        indices = indices[0]
    elif in_axes[1] == 1:
        indices = np.moveaxis(indices, 0, 1)
    if in_axes[2] is None:
        updates = updates[0]
    elif in_axes[2] == 2:
        updates = np.moveaxis(updates, 0, 2)
    mode = "drop" if name != "scatter" else "clip"
    return _scatter_fn(nl, name, mode), _scatter_fn(jl, name, mode), [x, indices, updates], in_axes


# --- numpy-level indexing ----------------------------------------------------------------------------------
I = np.array([0, 3, -1, 2], np.int32)


NUMPY_INDEXING = [
    ("x[i]", lambda np_: lambda a, i: a[i], (0, 0)),
    ("x[i] unbatched x", lambda np_: lambda a, i: a[i], (None, 0)),
    ("x[i] unbatched i", lambda np_: lambda a, i: a[i], (1, None)),
    ("x[:, i]", lambda np_: lambda a, i: a[:, i], (2, 0)),
    ("x[i, 1:3]", lambda np_: lambda a, i: a[i, 1:3], (0, 0)),
    ("x[[i, 0]]", lambda np_: lambda a, i: a[np_.stack([i, i * 0])], (0, 0)),
    ("x[i, i]", lambda np_: lambda a, i: a[i, i], (None, 0)),
]


def _numpy_indexing_case(name, fn, in_axes):
    x = X if in_axes[0] is not None else X[0]
    i = I if in_axes[1] is not None else I[1]
    return fn(xnp), fn(jnp), [x, i], in_axes


@pytest.mark.parametrize("name, fn, in_axes", NUMPY_INDEXING)
def test_numpy_indexing(name, fn, in_axes):
    out, (_, _, (x, i), _) = check_case(_numpy_indexing_case, tuple(NUMPY_INDEXING), (name, fn, in_axes))
    assert out.dtype == np.float32
    text = str(numax.make_jaxpr(numax.vmap(fn(xnp), in_axes))(x, i))
    assert text.count(" gather[") + text.count(" dynamic_slice[") == 1, text


AT_METHODS = ["set", "add", "mul", "min", "max"]
AT_AXES = [(0, 0, 0), (0, None, None), (None, 0, None), (None, None, 0), (1, 0, None)]


def _at_update_case(method, in_axes):
    x = X if in_axes[0] is not None else X[0]
    i = I if in_axes[1] is not None else I[1]
    values = X[:, 0] * 3 if in_axes[2] is not None else X[0, 0] * 3

    def fn(np_):
        return lambda a, i, v: getattr(a.at[i], method)(v)

    return fn(xnp), fn(jnp), [x, i, values], in_axes


@pytest.mark.parametrize("method", AT_METHODS)
@pytest.mark.parametrize("in_axes", AT_AXES)
def test_numpy_at_updates(method, in_axes):
    _, (numax_fn, _, (x, i, values), _) = check_case(_at_update_case, tuple(itertools.product(AT_METHODS, AT_AXES)),
                                                     (method, in_axes))
    scatter_name = {"set": "scatter", "add": "scatter_add", "mul": "scatter_mul", "min": "scatter_min",
                    "max": "scatter_max"}[method]
    text = str(numax.make_jaxpr(numax.vmap(numax_fn, in_axes))(x, i, values))
    assert len(re.findall(rf"= {scatter_name}\[", text)) + text.count(" dynamic_update_slice ") == 1, text


def test_numpy_at_add_repeated_batched_indices():
    idx = np.array([[0, 0, 1], [3, 3, 3], [1, 2, 1], [2, 0, 2]], np.int32)
    fn = lambda np_: lambda a, i, v: a.at[i].add(v)  # noqa: E731
    check_vmap(fn(xnp), fn(jnp), [X[:, :, 0], idx, X[:, :3, 1]], in_axes=(0, 0, 0))


TAKE_MODES = [None, "clip", "wrap", "fill"]
TAKE_AXES = [(0, 0), (None, 0), (1, None)]


@pytest.mark.parametrize("mode", TAKE_MODES)
@pytest.mark.parametrize("in_axes", TAKE_AXES)
def test_take(mode, in_axes):
    _, (numax_fn, _, args, _) = check_case(_take_case, tuple(itertools.product(TAKE_MODES, TAKE_AXES)), (mode, in_axes))
    assert count_ops(numax.vmap(numax_fn, in_axes), args, "gather") == 1


def _take_case(mode, in_axes):
    idx = np.array([[0, 5, 1], [3, 3, -1], [2, 1, 0], [-5, 2, 3]], np.int32)
    x = X if in_axes[0] is not None else X[0]
    i = idx if in_axes[1] is not None else idx[0]

    def fn(np_):
        return lambda a, i: np_.take(a, i, axis=1, mode=mode)

    return fn(xnp), fn(jnp), [x, i], in_axes


TAKE_ALONG_AXES = ((0, 0), (None, 0), (2, None), (1, 2))


@pytest.mark.parametrize("in_axes", TAKE_ALONG_AXES)
def test_take_along_axis(in_axes):
    _, (numax_fn, _, args, _) = check_case(_take_along_axis_case, tuple((a,) for a in TAKE_ALONG_AXES), (in_axes,))
    assert count_ops(numax.vmap(numax_fn, in_axes), args, "gather") == 1


def _take_along_axis_case(in_axes):
    idx = np.random.default_rng(4).integers(0, 4, size=(4, 4, 2)).astype(np.int32)
    x = X if in_axes[0] is not None else X[0]
    i = idx if in_axes[1] is not None else idx[0]
    if in_axes[1] == 2:
        i = np.random.default_rng(4).integers(0, 4, size=(4, 2, 4)).astype(np.int32)

    def fn(np_):
        return lambda a, i: np_.take_along_axis(a, i, axis=1)

    return fn(xnp), fn(jnp), [x, i], in_axes


NUMPY_SHAPE_FUNCTIONS = [
    ("concatenate", lambda np_: lambda a, b: np_.concatenate([a, b], axis=1)),
    ("stack", lambda np_: lambda a, b: np_.stack([a, b], axis=-1)),
    ("pad", lambda np_: lambda a, b: np_.pad(a, ((1, 0), (2, 1)), constant_values=2.0) + np_.sum(b)),
    ("roll", lambda np_: lambda a, b: np_.roll(a, 2, axis=1) + b),
    ("flip", lambda np_: lambda a, b: np_.flip(a, 0) - b),
    ("reshape", lambda np_: lambda a, b: np_.reshape(a * b, (2, -1))),
    ("transpose", lambda np_: lambda a, b: np_.transpose(a) + b),
    ("moveaxis", lambda np_: lambda a, b: np_.moveaxis(np_.stack([a, b]), 0, -1)),
]
NUMPY_SHAPE_AXES = [(0, 0), (1, None), (None, 2)]


def _numpy_shape_case(name, fn, in_axes):
    a = X if in_axes[0] is not None else X[0]
    b = X * 2 if in_axes[1] is not None else X[1] * 2
    return fn(xnp), fn(jnp), [a, b], in_axes


@pytest.mark.parametrize("name, fn", NUMPY_SHAPE_FUNCTIONS)
@pytest.mark.parametrize("in_axes", NUMPY_SHAPE_AXES)
def test_numpy_shape_functions(name, fn, in_axes):
    params = tuple(f + (a,) for f, a in itertools.product(NUMPY_SHAPE_FUNCTIONS, NUMPY_SHAPE_AXES))
    check_case(_numpy_shape_case, params, (name, fn, in_axes), loop=in_axes == (0, 0))


# --- nesting, jit and per-example gradients -------------------------------------------------------------------
def test_nested_vmap_indexing():
    idx = np.random.default_rng(5).integers(-4, 4, size=(3, 4)).astype(np.int32)
    x = np.random.default_rng(6).normal(size=(4, 3, 4)).astype(np.float32)

    def fn(np_):
        return lambda a, i: a[i] * 2

    nested = numax.vmap(numax.vmap(fn(xnp), in_axes=(None, 0)), in_axes=(1, 0))
    expected = jax.jit(jax.vmap(jax.vmap(fn(jnp), in_axes=(None, 0)), in_axes=(1, 0)))(x, idx)
    assert_close(numax.jit(nested)(x, idx), np.asarray(expected))
    assert_close(nested(x, idx), np.asarray(expected))
    assert count_ops(nested, [x, idx], "gather") == 1


def test_vmap_of_jit_indexing():
    fn = numax.vmap(numax.jit(lambda a, i: a.at[i].add(1.0)[i]), in_axes=(0, 0))
    expected = jax.jit(jax.vmap(lambda a, i: a.at[i].add(1.0)[i]))(X[:, 0], I)
    assert_close(fn(X[:, 0], I), np.asarray(expected))


def test_per_example_grads_through_indexing():
    x = X[:, 0]

    def loss(np_):
        return lambda a, i: a[i] ** 2

    actual = numax.vmap(numax.grad(loss(xnp)))(x, I)
    expected = jax.jit(jax.vmap(jax.grad(loss(jnp))))(x, I)
    assert_close(actual, np.asarray(expected))
    assert_close(numax.jit(numax.vmap(numax.grad(loss(xnp))))(x, I), np.asarray(expected))
    # grad of a vmapped loss: each example's index receives its own gradient.
    total_n = lambda a, i: xnp.sum(numax.vmap(loss(xnp))(a, i))  # noqa: E731
    total_j = lambda a, i: jnp.sum(jax.vmap(loss(jnp))(a, i))  # noqa: E731
    assert_close(numax.grad(total_n)(x, I), np.asarray(jax.jit(jax.grad(total_j))(x, I)))


def test_per_example_grads_through_dynamic_slice_and_gather():
    x = X[:, :, 0]

    def loss(lax, np_):
        return lambda a, i: np_.sum(lax.dynamic_slice(a, (i,), (2,)) ** 2) + np_.sum(np_.take(a, np_.stack([i, i])))

    actual = numax.vmap(numax.grad(loss(nl, xnp)))(x, I)
    assert_close(actual, np.asarray(jax.jit(jax.vmap(jax.grad(loss(jl, jnp))))(x, I)))


# --- hypothesis ---------------------------------------------------------------------------------------------
GATHER_HYPOTHESIS_CASES = tuple(sorted({(o, 0 if o is None and i is None else i, size) for o, i, size in
                                         itertools.product([None, 0, 1, 2], [None, 0, 1], [1, 2, 3])},
                                        key=str))  # every case the test can draw (jax's results: one table)


@given(operand_axis=st.sampled_from([None, 0, 1, 2]), indices_axis=st.sampled_from([None, 0, 1]),
       size=st.integers(1, 3))
def test_gather_in_axes_hypothesis(operand_axis, indices_axis, size):
    if operand_axis is None and indices_axis is None:
        indices_axis = 0
    check_case(_gather_hypothesis_case, GATHER_HYPOTHESIS_CASES, (operand_axis, indices_axis, size), loop=False)


def _gather_hypothesis_case(operand_axis, indices_axis, size):
    rng = np.random.default_rng(size)
    x_shape = [3, 4]
    if operand_axis is not None:
        x_shape.insert(operand_axis, size)
    i_shape = [2]
    if indices_axis is not None:
        i_shape.insert(indices_axis, size)
    x = rng.normal(size=x_shape).astype(np.float32)
    i = rng.integers(-3, 3, size=i_shape).astype(np.int32)

    def fn(np_):
        return lambda a, i: a[i, 1:]

    return fn(xnp), fn(jnp), [x, i], (operand_axis, indices_axis)


# --- edge cases: no examples, other dtypes, nested scatters, gradients through scatters --------------------------
def _compare(actual, expected):
    assert_close(actual, np.asarray(expected))


@pytest.mark.parametrize("fn", [lambda lax: lambda a, i: a[i], lambda lax: lambda a, i: a.at[i].add(1.0),
                                lambda lax: lambda a, i: lax.dynamic_slice(a, (i,), (2,))])
def test_empty_batch(fn):
    x, i = np.zeros((0, 4), np.float32), np.zeros((0,), np.int32)
    _compare(numax.vmap(fn(nl))(x, i), jax.jit(jax.vmap(fn(jl)))(x, i))


def test_other_dtypes():
    flags = np.array([[True, False], [False, False], [True, True]])
    values = np.array([True, False, True])
    small = np.arange(24, dtype=np.int8).reshape(3, 8)
    indices = np.array([[0, 9], [7, -1], [3, 3]], np.int32)
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    expected = jax.jit(lambda *args: [jax.vmap(lambda a, p: jl.pad(a, p, ((1, 1, 1),)))(*args[:2]),
                                      jax.vmap(lambda a, i: jnp.take(a, i, mode="fill"))(*args[2:4]),
                                      jax.vmap(lambda a, i: a.at[i].max(5))(*args[4:])])(
        flags, values, small, indices, ints, indices[:, 0] % 4)
    _compare(numax.vmap(lambda a, p: nl.pad(a, p, ((1, 1, 1),)))(flags, values), expected[0])
    _compare(numax.vmap(lambda a, i: xnp.take(a, i, mode="fill"))(small, indices), expected[1])
    _compare(numax.vmap(lambda a, i: a.at[i].max(5))(ints, indices[:, 0] % 4), expected[2])


@pytest.mark.parametrize("axes", [(0, 0), (1, 1)])
def test_nested_vmap_scatter(axes):
    x = np.random.default_rng(7).normal(size=(2, 3, 5)).astype(np.float32)
    idx = np.array([[0, 4, 2], [1, 1, 3]], np.int32)

    def fn(np_):
        return lambda a, i: a.at[i].add(a[0] * 2)

    nested = numax.vmap(numax.vmap(fn(xnp), (0, 0)), axes)
    _compare(numax.jit(nested)(x, idx), jax.jit(jax.vmap(jax.vmap(fn(jnp), (0, 0)), axes))(x, idx))
    assert count_ops(nested, [x, idx], "scatter_add") == 1


def test_per_example_grads_through_scatter():
    x = np.random.default_rng(8).normal(size=(3, 5)).astype(np.float32)
    values, idx = np.array([1.0, 2.0, 3.0], np.float32), np.array([1, 4, 0], np.int32)

    def loss(np_):
        return lambda a, i, v: np_.sum(a.at[i].set(v * a[0]) ** 2) + np_.sum(np_.pad(a, (1, 2)) * 2)

    actual = numax.vmap(numax.grad(loss(xnp), argnums=(0, 2)))(x, idx, values)
    expected = jax.jit(jax.vmap(jax.grad(loss(jnp), argnums=(0, 2))))(x, idx, values)
    for a, e in zip(actual, expected):
        _compare(a, e)


@given(name=st.sampled_from(sorted(UNARY)), in_axis=st.sampled_from([0, 1, 2, -1]),
       out_axis=st.sampled_from([0, 1, -1]))
def test_shape_ops_in_out_axes_hypothesis(name, in_axis, out_axis):
    """vmap of jit (the batched op inside a jitted program) with the batch at various input and output axes."""
    actual = numax.vmap(numax.jit(UNARY[name](nl)), in_axes=in_axis, out_axes=out_axis)(X)
    expected = jax.jit(jax.vmap(UNARY[name](jl), in_axes=in_axis, out_axes=out_axis))(X)
    _compare(actual, expected)
