"""numax.export for several platforms: one module with JAX's platform_index argument and a `stablehlo.case` between
the lowerings for "cpu" (LAPACK's potrf) and "cuda" (cuSOLVER's), run on the CPU (eagerly, under jit, vmap and
grad, nested in another multi-platform export, after serialization and in a fresh process) against numpy and jax;
one shared body when the lowerings agree; jax's multi-platform module run by numax's call side; the errors."""

import numpy as np
import pytest
from harness import jax, run_in_fresh_process
from numax.core import pytree as tree
from numax.core.avals import ShapedArray

import numax
import numax.numpy as jnp
from numax import export
from numax.export._exported import Exported

N = 4
ORDERS = [("cpu", "cuda"), ("cuda", "cpu")]
CUSTOM_CALLS = {"cpu": "lapack_spotrf_ffi", "cuda": "cusolver_potrf_ffi"}


def _factor_sum(x, xp):
    """The Cholesky factor of the positive definite x @ x^T + N I, doubled, and the sum of its entries."""
    spd = x @ x.T + N * xp.eye(N, dtype=x.dtype)
    factor = xp.linalg.cholesky(spd) * 2
    return factor, factor.sum()


def _args():
    return np.random.default_rng(3).standard_normal((N, N)).astype(np.float32)


@pytest.fixture(scope="module", params=ORDERS, ids="-".join)
def exported(request):
    return export.export(numax.jit(lambda x: _factor_sum(x, jnp)), platforms=request.param)(_args())


@pytest.fixture(scope="module")
def jax_grad():
    return np.asarray(jax.grad(lambda x: _factor_sum(x, jax.numpy)[1])(_args()))


def _check(outputs, x):
    factor, total = outputs
    want_factor, want_total = _factor_sum(x.astype(np.float64), np)
    np.testing.assert_allclose(np.asarray(factor), want_factor, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(total), want_total, rtol=1e-5)


def _main_signature(text):
    return next(line for line in text.splitlines() if "func.func public @main" in line)


def test_module_dispatches_on_the_platform_index(exported):
    text = exported.mlir_module()
    first, second = exported.platforms
    assert "%arg0: tensor<i32> {jax.global_constant = \"_platform_index\"}, %arg1: tensor<4x4xf32>" in \
        _main_signature(text)
    case = text[text.index("stablehlo.case"):]
    assert case.index(f"@{first}_main") < case.index(f"@{second}_main")  # branch i runs platforms[i]
    for platform in exported.platforms:
        body = text[text.index(f"func.func private @{platform}_main"):]
        body = body[:body.index("\n}")]
        assert CUSTOM_CALLS[platform] in body
        assert all(other not in body for other in CUSTOM_CALLS.values() if other != CUSTOM_CALLS[platform])
    assert repr(exported) == f"Exported(<lambda>(f32[4,4]) for {first}, {second})"


def test_main_signature_follows_jax():
    platforms = ("cpu", "cuda")
    by_jax = jax.export.export(jax.jit(jax.numpy.sin), platforms=platforms)(jax.ShapeDtypeStruct((3,), np.float32))
    by_numax = export.export(numax.jit(jnp.sin), platforms=platforms)(numax.ShapeDtypeStruct((3,), np.float32))
    assert by_numax.platforms == by_jax.platforms
    for text in (by_jax.mlir_module(), by_numax.mlir_module()):
        module_line = next(line for line in text.splitlines() if line.startswith("module @"))
        assert "jax.uses_shape_polymorphism = true" in module_line
    index_argument = '%arg0: tensor<i32> {jax.global_constant = "_platform_index"}'
    assert index_argument in _main_signature(by_jax.mlir_module())
    assert index_argument in _main_signature(by_numax.mlir_module())


def test_same_lowering_is_one_body_and_ignores_the_index():
    x = _args()
    exported = export.export(numax.jit(jnp.sin), platforms=("cuda", "cpu"))(x)
    text = exported.mlir_module()
    assert "stablehlo.case" not in text and text.count("func.func private") == 1
    assert "@cuda_cpu_main" in text and "tensor<i32>" in _main_signature(text)
    np.testing.assert_allclose(np.asarray(exported.call(x)), np.sin(x), rtol=1e-6)
    single = export.export(numax.jit(jnp.sin), platforms="cpu")(x)  # one platform: today's module, no index
    assert "tensor<i32>" not in _main_signature(single.mlir_module())
    assert "jax.uses_shape_polymorphism" not in single.mlir_module()


