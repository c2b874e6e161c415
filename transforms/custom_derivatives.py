"""Custom derivative rules: `custom_jvp`, `custom_vjp` and `closure_convert`, with JAX's API, gathered from
the modules that define them.

A decorated function is traced into a program held by a call primitive (`custom_jvp_call`,
`custom_vjp_call`). Staged or run, that primitive is just the program; only differentiation looks at the
user's rules. When nothing is staged, the function is not traced at all: called on values it just runs, and
under an eager `jvp`/`grad` the rules are applied at once, as JAX does. Differentiating with respect to a
value the function closes over is an error, as in JAX: the custom rule only covers the arguments.
- `custom_function`: what both share (argument handling, staging a call, checking rule outputs, vmap);
- `custom_jvp_call`: `custom_jvp` and its primitive;
- `custom_vjp_call`: `custom_vjp`, its primitives (`custom_vjp_call`, `custom_lin`) and `closure_convert`.
"""

from .custom_function import SymbolicZero
from .custom_jvp_call import CustomJVPException, custom_jvp, custom_jvp_call_p  # noqa: F401
from .custom_vjp_call import (  # noqa: F401
    CustomVJPException,
    CustomVJPPrimal,
    closure_convert,
    custom_lin_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
)

__all__ = ["custom_jvp", "custom_vjp", "closure_convert", "SymbolicZero", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values", "CustomJVPException", "CustomVJPException"]
