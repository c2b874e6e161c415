"""ppermute, pshuffle and all_to_all: under vmap with an axis name against jax.vmap of the same jax.lax code
(numpy where jax.vmap has no answer), their derivatives against jax and finite differences, their errors
against jax's types, and their StableHLO lowering run as a replicated program on the eight host devices."""

import numpy as np
import pytest
from harness import assert_close, jax
from hypothesis import given
from hypothesis import strategies as st
from numax.core.primitives import Primitive
from numax.lax.collectives_permute import all_to_all_p, ppermute_p
from numax.lowering import xla
from numax.lowering.lower import lower_to_module
from numax.lowering.stablehlo import dense_elements

import numax
from numax import lax
from numax.test_util import check_grads

jlax = jax.lax


def vmapped(vmap, f, **kwargs):
    return vmap(f, axis_name="i", **kwargs)


def check_against_jax(ours, theirs, *args, **vmap_kwargs):
    """numax.vmap(ours), eagerly and under jit, against jax.jit(jax.vmap(theirs)) (one jax program):
    the same leaves, values, dtypes and weak types."""
    expected = jax.jit(vmapped(jax.vmap, theirs, **vmap_kwargs))(*args)
    batched = vmapped(numax.vmap, ours, **vmap_kwargs)
    for result in (batched(*args), numax.jit(batched)(*args)):
        leaves, expected_leaves = jax.tree_util.tree_leaves(result), jax.tree_util.tree_leaves(expected)
        assert jax.tree_util.tree_structure(result) == jax.tree_util.tree_structure(expected)
        for a, b in zip(leaves, expected_leaves):
            assert_close(a, b)
            assert a.weak_type == b.weak_type
    return expected


def permuted_reference(xs, perm):
    """What ppermute gives each example of `xs` (examples along dimension 0): zeros where no pair sends."""
    out = np.zeros_like(xs)
    for source, destination in perm:
        out[destination] = xs[source]
    return out


# --- ppermute and pshuffle ------------------------------------------------------------------------------
DTYPES = [np.float32, np.int32, np.bool_, np.complex64]


@given(st.data())
def test_ppermute_and_pshuffle_match_jax(data):
    size = data.draw(st.integers(1, 5), label="axis size")
    shape = data.draw(st.lists(st.integers(1, 3), max_size=2).map(tuple), label="example shape")
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    in_axes = data.draw(st.integers(0, len(shape)), label="in_axes")
    sources = data.draw(st.permutations(range(size)), label="pshuffle perm")
    perm = list(zip(sources, range(size)))
    rng = np.random.default_rng(len(shape) * 10 + size)
    xs = np.moveaxis((rng.standard_normal((size,) + shape) * 3).astype(dtype), 0, in_axes)
    check_against_jax(lambda v: (lax.ppermute(v, "i", perm), lax.pshuffle(v, "i", sources)),
                      lambda v: (jlax.ppermute(v, "i", perm), jlax.pshuffle(v, "i", sources)), xs, in_axes=in_axes)


@pytest.mark.parametrize("perm", [[(0, 1), (1, 2)], [], [(-1, 0)], [(3, 3), (0, 2)]], ids=str)
def test_ppermute_sends_zeros_where_no_pair_arrives(rng, perm):
    # (jax.vmap asserts full permutations; its pmap fills with zeros, as numax does under vmap too)
    xs = rng.standard_normal((4, 2, 3)).astype(np.float32)
    expected = permuted_reference(xs, [(s % 4, d % 4) for s, d in perm])
    f = vmapped(numax.vmap, lambda v: lax.ppermute(v, "i", perm))
    np.testing.assert_array_equal(f(xs), expected)
    np.testing.assert_array_equal(numax.jit(f)(xs), expected)