def test_runs_on_the_cpu_eager_jit_vmap_grad(exported, jax_grad):
    x = _args()
    _check(exported.call(x), x)
    _check(numax.jit(exported.call)(x), x)
    batch = np.stack([x, x[::-1], -x])
    factors, totals = numax.vmap(exported.call)(batch)
    for i, example in enumerate(batch):
        _check((factors[i], totals[i]), example)
    grad = numax.grad(lambda x: exported.call(x)[1])(x)
    np.testing.assert_allclose(np.asarray(grad), jax_grad, rtol=1e-4, atol=1e-4)


def test_nested_multi_platform_exports_pass_their_own_index(exported):
    x = _args()
    outer = export.export(numax.jit(lambda x: exported.call(x)[1] + 1), platforms=("cuda", "cpu"))(x)
    text = outer.mlir_module()
    assert "stablehlo.case" in text and all(call in text for call in CUSTOM_CALLS.values())
    np.testing.assert_allclose(float(outer.call(x)), _factor_sum(x.astype(np.float64), np)[1] + 1, rtol=1e-5)


def test_serialized_round_trip_and_fresh_process(tmp_path, jax_grad):
    x = _args()
    platforms = ("cuda", "cpu")
    blob = export.export(numax.jit(lambda x: _factor_sum(x, jnp)), platforms=platforms)(x).serialize(vjp_order=1)
    back = export.deserialize(blob)
    assert back.platforms == platforms and back.vjp().platforms == platforms
    assert "stablehlo.case" in back.mlir_module() and "tensor<i32>" in _main_signature(back.mlir_module())
    _check(back.call(x), x)
    blob_path = tmp_path / "cholesky.bin"
    blob_path.write_bytes(blob)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import json, numpy as np, numax\n"
        "from numax import export\n"
        f"exported = export.deserialize(open({str(blob_path)!r}, 'rb').read())\n"
        f"x = np.load({str(tmp_path / 'x.npy')!r})\n"
        "factor, total = exported.call(x)\n"
        "grad = numax.grad(lambda x: exported.call(x)[1])(x)\n"
        "print(json.dumps({'platforms': exported.platforms, 'factor': np.asarray(factor).tolist(),\n"
        "                  'grad': np.asarray(grad).tolist()}))\n"
    )
    result = run_in_fresh_process(script)
    assert tuple(result["platforms"]) == platforms
    np.testing.assert_allclose(np.array(result["factor"]), _factor_sum(x.astype(np.float64), np)[0], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(np.array(result["grad"]), jax_grad, rtol=1e-4, atol=1e-4)


def test_calls_jax_multi_platform_module():
    """jax puts a `stablehlo.case` on the index around each platform-dependent op (in private functions that take
    the index): numax's call side passes the constant index and XLA folds them, cuSOLVER's branch included."""
    x = _args()
    spd = x @ x.T + N * np.eye(N, dtype=np.float32)
    by_jax = jax.export.export(jax.jit(jax.numpy.linalg.cholesky), platforms=("cuda", "cpu"))(spd)
    assert "cusolver_potrf_ffi" in by_jax.mlir_module()
    aval = ShapedArray((N, N), np.dtype(np.float32))
    exported = Exported("cholesky", tree.tree_structure(((0,), {})), [aval], tree.tree_structure(0), [aval],
                        by_jax.platforms, by_jax.mlir_module())
    np.testing.assert_allclose(np.asarray(exported.call(spd)), np.linalg.cholesky(spd), rtol=1e-5, atol=1e-5)


def test_errors():
    x = _args()
    for_cuda = export.export(numax.jit(jnp.sin), platforms=("cuda",))(x)
    with pytest.raises(ValueError, match=r"exported for platforms \('cuda',\) and cannot run on 'cpu'"):
        for_cuda.call(x)
    with pytest.raises(ValueError, match="distinct"):
        export.export(numax.jit(jnp.sin), platforms=("cpu", "cuda", "cpu"))
    with pytest.raises(ValueError, match="unknown platforms"):
        export.export(numax.jit(jnp.sin), platforms=("cpu", "other"))
    with pytest.raises(NotImplementedError, match="specific to a platform .* 'tpu'"):  # LAPACK's, on a TPU
        export.export(numax.jit(jnp.linalg.cholesky), platforms=("cpu", "tpu"))(x @ x.T + N * np.eye(N, dtype=x.dtype))
    with pytest.raises(NotImplementedError, match="only implemented on the CPU"):  # no eig lowering for "cuda"
        export.export(numax.jit(jnp.linalg.eig), platforms=("cpu", "cuda"))(x)
