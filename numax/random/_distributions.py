"""Distributions built from gamma variates and rejection loops: gamma, beta, Poisson, binomial and friends.

Each sampler follows JAX's algorithm step by step (the same key splits, the same operations in the same
order), so `numax.random.X(key, ...)` gives the bits `jax.random.X(key, ...)` gives. The rejection samplers
are `while_loop`s; gamma is a primitive (`random_gamma`, as in JAX) lowered to one scalar Marsaglia-Tsang
loop per element vectorized with `vmap`, batched by moving the batch into its keys, and differentiated in
`a` through `lax.random_gamma_grad`. Building blocks (uniform, normal, key splits, argument checks) come
from `_samplers`.
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
    _canonical_shape,
    _check_safe_to_cast,
    _check_shape,
    _const,
    _exponential_impl,
    _float_dtype,
    _normal_impl,
    _param_shape,
    _rademacher_impl,
    _shape_of,
    _split_two,
    _uniform_impl,
)


def _split_n(key_words, num):
    """`num` keys from one key, as a list of uint32[2] arrays."""
    keys = split_impl(key_words, (num,))
    return [lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in range(num)]


def _broadcast_to(x, shape):
    x_shape = get_aval_of(x).shape
    if tuple(x_shape) == tuple(shape):
        return x
    return lax.broadcast_in_dim(x, shape, range(len(shape) - len(x_shape), len(shape)))


def _isnan(x):
    return lax.ne(x, x)


def _any(x):
    return lax.reduce_or(x, tuple(range(get_aval_of(x).ndim)))


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
    from numax import default_backend

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
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    a = _broadcast_to(lax.convert_element_type(a, dtype), shape)
    return random_gamma_p.bind(key_words, a, log_space=log_space)


_gamma = named_jit(_gamma_impl, "gamma", static_argnums=(2, 3, 4))


def _shape_or_none(name, shape):
    return None if shape is None else _canonical_shape(name, shape)


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
    if shape is None:
        shape = tuple(np.broadcast_shapes(_shape_of(a), _shape_of(b)))
    else:
        _check_shape("beta", shape, _shape_of(a), _shape_of(b))
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
    key_words, _ = unwrap("beta", key)
    dtype = _float_dtype("beta", dtype)
    a, b = _as_operand(a), _as_operand(b)
    _check_safe_to_cast("beta", dtype, a, b)
    return _beta(key_words, a, b, _param_shape("beta", shape, a, b), dtype)


def _dirichlet_impl(key_words, alpha, shape, dtype):
    from numax.nn import softmax

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
    key_words, _ = unwrap("chisquare", key)
    dtype = _float_dtype("chisquare", dtype)
    df = _as_operand(df)
    shape = _param_shape("chisquare", shape, df)
    _check_safe_to_cast("chisquare", dtype, df)
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
    key_words, _ = unwrap("f", key)
    dtype = _float_dtype("f", dtype)
    dfnum, dfden = _as_operand(dfnum), _as_operand(dfden)
    shape = _param_shape("f", shape, dfnum, dfden)
    _check_safe_to_cast("f", dtype, dfnum, dfden)
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
    key_words, _ = unwrap("t", key)
    dtype = _float_dtype("t", dtype)
    df = _as_operand(df)
    shape = _param_shape("t", shape, df)
    _check_safe_to_cast("t", dtype, df)
    return _t(key_words, df, shape, dtype)


# --- Poisson: Knuth's product of uniforms for small rates, Hormann's transformed rejection above ---------------
def _poisson_knuth(key_words, lam, shape, dtype):
    float32 = np.dtype(np.float32)
    max_iters = _const(np.iinfo(dtype).max, dtype)
    neg_lam = lax.neg(lam)

    def body(state):
        i, k, key, log_prod = state
        key, subkey = _split_two(key)
        k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, _const(1, dtype)), k)
        u = _uniform_impl(subkey, 0.0, 1.0, shape, float32)
        return lax.add(i, _const(1, dtype)), k, key, lax.add(log_prod, lax.log(u))

    def cond(state):
        i, _, _, log_prod = state
        return lax.bitwise_and(_any(lax.gt(log_prod, neg_lam)), lax.lt(i, max_iters))

    init = (_const(0, dtype), lax.full(shape, _const(0, dtype)), key_words, lax.full(shape, _const(0, float32)))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _const(1, dtype))


def _poisson_rejection(key_words, lam, shape, dtype):
    float32 = np.dtype(np.float32)
    max_iters = _const(np.iinfo(dtype).max, dtype)

    def c(value):
        return _const(value, float32)

    log_lam = lax.log(lam)
    b = lax.add(c(0.931), lax.mul(c(2.53), lax.sqrt(lam)))
    a = lax.add(c(-0.059), lax.mul(c(0.02483), b))
    inv_alpha = lax.add(c(1.1239), lax.div(c(1.1328), lax.sub(b, c(3.4))))
    v_r = lax.sub(c(0.9277), lax.div(c(3.6224), lax.sub(b, c(2))))

    def body(state):
        i, k_out, accepted, key = state
        key, key_u, key_v = _split_n(key, 3)
        u = lax.sub(_uniform_impl(key_u, 0.0, 1.0, shape, float32), c(0.5))
        v = _uniform_impl(key_v, 0.0, 1.0, shape, float32)
        u_shifted = lax.sub(c(0.5), lax.abs(u))
        k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2), a), u_shifted), b), u), lam), c(0.43)))
        s = lax.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(u_shifted, u_shifted)), b)))
        t_bound = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lax.lgamma(lax.add(k, c(1))))
        accept1 = lax.bitwise_and(lax.ge(u_shifted, c(0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, c(0)), lax.bitwise_and(lax.lt(u_shifted, c(0.013)), lax.gt(v, u_shifted)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(s, t_bound)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, _const(1, dtype)), k_out, lax.bitwise_or(accepted, accept), key

    def cond(state):
        i, _, accepted, _ = state
        return lax.bitwise_and(_any(lax.bitwise_not(accepted)), lax.lt(i, max_iters))

    init = (_const(0, dtype), lax.full(shape, c(-1)), lax.full(shape, np.bool_(False)), key_words)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


def _poisson_impl(key_words, lam, shape, dtype):
    use_knuth = lax.bitwise_or(_isnan(lam), lax.lt(lam, _const(10, lam.dtype)))
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    # Rejection's acceptance rate tends to 89% as the rate grows; lanes on Knuth's side run it at a large rate.
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    result = lax.select(use_knuth, _poisson_knuth(key_words, lam_knuth, shape, dtype),
                        _poisson_rejection(key_words, lam_rejection, shape, dtype))
    return lax.select(lax.eq(lam, _const(0, lam.dtype)), lax.full_like(result, 0), result)


_poisson = named_jit(_poisson_impl, "poisson", static_argnums=(2, 3))


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) integers (default int32; int64 with x64)."""
    from numax import numpy as xnp

    key_words, _ = unwrap("poisson", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `poisson` must be an int dtype, got {dtype}")
    lam = _as_operand(lam)
    shape = _shape_of(lam) if shape is None else _canonical_shape("poisson", shape)
    lam = lax.convert_element_type(xnp.broadcast_to(lam, shape), np.float32)
    return _poisson(key_words, lam, shape, dtype)


# --- binomial: inversion by summed geometric gaps for small n p, BTRS rejection above ----------------------------
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k):
    """log(k!) minus its Stirling approximation: tabulated for k <= 9, a series above."""
    from numax import numpy as xnp

    dtype = get_aval_of(k).dtype
    use_table = lax.le(k, _const(9, dtype))
    k = lax.clamp(_const(0, dtype), k, _const(9, dtype))
    k_plus_1 = lax.add(k, _const(1, dtype))
    kp1sq = lax.mul(k_plus_1, k_plus_1)
    series = lax.sub(_const(1.0 / 360, dtype), lax.div(_const(1.0 / 1260, dtype), kp1sq))
    approx = lax.div(lax.sub(_const(1.0 / 12, dtype), lax.div(series, kp1sq)), k_plus_1)
    table = xnp.asarray(np.array(_STIRLING_TAIL, dtype))
    return lax.select(use_table, table[lax.convert_element_type(lax.floor(k), np.int32)], approx)


