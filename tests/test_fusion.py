"""Automatic elementwise fusion (`jit(fusion="triton")`), run here through Triton's interpreter on the CPU: every
fusible primitive in chains against the same function under plain jit (XLA), 16-bit chains computed in float32,
scalars and literals, several outputs, values used inside and outside a region, grad, nested jit, random
elementwise programs (hypothesis), the generated kernels, the option and its errors, and programs left alone."""

import hashlib
import math
import os
import sys

import ml_dtypes
import numax.lax as lax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numax.core.config import Config
from numax.transforms.fusion import fuse_elementwise, fuse_with_kernels

import numax
import numax.numpy as mnp

# what the fuser forms, on every platform: no tuner leaves regions to XLA (it has tests of its own)
pytestmark = pytest.mark.usefixtures("untuned_fusion")

F32, F16, BF16, I32, U8 = np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8
SIZE = 37  # not a multiple of anything: the kernel's mask matters

_grid = np.linspace(-4, 4, SIZE - 7)
GENERAL = np.concatenate([_grid, [0.0, -0.0, 1e-7, -1e-7, 1e-3, -25.0, 40.0]]).astype(F32)
POSITIVE = np.concatenate([np.linspace(0.05, 30, SIZE - 3), [1e-6, 1e-30, 3e5]]).astype(F32)
ABOVE_MINUS_ONE = np.concatenate([np.linspace(-0.9, 10, SIZE - 4), [1e-7, -1e-7, 1e-4, 0.0]]).astype(F32)
# exp2 on XLA's CPU is exp(x ln 2), 9 ulps from 2^30 at x = 30: compared where both are within a few ulps
MODERATE = np.linspace(-10, 10, SIZE).astype(F32)
WITH_NAN = np.where(np.arange(SIZE) % 5 == 0, np.nan, GENERAL).astype(F32)
INTS = (np.arange(SIZE) * 7919 % 201 - 100).astype(I32)
OTHER_INTS = (np.arange(SIZE) * 104729 % 97 - 48).astype(I32)


