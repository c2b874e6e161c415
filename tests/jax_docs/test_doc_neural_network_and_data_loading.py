"""JAX's docs/notebooks/Neural_Network_and_Data_Loading.md, cell by cell: numax against jax (doc_test.py)."""

from doc_test import check_page


def test_neural_network_and_data_loading_runs_as_under_jax():
    check_page("Neural_Network_and_Data_Loading")
