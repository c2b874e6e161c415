"""JAX's docs/jacobian-vector-products.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_jacobian_vector_products_runs_as_under_jax():
    check_page("jacobian_vector_products")
