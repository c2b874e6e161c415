"""jax's extension API on numax (`numax.extend`, `numax.interpreters`, the `numax._src` modules JAX's docs import),
against jax: the same code, written once against a library's modules, runs on both and gives the same values.
Covers custom interpreters over make_jaxpr's output, primitives defined only through the API (impl, abstract
eval, JVP, transpose, batching, lowering) under eager, jit, grad and vmap, custom calls with export's safety
check, and jax._src.config's option states."""

import types

import jax
import jax._src.config
import jax._src.core
import jax._src.interpreters.mlir
import jax._src.util
import jax.extend.core
import jax.interpreters.ad
import jax.interpreters.batching
import jax.numpy as jnp
import numpy as np
import pytest

import numax
import numax._src.config
import numax._src.core
import numax._src.interpreters.mlir
import numax._src.util
import numax.extend.core
import numax.interpreters.ad
import numax.interpreters.batching
import numax.numpy as xnp

JAX = types.SimpleNamespace(lib=jax, jnp=jnp, lax=jax.lax, core=jax.extend.core, src_core=jax._src.core,
                            util=jax._src.util, ad=jax.interpreters.ad, batching=jax.interpreters.batching,
                            mlir=jax._src.interpreters.mlir, config=jax._src.config, export=jax.export)
NUMAX = types.SimpleNamespace(lib=numax, jnp=xnp, lax=numax.lax, core=numax.extend.core, src_core=numax._src.core,
                              util=numax._src.util, ad=numax.interpreters.ad, batching=numax.interpreters.batching,
                              mlir=numax._src.interpreters.mlir, config=numax._src.config, export=numax.export)


def assert_same(jax_value, numax_value, rtol=1e-6):
    jax_leaves, numax_leaves = jax.tree.leaves(jax_value), numax.tree.leaves(numax_value)
    assert len(jax_leaves) == len(numax_leaves)
    for expected, actual in zip(jax_leaves, numax_leaves):
        expected, actual = np.asarray(expected), np.asarray(actual)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6)


# --- custom interpreters over make_jaxpr (the "Writing custom interpreters" tutorial) ------------------------------
def evaluator(L):
    """The tutorial's `eval_jaxpr`, written against library `L`'s extension API."""

    def eval_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(var):
            return var.val if type(var) is L.core.Literal else env[var]

        def write(var, val):
            env[var] = val

        L.util.safe_map(write, jaxpr.invars, args)
        L.util.safe_map(write, jaxpr.constvars, consts)
        for eqn in jaxpr.eqns:
            outvals = eqn.primitive.bind(*L.util.safe_map(read, eqn.invars), **eqn.params)
            if not eqn.primitive.multiple_results:
                outvals = [outvals]
            L.util.safe_map(write, eqn.outvars, outvals)
        return L.util.safe_map(read, jaxpr.outvars)

    return eval_jaxpr


def program(L):
    """Literals (`x * 2.0`), a captured array constant, and a primitive of several results (`lax.sort` of two)."""
    table = L.jnp.arange(4.0)

    def f(x, y):
        keys, values = L.lax.sort((x * 2.0 + table, y), num_keys=1)
        return L.jnp.tanh(keys) + 1, values

    return f


@pytest.mark.parametrize("transform", ["none", "jit", "vmap", "grad"])
def test_custom_evaluator_over_make_jaxpr_gives_jaxs_values(transform):
    x, y = np.array([3.0, -1.0, 2.0, 0.5], np.float32), np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    results = []
    for L in (JAX, NUMAX):
        closed = L.lib.make_jaxpr(program(L))(x, y)
        assert isinstance(closed, L.src_core.ClosedJaxpr) and isinstance(closed.jaxpr, L.src_core.Jaxpr)
        assert any(type(a) is L.core.Literal for eqn in closed.jaxpr.eqns for a in eqn.invars)

        def run(x, y, closed=closed, L=L):
            return evaluator(L)(closed.jaxpr, closed.literals, x, y)

        if transform == "jit":
            results.append(L.lib.jit(run)(x, y))
        elif transform == "vmap":
            results.append(L.lib.vmap(run)(np.stack([x, -x]), np.stack([y, y])))
        elif transform == "grad":
            results.append(L.lib.grad(lambda x, run=run, L=L: L.jnp.sum(run(x, y)[0]))(x))
        else:
            results.append(run(x, y))
    assert_same(*results)


