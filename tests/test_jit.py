"""numax.jit: caching per signature, static and donated arguments, pytrees in and out, weak types,
closures, nesting, inspection (lower/as_text, eval_shape, log_compiles) and user-facing errors."""

import collections
import functools
import inspect
import re

import numpy as np
import pytest
from harness import jax, jnp
from numax.core import dtypes
from numax.lowering import dispatch

import numax
import numax.numpy as xnp

Point = collections.namedtuple("Point", ["x", "y"])


class TraceCounter:
    """Wraps a function, counting how often it is traced (a Python side effect runs once per trace)."""

    def __init__(self, fun):
        self.fun = fun
        self.traces = 0
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        self.traces += 1
        return self.fun(*args, **kwargs)


@pytest.fixture
def compile_count(monkeypatch):
    """Counts executables compiled for jit functions named `<lambda>` (not eager single primitives)."""
    counter = {"jit": 0}
    original = dispatch.compile_program

    def counting(closed, name="main", *args, **kwargs):
        if name == "<lambda>":
            counter["jit"] += 1
        return original(closed, name, *args, **kwargs)

    monkeypatch.setattr(dispatch, "compile_program", counting)
    return counter


# --- caching ---------------------------------------------------------------------------------------------
def test_one_trace_and_one_compile_per_signature(compile_count):
    counted = TraceCounter(lambda x: x * 2)
    f = numax.jit(counted)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(xnp.ones(3))), np.full(3, 2.0, np.float32))
    assert counted.traces == 1 and compile_count["jit"] == 1
    f(xnp.arange(3.0))  # different values, same signature
    f(np.ones(3, np.float32))  # a numpy array of the same type
    assert counted.traces == 1 and compile_count["jit"] == 1
    assert f._cache_size() == 1


@pytest.mark.parametrize("first,second", [
    (np.ones(3, np.float32), np.ones(4, np.float32)),  # shape
    (np.ones(3, np.float32), np.ones((3, 1), np.float32)),  # rank
    (np.ones(3, np.float32), np.ones(3, np.int32)),  # dtype
    (np.ones(3, np.float32), np.ones(3, np.float16)),
    (2.0, np.float32(2.0)),  # weak vs strong type
    (2, 2.0),  # Python int vs float
    (True, 1),  # Python bool vs int
])
def test_new_signature_retraces(first, second, compile_count):
    counted = TraceCounter(lambda x: x + 1)
    f = numax.jit(counted)
    f(first)
    f(first)
    assert counted.traces == 1
    f(second)
    assert counted.traces == 2 and compile_count["jit"] == 2
    f(first)
    f(second)
    assert counted.traces == 2 and compile_count["jit"] == 2


def test_python_scalar_values_do_not_retrace():
    counted = TraceCounter(lambda x, y: x * y)
    f = numax.jit(counted)
    assert float(f(2.0, 3.0)) == 6.0
    assert float(f(5.0, -1.0)) == -5.0
    assert int(f(2, 3)) == 6
    assert counted.traces == 2


def test_weak_typed_array_argument_signature():
    counted = TraceCounter(lambda x: x + 1)
    f = numax.jit(counted)
    weak = xnp.asarray(1.0) * 2.0  # a weakly typed float32 array
    strong = xnp.asarray(np.float32(1.0))
    assert weak.weak_type and not strong.weak_type
    f(weak)
    f(strong)
    assert counted.traces == 2
    assert f(weak).weak_type == jax.jit(lambda x: x + 1)(jnp.asarray(1.0) * 2.0).weak_type


@pytest.mark.parametrize("first,second", [
    ((1.0, 2.0), [1.0, 2.0]),
    ({"a": 1.0}, {"b": 1.0}),
    ({"a": 1.0}, {"a": 1.0, "b": 2.0}),
    ((1.0, None), (None, 1.0)),
    (Point(1.0, 2.0), (1.0, 2.0)),
])
def test_new_tree_structure_retraces(first, second):
    counted = TraceCounter(lambda tree: numax.tree_leaves(tree)[0] * 2)
    f = numax.jit(counted)
    f(first)
    f(first)
    assert counted.traces == 1
    f(second)
    assert counted.traces == 2


