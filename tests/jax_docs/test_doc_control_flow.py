"""JAX's docs/control-flow.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_control_flow_runs_as_under_jax():
    check_page("control_flow")
