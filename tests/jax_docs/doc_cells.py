"""Reading a page's extracted cells, and the two rewrites that make a cell runnable here.

`read_cells(stem)` parses a file of tests/jax_docs/cells/ (percent format, written by extract_cells.py).
`runnable(code)` turns IPython magics into plain Python (`%timeit expr` runs `expr` once; other line magics and
shell escapes do nothing). `swap_imports(code)` is the one-import change a user makes to move a program from
jax to numax: every `import jax...` / `from jax... import` names numax's module of the same path instead.
"""

import dataclasses
import json
import os
import re

from extract_cells import CELLS_DIR

_CELL_HEADER = re.compile(r"^# %% line=(\d+) tags=(.*)$")


@dataclasses.dataclass(frozen=True)
class Cell:
    line: int  # the cell's first line in the documentation page
    code: str
    tags: tuple

    @property
    def raises(self):
        return "raises-exception" in self.tags


def read_cells(stem):
    with open(os.path.join(CELLS_DIR, stem + ".py")) as source:
        text = source.read()
    cells = []
    for block in re.split(r"\n(?=# %% line=)", text)[1:]:
        header, _, code = block.partition("\n")
        match = _CELL_HEADER.match(header)
        cells.append(Cell(int(match.group(1)), code.rstrip("\n"), tuple(json.loads(match.group(2)))))
    return cells


_TIMING_MAGIC = re.compile(r"^(\s*)%{1,2}(timeit|time)\b((?:\s+-\S+(?:\s+\d+)?)*)\s*(.*)$")


def runnable(code):
    """The cell as plain Python: timing magics run their statement once, other magics are no-ops."""
    lines = []
    for line in code.splitlines():
        timing = _TIMING_MAGIC.match(line)
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if timing:
            if timing.group(4):
                lines.append(timing.group(1) + timing.group(4))
        elif stripped.startswith(("%", "!")):
            lines.append(indent + "pass")
        else:
            lines.append(line)
    return "\n".join(lines)


_IMPORT_REWRITES = [
    # `import jax.numpy as jnp` -> `import numax.numpy as jnp`
    (re.compile(r"^(\s*)import jax((?:\.\w+)+) as (\w+)", re.M), r"\1import numax\2 as \3"),
    # `import jax.numpy` binds the name jax: `import numax.numpy; import numax as jax`
    (re.compile(r"^(\s*)import jax((?:\.\w+)+)\s*$", re.M), r"\1import numax\2; import numax as jax"),
    (re.compile(r"^(\s*)import jax as (\w+)", re.M), r"\1import numax as \2"),
    (re.compile(r"^(\s*)import jax\s*$", re.M), r"\1import numax as jax"),
    (re.compile(r"^(\s*)from jax((?:\.\w+)*) import ", re.M), r"\1from numax\2 import "),
]


def swap_imports(code):
    for pattern, replacement in _IMPORT_REWRITES:
        code = pattern.sub(replacement, code)
    return code