def test_ppermute_of_unbatched_values(rng):
    w = rng.standard_normal(3).astype(np.float32)
    xs = np.zeros((4, 1), np.float32)
    full = [(0, 2), (2, 1), (1, 3), (3, 0)]
    check_against_jax(lambda v: v + lax.ppermute(w, "i", full), lambda v: v + jlax.ppermute(w, "i", full), xs)
    # A partial permutation turns an unbatched value into a batched one: zeros where nothing arrives.
    partial = vmapped(numax.vmap, lambda v: lax.ppermute(w, "i", [(0, 1), (1, 3)]))(xs)
    np.testing.assert_array_equal(partial, permuted_reference(np.broadcast_to(w, (4, 3)), [(0, 1), (1, 3)]))


def test_ppermute_of_pytrees_keeps_dtypes_and_weak_types(rng):
    xs = rng.standard_normal((3, 2)).astype(np.float32)
    perm = [(0, 1), (1, 2), (2, 0)]

    def make(L):
        return lambda v: L.ppermute({"a": v, "b": (2.0 * v, v.astype(np.int8) > 0), "c": 3}, "i", perm)

    check_against_jax(make(lax), make(jlax), xs)


def test_permutes_along_an_outer_axis_inside_an_inner_vmap(rng):
    xs = rng.standard_normal((3, 2, 4)).astype(np.float32)
    perm = [(0, 2), (1, 0), (2, 1)]

    def make(vmap, L):
        inner = vmap(lambda v: L.ppermute(v, "i", perm) * L.ppermute(v, "j", [(0, 1), (1, 0)]), axis_name="j")
        return vmap(inner, axis_name="i")

    assert_close(make(numax.vmap, lax)(xs), make(jax.vmap, jlax)(xs))


def test_batched_ppermute_is_one_gather():
    text = str(numax.make_jaxpr(vmapped(numax.vmap, lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)])))(
        np.ones((2, 3), np.float32)))
    assert text.count("gather[") == 1 and "ppermute" not in text


# --- all_to_all -----------------------------------------------------------------------------------------
@given(st.data())
def test_all_to_all_matches_jax(data):
    size = data.draw(st.integers(1, 4), label="axis size")
    rank = data.draw(st.integers(1, 3), label="example rank")
    tiled = data.draw(st.booleans(), label="tiled")
    split_axis = data.draw(st.integers(0, rank - 1), label="split_axis")
    concat_axis = data.draw(st.integers(0, rank - 1), label="concat_axis")
    shape = list(data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank), label="other dims"))
    shape[split_axis] = size * shape[split_axis] if tiled else size
    in_axes = data.draw(st.integers(0, rank), label="in_axes")
    dtype = data.draw(st.sampled_from([np.float32, np.int32]), label="dtype")
    xs = np.arange(size * np.prod(shape)).astype(dtype).reshape([size] + shape)
    check_against_jax(lambda v: lax.all_to_all(v, "i", split_axis, concat_axis, tiled=tiled),
                      lambda v: jlax.all_to_all(v, "i", split_axis, concat_axis, tiled=tiled),
                      np.moveaxis(xs, 0, in_axes), in_axes=in_axes)


def test_all_to_all_of_pytrees_and_unbatched_leaves(rng):
    xs = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)

    def make(L):
        return lambda v, w: L.all_to_all({"v": v, "w": (w, 2 * w)}, "i", 1, 0, tiled=True)

    # numax's w is closed over (unbatched); jax's is batched with equal examples, as jax 0.10.2 mis-shapes the
    # all_to_all of an unbatched value.
    check_against_jax(lambda v, _: make(lax)(v, w), make(jlax), xs, np.broadcast_to(w, (2,) + w.shape))


def test_all_to_all_along_an_outer_axis_inside_an_inner_vmap(rng):
    xs = rng.standard_normal((2, 4, 3, 2)).astype(np.float32)

    def make(vmap, L):
        inner = vmap(lambda v: L.all_to_all(v, "i", 0, 1, tiled=True), axis_name="j", in_axes=1)
        return vmap(inner, axis_name="i")

    assert_close(make(numax.vmap, lax)(xs), make(jax.vmap, jlax)(xs))