def test_dict_key_order_does_not_retrace():
    counted = TraceCounter(lambda d: d["a"] - d["b"])
    f = numax.jit(counted)
    assert float(f({"a": 3.0, "b": 1.0})) == 2.0
    assert float(f({"b": 1.0, "a": 5.0})) == 4.0
    assert counted.traces == 1


def test_static_value_retraces():
    counted = TraceCounter(lambda x, n: x * n)
    f = numax.jit(counted, static_argnums=1)
    f(xnp.ones(2), 2)
    f(xnp.ones(2), 2)
    assert counted.traces == 1
    np.testing.assert_array_equal(np.asarray(f(xnp.ones(2), 3)), [3.0, 3.0])
    assert counted.traces == 2


def test_x64_flag_is_part_of_the_signature():
    counted = TraceCounter(lambda x: x + 1)
    f = numax.jit(counted)
    f(1.0)
    old = numax.config.enable_x64
    numax.config.update("numax_enable_x64", True)
    try:
        assert f(1.0).dtype == np.float64
    finally:
        numax.config.update("numax_enable_x64", old)
    assert f(1.0).dtype == np.float32
    assert counted.traces == 2


def test_clear_cache_retraces():
    counted = TraceCounter(lambda x: -x)
    f = numax.jit(counted)
    f(1.0)
    f.clear_cache()
    f(1.0)
    assert counted.traces == 2


# --- static arguments -----------------------------------------------------------------------------------
def _scale(x, factor, mode="mul"):
    assert isinstance(factor, int), "factor must be static"
    assert isinstance(mode, str), "mode must be static"
    return x * factor if mode == "mul" else x + factor


def test_negative_static_argnums():
    f = numax.jit(_scale, static_argnums=(-2, -1))
    np.testing.assert_array_equal(np.asarray(f(xnp.arange(3.0), 3, "add")), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(np.asarray(f(xnp.arange(3.0), 2, "mul")), [0.0, 2.0, 4.0])
    assert float(numax.jit(lambda x, n: x * n, static_argnums=-1)(2.0, 4)) == 8.0


@pytest.mark.parametrize("options", [
    dict(static_argnums=(1, 2)),
    dict(static_argnames=("factor", "mode")),
    dict(static_argnums=1, static_argnames="mode"),
])
def test_static_arguments_positional_and_keyword(options):
    f = numax.jit(_scale, **options)
    x = xnp.arange(3.0)
    np.testing.assert_array_equal(np.asarray(f(x, 3, "mul")), [0.0, 3.0, 6.0])
    np.testing.assert_array_equal(np.asarray(f(x, 3, mode="add")), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(np.asarray(f(x, factor=2, mode="add")), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x, 2, "mul")), [0.0, 2.0, 4.0])


def test_static_argnames_imply_positions_and_back():
    counted = TraceCounter(_scale)
    by_name = numax.jit(counted, static_argnames=("factor", "mode"))
    by_name(xnp.ones(2), 2, "mul")  # passed positionally, still static
    by_name(xnp.ones(2), factor=2, mode="mul")
    by_number = numax.jit(_scale, static_argnums=(1, 2))
    np.testing.assert_array_equal(np.asarray(by_number(xnp.ones(2), factor=4, mode="mul")), [4.0, 4.0])


def test_static_argument_must_be_hashable():
    f = numax.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    assert f(xnp.ones(4), (2, 2)).shape == (2, 2)
    with pytest.raises(ValueError, match="non-hashable static argument"):
        f(xnp.ones(4), [2, 2])


def test_static_argnums_beyond_the_arguments():
    f = numax.jit(lambda x, y=1: x * y, static_argnums=1)
    assert float(f(2.0)) == 2.0  # the default is used
    assert float(f(2.0, 3)) == 6.0


def test_non_static_python_objects_are_rejected():
    f = numax.jit(lambda x, name: x)
    with pytest.raises(TypeError, match="not a valid numax type"):
        f(1.0, "text")


