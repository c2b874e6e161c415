"""Where numax and jax differ on a GPU, bit by bit: bf16 sort/top_k with NaNs, an initializer under jit,
sinc of infinities, integer convolutions. Run on the GPU machine with JAX_PLATFORMS=cuda,cpu.

    python3 bench/gpu_diff_probe.py
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cuda,cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402
from numax import lax  # noqa: E402
from numax import nn as xnn  # noqa: E402
from numax import random as xr  # noqa: E402

bf16 = np.dtype(ml_dtypes.bfloat16)
print("numax", numax.default_backend(), "jax", jax.__version__, jax.default_backend(),
      "semantics", numax.config.jax_semantics)


def bits(x):
    x = np.asarray(x)
    return x.view(np.uint16) if x.dtype.itemsize == 2 else x.view(np.uint32) if x.dtype.kind == "f" else x


def show_diff(label, got, want):
    got, want = np.asarray(got), np.asarray(want)
    gb, wb = bits(got), bits(want)
    differ = gb != wb
    if not differ.any():
        print(f"{label}: same")
        return
    both_nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32)) if got.dtype.kind == "f" \
        else np.zeros(got.shape, bool)
    print(f"{label}: {differ.sum()} differ, {(differ & ~both_nan).sum()} of them not both NaN")
    for index in list(zip(*np.nonzero(differ)))[:6]:
        print("   at", index, "numax", hex(int(gb[index])), got[index], "jax", hex(int(wb[index])), want[index])


# --- sort/top_k on bf16 with special values, as in tests/test_lax_sorting.py ---------------------------
_specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 0.0, 1.5])


def special_floats(rng, shape, dtype):
    x = rng.uniform(-3.0, 3.0, shape).astype(dtype).reshape(-1)
    picks = rng.integers(0, len(_specials), x.size)
    use = rng.random(x.size) < 0.5
    x[use] = _specials[picks[use]].astype(dtype)
    return x.reshape(shape)


for dtype in (bf16, np.float16, np.float32):
    for shape, dimension in [((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)]:
        x = special_floats(np.random.default_rng(0), shape, dtype)
        want = jax.lax.sort(x, dimension=dimension)
        print("sort input", dtype.__name__ if isinstance(dtype, type) else dtype, shape, dimension,
              [hex(v) for v in bits(x).reshape(-1)])
        show_diff("  eager", lax.sort(x, dimension=dimension), want)
        show_diff("  jit", numax.jit(lambda v, d=dimension: lax.sort(v, dimension=d))(x), want)
        show_diff("  jax cpu vs gpu", jax.jit(lambda v, d=dimension: jax.lax.sort(v, dimension=d), backend="cpu")(x),
                  want)
    for shape, k, axis in [((10,), 3, -1), ((4, 6), 6, -1), ((4, 6), 0, -1), ((5, 4, 3), 2, 0), ((5, 4, 3), 4, 1)]:
        x = special_floats(np.random.default_rng(0), shape, dtype)
        want_values, want_indices = jax.lax.top_k(x, k, axis=axis)
        print("top_k input", shape, k, axis, [hex(v) for v in bits(x).reshape(-1)][:24])
        for label, (values, indices) in (("eager", lax.top_k(x, k, axis=axis)),
                                         ("jit", numax.jit(lambda v, k=k, a=axis: lax.top_k(v, k, axis=a))(x))):
            show_diff(f"  {label} values", values, want_values)
            show_diff(f"  {label} indices", indices, want_indices)
        cpu_values, cpu_indices = jax.jit(lambda v, k=k, a=axis: jax.lax.top_k(v, k, axis=a), backend="cpu")(x)
        show_diff("  jax cpu vs gpu values", cpu_values, want_values)
        show_diff("  jax cpu vs gpu indices", cpu_indices, want_indices)

# --- he_normal under jit ---------------------------------------------------------------------------------
init = xnn.initializers.he_normal()
ours_jit = np.asarray(numax.jit(lambda key: init(key, (4, 3)))(xr.PRNGKey(5)))
ours_eager = np.asarray(init(xr.PRNGKey(5), (4, 3)))
theirs = np.asarray(jax.nn.initializers.he_normal()(jax.random.PRNGKey(5), (4, 3)))
theirs_jit = np.asarray(jax.jit(lambda key: jax.nn.initializers.he_normal()(key, (4, 3)))(jax.random.PRNGKey(5)))
theirs_cpu = np.asarray(jax.jit(lambda key: jax.nn.initializers.he_normal()(key, (4, 3)), backend="cpu")(
    jax.random.PRNGKey(5)))
for label, a, b in (("numax jit vs jax eager", ours_jit, theirs), ("numax eager vs jax eager", ours_eager, theirs),
                    ("numax jit vs jax jit", ours_jit, theirs_jit), ("jax jit vs jax eager", theirs_jit, theirs),
                    ("jax cpu jit vs jax gpu eager", theirs_cpu, theirs)):
    ulps = np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))
    print(f"he_normal {label}: max ulps {ulps.max()}, max rel {np.max(np.abs(a - b) / np.abs(b)):.3g}")

# --- sinc and sin of infinities ------------------------------------------------------------------------
specials = np.array([np.inf, -np.inf, np.nan, 0.0, 1.5, 1e30], np.float32)
for label, value in (("jnp.sinc eager", jnp.sinc(specials)), ("jnp.sinc jit", jax.jit(jnp.sinc)(specials)),
                     ("jnp.sin eager", jnp.sin(specials)), ("numax sinc eager", xnp.sinc(specials)),
                     ("numax sinc jit", numax.jit(xnp.sinc)(specials)), ("numax sin", xnp.sin(specials)),
                     ("jnp.sinc cpu", jax.jit(jnp.sinc, backend="cpu")(specials))):
    print(label, np.asarray(value))
for label, fn in (("jnp", jnp), ("numax", xnp)):
    for name in ("log2", "log10", "log", "sinc", "exp2", "sin"):
        out = getattr(fn, name)(2)
        print(label, name, "(2):", out.dtype, out.weak_type)

# --- integer convolutions --------------------------------------------------------------------------------
rng = np.random.default_rng(0)
lhs8, rhs8 = rng.integers(-128, 128, (2, 3, 9)).astype(np.int8), rng.integers(-128, 128, (4, 3, 3)).astype(np.int8)
reference = np.asarray(jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, (1,), "VALID",
                                                                          preferred_element_type=np.int32),
                               backend="cpu")(lhs8, rhs8))
for pref in (np.int32, None, np.float32):
    try:
        got = lax.conv_general_dilated(lhs8, rhs8, (1,), "VALID", preferred_element_type=pref)
        got_jit = numax.jit(lambda a, b, p=pref: lax.conv_general_dilated(a, b, (1,), "VALID",
                                                                          preferred_element_type=p))(lhs8, rhs8)
        want = reference.astype(pref or np.int8)
        print("int8 conv ->", pref, "eager equal:", np.array_equal(np.asarray(got), want), "jit equal:",
              np.array_equal(np.asarray(got_jit), want), np.asarray(got).dtype)
    except Exception as error:  # noqa: BLE001
        print("int8 conv ->", pref, "FAILED", type(error).__name__, str(error)[:300])
    try:
        jax.lax.conv_general_dilated(lhs8, rhs8, (1,), "VALID", preferred_element_type=pref).block_until_ready()
        print("  jax gpu ok")
    except Exception as error:  # noqa: BLE001
        print("  jax gpu FAILED", type(error).__name__, str(error)[:200])
lhs32, rhs32 = (rng.integers(-2**31, 2**31, s).astype(np.int32) for s in ((2, 3, 9), (4, 3, 3)))
want32 = np.asarray(jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, (1,), "VALID"), backend="cpu")(
    lhs32, rhs32))
print("int32 conv equal:", np.array_equal(np.asarray(lax.conv_general_dilated(lhs32, rhs32, (1,), "VALID")), want32))

# --- log2 and sinc in this jax release -------------------------------------------------------------------
print(jax.make_jaxpr(jnp.log2)(2))
print(jax.make_jaxpr(jnp.log2)(np.ones(2, bf16)))
for scalar in (2, 1.5, 2 + 0j):
    print("log2 weak", scalar, jnp.log2(scalar).weak_type, xnp.log2(scalar).weak_type)
z = np.array([complex(np.inf, 2), complex(-np.inf, 0), complex(1, np.inf), complex(np.inf, np.nan), 0], np.complex64)
print("complex sinc jax", np.asarray(jnp.sinc(z)), "numax", np.asarray(xnp.sinc(z)))
for dtype in (bf16, np.float16):
    every = np.arange(2 ** 16, dtype=np.uint16).view(dtype)
    every = every[np.isfinite(every.astype(np.float32)) & (every.astype(np.float32) > 0)]
    for label, ours, theirs in (("jit", numax.jit(xnp.log2)(every), jax.jit(jnp.log2)(every)),
                                ("eager", xnp.log2(every), jnp.log2(every))):
        differ = bits(ours) != bits(theirs)
        print(f"log2 {np.dtype(dtype).name} {label}: {differ.sum()} of {every.size} differ", every[differ][:4],
              np.asarray(ours)[differ][:4], np.asarray(theirs)[differ][:4])
finite = np.random.default_rng(1).uniform(1e-30, 1e30, 20000).astype(np.float32)
for label, ours, theirs in (("jit", numax.jit(xnp.log2)(finite), jax.jit(jnp.log2)(finite)),
                            ("eager", xnp.log2(finite), jnp.log2(finite))):
    ulps = np.abs(np.asarray(ours).view(np.int32).astype(np.int64) - np.asarray(theirs).view(np.int32))
    print(f"log2 float32 {label}: {(ulps > 0).sum()} of {finite.size} differ, max {ulps.max()} ulps")
