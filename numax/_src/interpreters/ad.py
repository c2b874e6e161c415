"""`jax.interpreters.ad`: numax's differentiation rule tables and helpers under jax's names. The tables are the
ones numax's own primitives fill (core/primitives.py) and its interpreters read, and numax's rules have jax's
signatures: a JVP rule is `rule(primals, tangents, **params) -> (primal_out, tangent_out)` (tangents may be
`Zero`), a transpose rule `rule(cotangent, *inputs, **params)` (linear inputs are `UndefinedPrimal`s)."""

from numax.core.ad_util import UndefinedPrimal, Zero
from numax.core.ad_util import is_undefined as is_undefined_primal
from numax.core.primitives import jvp_rules as primitive_jvps
from numax.core.primitives import transpose_rules as primitive_transposes
from numax.lax.ad import add_tangents, defjvp, defjvp2, zeros_like_aval
from numax.lax.ad import deflinear as deflinear2  # (jax's deflinear2: the transpose rule sees the inputs)
from numax.lax.ad import instantiate as instantiate_zeros

__all__ = ["UndefinedPrimal", "Zero", "add_tangents", "defjvp", "defjvp2", "deflinear2", "instantiate_zeros",
           "is_undefined_primal", "primitive_jvps", "primitive_transposes", "zeros_like_aval"]
