"""The IR: make_jaxpr printing (exact strings, compared with jax's where the primitives agree),
literals, captured constants, nested jit, dead-code elimination and program evaluation."""

import ml_dtypes
import numpy as np
import pytest
from harness import jax, jnp
from numax.core import avals, dce, evaluation, ir, staging
from numax.core.primitives import Primitive

import numax
import numax.numpy as xnp
from numax import lax

F32_3 = np.arange(3.0, dtype=np.float32)
CAPTURED = np.array([1.0, -2.0, 3.0], np.float32)


def numax_text(fun, *args):
    return str(numax.make_jaxpr(fun)(*args))


def jax_text(fun, *args):
    return str(jax.make_jaxpr(fun)(*args))


# Functions whose numax and jax programs use the same primitives with the same parameters: the printed
# programs must be identical, character for character.
SAME_TEXT = {
    "sin": (lambda m: lambda x: m.sin(x), [F32_3]),
    "sin_cos": (lambda m: lambda x: m.cos(m.sin(x)), [F32_3]),
    "mul_literal_add": (lambda m: lambda x: m.sin(x) * 2 + x, [F32_3]),
    "int_literal": (lambda m: lambda x: x + 1, [np.arange(3, dtype=np.int32)]),
    "exp_sub": (lambda m: lambda x: m.exp(x) - 1, [F32_3]),
    "closure_constant": (lambda m: lambda x: x + CAPTURED, [F32_3]),
    "identity": (lambda m: lambda x: x, [F32_3]),
    "nothing": (lambda m: lambda x: (), [F32_3]),
    "constant_output": (lambda m: lambda: 5, []),
    "two_outputs": (lambda m: lambda x, y: (x * y, m.tanh(y)), [F32_3, F32_3]),
    "mul_convert": (lambda m: lambda x: (x * x).astype(m.int32), [F32_3]),
    "matrix": (lambda m: lambda x: m.exp(m.log(x)), [np.ones((2, 3), np.float32)]),
}


@pytest.mark.parametrize("name", list(SAME_TEXT))
def test_printed_program_identical_to_jax(name):
    make, args = SAME_TEXT[name]
    assert numax_text(make(xnp), *args) == jax_text(make(jnp), *args)


def test_exact_strings():
    assert numax_text(xnp.sin, F32_3) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"
    assert numax_text(lambda x: xnp.sin(x) * 2 + x, F32_3) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "    d:f32[3] = add c a\n"
        "  in (d,) }"
    )
    assert numax_text(lambda x: x + CAPTURED, F32_3) == (
        "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }")
    assert numax_text(lambda: (), ) == "{ lambda ; . let  in () }"
    assert numax_text(lambda x, y: (y, x), F32_3, np.int32(1)) == "{ lambda ; a:f32[3] b:i32[]. let  in (b, a) }"


def test_print_breaks_long_lines_like_jax():
    shape = (10**13, 7)
    spec = numax.ShapeDtypeStruct(shape, np.float32)
    text = numax_text(xnp.sin, spec)
    assert text == jax_text(jnp.sin, jax.ShapeDtypeStruct(shape, np.float32))
    assert text == ("{ lambda ; a:f32[10000000000000,7]. let\n"
                    "    b:f32[10000000000000,7] = sin a\n"
                    "  in (b,) }")
    # 79 characters fit on one line; 80 do not (as in jax).
    short = numax_text(xnp.sin, numax.ShapeDtypeStruct((10**12, 7), np.float32))
    assert "\n" not in short and len(short) == 79
    assert short == jax_text(jnp.sin, jax.ShapeDtypeStruct((10**12, 7), np.float32))
    eighty = numax_text(xnp.sin, numax.ShapeDtypeStruct((10**12, 70), np.float32))
    assert "\n" in eighty and eighty == jax_text(jnp.sin, jax.ShapeDtypeStruct((10**12, 70), np.float32))


