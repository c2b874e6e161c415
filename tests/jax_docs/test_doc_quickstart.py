"""JAX's docs/pallas/quickstart.md (Pallas), cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_quickstart_runs_as_under_jax():
    check_page("quickstart")
