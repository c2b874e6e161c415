"""Out-of-bounds indexing against jax: reads clamp (`arange(10)[11]` is 9), `.at[]` reads and writes follow
their `mode` ('promise_in_bounds', 'clip', 'drop', 'fill') and `wrap_negative_indices`, and `take` /
`take_along_axis` fill by default. Each table runs eagerly, under one shared jit, under vmap and through grad."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given
from hypothesis import strategies as st

import numax
import numax.numpy as xnp

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
_I = np.array

# Static indices with out-of-bounds integers, alone and beside slices, None, Ellipsis, arrays and masks.
STATIC_CASES = [
    5, -4, -9, (1, 7), (-5, 2), (2, -6), (1, 2, 99), (7, slice(None), 1), (5, slice(None, None, 2)),
    (5, slice(None, None, -1)), (slice(1, 3), 9), (Ellipsis, 9), (None, 4, None), (Ellipsis, -6, None),
    (_I([0, 2]), 9), (9, _I([0, 3])), (_I([7, -7, 1]),), (_I([[0, 5]]), slice(None), _I([[-9], [9]])),
    (np.int32(9), 1), (4, True), (slice(None), _I([0, 1]), 8), (_I([0, 1]), slice(None, None, 2), -9),
    (slice(5, 20), slice(-20, 2)), (np.uint8(200), 0), _I(-5), (1, _I(-9)), (_I(4), slice(None, None, -1)),
]


def _all_close(ours, expected, scale=1.0):
    assert len(ours) == len(expected)
    for out, exp in zip(ours, expected):
        assert_close(out, exp, scale=scale)


def _matches_jax(table, arg):
    """`table(module, arg)`, a list of results, with numax eagerly and under one numax.jit, against one jax.jit
    (eager jax compiles every op on its own, which is slow)."""
    expected = jax.jit(lambda a: table(jnp, a))(arg)
    _all_close(table(xnp, xnp.asarray(arg)), expected)
    _all_close(numax.jit(lambda a: table(xnp, a))(arg), expected)


def _raises_like_jax(call):
    """`call(module)` raises with numax an exception of the class jax raises (or a subclass of it)."""
    with pytest.raises(Exception) as theirs:
        call(jnp)
    with pytest.raises(type(theirs.value)):
        call(xnp)


def test_static_out_of_bounds_reads_match_jax():
    _matches_jax(lambda m, x: [x[index] for index in STATIC_CASES], A)


def test_arange_gotcha():
    # JAX's "common gotchas": retrieval past the end clamps, where numpy raises.
    assert int(xnp.arange(10)[11]) == int(jnp.arange(10)[11]) == 9
    assert int(xnp.arange(10)[-11]) == int(jnp.arange(10)[-11]) == 0


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_integer_index_property(shape, data):
    # Against numpy: any integer i (static or traced) reads position clamp(i + n if i < 0 else i, 0, n - 1) of
    # an axis of length n; a write at i lands there when i + n (for negative i) or i is in range, else is dropped.
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    n = shape[0]
    i = data.draw(st.integers(-3 * n, 3 * n))
    wrapped = i + n if i < 0 else i
    position = min(max(wrapped, 0), n - 1)
    assert_close(xnp.asarray(a)[i], a[position])
    assert_close(numax.jit(lambda a, i: a[i])(a, np.int32(i)), a[position])
    expected = a.copy()
    if 0 <= wrapped < n:
        expected[wrapped] = -1.0
    assert_close(xnp.asarray(a).at[i].set(-1.0), expected)


# Traced integer indices: (function of x and the index arrays, index arrays), under jit and vmap.
TRACED_CASES = [
    (lambda x, i: x[i], (np.int32(7),)),
    (lambda x, i: x[i], (np.int32(-8),)),
    (lambda x, i: x[1, i], (np.int32(11),)),
    (lambda x, i, k: x[i, :, k], (np.int32(-1), np.int32(-30))),
    (lambda x, i: x[::-1, i], (np.int32(9),)),
    (lambda x, i: x[i, ::2], (np.int32(9),)),
    (lambda x, i: x[i, 2:, 9], (np.int32(-4),)),
    (lambda x, i: x[None, i], (_I([5, -5, 0, 2], np.int32),)),
    (lambda x, i, k: x[i, k], (_I([[3], [-1]], np.int32), _I([-9, 8, 2], np.int32))),
    (lambda x, i: x[:, 1, i], (_I([6, -6], np.int32),)),
]


def test_traced_out_of_bounds_reads_match_jax():
    def all_cases(x, *flat):
        flat = iter(flat)
        return [fn(x, *[next(flat) for _ in args]) for fn, args in TRACED_CASES]

    flat_args = [a for _, args in TRACED_CASES for a in args]
    expected = jax.jit(all_cases)(A, *flat_args)
    _all_close(numax.jit(all_cases)(A, *flat_args), expected)
    _all_close(all_cases(xnp.asarray(A), *flat_args), expected)


def test_vmap_over_out_of_bounds_indices_matches_jax():
    indices = _I([7, -9, 2, -1], np.int32)
    x, j = xnp.asarray(A[0]), jnp.asarray(A[0])

    def reads(m, x, i):
        return (x[i], x[:, i], x.at[i].get(mode="fill"), x.at[i, 1].get(mode="clip"), x.at[i].set(-1.0),
                x.at[2, i].add(5.0, mode="clip"), m.take(x, i, axis=1), m.take(x, i, mode="clip"))

    _all_close(numax.vmap(lambda i: reads(xnp, x, i))(indices), jax.jit(jax.vmap(lambda i: reads(jnp, j, i)))(indices))


GRAD_CASES = [
    (lambda x: x[7].sum(),),  # static: clamps, and so does the gradient
    (lambda x: x[5, ::2].sum(),),  # strided beside an out-of-bounds integer: jax gathers, the gradient drops it
    (lambda x: x[_I([5, 1]), 9].sum(),),
    (lambda x: x.at[_I([5, 1])].get(mode="clip").sum(),),
    (lambda x: x.at[_I([5, 1]), -9].get(mode="fill", fill_value=0.0).sum(),),
    (lambda x: (x.at[_I([7, 0]), 2].set(1.0) ** 2).sum(),),
]


@pytest.mark.parametrize("case", range(len(GRAD_CASES)))
def test_grad_through_out_of_bounds_indexing_matches_jax(case):
    fn, = GRAD_CASES[case]
    assert_close(numax.grad(fn)(A), jax.jit(jax.grad(fn))(A))


def test_grad_through_traced_scalar_index_matches_jax():
    def f(x, i):
        return (x[i] * x[i, ::-1]).sum()

    assert_close(numax.grad(f)(A, np.int32(9)), jax.jit(jax.grad(f))(A, np.int32(9)))
    assert_close(numax.jit(numax.grad(f))(A, np.int32(-9)), jax.jit(jax.grad(f))(A, np.int32(-9)))


# --- .at[] -----------------------------------------------------------------------------------------------------
AT_INDICES = [
    7, -7, (1, 9), (Ellipsis, -6), (5, slice(None, None, 2)), (slice(None, None, -1), 7), _I([4, -4, 1, 2]),
    (_I([0, 9]), slice(1, 3), _I([-1, -6])), (2, True), (None, 2, _I([5, -1])),
]
GET_MODES = [None, "promise_in_bounds", "clip", "fill"]


@pytest.mark.parametrize("wrap", [True, False])
def test_at_get_modes_match_jax(wrap):
    options = {"wrap_negative_indices": wrap}

    def reads(m, x):
        out = [x.at[index].get(mode=mode, **options) for index in AT_INDICES for mode in GET_MODES]
        return out + [x.at[index].get(mode="fill", fill_value=-2.5, **options) for index in AT_INDICES[:4]]

    _matches_jax(reads, A)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16])
def test_at_get_fill_defaults_per_dtype_match_jax(dtype):
    a = (np.arange(12) % 3).astype(dtype)
    for index in (12, -13, _I([0, 99]), (_I([-20]),)):
        assert_close(xnp.asarray(a).at[index].get(mode="fill"), jnp.asarray(a).at[index].get(mode="fill"))


UPDATE_OPS = ["set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply"]
UPDATE_MODES = [None, "drop", "fill", "clip", "promise_in_bounds"]
# 'promise_in_bounds' with out-of-bounds indices is undefined behaviour. XLA's CPU kernels clamp such reads and
# writes for both libraries alike, so there these tables also pin numax's lowering to jax's; GPU kernels of two
# different programs need not agree, so on other platforms the mode is checked on in-bounds indices.
PINNED_OUT_OF_BOUNDS = numax.default_backend() == "cpu"


def _promised(mode, index, in_bounds):
    return in_bounds if mode == "promise_in_bounds" and not PINNED_OUT_OF_BOUNDS else index


def _update(ref, op, mode, wrap):
    options = {"mode": mode, "wrap_negative_indices": wrap}
    if op == "apply":
        return ref.apply(lambda v: v * 2.0 + 1.0, **options)
    return getattr(ref, op)(np.float32(1.5), **options)


@pytest.mark.parametrize("wrap", [True, False])
def test_at_updates_modes_match_jax(wrap):
    # Every op (a few without wrapping negative indices) and mode over a few out-of-bounds indices: one jit each
    # side, plus every op eagerly.
    a = np.arange(1, 61, dtype=np.float32).reshape(3, 4, 5) / 7
    indices = [(1, 9), -7, (_I([0, 9, 1, 1]), slice(None), _I([-1, 2, -6, -6])), (5, slice(None, None, -2))]
    ops = UPDATE_OPS if wrap else ["set", "multiply", "apply"]

    in_bounds = (_I([0, 2, 1]), slice(None), _I([-1, 2, 3]))

    def updates(x):
        return [_update(x.at[_promised(mode, index, in_bounds)], op, mode, wrap) if _known_on_platform(index, op)
                else x for index in indices for op in ops for mode in UPDATE_MODES]

    expected = jax.jit(updates)(a)
    _all_close(numax.jit(updates)(a), expected, scale=10)
    x = xnp.asarray(a)
    for k, op in enumerate(ops):  # (the modes rotate: each eager scatter compiles on its own)
        mode = UPDATE_MODES[k % len(UPDATE_MODES)]
        position = (2 * len(ops) + k) * len(UPDATE_MODES) + k % len(UPDATE_MODES)
        assert_close(_update(x.at[_promised(mode, indices[2], in_bounds)], op, mode, wrap), expected[position],
                     scale=10)


def _known_on_platform(index, op):
    """False for the one case that differs from jax on the GPU (see the test below); it is left out there."""
    return PINNED_OUT_OF_BOUNDS or not (op == "apply" and isinstance(index, tuple) and
                                        all(type(i) is int for i in index) and index == (1, 9))


@pytest.mark.xfail(not PINNED_OUT_OF_BOUNDS, strict=True,
                   reason="on an H100 (jaxlib 0.11.2) numax's x.at[1, 9].apply(f), an out-of-bounds static index of a "
                          "(3, 4, 5) array, returns shifted values in row 2 where jax leaves x unchanged; the cause is "
                          "not found yet (bench/probes/gpu_scatter_modes_probe.py shows it)")
@pytest.mark.parametrize("mode", [None, "drop", "fill"])
def test_at_apply_out_of_bounds_static_index_changes_nothing(mode):
    a = np.arange(1, 61, dtype=np.float32).reshape(3, 4, 5) / 7
    out = numax.jit(lambda x: x.at[1, 9].apply(lambda v: v * 2.0 + 1.0, mode=mode))(a)
    assert_close(out, jax.jit(lambda x: x.at[1, 9].apply(lambda v: v * 2.0 + 1.0, mode=mode))(a))
    assert_close(out, a)


def test_at_apply_repeats_like_ufunc_at():
    x = xnp.arange(6)
    out = x.at[_I([1, 1, 1, 4, 9])].apply(lambda v: v * 2)
    assert_close(out, jnp.arange(6).at[_I([1, 1, 1, 4, 9])].apply(lambda v: v * 2))
    traced = numax.jit(lambda x, i: x.at[i].apply(xnp.square, mode="clip"))(np.arange(6.0, dtype=np.float32),
                                                                           _I([2, 2, 8], np.int32))
    assert_close(traced, jnp.arange(6.0).at[_I([2, 2, 8])].apply(jnp.square, mode="clip"))


def test_at_options_are_keywords_with_jax_names():
    x = xnp.arange(5.0)
    out = x.at[_I([3, 1])].add(1.0, indices_are_sorted=False, unique_indices=True, mode="drop",
                                 wrap_negative_indices=True)
    assert_close(out, jnp.arange(5.0).at[_I([3, 1])].add(1.0, unique_indices=True, mode="drop"))
    with pytest.raises(TypeError):
        x.at[0].set(1.0, "clip")
    with pytest.raises(ValueError, match="fill_value"):
        x.at[0].get(mode="fill", fill_value=np.ones(2))
    with pytest.raises(ValueError, match="mode"):
        x.at[0].get(mode="bogus")


def test_sorted_and_unique_promises_reach_gathers_and_scatters():
    # As in jax, indices_are_sorted and unique_indices are passed on to the gather or scatter, for XLA to use.
    x, indices = np.arange(10.0, dtype=np.float32), _I([1, 4, 9], np.int32)
    promises = {"indices_are_sorted": True, "unique_indices": True}
    calls = [lambda m, x, i: m.take(x, i, **promises), lambda m, x, i: x.at[i].get(**promises),
             lambda m, x, i: x.at[i].get(mode="fill", **promises), lambda m, x, i: x.at[i].add(1.0, **promises)]
    for call in calls:
        text = str(numax.make_jaxpr(lambda x, i: call(xnp, x, i))(x, indices))
        assert "indices_are_sorted=True" in text and "unique_indices=True" in text, text
        assert_close(numax.jit(lambda x, i: call(xnp, x, i))(x, indices), call(jnp, jnp.asarray(x), indices))


# --- take / take_along_axis / put_along_axis ----------------------------------------------------------------
TAKE_MODES = [None, "fill", "clip", "wrap"]


def test_take_modes_and_fill_values_match_jax():
    b = A[0]
    indices = _I([[9, -1], [-21, 3]])

    def takes(m, b):
        out = [m.take(b, indices, axis=axis, mode=mode) for axis in (None, 0, -1) for mode in TAKE_MODES]
        out += [m.take(b, indices, axis=1, fill_value=fill) for fill in (-1, 2.5)]
        return out + [m.take(b.astype(dtype), indices) for dtype in (np.int8, np.uint16, np.bool_)]

    _matches_jax(takes, b)


def test_take_errors_match_jax():
    b = A[0]
    for call in (lambda m: m.take(b, _I([0]), mode="promise_in_bounds"),
                 lambda m: m.take(b, _I([0]), mode="drop"),
                 lambda m: m.take(np.zeros((2, 0), np.float32), _I([0]), axis=1),
                 lambda m: m.take(b, _I([0]), mode="raise"),
                 lambda m: m.take(b, _I([0.5]))):
        _raises_like_jax(call)
    assert_close(xnp.take(np.zeros((2, 0), np.float32), _I([], np.int32), axis=1),
                 jnp.take(np.zeros((2, 0), np.float32), _I([], np.int32), axis=1))


@pytest.mark.parametrize("mode", [None, "fill", "clip", "drop", "promise_in_bounds"])
def test_take_along_axis_modes_match_jax(mode):
    b = A[0]
    # (In bounds with or without wrapping: the last read below does not wrap negative indices.)
    indices = _promised(mode, _I([[9, -1, 2, -5, 0]]), _I([[3, 1, 2, 0, 0]]))
    flat_indices = _promised(mode, _I([25, -21, 3]), _I([19, 0, 3]))

    def reads(m, b):
        out = [m.take_along_axis(b, indices, axis=0, mode=mode), m.take_along_axis(b, indices, mode=mode),
               m.take_along_axis(b.ravel(), flat_indices, axis=None, mode=mode),
               m.take_along_axis(b, indices, axis=0, mode=mode, wrap_negative_indices=False)]
        return out + [m.take_along_axis(b, indices, axis=0, mode=mode, fill_value=7)]

    _matches_jax(reads, b)


def test_take_along_axis_edges_match_jax():
    empty = np.zeros((2, 0), np.float32)
    assert_close(xnp.take_along_axis(empty, _I([[1], [0]]), axis=1), jnp.take_along_axis(empty, _I([[1], [0]]), axis=1))
    for bad in (lambda m: m.take_along_axis(A[0], _I([[0]]), axis=None),
                lambda m: m.take_along_axis(A[0], _I([0]), axis=0),
                lambda m: m.take_along_axis(A[0], _I([[0.0]]), axis=0),
                lambda m: m.take_along_axis(A[0], _I([[0]]), axis=0, mode="bogus")):
        _raises_like_jax(bad)


def test_put_along_axis_out_of_bounds_matches_jax():
    b = A[0]
    indices = _I([[9], [-1], [2], [-9]])
    for mode in (None, "clip", "drop"):
        assert_close(xnp.put_along_axis(b, indices, -1.0, axis=1, inplace=False, mode=mode),
                     jnp.put_along_axis(b, indices, -1.0, axis=1, inplace=False, mode=mode))
    assert_close(xnp.put_along_axis(b, _I([3, 40]), 0.0, axis=None, inplace=False),
                 jnp.put_along_axis(b, _I([3, 40]), 0.0, axis=None, inplace=False))


# --- empty axes ------------------------------------------------------------------------------------------------
def test_empty_axes_match_jax():
    z = np.zeros((0, 4), np.float32)
    assert_close(xnp.asarray(z)[:, 5], jnp.asarray(z)[:, 5])
    assert_close(xnp.asarray(z)[:, -9], jnp.asarray(z)[:, -9])
    assert_close(xnp.zeros(0).at[_I([0, 3])].set(1.0), jnp.zeros(0).at[_I([0, 3])].set(1.0))
    for bad in (lambda m: m.zeros(0)[0], lambda m: m.zeros((2, 0))[:, 1], lambda m: m.zeros(0).at[0].set(1.0),
                lambda m: m.zeros(0).at[-1].get(mode="fill"),
                lambda m: (jax.jit if m is jnp else numax.jit)(lambda x, i: x[i])(m.zeros(0), np.int32(0))):
        with pytest.raises(IndexError, match="out of bounds for axis"):
            bad(xnp)
        with pytest.raises(IndexError):
            bad(jnp)
