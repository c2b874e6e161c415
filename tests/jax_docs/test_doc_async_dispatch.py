"""JAX's docs/async_dispatch.rst, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_async_dispatch_runs_as_under_jax():
    check_page("async_dispatch")
