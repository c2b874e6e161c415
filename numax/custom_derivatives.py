"""`numax.custom_derivatives`, as `jax.custom_derivatives`: `custom_jvp`, `custom_vjp`, `closure_convert`,
`custom_gradient`, the symbolic-zero and primal types their rules see (`SymbolicZero`, `CustomVJPPrimal`) and the
call primitives that hold a decorated function in a traced program (`custom_jvp_call_p`, `custom_vjp_call_p`).
All are numax's own (transforms/custom_derivatives.py)."""

from numax._api_extras import custom_gradient  # noqa: F401
from numax.transforms.custom_derivatives import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    closure_convert,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
)
