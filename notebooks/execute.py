"""Run the tutorial notebooks top to bottom and store their outputs in place, so that they read on the web.

    python notebooks/execute.py                  # every notebooks/*.ipynb
    python notebooks/execute.py 03-vmap-and-control-flow.ipynb

Each notebook runs in a fresh Python process, its code cells in order in one namespace, as a Jupyter kernel
would run them (no Jupyter needed): what a cell prints (stdout, stderr), the value of a last bare expression,
and each matplotlib figure it leaves open (or shows with `plt.show()`) become the cell's outputs, a figure as
a PNG. Outputs are meant to be the same in every run: notebooks seed their random numbers and print no paths,
addresses or dates. tests/test_notebooks.py executes every notebook with `execute` below and compares the
outputs with the committed ones (see `comparable`). Cells that measure time carry the cell tag "timing": in
those, times (numbers printed with a decimal point) and cache keys may differ; a figure's pixels may differ
in any cell.

A notebook whose cell raises is not written: the error is reported with the cell's number.
"""

import ast
import base64
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

NOTEBOOKS = pathlib.Path(__file__).resolve().parent
TIMING_TAG = "timing"
FIGURE_DPI = 72  # with the notebooks' figure sizes (6-9 by 3-4 inches), PNGs of about 15-25 kB


def notebooks():
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _xla_flags():
    """XLA's quicker CPU code generation, the test suite's (tests/conftest.py says why): the notebooks compile
    a few hundred small programs. The flags change the last digit of some float32 results, so the notebooks
    run with them whatever the caller's XLA_FLAGS; not on a jaxlib they were not checked on, where unknown
    flags would abort XLA (outputs stored with the flags may then differ in a last digit: run this script)."""
    from importlib import metadata

    if metadata.version("jaxlib").startswith("0.10."):
        return "--xla_backend_optimization_level=0 --xla_cpu_parallel_codegen_split_count=1"
    return ""


def kernel_environment():
    """The notebook process's environment: this one's, less what would make the outputs differ from run to run
    or machine to machine: numax's and jax's options (NUMAX_*, JAX_*, but for where caches are kept, which
    changes no output: 06-compilation, which prints what compiles, starts with no persistent compilation
    cache whatever the environment says), XLA_FLAGS (the CPU device count, code generation), forced colour and
    terminal sizes. Numbers are computed on the CPU, as CI does, with `_xla_flags`."""
    env = {name: value for name, value in os.environ.items()
           if "CACHE" in name or not name.startswith(("NUMAX_", "JAX_", "XLA_", "TF_CPP_"))}
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "COLUMNS", "LINES", "JUPYTER_COLUMNS"):
        env.pop(name, None)
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=_xla_flags(), MPLBACKEND="agg", PYTHONHASHSEED="0")
    return env


class NotebookError(Exception):
    pass


