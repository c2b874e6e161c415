"""The corners of JAX's shape-polymorphism page (docs/export/shape_poly.md) and the cases of jax's
tests/export_test.py that meet them, run on numax and on jax (the oracle) by the same test body: dimension
variables that appear only inside expressions (`b + 15`, `2*d`: solved from the linear dimension), symbolic
slice bounds, `lax.top_k` with a symbolic `k`, and the errors for variables that the argument shapes do not give
(jax's UnexpectedDimVar) or cannot solve (ValueError)."""

import re
import types

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import export as jax_export

import numax
import numax.numpy as jnp
from numax import export

LIBS = {
    "jax": types.SimpleNamespace(jit=jax.jit, np=jjnp, lax=jax.lax, export=jax_export, Struct=jax.ShapeDtypeStruct),
    "numax": types.SimpleNamespace(jit=numax.jit, np=jnp, lax=numax.lax, export=export, Struct=numax.ShapeDtypeStruct),
}


@pytest.fixture(params=sorted(LIBS))
def lib(request):
    return LIBS[request.param]


def _export(lib, fun, *specs):
    """Exports, serializes and deserializes (as jax's tests do): the variables are solved in the module."""
    exp = lib.export.export(lib.jit(fun))(*specs)
    return lib.export.deserialize(exp.serialize())


def _struct(lib, spec, dtype=np.float32, **kwargs):
    return lib.Struct(lib.export.symbolic_shape(spec, **kwargs), dtype)


# --- variables that appear only inside expressions -------------------------------------------------------------

def test_a_variable_solved_from_a_sum_slices_as_jax(lib):
    exp = _export(lib, lambda x: x[0:16], _struct(lib, "b + 15", np.int32))
    assert str(exp.in_avals[0].shape) == "(b + 15,)" and exp.out_avals[0].shape == (16,)
    for size in (16, 23):
        np.testing.assert_array_equal(exp.call(np.arange(size, dtype=np.int32)), np.arange(16))


def test_a_variable_solved_from_a_multiple_and_its_remainder_check(lib):
    exp = _export(lib, lambda x: x * x.shape[2], _struct(lib, "b, b, 2*d", np.int32))
    x = np.arange(36, dtype=np.int32).reshape(3, 3, 4)
    np.testing.assert_array_equal(exp.call(x), x * 4)
    with pytest.raises(ValueError, match=re.escape("Division had remainder 1 when computing the value of 'd'")):
        exp.call(np.ones((3, 3, 5), dtype=np.int32))


@pytest.mark.parametrize("poly_spec, arg_shape, expect_error", [  # jax's test_poly_shape_checks
    ("3,4,6*a", (3, 4, 12), None),
    ("3,4,a+1", (3, 4, 1), re.escape("Expected value >= 1 for dimension variable 'a'. Using the following "
                                     "polymorphic shapes specifications: args[0].shape = (3, 4, a + 1). Obtained "
                                     "dimension variables: 'a' = 0")),
    ("3,4,6*a", (3, 4, 13), re.escape("Division had remainder 1 when computing the value of 'a'")),
])
def test_poly_shape_checks_of_expressions(lib, poly_spec, arg_shape, expect_error):
    def f(x):
        return lib.np.reshape(x, (-1, x.shape[1]))

    exp = _export(lib, f, _struct(lib, poly_spec))
    arg = np.arange(np.prod(arg_shape), dtype=np.float32).reshape(arg_shape)
    if expect_error:
        with pytest.raises(ValueError, match=expect_error):
            exp.call(arg)
    else:
        np.testing.assert_array_equal(exp.call(arg), arg.reshape(-1, 4))


# jax's test_poly_shape_checks_nested: `inner` exported for inner_spec, called (and also traced) inside `outer`
# exported for outer_spec, then run on f32[3, 4, 12]; errors when exporting `outer` or when running it.
@pytest.mark.parametrize("inner_spec, outer_spec, export_error, run_error", [
    ("3,a,a+b", "3,4,12", None, None),
    ("3,4,3*a", "3,4,12", None, None),
    ("3,4,5*a", "3,4,12", "Division had remainder 2 when computing the value of 'a'", None),
    ("3,4,12+a", "3,4,12", "Expected value >= 1 for dimension variable 'a'", None),
    ("3,4,3*a", "3,4,6*c", None, None),
    ("3,a,a+8", "3,c+2,c+10", None, None),  # reshape divides 3*(c + 2)*(c + 10) by c + 2
    ("3,a,a+b", "3,4,c", "Expected value >= 1 for dimension variable 'b'", None),
    ("3,4,5*a", "3,4,c", "Division had remainder mod(c, 5) when computing the value of 'a'", None),
    ("3,a,a+b", "3,c,c", "Expected value >= 1 for dimension variable 'b'", None),
    ("3,4,5*a", "3,4,25*c", None, "Division had remainder 12 when computing the value of 'c'"),
    ("3,a,b", "3,c+4,12", None, "Expected value >= 1 for dimension variable 'c'"),
    ("3,a,a", "3,a,a", None, "Found inconsistency between dimension size args[0].shape[2] (= 12) and the "
                             "specification 'a' (= 4)"),
])
def test_poly_shape_checks_nested_with_expressions(lib, inner_spec, outer_spec, export_error, run_error):
    def inner(x):
        return lib.np.reshape(x, (-1, x.shape[1]))

    inner_exp = _export(lib, inner, _struct(lib, inner_spec))

    def outer(x):
        return inner_exp.call(x) + inner(x)

    if export_error:
        with pytest.raises(ValueError, match=re.escape(export_error)):
            _export(lib, outer, _struct(lib, outer_spec))
        return
    outer_exp = _export(lib, outer, _struct(lib, outer_spec))
    arg = np.arange(3 * 4 * 12, dtype=np.float32).reshape(3, 4, 12)
    if run_error:
        with pytest.raises(ValueError, match=re.escape(run_error)):
            outer_exp.call(arg)
        return
    np.testing.assert_array_equal(outer_exp.call(arg), 2 * arg.reshape(-1, 4))


