"""JAX's docs/notebooks/shard_map.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_shard_map_runs_as_under_jax():
    check_page("shard_map")
