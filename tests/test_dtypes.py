"""Dtypes and type promotion against jax: the full promotion table (strong, weak and Python scalar
operands, with x64 off and on), canonicalization, Python scalar dtypes, int overflow, finfo/iinfo."""

import contextlib
import itertools

import ml_dtypes
import numpy as np
import pytest
from harness import jax, jnp
from jax._src.lax.lax import _convert_element_type as jax_convert_element_type
from numax.core import dtypes

import numax
import numax.numpy as xnp
from numax import lax as xlax

DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "bfloat16", "float16", "float32", "float64", "complex64", "complex128"]
PYTHON_SCALARS = {"int": 3, "float": 2.5, "complex": 1 + 2j, "bool": True}
SIXTY_FOUR_BIT = {"int64", "uint64", "float64", "complex128"}


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@contextlib.contextmanager
def x64_mode(enabled):
    """Sets numax's and jax's x64 flags together, restoring both afterwards."""
    old_numax, old_jax = numax.config.enable_x64, jax.config.jax_enable_x64
    numax.config.update("numax_enable_x64", enabled)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        numax.config.update("numax_enable_x64", old_numax)
        jax.config.update("jax_enable_x64", old_jax)


# An operand kind is ("strong", dtype name), ("weak", dtype name) or ("python", scalar type name).
def operand_kinds(x64):
    kinds = [("strong", name) for name in DTYPE_NAMES]
    # Weakly typed arrays exist only for canonical dtypes (jax's internal converter would make a uint64
    # array even with x64 off, which no public path can).
    kinds += [("weak", name) for name in DTYPE_NAMES if name != "bool" and (x64 or name not in SIXTY_FOUR_BIT)]
    kinds += [("python", name) for name in PYTHON_SCALARS]
    return kinds


def kind_id(kind):
    return f"{kind[0]}-{kind[1]}"


def make_operand(kind, library):
    """A value of this kind for numax or jax (arrays of shape (2,), values small enough for every dtype)."""
    flavour, name = kind
    if flavour == "python":
        return PYTHON_SCALARS[name]
    host = np.ones((2,), np_dtype(name))
    if library == "jax":
        if flavour == "weak":
            return jax_convert_element_type(host, np_dtype(name), weak_type=True)
        return jnp.asarray(host)
    array = xnp.asarray(host)
    if flavour == "weak":
        return xlax.convert_element_type(array, array.dtype, weak_type=True)
    return array


def outcome(thunk):
    """(dtype, weak_type) of the result, or the name of the exception raised."""
    try:
        result = thunk()
    except (TypeError, ValueError, OverflowError) as error:
        return type(error).__name__
    return np.dtype(result.dtype), bool(result.weak_type)


def jax_add_outcome(a, b):
    x, y = make_operand(a, "jax"), make_operand(b, "jax")
    return outcome(lambda: jax.eval_shape(jnp.add, x, y))


def numax_add_outcome(a, b):
    x, y = make_operand(a, "numax"), make_operand(b, "numax")
    if a[0] == "python" and b[0] == "python":
        return outcome(lambda: xnp.add(x, y))
    return outcome(lambda: x + y)


@pytest.mark.parametrize("x64,left", [(x64, left) for x64 in (False, True) for left in operand_kinds(x64)],
                         ids=lambda v: kind_id(v) if isinstance(v, tuple) else ("x64" if v else "x32"))
def test_add_promotion_matches_jax(x64, left):
    with x64_mode(x64):
        mismatches = []
        for right in operand_kinds(x64):
            expected = jax_add_outcome(left, right)
            actual = numax_add_outcome(left, right)
            if actual != expected:
                mismatches.append((kind_id(right), actual, expected))
        assert not mismatches, f"{kind_id(left)} + ...: (right, numax, jax): {mismatches}"


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_result_type_pairs_and_triples_match_jax(x64):
    with x64_mode(x64):
        kinds = operand_kinds(x64)
        operands = {k: (make_operand(k, "numax"), make_operand(k, "jax")) for k in kinds}
        mismatches = []
        for group in itertools.chain(itertools.product(kinds, kinds),
                                     itertools.combinations(kinds, 3)):
            numax_args = [operands[k][0] for k in group]
            jax_args = [operands[k][1] for k in group]
            actual = xnp.result_type(*numax_args)
            expected = jnp.result_type(*jax_args)
            if actual != expected:
                mismatches.append(([kind_id(k) for k in group], actual, expected))
        assert not mismatches, mismatches[:20]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_result_type_of_dtypes_and_types_matches_jax(x64):
    specifiers = [np_dtype(n) for n in DTYPE_NAMES] + [int, float, complex, bool, "float32", "int8", np.float64,
                                                        np.int64, np.uint8, ml_dtypes.bfloat16, None]
    with x64_mode(x64):
        for a, b in itertools.product(specifiers, specifiers):
            assert xnp.result_type(a, b) == jnp.result_type(a, b), (a, b)
        for a in specifiers:
            assert xnp.result_type(a) == jnp.result_type(a), a


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_promote_types_matches_jax(x64):
    specifiers = [np_dtype(n) for n in DTYPE_NAMES] + [int, float, complex]
    with x64_mode(x64):
        for a, b in itertools.product(specifiers, specifiers):
            if not isinstance(a, np.dtype) and not isinstance(b, np.dtype):
                continue  # jax does not define promotion between two Python types
            expected = jnp.promote_types(a, b)
            actual = xnp.promote_types(a, b)
            assert isinstance(actual, np.dtype) and actual == expected, (a, b, actual, expected)


