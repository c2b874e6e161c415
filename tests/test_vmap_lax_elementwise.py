"""vmap of every elementwise primitive: batch dimensions at 0, 1, -1 and unbatched mixes, rank-0 operands, nested
vmaps, jit around and inside vmap, and per-example gradients; checked against jax.vmap of the same jax.lax code
and against numax applied to each example in turn."""

import functools

import numpy as np
import pytest
from harness import assert_close, jax, jnp
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import jit_table

import numax
import numax.numpy as mnp
from numax import lax

jlax = jax.lax
BATCH = 3
SHAPE = (2, 4)


# --- inputs -------------------------------------------------------------------------------------------
def _values(rng, shape, dtype, kind):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        low, high = {"shift": (0, 5), "pos": (1, 9)}.get(kind, (-9 if np.issubdtype(dtype, np.signedinteger) else 0, 9))
        return rng.integers(low, high + 1, size=shape).astype(dtype)
    low, high = {"any": (-3, 3), "pos": (0.5, 3), "unit": (-0.9, 0.9), "ge1": (1.1, 3), "order": (0, 3)}[kind]
    real = rng.uniform(low, high, shape)
    if kind == "order":
        real = np.floor(real)
    if np.issubdtype(dtype, np.complexfloating):
        return (real + 1j * rng.uniform(low, high, shape)).astype(dtype)
    return real.astype(dtype)


def _batched(rng, example_shape, dtype, kind, axis):
    """An operand holding BATCH examples along `axis` (one example when `axis` is None)."""
    if axis is None:
        return _values(rng, example_shape, dtype, kind)
    values = _values(rng, (BATCH,) + example_shape, dtype, kind)
    return np.moveaxis(values, 0, axis % (len(example_shape) + 1))


def _example(value, axis, index):
    return value if axis is None else np.take(value, index, axis=axis)


# --- the table: (name, numax function, jax function, argument kinds, dtypes (first: the main one)) --------------
F32, F16, C64, I32, I8, U8, B = np.float32, np.float16, np.complex64, np.int32, np.int8, np.uint8, np.bool_


def _nary(op):
    """A jax.lax n-ary op with rank-0 operands broadcast (numax's lax broadcasts them itself)."""
    return lambda *args: op(*jnp.broadcast_arrays(*args))


def _unary(name, kind="any", dtypes=(F32, F16)):
    return (name, getattr(lax, name), getattr(jlax, name), (kind,), dtypes)


def _binary(name, kinds=("any", "any"), dtypes=(F32, I32)):
    return (name, getattr(lax, name), _nary(getattr(jlax, name)), kinds, dtypes)


