"""Extracts the code cells of JAX's documentation pages into tests/jax_docs/cells/, one file per page.

The pages are read from a git checkout of jax-ml/jax at a pinned tag (the docs of the jax release the suite
uses as its oracle), so the cells are exactly what a reader of that release's documentation runs:

    python tests/jax_docs/extract_cells.py --repo PATH_TO_JAX_GIT --tag jax-v0.10.2 docs/jit-compilation.md ...

Four kinds of blocks are cells: MyST notebook cells (a `{code-cell}` fence, with its `:tags:`), Markdown
```python fences, reStructuredText `.. code-block:: python` blocks and bare doctest paragraphs. A block written
as a doctest (`>>>` prompts) becomes one cell per prompt; a prompt whose expected output is a traceback is marked
as raising (expected output is never compared, so `+SKIP` directives, which only spare output checks, run too).
Cells of comments alone are left out.
Each cell keeps its page's line number. The file written is jupytext's percent format, read back by
`doc_cells.read_cells`. The code is JAX's (Apache-2.0), quoted unchanged as test data.
"""

import argparse
import json
import os
import re
import subprocess

CELLS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cells")
_FENCE = re.compile(r"^(\s*)(`{3,})\s*(\{code-cell\}|python|py|ipython3?)?\s*(.*)$")
_RST_BLOCK = re.compile(r"^(\s*)\.\. (code-block|code|testcode|doctest)::\s*(python|ipython3?)?\s*$")


def page_cells(text):
    """[(line, code, tags)] of one page, in order."""
    lines = text.splitlines()
    cells = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        rst = _RST_BLOCK.match(lines[index])
        if fence and fence.group(3):
            index = _read_fence(lines, index, fence, cells)
        elif fence:  # another language's fence: skip to its end
            index = _skip_fence(lines, index, fence)
        elif rst:
            index = _read_rst_block(lines, index, rst, cells)
        elif lines[index].lstrip().startswith(">>>"):  # a bare doctest paragraph (reStructuredText)
            index = _read_doctest_paragraph(lines, index, cells)
        else:
            index += 1
    return cells


def _skip_fence(lines, start, fence):
    ticks = fence.group(2)
    index = start + 1
    while index < len(lines) and not lines[index].strip().startswith(ticks):
        index += 1
    return index + 1


def _read_fence(lines, start, fence, cells):
    indent, ticks = len(fence.group(1)), fence.group(2)
    body, tags = [], []
    index = start + 1
    while index < len(lines) and lines[index].strip() != ticks:
        body.append(lines[index][indent:])
        index += 1
    while body and body[0].startswith(":"):  # MyST cell options
        option = body.pop(0)
        if option.startswith(":tags:"):
            tags = [tag.strip(" '\"") for tag in option.split(":", 2)[2].strip().strip("[]").split(",")]
    _add_block(cells, start + 2 + (index - start - 1 - len(body)), body, tags)
    return index + 1


def _read_rst_block(lines, start, rst, cells):
    indent = len(rst.group(1))
    index = start + 1
    while index < len(lines) and lines[index].strip().startswith(":"):  # rst directive options
        index += 1
    body = []
    first = index
    while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent):
        body.append(lines[index])
        index += 1
    while body and not body[-1].strip():
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
        first += 1
    if body:
        block_indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
        _add_block(cells, first + 1, [line[block_indent:] for line in body], [])
    return index


def _read_doctest_paragraph(lines, start, cells):
    index = start
    while index < len(lines) and lines[index].strip():
        index += 1
    indent = len(lines[start]) - len(lines[start].lstrip())
    _add_block(cells, start + 1, [line[indent:] for line in lines[start:index]], [])
    return index


# A plain block that says it raises: a comment naming the exception (`# ValueError: ...`, `# ==> raises
# FloatingPointError`), or the exception's line quoted after the code.
_RAISES_NOTE = re.compile(r"^\s*(.*#.*\braises\b.*(Error|Exception)|#\s*([\w.]+\.)?[A-Z]\w*(Error|Exception)\b|"
                          r"([\w.]+\.)?[A-Z]\w*(Error|Exception):)")


def _add_block(cells, first_line, body, tags):
    if any(line.lstrip().startswith(">>>") for line in body):
        found = _doctest_cells(first_line, body, tags)
    else:
        if not tags and any(_RAISES_NOTE.match(line) for line in body):
            tags = ["raises-exception"]
        found = [(first_line, "\n".join(body).strip("\n"), tags)]
    cells.extend(cell for cell in found if _has_code(cell[1]))


def _has_code(code):
    return any(line.strip() and not line.strip().startswith("#") for line in code.splitlines())


# Expected output that shows an exception: a traceback, or the exception's line alone (IGNORE_EXCEPTION_DETAIL).
_EXCEPTION_OUTPUT = re.compile(r"^(Traceback \(most recent call last\)|([\w.]+\.)?[A-Z]\w*(Error|Exception)\b)")


def _doctest_cells(first_line, body, tags):
    """One cell per `>>>` prompt (with its `...` continuations); expected output is dropped, but a traceback or
    an exception line marks the cell as raising."""
    cells = []
    current = None
    for offset, line in enumerate(body):
        stripped = line.strip()
        if stripped.startswith(">>>"):
            current = [first_line + offset, [stripped[4:]], list(tags)]
            cells.append(current)
        elif stripped.startswith("...") and current is not None and not current[2].count("output"):
            current[1].append(stripped[4:])
        elif current is not None and stripped:
            current[2].append("output")
            if _EXCEPTION_OUTPUT.match(stripped) and "raises-exception" not in current[2]:
                current[2].append("raises-exception")
    return [(line, "\n".join(code), [tag for tag in cell_tags if tag != "output"]) for line, code, cell_tags in cells]


def write_cells(page, tag, commit, cells):
    stem = os.path.splitext(os.path.basename(page))[0]
    path = os.path.join(CELLS_DIR, stem.replace("-", "_") + ".py")
    with open(path, "w") as out:
        out.write(f"# Code cells of jax-ml/jax {page} at {tag} ({commit}), quoted unchanged as test data.\n")
        out.write("# Copyright The JAX Authors, Apache-2.0. Written by tests/jax_docs/extract_cells.py.\n")
        for line, code, tags in cells:
            out.write(f"\n# %% line={line} tags={json.dumps(tags)}\n{code}\n")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a git checkout (or bare repository) of jax-ml/jax")
    parser.add_argument("--tag", default="jax-v0.10.2")
    parser.add_argument("pages", nargs="+", help="paths of documentation pages inside the repository")
    args = parser.parse_args()
    commit = subprocess.check_output(["git", "-C", args.repo, "rev-list", "-n1", args.tag], text=True).strip()
    for page in args.pages:
        text = subprocess.check_output(["git", "-C", args.repo, "show", f"{args.tag}:{page}"], text=True)
        print(write_cells(page, args.tag, commit, page_cells(text)))


if __name__ == "__main__":
    main()
