"""Every tutorial notebook in notebooks/ runs clean from top to bottom and still shows the outputs stored in it.

The notebooks are stored executed, so that a reader on the web sees results and plots; notebooks/execute.py
writes those outputs. Here each notebook runs again with that script's `execute` (its code cells in order in
one fresh Python process, as a Jupyter kernel would run them), and each code cell's new outputs must equal the
stored ones as `execute.comparable` reduces them: text equal (printed text, results, errors caught and
printed), in cells tagged "timing" with the numbers that are times masked; for a figure, that the cell still
draws one, of the same size and number of axes (pixels are not compared). A notebook edited without running
the script, or a change to numax that changes what a notebook prints, fails here with the differing cell;
`python notebooks/execute.py NAME.ipynb` writes the new outputs, to be read before they are committed.
"""

import base64
import difflib
import importlib.util
import json
import pathlib
import re
import socket

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_PNG_BYTES = 80_000  # a figure is a modest size at a modest dpi: the notebooks stay readable diffs


def _load_execute():
    spec = importlib.util.spec_from_file_location("notebook_execute", ROOT / "notebooks" / "execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


execute = _load_execute()


def test_notebooks_exist():
    assert NOTEBOOKS, "notebooks/ holds the tutorials; the suite runs each one"
    assert [p.name for p in execute.notebooks()] == [p.name for p in NOTEBOOKS], "execute.py runs every notebook"


def _stored(path):
    notebook = json.loads(path.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, f"{path.name} has no code"
    for number, cell in enumerate(code, 1):
        source = "".join(cell["source"])
        assert not source.lstrip().startswith(("%", "!")), f"{path.name}: a cell uses IPython magics:\n{source}"
        assert cell["execution_count"] == number, (
            f"{path.name} is not stored as execute.py writes it (cells numbered 1, 2, ... from one run): "
            f"run `python notebooks/execute.py {path.name}`")
    return notebook


def _machine_details():
    """Text that would tie an output to this machine or this run."""
    details = {str(ROOT), str(pathlib.Path.home()), socket.gethostname()}
    return {detail for detail in details if len(detail) > 3}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_outputs_are_clean(path):
    """Stored outputs print no paths of this machine, host names or memory addresses, and figures are small."""
    notebook = _stored(path)
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = "".join(output.get("text", "")) + "".join(data.get("text/plain", ""))
            for detail in _machine_details():
                assert detail not in text, f"{path.name} cell {index} prints {detail!r}"
            assert not re.search(r"\b0x[0-9a-f]{6,}\b", text), f"{path.name} cell {index} prints an address"
            if "image/png" in data:
                size = len(base64.b64decode("".join(data["image/png"])))
                assert size <= MAX_PNG_BYTES, f"{path.name} cell {index}: a {size}-byte figure; draw it smaller"


def _describe(index, outputs):
    lines = [f"cell {index}:"]
    for kind, text in outputs:
        lines += [f"  [{kind}]"] + ["    " + line for line in text.splitlines()]
    return lines


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_and_matches_stored_outputs(path):
    stored = _stored(path)
    try:
        fresh = execute.execute(path)
    except execute.NotebookError as error:
        pytest.fail(str(error))
    expected, actual = execute.comparable(stored), execute.comparable(fresh)
    for (index, want), (_, got) in zip(expected, actual):
        if want != got:
            diff = "\n".join(difflib.unified_diff(_describe(index, want), _describe(index, got), "stored", "now",
                                                  lineterm=""))
            pytest.fail(f"{path.name}: cell {index}'s outputs changed; if that is right, run "
                        f"`python notebooks/execute.py {path.name}` and commit the new outputs\n{diff}")
    assert len(expected) == len(actual)
