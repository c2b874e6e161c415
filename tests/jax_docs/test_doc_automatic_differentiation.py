"""JAX's docs/automatic-differentiation.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_automatic_differentiation_runs_as_under_jax():
    check_page("automatic_differentiation")
