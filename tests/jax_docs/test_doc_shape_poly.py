"""JAX's docs/export/shape_poly.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_shape_poly_runs_as_under_jax():
    check_page("shape_poly")
