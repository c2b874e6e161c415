"""The documentation cells that do not yet run as they do under jax, with the reason, per page (by the cell's
first line in the page). doc_test.py holds every page to this table both ways: a cell that fails and is not
listed fails its page's test, and so does a listed cell that now passes (remove it). The README's
"Compatibility with JAX" section shows this table (`python tests/jax_docs/known_failures.py` prints it;
test_known_failures_table.py checks that the README has it)."""

import os

from extract_cells import CELLS_DIR

KNOWN_FAILURES = {
}


def page_of(stem):
    """The page's path in jax's repository, from its cells file's first line."""
    with open(os.path.join(CELLS_DIR, stem + ".py")) as cells:
        return cells.readline().split("jax-ml/jax ", 1)[1].split(" at ", 1)[0]


def markdown_table():
    rows = ["| page | line | why it does not run as under jax |", "| --- | --- | --- |"]
    for stem in sorted(KNOWN_FAILURES, key=str.lower):
        for line, reason in sorted(KNOWN_FAILURES[stem].items()):
            rows.append(f"| `{page_of(stem)}` | {line} | {reason} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
