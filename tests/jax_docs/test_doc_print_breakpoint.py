"""JAX's docs/debugging/print_breakpoint.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_print_breakpoint_runs_as_under_jax():
    check_page("print_breakpoint")
