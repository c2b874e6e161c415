"""`import numax` stays light: rarely used modules and jaxlib's runtime load on first use, with no change in
behaviour. Checks about a first import run in a fresh interpreter (this one has loaded everything)."""

import importlib
import json
import pickle
import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from jaxlib import version as jaxlib_version
from numax.core.lazy_imports import deferred_exports

import numax
import numax.nn  # noqa: F401  (defers numax.nn.initializers)
import numax.numpy as xnp
import numax.scipy  # noqa: F401  (defers its modules)

# The lax modules that load with numax (what every program needs); the others load on first use.
EAGER_LAX = {"ad", "batching", "conditionals", "conversions", "elementwise", "fft", "gather_scatter", "linear",
             "reductions", "ref_threading", "shapes", "slicing", "typing", "while_loop"}
NAMESPACES = ("numax", "numax.lax", "numax.numpy")


def run_fresh(script, *args):
    """Runs `script` in a new interpreter and returns the JSON it prints (fails with its stderr)."""
    finished = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True,
                              text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


@pytest.fixture(scope="module")
def fresh_import():
    """What a fresh `import numax` loads, and what dir() lists before anything else loads (dir included)."""
    return run_fresh(f"""
        import importlib, json, sys
        import numax
        listed = {{name: dir(importlib.import_module(name)) for name in {NAMESPACES!r}}}
        print(json.dumps({{"modules": sorted(sys.modules), "dir": listed,
                          "jax_semantics": numax.config.jax_semantics}}))
    """)


def test_import_numax_loads_no_deferred_module(fresh_import):
    loaded = set(fresh_import["modules"])
    deferred = {f"{package}.{module}" for package, table in deferred_exports.items() for module in table}
    assert {"numax.random", "numax.nn", "numax.scipy", "numax.numpy.linalg", "numax.lax.linalg"} <= deferred
    assert sorted(deferred & loaded) == []
    assert {module for module in loaded if module.startswith("numax.lax.")} == {f"numax.lax.{m}" for m in EAGER_LAX}


def test_import_numax_does_not_load_jaxlib(fresh_import):
    assert [module for module in fresh_import["modules"] if module.split(".")[0] in ("jaxlib", "jax")] == []


def test_jax_semantics_are_known_before_jaxlib_loads(fresh_import):
    installed = tuple(int(part) for part in re.findall(r"\d+", jaxlib_version.__version__)[:3])
    assert tuple(fresh_import["jax_semantics"]) == installed


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_dir_lists_deferred_names(fresh_import, namespace):
    listed = set(fresh_import["dir"][namespace])
    table = deferred_exports[namespace]
    assert {name for module, names in table.items() for name in names} <= listed
    assert {module for module in table if "." not in module} <= listed
    # Everything that is not a module in the fully loaded namespace (this process) is listed before loading.
    loaded = sys.modules[namespace]
    unlisted = [name for name in dir(loaded) if name not in listed and not isinstance(getattr(loaded, name),
                                                                                      types.ModuleType)]
    assert unlisted == []


def test_deferred_names_are_their_modules_objects():
    """Reading a deferred name gives its module's object; lax and numpy re-export exactly each module's `__all__`."""
    assert set(deferred_exports) >= {*NAMESPACES, "numax.scipy", "numax.nn"}
    checked = set()
    while set(deferred_exports) - checked:  # loading a module may defer a package's own modules (numax.experimental)
        package_name = min(set(deferred_exports) - checked)
        checked.add(package_name)
        package, table = sys.modules[package_name], deferred_exports[package_name]
        for module_name, names in table.items():
            module = importlib.import_module(f"{package_name}.{module_name}")
            if names and package_name in ("numax.lax", "numax.numpy") and hasattr(module, "__all__"):  # star exports
                assert sorted(names) == sorted(module.__all__), module_name
            for name in names:
                assert getattr(package, name) is getattr(module, name), (package_name, name)
            if "." not in module_name:
                assert getattr(package, module_name) is module
    # Functions named like their module stay the functions, however their module was imported.
    assert isinstance(numax.lax.fft, types.FunctionType) and isinstance(numax.lax.while_loop, types.FunctionType)


MATRIX = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)


@pytest.fixture(scope="module")
def first_uses():
    """Each deferred module in a fresh interpreter: not loaded before its first use, loaded by it; the values
    come back for the tests below to check."""
    blob = pickle.dumps(xnp.arange(6.0).reshape(2, 3))
    return run_fresh("""
        import importlib, json, pickle, sys
        import numpy as np
        import numax

        a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
        results = {}

        def first_use(name, module, compute):
            assert module not in sys.modules, f"{module} loaded before its first use"
            value = np.asarray(compute())
            assert module in sys.modules, f"{module} not loaded by its first use"
            results[name] = [value.real.tolist(), value.imag.tolist()] if np.iscomplexobj(value) else value.tolist()

        def qr_product():
            q, r = numax.lax.linalg.qr(a)
            return np.asarray(q) @ np.asarray(r)

        def random_uniform():
            from numax import random

            return random.uniform(random.key(0), (3,))

        callback_shape = numax.ShapeDtypeStruct(a.shape, a.dtype)
        first_use("unpickle", "jaxlib.xla_client", lambda: pickle.loads(bytes.fromhex(sys.argv[1])))
        first_use("lax.linalg.qr", "numax.lax.linalg", qr_product)
        first_use("numpy.linalg.inv", "numax.numpy.linalg", lambda: numax.numpy.linalg.inv(a))
        first_use("numpy.fft.fft", "numax.numpy.fft", lambda: numax.numpy.fft.fft(a[0]))
        first_use("numpy.einsum", "numax.numpy._einsum", lambda: numax.numpy.einsum("ij,jk->ik", a, a))
        first_use("numpy.cov", "numax.numpy._statistics", lambda: numax.numpy.cov(a))
        first_use("lax.scan", "numax.lax.loops", lambda: numax.lax.scan(lambda c, x: (c + x, c), 0.0, a[0])[1])
        first_use("lax.cumsum", "numax.lax.cumulative", lambda: numax.lax.cumsum(a, axis=0))
        first_use("random.uniform", "numax.random", random_uniform)
        first_use("scipy.special.logsumexp", "numax.scipy.special",
                  lambda: importlib.import_module("numax.scipy.special").logsumexp(a))
        first_use("nn.relu", "numax.nn", lambda: numax.nn.relu(a - 2))
        first_use("nn.initializers", "numax.nn.initializers",
                  lambda: numax.nn.initializers.zeros(numax.random.key(0), (2,)))
        first_use("pure_callback", "numax.debug", lambda: numax.pure_callback(lambda x: x * 2, callback_shape, a))
        first_use("remat", "numax.transforms.checkpoint",
                  lambda: numax.grad(numax.remat(lambda x: numax.numpy.sin(x) * x))(1.0))
        print(json.dumps(results))
    """, blob.hex())


