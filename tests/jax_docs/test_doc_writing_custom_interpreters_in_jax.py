"""JAX's docs/notebooks/Writing_custom_interpreters_in_Jax.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_writing_custom_interpreters_in_jax_runs_as_under_jax():
    check_page("Writing_custom_interpreters_in_Jax")