def test_params_printed_sorted_and_broken_when_long():
    text = numax_text(lambda x: lax.reshape(x, (6,)), np.ones((2, 3), np.float32))
    assert text.startswith("{ lambda ; a:f32[2,3]. let")
    assert "b:f32[6] = reshape[" in text
    long_params = numax_text(lambda x: lax.dot_general(x, x, (((0,), (0,)), ((), ()))), np.ones((2, 3), np.float32))
    equation_lines = long_params.split("\n")
    assert all(len(line) <= 80 for line in equation_lines)
    assert "    c:f32[3,3] = dot_general[" in long_params or "    b:f32[3,3] = dot_general[" in long_params
    assert "\n    ] a a\n" in long_params
    param_lines = [line for line in equation_lines if line.startswith("      ") and "=" in line]
    assert [line.split("=")[0].strip() for line in param_lines] == sorted(
        line.split("=")[0].strip() for line in param_lines)


# Functions where numax and jax use the same primitives (perhaps with different parameters): the number of
# equations and the primitive names must agree.
SAME_PRIMITIVES = {
    "sum": (lambda m: lambda x: m.sum(x, axis=0), [np.ones((3, 4), np.float32)]),
    "max": (lambda m: lambda x: m.max(x, axis=1), [np.ones((3, 4), np.float32)]),
    "reshape": (lambda m: lambda x: m.reshape(x, (4, 3)), [np.ones((3, 4), np.float32)]),
    "transpose_matmul": (lambda m: lambda x: x.T @ x, [np.ones((2, 3), np.float32)]),
    "add_sum": (lambda m: lambda x: x + x.sum(), [F32_3]),
    "compare": (lambda m: lambda x: x > 1.0, [F32_3]),
    "neg_abs": (lambda m: lambda x: -m.abs(x), [F32_3]),
    "scalar_args": (lambda m: lambda x, y: x * y + 2.0, [np.float32(1.0), np.float32(2.0)]),
}


@pytest.mark.parametrize("name", list(SAME_PRIMITIVES))
def test_primitive_sequence_matches_jax(name):
    make, args = SAME_PRIMITIVES[name]
    mine = numax.make_jaxpr(make(xnp))(*args)
    theirs = jax.make_jaxpr(make(jnp))(*args)
    assert [e.primitive.name for e in mine.equations] == [e.primitive.name for e in theirs.eqns]
    assert [str(a) for a in mine.in_avals] == [a.str_short(short_dtypes=True) for a in theirs.in_avals]
    assert [str(a) for a in mine.out_avals] == [a.str_short(short_dtypes=True) for a in theirs.out_avals]


# --- literals and constants -------------------------------------------------------------------------------
def test_literals():
    closed = numax.make_jaxpr(lambda x: x * 2.5 + np.float32(1.5))(F32_3)
    literals = [a for e in closed.equations for a in e.inputs if isinstance(a, ir.Literal)]
    assert [(lit.value, str(lit.aval)) for lit in literals] == [(2.5, "f32[]"), (1.5, "f32[]")]
    assert "2.5:f32[]" in str(closed) and "1.5:f32[]" in str(closed)
    assert closed.program.constvars == []
    bool_literal = numax.make_jaxpr(lambda x: xnp.logical_and(x, True))(np.array([True, False]))
    assert "True:bool[]" in str(bool_literal)


def test_literal_value_helper():
    literal = staging.literal_value(3)
    assert literal.value == 3 and literal.aval == avals.ShapedArray((), np.int32, weak_type=True)
    assert staging.literal_value(np.float16(2.0)).aval == avals.ShapedArray((), np.float16)
    assert staging.literal_value(np.zeros(3)) is None
    assert staging.literal_value("text") is None
    with pytest.raises(OverflowError, match="too large"):
        staging.literal_value(2**40)


def test_constants_captured_from_closures():
    small = xnp.arange(3.0)
    host_array = np.ones(3, np.float32)

    def f(x):
        return x * small + host_array + small  # `small` is captured once although used twice

    closed = numax.make_jaxpr(f)(F32_3)
    assert len(closed.program.constvars) == 2
    assert len(closed.consts) == 2
    values = [np.asarray(c) for c in closed.consts]
    assert any(v.shape == (3,) and (v == 1).all() for v in values)
    assert str(closed) == ("{ lambda a:f32[3] b:f32[3]; c:f32[3]. let\n"
                           "    d:f32[3] = mul c a\n"
                           "    e:f32[3] = add d b\n"
                           "    f:f32[3] = add e a\n"
                           "  in (f,) }")


