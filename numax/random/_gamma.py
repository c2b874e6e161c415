"""Gamma variates and the distributions built on them: gamma, loggamma, beta, dirichlet, chisquare, f, t,
generalized_normal and ball.

Gamma is a primitive (`random_gamma`, as in JAX) lowered to one scalar Marsaglia-Tsang rejection loop per
element vectorized with `vmap`, batched by moving the batch into its keys, and differentiated in `a`
through `lax.random_gamma_grad`. Each sampler follows JAX's algorithm step by step (the same key splits,
the same operations in the same order), so `numax.random.X(key, ...)` gives the bits `jax.random.X(key,
...)` gives. Building blocks (uniform, normal, key splits, argument checks) come from `_samplers`.
"""

import functools
import math

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.avals import ShapedArray
from numax.core.primitives import Primitive, batching_rules
from numax.core.staging import trace_to_closed_program
from numax.core.trace import get_aval_of
from numax.lax import ad
from numax.lax.batching import axis_size_of, batch_at_front
from numax.lowering.lower import lower_program_body, register_lowering
from numax.transforms.jit import named_jit
from numax.transforms.vmap import vmap

from ._keys import split_impl, unwrap
from ._samplers import (
    _as_operand,
    _broadcast_all,
    _broadcast_to,
    _canonical_shape,
    _check_shape,
    _checked_float_params,
    _const,
    _exponential_impl,
    _float_dtype,
    _normal_impl,
    _param_shape,
    _rademacher_impl,
    _shape_of,
    _shape_or_none,
    _split_n,
    _split_two,
    _uniform_impl,
)


