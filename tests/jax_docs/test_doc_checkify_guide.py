"""JAX's docs/debugging/checkify_guide.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_checkify_guide_runs_as_under_jax():
    check_page("checkify_guide")