def test_eval_jaxpr_and_jaxpr_as_fun_match_jax():
    x = np.array([0.5, 1.5], np.float32)
    results = []
    for L in (JAX, NUMAX):
        closed = L.lib.make_jaxpr(lambda x, L=L: (L.jnp.sin(x) * 3.0, x.sum()))(x)
        results.append((L.src_core.eval_jaxpr(closed.jaxpr, closed.consts, x), L.core.jaxpr_as_fun(closed)(x),
                        L.core.jaxpr_as_fun(closed, x)()))
    assert_same(*results)


def test_inverse_interpreter_composes_with_jit_vmap_grad():
    """The tutorial's inverse interpreter: walking a jaxpr backwards, composed with every transformation."""
    x = (np.arange(5, dtype=np.float32) + 1.0) / 5.0
    results = []
    for L in (JAX, NUMAX):
        registry = {L.lax.exp_p: L.jnp.log, L.lax.tanh_p: L.jnp.arctanh}

        def inverse(fun, L=L, registry=registry):
            def wrapped(*args):
                closed = L.lib.make_jaxpr(fun)(*args)
                env = {}
                read = lambda v: v.val if type(v) is L.core.Literal else env[v]  # noqa: E731
                L.util.safe_map(env.__setitem__, closed.jaxpr.outvars, args)
                for eqn in closed.jaxpr.eqns[::-1]:
                    env[eqn.invars[0]] = registry[eqn.primitive](*L.util.safe_map(read, eqn.outvars))
                return read(closed.jaxpr.invars[0])

            return wrapped

        f = lambda x, L=L: L.jnp.exp(L.jnp.tanh(x))  # noqa: E731
        results.append(L.lib.jit(L.lib.vmap(L.lib.grad(inverse(f))))(x))
    assert_same(*results)


def test_safe_map_and_safe_zip_refuse_lengths_that_differ():
    for L in (JAX, NUMAX):
        assert L.util.safe_map(lambda a, b: a + b, [1, 2], (3, 4)) == [4, 6]
        assert L.util.safe_zip([1, 2], "ab") == [(1, "a"), (2, "b")]
        with pytest.raises(ValueError):
            L.util.safe_map(lambda a, b: a, [1], [1, 2])
        with pytest.raises(ValueError):
            L.util.safe_zip([1, 2], [1])


def test_extend_core_primitives_are_numax_lax_primitives():
    from numax.extend.core import primitives

    for name in ("add_p", "sin_p", "dot_general_p", "reduce_sum_p"):
        assert getattr(primitives, name) is getattr(numax.lax, name)
        assert isinstance(getattr(primitives, name), numax.extend.core.Primitive)
        assert getattr(jax.extend.core.primitives, name).name == getattr(primitives, name).name
    with pytest.raises(AttributeError):
        primitives.not_a_primitive_p  # noqa: B018


# --- primitives defined only through the extension API -------------------------------------------------------------
def mul_add_primitive(L):
    """`x * y + z`: impl, abstract eval, a JVP over the tangents (symbolic zeros included), a batching rule that
    moves batch axes, and a lowering written with `lower_fun`."""
    mul_add_p = L.core.Primitive("mul_add")
    mul_add_p.def_impl(lambda x, y, z: x * y + z)
    mul_add_p.def_abstract_eval(lambda x, y, z: L.src_core.ShapedArray(x.shape, x.dtype))

    def jvp(primals, tangents):
        x, y, z = primals
        tx, ty, tz = (L.ad.instantiate_zeros(t) for t in tangents)
        return mul_add_p.bind(x, y, z), tx * y + x * ty + tz

    def batch(values, dims):
        size = next(v.shape[d] for v, d in zip(values, dims) if d is not None)
        moved = [L.jnp.moveaxis(v, d, 0) if d is not None else L.jnp.broadcast_to(v, (size,) + v.shape)
                 for v, d in zip(values, dims)]
        return mul_add_p.bind(*moved), 0

    L.ad.primitive_jvps[mul_add_p] = jvp
    L.batching.primitive_batchers[mul_add_p] = batch
    L.mlir.register_lowering(mul_add_p, L.mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))
    return mul_add_p


