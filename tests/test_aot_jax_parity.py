"""The ahead-of-time stages against jax: the public-behaviour cases of jax-v0.10.2's tests/aot_test.py (and of
api_test.py's `trace(...).jaxpr` and `compiler_ir` cases), run under numax and jax side by side.

Left out: serialization of executables and PJRT topologies (`jax.experimental.serialize_executable`,
`topologies`), source locations under `as_text(debug_info=True)` (accepted; numax's modules carry none), and the
private `_params.const_args` / `_executable` fields."""

import contextlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax.numpy as xnp

LIBS = [(numax, xnp), (jax, jnp)]


# --- aot_test.py ------------------------------------------------------------------------------------------------
def test_lower_as_text_without_debug_info():
    for api, np_ in LIBS:
        lowered = api.jit(lambda x: np_.sin(x)).lower(42.0)
        stablehlo = lowered.as_text("stablehlo")
        assert re.search(r"sine", stablehlo) and not re.search(r"sine.* loc", stablehlo)
        assert "sine" in lowered.as_text("stablehlo", debug_info=True)  # (numax's carries no locations)


def test_constants_in_lowering_in_aot():
    const_size = 100
    for api, np_ in LIBS:
        const = api.random.uniform(api.random.key(0), (const_size,), dtype=np.float32)
        lowered = api.jit(lambda x: np_.sin(x) + const).lower(np.full(const.shape, 42.0, np.float32))
        # (jax's default, without jax_use_simplified_jaxpr_constants: the constant is in the module)
        assert re.search(rf"stablehlo.constant dense.*tensor<{const_size}x", str(lowered.compiler_ir()))


@pytest.mark.parametrize("dead_argument", [False, True])
def test_with_constants(dead_argument):
    results = []
    for api, np_ in LIBS:
        const = np_.arange(16.0) + 42.0  # a distinctive shape and value
        f = api.jit((lambda x, y_dead: const[0:8] + x) if dead_argument else (lambda x: const[0:8] + x))
        args = (np_.arange(8.0), np_.arange(24.0)) if dead_argument else (np_.arange(8.0),)
        compiled = f.lower(*args).compile()
        # args_info covers the arguments (a dead one included), not the constants
        assert [info.shape for info in compiled.args_info[0]] == [a.shape for a in args]
        results.append(np.asarray(compiled(*args)))
        results.append(np.asarray(compiled(*args)))  # (a second call, from the caches)
    np.testing.assert_array_equal(results[0], results[2])
    np.testing.assert_array_equal(results[1], results[2])


@pytest.mark.parametrize("use_np", [False, True])
@pytest.mark.parametrize("lower, compile, run", [(lo, co, ru) for lo in (False, True) for co in (False, True)
                                                 for ru in (False, True)])
def test_with_constants_enable_x64(use_np, lower, compile, run):
    """A closed-over 64-bit constant; lowering, compilation and execution each in 64-bit mode or not."""
    outputs = []
    for api, np_ in LIBS:
        x64 = api.enable_x64 if api is numax else jax.enable_x64
        with x64(True):
            const = (np.arange if use_np else np_.arange)(16, dtype=np.int64) + 42
            f = api.jit(lambda x: api.lax.convert_element_type(const, np.float32) + x)
        inp = np.arange(16.0, dtype=np.float32)
        with x64(True) if lower else contextlib.nullcontext():
            lowered = f.lower(inp)
        with x64(True) if compile else contextlib.nullcontext():
            compiled = lowered.compile()
        assert len(compiled.args_info[0]) == 1  # not including the constant
        with x64(True) if run else contextlib.nullcontext():
            outputs.append(np.asarray(compiled(inp)))
    np.testing.assert_array_equal(*outputs)
    np.testing.assert_array_equal(outputs[0], np.arange(16, dtype=np.float32) * 2 + 42)


# --- api_test.py: compiler_ir and trace(...).jaxpr -----------------------------------------------------------------
@pytest.mark.parametrize("fun", [lambda x: x + 4, lambda x: x], ids=["add", "trivial"])
def test_jit_lower_compiler_ir(fun):
    for api, _ in LIBS:
        lowered = api.jit(fun).lower(1.0)
        assert lowered.compiler_ir() is not None and lowered.compiler_ir(dialect="stablehlo") is not None
        assert isinstance(lowered.as_text(dialect="stablehlo"), str)


