"""JAX's docs/random-numbers.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_random_numbers_runs_as_under_jax():
    check_page("random_numbers")
