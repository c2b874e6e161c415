"""JAX's docs/persistent_compilation_cache.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_persistent_compilation_cache_runs_as_under_jax():
    check_page("persistent_compilation_cache")