def test_same_numpy_constant_captured_once():
    closed = numax.make_jaxpr(lambda x: x * CAPTURED + CAPTURED)(F32_3)
    assert len(closed.program.constvars) == 1
    assert str(closed) == jax_text(lambda x: x * CAPTURED + CAPTURED, F32_3)


def test_same_device_constant_captured_once():
    captured = xnp.asarray(CAPTURED)
    closed = numax.make_jaxpr(lambda x: x * captured + captured)(F32_3)
    assert len(closed.program.constvars) == 1 and closed.consts[0] is captured
    assert str(closed) == ("{ lambda a:f32[3]; b:f32[3]. let\n"
                           "    c:f32[3] = mul b a\n"
                           "    d:f32[3] = add c a\n"
                           "  in (d,) }")


def test_zero_dimensional_numpy_constant_is_a_literal():
    closed = numax.make_jaxpr(lambda x: x * np.float32(3.0))(F32_3)
    assert closed.program.constvars == []
    assert str(closed) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }"


def test_zero_dimensional_device_constant_is_a_literal():
    strong, weak = xnp.asarray(np.float32(3.0)), xnp.asarray(3.0)
    assert str(numax.make_jaxpr(lambda x: x * strong)(F32_3)) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }")
    closed = numax.make_jaxpr(lambda: weak)()
    assert closed.program.constvars == [] and isinstance(closed.program.outvars[0], ir.Literal)
    assert closed.out_avals[0].weak_type
    bf16 = xnp.asarray(np.array(1.5, ml_dtypes.bfloat16))
    closed = numax.make_jaxpr(lambda x: x + bf16)(np.ones(2, ml_dtypes.bfloat16))
    assert "1.5:bf16[]" in str(closed)
    np.testing.assert_array_equal(np.asarray(numax.jit(lambda x: x + bf16)(np.ones(2, ml_dtypes.bfloat16))),
                                  np.full(2, 2.5, ml_dtypes.bfloat16))


def test_constant_evaluation_under_trace_is_staged():
    # Omnistaging: work on constants inside a traced function is recorded, not run at trace time.
    closed = numax.make_jaxpr(lambda x: x + xnp.sin(CAPTURED))(F32_3)
    assert [e.primitive.name for e in closed.equations] == ["sin", "add"]


# --- nested jit ----------------------------------------------------------------------------------------------
def test_nested_jit_is_one_equation_with_a_sub_program():
    inner = numax.jit(xnp.sin)
    closed = numax.make_jaxpr(lambda x: inner(x) * 2)(F32_3)
    assert [e.primitive.name for e in closed.equations] == ["jit", "mul"]
    sub = closed.equations[0].params["program"]
    assert [e.primitive.name for e in sub.equations] == ["sin"]
    assert closed.equations[0].params["name"] == "sin"
    assert str(closed) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit[\n"
        "      name=sin\n"
        "      program={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
        "    ] a\n"
        "    e:f32[3] = mul b 2.0:f32[]\n"
        "  in (e,) }"
    )
    theirs = jax.make_jaxpr(lambda x: jax.jit(jnp.sin)(x) * 2)(F32_3)
    assert [e.primitive.name for e in theirs.eqns] == ["jit", "mul"]


def test_nested_jit_long_sub_program_is_indented():
    inner = numax.jit(lambda y: xnp.cos(xnp.sin(y) + xnp.cos(y)))
    text = numax_text(lambda x: inner(x) * 2, F32_3)
    assert text == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit[\n"
        "      name=<lambda>\n"
        "      program={ lambda ; c:f32[3]. let\n"
        "          d:f32[3] = sin c\n"
        "          e:f32[3] = cos c\n"
        "          f:f32[3] = add d e\n"
        "          g:f32[3] = cos f\n"
        "        in (g,) }\n"
        "    ] a\n"
        "    h:f32[3] = mul b 2.0:f32[]\n"
        "  in (h,) }"
    )


def test_nested_jit_closing_over_outer_tracer():
    def outer(x):
        return numax.jit(lambda y: y + x)(x * 2)

    closed = numax.make_jaxpr(outer)(F32_3)
    assert [e.primitive.name for e in closed.equations] == ["mul", "jit"]
    jit_eqn = closed.equations[1]
    assert len(jit_eqn.inputs) == 2  # the outer tracer the inner function closed over, then its argument
    np.testing.assert_allclose(np.asarray(numax.jit(outer)(F32_3)), F32_3 * 3)