def test_compiler_ir_is_an_mlir_module():
    texts = []
    for api, np_ in LIBS:
        module = api.jit(lambda x: np_.sin(np_.cos(x))).lower(2.0).compiler_ir(dialect="stablehlo")
        assert type(module).__name__ == "Module" and hasattr(module, "operation")
        texts.append(str(module))
        assert "stablehlo.cosine" in texts[-1] and "stablehlo.sine" in texts[-1]
    ours = numax.jit(lambda x: xnp.sin(x)).lower(2.0)
    assert str(ours.compiler_ir()) == str(ours.compiler_ir("stablehlo"))
    with pytest.raises(ValueError, match="unknown dialect"):  # as jax's ("hlo": tests/test_compat_surface.py)
        ours.compiler_ir(dialect="mhlo")


def _describe(closed):
    """What a closed jaxpr says, in terms both libraries share."""
    return {
        "in": [(a.shape, str(a.dtype)) for a in closed.in_avals],
        "out": [(a.shape, str(a.dtype)) for a in closed.out_avals],
        "eqns": [e.primitive.name for e in closed.eqns],
        "jaxpr.eqns": [e.primitive.name for e in closed.jaxpr.eqns],
        "invars": [(v.aval.shape, str(v.aval.dtype)) for v in closed.jaxpr.invars],
        "outvars": len(closed.jaxpr.outvars),
        "constvars": [(v.aval.shape, str(v.aval.dtype)) for v in closed.jaxpr.constvars],
        "consts": [np.asarray(c).tolist() for c in closed.consts],
        "eqn invars": [len(e.invars) for e in closed.eqns],
        "eqn outvars": [len(e.outvars) for e in closed.eqns],
    }


_FUNCTIONS = {
    "sin cos mul": (lambda np_: lambda x, y: np_.sin(np_.cos(x)) * y, (np.float32(1.0), np.ones(3, np.float32))),
    "closed-over constant": (lambda np_: (lambda c: lambda x: c[0:8] + x)(np_.arange(16.0) + 42.0),
                             (np.arange(8.0, dtype=np.float32),)),
    "pytree in, two out": (lambda np_: lambda d: (d["a"] * 2, d["b"] - 1),
                           ({"a": np.ones((2, 3), np.float32), "b": np.ones(4, np.int32)},)),
}


@pytest.mark.parametrize("name", list(_FUNCTIONS))
def test_traced_jaxpr_matches_jax(name):
    make, args = _FUNCTIONS[name]
    ours = numax.jit(make(xnp)).trace(*args).jaxpr
    theirs = jax.jit(make(jnp)).trace(*args).jaxpr
    assert _describe(ours) == _describe(theirs)
    assert "sin" in str(ours) or name != "sin cos mul"


def test_traced_jaxpr_is_usable_where_a_program_is():
    traced = numax.jit(lambda x: xnp.sin(x) * 2).trace(numax.ShapeDtypeStruct((3,), np.float32))
    np.testing.assert_allclose(traced.lower().compile()(np.ones(3, np.float32)), np.sin(1.0) * 2 * np.ones(3),
                               rtol=1e-6)
    assert len(traced.jaxpr.eqns) == len(jax.jit(lambda x: jnp.sin(x) * 2).trace(jnp.ones(3)).jaxpr.eqns)


def test_shape_dtype_struct_shardings_are_lowered_for_and_reported_as_jax():
    """`jit(f).lower(ShapeDtypeStruct(..., sharding=s))` compiles for `s`: the compiled function's input and output
    shardings are jax's, and it runs on an array laid out by `s` and on a host array (single-device too)."""
    reports = []
    for api, _ in LIBS:
        mesh = api.sharding.Mesh(np.array(api.devices()[:4]), ("x",))
        sharding = api.sharding.NamedSharding(mesh, api.sharding.PartitionSpec("x"))
        struct = api.ShapeDtypeStruct((8, 2), np.float32, sharding=sharding)
        compiled = api.jit(lambda a, b: (a * 2, b + 1)).lower(struct, np.float32(1)).compile()
        host = np.arange(16, dtype=np.float32).reshape(8, 2)
        outs = [compiled(api.device_put(host, sharding), np.float32(1)), compiled(host, np.float32(2))]
        single = api.jit(lambda a: a).lower(host).compile()
        reports.append((repr(compiled.input_shardings).replace("numax", "jax"),
                        repr(compiled.output_shardings).replace("numax", "jax"),
                        [(np.asarray(a).tolist(), np.asarray(b).tolist(), repr(a.sharding)) for a, b in outs],
                        type(single.input_shardings[0][0]).__name__, type(single.output_shardings).__name__))
    assert reports[0] == reports[1]
