"""JAX's docs/buffer_donation.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_buffer_donation_runs_as_under_jax():
    check_page("buffer_donation")
