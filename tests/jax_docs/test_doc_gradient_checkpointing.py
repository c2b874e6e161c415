"""JAX's docs/gradient-checkpointing.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_gradient_checkpointing_runs_as_under_jax():
    check_page("gradient_checkpointing")