def test_promote_types_is_symmetric_and_idempotent():
    for a, b in itertools.product(dtypes.all_dtypes, dtypes.all_dtypes):
        assert xnp.promote_types(a, b) == xnp.promote_types(b, a)
    for a in dtypes.all_dtypes:
        assert xnp.promote_types(a, a) == a


def test_promote_types_rejects_unsupported_dtypes():
    with pytest.raises(TypeError, match="does not support the dtype"):
        xnp.promote_types(np.float32, np.dtype("U3"))
    with pytest.raises(TypeError, match="does not take part in type promotion"):
        xnp.promote_types(np.float32, dtypes.float0)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_eager_result_values_match_jax(x64):
    """Not only the type: the promoted value of a mixed addition is right."""
    with x64_mode(x64):
        for a, b in [(("strong", "int8"), ("strong", "uint8")), (("strong", "int32"), ("python", "float")),
                     (("strong", "bfloat16"), ("strong", "float16")), (("strong", "uint32"), ("strong", "int32")),
                     (("strong", "float32"), ("python", "complex"))]:
            actual = make_operand(a, "numax") + make_operand(b, "numax")
            expected = make_operand(a, "jax") + make_operand(b, "jax")
            np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


# --- canonicalization and Python scalars ---------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_canonicalize_dtype(name):
    dtype = np_dtype(name)
    with x64_mode(False):
        expected = {"int64": np.int32, "uint64": np.uint32, "float64": np.float32, "complex128": np.complex64}
        assert dtypes.canonicalize_dtype(dtype) == np.dtype(expected.get(name, dtype))
        assert xnp.asarray(np.zeros(2, dtype)).dtype == jnp.asarray(np.zeros(2, dtype)).dtype
    with x64_mode(True):
        assert dtypes.canonicalize_dtype(dtype) == dtype
        assert xnp.asarray(np.zeros(2, dtype)).dtype == dtype


@pytest.mark.parametrize("bad", [np.dtype("U4"), np.dtype(object), np.dtype("datetime64[s]"), np.dtype("S2")])
def test_canonicalize_rejects_unsupported(bad):
    with pytest.raises(TypeError, match="does not support the dtype"):
        dtypes.canonicalize_dtype(bad)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_python_scalar_dtype(x64):
    with x64_mode(x64):
        for value in (True, 7, -2.5, 1j):
            expected = jnp.asarray(value).dtype
            assert dtypes.python_scalar_dtype(value) == expected, value
            assert xnp.asarray(value).dtype == expected
            assert xnp.asarray(value).weak_type == jax.eval_shape(lambda: jnp.asarray(value)).weak_type
            assert dtypes.is_weak_scalar(value) == (type(value) is not bool)
        assert dtypes.python_scalar_dtype(False) == np.bool_
    with pytest.raises(TypeError, match="not a Python scalar"):
        dtypes.python_scalar_dtype(np.float32(1))


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_dtype_of_values_matches_jax(x64):
    with x64_mode(x64):
        for value in (1, 1.5, 2j, True, np.float64(1), np.int16(1), np.arange(3), np.ones(2, np.float16),
                      np.float32, "uint8", np.dtype("float64")):
            assert dtypes.dtype(value) == jax.dtypes.canonicalize_dtype(jnp.result_type(value)), value


def test_default_dtypes_follow_x64():
    with x64_mode(False):
        assert (xnp.zeros(2).dtype, xnp.arange(3).dtype) == (np.float32, np.int32)
        assert dtypes.default_complex_dtype() == np.complex64 and dtypes.default_uint_dtype() == np.uint32
    with x64_mode(True):
        assert (xnp.zeros(2).dtype, xnp.arange(3).dtype) == (np.float64, np.int64)
        assert dtypes.default_complex_dtype() == np.complex128 and dtypes.default_uint_dtype() == np.uint64


# --- integer overflow --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**40])
def test_python_int_too_large_for_int32(value):
    with x64_mode(False):
        with pytest.raises(OverflowError, match=f"Python int {value} too large to convert to int32"):
            xnp.asarray(value)
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            numax.jit(lambda x: x)(value)  # a jit argument
        identity = numax.jit(lambda x: x)
        assert int(identity(5)) == 5
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            identity(value)  # the same signature as the cached call: checked all the same
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            numax.core.avals.get_aval(value)
        with pytest.raises(OverflowError):
            jnp.asarray(value)  # the oracle agrees that this is an error
    with x64_mode(True):
        assert int(xnp.asarray(value)) == value
        assert xnp.asarray(value).dtype == np.int64
        assert int(numax.jit(lambda x: x + 1)(value)) == value + 1


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1])
def test_python_int_too_large_for_int32_operand(value):
    with x64_mode(False):
        with pytest.raises(OverflowError):
            jnp.arange(3) + value  # the oracle raises here
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            xnp.arange(3) + value


