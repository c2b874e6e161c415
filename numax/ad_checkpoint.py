"""`numax.ad_checkpoint`: rematerialization in differentiation, as `jax.ad_checkpoint`.

`checkpoint` (alias `remat`) recomputes a function's intermediates in the backward pass instead of saving
them; `checkpoint_name` tags a value for the name-based `checkpoint_policies`; `print_saved_residuals` shows
what differentiating a function saves for its backward pass.
"""

from numax.transforms.checkpoint import (  # noqa: F401
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    remat,
)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals", "remat"]
