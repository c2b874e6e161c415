"""JAX's docs/stateful-computations.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_stateful_computations_runs_as_under_jax():
    check_page("stateful_computations")
