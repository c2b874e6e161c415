"""JAX's docs/pallas/grid_blockspec.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_grid_blockspec_runs_as_under_jax():
    check_page("grid_blockspec")
