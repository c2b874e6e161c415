"""`numax.dtypes`, as `jax.dtypes`: the promotion error and the dtype helpers users reach through it."""

from numax.core.dtypes import (  # noqa: F401
    TypePromotionError,
    bfloat16,
    canonicalize_dtype,
    float0,
    issubdtype,
    promote_types,
    result_type,
)
