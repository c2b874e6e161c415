"""JAX's docs/jit-compilation.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_jit_compilation_runs_as_under_jax():
    check_page("jit_compilation")
