"""`numax.nn`: neural-network activations, normalizations and initializers, with `jax.nn`'s numerics."""

from numax._logsumexp import logsumexp  # noqa: F401
from numax.core.lazy_imports import defer_imports as _defer_imports
from numax.numpy import tanh  # noqa: F401

from ._functions import (  # noqa: F401
    celu,
    dot_product_attention,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log1mexp,
    log_sigmoid,
    log_softmax,
    logmeanexp,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    sparse_plus,
    sparse_sigmoid,
    squareplus,
    standardize,
    swish,
)

_defer_imports(globals(), {"initializers": ()})  # loaded on first use (it builds on numax.random)
