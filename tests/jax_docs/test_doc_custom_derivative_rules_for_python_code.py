"""JAX's docs/notebooks/Custom_derivative_rules_for_Python_code.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_custom_derivative_rules_for_python_code_runs_as_under_jax():
    check_page("Custom_derivative_rules_for_Python_code")
