"""JAX's docs/external-callbacks.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_external_callbacks_runs_as_under_jax():
    check_page("external_callbacks")