def scale_primitive(L):
    """A linear primitive `x * factor`: JVP and transpose from `deflinear2`, elementwise batching."""
    scale_p = L.core.Primitive("scale")
    scale_p.def_impl(lambda x, *, factor: x * factor)
    scale_p.def_abstract_eval(lambda x, *, factor: x)
    L.ad.deflinear2(scale_p, lambda ct, x, *, factor: [scale_p.bind(ct, factor=factor)])
    L.batching.defvectorized(scale_p)
    L.mlir.register_lowering(scale_p, L.mlir.lower_fun(lambda x, *, factor: [x * factor]))
    return scale_p


def split_primitive(L):
    """Several results: `(x - 1, x * x)`, lowered through `lower_fun(multiple_results=True)`."""
    split_p = L.core.Primitive("split_two")
    split_p.multiple_results = True
    split_p.def_impl(lambda x: [x - 1, x * x])
    split_p.def_abstract_eval(lambda x: [x, x])
    L.mlir.register_lowering(split_p, L.mlir.lower_fun(lambda x: [x - 1, x * x]))
    return split_p


@pytest.mark.parametrize("transform", ["eager", "jit", "grad", "jit_grad", "vmap", "vmap_axis1", "jvp"])
def test_user_primitive_through_the_api_matches_jax(transform):
    x = np.array([[1.0, 2.0, -3.0], [0.5, 4.0, 2.0]], np.float32)
    y = np.array([[2.0, -1.0, 0.5], [1.0, 3.0, -2.0]], np.float32)
    z = np.array([0.25, 0.5, 1.0], np.float32)
    results = []
    for L in (JAX, NUMAX):
        mul_add_p, scale_p = mul_add_primitive(L), scale_primitive(L)

        def f(x, y, z, mul_add_p=mul_add_p, scale_p=scale_p, L=L):
            zb = L.jnp.broadcast_to(z, x.shape)
            return L.jnp.sum(L.jnp.sin(scale_p.bind(mul_add_p.bind(x, y, zb), factor=3.0)))

        def g(x, y, z, mul_add_p=mul_add_p):
            return mul_add_p.bind(x, y, z)

        if transform == "eager":
            results.append((f(x, y, z), g(x[0], y[0], z)))
        elif transform == "jit":
            results.append((L.lib.jit(f)(x, y, z), L.lib.jit(g)(x[0], y[0], z)))
        elif transform == "grad":
            results.append(L.lib.grad(f, argnums=(0, 1, 2))(x, y, z))
        elif transform == "jit_grad":
            results.append(L.lib.jit(L.lib.grad(f, argnums=(0, 2)))(x, y, z))
        elif transform == "vmap":
            results.append(L.lib.vmap(g, in_axes=(0, 0, None))(x, y, z))
        elif transform == "vmap_axis1":
            results.append(L.lib.jit(L.lib.vmap(g, in_axes=(1, 0, None)))(x.T, y, z))
        else:
            results.append(L.lib.jvp(f, (x, y, z), (y, x, z)))
    assert_same(*results, rtol=1e-5)


def test_primitive_of_several_results_and_its_jaxpr():
    x = np.array([1.5, -2.0], np.float32)
    results = []
    for L in (JAX, NUMAX):
        split_p = split_primitive(L)
        f = lambda x, split_p=split_p: split_p.bind(x)  # noqa: E731
        closed = L.lib.make_jaxpr(f)(x)
        assert [eqn.primitive.name for eqn in closed.eqns] == ["split_two"] and len(closed.jaxpr.outvars) == 2
        results.append((f(x), L.lib.jit(f)(x), evaluator(L)(closed.jaxpr, closed.consts, x)))
    assert_same(*results)


def test_a_primitive_without_a_jvp_rule_cannot_be_differentiated():
    p = numax.extend.core.Primitive("no_jvp")
    p.def_abstract_eval(lambda x: x)
    numax.interpreters.mlir.register_lowering(p, numax.interpreters.mlir.lower_fun(lambda x: x, False))
    assert float(numax.jit(p.bind)(2.0)) == 2.0
    with pytest.raises(NotImplementedError, match="no_jvp"):
        numax.grad(p.bind)(2.0)


# --- custom calls and export's safety check ------------------------------------------------------------------------
def custom_call_primitive(L, target):
    prim = L.src_core.Primitive(f"prim_{target}")
    prim.def_abstract_eval(lambda x: x)
    L.mlir.register_lowering(prim, lambda ctx, o: L.mlir.custom_call(
        target, operands=[o], result_types=[o.type], operand_layouts=[[0]], result_layouts=[[0]]).results)
    return prim


