"""The keyword options of numax's public entry points, audited against JAX's: every option JAX's entry point
takes is accepted by name (implemented, or a NotImplementedError naming it), and an unknown keyword is a
TypeError, as in JAX."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxlib.xla_client import XlaRuntimeError
from numax.lowering import xla

import numax
import numax.numpy as xnp

ENTRY_POINTS = ["jit", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "vmap",
                "checkpoint", "remat", "custom_jvp", "custom_vjp", "make_jaxpr", "eval_shape", "pure_callback",
                "named_call", "linear_transpose", "closure_convert", "device_put", "device_get",
                "block_until_ready", "disable_jit", "default_device", "ensure_compile_time_eval", "enable_x64",
                "jacobian", "custom_gradient", "clear_caches", "devices", "local_devices", "device_count",
                "default_backend"]


def _parameters(function):
    return {name: p.kind for name, p in inspect.signature(function).parameters.items()}


@pytest.mark.parametrize("name", ENTRY_POINTS + ["debug.print", "debug.callback"])
def test_every_jax_option_is_accepted_by_name(name):
    def lookup(module):
        for part in name.split("."):
            module = getattr(module, part)
        return module

    ours, theirs = _parameters(lookup(numax)), _parameters(lookup(jax))
    theirs = {k: kind for k, kind in theirs.items() if not k.startswith("_")}  # jax's private parameters
    missing = sorted(set(theirs) - set(ours))
    assert not missing, f"numax.{name} lacks JAX's parameters {missing}"
    for parameter, kind in theirs.items():
        if kind is inspect.Parameter.KEYWORD_ONLY:
            assert ours[parameter] in (kind, inspect.Parameter.POSITIONAL_OR_KEYWORD), parameter


@pytest.mark.parametrize("make", [
    lambda lib: lib.jit(np.sin, static_argnum=0),
    lambda lib: lib.jit(np.sin, donate=0),
    lambda lib: lib.grad(np.sin, argnum=0),
    lambda lib: lib.vmap(np.sin, in_axis=0),
    lambda lib: lib.checkpoint(np.sin, policy_name=None),
    lambda lib: lib.custom_vjp(np.sin, nondiff_argnum=0),
], ids=["jit static_argnum", "jit donate", "grad argnum", "vmap in_axis", "checkpoint", "custom_vjp"])
def test_misspelled_options_are_type_errors(make):
    with pytest.raises(TypeError) as theirs:
        make(jax)
    with pytest.raises(TypeError) as ours:
        make(numax)
    assert "unexpected keyword argument" in str(theirs.value) and "unexpected keyword argument" in str(ours.value)


# --- jit's options -----------------------------------------------------------------------------------
def test_jit_sharding_options_reject_what_is_not_a_sharding_like_jax():
    for option in ("in_shardings", "out_shardings"):
        for lib, lib_np in ((jax, jax.numpy), (numax, xnp)):
            with pytest.raises(TypeError):
                lib.jit(lib_np.sin, **{option: object()})(0.5)
    assert numax.jit(xnp.sin, in_shardings=None, out_shardings=None)(0.5) == pytest.approx(np.sin(0.5), rel=1e-6)


def test_jit_rejects_bad_combinations_like_jax():
    for lib in (jax, numax):
        with pytest.raises(ValueError):
            lib.jit(np.sin, device=lib.devices()[0], backend="cpu")
        with pytest.raises(ValueError):
            lib.jit(lambda x: x, static_argnums=0, donate_argnums=0)
        with pytest.raises(TypeError, match="Expected a callable value"):
            lib.jit(3)


def test_jit_static_and_donated_argument_names():
    def f(x, scale, y):
        return x * scale + y

    g = numax.jit(f, static_argnames="scale", donate_argnames=("y",))
    x, y = xnp.arange(3.0), xnp.ones(3)
    np.testing.assert_allclose(g(x, 2.0, y=y), np.arange(3.0) * 2 + 1)
    assert y.is_deleted() and not x.is_deleted()
    y2 = xnp.ones(3)
    np.testing.assert_allclose(g(x, 3.0, y2), np.arange(3.0) * 3 + 1)  # a name implies its position
    assert y2.is_deleted() and g._cache_size() == 2


def test_jit_device_and_backend_fix_the_placement():
    devices = numax.devices("cpu")  # several devices on any machine (the suite asks XLA for 8 host devices)
    target = devices[-1]
    on_first = numax.device_put(xnp.arange(4.0), devices[0])
    out = numax.jit(lambda v: v * 2, device=target)(on_first)
    assert out.device == target
    np.testing.assert_array_equal(out, np.arange(4.0) * 2)
    out = numax.jit(lambda v: v + 1, backend="cpu")(on_first)
    assert out.device == xla.get_backend("cpu").default_device
    lowered = numax.jit(lambda v: v * 2, device=target).lower(on_first)
    assert lowered.compile()(on_first).device == target


def test_jit_inline_leaves_no_call_in_the_program():
    def inner(a, b):
        return a * b

    inlined = numax.make_jaxpr(lambda x: numax.jit(inner, inline=True)(x, 2.0) + 1)(1.0)
    called = numax.make_jaxpr(lambda x: numax.jit(inner)(x, 2.0) + 1)(1.0)
    assert [e.primitive.name for e in inlined.program.equations] == ["mul", "add"]
    assert [e.primitive.name for e in called.program.equations] == ["jit", "add"]
    assert float(numax.jit(lambda x: numax.jit(inner, inline=True)(x, 2.0) + 1)(3.0)) == 7.0


def test_jit_compiler_options_reach_xla():
    kept = numax.jit(lambda x: x * 2 + 1, compiler_options={"xla_cpu_enable_fast_math": False}, keep_unused=True)
    assert float(kept(2.0)) == 5.0
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option"):
        jax.jit(lambda x: x + 1, compiler_options={"not_an_option": 1})(1.0)
    with pytest.raises(XlaRuntimeError, match="No such compile option"):
        numax.jit(lambda x: x + 1, compiler_options={"not_an_option": 1})(1.0)
    with pytest.raises(XlaRuntimeError, match="No such compile option"):
        numax.jit(lambda x: x + 1).lower(1.0).compile(compiler_options={"not_an_option": 1})


# --- the other entry points' options ---------------------------------------------------------------
def test_linearize_has_aux_matches_jax():
    def make(lib):
        return lambda x: (lib.sin(x) * x, {"square": x ** 2})

    y, f_jvp, aux = numax.linearize(make(xnp), 2.0, has_aux=True)
    y_ref, f_ref, aux_ref = jax.linearize(make(jnp), 2.0, has_aux=True)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)
    np.testing.assert_allclose(f_jvp(1.5), f_ref(1.5), rtol=1e-6)
    np.testing.assert_allclose(aux["square"], aux_ref["square"])


def test_vjp_reduce_axes_raises_like_jax():
    for lib, np_lib in ((jax, jnp), (numax, xnp)):
        with pytest.raises(NotImplementedError, match="reduce_axes"):
            lib.vjp(np_lib.sin, 1.0, reduce_axes=("i",))
        assert len(lib.vjp(np_lib.sin, 1.0, reduce_axes=())) == 2


def test_vmap_sum_match_sums_batched_outputs_with_out_axis_none():
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    ours = numax.vmap(lambda a: (a * 2, a.sum()), out_axes=(0, None), sum_match=True)(x)
    theirs = jax.vmap(lambda a: (a * 2, a.sum()), out_axes=(0, None), sum_match=True)(x)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b)
    with pytest.raises(ValueError, match="out_axes is None"):
        numax.vmap(lambda a: a.sum(), out_axes=None)(x)


def test_checkpoint_static_argnames_and_the_removed_concrete_option():
    traces = []

    def f(x, power):
        traces.append(power)
        return x ** power

    g = numax.checkpoint(f, static_argnames="power")
    assert float(numax.grad(lambda x: g(x, power=3))(2.0)) == 12.0
    assert float(numax.grad(lambda x: g(x, power=2))(2.0)) == 4.0
    assert sorted(set(traces)) == [2, 3]
    with pytest.raises(NotImplementedError, match="concrete"):
        numax.checkpoint(np.sin, concrete=True)
    # jax 0.10 says why; jax 0.11 has no such option at all.
    with pytest.raises((NotImplementedError, TypeError), match="concrete"):
        jax.checkpoint(np.sin, concrete=True)


def test_newer_jax_options_name_themselves():
    for call, option in [(lambda: numax.vjp(xnp.sin, 1.0, saveable_args=False), "saveable_args"),
                         (lambda: numax.vjp(xnp.sin, 1.0, in_nzs=[True]), "in_nzs"),
                         (lambda: numax.linearize(xnp.sin, 1.0, in_nzs=[True]), "in_nzs"),
                         (lambda: numax.custom_gradient(xnp.sin, with_logs=True), "with_logs")]:
        with pytest.raises(NotImplementedError, match=option):
            call()


def test_make_jaxpr_axis_env_names_itself():
    with pytest.raises(NotImplementedError, match="axis_env"):
        numax.make_jaxpr(xnp.sin, axis_env=[("i", 4)])(1.0)


def test_device_put_donate_and_may_alias():
    devices = numax.devices("cpu")
    x = xnp.arange(3.0, device=devices[0])
    assert numax.device_put(x) is x and numax.device_put(x, may_alias=True) is x
    copy = numax.device_put(x, may_alias=False)
    assert copy is not x and not x.is_deleted()
    np.testing.assert_array_equal(copy, x)
    tree = numax.device_put({"a": x, "b": 2.0}, {"a": devices[1], "b": devices[2]})
    assert tree["a"].device == devices[1] and tree["b"].device == devices[2]
    moved = numax.device_put(copy, devices[1], donate=True)
    assert copy.is_deleted() and moved.device == devices[1]
    np.testing.assert_array_equal(moved, np.arange(3.0))
    for lib, np_lib in ((jax, jnp), (numax, xnp)):
        with pytest.raises(ValueError, match="may_alias and donate"):
            lib.device_put(np_lib.ones(2), donate=True, may_alias=True)


def test_debug_print_options(capsys):
    numax.debug.print(ordered=True)("x = {}", 1.5)
    numax.debug.print("{} {a}", xnp.arange(2), a=3, skip_format_check=True)
    assert capsys.readouterr().out == "x = 1.5\n[0 1] 3\n"


def test_default_device_takes_jax_parameter_name():
    device = numax.devices("cpu")[1]
    with numax.default_device(new_val=device):
        assert xnp.zeros(2).device == device
    assert xnp.zeros(2).device == numax.devices()[0]
