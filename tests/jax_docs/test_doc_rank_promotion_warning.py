"""JAX's docs/rank_promotion_warning.rst, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_rank_promotion_warning_runs_as_under_jax():
    check_page("rank_promotion_warning")