# jax's test_shape_constraints_errors (the specification's text left out of the match: jax orders its terms
# otherwise)
@pytest.mark.parametrize("shape, spec, expect_error", [
    ((8, 2, 9), "(a + 2*b, a, a + b + c)", None),
    ((2, 2, 6), "(a + 2*b, a, a + b + c)", r"Expected value >= 1 for dimension variable 'b'\. .*'a' = 2 from "
                                           r"specification 'a' for dimension args\[0\]\.shape\[1\] \(= 2\), 'b' = 0"),
    ((3, 2, 6), "(a + 2*b, a, a + b + c)", r"Division had remainder 1 when computing the value of 'b'"),
    ((8, 2, 6), "(a + 2*b, a, a + b)", r"Found inconsistency between dimension size args\[0\]\.shape\[0\] \(= 8\) "
                                       r"and the specification '(a \+ 2\*b|2\*b \+ a)' \(= 10\)"),
    ((7, 2, 36), "(2 * a + b, a, c * c)", r"Cannot solve for values of dimension variables \{'c'\}\. We can only "
                                          r"solve linear uni-variate constraints\..*Unprocessed specifications: "
                                          r"'c\^2' for dimension size args\[0\]\.shape\[2\]"),
])
def test_shape_constraints_errors(lib, shape, spec, expect_error):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    if expect_error is None:
        assert float(_export(lib, lambda x: 0., _struct(lib, spec)).call(x)) == 0.
        return
    with pytest.raises(ValueError, match=expect_error):
        _export(lib, lambda x: 0., _struct(lib, spec)).call(x)


# jax's shape_poly_test test_non_trivial_polynomials_spec: the variables solved from f32[16, 24, 32]
@pytest.mark.parametrize("spec", ["b1+6,b1+14,b2", "2*b1,4*b2,b1+b2+18", "b1+2*b2,4*b2,b1*b1+16"])
def test_non_trivial_polynomials_spec(lib, spec):
    exp = _export(lib, lambda x: 2 * x.shape[0] + 3 * x.shape[1] + 4 * x.shape[2], _struct(lib, spec))
    assert int(exp.call(np.zeros((16, 24, 32), np.float32))) == 2 * 16 + 3 * 24 + 4 * 32


# jax's shape_poly_test test_arg_avals_errors (the shape checks of an identity export)
@pytest.mark.parametrize("arg_shape, spec, expect_error", [
    ((4, 36, 3), "b * b, b * d * d, d", "Cannot solve for values of dimension variables {'b'}"),
    ((5, 36), "3 * b, ...", "Division had remainder 2 when computing the value of 'b'"),
    ((10, 3), "3 * b + 10, ...", "Expected value >= 1 for dimension variable 'b'"),
    ((7, 3), "3 * b + 10, ...", "Expected value >= 1 for dimension variable 'b'"),
    ((2, 3), "(a, a)", "Found inconsistency between dimension size args[0].shape[1] (= 3) and the specification "
                       "'a' (= 2)"),
])
def test_arg_avals_errors(lib, arg_shape, spec, expect_error):
    x = np.zeros(arg_shape, np.float32)
    with pytest.raises(ValueError, match=re.escape(expect_error)):
        struct, = lib.export.symbolic_args_specs((x,), spec)
        _export(lib, lambda x: x, struct).call(x)


def test_an_unsolvable_variable_raises_value_error_at_export(lib):
    a, = lib.export.symbolic_shape("a")
    with pytest.raises(ValueError, match=re.escape(
            "Cannot solve for values of dimension variables {'a'}. We can only solve linear uni-variate constraints. "
            "Using the following polymorphic shapes specifications: args[0].shape = (a^2,). Unprocessed "
            "specifications: 'a^2' for dimension size args[0].shape[0].")):
        lib.export.export(lib.jit(lambda x: x.shape[0]))(lib.Struct((a * a,), np.int32))


