"""JAX's docs/jaxpr.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_jaxpr_runs_as_under_jax():
    check_page("jaxpr")