UNARY = [
    _unary("neg", dtypes=(F32, F16, C64, I32, I8)), _unary("sign", dtypes=(F32, I32, U8)), _unary("floor"),
    _unary("ceil"), _unary("is_finite"), _unary("exp", dtypes=(F32, F16, C64)), _unary("expm1"),
    _unary("log", "pos", (F32, C64)), _unary("log1p", "pos"), _unary("sqrt", "pos", (F32, F16, C64)),
    _unary("rsqrt", "pos"), _unary("cbrt"), _unary("tanh", dtypes=(F32, C64)), _unary("logistic"),
    _unary("sin", dtypes=(F32, F16, C64)), _unary("cos", dtypes=(F32, C64)), _unary("tan"),
    _unary("asin", "unit"), _unary("acos", "unit"), _unary("atan"), _unary("sinh"), _unary("cosh"), _unary("asinh"),
    _unary("acosh", "ge1"), _unary("atanh", "unit"), _unary("erf"), _unary("erfc"), _unary("erf_inv", "unit"),
    _unary("lgamma", "pos"), _unary("digamma", "pos"), _unary("exp2"), _unary("real", dtypes=(C64,)),
    _unary("imag", dtypes=(C64,)), _unary("abs", dtypes=(F32, F16, C64, I32)), _unary("conj", dtypes=(C64, F32)),
    _unary("bitwise_not", dtypes=(I32, B, U8)), _unary("population_count", dtypes=(I32, U8)),
    _unary("clz", dtypes=(I32, U8)),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
     lambda x: jlax.round(x, jlax.RoundingMethod.TO_NEAREST_EVEN), ("any",), (F32, F16)),
    ("round_afz", lax.round, jlax.round, ("any",), (F32, F16)),
    ("integer_pow3", lambda x: lax.integer_pow(x, 3), lambda x: jlax.integer_pow(x, 3), ("any",), (F32, I32, C64)),
    ("integer_pow-2", lambda x: lax.integer_pow(x, -2), lambda x: jlax.integer_pow(x, -2), ("pos",), (F32,)),
    ("convert_f16", lambda x: lax.convert_element_type(x, np.float16),
     lambda x: jlax.convert_element_type(x, np.float16), ("any",), (F32, I32, B)),
    ("convert_i32", lambda x: lax.convert_element_type(x, np.int32),
     lambda x: jlax.convert_element_type(x, np.int32), ("any",), (F32, B, U8)),
    ("convert_bool", lambda x: lax.convert_element_type(x, np.bool_),
     lambda x: jlax.convert_element_type(x, np.bool_), ("any",), (I32, F32)),
    ("bitcast_same_width", lambda x: lax.bitcast_convert_type(x, np.int32),
     lambda x: jlax.bitcast_convert_type(x, np.int32), ("any",), (F32,)),
    ("bitcast_narrower", lambda x: lax.bitcast_convert_type(x, np.uint8),
     lambda x: jlax.bitcast_convert_type(x, np.uint8), ("any",), (F32, I32)),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), lambda x: jlax.reduce_precision(x, 5, 10),
     ("any",), (F32,)),
]

BINARY = [
    _binary("add", dtypes=(F32, I32, F16, C64, U8)), _binary("sub", dtypes=(F32, I32, C64)),
    _binary("mul", dtypes=(F32, I8, C64)), _binary("div", ("any", "pos"), (F32, I32, C64)),
    _binary("rem", ("any", "pos"), (F32, I32)), _binary("pow", ("pos", "any"), (F32, C64)),
    ("pow_int_exponent", lax.pow, _nary(jlax.pow), ("pos", "shift"), ((F32, I32),)),
    _binary("max", dtypes=(F32, I32, B, C64)), _binary("min", dtypes=(F32, U8, B)), _binary("atan2", dtypes=(F32,)),
    _binary("nextafter", dtypes=(F32,)), _binary("polygamma", ("order", "pos"), (F32,)),
    _binary("bitwise_and", dtypes=(I32, B)), _binary("bitwise_or", dtypes=(I32, B)),
    _binary("bitwise_xor", dtypes=(U8, B)), _binary("shift_left", ("any", "shift"), (I32, U8)),
    _binary("shift_right_arithmetic", ("any", "shift"), (I32, I8)),
    _binary("shift_right_logical", ("any", "shift"), (I32, U8)), _binary("complex", dtypes=(F32,)),
    _binary("eq", dtypes=(F32, I32, B, C64)), _binary("ne", dtypes=(F32, C64)), _binary("lt", dtypes=(F32, I32)),
    _binary("le", dtypes=(F32, U8)), _binary("gt", dtypes=(F32, B)), _binary("ge", dtypes=(F32, F16)),
]

# (in_axes, per-example shape of each operand, out_axes)
UNARY_CONFIGS = [((0,), [SHAPE], 0), ((1,), [SHAPE], 0), ((-1,), [SHAPE], 1), ((0,), [()], 0)]
BINARY_CONFIGS = [
    ((0, 0), [SHAPE, SHAPE], 0), ((1, 1), [SHAPE, SHAPE], 0), ((-1, 0), [SHAPE, SHAPE], 1),
    ((None, 1), [SHAPE, SHAPE], -1), ((2, None), [SHAPE, ()], 2), ((0, 1), [(), SHAPE], 0), ((None, 0), [(), ()], 0),
]