def execute(path, timeout=600):
    """Runs the notebook at `path` in a fresh process; returns the notebook (a dict) with its outputs filled
    in and its code cells numbered 1, 2, ... as a kernel started for it would number them."""
    path = pathlib.Path(path)
    notebook = json.loads(path.read_text())
    cells = [(index, "".join(cell["source"])) for index, cell in enumerate(notebook["cells"])
             if cell["cell_type"] == "code"]
    with tempfile.TemporaryDirectory(prefix="notebook-") as scratch:
        cells_file, outputs_file = pathlib.Path(scratch, "cells.json"), pathlib.Path(scratch, "outputs.json")
        cells_file.write_text(json.dumps(cells))
        result = subprocess.run([sys.executable, __file__, "--kernel", str(cells_file), str(outputs_file)],
                                cwd=path.parent, env=kernel_environment(), capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0 or not outputs_file.exists():
            raise NotebookError(f"{path.name} failed:\n{result.stdout[-2000:]}{result.stderr[-6000:]}")
        outputs = json.loads(outputs_file.read_text())
    for count, (index, _) in enumerate(cells, 1):
        cell = notebook["cells"][index]
        cell["execution_count"] = count
        cell["outputs"] = [dict(output, execution_count=count) if output["output_type"] == "execute_result"
                           else output for output in outputs[str(index)]]
    return notebook


def write(path, notebook):
    """Writes as Jupyter does (one-space indents, sorted keys), so that saving in Jupyter changes no layout."""
    pathlib.Path(path).write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


# What a timing cell's text may print differently in each run: times (numbers with a decimal point, or in
# exponent form: print times so) and cache keys (hex digests). Whole numbers, counts say, are still compared.
_VARIES = re.compile(r"\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\b[0-9a-f]{12,}\b")


def comparable(notebook):
    """Each code cell's outputs (cell index, [(kind, text)]), reduced to what must not change from run to run:
    the text of stream outputs and results, with times and cache keys masked as '#' in cells tagged "timing";
    for a figure only that it is one, of which size and with how many axes (its `text/plain`), not its pixels."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        timing = TIMING_TAG in cell.get("metadata", {}).get("tags", [])
        outputs = []
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                kind, text = output["name"], "".join(output["text"])
            else:
                data = output["data"]
                kind = "image" if "image/png" in data else output["output_type"]
                text = "".join(data.get("text/plain", ""))
            outputs.append((kind, _VARIES.sub("#", text) if timing else text))
        cells.append((index, outputs))
    return cells


# ---- the kernel: runs in the notebook's own process -------------------------------------------------------


class _Recorder(io.TextIOBase):
    """A stdout/stderr that appends to the current cell's outputs, joining consecutive writes of one stream."""

    def __init__(self, outputs, name):
        self.outputs, self.name = outputs, name

    def writable(self):
        return True

    def write(self, text):
        if text:
            last = self.outputs[-1] if self.outputs else None
            if last is not None and last["output_type"] == "stream" and last["name"] == self.name:
                last["text"] += text
            else:
                self.outputs.append({"output_type": "stream", "name": self.name, "text": text})
        return len(text)


def _lines(text):
    return text.splitlines(True)


def _show_figures(outputs):
    """What Jupyter's inline backend does at `plt.show()` and at the end of a cell: each open figure becomes a
    PNG output, and is closed."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        png = io.BytesIO()
        figure.savefig(png, format="png", dpi=FIGURE_DPI, bbox_inches="tight", metadata={"Software": None})
        outputs.append({"output_type": "display_data", "metadata": {},
                        "data": {"image/png": base64.b64encode(png.getvalue()).decode() + "\n",
                                 "text/plain": [repr(figure)]}})
        pyplot.close(figure)


def _kernel(cells_file, outputs_file):
    import linecache
    import traceback

    cells = json.loads(pathlib.Path(cells_file).read_text())
    if any("matplotlib" in source for _, source in cells):
        import matplotlib

        matplotlib.use("agg")
        import matplotlib.pyplot as pyplot
    namespace = {"__name__": "__main__"}
    results = {}
    stdout, stderr = sys.stdout, sys.stderr
    for index, source in cells:
        outputs = results[str(index)] = []
        name = f"<cell {index}>"
        # As Jupyter does, the cell's source is kept where `inspect` finds it (Triton's @jit reads its kernel's source).
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        tree = ast.parse(source, name)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        quiet = source.rstrip().endswith(";")
        sys.stdout, sys.stderr = _Recorder(outputs, "stdout"), _Recorder(outputs, "stderr")
        if "matplotlib.pyplot" in sys.modules:
            pyplot.show = lambda *args, outputs=outputs, **kwargs: _show_figures(outputs)
        try:
            exec(compile(tree, name, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
                if value is not None and not quiet:
                    outputs.append({"output_type": "execute_result", "metadata": {},
                                    "data": {"text/plain": _lines(repr(value))}})
            _show_figures(outputs)
        except BaseException:
            sys.stdout, sys.stderr = stdout, stderr
            traceback.print_exc()
            print(f"NOTEBOOK CELL {index} FAILED", file=sys.stderr)
            sys.exit(1)
        finally:
            sys.stdout.flush()
            sys.stdout, sys.stderr = stdout, stderr
        for output in outputs:
            if output["output_type"] == "stream":
                output["text"] = _lines(output["text"])
    pathlib.Path(outputs_file).write_text(json.dumps(results))


def main(argv):
    if argv[:1] == ["--kernel"]:
        return _kernel(*argv[1:])
    paths = [NOTEBOOKS / name for name in argv] if argv else notebooks()
    failed = False
    for path in paths:
        try:
            write(path, execute(path))
            print("executed", path.name)
        except NotebookError as error:
            print(error, file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
