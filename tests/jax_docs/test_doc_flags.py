"""JAX's docs/debugging/flags.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_flags_runs_as_under_jax():
    check_page("flags")
