"""JAX's docs/export/export.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_export_runs_as_under_jax():
    check_page("export")
