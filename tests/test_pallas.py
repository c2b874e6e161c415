"""numax.experimental.pallas against jax.experimental.pallas in interpret mode (the CPU's), the same kernels written
once over either library: elementwise, grids and BlockSpecs (squeezed dimensions, blocks past the end), a blocked
matmul accumulating under pl.when, masked loads and stores on ref views, loops over column chunks, atomics, dot,
several results, aliasing; under jit and vmap; and the errors a kernel's author meets."""

import numpy as np
import pytest
from harness import jax, jnp

import numax
import numax.numpy as xnp
from numax.experimental import pallas as npl
from numax.experimental.pallas import triton as nplgpu

jpl = pytest.importorskip("jax.experimental.pallas")
jplgpu = pytest.importorskip("jax.experimental.pallas.triton")

SIDES = {"jax": (jax, jnp, jpl, jplgpu), "numax": (numax, xnp, npl, nplgpu)}
RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 32)).astype(np.float32)
Y = RNG.normal(size=(32, 48)).astype(np.float32)
V = np.arange(10, dtype=np.float32)


def add(lib, np_, pl, plgpu):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct(V.shape, V.dtype), interpret=True)(V, V * 2)


def grid_past_the_end(lib, np_, pl, plgpu):
    # 10 elements in blocks of 4: the last block reads uninitialized values and its tail is dropped
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * pl.program_id(0) + pl.num_programs(0)

    spec = pl.BlockSpec((4,), lambda i: (i,))
    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((10,), np.float32), grid=3, in_specs=[spec],
                          out_specs=spec, interpret=True)(V)


def matmul(lib, np_, pl, plgpu):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = np_.zeros_like(o_ref)

        o_ref[...] += x_ref[...] @ y_ref[...]

    return pl.pallas_call(
        kernel, out_shape=lib.ShapeDtypeStruct((64, 48), np.float32), grid=(4, 3, 2),
        in_specs=[pl.BlockSpec((16, 16), lambda i, j, k: (i, k)), pl.BlockSpec((16, 16), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((16, 16), lambda i, j, k: (i, j)), interpret=True)(X, Y)


def masked_views(lib, np_, pl, plgpu):
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        offsets = i * 4 + np_.arange(4)
        mask = offsets < x_ref.shape[0]
        value = plgpu.load(x_ref.at[pl.ds(i * 4, 4)], mask=mask, other=0.0)
        plgpu.store(o_ref.at[pl.ds(i * 4, 4)], value * 2.0 + 1.0, mask=mask)

    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((10,), np.float32), grid=(3,),
                          interpret=True)(V)


def row_normalize_in_chunks(lib, np_, pl, plgpu):
    # a layer-norm-like kernel: loops over column chunks, reading and writing refs inside the loop bodies
    def kernel(x_ref, w_ref, o_ref):
        def total(j, acc):
            return acc + x_ref[:, pl.ds(j * 8, 8)].sum(axis=1)

        mean = lib.lax.fori_loop(0, 4, total, np_.zeros((x_ref.shape[0],), np.float32)) / 32.0

        def write(j, carry):
            columns = pl.ds(j * 8, 8)
            o_ref[:, columns] = (x_ref[:, columns] - mean[:, None]) * w_ref[columns]
            return carry

        lib.lax.fori_loop(0, 4, write, 0)

    w = np.linspace(0.5, 1.5, 32, dtype=np.float32)
    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct(X.shape, X.dtype), grid=(8,),
                          in_specs=[pl.BlockSpec((8, 32), lambda i: (i, 0)), pl.BlockSpec((32,), lambda i: (0,))],
                          out_specs=pl.BlockSpec((8, 32), lambda i: (i, 0)), interpret=True)(X, w)


