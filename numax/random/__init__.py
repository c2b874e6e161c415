"""`numax.random`: explicit-key pseudo-random numbers, bit-identical to `jax.random` (threefry2x32).

Keys are either raw uint32[2] arrays (`PRNGKey`) or typed keys (`key`, dtype `key<fry>`); every
function accepts both and returns keys of the kind it was given.
"""

from ._closed_form import double_sided_maxwell, maxwell, orthogonal, triangular, wald  # noqa: F401
from ._counts import binomial, geometric, multinomial, poisson  # noqa: F401
from ._gamma import (  # noqa: F401
    ball,
    beta,
    chisquare,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    random_gamma_p,
    t,
)
from ._keys import (  # noqa: F401
    KeyDType,
    PRNGKey,
    PRNGKeyArray,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    split,
    wrap_key_data,
)
from ._out_sharding import takes_out_sharding as _takes_out_sharding
from ._samplers import (  # noqa: F401
    bernoulli,
    bits,
    categorical,
    cauchy,
    choice,
    exponential,
    gumbel,
    laplace,
    logistic,
    lognormal,
    multivariate_normal,
    normal,
    pareto,
    permutation,
    rademacher,
    randint,
    rayleigh,
    truncated_normal,
    uniform,
    weibull_min,
)

# The samplers that take JAX's `out_sharding=` keyword.
for _name in ("bits", "uniform", "randint", "permutation", "normal", "multivariate_normal", "truncated_normal",
              "bernoulli", "beta", "cauchy", "dirichlet", "exponential", "gamma", "loggamma", "poisson", "gumbel",
              "categorical", "laplace", "logistic", "pareto", "t", "chisquare", "f", "rademacher", "maxwell",
              "orthogonal", "generalized_normal", "ball", "rayleigh", "wald", "geometric", "triangular",
              "lognormal"):
    globals()[_name] = _takes_out_sharding(globals()[_name])
del _name
