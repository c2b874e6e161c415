"""JAX's docs/notebooks/thinking_in_jax.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_thinking_in_jax_runs_as_under_jax():
    check_page("thinking_in_jax")
