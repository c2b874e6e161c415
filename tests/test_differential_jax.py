"""numax against jax on random programs (tests/differential.py), and the defects such runs found, each as a
regression case compared with jax in 32- and 64-bit mode. Long runs: bench/differential_jax.py."""

import differential as D
import numpy as np
import pytest

# --- the random programs ---------------------------------------------------------------------------------------
# A fixed set of seeds (even: 32-bit, odd: 64-bit), every transform of each; about a second a program.
PROGRAM_SEEDS = range(12)


@pytest.mark.parametrize("seed", PROGRAM_SEEDS)
def test_random_program_matches_jax(seed):
    program = D.generate(seed, x64=bool(seed % 2))
    mismatches = D.check(program)
    assert not mismatches, "\n\n".join(map(str, mismatches))


def test_generator_is_seeded():
    first, again = D.generate(7, x64=False), D.generate(7, x64=False)
    assert first.describe() == again.describe()
    assert all(np.array_equal(a, b) for a, b in zip(first.inputs, again.inputs))


def test_a_difference_is_reported():
    """The comparison itself can fail: a dtype, a weak type, a value or an error class that differs is named."""
    def numax_side(v):
        return D.outcome(D.NUMAX, lambda: v)

    jax_side = D.outcome(D.JAX, lambda: D.jnp.ones(3, "float32"))
    assert D.differences(jax_side, numax_side(D.xnp.ones(3, "int32")))[0].startswith("output 0: dtype")
    assert "values differ" in D.differences(jax_side, numax_side(D.xnp.zeros(3, "float32")))[0]
    assert "weak_type" in D.differences(D.outcome(D.JAX, lambda: D.jnp.asarray(1.0) * 2),
                                        numax_side(D.xnp.asarray(np.float32(2.0))))[0]
    raising = D.outcome(D.JAX, lambda: D.jnp.ones(3) + D.jnp.ones(4))
    assert "numax returns a value" in D.differences(raising, numax_side(D.xnp.ones(3)))[0]
    assert not D.differences(raising, D.outcome(D.NUMAX, lambda: D.xnp.ones(3) + D.xnp.ones(4)))


# --- regressions ------------------------------------------------------------------------------------------------
i32 = np.arange(-2, 3, dtype=np.int32)
u8 = np.arange(5, dtype=np.uint8)
b = np.array([True, False, True, True, False])
f32 = np.linspace(-2, 2, 5, dtype=np.float32)
c64 = (f32 + 1j * f32[::-1]).astype(np.complex64)

