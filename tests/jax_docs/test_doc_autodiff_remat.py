"""JAX's docs/notebooks/autodiff_remat.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_autodiff_remat_runs_as_under_jax():
    check_page("autodiff_remat")