def squeezed_rows_two_results(lib, np_, pl, plgpu):
    # a squeezed leading dimension (None): each program sees one row; two results, one per row and one per block
    def kernel(x_ref, row_ref, max_ref):
        row_ref[...] = x_ref[...] * 2.0
        max_ref[...] = np_.max(x_ref[...], keepdims=True)

    return pl.pallas_call(
        kernel, out_shape=(lib.ShapeDtypeStruct(X.shape, X.dtype), lib.ShapeDtypeStruct((64, 1), X.dtype)),
        grid=(64,), in_specs=[pl.BlockSpec((None, 32), lambda i: (i, 0))],
        out_specs=(pl.BlockSpec((None, 32), lambda i: (i, 0)), pl.BlockSpec((None, 1), lambda i: (i, 0))),
        interpret=True)(X)


def atomics_dot_and_alias(lib, np_, pl, plgpu):
    # each program adds its block's column sums into one accumulator, which aliases the second input
    def kernel(x_ref, acc_in_ref, y_ref, acc_ref):
        y_ref[...] = plgpu.dot(x_ref[...], x_ref[...], trans_b=True)
        plgpu.atomic_add(acc_ref, (slice(None),), x_ref[...].sum(axis=0))

    return pl.pallas_call(
        kernel, out_shape=(lib.ShapeDtypeStruct((64, 16), np.float32), lib.ShapeDtypeStruct((32,), np.float32)),
        grid=(4,), in_specs=[pl.BlockSpec((16, 32), lambda i: (i, 0)), pl.BlockSpec((32,), lambda i: (0,))],
        out_specs=(pl.BlockSpec((16, 16), lambda i: (i, 0)), pl.BlockSpec((32,), lambda i: (0,))),
        input_output_aliases={1: 1}, interpret=True)(X, np.ones(32, np.float32))


def element_blocks_with_padding(lib, np_, pl, plgpu):
    # pl.Element: the index map gives element offsets into the array padded by (low, high)
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(0) * 10.0 + pl.program_id(1)

    x = np.arange(49, dtype=np.float32).reshape(7, 7)
    spec = pl.BlockSpec((pl.Element(2, (1, 0)), pl.Element(3, (2, 0))), lambda i, j: (2 * i, 3 * j))
    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((7, 7), np.float32), grid=(4, 3), in_specs=[spec],
                          out_specs=spec, interpret=True)(x)


def flash_attention_forward(lib, np_, pl, plgpu, causal=True, block=16):
    # online softmax over key blocks in a fori_loop whose trip count depends on the program id (causal)
    heads, seq, dim = 3, 64, 32
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(heads, seq, dim)).astype(np.float32) for _ in range(3))

    def kernel(q_ref, k_ref, v_ref, o_ref):
        start = pl.program_id(1)
        query = q_ref[...] / np.sqrt(dim).astype(np.float32)
        rows = start * block + np_.arange(block)[:, None]

        def body(j, carry):
            top, total, acc = carry
            keys, values = k_ref[pl.ds(j * block, block), :], v_ref[pl.ds(j * block, block), :]
            scores = query @ keys.T
            if causal:
                scores = np_.where(rows >= j * block + np_.arange(block)[None, :], scores, -np.inf)
            new_top = np_.maximum(top, scores.max(axis=1))
            weights = np_.exp(scores - new_top[:, None])
            rescale = np_.exp(top - new_top)
            return new_top, total * rescale + weights.sum(axis=1), acc * rescale[:, None] + weights @ values

        stop = start + 1 if causal else seq // block
        init = (np_.full((block,), -np.inf, np.float32), np_.zeros((block,), np.float32),
                np_.zeros((block, dim), np.float32))
        _, total, acc = lib.lax.fori_loop(0, stop, body, init)
        o_ref[...] = acc / total[:, None]

    q_spec = pl.BlockSpec((None, block, dim), lambda h, i: (h, i, 0))
    kv_spec = pl.BlockSpec((None, seq, dim), lambda h, i: (h, 0, 0))
    return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct(q.shape, q.dtype), grid=(heads, seq // block),
                          in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec, interpret=True)(q, k, v)