def _binomial_inversion(key_words, count, prob, shape, max_iters):
    dtype = get_aval_of(prob).dtype
    log1minusprob = lax.log1p(lax.neg(prob))

    def body(state):
        i, num_geom, geom_sum, key = state
        subkey, key = _split_two(key)
        num_geom_out = lax.select(lax.le(geom_sum, count), lax.add(num_geom, _const(1, dtype)), num_geom)
        u = _uniform_impl(subkey, 0.0, 1.0, shape, dtype)
        geom = lax.ceil(lax.div(lax.log(u), log1minusprob))
        return lax.add(i, _const(1, dtype)), num_geom_out, lax.add(geom_sum, geom), key

    def cond(state):
        i, _, geom_sum, _ = state
        return lax.bitwise_and(_any(lax.le(geom_sum, count)), lax.lt(i, max_iters))

    zeros = lax.full(shape, _const(0, dtype))
    k = lax.while_loop(cond, body, (_const(0, dtype), zeros, zeros, key_words))[1]
    return lax.sub(k, _const(1, dtype))


def _btrs(key_words, count, prob, shape, max_iters):
    """Hormann's transformed rejection with squeeze (BTRS)."""
    dtype = get_aval_of(prob).dtype

    def c(value):
        return _const(value, dtype)

    one_minus_prob = lax.sub(c(1), prob)
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), one_minus_prob))
    b = lax.add(c(1.15), lax.mul(c(2.53), stddev))
    a = lax.add(lax.add(c(-0.0873), lax.mul(c(0.0248), b)), lax.mul(c(0.01), prob))
    center = lax.add(lax.mul(count, prob), c(0.5))
    v_r = lax.sub(c(0.92), lax.div(c(4.2), b))
    r = lax.div(prob, one_minus_prob)
    alpha = lax.mul(lax.add(c(2.83), lax.div(c(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, c(1)), prob))
    count_minus_m_plus_1 = lax.add(lax.sub(count, m), c(1))
    m_term = lax.mul(lax.add(m, c(0.5)), lax.log(lax.div(lax.add(m, c(1)), lax.mul(r, count_minus_m_plus_1))))
    m_tails = (_stirling_approx_tail(m), _stirling_approx_tail(lax.sub(count, m)))

    def body(state):
        i, k_out, accepted, key = state
        key, key_u, key_v = _split_n(key, 3)
        u = lax.sub(_uniform_impl(key_u, 0.0, 1.0, shape, dtype), c(0.5))
        v = _uniform_impl(key_v, 0.0, 1.0, shape, dtype)
        us = lax.sub(c(0.5), lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
        k = lax.floor(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2), a), us), b), u), center))
        reject = lax.bitwise_or(lax.lt(k, c(0)), lax.gt(k, count))
        v = lax.log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        count_minus_k_plus_1 = lax.add(lax.sub(count, k), c(1))
        bound = lax.add(m_term, lax.mul(lax.add(count, c(1)), lax.log(lax.div(count_minus_m_plus_1,
                                                                               count_minus_k_plus_1))))
        bound = lax.add(bound, lax.mul(lax.add(k, c(0.5)),
                                       lax.log(lax.div(lax.mul(r, count_minus_k_plus_1), lax.add(k, c(1))))))
        bound = lax.add(lax.add(bound, m_tails[0]), m_tails[1])
        bound = lax.sub(lax.sub(bound, _stirling_approx_tail(k)), _stirling_approx_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(v, bound)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, c(1)), k_out, lax.bitwise_or(accepted, accept), key

    def cond(state):
        i, _, accepted, _ = state
        return lax.bitwise_and(_any(lax.bitwise_not(accepted)), lax.lt(i, max_iters))

    init = (c(0), lax.full(shape, c(-1)), lax.full(shape, np.bool_(False)), key_words)
    return lax.while_loop(cond, body, init)[1]