# --- donation ------------------------------------------------------------------------------------------------
def test_donated_argument_is_deleted():
    f = numax.jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x, y = xnp.arange(4.0), xnp.ones(4)
    out = f(x, y)
    np.testing.assert_array_equal(np.asarray(out), [1.0, 3.0, 5.0, 7.0])
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(ValueError, match="deleted or donated"):  # a cached call, as jax's
        f(x, y)
    assert "deleted" in repr(x)
    again = f(xnp.arange(4.0), y)
    np.testing.assert_array_equal(np.asarray(again), [1.0, 3.0, 5.0, 7.0])


def test_donated_pytree_argument():
    f = numax.jit(lambda state, delta: {k: v + delta for k, v in state.items()}, donate_argnums=(0,))
    state = {"a": xnp.zeros(3), "b": xnp.ones(3)}
    new = f(state, 1.0)
    assert state["a"].is_deleted() and state["b"].is_deleted()
    np.testing.assert_array_equal(np.asarray(new["b"]), [2.0, 2.0, 2.0])


def test_donation_with_static_arguments_and_mismatched_outputs():
    f = numax.jit(lambda n, x: x.sum() * n, static_argnums=0, donate_argnums=1)
    x = xnp.ones(5)
    assert float(f(2, x)) == 10.0  # the output cannot reuse x's buffer; the call still works


