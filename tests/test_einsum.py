"""numax.numpy.einsum and einsum_path against numpy.einsum and jnp.einsum."""

import numpy as np
import pytest
from harness import assert_close, jax, jnp, rand
from hypothesis import given
from hypothesis import strategies as st
from numax.core import dtypes

import numax
import numax.numpy as xnp

# XLA's GPU default for float32 contractions is TF32 (as in jax), about 3 decimal digits; lax.dot_general does
# not pass `precision` on to XLA yet, so GPU runs compare with a tolerance that fits TF32.
SCALE = 10 if numax.default_backend() == "cpu" else 1000

# (subscripts, operand shapes)
CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),  # matmul
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),  # batch matmul
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),  # batch matmul, permuted output
    ("i,j->ij", [(3,), (4,)]),  # outer
    ("i,j", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),  # inner
    ("i,i->i", [(5,), (5,)]),  # elementwise
    ("ii", [(4, 4)]),  # trace
    ("ii->i", [(4, 4)]),  # diagonal
    ("iii->i", [(3, 3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ijji->", [(2, 3, 3, 2)]),
    ("ij->ji", [(2, 3)]),  # transpose
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),  # implicit output is sorted: a transpose
    ("ij->", [(2, 3)]),  # sum
    ("ij->j", [(2, 3)]),
    ("...ij->...ji", [(2, 3, 4, 5)]),  # ellipsis
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),  # ellipsis broadcasting
    ("i...->...", [(3, 4, 5)]),
    ("...i,i", [(2, 3, 4), (4,)]),
    ("...,...", [(2, 3), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # 3-operand chain
    ("ij,jk,kl", [(8, 2), (2, 9), (9, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 5)]),
    ("ij,ij,ij->ij", [(2, 3), (2, 3), (2, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # bilinear
    ("ii,jj->ij", [(3, 3), (2, 2)]),  # repeated indices in two operands
    ("iji,jk->k", [(3, 2, 3), (2, 4)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    (",->", [(), ()]),  # scalars
    (",i->i", [(), (3,)]),
    ("i,->i", [(3,), ()]),
    ("->", [()]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),  # size-1 dimensions broadcast (as in jnp)
    ("ij,kj->ik", [(0, 3), (2, 3)]),  # empty
    ("ij,jk->ik", [(2, 0), (0, 3)]),  # empty contraction: zeros
    ("ab,cd->", [(2, 3), (4, 5)]),
    ("Ab,bC->CA", [(2, 3), (3, 4)]),  # upper-case labels
]


def _operands(rng, shapes, dtype=np.float32):
    return [rand(rng, s, dtype) for s in shapes]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("subscripts, shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_numpy(subscripts, shapes, mode, rng):
    ops = _operands(rng, shapes)
    expected = np.einsum(subscripts, *ops)
    fun = (lambda *a: xnp.einsum(subscripts, *a)) if mode == "eager" else numax.jit(
        lambda *a: xnp.einsum(subscripts, *a))
    assert_close(fun(*ops), expected.astype(np.float32), scale=SCALE)


@pytest.mark.parametrize("optimize", [True, False, "optimal", "greedy", "auto"])
@pytest.mark.parametrize("subscripts, shapes", [c for c in CASES if c[0].count(",") >= 2],
                         ids=[c[0] for c in CASES if c[0].count(",") >= 2])
def test_every_contraction_order_gives_the_same_result(subscripts, shapes, optimize, rng):
    ops = _operands(rng, shapes)
    assert_close(xnp.einsum(subscripts, *ops, optimize=optimize), np.einsum(subscripts, *ops).astype(np.float32),
                 scale=SCALE)


@pytest.mark.parametrize("dtypes_in", [
    (np.int8, np.int8), (np.int8, np.uint8), (np.int32, np.float32), (np.float16, np.float32),
    (dtypes.bfloat16, dtypes.bfloat16), (np.bool_, np.bool_), (np.complex64, np.float32), (np.uint8, np.uint8),
])
def test_dtype_promotion_matches_jnp(dtypes_in, rng):
    a = rand(rng, (2, 3), dtypes_in[0], low=-2, high=2)
    b = rand(rng, (3, 4), dtypes_in[1], low=-2, high=2)
    for subscripts in ("ij,jk->ik", "ij,jk->ijk", "ij,jk->"):
        expected = jnp.einsum(subscripts, a, b)
        got = xnp.einsum(subscripts, a, b)
        assert got.dtype == expected.dtype, (subscripts, got.dtype, expected.dtype)
        assert_close(got, expected, scale=SCALE)


def test_single_operand_bool_and_int_sums_match_jnp(rng):
    for dtype in (np.bool_, np.int8, np.uint32):
        x = rand(rng, (3, 3), dtype)
        for subscripts in ("ii->", "ij->j", "ii->i"):
            expected = jnp.einsum(subscripts, x)
            assert_close(xnp.einsum(subscripts, x), expected)


def test_weak_types_and_python_scalars():
    out = xnp.einsum("i,", xnp.arange(3), 2.0)
    expected = jnp.einsum("i,", jnp.arange(3), 2.0)
    assert out.dtype == expected.dtype and out.weak_type == expected.weak_type
    assert_close(out, expected)
    both = xnp.einsum(",", 2.0, 3.0)
    assert both.dtype == np.float32 and both.weak_type and float(both) == 6.0


def test_preferred_element_type_and_precision(rng):
    a, b, c = (rand(rng, s, np.int8) for s in [(2, 3), (3, 4), (4, 2)])
    out = xnp.einsum("ij,jk,kl->il", a, b, c, preferred_element_type=np.float32)
    # jax's own compile of this einsum crashes XLA on the GPU (int8 dot into float32), so its type comes
    # from eval_shape and its value from numpy (exact: small integers in float32).
    expected_type = jax.eval_shape(lambda *xs: jnp.einsum("ij,jk,kl->il", *xs, preferred_element_type=jnp.float32),
                                   a, b, c)
    assert out.dtype == expected_type.dtype == np.float32
    assert_close(out, np.einsum("ij,jk,kl->il", *(x.astype(np.float32) for x in (a, b, c))))
    low = [rand(rng, s, dtypes.bfloat16) for s in [(2, 3), (3, 4)]]
    out = xnp.einsum("ij,jk->ik", *low, preferred_element_type=np.float32, precision=numax.lax.Precision.HIGHEST)
    assert out.dtype == np.float32
    assert_close(out, np.einsum("ij,jk->ik", *(x.astype(np.float32) for x in low)), scale=SCALE)
    out = xnp.einsum("ii->", a[:, :2][:2], preferred_element_type=np.int32)
    assert out.dtype == np.int32 and int(out) == int(np.trace(a[:2, :2].astype(np.int32)))


def test_interleaved_form(rng):
    a, b = rand(rng, (2, 3), np.float32), rand(rng, (3, 4), np.float32)
    assert_close(xnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    assert_close(xnp.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    c = rand(rng, (5, 2, 3), np.float32)
    assert_close(xnp.einsum(c, [Ellipsis, 0, 1], [1, Ellipsis]), np.einsum(c, [Ellipsis, 0, 1], [1, Ellipsis]))


def test_rejects_lists_like_jnp_and_accepts_tracers(rng):
    with pytest.raises(TypeError, match="einsum requires ndarray or scalar arguments, got list at position 0"):
        xnp.einsum("i,i", [1.0, 2.0], [3.0, 4.0])
    f = numax.jit(lambda x: xnp.einsum("ij,ij->i", x, x))
    x = rand(rng, (3, 4), np.float32)
    assert_close(f(x), np.einsum("ij,ij->i", x, x))


@given(st.data())
def test_random_contractions(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    letters = "abcde"
    sizes = {c: data.draw(st.integers(1, 3)) for c in letters}
    count = data.draw(st.integers(1, 4))
    terms = [data.draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3)) for _ in range(count)]
    used = sorted(set("".join("".join(t) for t in terms)))
    output = data.draw(st.lists(st.sampled_from(used), unique=True, max_size=len(used))) if used else []
    subscripts = ",".join("".join(t) for t in terms) + "->" + "".join(output)
    ops = [rand(rng, tuple(sizes[c] for c in t), np.float32, -1, 1) for t in terms]
    optimize = data.draw(st.sampled_from([True, False, "greedy"]))
    assert_close(xnp.einsum(subscripts, *ops, optimize=optimize), np.einsum(subscripts, *ops).astype(np.float32),
                 scale=SCALE)


def test_einsum_path():
    shapes = [(2, 3), (3, 40), (40, 5)]
    ops = [np.ones(s, np.float32) for s in shapes]
    path, info = xnp.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")
    assert path == [(1, 2), (0, 1)]  # contracting k first keeps the large dimension out of the intermediate
    text = str(info)
    assert "Complete contraction:  ij,jk,kl->il" in text and "Optimized FLOP count" in text
    assert "jk,kl->jl" in text
    assert repr(info) == text
    greedy_path, _ = xnp.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")
    assert greedy_path == [(1, 2), (0, 1)]
    # Shapes are enough, and einsum takes the path back.
    structs = [numax.ShapeDtypeStruct(s, np.float32) for s in shapes]
    assert xnp.einsum_path("ij,jk,kl->il", *structs, optimize="optimal")[0] == path
    assert_close(xnp.einsum("ij,jk,kl->il", *ops, optimize=path), np.einsum("ij,jk,kl->il", *ops))
    assert_close(xnp.einsum("ij,jk,kl->il", *ops, optimize=["einsum_path", (0, 1), (0, 1)]),
                 np.einsum("ij,jk,kl->il", *ops))
    assert xnp.einsum_path("ii", np.ones((2, 2)))[0] == [(0,)]


def test_optimal_order_beats_left_to_right(rng):
    # Left to right builds a 30x30 intermediate; the optimal order a 1x1 one.
    path, info = xnp.einsum_path("i,j,j->i", np.ones(30), np.ones(30), np.ones(30), optimize="optimal")
    assert path == [(1, 2), (0, 1)]
    _, naive = xnp.einsum_path("i,j,j->i", np.ones(30), np.ones(30), np.ones(30), optimize=False)
    assert info.flops < naive.flops


@pytest.mark.parametrize("args, error, match", [
    (("ij,jk", np.ones((2, 3))), ValueError, r"name 2 operand\(s\), but 1 were given"),
    (("ij", np.ones((2, 3, 4))), ValueError, r"operand 0 has shape \(2, 3, 4\) \(rank 3\), but its subscripts 'ij'"),
    (("ij,jk", np.ones((2, 3)), np.ones((4, 5))), ValueError, r"label 'j' has size 3 .* size 4 in operand 1"),
    (("ij->ik", np.ones((2, 3))), ValueError, r"output subscript 'k' does not appear"),
    (("ij->ii", np.ones((2, 3))), ValueError, r"output subscript 'i' appears more than once"),
    (("i1", np.ones((2, 3))), ValueError, r"invalid subscript '1'"),
    (("i.j", np.ones((2, 3))), ValueError, r"contain a '.' that is not part of one '...'"),
    (("i->i->i", np.ones(2)), ValueError, r"more than one '->'"),
    (("ii", np.ones((2, 3))), ValueError, r"label 'i' has size 2 .* size 3"),
    (("i", "abc"), TypeError, r"einsum requires ndarray or scalar arguments"),
    (("",), ValueError, r"at least one operand"),
])
def test_einsum_errors(args, error, match):
    with pytest.raises(error, match=match):
        xnp.einsum(*args)


def test_einsum_option_errors():
    with pytest.raises(NotImplementedError, match="'out' argument"):
        xnp.einsum("i", np.ones(2), out=np.ones(2))
    with pytest.raises(ValueError, match="optimize must be"):
        xnp.einsum("i,i", np.ones(2), np.ones(2), optimize="fastest")
    with pytest.raises(ValueError, match="leaves 2 operands instead of 1"):
        xnp.einsum("i,i,i", np.ones(2), np.ones(2), np.ones(2), optimize=[(0, 1)])
    with pytest.raises(ValueError, match="invalid contraction path step"):
        xnp.einsum("i,i", np.ones(2), np.ones(2), optimize=[(0, 5)])


def test_explicit_output_without_ellipsis_sums_it_like_jnp(rng):
    x = rand(rng, (2, 3, 4), np.float32)
    assert_close(xnp.einsum("...i->i", x), jnp.einsum("...i->i", x), scale=SCALE)
    assert_close(xnp.einsum("i...->", x), jnp.einsum("i...->", x), scale=SCALE)