def _binomial_impl(key_words, count, prob, shape, dtype):
    from numax.numpy._util import promote_dtypes_inexact

    if shape is None:
        shape = tuple(np.broadcast_shapes(_shape_of(count), _shape_of(prob)))
    else:
        _check_shape("binomial", shape, _shape_of(count), _shape_of(prob))
    (prob,) = promote_dtypes_inexact(prob)
    prob_dtype = get_aval_of(prob).dtype

    def c(value):
        return _const(value, prob_dtype)

    count = _broadcast_to(lax.convert_element_type(count, prob_dtype), shape)
    prob = _broadcast_to(lax.convert_element_type(prob, prob_dtype), shape)
    p_lt_half = lax.lt(prob, c(0.5))
    q = lax.select(p_lt_half, prob, lax.sub(c(1), prob))
    count_nan_or_neg = lax.bitwise_or(_isnan(count), lax.lt(count, c(0)))
    count_inf = lax.eq(lax.abs(count), c(np.inf))
    q_is_nan = _isnan(q)
    q_l_0 = lax.lt(q, c(0))
    q = lax.select(lax.bitwise_or(q_is_nan, q_l_0), lax.full_like(q, 0.01), q)
    use_inversion = lax.bitwise_or(count_nan_or_neg, lax.le(lax.mul(count, q), c(10)))
    count = lax.floor(count)  # a float count rounds down, as numpy.random.binomial
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = c(dtypes.finfo(dtype).max)
    samples = lax.select(
        use_inversion,
        lax.convert_element_type(_binomial_inversion(key_words, count_inv, q, shape, max_iters), dtype),
        lax.convert_element_type(_btrs(key_words, count_btrs, q_btrs, shape, max_iters), dtype))
    # NaN for a NaN probability or a NaN or negative count, inf for an infinite count.
    invalid = lax.bitwise_or(lax.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(lax.bitwise_and(count_inf, lax.bitwise_not(invalid)), lax.full_like(samples, np.inf), samples)
    keep = lax.bitwise_or(lax.bitwise_or(lax.bitwise_or(p_lt_half, count_nan_or_neg), q_is_nan), count_inf)
    return lax.select(keep, samples, lax.sub(lax.convert_element_type(count, dtype), samples))


_binomial = named_jit(_binomial_impl, "binomial", static_argnums=(3, 4))


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats (`n` may be a float: it is rounded down)."""
    from numax.numpy._util import check_arraylike

    key_words, _ = unwrap("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = _float_dtype("binomial", dtype)
    return _binomial(key_words, _as_operand(n), _as_operand(p), _shape_or_none("binomial", shape), dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of `n` draws over the categories on the last axis of `p`, by a chain of binomials:
    each category takes Binomial(remaining draws, its share of the remaining probability)."""
    from numax import numpy as xnp
    from numax.numpy._util import check_arraylike, promote_dtypes_inexact

    key_words, _ = unwrap("multinomial", key)
    check_arraylike("multinomial", n, p)
    n, p = (xnp.asarray(v) for v in promote_dtypes_inexact(_as_operand(n), _as_operand(p)))
    shape = p.shape if shape is None else _canonical_shape("multinomial", shape)
    n = xnp.broadcast_to(n, shape[:-1])
    p = xnp.moveaxis(xnp.broadcast_to(p, shape), -1, 0)
    remaining_probs = lax.cumsum(p, 0, reverse=True)
    ratios = p / xnp.where(remaining_probs == 0, 1, remaining_probs)
    keys = split_impl(key_words, (ratios.shape[0],))

    def step(remainder, ratio_and_key):
        ratio, category_key = ratio_and_key
        count = binomial(category_key, remainder, xnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return xnp.moveaxis(counts, 0, -1).astype(dtype)


# --- transforms of normal, uniform and gamma draws -------------------------------------------------------------
def _maxwell_impl(key_words, shape, dtype):
    # The length of a standard normal 3-vector.
    # XLA fuses this sum of squares with the draws (numax's threefry rounds are unrolled, JAX's a loop) and
    # can round it 1 ulp away from JAX's program; the same sum of the same draws compiled alone agrees.
    normal3 = _normal_impl(key_words, shape + (3,), dtype)
    return lax.sqrt(lax.reduce_sum(lax.mul(normal3, normal3), (len(shape),)))


_maxwell = named_jit(_maxwell_impl, "maxwell", static_argnums=(1, 2))


def maxwell(key, shape=(), dtype=None):
    """Maxwell floats: the norm of a standard normal 3-vector."""
    key_words, _ = unwrap("maxwell", key)
    return _maxwell(key_words, _canonical_shape("maxwell", shape), _float_dtype("maxwell", dtype))


def _double_sided_maxwell_impl(key_words, loc, scale, shape, dtype):
    params_shape = tuple(np.broadcast_shapes(_shape_of(loc), _shape_of(scale)))
    # As in JAX, the parameter shape is appended to `shape` (which defaults to it when empty).
    shape = (shape or params_shape) + params_shape
    maxwell_key, rademacher_key = _split_two(key_words)
    maxwell_rvs = _maxwell_impl(maxwell_key, shape, dtype)
    random_sign = _rademacher_impl(rademacher_key, shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


_double_sided_maxwell = named_jit(_double_sided_maxwell_impl, "double_sided_maxwell", static_argnums=(3, 4))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell floats: loc + scale * (random sign) * Maxwell; the result shape is
    `shape + broadcast(loc, scale).shape`, as in JAX."""
    key_words, _ = unwrap("double_sided_maxwell", key)
    return _double_sided_maxwell(key_words, _as_operand(loc), _as_operand(scale),
                                 _canonical_shape("double_sided_maxwell", shape),
                                 _float_dtype("double_sided_maxwell", dtype))


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


def _orthogonal_impl(key_words, n, m, shape, dtype):
    from numax import numpy as xnp

    z = _normal_impl(key_words, (*shape, max(n, m), min(n, m)), dtype)
    q, r = xnp.linalg.qr(z)
    # Sign-correct the columns by the diagonal of R, so that Q is Haar distributed.
    x = q * xnp.expand_dims(xnp.sign(xnp.diagonal(r, axis1=-2, axis2=-1)), -2)
    return xnp.swapaxes(x, -1, -2) if n < m else x


_orthogonal = named_jit(_orthogonal_impl, "orthogonal", static_argnums=(1, 2, 3, 4))


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random orthogonal (unitary for complex dtypes) n x n matrices, or n x m with orthonormal
    rows or columns (whichever are fewer), batched over `shape`."""
    from numax.core.trace import Tracer

    key_words, _ = unwrap("orthogonal", key)
    if isinstance(n, Tracer) or isinstance(m, Tracer):
        raise TypeError("orthogonal: n and m must be concrete integers (they set the result shape)")
    n = int(n)
    m = n if m is None else int(m)
    return _orthogonal(key_words, n, m, _canonical_shape("orthogonal", shape),
                       _float_dtype("orthogonal", dtype, allow_complex=True))


def _wald_impl(key_words, mean, shape, dtype):
    key_v, key_z = _split_two(key_words)
    mean = _broadcast_to(lax.convert_element_type(mean, dtype), shape)
    v = _normal_impl(key_v, shape, dtype)
    z = _uniform_impl(key_z, 0.0, 1.0, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(_const(4, dtype), mean), y), lax.mul(mean_sq, y_sq)))
    half = _const(2, dtype)
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), half)), lax.mul(lax.div(mean, half), sqrt_term))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


