"""The JAX ecosystem on numax, unmodified: each `cases_*.py` module (optax, chex, flax, equinox used as their
users write it) runs in two fresh processes, on jax and on numax under `numax.compat.install()`, and every case
must give jax's results (each array leaf: shape, dtype and values within the case's tolerances) or fail as jax
fails. The switched process must not load any module of the jax package.

A module's pair of processes runs once per test session, shared by the xdist workers (a lock file in the
session's temporary folder)."""

import ast
import fcntl
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).parent
CASE_MODULES = sorted(HERE.glob("cases_*.py"))
TIMEOUT_SECONDS = 600


def _case_names(module_path):
    """The functions decorated with `@case` in a case module, read without importing it (its imports decide which
    library it runs on, so only the runner's processes import it)."""
    tree = ast.parse(module_path.read_text())

    def is_case(decorator):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Name) and target.id == "case"

    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and any(is_case(d) for d in node.decorator_list)]


def _run_side(side, module_path, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    report_path = out_dir / "report.json"
    if report_path.exists():
        return
    completed = subprocess.run([sys.executable, str(HERE / "run_cases.py"), side, str(module_path), str(out_dir)],
                               capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    if completed.returncode != 0:
        raise AssertionError(f"the {side} process for {module_path.name} failed ({completed.returncode}):\n"
                             f"{completed.stdout[-3000:]}\n{completed.stderr[-6000:]}")


@pytest.fixture(scope="session")
def ecosystem_results(tmp_path_factory):
    """module name -> {side: (report, arrays)}, each module's processes run at most once per session."""
    worker_temp = tmp_path_factory.getbasetemp()
    shared = worker_temp.parent if os.environ.get("PYTEST_XDIST_WORKER") else worker_temp
    loaded = {}

    def results(module_path):
        if module_path.name not in loaded:
            root = shared / "ecosystem" / module_path.stem
            root.mkdir(parents=True, exist_ok=True)
            with open(root / "lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                for side in ("jax", "numax"):
                    _run_side(side, module_path, root / side)
            sides = {}
            for side in ("jax", "numax"):
                report = json.loads((root / side / "report.json").read_text())
                with np.load(root / side / "results.npz") as arrays:
                    sides[side] = (report, dict(arrays))
            loaded[module_path.name] = sides
        return loaded[module_path.name]

    return results


CASES = [pytest.param(module_path, name, id=f"{module_path.stem[len('cases_'):]}-{name}")
         for module_path in CASE_MODULES for name in _case_names(module_path)]


@pytest.mark.parametrize("module_path, name", CASES)
def test_case_gives_jax_results(ecosystem_results, module_path, name):
    sides = ecosystem_results(module_path)
    (jax_report, jax_arrays), (numax_report, numax_arrays) = sides["jax"], sides["numax"]
    jax_case, numax_case = jax_report["cases"][name], numax_report["cases"][name]
    if jax_case["error"] is not None:
        assert numax_case["error"] is not None, f"jax fails ({jax_case['error']}), numax does not"
        jax_type = jax_case["error"].split(":")[0]
        assert jax_type in numax_case["error_types"], f"jax raises {jax_type}, numax {numax_case['error']}"
        return
    assert numax_case["error"] is None, f"{numax_case['error']}\n{numax_case.get('traceback', '')}"
    assert numax_case["leaves"] == jax_case["leaves"], "the result's structure differs from jax's"
    for key in jax_case["leaves"]:
        expected, actual = jax_arrays[key], numax_arrays[key]
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, (
            f"{key}: numax {actual.dtype}{list(actual.shape)}, jax {expected.dtype}{list(expected.shape)}")
        np.testing.assert_allclose(actual, expected, err_msg=key, **jax_case["tolerances"])


@pytest.mark.parametrize("module_path", CASE_MODULES, ids=lambda path: path.stem)
def test_switched_process_loads_nothing_from_jax(ecosystem_results, module_path):
    numax_report = ecosystem_results(module_path)["numax"][0]
    assert numax_report["jax_package_modules"] == []
    jax_report = ecosystem_results(module_path)["jax"][0]
    assert "jax" in jax_report["jax_package_modules"], "the oracle's side should run on jax itself"
