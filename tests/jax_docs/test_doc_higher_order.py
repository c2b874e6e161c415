"""JAX's docs/higher-order.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_higher_order_runs_as_under_jax():
    check_page("higher_order")