# name -> function(library): each runs under numax and jax, and must agree (values, dtypes, weak types, shapes,
# or the class of the error jax raises), with 64-bit mode off and on.
REGRESSIONS = {
    # integer and bool inputs keep their width in 64-bit mode (jax's to_inexact_dtype)
    "sin_int32": lambda L: L.np.sin(i32),
    "sin_bool": lambda L: L.np.sin(b),
    "sin_python_int": lambda L: L.np.sin(3),
    "mean_int32": lambda L: L.np.mean(i32),
    "std_int32": lambda L: L.np.std(i32),
    "var_bool": lambda L: L.np.var(b),
    "nanvar_int32": lambda L: L.np.nanvar(i32),
    "gelu_int32": lambda L: L.nn.gelu(i32),
    "heaviside_int32": lambda L: L.np.heaviside(i32, i32),
    "floor_divide_bool": lambda L: L.np.asarray(b) // L.np.asarray(b),
    "fmod_bool": lambda L: L.np.fmod(b, b),
    "sort_complex_bool": lambda L: L.np.sort_complex(b),
    "rint_int32": lambda L: L.np.rint(i32),  # jax's rint does use the default float
    "sort_complex_2d_last_axis": lambda L: L.np.sort_complex(np.array([[3, 1, 0]], np.int8)),
    "logaddexp_complex": lambda L: L.np.logaddexp(c64, c64[::-1]),
    "logaddexp_complex_jvp": lambda L: L.api.jvp(L.np.logaddexp, (c64, c64[::-1]), (c64, c64)),
    # shapes and values
    "median_0d_keepdims": lambda L: L.np.median(L.np.asarray(2.0), keepdims=True),
    "median_int8": lambda L: L.np.median(i32.astype(np.int8)),
    "quantile_float16_python_q": lambda L: L.np.quantile(f32.astype(np.float16), 0.25),
    "var_ddof_len_jvp": lambda L: L.api.jvp(lambda x: L.np.var(x, ddof=5), (f32,), (f32,)),
    "var_ddof_over_len": lambda L: L.np.var(np.ones((2, 3), np.float32), axis=0, ddof=3),
    "weak_tangent_of_constant_output": lambda L: L.api.jvp(lambda x: L.np.asarray(2.0) * 3.0, (f32,), (f32,)),
    # numax raised where jax returns
    "sum_bool_dtype_bool": lambda L: L.np.sum(b, dtype=bool),
    "prod_bool_dtype_bool": lambda L: L.np.prod(b, dtype=bool),
    "sum_bool_no_promotion": lambda L: L.np.sum(b, promote_integers=False),
    "cummin_complex": lambda L: L.lax.cummin(c64, axis=0),
    "cummax_complex_reverse": lambda L: L.lax.cummax(c64, axis=0, reverse=True),
    "cumlogsumexp_complex": lambda L: L.lax.cumlogsumexp(c64, axis=0),
    "cumlogsumexp_complex_jvp": lambda L: L.api.jit(  # jitted: its scan is many small ops
        lambda x: L.api.jvp(lambda y: L.lax.cumlogsumexp(y, axis=0), (x,), (x,)))(c64),
    "cummax_bool_rejected": lambda L: L.lax.cummax(b, axis=0),
    "ldexp_float_bool": lambda L: L.np.ldexp(f32, b),
    "ldexp_complex_rejected": lambda L: L.np.ldexp(c64, i32),
    "ldexp_float_exponent_rejected": lambda L: L.np.ldexp(f32, f32),
    "nonzero_size_0_jit": lambda L: L.api.jit(lambda x: L.np.nonzero(x, size=0)[0])(f32),
    # numax returned where jax raises
    "clip_complex_bound": lambda L: L.np.clip(f32, 1j, 2),
    "clip_complex_input": lambda L: L.np.clip(c64, 0, 1),
    "clamp_weak_int_on_uint8": lambda L: L.lax.clamp(1, u8, 3),
    "clamp_weak_float_on_float32": lambda L: L.lax.clamp(0.0, f32, 1.0),
    "full_like_int32_complex": lambda L: L.np.full_like(i32, 1j),
    "full_int32_complex": lambda L: L.np.full((2,), 1j, np.int32),
    "around_int_negative_decimals": lambda L: L.np.around(i32, decimals=-1),
    "around_float16_decimals": lambda L: L.np.around(f32.astype(np.float16) * 100, decimals=2),
    # found by the long runs
    "hypot_complex_value_error": lambda L: L.np.hypot(c64, c64),
    "isposinf_complex_value_error": lambda L: L.np.isposinf(c64),
    "signbit_complex_value_error": lambda L: L.np.signbit(c64),
    "heaviside_complex_type_error": lambda L: L.np.heaviside(c64, c64),
    "hypot_bool_0d_python_scalar_weak": lambda L: L.np.hypot(np.array(True), 2),
    "heaviside_bool_0d_python_scalar_weak": lambda L: L.np.heaviside(np.array(False), 0.5),
    "hypot_bool_array_python_scalar_strong": lambda L: L.np.hypot(b, 2),
    "hypot_uint8_0d_python_scalar_weak": lambda L: L.np.hypot(np.array(2, np.uint8), 2.5),
    "power_int32_0d_python_scalar_weak": lambda L: L.np.power(np.array(2, np.int32), 2.5),
    "hypot_bool_bool_strong": lambda L: L.np.hypot(b, b),
    "lax_cumsum_negative_axis": lambda L: L.lax.cumsum(f32, axis=-1),
    "convert_negative_floats_to_uint8": lambda L: L.lax.convert_element_type(
        np.array([-2.5, 300, np.nan, 3.7], np.float16), np.uint8),
    "weak_host_constant_under_jvp": lambda L: L.api.jvp(lambda x: (x, L.np.add(b, 2.5)), (f32,), (f32,)),
    "weak_host_constant_under_jit": lambda L: L.api.jit(lambda x: (x, L.np.maximum(i32.astype(np.int8), 1.5j)))(f32),
    "median_int8_under_vmap": lambda L: L.api.vmap(L.np.median)(np.stack([i32, i32]).astype(np.int8)),
    "full_like_uint8_negative_0d_fill": lambda L: L.np.full_like(np.uint8(0), np.array(-2.5, np.float16)),
}


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with D.x64_mode(request.param):
        yield


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_matches_jax(name, mode):
    case = REGRESSIONS[name]
    expected = D.outcome(D.JAX, lambda: case(D.JAX))
    got = D.outcome(D.NUMAX, lambda: case(D.NUMAX))
    assert not D.differences(expected, got), D.differences(expected, got)