def complex_parts(value):
    return [np.real(value), np.imag(value)]


REFERENCES = {
    "unpickle": lambda: np.arange(6.0).reshape(2, 3),
    "numpy.linalg.inv": lambda: np.linalg.inv(MATRIX),
    "numpy.fft.fft": lambda: complex_parts(np.fft.fft(MATRIX[0])),
    "numpy.einsum": lambda: np.einsum("ij,jk->ik", MATRIX, MATRIX),
    "numpy.cov": lambda: np.cov(MATRIX),
    "lax.linalg.qr": lambda: MATRIX,
    "lax.scan": lambda: np.concatenate([[0.0], np.cumsum(MATRIX[0])[:-1]]),
    "lax.cumsum": lambda: np.cumsum(MATRIX, axis=0),
    "random.uniform": lambda: numax.random.uniform(numax.random.key(0), (3,)),  # this process loaded it eagerly
    "nn.relu": lambda: np.maximum(MATRIX - 2, 0),
    "nn.initializers": lambda: np.zeros(2),
    "scipy.special.logsumexp": lambda: np.log(np.exp(MATRIX.astype(np.float64)).sum()),
    "pure_callback": lambda: MATRIX * 2,
    "remat": lambda: np.cos(1.0) + np.sin(1.0),
}


@pytest.mark.parametrize("name", REFERENCES)
def test_first_use_loads_the_module_and_works(first_uses, name):
    np.testing.assert_allclose(first_uses[name], np.asarray(REFERENCES[name]()), rtol=1e-5, atol=1e-6)


def test_runtime_surface_works_without_jax():
    """numax needs jaxlib, never jax: with jax unimportable (as if not installed), arrays, jit, grad, readback
    (also after copy_to_host_async, which once called a method that only jax adds to jaxlib's array class),
    bfloat16, DLPack, pickling, sharded arrays, pmap, host callbacks and deletion all work, and jax stays unloaded."""
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    found = run_fresh("""
        import importlib.abc, json, os, pickle, sys

        class NoJax(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "jax" or name.startswith("jax."):
                    raise ModuleNotFoundError(f"No module named {name!r}")

        sys.meta_path.insert(0, NoJax())
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        import numpy as np
        import numax, numax.numpy as xnp
        from numax.sharding import Mesh, NamedSharding, PartitionSpec as P

        x = xnp.arange(12.0).reshape(3, 4)
        f = numax.jit(lambda a, b: (a @ b.T).sum(axis=0))
        y = f(x, x)
        y.copy_to_host_async()
        numax.copy_to_host_async({"y": y})
        mesh = Mesh(np.array(numax.devices("cpu")[:4]).reshape(2, 2), ("a", "b"))
        sharded = numax.device_put(x[:2], NamedSharding(mesh, P("a", "b")))
        sharded.copy_to_host_async()
        seen = []
        numax.jit(lambda v: numax.debug.callback(lambda w: seen.append(float(w)), v.sum()))(x)
        numax.effects_barrier()
        deleted = xnp.ones(3)
        deleted.delete()
        results = {
            "eager": xnp.sin(x) * 2, "jit": f(x, x), "after copy_to_host_async": y,
            "grad": numax.grad(lambda a: (a ** 2).sum())(x), "bfloat16": x.astype(xnp.bfloat16),
            "dlpack": np.from_dlpack(numax.device_put(x, numax.devices("cpu")[0])),  # (numpy takes host memory)
            "pickle": pickle.loads(pickle.dumps(x)),
            "sharded": numax.jit(lambda v: v * 3)(sharded),
            "pmap": numax.pmap(lambda v: numax.lax.psum(v, "i"), axis_name="i", devices=mesh.devices.ravel().tolist())(
                xnp.ones((4, 2))),
        }
        results = {name: np.asarray(value, np.float32).tolist() for name, value in results.items()}
        print(json.dumps({"results": results, "deleted": deleted.is_deleted(), "callback saw": seen,
                          "jax_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "jax")}))
    """)
    product_sums = (x @ x.T).sum(axis=0)
    expected = {"eager": np.sin(x) * 2, "jit": product_sums, "after copy_to_host_async": product_sums,
                "grad": 2 * x, "bfloat16": x, "dlpack": x, "pickle": x, "sharded": 3 * x[:2],
                "pmap": np.full((4, 2), 4.0)}
    assert sorted(found["results"]) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(found["results"][name], value, rtol=1e-6, err_msg=name)
    assert found["deleted"] is True and found["callback saw"] == [float(x.sum())]
    assert found["jax_loaded"] == []