def _dtypes_of(dtype, count):
    return dtype if isinstance(dtype, tuple) else (dtype,) * count


def _config_inputs(rng, kinds, dtype, configs):
    """The operands of every config (a list per config)."""
    dtypes = _dtypes_of(dtype, len(kinds))
    return [[_batched(rng, shape, d, kind, axis) for shape, d, kind, axis in zip(shapes, dtypes, kinds, in_axes)]
            for in_axes, shapes, _ in configs]


def _all_configs(vmap, fn, configs):
    """fn vmapped in every config, as one function of all the configs' operands (flattened)."""
    def all_configs(*flat):
        outs, start = [], 0
        for (in_axes, shapes, out_axes) in configs:
            outs.append(vmap(fn, in_axes=in_axes, out_axes=out_axes)(*flat[start:start + len(shapes)]))
            start += len(shapes)
        return outs

    return all_configs


def _check_configs(rng, numax_fn, jax_fn, kinds, dtype, configs, scale=10.0, per_example=True, expected=None):
    """All `configs` of one primitive against jax.vmap and (when `per_example`) against numax applied to each
    example in turn, stacked. Each side is one jitted program: numax's computes the vmapped configs and the
    per-example results together (one compile instead of one per example shape). `expected`: jax's results
    when a table computed them already."""
    inputs = _config_inputs(rng, kinds, dtype, configs)
    flat = [a for args in inputs for a in args]
    examples = [[[_example(a, ax, i) for a, ax in zip(args, in_axes)] for i in range(BATCH)]
                for (in_axes, _, _), args in zip(configs, inputs)] if per_example else []
    batched = _all_configs(numax.vmap, numax_fn, configs)
    actual, per_example_results = numax.jit(
        lambda flat, examples: (batched(*flat), [[numax_fn(*ex) for ex in config] for config in examples]))(
        flat, examples)
    if expected is None:
        expected = jax.jit(_all_configs(jax.vmap, jax_fn, configs))(*flat)
    for got, want in zip(actual, expected, strict=True):
        assert_close(got, want, scale=scale)
    for (_, _, out_axes), got, results in zip(configs, actual, per_example_results):
        assert_close(got, np.stack([np.asarray(e) for e in results], axis=out_axes), scale=scale)


def _cases(table):
    return [pytest.param(row, dtype, id=f"{row[0]}-{'-'.join(np.dtype(d).name for d in _dtypes_of(dtype, 1))}")
            for row in table for dtype in row[4]]


def _unary_configs(row, dtype):
    return UNARY_CONFIGS if dtype == row[4][0] else UNARY_CONFIGS[2:3]


def _binary_configs(row, dtype):
    # The main dtype gets every layout; other dtypes (and polygamma, slow to compile) a few mixed ones.
    return BINARY_CONFIGS if dtype == row[4][0] and row[0] != "polygamma" else BINARY_CONFIGS[2::3]


TABLES = {"unary": (UNARY, _unary_configs), "binary": (BINARY, _binary_configs)}


@functools.cache
def _expected(table):
    """jax.vmap's results for every (row, dtype) of a table, from one jax.jit program; the operands are those
    the test draws from its `rng` fixture (a fresh default_rng(0))."""
    rows, configs_of = TABLES[table]
    cases = [(row, dtype) for row in rows for dtype in row[4]]
    inputs = [_config_inputs(np.random.default_rng(0), row[3], dtype, configs_of(row, dtype)) for row, dtype in cases]
    return jit_table([(row[0], dtype) for row, dtype in cases],
                     [_all_configs(jax.vmap, row[2], configs_of(row, dtype)) for row, dtype in cases],
                     [[a for args in case_inputs for a in args] for case_inputs in inputs])


def _check_row(table, rng, row, dtype):
    name, numax_fn, jax_fn, kinds, dtypes = row
    _check_configs(rng, numax_fn, jax_fn, kinds, dtype, TABLES[table][1](row, dtype), per_example=dtype == dtypes[0],
                   expected=_expected(table)[name, dtype])