_wald = named_jit(_wald_impl, "wald", static_argnums=(2, 3))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) floats with the given mean and unit shape parameter."""
    key_words, _ = unwrap("wald", key)
    dtype = _float_dtype("wald", dtype)
    mean = _as_operand(mean)
    shape = _param_shape("wald", shape, mean)
    _check_safe_to_cast("wald", dtype, mean)
    return _wald(key_words, mean, shape, dtype)


def _geometric_impl(key_words, p, shape, dtype):
    from numax import numpy as xnp
    from numax.numpy._util import promote_dtypes_inexact

    (p,) = promote_dtypes_inexact(p)
    p_dtype = get_aval_of(p).dtype
    u = _uniform_impl(key_words, 0.0, 1.0, shape, p_dtype)
    # u = 0 maps to 1 (no infinite log), keeping every other sample JAX draws for the key.
    u = xnp.where(u == 0, 1, u)
    log_one_minus_p = _broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(lax.log(u), log_one_minus_p)), _const(1, p_dtype))
    return lax.convert_element_type(g, dtype)


_geometric = named_jit(_geometric_impl, "geometric", static_argnums=(2, 3))


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) integers >= 1: the number of Bernoulli(p) trials up to the first success."""
    from numax.numpy._util import check_arraylike

    key_words, _ = unwrap("geometric", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    check_arraylike("geometric", p)
    p = _as_operand(p)
    return _geometric(key_words, p, _param_shape("geometric", shape, p), dtype)


def _triangular_impl(key_words, left, mode, right, shape, dtype):
    left = _broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = _broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = _broadcast_to(lax.convert_element_type(mode, dtype), shape)
    width = lax.sub(right, left)
    fc = lax.div(lax.sub(mode, left), width)
    u = _uniform_impl(key_words, 0.0, 1.0, shape, dtype)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(_const(1, dtype), u), width), lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


_triangular = named_jit(_triangular_impl, "triangular", static_argnums=(4, 5))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular floats on [left, right] peaking at `mode` (inverse CDF of one uniform)."""
    key_words, _ = unwrap("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    left, mode, right = _as_operand(left), _as_operand(mode), _as_operand(right)
    shape = _param_shape("triangular", shape, left, mode, right)
    _check_safe_to_cast("triangular", dtype, left, mode, right)
    return _triangular(key_words, left, mode, right, shape, dtype)


def key_dtype(impl_spec=None):
    """The dtype of typed keys (`key<fry>`); only the threefry2x32 implementation exists."""
    from ._keys import key_dtype as threefry_key_dtype

    if impl_spec not in (None, "threefry2x32"):
        raise ValueError(f"unsupported PRNG implementation {impl_spec!r}; numax implements 'threefry2x32'")
    return threefry_key_dtype
