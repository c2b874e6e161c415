"""Every tutorial notebook in notebooks/ runs clean from top to bottom.

Each notebook's code cells run in order, in one fresh Python process (as a kernel would run them, each
cell's source kept in `linecache` as Jupyter keeps it), so that a notebook cannot lean on the test
process's state; a failing cell is reported by number.
"""

import json
import pathlib
import subprocess
import sys

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))

_RUNNER = r"""
import json, linecache, sys, traceback
cells = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for index, source in cells:
    name = f"<cell {index}>"
    # As Jupyter does, the cell's source is kept where `inspect` finds it (Triton's @jit reads its kernel's source).
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        exec(compile(source, name, "exec"), namespace)
    except Exception:
        traceback.print_exc()
        print(f"NOTEBOOK CELL {index} FAILED", file=sys.stderr)
        sys.exit(1)
"""


def test_notebooks_exist():
    assert NOTEBOOKS, "notebooks/ holds the tutorials; the suite runs each one"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    notebook = json.loads(path.read_text())
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert not cell.get("outputs"), f"{path.name}: commit notebooks without outputs (cell {index})"
        source = "".join(cell["source"])
        assert not source.lstrip().startswith(("%", "!")), f"{path.name}: cell {index} uses IPython magics"
        cells.append((index, source))
    assert cells, f"{path.name} has no code"
    cells_file = tmp_path / "cells.json"
    cells_file.write_text(json.dumps(cells))
    result = subprocess.run([sys.executable, "-c", _RUNNER, str(cells_file)], cwd=path.parent,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stderr[-4000:]}"