@pytest.mark.parametrize("row,dtype", _cases(UNARY))
def test_unary(rng, row, dtype):
    _check_row("unary", rng, row, dtype)


@pytest.mark.parametrize("row,dtype", _cases(BINARY))
def test_binary(rng, row, dtype):
    _check_row("binary", rng, row, dtype)


# --- select_n and clamp: scalar selectors and bounds, batched and not ---------------------------------------
SELECT_CONFIGS = [
    ((0, 0, 0), [SHAPE, SHAPE, SHAPE], 0), ((1, None, -1), [SHAPE, SHAPE, SHAPE], 0),
    ((None, 0, 1), [SHAPE, SHAPE, SHAPE], 1), ((None, 0, 1), [(), SHAPE, SHAPE], 0),
    ((0, 0, None), [(), SHAPE, SHAPE], 0), ((0, None, None), [(), SHAPE, SHAPE], -1),
    ((0, None, None), [SHAPE, SHAPE, SHAPE], 0), ((0, -1, None), [(), (), ()], 0), ((None, None, 0), [(), (), ()], 0),
]


@pytest.mark.parametrize("dtype", [F32, I32, C64, B])
def test_select(rng, dtype):
    _check_configs(rng, lax.select, jlax.select, ("any", "any", "any"), (B, dtype, dtype), SELECT_CONFIGS)


@pytest.mark.parametrize("dtype", [I32, U8])
def test_select_n_integer_selector(rng, dtype):
    def numax_fn(which, a, b, c):
        return lax.select_n(lax.rem(which, np.asarray(3, dtype)), a, b, c)

    def jax_fn(which, a, b, c):
        return jlax.select_n(jlax.rem(which, np.asarray(3, dtype)), a, b, c)

    configs = [((0, 0, None, 1), [SHAPE] * 4, 0), ((0, None, None, None), [()] + [SHAPE] * 3, 1),
               ((None, 0, 1, -1), [SHAPE] * 4, 0), ((-1, None, 0, None), [SHAPE] * 4, 0)]
    _check_configs(rng, numax_fn, jax_fn, ("pos", "any", "any", "any"), (dtype, F32, F32, F32), configs)


CLAMP_CONFIGS = [
    ((0, 0, 0), [SHAPE, SHAPE, SHAPE], 0), ((None, 1, None), [(), SHAPE, ()], 0),
    ((0, None, None), [(), SHAPE, ()], 0), ((None, None, 0), [(), SHAPE, ()], 1),
    ((0, 1, -1), [(), SHAPE, SHAPE], 0), ((None, -1, 0), [SHAPE, SHAPE, SHAPE], 0),
    ((1, None, 0), [SHAPE, SHAPE, ()], 0), ((0, 0, None), [(), (), ()], 0),
]


@pytest.mark.parametrize("dtype", [F32, I32, F16])
def test_clamp(rng, dtype):
    def numax_fn(low, x, high):
        return lax.clamp(low, x, lax.add(low, high))

    def jax_fn(low, x, high):
        return jlax.clamp(low, x, jnp.add(low, high))  # jnp.add: jlax.add has no rank-0 broadcasting

    kinds = ("unit" if dtype != I32 else "any", "any", "pos")
    _check_configs(rng, numax_fn, jax_fn, kinds, dtype, CLAMP_CONFIGS)


# --- bitcast across widths: the batch dimension stays valid ------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_bitcast_wider_with_batch_anywhere(rng, axis):
    # int8[..., 4] -> int32 removes the last dimension, which must not be the batch one (jax.vmap itself
    # fails when the batch sits last, so the oracle maps over the batch moved to the front).
    x = _batched(rng, (2, 4), I8, "any", axis)
    fn = _bitcast_to_int32
    got = numax.vmap(fn, in_axes=axis)(x)
    want = jax.vmap(lambda v: jlax.bitcast_convert_type(v, np.int32))(np.moveaxis(x, axis, 0))
    assert_close(got, want)
    assert_close(got, np.stack([_bitcast_to_int32_jit(_example(x, axis, i)) for i in range(BATCH)]))
    assert_close(numax.jit(numax.vmap(fn, in_axes=axis, out_axes=1))(x), np.moveaxis(np.asarray(want), 0, 1))


