"""JAX's docs/aot.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_aot_runs_as_under_jax():
    check_page("aot")
