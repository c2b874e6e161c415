"""The user-facing error contract: which exception a user mistake raises and what its message says."""

import inspect
import re

import numpy as np
import pytest

import numax
import numax.numpy as xnp
from numax import lax

HERE = re.escape(__file__)


def _line_of(marker):
    """The line number in this file of the line that contains `marker` (a comment) and code."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    found = [i + 1 for i, line in enumerate(lines) if marker in line and "_line_of(" not in line]
    assert len(found) == 1, (marker, found)
    return found[0]


def test_errors_module_exposes_the_classes():
    errors = numax.errors
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.TracerIntegerConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.ConcretizationTypeError, TypeError)
    assert issubclass(errors.TracerArrayConversionError, TypeError)
    assert numax.ConcretizationTypeError is errors.ConcretizationTypeError
    assert issubclass(errors.UnexpectedTracerError, Exception)


# --- concretization --------------------------------------------------------------------------------
def _branchy(x):
    if x.sum() > 0:  # marker: python-if
        return x
    return -x


def test_python_if_on_a_tracer_names_the_line_and_the_fixes():
    with pytest.raises(numax.errors.ConcretizationTypeError) as info:
        numax.jit(_branchy)(xnp.arange(3.0))
    assert isinstance(info.value, numax.errors.TracerBoolConversionError)
    message = str(info.value)
    assert re.search(rf"at {HERE}:{_line_of('marker: python-if')} \(_branchy\)", message), message
    assert "static_argnums" in message and "lax.cond" in message
    assert "truth value of a traced array" in message and "bool[]" in message


def test_python_if_on_a_static_argument_works():
    f = numax.jit(lambda x, flag: x if flag > 0 else -x, static_argnums=1)
    np.testing.assert_array_equal(np.asarray(f(xnp.arange(3.0), -1)), -np.arange(3.0, dtype=np.float32))


def test_while_and_boolean_operators_on_tracers():
    def loop(x):
        while x < 3:  # marker: while
            x = x + 1
        return x

    with pytest.raises(numax.errors.TracerBoolConversionError, match=rf"{HERE}:{_line_of('marker: while')} \(loop\)"):
        numax.jit(loop)(np.int32(0))
    with pytest.raises(numax.errors.TracerBoolConversionError):
        numax.jit(lambda x: (x > 0) and x)(np.int32(1))


def test_int_of_a_tracer():
    def f(x):
        return int(x[0])  # marker: int

    with pytest.raises(numax.errors.TracerIntegerConversionError) as info:
        numax.jit(f)(xnp.arange(3.0))
    message = str(info.value)
    assert f"{__file__}:{_line_of('marker: int')} (f)" in message
    assert "int() of a traced array" in message and "f32[]" in message and "static_argnums" in message


def test_tracer_index_in_range_and_slices():
    def f(n):
        return xnp.zeros(3) + len(range(n))  # marker: range

    with pytest.raises(numax.errors.TracerIntegerConversionError) as info:
        numax.jit(f)(np.int32(2))
    assert f"{__file__}:{_line_of('marker: range')} (f)" in str(info.value)
    assert "used as a Python index" in str(info.value)
    with pytest.raises(numax.errors.ConcretizationTypeError, match="i32"):
        numax.jit(lambda n: list(range(10))[:n])(np.int32(2))


def test_float_of_a_tracer():
    with pytest.raises(numax.errors.ConcretizationTypeError, match=r"float\(\) of a traced array"):
        numax.jit(lambda x: float(x))(np.float32(1))


def test_numpy_asarray_of_a_tracer():
    def f(x):
        return np.asarray(x)  # marker: asarray

    with pytest.raises(numax.errors.TracerArrayConversionError) as info:
        numax.jit(f)(xnp.arange(3.0))
    message = str(info.value)
    assert f"{__file__}:{_line_of('marker: asarray')} (f)" in message
    assert "f32[3]" in message and "numax.numpy" in message and "pure_callback" in message
    with pytest.raises(numax.errors.TracerArrayConversionError):
        numax.jit(lambda x: np.sin(x))(xnp.arange(3.0))


def test_concrete_values_outside_jit_convert_fine():
    x = xnp.arange(3.0)
    assert int(x[1]) == 1 and float(x[2]) == 2.0 and bool(x[1] > 0)
    assert list(range(xnp.asarray(3))) == [0, 1, 2]
    np.testing.assert_array_equal(np.asarray(x), np.arange(3.0, dtype=np.float32))


# --- shape and dtype errors of lax ops ---------------------------------------------------------------
LAX_ERRORS = [
    (lambda: lax.add(xnp.ones(3), xnp.ones(4)),
     r"add got incompatible shapes for broadcasting: float32\[3\], float32\[4\]"),
    (lambda: lax.mul(xnp.ones((2, 3)), xnp.ones(3)),
     r"mul requires arguments of equal rank .* float32\[2, 3\], float32\[3\]"),
    (lambda: lax.add(xnp.ones(3), xnp.ones(3, dtype=np.int32)),
     r"add requires arguments of the same dtype, got float32\[3\], int32\[3\]"),
    (lambda: lax.sin(xnp.ones(3, dtype=np.int32)), r"sin does not accept dtype int32; accepted: .*floating"),
    (lambda: lax.dot_general(xnp.ones((2, 3)), xnp.ones((4, 5)), (((1,), (0,)), ((), ()))),
     r"dot_general contracting dimensions must have equal sizes, got lhs shape \(2, 3\) dim 1 and rhs shape \(4, 5\)"),
    (lambda: lax.dot_general(xnp.ones((2, 3)), xnp.ones((3, 2), dtype=np.int32), (((1,), (0,)), ((), ()))),
     r"dot_general requires operands of the same dtype, got float32\[2, 3\], int32\[3, 2\]"),
    (lambda: lax.reshape(xnp.ones(3), (2, 2)), r"reshape .*\(2, 2\).*\(3,\)"),
    (lambda: lax.reduce_sum(xnp.ones((2, 3)), (2,)), r"2 is out of bounds for an array of rank 2"),
]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("fun, match", LAX_ERRORS, ids=[m.split(" ")[0] for _, m in LAX_ERRORS])
def test_lax_shape_and_dtype_errors(fun, match, mode):
    with pytest.raises(TypeError if "out of bounds" not in match else ValueError, match=match):
        if mode == "eager":
            fun()
        else:
            numax.jit(fun)()


def test_numpy_level_broadcast_error():
    # As jax: operands of one rank reach the lax op, which rejects the shapes (a TypeError naming it); operands of
    # different ranks fail numpy-style broadcasting first (a ValueError).
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: float32\[3\], float32\[4\]"):
        xnp.add(xnp.ones(3), xnp.ones(4))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(2, 3\), \(4,\)\]"):
        xnp.ones((2, 3)) * xnp.ones(4)


# --- jit argument errors -------------------------------------------------------------------------------
def test_unhashable_static_argument():
    f = numax.jit(lambda x, n: x * len(n), static_argnums=1)
    with pytest.raises(ValueError, match=r"non-hashable static argument at position 1: list \[1, 2\].*use a tuple"):
        f(xnp.ones(2), [1, 2])
    assert float(f(xnp.ones(2), (1, 2))[0]) == 2.0


def test_unhashable_static_argument_by_keyword():
    g = numax.jit(lambda x, n: x * len(n), static_argnames="n")
    assert float(g(xnp.ones(2), n=(1, 2))[0]) == 2.0
    with pytest.raises(ValueError, match=r"non-hashable static argument named 'n': dict"):
        g(xnp.ones(2), n={"a": 1})


def test_static_argnums_left_to_default():
    f = numax.jit(lambda x, n=2: x * n, static_argnums=1)
    assert float(f(xnp.ones(2))[0]) == 2.0


def test_non_array_argument():
    with pytest.raises(TypeError, match="str is not a valid numax type"):
        numax.jit(lambda x: x + 1)("abc")


def test_wrong_number_of_arguments_and_wrong_structure():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        numax.jit(lambda a, b: a + b)(xnp.ones(2))
    f = numax.jit(lambda p: p["a"] + p["b"])
    with pytest.raises(KeyError, match="'b'"):
        f({"a": xnp.ones(2)})
    assert float(f({"a": xnp.ones(2), "b": xnp.ones(2)})[0]) == 2.0


def test_compiled_rejects_wrong_shapes():
    compiled = numax.jit(lambda p: p[0] + p[1]).lower((xnp.ones(3), xnp.ones(3))).compile()
    np.testing.assert_array_equal(np.asarray(compiled((xnp.ones(3), xnp.ones(3)))), np.full(3, 2, np.float32))
    with pytest.raises(TypeError, match=r"args\[0\]\[1\] compiled with f32\[3\] and called with f32\[4\]"):
        compiled((xnp.ones(3), xnp.ones(4)))


@pytest.mark.parametrize("bad", ["list", "too_few", "too_many"])
def test_compiled_rejects_wrong_structure(bad):
    compiled = numax.jit(lambda p: p[0] + p[1]).lower((xnp.ones(3), xnp.ones(3))).compile()
    args = {"list": [xnp.ones(3), xnp.ones(3)], "too_few": (xnp.ones(3),),
            "too_many": (xnp.ones(3), xnp.ones(3), xnp.ones(3))}[bad]
    with pytest.raises(TypeError, match="structure"):
        compiled(args)


def test_escaped_tracer():
    leaked = []

    @numax.jit
    def f(x):
        leaked.append(x)
        return x

    f(xnp.ones(2))
    with pytest.raises(numax.errors.UnexpectedTracerError, match="already finished"):
        numax.jit(lambda y: y + leaked[0])(xnp.ones(2))