def _bitcast_to_int32(v):
    return lax.bitcast_convert_type(v, np.int32)


_bitcast_to_int32_jit = numax.jit(_bitcast_to_int32)  # one program for every test's examples (all of one shape)


def test_bitcast_narrower_keeps_batch_in_place(rng):
    x = _batched(rng, SHAPE, F32, "any", 1)
    program = numax.make_jaxpr(numax.vmap(lambda v: lax.bitcast_convert_type(v, np.uint16), in_axes=1))(x)
    assert [e.primitive.name for e in program.equations][0] == "bitcast_convert_type"
    got = numax.vmap(lambda v: lax.bitcast_convert_type(v, np.uint16), in_axes=1, out_axes=1)(x)
    assert got.shape == (2, BATCH, 4, 2)
    assert_close(got, jax.vmap(lambda v: jlax.bitcast_convert_type(v, np.uint16), in_axes=1, out_axes=1)(x))


# --- the batched program: one op, batch dimensions moved only when needed ------------------------------------
def _primitive_names(fn, *args):
    return [e.primitive.name for e in numax.make_jaxpr(fn)(*args).equations]


def _before(names, op):
    """The operations run before the first `op` (the moves of batch dimensions it needed)."""
    return names[:names.index(op)]


def test_batch_dimension_moves_only_when_needed(rng):
    x, y = _batched(rng, SHAPE, F32, "any", 1), _batched(rng, SHAPE, F32, "any", 1)
    names = _primitive_names(numax.vmap(lax.sin, in_axes=1, out_axes=1), x)
    assert names.count("sin") == 1 and _before(names, "sin") == []
    names = _primitive_names(numax.vmap(lax.mul, in_axes=(1, 1), out_axes=1), x, y)
    assert names.count("mul") == 1 and _before(names, "mul") == []
    # Different batch positions: one operand moves, then one multiply.
    names = _primitive_names(numax.vmap(lax.mul, in_axes=(1, 0)), x, np.moveaxis(y, 1, 0))
    assert names.count("mul") == 1 and _before(names, "mul") == ["transpose"]
    z = _batched(rng, SHAPE, F32, "any", None)
    names = _primitive_names(numax.vmap(lax.add, in_axes=(1, None), out_axes=1), x, z)
    assert names.count("add") == 1 and _before(names, "add") == ["reshape"]
    p = _batched(rng, (), B, "any", 0)
    names = _primitive_names(numax.vmap(lax.select, in_axes=(0, 1, None)), p, x, z)
    assert names.count("select_n") == 1
    names = _primitive_names(numax.vmap(lax.clamp, in_axes=(None, 1, None), out_axes=1), np.float32(0), x,
                             np.float32(1))
    assert names.count("clamp") == 1 and _before(names, "clamp") == []


# --- rank-0 operands, Python scalars, nesting, jit inside vmap ---------------------------------------------------
def test_python_scalars_and_rank0_arrays(rng):
    x = _batched(rng, SHAPE, F32, "any", 1)

    def fn(v):
        clamped = lax.clamp(-1.0, v, 1.0)
        return lax.add(lax.mul(v, 2.0), np.float32(1.5)), clamped, lax.select(lax.gt(v, 0.0), v, lax.neg(v))

    def jfn(v):
        return v * 2.0 + np.float32(1.5), jlax.clamp(-1.0, v, 1.0), jnp.where(v > 0.0, v, -v)

    # (jax's values from jax.jit programs: eager jax compiles one program per op)
    for got, want in zip(numax.vmap(fn, in_axes=1)(x), jax.jit(jax.vmap(jfn, in_axes=1))(x)):
        assert_close(got, want)
    # Only the selector or a bound is batched: the scalar operands become one per example.
    pred = np.array([True, False, True])
    want = jax.jit(jax.vmap(lambda q: jlax.select(q, 1.0, 2.0)))(pred)
    assert_close(numax.vmap(lambda q: lax.select(q, 1.0, 2.0))(pred), want)
    bounds = np.float32([0.5, 1.5, 3.0])
    assert_close(numax.vmap(lambda b: lax.clamp(b, 1.0, 2.0))(bounds), np.float32([1.0, 1.5, 2.0]))
    # jax.vmap fails here (its clamp rule does not broadcast an unbatched scalar operand); numax follows the
    # per-example definition.
    assert_close(numax.vmap(lambda b: lax.clamp(0.0, 1.0, b))(bounds), np.float32([0.5, 1.0, 1.0]))


