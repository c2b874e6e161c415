"""Integer-valued counts: poisson, binomial, multinomial and geometric.

Poisson and binomial are JAX's rejection samplers, written as `while_loop`s over the whole sample that
stop once every element is accepted; multinomial is a chain of binomials. Each follows JAX's algorithm
step by step (the same key splits, the same operations in the same order), so `numax.random.X(key, ...)`
gives the bits `jax.random.X(key, ...)` gives. Building blocks come from `_samplers`.
"""

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import get_aval_of
from numax.numpy._util import requested_dtype
from numax.transforms.jit import named_jit

from ._keys import split_impl, unwrap
from ._samplers import (
    _as_operand,
    _broadcast_to,
    _canonical_shape,
    _const,
    _float_dtype,
    _param_shape,
    _shape_of,
    _shape_or_none,
    _split_n,
    _split_two,
    _uniform_impl,
)


def _isnan(x):
    return lax.ne(x, x)


def _any(x):
    return lax.reduce_or(x, tuple(range(get_aval_of(x).ndim)))


def _int_dtype(name, dtype):
    dtype = requested_dtype(int if dtype is None else dtype, name)
    if not dtypes.is_integer(dtype):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dtype}")
    return dtype


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
    dtype = _int_dtype("poisson", dtype)
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

    shape = _param_shape("binomial", shape, count, prob)
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
    dtype = _int_dtype("geometric", dtype)
    check_arraylike("geometric", p)
    p = _as_operand(p)
    return _geometric(key_words, p, _param_shape("geometric", shape, p), dtype)

