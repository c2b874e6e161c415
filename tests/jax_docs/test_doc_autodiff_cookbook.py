"""JAX's docs/notebooks/autodiff_cookbook.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_autodiff_cookbook_runs_as_under_jax():
    check_page("autodiff_cookbook")