NESTED = [
    ("add", lax.add, jlax.add, [((0, None), (1, 0))]),
    ("mul", lax.mul, _nary(jlax.mul), [((0, 1), (None, 1))]),
    ("select", lambda p, a: lax.select(p, a, lax.neg(a)), lambda p, a: jlax.select(p, a, -a),
     [((None, 0), (0, 1))]),
    ("pow", lax.pow, jlax.pow, [((1, 1), (0, -1))]),
]


@pytest.mark.parametrize("name,numax_fn,jax_fn,axes", NESTED, ids=[n[0] for n in NESTED])
def test_nested_vmap(rng, name, numax_fn, jax_fn, axes):
    (inner, outer), = axes
    # Arrays of 3 x 5 examples of 4 elements, laid out to suit the axes (each inner axis counts in the example
    # with the outer axis removed).
    args = []
    for i, (a_in, a_out) in enumerate(zip(inner, outer)):
        shape = (4,)
        value = rng.uniform(0.5, 2, (3, 5) + shape).astype(np.float32)
        if name == "select" and i == 0:
            value = value > 1.2
        if a_in is None:
            value = value[:, 0]
        else:
            value = np.moveaxis(value, 1, a_in % (len(shape) + 1) + 1)
        if a_out is not None:
            value = np.moveaxis(value, 0, a_out % value.ndim)
        else:
            value = value[0]
        args.append(value)
    # Outer-unbatched operands need no outer axis; the layout above already dropped it.
    got = numax.vmap(numax.vmap(numax_fn, in_axes=inner), in_axes=outer)(*args)
    # jax's results for both inner out_axes from one jax.jit program
    want, want_out1 = jax.jit(lambda *a: [jax.vmap(jax.vmap(jax_fn, in_axes=inner, out_axes=o), in_axes=outer)(*a)
                                          for o in (0, 1)])(*args)
    assert_close(got, want, scale=10)
    assert_close(numax.jit(numax.vmap(numax.vmap(numax_fn, in_axes=inner, out_axes=1), in_axes=outer))(*args),
                 want_out1, scale=10)


def test_vmap_of_jit(rng):
    x, y = _batched(rng, SHAPE, F32, "pos", 1), _batched(rng, SHAPE, F32, "any", None)

    def fn(a, b):
        return lax.clamp(0.5, lax.mul(lax.exp(lax.neg(a)), lax.integer_pow(b, 2)), 2.0), lax.lt(a, b)

    def jfn(a, b):
        return jlax.clamp(0.5, jnp.exp(-a) * b ** 2, 2.0), a < b

    got = numax.vmap(numax.jit(fn), in_axes=(1, None), out_axes=(0, 1))(x, y)
    want = jax.jit(jax.vmap(jfn, in_axes=(1, None), out_axes=(0, 1)))(x, y)
    for g, w in zip(got, want):
        assert_close(g, w, scale=10)
    inner_jit = numax.jit(numax.vmap(numax.jit(fn), in_axes=(1, None), out_axes=(0, 1)))(x, y)
    for g, w in zip(inner_jit, want):
        assert_close(g, w, scale=10)