# --- gamma: Marsaglia and Tsang's rejection sampler, one scalar loop per element -------------------------------
def _gamma_one(key_words, alpha, log_space):
    """One Gamma(alpha) variate (its log with `log_space`) from one key, for scalar `alpha`."""
    dtype = get_aval_of(alpha).dtype
    zero, one, minus_one, two = (_const(v, dtype) for v in (0, 1, -1, 2))
    # alpha < 1 samples Gamma(alpha + 1) and scales it by U^(1/alpha) ("boosting").
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, _const(1.0 / 3.0, dtype))
    c = lax.div(_const(1.0 / 3.0, dtype), lax.sqrt(d))

    def reject(state):
        _, x_squared, v, u = state
        squeeze = lax.ge(u, lax.sub(one, lax.mul(_const(0.0331, dtype), lax.mul(x_squared, x_squared))))
        log_test = lax.ge(lax.log(u), lax.add(lax.mul(x_squared, _const(0.5, dtype)),
                                              lax.mul(d, lax.add(lax.sub(one, v), lax.log(v)))))
        return lax.bitwise_and(squeeze, log_test)

    def next_normal(state):
        key, subkey = _split_two(state[0])
        x = _normal_impl(subkey, (), dtype)
        return key, x, lax.add(one, lax.mul(x, c))

    def propose(state):
        key, x_key, u_key = _split_n(state[0], 3)
        # Redraw the normal until v = 1 + c x is positive.
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), next_normal, (x_key, zero, minus_one))
        u = _uniform_impl(u_key, 0.0, 1.0, (), dtype)
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    key, subkey = _split_two(key_words)
    # The initial state makes `reject` true, so the loop draws at least once.
    _, _, v, _ = lax.while_loop(reject, propose, (key, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential_impl(subkey, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    samples = lax.sub(one, _uniform_impl(subkey, 0.0, 1.0, (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _gamma_draw(keys, a, log_space):
    """Gamma variates of the shape of `a` for keys of shape (*batch, 2), `batch` a prefix of `a.shape`.

    Each key splits into one key per element of its slice of `a`; the draws run as one flat vmap of the
    scalar sampler, as JAX lowers `random_gamma` (a nested vmap fuses differently and rounds 1 ulp apart).
    """
    shape, dtype = get_aval_of(a).shape, get_aval_of(a).dtype
    batch = get_aval_of(keys).shape[:-1]
    count = math.prod(shape)
    if count == 0:
        return lax.full(shape, _const(0, dtype))
    per_key = math.prod(shape[len(batch):])
    keys = lax.reshape(keys, (math.prod(batch), 2))
    keys = lax.reshape(vmap(lambda k: split_impl(k, (per_key,)))(keys), (count, 2))
    samples = vmap(functools.partial(_gamma_one, log_space=log_space))(keys, lax.reshape(a, (count,)))
    return lax.reshape(samples, shape)


# `random_gamma(keys, a)` is a primitive, as in JAX, so that vmap over keys batches the flat draw (its
# batching rule moves the batch to the front of keys and `a`) and the JVP in `a` is JAX's.
random_gamma_p = Primitive("random_gamma")


def _random_gamma_abstract_eval(keys, a, *, log_space):
    batch = keys.shape[:-1]
    if keys.dtype != np.uint32 or not keys.shape or keys.shape[-1] != 2 or a.shape[:len(batch)] != batch:
        raise TypeError(f"random_gamma expects uint32 keys of shape (*batch, 2) and `a` of shape (*batch, ...), "
                        f"got keys {keys.dtype.name}{list(keys.shape)} and a {a.dtype.name}{list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise TypeError(f"random_gamma requires a floating `a`, got {a.dtype.name}")
    return ShapedArray(a.shape, a.dtype)


@functools.lru_cache(maxsize=64)
def _gamma_program(keys_aval, a_aval, log_space):
    return trace_to_closed_program(lambda keys, a: [_gamma_draw(keys, a, log_space)], [keys_aval, a_aval])


def _random_gamma_lowering(ctx, keys, a, *, log_space):
    closed = _gamma_program(*ctx.avals_in, log_space)
    return lower_program_body(ctx.module, ctx.builder, closed.program, closed.consts, [keys, a])[0]


def _random_gamma_batch(values, dims, *, log_space):
    size = axis_size_of(values, dims)
    keys, a = (batch_at_front(v, d, size) for v, d in zip(values, dims))
    return random_gamma_p.bind(keys, a, log_space=log_space), 0


def _random_gamma_grad(a, x):
    """lax.random_gamma_grad elementwise; one element at a time on CPU, as JAX computes it there (vectorized,
    XLA can fuse the series differently and round the last bit differently)."""
    from numax._runtime import default_backend

    shape = get_aval_of(a).shape
    count = math.prod(shape)
    pairs = (lax.reshape(a, (count,)), lax.reshape(x, (count,)))
    if default_backend() == "cpu":
        grads = lax.map(lambda pair: lax.random_gamma_grad(*pair), pairs)
    else:
        grads = lax.random_gamma_grad(*pairs)
    return lax.reshape(grads, shape)


def _random_gamma_jvp(a_dot, sample, keys, a, *, log_space):
    # d sample / d a by implicit differentiation of the CDF (lax.random_gamma_grad), as JAX's rule.
    dtype = get_aval_of(a).dtype
    if log_space:
        # d log(x) = dx / x; exp(log x) may round to 0, where the smallest normal float stands in.
        x = lax.exp(sample)
        x = lax.select(lax.eq(x, lax.full_like(x, 0)), lax.full_like(x, dtypes.finfo(dtype).tiny), x)
        grad = lax.div(_random_gamma_grad(a, x), x)
    else:
        grad = _random_gamma_grad(a, sample)
    return lax.mul(a_dot, grad)


random_gamma_p.def_abstract_eval(_random_gamma_abstract_eval)
register_lowering(random_gamma_p, _random_gamma_lowering)
batching_rules[random_gamma_p] = _random_gamma_batch
ad.defjvp2(random_gamma_p, None, _random_gamma_jvp)


def _gamma_impl(key_words, a, shape, dtype, log_space):
    shape = _param_shape("gamma", shape, a)
    a = _broadcast_to(lax.convert_element_type(a, dtype), shape)
    return random_gamma_p.bind(key_words, a, log_space=log_space)


_gamma = named_jit(_gamma_impl, "gamma", static_argnums=(2, 3, 4))


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a) floats (unit scale): density x^(a-1) e^(-x) / Gamma(a) on x >= 0.

    Differentiable with respect to `a` (implicit reparameterization, as in JAX)."""
    key_words, _ = unwrap("gamma", key)
    return _gamma(key_words, _as_operand(a), _shape_or_none("gamma", shape), _float_dtype("gamma", dtype), False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) floats, computed in log space (accurate for the tiny samples of small `a`)."""
    key_words, _ = unwrap("loggamma", key)
    return _gamma(key_words, _as_operand(a), _shape_or_none("loggamma", shape), _float_dtype("gamma", dtype), True)


# --- samplers built on gamma ------------------------------------------------------------------------------------
def _beta_impl(key_words, a, b, shape, dtype):
    shape = _param_shape("beta", shape, a, b)
    key_a, key_b = _split_two(key_words)
    a = _broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = _broadcast_to(lax.convert_element_type(b, dtype), shape)
    log_gamma_a = _gamma_impl(key_a, a, shape, dtype, True)
    log_gamma_b = _gamma_impl(key_b, b, shape, dtype, True)
    # gamma_a / (gamma_a + gamma_b), scaled by the larger one so that neither underflows.
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = lax.exp(lax.sub(log_gamma_a, log_max))
    gamma_b_scaled = lax.exp(lax.sub(log_gamma_b, log_max))
    return lax.div(gamma_a_scaled, lax.add(gamma_a_scaled, gamma_b_scaled))


_beta = named_jit(_beta_impl, "beta", static_argnums=(3, 4))


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) floats: density proportional to x^(a-1) (1-x)^(b-1) on [0, 1]."""
    key_words, shape, dtype, (a, b) = _checked_float_params("beta", key, shape, dtype, a, b)
    return _beta(key_words, a, b, shape, dtype)


def _dirichlet_impl(key_words, alpha, shape, dtype):
    from numax.nn._functions import softmax

    alpha_shape = _shape_of(alpha)
    if len(alpha_shape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(alpha_shape)}")
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        _check_shape("dirichlet", shape, alpha_shape[:-1])
    alpha = lax.convert_element_type(alpha, dtype)
    # In log space: small concentrations give gamma samples that underflow.
    log_gamma_samples = _gamma_impl(key_words, alpha, shape + alpha_shape[-1:], dtype, True)
    return softmax(log_gamma_samples, -1)


_dirichlet = named_jit(_dirichlet_impl, "dirichlet", static_argnums=(2, 3))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) vectors along the last axis of `alpha` (positive entries summing to 1).

    `shape` is the batch shape: the result has shape `shape + alpha.shape[-1:]`."""
    key_words, _ = unwrap("dirichlet", key)
    return _dirichlet(key_words, _as_operand(alpha), _shape_or_none("dirichlet", shape),
                      _float_dtype("dirichlet", dtype))


def _chisquare_impl(key_words, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    two = _const(2, dtype)
    log_g = _gamma_impl(key_words, lax.div(df, two), shape, dtype, True)
    return lax.mul(lax.exp(log_g), two)


_chisquare = named_jit(_chisquare_impl, "chisquare", static_argnums=(2, 3))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square floats with `df` degrees of freedom: 2 Gamma(df / 2)."""
    key_words, shape, dtype, (df,) = _checked_float_params("chisquare", key, shape, dtype, df)
    return _chisquare(key_words, df, shape, dtype)


def _f_impl(key_words, dfnum, dfden, shape, dtype):
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = _split_two(key_words)
    chi2_dfn = _chisquare_impl(key_dfn, dfnum, shape, dtype)
    chi2_dfd = _chisquare_impl(key_dfd, dfden, shape, dtype)
    num = lax.div(*_broadcast_all(chi2_dfn, dfnum))
    den = lax.div(*_broadcast_all(chi2_dfd, dfden))
    return lax.div(*_broadcast_all(num, den))


_f = named_jit(_f_impl, "f", static_argnums=(3, 4))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distributed floats: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)."""
    key_words, shape, dtype, (dfnum, dfden) = _checked_float_params("f", key, shape, dtype, dfnum, dfden)
    return _f(key_words, dfnum, dfden, shape, dtype)


def _t_impl(key_words, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = _split_two(key_words)
    n = _normal_impl(key_n, shape, dtype)
    half_df = lax.div(df, _const(2, dtype))
    g = _gamma_impl(key_g, half_df, shape, dtype, False)
    return lax.mul(n, lax.sqrt(lax.div(*_broadcast_all(half_df, g))))


_t = named_jit(_t_impl, "t", static_argnums=(2, 3))


def t(key, df, shape=None, dtype=None):
    """Student's t floats with `df` degrees of freedom: z sqrt(df / (2 Gamma(df / 2)))."""
    key_words, shape, dtype, (df,) = _checked_float_params("t", key, shape, dtype, df)
    return _t(key_words, df, shape, dtype)


# --- sign times a power of gamma: the generalized normal, and points in the p-norm ball --------------------------
def _generalized_normal_impl(key_words, p, shape, dtype):
    from numax import numpy as xnp

    key_gamma, key_sign = _split_two(key_words)
    g = _gamma_impl(key_gamma, xnp.true_divide(1, p), shape, dtype, False)
    r = _rademacher_impl(key_sign, shape, dtype)
    return r * xnp.power(g, xnp.true_divide(1, p))


_generalized_normal = named_jit(_generalized_normal_impl, "generalized_normal", static_argnums=(2, 3))


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal floats: density proportional to exp(-|x|^p) (sign * Gamma(1/p)^(1/p))."""
    key_words, _ = unwrap("generalized_normal", key)
    return _generalized_normal(key_words, _as_operand(p), _canonical_shape("generalized_normal", shape),
                               _float_dtype("generalized_normal", dtype))


def _ball_impl(key_words, p, d, shape, dtype):
    from numax import numpy as xnp

    key_g, key_e = _split_two(key_words)
    g = _generalized_normal_impl(key_g, p, (*shape, d), dtype)
    e = _exponential_impl(key_e, shape, dtype)
    norm = xnp.power(xnp.sum(xnp.power(xnp.abs(g), p), -1) + e, xnp.true_divide(1, p))
    return g / norm[..., None]


_ball = named_jit(_ball_impl, "ball", static_argnums=(2, 3, 4))


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit p-norm ball of dimension `d` (the last axis of the result)."""
    from numax.core.trace import Tracer

    key_words, _ = unwrap("ball", key)
    if isinstance(d, Tracer):
        raise TypeError("ball: the dimension `d` must be a concrete integer (it sets the result shape)")
    return _ball(key_words, _as_operand(p), int(d), _canonical_shape("ball", shape), _float_dtype("ball", dtype))


