"""JAX's docs/key-concepts.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_key_concepts_runs_as_under_jax():
    check_page("key_concepts")