def assert_ulps(actual, expected, ulps=4, floor=None):
    """Equal dtypes and shapes; floats within `ulps` units in the last place of the expected value, or of `floor`
    where that is larger (NaN where it is NaN), everything else exactly equal."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind not in "fV" and actual.dtype != BF16:
        np.testing.assert_array_equal(actual, expected)
        return
    info = ml_dtypes.finfo(actual.dtype)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    tolerance = ulps * float(info.eps) * np.maximum(np.abs(e), floor or float(info.smallest_normal))
    close = (a == e) | (np.isnan(a) & np.isnan(e)) | (np.abs(a - e) <= tolerance)
    assert close.all(), f"differ beyond {ulps} ulps at {np.flatnonzero(~close)}: {a[~close]} vs {e[~close]}"


def check_fused(f, *args, ulps=4, kernels=1, floor=None):
    """`f` under jit with fusion="triton" (`kernels` generated kernels) equals `f` under plain jit."""
    fused = numax.jit(f, fusion="triton")
    assert len(fused.lower(*args).triton_kernels()) == kernels
    expected, actual = numax.jit(f)(*args), fused(*args)
    for a, e in zip(*(x if isinstance(x, tuple) else (x,) for x in (actual, expected))):
        assert_ulps(a, e, ulps, floor)


UNARY = {  # name: (primitive applied to a product, input); the product makes a chain of two
    "exp": (lax.exp, GENERAL), "log": (lax.log, POSITIVE), "log1p": (lax.log1p, ABOVE_MINUS_ONE),
    "expm1": (lax.expm1, GENERAL), "tanh": (lax.tanh, GENERAL), "logistic": (lax.logistic, GENERAL),
    "erf": (lax.erf, GENERAL), "erfc": (lax.erfc, GENERAL), "exp2": (lax.exp2, MODERATE),
    "sin": (lax.sin, GENERAL), "cos": (lax.cos, GENERAL),
    "sqrt": (lax.sqrt, POSITIVE), "rsqrt": (lax.rsqrt, POSITIVE), "abs": (lax.abs, GENERAL),
    "sign": (lax.sign, GENERAL), "neg": (lax.neg, GENERAL), "floor": (lax.floor, GENERAL),
    "ceil": (lax.ceil, GENERAL), "square": (lax.square, GENERAL),
    "integer_pow_5": (lambda x: lax.integer_pow(x, 5), GENERAL),
    "integer_pow_-3": (lambda x: lax.integer_pow(x, -3), POSITIVE),
    "integer_pow_0": (lambda x: lax.integer_pow(x, 0), GENERAL),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_primitive_in_a_chain_of_two(name):
    op, x = UNARY[name]
    # 0.75 is exact in binary: the product rounds the same way in both paths
    check_fused(lambda v: op(lax.mul(v, np.float32(0.75))), x)


BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "max": lax.max, "min": lax.min,
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge, "rem": lax.rem,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_primitive_on_floats_with_nan(name):
    op = BINARY[name]
    check_fused(lambda x, y: op(lax.mul(x, np.float32(2.0)), y), WITH_NAN, GENERAL[::-1].copy())


_CUBE = np.linspace(-2, 2, 120, dtype=F32).reshape(4, 5, 6)
VIEWS = {  # elementwise work on both sides of views of other shapes: one kernel, no view left to XLA
    "rotate_half": lambda x: x * 0.5 + mnp.concatenate([-x[..., 3:], x[..., :3]], axis=-1) * 2.0,
    "strided_slices": lambda x: mnp.tanh(x[:, ::2, 1:] * 2.0) + x[:, ::2, 1:],
    "pad_interior_and_negative": lambda x: lax.pad(x * 2.0, np.float32(-1.0), ((1, 0, 1), (-1, 2, 0), (0, 0, 0)))
    + 1.0,
    "pad_with_a_computed_value": lambda x: lax.pad(mnp.exp(x), x[1, 2, 3] * 3.0, ((0, 0, 0), (2, 1, 1), (0, 0, 0)))
    * 0.5,
    "transpose_and_reverse": lambda x: mnp.flip(mnp.transpose(x * 3.0, (2, 0, 1)), 1) - 1.0,
    "reshape_across_axes": lambda x: mnp.exp((x * 0.25).reshape(6, 20)) + 1.0,
    "per_row_value_computed_inside": lambda x: x * mnp.tanh(x[..., :1] * 2.0),
    "squeeze": lambda x: mnp.squeeze(x[:, 1:2, :] * 2.0, 1) + 1.0,
    "scalar_element": lambda x: x * x[0, 0, 2] + 1.0,
    "iota_at_a_fixed_coordinate": lambda x: x * lax.broadcasted_iota(np.float32, (4, 5, 7), 2)[:, :, 3:4] + x,
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_of_other_shapes_join_the_kernel(name):
    check_fused(VIEWS[name], _CUBE)
    closed = numax.jit(VIEWS[name], fusion="triton").lower(_CUBE).closed
    assert [e.primitive.name for e in closed.equations] == ["triton_call"]


def _draw_view(draw, shape):
    """A random view of an array of `shape`: a strided slice, a transpose, a reversal, a pad (interior, negative
    low) or a reshape, as a function."""
    kind = draw(st.sampled_from(["slice", "transpose", "rev", "pad", "reshape"]))
    if kind == "slice":
        starts = [draw(st.integers(0, n - 1)) for n in shape]
        limits = [draw(st.integers(s + 1, n)) for s, n in zip(starts, shape)]
        strides = [draw(st.integers(1, 2)) for _ in shape]
        return lambda x: lax.slice(x, starts, limits, strides)
    if kind == "transpose":
        permutation = draw(st.permutations(range(len(shape))))
        return lambda x: lax.transpose(x, permutation)
    if kind == "rev":
        axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
        return lambda x: lax.rev(x, axes)
    if kind == "pad":
        config = [(draw(st.integers(-1, 2)) if n > 1 else draw(st.integers(0, 2)), draw(st.integers(0, 2)),
                   draw(st.integers(0, 1))) for n in shape]
        return lambda x: lax.pad(x, np.float32(0.5), config)
    size = math.prod(shape)
    first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    return lambda x: lax.reshape(x, (first, size // first))


@settings(max_examples=8, deadline=None)  # each example compiles twice and runs the interpreter
@given(st.data())
def test_random_view_chains_match_xla(data):
    count, views = data.draw(st.integers(1, 3)), []  # views drawn during the first trace, replayed by the others

    def program(x):
        value = x * 1.5
        for i in range(count):
            if len(views) == i:
                views.append(_draw_view(data.draw, value.shape))
            value = mnp.tanh(views[i](value)) + 0.25
        return value

    x = _CUBE[:3, :4, :5].copy()
    closed = numax.jit(program, fusion="triton").lower(x).closed
    # every view of more than one element is in a kernel (values of one element are left to XLA)
    assert all(e.outvars[0].aval.size == 1 for e in closed.equations
               if e.primitive.name in ("slice", "transpose", "rev", "pad", "reshape"))
    kernels = sum(e.primitive.name == "triton_call" for e in closed.equations)
    check_fused(program, x, kernels=kernels, floor=1.0)  # tanh(.) + 0.25 cancels: ulps of 1.0


def _update(t):
    return mnp.tanh(t * 0.5) * 2.0 + t


def test_independent_regions_with_one_kernel_share_a_launch():
    # an optimizer's update of several tensors: one launch for all, each region a segment of its programs
    updates = lambda a, b, c: (_update(a), _update(b), _update(c))
    args = (np.linspace(-3, 3, 37, dtype=F32), np.linspace(-1, 1, 60, dtype=F32).reshape(12, 5),
            np.linspace(0, 2, 3000, dtype=F32))
    check_fused(updates, *args)
    (kernel,) = numax.jit(updates, fusion="triton").lower(*args).triton_kernels()
    assert kernel.name.startswith("foreach_3_") and kernel.source.count("elif pid < end") == 2


def test_sibling_regions_reading_one_array_share_a_kernel():
    # attention's query, key and value sliced from one projection and split into heads: three outputs, one launch
    def heads(qkv):
        split = lambda t: mnp.transpose(t.reshape(2, 5, 3, 4), (0, 2, 1, 3)).astype(BF16)
        return tuple(split(qkv[..., i * 12:(i + 1) * 12] * 0.5) for i in range(3))

    qkv = np.linspace(-3, 3, 2 * 5 * 36, dtype=F32).reshape(2, 5, 36)
    check_fused(heads, qkv)
    (kernel,) = numax.jit(heads, fusion="triton").lower(qkv).triton_kernels()
    assert kernel.source.count("tl.store(") == 3
    # siblings that share only a scalar keep their own kernels (nothing read once instead of twice)
    apart = lambda a, b, s: (mnp.tanh(a * s) + 1.0, mnp.exp(b * s) - 1.0)
    check_fused(apart, np.linspace(-1, 1, 30, dtype=F32), np.linspace(-1, 1, 30, dtype=F32), F32(0.5), kernels=2,
                floor=1.0)  # exp(x) - 1 cancels near 0: ulps of 1.0


def test_regions_that_depend_on_each_other_keep_their_own_launches():
    matrix = np.linspace(-1, 1, 25, dtype=F32).reshape(5, 5)
    chained = lambda a: _update(_update(a) @ matrix)  # the second update reads the first's result
    # (tanh(t / 2) * 2 + t cancels where t < 0: ulps of 1.0)
    check_fused(chained, np.linspace(-2, 2, 20, dtype=F32).reshape(4, 5), kernels=2, ulps=8, floor=1.0)

    # A -> B and C -> D with A, D alike and B, C alike: grouping both pairs would make the groups need each other
    scaled = lambda t, s: mnp.exp(t * s) + 1.0

    def crossed(x, y, z, w):
        a = _update(x)
        b = scaled(y, mnp.sum(a))
        c = scaled(z, mnp.sum(w))
        d = _update(c @ matrix)
        return b, d

    args = [np.linspace(-1, 1, 20, dtype=F32).reshape(4, 5) * k for k in (1.0, 0.5, 0.25, 0.125)]
    check_fused(crossed, *args, kernels=4, ulps=8, floor=1.0)


SHIFTS = {"shift_left": lax.shift_left, "shift_right_logical": lax.shift_right_logical,
          "shift_right_arithmetic": lax.shift_right_arithmetic}


@pytest.mark.parametrize("name", sorted(SHIFTS))
@pytest.mark.parametrize("dtype", [I32, np.uint32, np.int8])
def test_shifts_match_xla_for_every_amount(name, dtype):
    # amounts from -2 to past the width: XLA defines the results out of range (0, or the sign), Triton does not
    bits = np.dtype(dtype).itemsize * 8
    amounts = (np.arange(SIZE) % (bits + 4) - 2).astype(dtype)
    values = (INTS * 12345).astype(dtype)
    op = SHIFTS[name]
    check_fused(lambda x, s: op(lax.add(x, dtype(1)), s), values, amounts)
    check_fused(lambda x: op(lax.add(x, dtype(1)), dtype(3)), values)  # a literal amount in range: unguarded


def test_iota_and_bitcasts_in_a_region():
    def f(x):
        rows = lax.broadcasted_iota(np.int32, (5, 6, 7), 0)
        last = lax.broadcasted_iota(np.uint32, (5, 6, 7), 2)
        # low mantissa bits only: no subnormal results (XLA flushes them to zero, the interpreter does not)
        bits = lax.bitcast_convert_type(x, np.uint32) ^ ((last * np.uint32(2654435761)) & np.uint32(0x7FFF))
        return lax.bitcast_convert_type(bits | np.uint32(1), np.float32) + rows.astype(np.float32)

    check_fused(f, np.linspace(-3, 3, 210, dtype=F32).reshape(5, 6, 7), ulps=0)


def test_random_bits_and_dropout_fuse_into_one_kernel():
    # threefry2x32's rounds, the counters' iota, the bits' shift into a float and the mask: one kernel, the same
    # bits as XLA's; the key's words are sliced out by XLA
    def dropout(key, x):
        keep = numax.random.bernoulli(key, 0.9, x.shape)
        return mnp.where(keep, x / 0.9, 0.0) + x, keep

    key, x = numax.random.PRNGKey(7), np.linspace(-2, 2, 6 * 37, dtype=F32).reshape(6, 37)
    check_fused(dropout, key, x)  # the mask exactly, the values within 4 ulps
    closed = numax.jit(dropout, fusion="triton").lower(key, x).closed
    assert "threefry2x32" not in [e.primitive.name for e in closed.equations]
    bits = lambda key: numax.random.bits(key, (3, 37))
    check_fused(bits, key, ulps=0)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("method", [lax.RoundingMethod.AWAY_FROM_ZERO, lax.RoundingMethod.TO_NEAREST_EVEN])
def test_round_matches_xla_on_ties_and_edges(method, dtype):
    halves = np.arange(-6, 7) + 0.5  # every tie, odd and even
    edges = [0.0, -0.0, 0.49999997, -0.49999997, 2.0 ** 23 + 1, -(2.0 ** 23) - 1, 1e30, np.inf, -np.inf, np.nan]
    x = np.concatenate([halves, edges, np.linspace(-7, 7, 41)]).astype(dtype)
    check_fused(lambda v: lax.round(v * 1.0, method) + 0.0, x, ulps=0)


def test_float_remainder_and_exp2_take_libdevice_on_the_gpu():
    closed = numax.make_jaxpr(lambda x, y: lax.exp2(lax.rem(x * 2.0, y)))(GENERAL, POSITIVE)
    (gpu,) = [k.source for k in fuse_with_kernels(closed, "gpu")[1]]
    assert "libdevice.fmod(" in gpu and "libdevice.exp2(" in gpu and " % " not in gpu
    integers = numax.make_jaxpr(lambda i, j: lax.rem(i * 3, j))(INTS, OTHER_INTS)
    assert fuse_with_kernels(integers)[0] is integers  # XLA defines i % 0, Triton does not: not fused


def test_pow_follows_xla_on_every_special_case():
    # C's pow: signs of negative bases to odd integers, NaN to non-integers, zeros to negative powers, infinities,
    # 1 for a zero power or a base of 1; in a chain, on a grid of bases by exponents
    bases = np.array([-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.7, np.inf, -np.inf, np.nan, 1e-3], F32)
    exponents = np.array([0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, -0.5, 2.5, np.inf, -np.inf, np.nan], F32)
    x, y = (np.ascontiguousarray(a) for a in np.broadcast_arrays(bases[:, None], exponents[None, :]))
    check_fused(lambda x, y: lax.pow(x * 1.0, y) + 0.0, x, y)
    check_fused(lambda x: lax.pow(lax.abs(x) + 0.5, np.float32(1.7)), GENERAL)
    both = numax.grad(lambda x, y: mnp.sum(lax.pow(lax.abs(x) + 0.5, y * 0.5)), argnums=(0, 1))  # y log x, too
    check_fused(both, GENERAL, np.linspace(1, 3, SIZE, dtype=F32), ulps=8)


def test_integer_and_boolean_chains_are_exact():
    def integers(i, j):
        k = lax.max(lax.sub(lax.mul(i, np.int32(3)), j), lax.neg(i))
        return lax.min(lax.abs(k), lax.integer_pow(j, 3)), lax.sign(lax.add(k, j)), lax.bitwise_xor(
            lax.bitwise_not(k), lax.bitwise_or(i, lax.bitwise_and(j, np.int32(12))))

    check_fused(integers, INTS, OTHER_INTS)
    wrapping = lambda u: lax.add(lax.mul(u, np.uint8(7)), np.uint8(200))  # uint8 wraps around as in XLA
    check_fused(wrapping, np.arange(SIZE, dtype=U8) * 5)

    def booleans(x, y):
        p, q = lax.gt(x, np.float32(0)), lax.lt(y, np.float32(1))
        return lax.bitwise_xor(lax.bitwise_or(p, lax.bitwise_not(q)), lax.bitwise_and(p, q)), lax.max(p, q)

    check_fused(booleans, GENERAL, GENERAL[::-1].copy())


def test_select_n_clamp_and_conversions():
    check_fused(lambda x, y: lax.select_n(lax.gt(x, np.float32(0)), lax.mul(x, np.float32(2)), y), GENERAL,
                POSITIVE)
    three_cases = lambda i, x: lax.select_n(lax.clamp(np.int32(0), i, np.int32(2)), x, lax.exp(x), lax.neg(x))
    check_fused(three_cases, INTS % 4 - 1, GENERAL)
    check_fused(lambda x: lax.clamp(np.float32(-1), lax.mul(x, np.float32(0.5)), np.float32(1)), WITH_NAN)

    def conversions(x, i):
        as_f16 = lax.convert_element_type(lax.mul(x, np.float32(1.1)), F16)  # the program's own rounding
        back = lax.convert_element_type(lax.add(as_f16, F16(1)), F32)
        from_int = lax.add(lax.convert_element_type(i, F32), x)
        to_bool = lax.convert_element_type(lax.sub(x, np.float32(1)), np.bool_)
        narrowed = lax.convert_element_type(lax.mul(i, np.int32(1000)), np.int8)  # wraps as in XLA
        return back, from_int, lax.convert_element_type(to_bool, F32), lax.add(narrowed, np.int8(1))

    check_fused(conversions, GENERAL, INTS, kernels=1)  # four chains reading x and i: siblings in one kernel


def test_float_to_int_conversion_stays_with_xla():
    f = lambda x: lax.add(lax.convert_element_type(lax.mul(x, np.float32(1e9)), I32), np.int32(1))
    check_fused(f, GENERAL, kernels=0)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
def test_16_bit_chains_compute_in_float32(dtype):
    def chain(x, y):
        z = x * y + 2.0
        return mnp.tanh(z * 0.25) * lax.logistic(z), z / (mnp.abs(y) + 1.0)

    x, y = GENERAL.astype(dtype) / 4, POSITIVE[::-1].astype(dtype) / 30
    fused = numax.jit(chain, fusion="triton")
    # The kernel rounds only its stores: it is the chain computed in float32, rounded once (Triton's interpreter
    # narrows to bfloat16 by truncation: one ulp)...
    in_float32 = numax.jit(chain)(x.astype(F32), y.astype(F32))
    for actual, wide in zip(fused(x, y), in_float32):
        assert_ulps(actual, np.asarray(wide).astype(dtype), ulps=1)
    # ...and a few 16-bit ulps from XLA's, which rounds every step to 16 bits (a well-conditioned chain)
    check_fused(chain, x, y, ulps=4)
    source = fused.lower(x, y).triton_kernels()[0].source
    assert ".to(tl.float32)" in source and f".to({'tl.float16' if dtype is F16 else 'tl.bfloat16'})" in source


def test_scalars_literals_and_size_one_inputs():
    def f(x, s, one):  # (no cancellation after a product: XLA on the CPU contracts x * s + 2.5 into an fma)
        return lax.add(lax.mul(x, s), 2.5) * mnp.exp(x - one) + mnp.zeros_like(x)

    check_fused(f, GENERAL, np.float32(0.25), np.full((1,), 0.25, F32))
    source = numax.jit(f, fusion="triton").lower(GENERAL, np.float32(0.25), np.ones(1, F32)).triton_kernels()[0].source
    assert "tl.load(in1_ptr)" in source and "tl.load(in2_ptr)" in source  # loaded once, not per element
    assert "tl.full([BLOCK], 2.5, tl.float32)" in source


def test_trailing_blocks_such_as_a_bias_join_the_kernel():
    rng = np.random.RandomState(3)
    x, w = rng.randn(3, 4, 6).astype(F32), rng.randn(6, 7).astype(F32)
    bias, block, per_row = rng.randn(7).astype(F32), rng.randn(1, 4, 7).astype(F32), rng.randn(3, 4, 1).astype(F32)
    f = lambda x, w, bias, block: numax.nn.gelu(x @ w + bias) * block + 1.0
    check_fused(f, x, w, bias, block, ulps=8, floor=1.0)
    (kernel,) = numax.jit(f, fusion="triton").lower(x, w, bias, block).triton_kernels()
    assert "% 7)" in kernel.source and "offsets % 28" in kernel.source  # read in place, not broadcast first
    closed = numax.jit(f, fusion="triton").lower(x, w, bias, block).closed
    # XLA keeps the matmul; the bias's reshape to (1, 1, 7) joins the kernel, which reads the bias in place
    assert [e.primitive.name for e in closed.equations] == ["dot_general", "triton_call"]
    # the backward pass's elementwise part fuses with the bias too; the bias's gradient (a sum) is XLA's. The
    # gradients are sums of products of size up to 8 that cancel: both paths are 1-3e-6 from float64's answer
    loss = lambda x, w, bias: mnp.sum(numax.nn.gelu(x @ w + bias) * block)
    check_fused(numax.grad(loss, argnums=(0, 1, 2)), x, w, bias, ulps=8, floor=8.0)
    # a value per row joins the kernel too, read at the row's index
    g = lambda x, per_row: mnp.exp(x * 0.5 + 1.0) * per_row
    check_fused(g, x, per_row)
    (kernel,) = numax.jit(g, fusion="triton").lower(x, per_row).triton_kernels()
    assert "offsets // 6" in kernel.source
    assert [e.primitive.name for e in numax.jit(g, fusion="triton").lower(x, per_row).closed.equations] == [
        "triton_call"]


# Operands of every broadcast pattern over a (5, 6, 7) result: repeated along the leading, middle or last axes, or
# several of them, with leading axes missing, and one value.
BROADCAST_SHAPES = [(5, 6, 7), (7,), (6, 7), (1, 6, 7), (5, 1, 1), (5, 6, 1), (1, 6, 1), (5, 1, 7), (6, 1), (1, 1, 1),
                    ()]


@pytest.mark.parametrize("shape", BROADCAST_SHAPES[1:], ids=str)
def test_every_broadcast_pattern_reads_in_place_in_one_kernel(shape):
    rng = np.random.RandomState(len(shape))
    x, other = rng.uniform(-2, 2, (5, 6, 7)).astype(F32), rng.uniform(0.5, 2, shape).astype(F32)
    f = lambda x, other: mnp.tanh(x * other + 1.0) - other * 0.5
    check_fused(f, x, other, floor=1.0)  # (relative to values of order one: the difference cancels)
    closed = numax.jit(f, fusion="triton").lower(x, other).closed
    # the kernel reads `other` as it is (a broadcast of it to the result's shape is not written to memory first)
    assert [e.primitive.name for e in closed.equations if e.outvars[0].aval.shape == (5, 6, 7)] == ["triton_call"]
    (call,) = [e for e in closed.equations if e.primitive.name == "triton_call"]
    assert all(v.aval.size in (1, other.size, x.size) for v in call.inputs)


def test_two_ways_of_reading_one_input_are_two_loads():
    """A square result where one vector is read per row and per column: each read has its own index."""
    v = np.arange(1, 5, dtype=F32)
    x = np.linspace(-1, 1, 16, dtype=F32).reshape(4, 4)
    f = lambda x, v: x * lax.broadcast_in_dim(v, (4, 4), (0,)) + lax.broadcast_in_dim(v, (4, 4), (1,)) * 2.0
    check_fused(f, x, v)
    np.testing.assert_allclose(np.asarray(numax.jit(f, fusion="triton")(x, v)), x * v[:, None] + v[None, :] * 2.0,
                               rtol=1e-6)
    (kernel,) = numax.jit(f, fusion="triton").lower(x, v).triton_kernels()
    assert "offsets // 4" in kernel.source and "offsets % 4" in kernel.source


@settings(max_examples=8, deadline=None)  # each example compiles twice and runs the interpreter
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3),
       st.lists(st.tuples(st.lists(st.booleans(), min_size=3, max_size=3), st.booleans()), min_size=1, max_size=4),
       st.sampled_from([F32, F16]))
def test_random_broadcasts_fuse_into_one_kernel_and_match_xla(shape, operands, dtype):
    """A chain over a result of random shape whose operands are repeated along random axes (leading axes of size one
    dropped or kept), forward and backward."""
    shape = tuple(shape)
    rng = np.random.RandomState(sum(shape))
    shapes = [tuple(n if keep else 1 for n, keep in zip(shape, mask)) for mask, _ in operands]
    shapes = [s[next((i for i, n in enumerate(s) if n != 1), len(s)):] if drop else s
              for s, (_, drop) in zip(shapes, operands)]
    args = [rng.uniform(-2, 2, shape).astype(dtype)] + [rng.uniform(0.5, 1.5, s).astype(dtype) for s in shapes]

    def f(x, *others):
        for k, other in enumerate(others):
            x = mnp.tanh(x * other) if k % 2 else x + other * 0.5
        return x * 0.25

    fusible = math.prod(shape) > 1
    check_fused(f, *args, ulps=8 if dtype is F16 else 4, floor=1.0, kernels=1 if fusible else 0)
    if dtype is F32:  # the gradient with respect to x: the backward chain over the same operands
        check_fused(numax.grad(lambda x, *others: mnp.sum(f(x, *others))), *args, ulps=8, floor=1.0,
                    kernels=1 if fusible else 0)


def test_several_outputs_and_values_used_inside_and_outside_a_region():
    def f(x):
        scaled = x * 2.0
        grown = mnp.exp(scaled) + 1.0
        total = mnp.sum(scaled)  # XLA's: between the two kernels, reading the first one's output
        return grown, mnp.tanh(grown / total) + scaled * scaled, scaled

    check_fused(f, GENERAL / 8, kernels=2)
    closed = numax.jit(f, fusion="triton").lower(GENERAL).closed
    names = [eqn.primitive.name for eqn in closed.equations]
    assert names == ["triton_call", "reduce_sum", "triton_call"]
    first, second = closed.equations[0], closed.equations[2]
    # scaled (read by the sum, and a result) and grown (read by the second kernel) are the first's outputs; the
    # second kernel computes scaled * scaled again from x instead of loading it (as many bytes read, none stored)
    assert len(first.outvars) == 2 and closed.equations[1].inputs[0] in first.outvars
    assert closed.program.invars[0] in second.inputs
    assert set(closed.program.outvars) <= set(first.outvars) | set(second.outvars)


def test_grad_is_fused_too():
    loss = lambda x: mnp.sum(mnp.tanh(x) * x + mnp.exp(-x * x))
    # The forward and backward chains make one region. (1 - tanh(x)**2) * x cancels up to 80-fold near |x| = 3:
    # there both paths are 4 to 8 ulps from the exact gradient, on either side of it.
    check_fused(numax.grad(loss), GENERAL, kernels=1, ulps=16, floor=1.0)
    closed = numax.jit(numax.grad(loss), fusion="triton").lower(GENERAL).closed
    names = [eqn.primitive.name for eqn in closed.equations]  # (the unused loss's sum is still there)
    assert names.count("triton_call") == 1 and not {"tanh", "exp", "mul", "sub", "add_any"} & set(names)


def test_nested_jit_programs_join_the_callers_regions():
    inner = numax.jit(lambda x: mnp.sqrt(mnp.abs(x) + 1.0) * x)
    f = lambda x: inner(x) + mnp.sum(inner(x * 3.0))
    # two regions across the calls' boundaries: x * 3 with the second call's chain (then the sum, XLA's), and the
    # first call's chain with the final add
    check_fused(f, GENERAL, kernels=2)
    closed = numax.jit(f, fusion="triton").lower(GENERAL).closed
    names = [eqn.primitive.name for eqn in closed.equations]
    assert "jit" not in names and names.count("triton_call") == 2 and not {"abs", "sqrt", "mul"} & set(names)


def test_a_nested_jit_with_nothing_to_fuse_stays_called():
    inner = numax.jit(lambda x: mnp.sum(x, axis=0))
    closed = numax.make_jaxpr(lambda x: inner(x) * 2.0)(np.ones((3, 4), F32))
    assert fuse_with_kernels(closed)[0] is closed


_UNARY_POOL = [mnp.tanh, mnp.abs, lambda v: v * 0.5, mnp.negative, lambda v: mnp.exp(-mnp.abs(v)), mnp.square]
# The select's two branches meet where a == b: a comparison that rounding flips (XLA rounds 16-bit values after
# every step, the kernel once) changes the result by a rounding error only.
_BINARY_POOL = [mnp.add, mnp.subtract, mnp.multiply, mnp.maximum, mnp.minimum,
                lambda a, b: mnp.where(a > b, a - b, (b - a) * 0.25)]


@settings(max_examples=6)  # each example compiles twice and runs the interpreter
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 99)),
                min_size=2, max_size=8),
       st.sampled_from([F32, F16]))
def test_random_elementwise_programs_match_xla(steps, dtype):
    """Programs of unary and binary operations on the latest value and any earlier one (a connected DAG), over
    two inputs and a scalar; every value is a result."""

    def program(x, y, s):
        values = [x, y, x * s]
        for binary, op, other in steps:
            a, b = values[-1], values[other % len(values)]
            values.append(_BINARY_POOL[op](a, b) if binary else _UNARY_POOL[op](a))
        return tuple(values[2:])

    args = (GENERAL.astype(dtype) / 4, POSITIVE[::-1].astype(dtype) / 30, dtype(0.75))
    fused = numax.jit(program, fusion="triton")
    assert fused.lower(*args).triton_kernels()
    expected, actual = numax.jit(program)(*args), fused(*args)
    for a, e in zip(actual, expected):
        # relative to values of order one (XLA contracts products and sums into fmas, and 16-bit XLA rounds
        # each of up to 8 steps)
        assert_ulps(a, e, ulps=8 if dtype is F16 else 4, floor=1.0)


def test_triton_kernels_and_kernel_files(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMAX_CACHE_DIR", str(tmp_path))
    f = lambda x: mnp.exp(x * 7.125) - 3.0  # a region no other test makes: its kernel is written here
    kernels = numax.jit(f, fusion="triton").lower(GENERAL).triton_kernels()
    assert len(kernels) == 1
    kernel = kernels[0]
    assert kernel.name.startswith("fused_mul_exp_sub_")
    assert "mul a 7.125" in kernel.equations and "exp" in kernel.equations and "sub" in kernel.equations
    assert f"def {kernel.name}(in0_ptr, n, out0_ptr, BLOCK: tl.constexpr):" in kernel.source
    assert "@triton.jit" in kernel.source and "tl.store(out0_ptr + offsets" in kernel.source
    path = tmp_path / "fusion" / f"{hashlib.sha256(kernel.source.encode()).hexdigest()}.py"
    assert path.read_text() == kernel.source
    assert [p.name for p in (tmp_path / "fusion").iterdir()] == [path.name]  # no temporary file left behind
    assert numax.jit(f).lower(GENERAL).triton_kernels() == []  # fusion="xla": nothing generated


def test_fusion_log(capsys):
    numax.config.update("numax_log_fusion", True)
    try:
        numax.jit(lambda x: lax.lgamma(x) * mnp.tanh(x) + 1.0, fusion="triton")(GENERAL)
    finally:
        numax.config.update("numax_log_fusion", False)
    err = capsys.readouterr().err
    assert "numax: fused 3 equations over f32[37] into fused_tanh_mul_add_" in err and "lgamma" not in err


def test_global_default_and_environment(monkeypatch):
    f = lambda x: mnp.exp(x) * 2.0
    numax.config.update("numax_fusion", "triton")
    try:
        assert len(numax.jit(f).lower(GENERAL).triton_kernels()) == 1
        assert_ulps(numax.jit(f)(GENERAL), np.asarray(numax.jit(f, fusion="xla")(GENERAL)))
        assert numax.jit(f, fusion="xla").lower(GENERAL).triton_kernels() == []
    finally:
        numax.config.update("numax_fusion", "xla")
    assert numax.jit(f).lower(GENERAL).triton_kernels() == []
    monkeypatch.setenv("NUMAX_FUSION", "triton")
    assert Config().fusion == "triton"
    monkeypatch.setenv("NUMAX_FUSION", "cuda")
    with pytest.raises(ValueError, match="NUMAX_FUSION must be one of 'xla', 'triton', got 'cuda'"):
        Config()


def test_option_errors(monkeypatch):
    with pytest.raises(ValueError, match="jit fusion must be one of 'xla', 'triton', got 'cuda'"):
        numax.jit(lambda x: x, fusion="cuda")
    with pytest.raises(ValueError, match="numax_fusion must be one of 'xla', 'triton'"):
        numax.config.update("numax_fusion", True)
    assert numax.config.fusion == "xla"
    monkeypatch.setitem(sys.modules, "triton", None)  # as if Triton were not installed
    with pytest.raises(ImportError, match="pip install triton"):
        numax.jit(lambda x: mnp.exp(x) + 1.0, fusion="triton")(GENERAL)


def test_programs_with_nothing_to_fuse_are_unchanged():
    lone = numax.make_jaxpr(lambda x: mnp.sum(mnp.exp(x)))(GENERAL)  # one elementwise op: nothing to gain
    assert fuse_elementwise(lone) is lone
    scalars = numax.make_jaxpr(lambda s: mnp.exp(s) * 2.0 + 1.0)(np.float32(2))  # size 1: not worth a kernel
    assert fuse_elementwise(scalars) is scalars
    other = numax.make_jaxpr(lambda x: mnp.cumsum(x) @ x)(GENERAL)
    assert fuse_elementwise(other) is other


def test_no_kernel_directory_without_fusion(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMAX_CACHE_DIR", str(tmp_path))
    numax.jit(lambda x: mnp.exp(x) * 5.5)(GENERAL)
    assert not os.path.exists(tmp_path / "fusion")


def test_math_forms_per_platform():
    def f(x):
        y = x * 0.5
        return mnp.exp(y) + mnp.log(y * y + 1.0) + mnp.log1p(y * y) + mnp.expm1(y) + mnp.tanh(y) + lax.rsqrt(
            y * y + 2.0) + mnp.sqrt(y * y) + lax.logistic(y)

    closed = numax.make_jaxpr(f)(GENERAL)
    gpu = fuse_with_kernels(closed, "gpu")[1][0].source
    for function in ("exp", "log", "log1p", "expm1", "tanh", "rsqrt"):
        assert f"libdevice.{function}(" in gpu
    assert "from triton.language.extra import libdevice" in gpu and "tl.exp(" not in gpu and "tl.log(" not in gpu
    assert "tl.rsqrt(" not in gpu and "def _tanh" not in gpu and "tl.sqrt_rn(" in gpu
    cpu = fuse_with_kernels(closed, "cpu")[1][0].source
    assert "libdevice" not in cpu and "tl.exp(" in cpu and "tl.rsqrt(" in cpu
    assert all(f"def _{helper}(" in cpu for helper in ("log1p", "expm1", "tanh"))
    # jit generates for the platform its arrays are on (the default backend: the GPU on a GPU machine).
    expected = gpu if numax.default_backend() == "gpu" else cpu
    assert numax.jit(f, fusion="triton").lower(GENERAL).triton_kernels()[0].source == expected
    with pytest.raises(ValueError, match="fusion code generation knows platforms"):
        fuse_with_kernels(closed, "tpu")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16_bit_results_take_the_gpus_approximate_exp_and_tanh(dtype):
    # their error (2^-11 relative at most) is within the rounding to 16 bits; log and float32 results stay precise
    narrow = lambda x: mnp.tanh(x * 0.5) + mnp.exp(x) + mnp.log(x * x + 1.0)
    mixed = lambda x: (mnp.tanh(x.astype(np.float32)) + mnp.exp(x.astype(np.float32))).astype(dtype)
    gpu = fuse_with_kernels(numax.make_jaxpr(narrow)(GENERAL.astype(dtype)), "gpu")[1][0].source
    assert "_tanh_approx(" in gpu and "tanh.approx.f32" in gpu and "tl.exp(" in gpu and "libdevice.log(" in gpu
    assert "libdevice.tanh(" not in gpu and "libdevice.exp(" not in gpu
    gpu = fuse_with_kernels(numax.make_jaxpr(mixed)(GENERAL.astype(dtype)), "gpu")[1][0].source
    # float32 values seen only through the 16-bit result: exp's approximate form (2^-22), not tanh's (2^-11)
    assert "libdevice.tanh(" in gpu and "tl.exp(" in gpu and "libdevice.exp(" not in gpu and "_tanh_approx" not in gpu
    cpu = fuse_with_kernels(numax.make_jaxpr(narrow)(GENERAL.astype(dtype)), "cpu")[1][0].source
    assert "_tanh(" in cpu and "tanh.approx" not in cpu


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_float32_values_seen_only_through_16_bit_results_take_fast_forms_on_the_gpu(dtype):
    def softmax_in_float32(x):  # a float32 softmax of 16-bit scores, back to 16 bits
        z = x.astype(np.float32) / 3.0
        e = mnp.exp(z - mnp.max(z, axis=-1, keepdims=True))
        return (e / mnp.sum(e, axis=-1, keepdims=True)).astype(dtype)

    x = np.random.RandomState(1).randn(4, 37).astype(dtype)
    (kernel,) = fuse_with_kernels(numax.make_jaxpr(softmax_in_float32)(x), "gpu")[1]
    assert "tl.exp(" in kernel.source and "libdevice.exp(" not in kernel.source and "tl.div_rn" not in kernel.source
    # the same float32 values also stored as a float32 result, or compared: precise forms
    also_float32 = lambda x: (softmax_in_float32(x), mnp.exp(x.astype(np.float32) * 0.5) / 3.0)
    compared = lambda x: mnp.where(mnp.exp(x.astype(np.float32)) / 3.0 > 0.5, x, 0.0).astype(dtype)
    for f in (also_float32, compared):
        sources = [k.source for k in fuse_with_kernels(numax.make_jaxpr(f)(x), "gpu")[1]]
        assert any("libdevice.exp(" in s and "tl.div_rn(" in s for s in sources)
    (interpreted,) = fuse_with_kernels(numax.make_jaxpr(softmax_in_float32)(x), "cpu")[1]
    assert "tl.div_rn(" in interpreted.source  # the interpreter keeps numpy's exact forms


@pytest.mark.parametrize("size, block, num_warps", [(37, 128, 4), (1000, 1024, 4), (3001, 1024, 4),
                                                     ((1 << 20) + 5, 4096, 8)])
def test_launch_parameters_follow_the_region_size(size, block, num_warps):
    x = np.linspace(-3, 3, size, dtype=F32)
    f = lambda v: mnp.tanh(v * 1.5) + v
    closed = numax.jit(f, fusion="triton").lower(x).closed
    (call,) = closed.equations
    assert dict(call.params["metaparams"])["BLOCK"] == block and call.params["num_warps"] == num_warps
    assert call.params["grid"]({"BLOCK": block}) == (-(-size // block),)
    check_fused(f, x)  # a partial last block is masked
