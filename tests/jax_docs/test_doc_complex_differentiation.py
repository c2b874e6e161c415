"""JAX's docs/complex-differentiation.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_complex_differentiation_runs_as_under_jax():
    check_page("complex_differentiation")