# --- dead-code elimination --------------------------------------------------------------------------------
def test_dce_removes_unused_outputs_and_their_work():
    closed = numax.make_jaxpr(lambda x, y: (xnp.sin(x), xnp.cos(y) * 2))(F32_3, F32_3)
    program, used_inputs = dce.dce_program(closed.program, [True, False])
    assert [e.primitive.name for e in program.equations] == ["sin"]
    assert used_inputs == [True, False]
    assert len(program.outvars) == 1
    program, used_inputs = dce.dce_program(closed.program, [False, True])
    assert [e.primitive.name for e in program.equations] == ["cos", "mul"]
    assert used_inputs == [False, True]


def test_dce_removes_unused_intermediates():
    def f(x):
        xnp.exp(x)  # computed and dropped: staged (omnistaging), then removed by DCE
        return xnp.cos(x)

    closed = numax.make_jaxpr(f)(F32_3)
    assert [e.primitive.name for e in closed.equations] == ["exp", "cos"]
    program, used_inputs = dce.dce_program(closed.program)
    assert [e.primitive.name for e in program.equations] == ["cos"]
    assert used_inputs == [True]


def test_dce_drops_unused_constants():
    closed = numax.make_jaxpr(lambda x: (x + CAPTURED, x))(F32_3)
    program, _ = dce.dce_program(closed.program, [False, True])
    assert program.constvars == [] and program.equations == []
    program, _ = dce.dce_program(closed.program, [True, True])
    assert len(program.constvars) == 1


def _effect_primitive():
    effect_p = Primitive("test_effect")
    effect_p.effectful = True
    effect_p.multiple_results = True
    effect_p.def_abstract_eval(lambda *avals_in: [])
    return effect_p


def test_dce_keeps_effectful_equations():
    effect_p = _effect_primitive()
    x = ir.Var(avals.ShapedArray((3,), np.float32))
    y = ir.Var(avals.ShapedArray((3,), np.float32))
    unused = ir.Var(avals.ShapedArray((3,), np.float32))
    sin_p = numax.make_jaxpr(xnp.sin)(F32_3).equations[0].primitive
    program = ir.Program([], [x, y], [x], [
        ir.Equation(sin_p, [y], [unused], {}),
        ir.Equation(effect_p, [y], [], {}),
    ])
    assert str(program) == "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sin b; test_effect b in (a,) }"
    pruned, used_inputs = dce.dce_program(program)
    assert [e.primitive.name for e in pruned.equations] == ["test_effect"]
    assert used_inputs == [True, True]  # the effect reads y


def test_dce_keeps_debug_callback():
    def f(x):
        numax.debug.callback(lambda v: None, x)
        return x * 2

    closed = numax.make_jaxpr(f)(F32_3)
    program, used_inputs = dce.dce_program(closed.program)
    assert "debug_callback" in [e.primitive.name for e in program.equations]
    assert used_inputs == [True]


def test_dce_keeps_effects_inside_nested_programs():
    inner = numax.jit(lambda v: (numax.debug.callback(lambda _: None, v), v * 2)[1])

    def f(x):
        inner(x)  # result unused, but the callback inside must still run
        return xnp.sin(x)

    closed = numax.make_jaxpr(f)(F32_3)
    assert [e.primitive.name for e in closed.equations] == ["jit", "sin"]
    assert dce.has_effects(closed.equations[0]) and not dce.has_effects(closed.equations[1])
    program, used_inputs = dce.dce_program(closed.program)
    assert [e.primitive.name for e in program.equations] == ["jit", "sin"]
    pure_inner = numax.jit(lambda v: v * 2)
    closed = numax.make_jaxpr(lambda x: (pure_inner(x), xnp.sin(x))[1])(F32_3)
    program, _ = dce.dce_program(closed.program)
    assert [e.primitive.name for e in program.equations] == ["sin"]


def test_dce_handles_literal_outputs():
    closed = numax.make_jaxpr(lambda x: (5, xnp.sin(x)))(F32_3)
    program, used_inputs = dce.dce_program(closed.program, [True, False])
    assert program.equations == [] and used_inputs == [False]
    assert str(program) == "{ lambda ; a:f32[3]. let  in (5:i32[],) }"


