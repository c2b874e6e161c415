"""JAX's docs/default_dtypes.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_default_dtypes_runs_as_under_jax():
    check_page("default_dtypes")