# --- derivatives ----------------------------------------------------------------------------------------
WEIGHTS = np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)
DIFFERENTIATED = {
    "ppermute": lambda L: lambda v: (L.ppermute(v * v, "i", [(0, 1), (1, 2), (2, 0)]) * WEIGHTS[0]).sum(),
    "ppermute_partial": lambda L: lambda v: (L.sin(L.ppermute(v, "i", [(0, 2), (2, 1)])) * v).sum(),
    "pshuffle": lambda L: lambda v: (L.pshuffle(v, "i", [2, 0, 1]) ** 3).sum(),
    "all_to_all": lambda L: lambda v: (L.all_to_all(v[:, None] * v, "i", 0, 1) * WEIGHTS).sum(),
    "all_to_all_tiled": lambda L: lambda v: (L.all_to_all(L.cos(v), "i", 0, 0, tiled=True) ** 2).sum(),
}
JAX_FREE = {"ppermute_partial"}  # jax.vmap takes full permutations only


@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_gradients_match_jax_and_finite_differences(rng, x64, name):
    f = DIFFERENTIATED[name]
    xs = rng.standard_normal((3, 3))
    check_grads(vmapped(numax.vmap, f(lax)), (xs,), order=2, modes=("fwd", "rev"))
    if name in JAX_FREE:
        return
    # Per-example gradients under vmap seed every example's output, and the transposed collectives carry each
    # seed back to the examples it came from: they are the gradient of the sum over examples. (jax 0.10.2's own
    # vmap of grad fails on all_to_all of rank-2 examples, so the oracle is the gradient of that sum.)
    total = lambda vmap, L: lambda v: vmapped(vmap, f(L))(v).sum()  # noqa: E731
    xs = xs.astype(np.float32)
    expected = jax.jit(jax.grad(total(jax.vmap, jlax)))(xs)
    assert_close(vmapped(numax.vmap, numax.grad(f(lax)))(xs), expected, scale=10)
    assert_close(numax.grad(total(numax.vmap, lax))(xs), expected, scale=10)


def test_jvp_inside_vmap_matches_jax(rng):
    xs, ts = rng.standard_normal((2, 3, 3)).astype(np.float32)

    def make(L, jvp):
        def f(v):
            return L.all_to_all(L.ppermute(v * v, "i", [(0, 1), (1, 2), (2, 0)]), "i", 0, 0, tiled=False)

        return lambda a, b: jvp(f, (a,), (b,))

    check_against_jax(make(lax, numax.jvp), make(jlax, jax.jvp), xs, ts)


def test_transposes_invert_the_exchange(rng):
    """The VJP of ppermute is ppermute by the inverse permutation, that of all_to_all swaps its dimensions."""
    xs, cts = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    perm = [(0, 1), (1, 2)]
    inverse = [(d, s) for s, d in perm]

    def vjp_of(f, cotangents):
        return vmapped(numax.vmap, lambda v, c: numax.vjp(f, v)[1](c)[0])(xs, cotangents)

    np.testing.assert_array_equal(vjp_of(lambda v: lax.ppermute(v, "i", perm), cts), permuted_reference(cts, inverse))
    cts = cts.transpose(0, 2, 1)  # all_to_all(v, "i", 0, 1) gives each example a (2, 3) array
    swapped = vmapped(numax.vmap, lambda c: lax.all_to_all(c, "i", 1, 0))(cts)
    np.testing.assert_array_equal(vjp_of(lambda v: lax.all_to_all(v, "i", 0, 1), cts), swapped)


# --- errors ---------------------------------------------------------------------------------------------
def jax_error(f, *args):
    try:
        f(*args)
    except Exception as error:  # noqa: BLE001  (whatever jax raises is the oracle)
        return type(error)
    raise AssertionError("jax raised nothing")