def test_donated_numpy_argument_is_fine():
    f = numax.jit(lambda x: x + 1, donate_argnums=0)
    host = np.ones(3, np.float32)
    np.testing.assert_array_equal(np.asarray(f(host)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(host, [1.0, 1.0, 1.0])


# --- pytrees and Python values ---------------------------------------------------------------------------
def test_pytrees_in_and_out():
    @numax.jit
    def f(tree):
        return {"sum": tree["a"] + tree["b"][0], "pair": Point(tree["b"][1], None), "list": [tree["a"] * 2]}

    out = f({"a": xnp.ones(2), "b": (xnp.arange(2.0), 3.0)})
    assert set(out) == {"sum", "pair", "list"}
    assert isinstance(out["pair"], Point) and out["pair"].y is None
    np.testing.assert_array_equal(np.asarray(out["sum"]), [1.0, 2.0])
    assert float(out["pair"].x) == 3.0 and out["pair"].x.weak_type
    assert isinstance(out["list"], list)


def test_registered_dataclass_through_jit():
    import dataclasses

    @numax.tree_util.register_dataclass
    @dataclasses.dataclass
    class State:
        value: object
        step: object
        label: str = dataclasses.field(default="s", metadata=dict(static=True))

    counted = TraceCounter(lambda state: State(state.value * 2, state.step + 1, state.label + "!"))
    f = numax.jit(counted)
    out = f(State(xnp.ones(2), 0))
    assert isinstance(out, State) and out.label == "s!" and int(out.step) == 1
    np.testing.assert_array_equal(np.asarray(out.value), [2.0, 2.0])
    f(State(xnp.zeros(2), 5))
    assert counted.traces == 1
    f(State(xnp.zeros(2), 5, "other"))  # static metadata is part of the signature
    assert counted.traces == 2


def test_none_leaves_in_arguments():
    f = numax.jit(lambda a, b: a if b is None else a + b)
    assert float(f(1.0, None)) == 1.0
    assert float(f(1.0, 2.0)) == 3.0


def test_keyword_arguments_are_traced():
    counted = TraceCounter(lambda x, *, scale: x * scale)
    f = numax.jit(counted)
    assert float(f(2.0, scale=3.0)) == 6.0
    assert float(f(2.0, scale=4.0)) == 8.0
    assert counted.traces == 1


@pytest.mark.parametrize("x,y", [
    (np.ones(3, np.float16), 2), (np.ones(3, np.float16), 2.5), (np.ones(3, np.int8), 2), (np.ones(3, np.int8), 2.5),
    (np.ones(3, np.uint8), 3), (np.ones(3, dtypes.bfloat16), 1.5), (np.ones(3, np.int32), 1j), (2, 3), (2, 3.5),
    (2.0, 1j), (True, 2), (np.ones(3, np.bool_), 1),
])
def test_python_scalars_are_weak_like_jax(x, y):
    result = numax.jit(lambda a, b: a * b)(x, y)
    expected = jax.jit(lambda a, b: a * b)(x, y)
    assert result.dtype == expected.dtype
    assert result.weak_type == expected.weak_type
    np.testing.assert_allclose(np.asarray(result).astype(np.complex64), np.asarray(expected).astype(np.complex64))


def test_python_scalar_subclasses_are_scalars():
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    class Precise(float):
        pass

    for value in (Level.HIGH, Precise(1.5)):
        result = numax.jit(lambda x: x * 2)(value)
        expected = jax.jit(lambda x: x * 2)(value)
        assert (result.dtype, result.weak_type) == (expected.dtype, expected.weak_type)
        assert float(result) == float(expected)


def test_output_weak_type_matches_jax():
    assert numax.jit(lambda x: x * 2)(3.0).weak_type == jax.jit(lambda x: x * 2)(3.0).weak_type == True  # noqa: E712
    f32 = np.float32(3.0)
    assert numax.jit(lambda x: x * 2)(f32).weak_type == jax.jit(lambda x: x * 2)(f32).weak_type == False  # noqa: E712


# --- closures -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [3, 1000])
def test_closure_over_host_arrays(size):
    captured = np.arange(size, dtype=np.float32)
    f = numax.jit(lambda x: x + captured)
    np.testing.assert_array_equal(np.asarray(f(xnp.ones(size))), captured + 1)
    np.testing.assert_array_equal(np.asarray(f(xnp.zeros(size))), captured)


@pytest.mark.parametrize("size", [3, 1000])
def test_closure_over_device_arrays(size):
    captured = xnp.arange(float(size))
    f = numax.jit(lambda x: (x * captured).sum())
    assert float(f(xnp.ones(size))) == float(np.arange(size).sum())


def test_closure_constant_is_baked_in_at_trace_time():
    state = {"scale": 2.0}
    f = numax.jit(lambda x: x * state["scale"])
    assert float(f(1.0)) == 2.0
    state["scale"] = 5.0
    assert float(f(1.0)) == 2.0  # cached: the Python value was read when tracing, as in jax


# --- nesting and trivial functions -------------------------------------------------------------------------
def test_jit_inside_jit():
    inner_counted = TraceCounter(lambda y: xnp.sin(y) * 2)
    inner = numax.jit(inner_counted)
    outer = numax.jit(lambda x: inner(x) + inner(x + 1))
    x = np.linspace(0, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(outer(x)), np.sin(x) * 2 + np.sin(x + 1) * 2, rtol=1e-6)
    assert inner_counted.traces == 1  # traced once per signature, then reused inside the outer trace (as JAX)
    np.testing.assert_allclose(np.asarray(inner(x)), np.sin(x) * 2, rtol=1e-6)


def test_jit_of_jit():
    f = numax.jit(numax.jit(lambda x: x - 1))
    assert float(f(3.0)) == 2.0


def test_returns_input_unchanged():
    f = numax.jit(lambda x: x)
    x = xnp.arange(3.0)
    out = f(x)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 1.0, 2.0])
    assert out.dtype == x.dtype and out.shape == x.shape
    assert np.asarray(f(np.ones(2, np.int8))).dtype == np.int8


def test_returns_constants_and_nothing():
    assert numax.jit(lambda x: ())(1.0) == ()
    assert numax.jit(lambda x: None)(1.0) is None
    assert numax.jit(lambda: [])() == []
    constant = numax.jit(lambda x: 7)(1.0)
    assert int(constant) == 7 and constant.dtype == jax.jit(lambda x: 7)(1.0).dtype
    assert isinstance(constant, numax.Array)
    array_constant = numax.jit(lambda: np.arange(3))()
    np.testing.assert_array_equal(np.asarray(array_constant), [0, 1, 2])
    assert array_constant.dtype == np.int32


def test_no_arguments():
    f = numax.jit(lambda: xnp.ones(2) * 3)
    np.testing.assert_array_equal(np.asarray(f()), [3.0, 3.0])


# --- inspection -------------------------------------------------------------------------------------------
def _parse_stablehlo(text):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        return ir.Module.parse(text)


