"""JAX's docs/type_promotion.rst, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_type_promotion_runs_as_under_jax():
    check_page("type_promotion")
