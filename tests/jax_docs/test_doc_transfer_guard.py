"""JAX's docs/transfer_guard.rst, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_transfer_guard_runs_as_under_jax():
    check_page("transfer_guard")