def test_lower_as_text_is_stablehlo():
    f = numax.jit(lambda x, y: xnp.sin(x) @ y)
    lowered = f.lower(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    text = lowered.as_text()
    assert "func.func public @main" in text
    assert "tensor<2x3xf32>" in text and "tensor<2x4xf32>" in text
    module = _parse_stablehlo(text)
    assert "stablehlo.sine" in str(module)
    compiled = lowered.compile()
    out = compiled(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    np.testing.assert_allclose(np.asarray(out), np.full((2, 4), 3 * np.sin(1.0), np.float32), rtol=1e-6)


def test_lower_with_constants_and_pytrees():
    captured = np.arange(200, dtype=np.float32)
    f = numax.jit(lambda d: {"out": d["x"] + captured})
    text = f.lower({"x": np.ones(200, np.float32)}).as_text()
    assert "func.func public @main" in text
    _parse_stablehlo(text)


def test_log_compiles_prints_each_compilation_with_a_reason(capsys):
    old = numax.config.log_compiles
    numax.config.update("numax_log_compiles", True)
    try:
        def my_function(x):
            return x * 2

        f = numax.jit(my_function)
        capsys.readouterr()
        f(np.ones(3, np.float32))
        f(np.ones(3, np.float32))
        f(np.ones(4, np.float32))
        f(np.ones(4, np.int32))
        err = capsys.readouterr().err
    finally:
        numax.config.update("numax_log_compiles", old)
    lines = [line for line in err.splitlines() if "my_function" in line]
    assert len(lines) == 3, err
    assert "first call" in lines[0] and "(f32[3])" in lines[0]
    assert re.search(r"f32\[3\] -> f32\[4\]", lines[1]), lines[1]
    assert re.search(r"f32\[4\] -> i32\[4\]", lines[2]), lines[2]
    assert all(re.search(r"in \d+\.\d ms", line) for line in lines)


def test_log_compiles_reasons_for_static_and_structure_changes(capsys):
    old = numax.config.log_compiles
    numax.config.update("jax_log_compiles", True)
    try:
        def scaled(x, n):
            return x * n

        f = numax.jit(scaled, static_argnums=1)
        capsys.readouterr()
        f(1.0, 2)
        f(1.0, 3)
        g = numax.jit(lambda tree: tree[0])
        g((1.0,))
        g([1.0])
        err = capsys.readouterr().err
    finally:
        numax.config.update("jax_log_compiles", old)
    lines = [line for line in err.splitlines() if re.match("numax: (compiled|loaded) ", line)]  # loaded: a warm cache
    assert len(lines) == 4, err
    assert "static argument n: 2 -> 3" in lines[1]
    assert "new argument structure" in lines[3]


def test_log_compiles_off_prints_nothing(capsys):
    f = numax.jit(lambda x: x + 3)
    capsys.readouterr()
    f(1.0)
    assert "compiled" not in capsys.readouterr().err


def test_eval_shape_matches_jax():
    def f(x, y):
        return {"a": x @ y, "b": (x.sum(), y.astype(np.int8))}

    args = (np.ones((2, 3), np.float32), np.ones((3, 5), np.float32))
    mine = numax.eval_shape(f, *args)
    theirs = jax.eval_shape(f, *args)
    assert numax.tree_structure(mine) == numax.tree_structure({"a": 0, "b": (0, 0)})
    for m, t in zip(numax.tree_leaves(mine), jax.tree.leaves(theirs)):
        assert (m.shape, m.dtype) == (t.shape, t.dtype)
        assert isinstance(m, numax.ShapeDtypeStruct)
    specs = numax.eval_shape(f, numax.ShapeDtypeStruct((4, 3), np.float32), numax.ShapeDtypeStruct((3, 1), np.float32))
    assert specs["a"].shape == (4, 1)
    assert numax.jit(f).eval_shape(*args)["b"][1].dtype == np.int8


def test_eval_shape_runs_nothing(compile_count):
    counted = TraceCounter(lambda x: xnp.exp(x))
    out = numax.eval_shape(counted, numax.ShapeDtypeStruct((10**6, 10**6), np.float32))
    assert out.shape == (10**6, 10**6) and counted.traces == 1 and compile_count["jit"] == 0


def test_shape_dtype_struct():
    spec = numax.ShapeDtypeStruct((2, 3), np.float16)
    assert (spec.shape, spec.dtype, spec.ndim, spec.size) == ((2, 3), np.float16, 2, 6)
    assert spec == numax.ShapeDtypeStruct((2, 3), "float16") and hash(spec) == hash(numax.ShapeDtypeStruct((2, 3),
                                                                                                            np.float16))
    assert repr(spec) == "ShapeDtypeStruct(shape=(2, 3), dtype=float16)"


def test_jit_function_attributes():
    def documented(x):
        """Doubles x."""
        return x * 2

    f = numax.jit(documented)
    assert f.__name__ == "documented" and f.__doc__ == "Doubles x." and f.__wrapped__ is documented
    assert "documented" in repr(f)
    assert numax.jit(static_argnums=0)(lambda n, x: x * n)(3, 1.0) == 3.0


# --- methods --------------------------------------------------------------------------------------------------
class Model:
    def __init__(self, scale):
        self.scale = scale

    def __hash__(self):
        return hash(self.scale)

    def __eq__(self, other):
        return isinstance(other, Model) and other.scale == self.scale

    @functools.partial(numax.jit, static_argnums=0)
    def apply(self, x):
        return x * self.scale

    @numax.jit
    def free(x):  # noqa: N805  (a jitted function stored on a class and called through it)
        return x + 1


@numax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, weight):
        self.weight = weight

    def tree_flatten(self):
        return (self.weight,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    @numax.jit
    def __call__(self, x):
        return x @ self.weight


def test_jitted_methods():
    model = Model(3.0)
    np.testing.assert_array_equal(np.asarray(model.apply(xnp.ones(2))), [3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(Model(4.0).apply(xnp.ones(2))), [4.0, 4.0])
    assert float(Model.free(1.0)) == 2.0
    layer = Linear(xnp.eye(2) * 2)
    np.testing.assert_array_equal(np.asarray(layer(xnp.ones(2))), [2.0, 2.0])


# --- errors ------------------------------------------------------------------------------------------------
def test_tracer_as_bool_names_the_user_line():
    def f(x):
        if x > 0:  # the line the error must point at
            return x
        return -x

    line = inspect.getsourcelines(f)[1] + 1
    with pytest.raises(numax.ConcretizationTypeError) as info:
        numax.jit(f)(1.0)
    message = str(info.value)
    assert f"test_jit.py:{line}" in message
    assert "static_argnums" in message and "lax.cond" in message
    assert isinstance(info.value, TypeError)


def test_concretization_inside_numax_points_past_numax_frames():
    def make(n):
        return xnp.zeros(n)  # numax needs a concrete shape here

    line = inspect.getsourcelines(make)[1] + 1
    with pytest.raises(TypeError) as info:
        numax.jit(make)(3)
    assert f"test_jit.py:{line}" in str(info.value)
    np.testing.assert_array_equal(np.asarray(numax.jit(make, static_argnums=0)(3)), np.zeros(3))


@pytest.mark.parametrize("use", [int, float, lambda t: range(t), lambda t: np.zeros(t)])
def test_tracer_conversions_raise(use):
    with pytest.raises(TypeError):
        numax.jit(lambda x: use(x))(xnp.asarray(3))


def test_static_argument_can_drive_python_control_flow():
    f = numax.jit(lambda x, flag: x if flag else -x, static_argnums=1)
    assert float(f(2.0, True)) == 2.0 and float(f(2.0, False)) == -2.0


def test_escaped_tracer_is_detected():
    stash = []

    @numax.jit
    def leak(x):
        stash.append(x * 1)
        return x

    leak(1.0)
    with pytest.raises(numax.core.errors.UnexpectedTracerError, match="already finished"):
        numax.jit(lambda y: y + stash[0])(1.0)
    with pytest.raises(numax.core.errors.UnexpectedTracerError, match="already finished"):
        stash[0] + 1  # used eagerly, outside every transformation
    with pytest.raises(numax.core.errors.UnexpectedTracerError, match="already finished"):
        xnp.sin(stash[0])