def test_custom_call_lowering_and_exports_safety_check():
    x = np.ones(3, np.float32)
    for L in (JAX, NUMAX):
        prim = custom_call_primitive(L, "my_custom_target")
        text = L.lib.jit(prim.bind).lower(x).as_text()
        assert "my_custom_target" in text and "custom_call" in text and "api_version = 2 : i32" in text
        with pytest.raises(ValueError, match="custom calls whose targets have no compatibility guarantees"):
            L.export.export(L.lib.jit(prim.bind))(x)
        for check in ("my_custom_target", "ALL"):
            exported = L.export.export(L.lib.jit(prim.bind),
                                       disabled_checks=[L.export.DisabledSafetyCheck.custom_call(check)])(x)
            assert "my_custom_target" in exported.mlir_module()


def test_user_primitive_exports_and_its_export_runs():
    x, y, z = (np.array([1.0, -2.0, 3.0], np.float32) * k for k in (1, 2, 3))
    results = []
    for L in (JAX, NUMAX):
        mul_add_p = mul_add_primitive(L)
        exported = L.export.export(L.lib.jit(mul_add_p.bind))(x, y, z)
        results.append((exported.call(x, y, z), L.lib.grad(lambda x, e=exported: e.call(x, y, z).sum())(x)))
    assert_same(*results)


def test_export_accepts_the_stable_custom_calls_of_numax_linalg():
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    exported = numax.export.export(numax.jit(xnp.linalg.cholesky))(a)
    assert "lapack_spotrf_ffi" in exported.mlir_module()
    np.testing.assert_allclose(np.asarray(exported.call(a)), np.linalg.cholesky(a), rtol=1e-6)


def test_lowering_rule_sees_avals_and_platform():
    seen = {}
    for name, L in (("jax", JAX), ("numax", NUMAX)):
        prim = L.core.Primitive("probe")
        prim.def_abstract_eval(lambda x: x)

        def rule(ctx, o, name=name, L=L):
            seen[name] = ([(a.shape, a.dtype) for a in ctx.avals_in], ctx.module_context.platforms)
            return [L.mlir.ir_constant(np.zeros(3, np.float32))]

        L.mlir.register_lowering(prim, rule)
        assert_same(L.lib.jit(prim.bind)(np.ones(3, np.float32)), np.zeros(3, np.float32))
    assert seen["jax"] == seen["numax"]


def test_emitting_outside_a_lowering_rule_raises_runtime_error():
    for L in (JAX, NUMAX):
        with pytest.raises(RuntimeError):
            L.mlir.custom_call("x", operands=[], result_types=[])


def test_a_rule_returning_the_wrong_number_of_values_raises_value_error():
    for L in (JAX, NUMAX):
        prim = L.core.Primitive("two_for_one")
        prim.def_abstract_eval(lambda x: x)
        L.mlir.register_lowering(prim, lambda ctx, x: [x, x])
        with pytest.raises(ValueError):  # (numax lowers when the text is first asked for, jax in lower())
            L.lib.jit(prim.bind).lower(np.ones(2, np.float32)).as_text()


def test_register_lowering_for_an_unknown_platform_raises():
    for L in (JAX, NUMAX):
        with pytest.raises(NotImplementedError, match="unknown platform"):
            L.mlir.register_lowering(L.core.Primitive("p"), lambda ctx, x: [x], platform="abacus")


# --- jax._src.config -----------------------------------------------------------------------------------------------
def test_config_states_read_and_set_options_for_a_block():
    for L in (JAX, NUMAX):
        states = L.config
        assert states.enable_checks.value is False
        with states.enable_checks():
            assert states.enable_checks.value is True
            assert L.lib.config.jax_enable_checks is True
        assert states.enable_checks.value is False
        with states.jax_export_calling_convention_version(9):
            assert states.jax_export_calling_convention_version.value == 9
        assert states.jax_export_calling_convention_version.value == 10
        with pytest.raises(TypeError, match="requires an argument"):
            states.jax_export_calling_convention_version()
        with pytest.raises(AttributeError):
            states.not_an_option  # noqa: B018


def test_exported_calling_convention_version_under_the_option():
    for L in (JAX, NUMAX):
        with L.config.jax_export_calling_convention_version(10):
            assert L.export.export(L.lib.jit(L.jnp.cos))(1.0).calling_convention_version == 10