# --- per-example gradients ---------------------------------------------------------------------------------
GRADS = [
    ("sin_poly", lambda m, x: m.sum(m.sin(x) * x ** 2 + m.exp(-x)), "any"),
    ("log_sqrt", lambda m, x: m.sum(m.log(x) * m.sqrt(x) / (1 + x)), "pos"),
    ("tanh_atan2", lambda m, x: m.sum(m.tanh(x * 0.7) + m.arctan2(x, 2.0 + x * x)), "any"),
    ("clip_max", lambda m, x: m.sum(m.clip(x, -1.0, 1.0) * m.maximum(x, 0.3) + m.where(x > 0, x ** 3, -x)), "any"),
]


@pytest.mark.parametrize("name,fn,kind", GRADS, ids=[g[0] for g in GRADS])
def test_per_example_grads(rng, name, fn, kind):
    x = _batched(rng, (5,), F32, kind, 0)
    numax_f, jax_f = functools.partial(fn, mnp), functools.partial(fn, jnp)
    want = jax.jit(jax.vmap(jax.grad(jax_f)))(x)
    assert_close(numax.jit(numax.vmap(numax.grad(numax_f)))(x), want, scale=10)
    assert_close(numax.jit(numax.vmap(numax.grad(numax_f), in_axes=1, out_axes=1))(x.T), want.T, scale=10)
    # The gradient of the summed per-example losses is the same, through the batched program.
    assert_close(numax.jit(numax.grad(lambda v: numax.vmap(numax_f)(v).sum()))(x), want, scale=10)


def test_per_example_grads_two_arguments(rng):
    x, w = _batched(rng, (4,), F32, "pos", 0), _values(rng, (4,), F32, "any")

    def loss(m, v, weights):
        return m.sum((m.tanh(v * weights) - 0.5) ** 2 + m.log1p(v))

    want = jax.jit(jax.vmap(jax.grad(functools.partial(loss, jnp), argnums=(0, 1)), in_axes=(0, None)))(x, w)
    got = numax.jit(numax.vmap(numax.grad(functools.partial(loss, mnp), argnums=(0, 1)), in_axes=(0, None)))(x, w)
    for g, e in zip(got, want):
        assert_close(g, e, scale=10)


# --- hypothesis over shapes and batch positions ---------------------------------------------------------------
@settings(max_examples=8)
@given(st.data())
def test_add_and_select_any_layout(data):
    rank = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    scalar_pred = data.draw(st.booleans())
    pred_rank = 0 if scalar_pred else rank
    axes = [data.draw(st.one_of(st.none(), st.integers(-r - 1, r))) for r in (pred_rank, rank, rank)]
    if all(a is None for a in axes):
        axes[1] = 0
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    pred = _batched(rng, () if scalar_pred else shape, B, "any", axes[0])
    x, y = (_batched(rng, shape, F32, "any", a) for a in axes[1:])
    out_axis = data.draw(st.integers(-rank - 1, rank))

    def fn(p, a, b):
        return lax.select(p, lax.add(a, b), lax.sub(a, b))

    def jfn(p, a, b):
        return jlax.select(p, a + b, a - b)

    got = numax.jit(numax.vmap(fn, in_axes=tuple(axes), out_axes=out_axis))(pred, x, y)
    assert_close(got, jax.jit(jax.vmap(jfn, in_axes=tuple(axes), out_axes=out_axis))(pred, x, y))


def test_every_elementwise_primitive_has_a_batching_rule_and_a_test():
    from numax.core.primitives import Primitive, batching_rules
    from numax.lax import elementwise

    primitives = {v.name for v in vars(elementwise).values() if isinstance(v, Primitive)}
    assert sorted(p for p in primitives if all(r.name != p for r in batching_rules)) == []
    tested = {"select_n", "clamp", "not", "and", "or", "xor", "round", "integer_pow", "convert_element_type",
              "bitcast_convert_type"} | {row[0] for row in UNARY + BINARY}
    assert sorted(primitives - tested) == []