@pytest.mark.parametrize("causal", [True, False])
def test_flash_attention_forward_matches_numpys_attention(causal):
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(3, 64, 32)).astype(np.float32) for _ in range(3))
    scores = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(32)
    if causal:
        scores = np.where(np.tril(np.ones((64, 64), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    expected = np.einsum("hqk,hkd->hqd", weights / weights.sum(-1, keepdims=True), v)
    out = flash_attention_forward(*SIDES["numax"], causal=causal)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-4, atol=1e-5)


def pytree_operands(lib, np_, pl, plgpu):
    # refs come in the operands' structure (a dict here), outputs as the out_shape tuple lists them
    def kernel(inputs, scale_ref, total_ref, difference_ref):
        total_ref[...] = (inputs["a"][...] + inputs["b"][...]) * scale_ref[...]
        difference_ref[...] = inputs["a"][...] - inputs["b"][...]

    out = lib.ShapeDtypeStruct(V.shape, V.dtype)
    return pl.pallas_call(kernel, out_shape=(out, out), interpret=True)({"a": V, "b": V[::-1].copy()}, V * 0 + 3)


CASES = [pytree_operands, flash_attention_forward, element_blocks_with_padding, add, grid_past_the_end, matmul,
         masked_views, row_normalize_in_chunks, squeezed_rows_two_results, atomics_dot_and_alias]


def _assert_same(ours, theirs):
    ours, theirs = numax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5, equal_nan=True)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_kernels_give_jax_interpret_modes_results(case):
    expected = case(*SIDES["jax"])
    _assert_same(case(*SIDES["numax"]), expected)
    _assert_same(numax.jit(lambda: case(*SIDES["numax"]))(), expected)


def test_a_pallas_call_under_vmap_and_jit():
    def scaled(lib, pl):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * (pl.program_id(0) + 1.0)

        spec = pl.BlockSpec((4,), lambda i: (i,))
        return pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((8,), np.float32), grid=(2,), in_specs=[spec],
                              out_specs=spec, interpret=True)

    batch = RNG.normal(size=(3, 8)).astype(np.float32)
    expected = jax.vmap(scaled(jax, jpl))(batch)
    _assert_same(numax.vmap(scaled(numax, npl))(batch), expected)
    _assert_same(numax.jit(numax.vmap(scaled(numax, npl)))(batch), expected)


def test_errors_name_the_kernel_and_the_problem():
    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    out, x = numax.ShapeDtypeStruct((8,), np.float32), np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="copy: input 0: its index_map returned 2 indices for an array of 1"):
        npl.pallas_call(copy, out_shape=out, grid=(2,), in_specs=[npl.BlockSpec((4,), lambda i: (i, 0))],
                        out_specs=npl.BlockSpec((4,), lambda i: (i,)), interpret=True)(x)
    with pytest.raises(ValueError, match="block shape of 2 dimensions"):
        npl.pallas_call(copy, out_shape=out, in_specs=[npl.BlockSpec((4, 1), lambda: (0, 0))], interpret=True)(x)
    with pytest.raises(ValueError, match="Only interpret mode is supported on CPU backend"):  # as jax on a CPU
        npl.pallas_call(copy, out_shape=out)(x)
    with pytest.raises(ValueError, match="Only interpret mode is supported on CPU backend"):
        jpl.pallas_call(copy, out_shape=jax.ShapeDtypeStruct((8,), np.float32))(x)
    with pytest.raises(ValueError, match="only meaningful inside a Pallas kernel"):
        npl.program_id(0)
    with pytest.raises(ValueError, match="static, non-negative size"):
        npl.ds(0, -1)
    assert [npl.next_power_of_2(n) for n in (0, 1, 5, 8, 13)] == [jpl.next_power_of_2(n) for n in (0, 1, 5, 8, 13)]