# --- evaluation --------------------------------------------------------------------------------------------
def test_eval_program_runs_the_equations():
    def f(x, y):
        return xnp.sin(x) * y + CAPTURED, x - 1

    closed = numax.make_jaxpr(f)(F32_3, F32_3)
    x, y = xnp.asarray(F32_3), xnp.asarray(F32_3 * 2)
    outs = evaluation.eval_program(closed.program, closed.consts, x, y)
    expected = f(x, y)
    assert len(outs) == 2
    for out, want in zip(outs, expected):
        np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-6)
    outs_closed = evaluation.eval_closed_program(closed, x, y)
    np.testing.assert_allclose(np.asarray(outs_closed[0]), np.asarray(expected[0]), rtol=1e-6)


def test_eval_program_under_a_trace_rebuilds_the_program():
    closed = numax.make_jaxpr(lambda x: xnp.cos(x) + 1.0)(F32_3)
    again = numax.make_jaxpr(lambda x: evaluation.eval_closed_program(closed, x)[0])(F32_3)
    assert str(again) == str(closed)
    jitted = numax.jit(lambda x: evaluation.eval_closed_program(closed, x)[0])
    np.testing.assert_allclose(np.asarray(jitted(F32_3)), np.cos(F32_3) + 1, rtol=1e-6)


def test_eval_program_literal_outputs_and_passthrough():
    closed = numax.make_jaxpr(lambda x: (x, 7))(F32_3)
    x = xnp.asarray(F32_3)
    outs = evaluation.eval_closed_program(closed, x)
    assert outs[0] is x and outs[1] == 7


def test_eval_program_checks_argument_count():
    closed = numax.make_jaxpr(xnp.sin)(F32_3)
    with pytest.raises(TypeError, match="program takes 1 arguments, got 2"):
        evaluation.eval_closed_program(closed, F32_3, F32_3)
    with_const = numax.make_jaxpr(lambda x: x + CAPTURED)(F32_3)
    with pytest.raises(TypeError, match="program has 1 constants, got 0 values"):
        evaluation.eval_program(with_const.program, [], F32_3)


def test_program_properties_and_repr():
    closed = numax.make_jaxpr(lambda x, y: (x + y, x))(F32_3, np.float32(1))
    assert [str(a) for a in closed.in_avals] == ["f32[3]", "f32[]"]
    assert [str(a) for a in closed.out_avals] == ["f32[3]", "f32[3]"]
    assert repr(closed) == str(closed) == closed.pretty_print()
    assert repr(closed.equations[0]) == "a:f32[3] = add b c"  # printed alone: outputs are named first
    assert repr(closed.program.invars[0]) == "Var(f32[3])"
    eqn = closed.equations[0].replace(params={"extra": 1})
    assert eqn.params == {"extra": 1} and eqn.primitive is closed.equations[0].primitive


def test_weak_typed_input_avals():
    closed = numax.make_jaxpr(lambda x, y: x * y)(F32_3, 2.0)
    theirs = jax.make_jaxpr(lambda x, y: x * y)(F32_3, 2.0)
    assert [a.weak_type for a in closed.in_avals] == [a.weak_type for a in theirs.in_avals] == [False, True]
    assert str(closed.in_avals[1]) == "f32[]"
    assert repr(closed.in_avals[1]) == "ShapedArray(f32[], weak_type=True)"


def test_make_jaxpr_options():
    closed = numax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(F32_3, 3)
    assert str(closed) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }"
    closed, shapes = numax.make_jaxpr(lambda x: {"y": x.sum()}, return_shape=True)(F32_3)
    assert shapes == {"y": numax.ShapeDtypeStruct((), np.float32)}
    assert [e.primitive.name for e in closed.equations] == ["reduce_sum"]
    keyword = numax.make_jaxpr(lambda x, *, y: x - y)(F32_3, y=F32_3)
    assert str(keyword) == "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sub a b in (c,) }"
    pytree = numax.make_jaxpr(lambda d: d["b"] + d["a"])({"b": F32_3, "a": F32_3})
    assert str(pytree) == "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add b a in (c,) }"
