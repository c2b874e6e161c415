"""JAX's docs/migrate_pmap.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_migrate_pmap_runs_as_under_jax():
    check_page("migrate_pmap")
