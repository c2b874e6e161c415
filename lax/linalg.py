"""`numax.lax.linalg`: the linear algebra primitives and their JAX-named wrappers, gathered from the modules
that define them.

Each factorization acts on the last two dimensions and is batched over the leading ones. The families live
apart, each primitive beside all its rules:
- `linalg_factorizations`: cholesky, lu (with lu_pivots_to_permutation and permute_rows), geqrf,
  householder_product, qr;
- `linalg_eigen`: eigh, eig (general matrices, CPU only), svd;
- `linalg_triangular`: triangular_solve;
- `linalg_kernels`: calling LAPACK (CPU) and cuSOLVER (GPU) kernels from the lowerings;
- `linalg_matrices`: matrix helpers written with lax ops (triangles, adjoints, products) and the shared
  batching rule.
As in JAX, a failure that a kernel reports through its `info` output turns that matrix's results into NaNs.
"""

from .linalg_eigen import eig, eig_p, eigh, eigh_p, svd, svd_p  # noqa: F401
from .linalg_factorizations import (  # noqa: F401
    cholesky,
    cholesky_p,
    geqrf,
    geqrf_p,
    householder_product,
    householder_product_p,
    lu,
    lu_p,
    lu_pivots_to_permutation,
    lu_pivots_to_permutation_p,
    permute_rows,
    permute_rows_p,
    qr,
    qr_p,
)
from .linalg_matrices import identity_columns, symmetrize, tril, triu  # noqa: F401
from .linalg_triangular import triangular_solve, triangular_solve_p  # noqa: F401

# jax.lax.linalg's public functions (geqrf, symmetrize and permute_rows stay module-level helpers).
__all__ = ["cholesky", "eig", "eigh", "householder_product", "lu", "lu_pivots_to_permutation", "qr", "svd",
           "triangular_solve"]