def test_exact_polynomial_division(lib):
    a, b = lib.export.symbolic_shape("a, b")
    assert (a * a - b * b) // (a - b) == a + b
    assert (3 * (b + 2) * (b + 10)) // (b + 2) == 3 * b + 30
    assert (a * b + a) // a == b + 1
    assert str((2 * a + 3) // (a + 1)) == "floordiv(2*a + 3, a + 1)"  # not exact: left symbolic


# --- variables that the argument shapes do not give --------------------------------------------------------------

def _my_top_k(lib):
    return lambda k, x: lib.lax.top_k(x, k)[0]


def test_a_static_symbolic_k_is_an_unexpected_dimension_variable(lib):
    k, = lib.export.symbolic_shape("k", constraints=["k <= 10"])
    x = np.arange(40, dtype=np.int32).reshape(4, 10)
    with pytest.raises(Exception, match=re.escape(
            "Encountered dimension variable 'k' that is not appearing in the shapes of the function arguments.\n"
            "The following dimension variables are appearing in the shapes of the function arguments: [].")) as raised:
        lib.export.export(lib.jit(_my_top_k(lib), static_argnums=0))(k, x)
    assert type(raised.value).__name__ == "UnexpectedDimVar"


@pytest.mark.parametrize("case", ["zeros", "value", "reduced", "in_cond"])
def test_static_symbolic_dimensions_inside_the_program_are_unexpected(lib, case):
    # A symbolic `k` from a static argument, in a result shape, as a value, in a shape the program reduces away,
    # and inside a branch: jax raises when exporting each of them.
    fun = {"zeros": lambda k, x: lib.np.zeros((k,)), "value": lambda k, x: x + k,
           "reduced": lambda k, x: lib.np.ones((k, 3)).sum(0),
           "in_cond": lambda k, x: lib.lax.cond(x[0] > 0, lambda: lib.np.ones((k, 3)).sum(0), lambda: x)}[case]
    k, = lib.export.symbolic_shape("k")
    with pytest.raises(Exception, match="Encountered dimension variable 'k'") as raised:
        lib.export.export(lib.jit(fun, static_argnums=0))(k, np.ones(3, np.float32))
    assert type(raised.value).__name__ == "UnexpectedDimVar"


def test_a_constraint_on_a_variable_of_no_shape_is_unexpected(lib):
    m, = lib.export.symbolic_shape("m", constraints=["m >= m1"])
    with pytest.raises(Exception, match="Encountered dimension variable 'm1'") as raised:
        lib.export.export(lib.jit(lambda x: x))(lib.Struct((m,), np.float32))
    assert type(raised.value).__name__ == "UnexpectedDimVar"


# --- symbolic slice bounds and top_k's k -----------------------------------------------------------------------

def test_top_k_with_k_from_a_dimension(lib):
    k, = lib.export.symbolic_shape("k", constraints=["k <= 10"])
    x = np.arange(40, dtype=np.int32).reshape(4, 10)[:, ::-1] * 7 % 11
    exp = _export(lib, lambda dims, x: _my_top_k(lib)(dims.shape[1], x), lib.Struct((0, k), np.int32),
                  lib.Struct(x.shape, x.dtype))
    assert str(exp.out_avals[0].shape) == "(4, k)"
    for size in (1, 3, 10):
        np.testing.assert_array_equal(exp.call(np.zeros((0, size), np.int32), x), -np.sort(-x, axis=1)[:, :size])


def test_top_k_along_the_first_axis_with_a_symbolic_k(lib):
    exp = _export(lib, lambda x: lib.lax.top_k(x, x.shape[1], axis=0), _struct(lib, "b + 2, b"))
    assert str(exp.out_avals[0].shape) == "(b, b)"
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    values, indices = exp.call(x)
    np.testing.assert_array_equal(values, -np.sort(-x, axis=0)[:3])
    np.testing.assert_array_equal(indices, np.argsort(-x, axis=0, kind="stable")[:3])


def test_top_k_of_all_but_one(lib):  # jax's shape_poly_test harness lax_top_k
    exp = _export(lib, lambda x: lib.lax.top_k(x, x.shape[-1] - 1), _struct(lib, "b"))
    x = np.random.default_rng(1).normal(size=16).astype(np.float32)
    values, indices = exp.call(x)
    np.testing.assert_array_equal(values, -np.sort(-x)[:15])
    np.testing.assert_array_equal(indices, np.argsort(-x, kind="stable")[:15])


def test_slice_to_a_symbolic_bound(lib):
    a, b = lib.export.symbolic_shape("a, b", constraints=("a >= b", "b >= 16"))
    exp = _export(lib, lambda x: x[:x.shape[1], :16], lib.Struct((a, b), np.int32))
    assert str(exp.out_avals[0].shape) == "(b, 16)"
    x = np.arange(20 * 17, dtype=np.int32).reshape(20, 17)
    np.testing.assert_array_equal(exp.call(x), x[:17, :16])
    # A deserialized export has no constraints to check at the call: jax and numax refuse `a < b` when refining
    # the shapes (jax's JaxRuntimeError, "Error refining shapes").
    with pytest.raises(Exception, match="refin"):
        exp.call(x.T)
