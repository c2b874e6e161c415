"""`numax.nn`: neural-network activations, normalizations and initializers, with `jax.nn`'s numerics."""

from numax.scipy.special import logsumexp  # noqa: F401

from . import initializers  # noqa: F401
from ._functions import (  # noqa: F401
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log_sigmoid,
    log_softmax,
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
