"""JAX's docs/notebooks/Common_Gotchas_in_JAX.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_common_gotchas_in_jax_runs_as_under_jax():
    check_page("Common_Gotchas_in_JAX")