X4 = np.zeros((4, 4, 6), np.float32)
PMAPPED_ERRORS = {  # jax.vmap asserts on every partial permutation; jax.pmap reports these (while lowering)
    "duplicate_source": lambda L: lambda v: L.ppermute(v, "i", [(0, 1), (0, 2)]),
    "duplicate_destination": lambda L: lambda v: L.ppermute(v, "i", [(0, 1), (1, 1)]),
    "out_of_range": lambda L: lambda v: L.ppermute(v, "i", [(0, 5)]),
}
VMAPPED_ERRORS = {
    "pshuffle_not_a_permutation": lambda L: lambda v: L.pshuffle(v, "i", [0, 0, 1, 2]),
    "tiled_not_divisible": lambda L: lambda v: L.all_to_all(v, "i", 1, 0, tiled=True),
    "untiled_size_mismatch": lambda L: lambda v: L.all_to_all(v, "i", 1, 0),
    "split_axis_out_of_range": lambda L: lambda v: L.all_to_all(v, "i", 2, 0),
    "untiled_concat_axis_out_of_range": lambda L: lambda v: L.all_to_all(v, "i", 0, 2),
    "tiled_concat_axis_out_of_range": lambda L: lambda v: L.all_to_all(v, "i", 0, 5, tiled=True),
    "all_to_all_of_a_scalar": lambda L: lambda v: L.all_to_all(v.sum(), "i", 0, 0),
    "unbound_all_to_all": lambda L: lambda v: L.all_to_all(v, "j", 0, 0),
    "groups_under_vmap": lambda L: lambda v: L.all_to_all(v[:2], "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]),
}


@pytest.mark.parametrize("name", sorted(PMAPPED_ERRORS))
def test_ppermute_errors_match_jax(name):
    make = PMAPPED_ERRORS[name]
    expected = jax_error(lambda: jax.pmap(make(jlax), axis_name="i").lower(X4))
    with pytest.raises(expected):
        vmapped(numax.vmap, make(lax))(X4)


@pytest.mark.parametrize("name", sorted(VMAPPED_ERRORS))
def test_errors_match_jax(name):
    make = VMAPPED_ERRORS[name]
    expected = jax_error(vmapped(jax.vmap, make(jlax)), X4)
    with pytest.raises(expected):
        vmapped(numax.vmap, make(lax))(X4)


@pytest.mark.parametrize("collective", [lambda x: lax.ppermute(x, "j", [(0, 1)]), lambda x: lax.pshuffle(x, "j", [0]),
                                        lambda x: lax.all_to_all(x, "j", 0, 0)])
def test_unbound_axis_name(collective):
    # (jax reports an unbound name in ppermute as a missing evaluation rule; numax as psum does)
    with pytest.raises(NameError, match=r"unbound axis name: j\. The following axis names .*\['i'\]"):
        vmapped(numax.vmap, collective)(X4)


def test_several_vmapped_axes_are_not_supported():
    f = numax.vmap(numax.vmap(lambda v: lax.ppermute(v, ("i", "j"), [(0, 1)]), axis_name="j"), axis_name="i")
    with pytest.raises(NotImplementedError, match="several vmapped axes"):
        f(np.zeros((2, 2), np.float32))


# --- lowering: a replicated program on the eight host devices --------------------------------------------
AXIS_ENV = (("i", 2), ("j", 4))  # replica id = 4 * (position along i) + position along j


def staged(primitive, shape=None, **params):
    """The primitive bound as a staged equation (as a pmap's program holds it), bypassing the vmap lookup, on
    the operand reshaped to `shape`."""
    return lambda x: Primitive.bind(primitive, x if shape is None else x.reshape(shape), **params)


def run_replicated(functions, xs):
    """Lowers `functions` of one per-replica operand as one program replicated over AXIS_ENV, runs it with
    replica r holding xs[r]; returns each function's outputs stacked over the replicas."""
    closed = numax.make_jaxpr(lambda x: [f(x) for f in functions])(xs[0])
    replicas = len(xs)
    text, _ = lower_to_module(closed, num_replicas=replicas, axis_env=AXIS_ENV)
    xla.parse_module(text)  # verifies the StableHLO (compile_module does too)
    backend = xla.get_backend("cpu")
    devices = backend.devices[:replicas]
    executable = xla.compile_module(text, backend, devices, num_replicas=replicas)
    shards = [xla.device_put(x, backend, d) for x, d in zip(xs, devices)]
    sharding = xla._jax.GSPMDSharding(devices, xla.xc.HloSharding.replicate())
    operand = xla._jax.ArrayImpl(xla._HostAval(xs[0].shape, xs[0].dtype), sharding, shards, True,
                                 _skip_checks=True)
    outputs = executable.execute_sharded([operand]).disassemble_into_single_device_arrays()
    return [np.stack([xla.to_numpy(buffer) for buffer in per_replica]) for per_replica in outputs]


def nested_vmap(f, xs):
    """f under vmaps over j (inner) and i (outer) of xs grouped by replica id."""
    sizes = [size for _, size in AXIS_ENV]
    out = numax.vmap(numax.vmap(f, axis_name="j"), axis_name="i")(xs.reshape(*sizes, *xs.shape[1:]))
    return np.asarray(out).reshape(len(xs), *out.shape[2:])


def test_lowered_collectives_run_on_replicas_like_vmap(rng):
    xs = rng.standard_normal((8, 4, 6)).astype(np.float32)
    perm_j, perm_i, perm_ij = ((0, 1), (1, 2), (2, 0)), ((1, 0),), tuple((k, (3 * k + 1) % 8) for k in range(8))
    cases = [  # (staged equation, what vmap computes for it)
        (staged(ppermute_p, axes=("j",), perm=perm_j),
         lambda v: nested_vmap(lambda e: lax.ppermute(e, "j", perm_j), v)),
        (staged(ppermute_p, axes=("i",), perm=perm_i),
         lambda v: nested_vmap(lambda e: lax.ppermute(e, "i", perm_i), v)),
        # Over both names the position is 4 i + j: a ppermute over one flat axis of the eight replicas.
        (staged(ppermute_p, axes=("i", "j"), perm=perm_ij),
         vmapped(numax.vmap, lambda e: lax.ppermute(e, "i", perm_ij))),
        (staged(all_to_all_p, axes=("j",), split_axis=0, concat_axis=1, axis_size=4, axis_index_groups=None),
         lambda v: nested_vmap(lambda e: lax.all_to_all(e, "j", 0, 1, tiled=True), v)),
        (staged(all_to_all_p, axes=("i",), split_axis=1, concat_axis=1, axis_size=2, axis_index_groups=None),
         lambda v: nested_vmap(lambda e: lax.all_to_all(e, "i", 1, 1, tiled=True), v)),
        (staged(all_to_all_p, (8, 3), axes=("i", "j"), split_axis=0, concat_axis=0, axis_size=8,
                axis_index_groups=None),
         vmapped(numax.vmap, lambda e: lax.all_to_all(e.reshape(8, 3), "i", 0, 0, tiled=True))),
    ]
    outputs = run_replicated([lower for lower, _ in cases], xs)
    for (_, vmap_of_it), output in zip(cases, outputs):
        np.testing.assert_array_equal(output, vmap_of_it(xs))


def test_lowered_all_to_all_within_axis_index_groups(rng):
    # Groups {0, 2} and {1, 3} of axis j: within each, the positions exchange their halves.
    xs = rng.standard_normal((8, 2, 3)).astype(np.float32)
    groups = ((0, 2), (1, 3))
    (out,) = run_replicated([staged(all_to_all_p, axes=("j",), split_axis=0, concat_axis=1, axis_size=2,
                                    axis_index_groups=groups)], xs)
    grouped = xs.reshape(2, 4, 2, 3)
    for a, b in groups:
        for receiver, position in enumerate((a, b)):
            expected = np.concatenate([grouped[:, a, receiver], grouped[:, b, receiver]], axis=-1)
            np.testing.assert_array_equal(out.reshape(2, 4, 1, 6)[:, position, 0], expected)


def test_lowered_ppermute_text():
    closed = numax.make_jaxpr(staged(ppermute_p, axes=("j",), perm=((0, 3),)))(np.zeros(2, np.float32))
    text, _ = lower_to_module(closed, num_replicas=8, axis_env=AXIS_ENV)
    # Position 0 sends to 3 within each group of j: replicas 0 -> 3 and 4 -> 7. No channel handle: with one,
    # XLA would read these as partition ids (and abort the process at run time).
    pairs = np.array([[0, 3], [4, 7]], np.int64)
    assert f"source_target_pairs = {dense_elements(pairs)}" in text and "channel_handle" not in text
