"""The JAX ecosystem on numax, unmodified: each `cases_*.py` module (optax, chex, flax, equinox used as their
users write it) runs in two fresh processes, on jax and on numax under `numax.compat.install()`, and every case
must give jax's results (each array leaf: shape, dtype and values within the case's tolerances) or fail as jax
fails. The switched process must not load any module of the jax package.

One test per module: its two processes run side by side, and the test lists every case that differs from jax."""

import ast
import json
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


def _run_both_sides(module_path, root):
    """The module's cases on jax and on numax, the two processes side by side; {side: (report, arrays)}."""
    processes = {}
    for side in ("jax", "numax"):
        (root / side).mkdir(parents=True)
        with open(root / side / "output.txt", "w") as output:
            processes[side] = subprocess.Popen(
                [sys.executable, str(HERE / "run_cases.py"), side, str(module_path), str(root / side)],
                stdout=output, stderr=subprocess.STDOUT)
    sides = {}
    for side, process in processes.items():
        returncode = process.wait(timeout=TIMEOUT_SECONDS)
        assert returncode == 0, (f"the {side} process for {module_path.name} failed ({returncode}):\n"
                                 f"{(root / side / 'output.txt').read_text()[-6000:]}")
        with np.load(root / side / "results.npz") as arrays:
            sides[side] = (json.loads((root / side / "report.json").read_text()), dict(arrays))
    return sides


def _difference(name, jax_side, numax_side):
    """How case `name`'s numax outcome differs from jax's, or None if it is the same."""
    (jax_report, jax_arrays), (numax_report, numax_arrays) = jax_side, numax_side
    jax_case, numax_case = jax_report["cases"][name], numax_report["cases"][name]
    if jax_case["error"] is not None:
        jax_type = jax_case["error"].split(":")[0]
        if numax_case["error"] is None:
            return f"jax fails ({jax_case['error']}), numax does not"
        if jax_type not in numax_case["error_types"]:
            return f"jax raises {jax_type}, numax {numax_case['error']}"
        return None
    if numax_case["error"] is not None:
        return f"{numax_case['error']}\n{numax_case.get('traceback', '')}"
    if numax_case["leaves"] != jax_case["leaves"]:
        return f"the result's structure differs from jax's: {numax_case['leaves']} vs {jax_case['leaves']}"
    for key in jax_case["leaves"]:
        expected, actual = jax_arrays[key], numax_arrays[key]
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            return f"{key}: numax {actual.dtype}{list(actual.shape)}, jax {expected.dtype}{list(expected.shape)}"
        try:
            np.testing.assert_allclose(actual, expected, err_msg=key, **jax_case["tolerances"])
        except AssertionError as error:
            return str(error)
    return None


@pytest.mark.parametrize("module_path", CASE_MODULES, ids=lambda path: path.stem[len("cases_"):])
def test_cases_give_jax_results(module_path, tmp_path):
    sides = _run_both_sides(module_path, tmp_path)
    names = _case_names(module_path)
    assert names and sorted(sides["jax"][0]["cases"]) == sorted(names) == sorted(sides["numax"][0]["cases"])
    differences = {name: _difference(name, sides["jax"], sides["numax"]) for name in names}
    differing = {name: difference for name, difference in differences.items() if difference is not None}
    assert not differing, f"{len(differing)} of {len(names)} cases differ from jax:\n" + "\n".join(
        f"--- {name}: {difference}" for name, difference in differing.items())
    # The switched process never loaded a module of the jax package; the oracle's process did run on jax.
    assert sides["numax"][0]["jax_package_modules"] == []
    assert "jax" in sides["jax"][0]["jax_package_modules"], "the oracle's side should run on jax itself"
