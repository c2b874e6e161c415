"""JAX's docs/custom_pytrees.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_custom_pytrees_runs_as_under_jax():
    check_page("custom_pytrees")