def test_python_int_limits_of_int32_fit():
    with x64_mode(False):
        assert int(xnp.asarray(2**31 - 1)) == 2**31 - 1
        assert int(xnp.asarray(-(2**31))) == -(2**31)
        assert int(numax.jit(lambda x: x)(2**31 - 1)) == 2**31 - 1


@pytest.mark.parametrize("name,value", [("int8", 200), ("uint8", 256), ("uint8", -1), ("int16", 40000)])
def test_python_int_wraps_into_small_int_operand_like_jax(name, value):
    """A Python int that fits int32 but not the other operand's small type wraps, as in JAX."""
    result = xnp.ones(3, np_dtype(name)) + value
    expected = jnp.ones(3, np_dtype(name)) + value
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(result), np.asarray(expected))


def test_python_int_fitting_small_int_operand_keeps_dtype():
    x = xnp.ones(3, np.int8)
    y = x + 100
    assert y.dtype == np.int8 and not y.weak_type
    np.testing.assert_array_equal(np.asarray(y), np.full(3, 101, np.int8))


# --- finfo / iinfo ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bfloat16", "float16", "float32", "float64", "complex64", "complex128"])
def test_finfo_matches_jax(name):
    dtype = np_dtype(name)
    mine, theirs = xnp.finfo(dtype), jnp.finfo(dtype)
    for attribute in ("bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal", "resolution",
                      "nmant", "nexp", "maxexp", "minexp", "precision", "machep", "negep", "iexp"):
        assert getattr(mine, attribute) == getattr(theirs, attribute), attribute
    assert mine.dtype == theirs.dtype
    assert xnp.finfo(dtype).dtype == np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else mine.dtype)


def test_finfo_bfloat16_values():
    info = xnp.finfo(xnp.bfloat16)
    assert info.bits == 16 and info.nmant == 7
    assert float(info.eps) == 2.0**-7 and float(info.max) == 3.3895313892515355e38
    assert info.dtype == dtypes.bfloat16


def test_finfo_of_array_and_type():
    assert xnp.finfo(xnp.ones(2, xnp.float16)).bits == 16
    assert xnp.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert xnp.finfo("bfloat16").bits == 16


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_iinfo_matches_jax(name):
    mine, theirs = xnp.iinfo(np_dtype(name)), jnp.iinfo(np_dtype(name))
    assert (mine.min, mine.max, mine.bits, mine.dtype) == (theirs.min, theirs.max, theirs.bits, theirs.dtype)
    assert xnp.iinfo(xnp.ones(2, np_dtype(name))).bits == theirs.bits or name in SIXTY_FOUR_BIT


@pytest.mark.parametrize("bad", [np.float32, np.bool_])
def test_iinfo_rejects_non_integers(bad):
    with pytest.raises(ValueError):
        xnp.iinfo(bad)


def test_finfo_rejects_integers():
    with pytest.raises(ValueError):
        xnp.finfo(np.int32)


# --- predicates --------------------------------------------------------------------------------------------
def test_issubdtype_knows_bfloat16():
    assert xnp.issubdtype(xnp.bfloat16, xnp.floating)
    assert xnp.issubdtype(xnp.bfloat16, xnp.inexact)
    assert not xnp.issubdtype(xnp.bfloat16, xnp.integer)
    for name in DTYPE_NAMES:
        for category in (np.floating, np.integer, np.complexfloating, np.number, np.signedinteger, np.bool_):
            assert xnp.issubdtype(np_dtype(name), category) == jnp.issubdtype(np_dtype(name), category)


def test_short_names():
    assert [dtypes.short_name(np_dtype(n)) for n in DTYPE_NAMES] == [
        "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bf16", "f16", "f32", "f64", "c64", "c128"]


def test_config_flags():
    assert numax.config.jax_enable_x64 == numax.config.numax_enable_x64 == numax.config.enable_x64
    with x64_mode(True):
        assert numax.config.read("jax_enable_x64") is True and numax.config.jax_enable_x64 is True
    with pytest.raises(AttributeError, match="unknown numax config option 'not_a_flag'"):
        numax.config.update("not_a_flag", True)
    with pytest.raises(AttributeError, match="unknown numax config option"):
        numax.config.not_a_flag  # noqa: B018
    seen = []
    listener = lambda name, value: seen.append((name, value))  # noqa: E731
    numax.config.on_change(listener)
    try:
        numax.config.update("jax_log_compiles", numax.config.log_compiles)
        assert seen == [("log_compiles", numax.config.log_compiles)]
    finally:
        numax.config._listeners.remove(listener)
