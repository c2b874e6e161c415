"""JAX's docs/notebooks/vmapped_log_probs.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_vmapped_log_probs_runs_as_under_jax():
    check_page("vmapped_log_probs")
