"""Activation functions, softmax and friends, standardize, one_hot and dot-product attention, written
over numax.numpy.

Each follows `jax.nn`'s formula (not only its mathematics), so results agree to the last bit where
the same XLA operations run; where jax.nn fixes a derivative with a custom JVP (relu and relu6 at their
kinks, softmax) or a stop_gradient (log_softmax's shift), so does numax.
"""

import functools
import math
import operator

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax._logsumexp import logsumexp
from numax.core import dtypes
from numax.numpy._util import canonicalize_axis, check_arraylike, promote_args_inexact
from numax.transforms.custom_derivatives import custom_jvp


def _array(name, x):
    check_arraylike(name, x)
    return xnp.asarray(x)


def identity(x):
    """Returns `x` unchanged (as an array)."""
    return _array("identity", x)


@custom_jvp
def relu(x):
    """max(x, 0); its derivative at 0 is 0 (JAX's choice, not max's tie-splitting 1/2)."""
    return xnp.maximum(_array("relu", x), 0)


def _gate(condition, tangent):
    """The tangent where `condition` holds, 0 elsewhere."""
    return lax.select(condition, tangent, lax.full_like(tangent, 0))


relu.defjvps(lambda g, ans, x: _gate(xnp.asarray(x) > 0, g))


@custom_jvp
def relu6(x):
    """min(max(x, 0), 6); its derivative is 0 at both kinks (0 and 6), as in JAX."""
    return xnp.minimum(xnp.maximum(_array("relu6", x), 0), 6.0)


relu6.defjvps(lambda g, ans, x: _gate((xnp.asarray(x) > 0) & (xnp.asarray(x) < 6), g))


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return lax.logistic(_array("sigmoid", x))


def softplus(x):
    """log(1 + exp(x)), stable for large |x|."""
    return xnp.logaddexp(_array("softplus", x), 0)


def soft_sign(x):
    """x / (|x| + 1)."""
    x = _array("soft_sign", x)
    return x / (xnp.abs(x) + 1)


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    x = _array("silu", x)
    return x * sigmoid(x)


swish = silu


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return -softplus(-_array("log_sigmoid", x))


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _array("elu", x)
    # expm1 sees only the non-positive part, so large x cannot overflow to inf * 0.
    return xnp.where(x > 0, x, alpha * xnp.expm1(xnp.where(x > 0, 0.0, x)))


def leaky_relu(x, negative_slope=1e-2):
    """x for x >= 0, negative_slope * x otherwise."""
    x = _array("leaky_relu", x)
    return xnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    x = _array("hard_tanh", x)
    return xnp.where(x > 1, 1, xnp.where(x < -1, -1, x))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
    x = _array("celu", x)
    return xnp.maximum(x, 0.0) + alpha * xnp.expm1(xnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate=True):
    """x * Phi(x), with Phi the normal CDF (or its tanh approximation)."""
    (x,) = promote_args_inexact("gelu", x)
    x = xnp.asarray(x)
    dtype = x.dtype
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(dtype)
        cdf = 0.5 * (1.0 + xnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(dtype)
    return xnp.asarray(0.5 * x * lax.erfc(-x * sqrt_half), dtype=dtype)


def glu(x, axis=-1):
    """First half of `x` along `axis` gated by the sigmoid of the second half."""
    x = _array("glu", x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} of shape {x.shape} must have an even size")
    first, second = xnp.split(x, 2, axis)
    return first * sigmoid(second)


def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2."""
    x = _array("squareplus", x)
    return (x + xnp.sqrt(xnp.square(x) + b)) / 2


def sparse_plus(x):
    """0 below -1, x above 1, (x + 1)^2 / 4 between."""
    x = _array("sparse_plus", x)
    return xnp.where(x <= -1.0, 0.0, xnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """clip((x + 1) / 2, 0, 1)."""
    x = _array("sparse_sigmoid", x)
    return 0.5 * xnp.clip(x + 1.0, 0.0, 2.0)


def mish(x):
    """x * tanh(softplus(x))."""
    x = _array("mish", x)
    return x * xnp.tanh(softplus(x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(_array("hard_sigmoid", x) + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along `axis`; masked-out entries (where=False) give -inf."""
    x = _array("log_softmax", x)
    x_max = xnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else xnp.where(where, x, -np.inf)
    # The shift cancels mathematically; JAX keeps it out of differentiation.
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = xnp.log(xnp.sum(xnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return xnp.where(where, result, -np.inf)
    return result


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum; masked-out entries give 0.

    Differentiated by JAX's rule, y * (dx - sum(y * dx)), not through the shift and the division."""
    return _softmax(_array("softmax", x), axis, where)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis, where):
    x_max = xnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else xnp.where(where, x, -np.inf)
    unnormalized = xnp.exp(x_safe - x_max)
    result = unnormalized / xnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = xnp.where(where, result, 0)
    return result


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x, where), (x_dot, _) = primals, tangents
    y = _softmax(x, axis, where)
    return y, y * (x_dot - xnp.sum(y * x_dot, axis, where=where, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"):
    """(x - mean) / sqrt(variance + epsilon), with statistics over `axis` unless given."""
    check_arraylike("standardize", x)
    if mean is None:
        mean = xnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = xnp.mean(xnp.square(xnp.subtract(x, mean)), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            # E[x^2] - E[x]^2 can round below zero; clip so that rsqrt stays finite.
            variance = xnp.mean(xnp.square(x), axis, keepdims=True, where=where) - xnp.square(mean)
            variance = xnp.clip(variance, 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return xnp.subtract(x, mean) * lax.rsqrt(xnp.asarray(variance + epsilon))


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """1 where the new `axis` index equals x, else 0 (of `dtype`, default float)."""
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError("one_hot: num_classes must be a concrete Python integer (it sets the result shape)") from None
    x = _array("one_hot", x)
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    out_axis = canonicalize_axis(axis, x.ndim + 1)
    expanded = lax.expand_dims(x, (out_axis,))
    classes_shape = [1] * x.ndim
    classes_shape.insert(out_axis, num_classes)
    classes = lax.broadcasted_iota(x.dtype, classes_shape, out_axis)
    return (expanded == classes).astype(dtype)


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, accurate near 0 and for large x (Maechler's two-branch formula)."""
    x = _array("log1mexp", x)
    return xnp.where(x < xnp.log(2.0), xnp.log(-xnp.expm1(-x)), xnp.log1p(-xnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / xnp.expm1(x))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) along `axis`: logsumexp(x) - log(n), n counting the entries `where` selects."""
    x = _array("logmeanexp", x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    if where is None:
        axes = range(x.ndim) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
        count = xnp.asarray(math.prod(x.shape[canonicalize_axis(a, x.ndim)] for a in axes), lse.dtype)
    else:
        count = xnp.sum(xnp.broadcast_to(where, x.shape), axis, dtype=lse.dtype, keepdims=keepdims)
    return lse - xnp.log(count)


# --- attention -------------------------------------------------------------------------------------------
def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal=False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
    """softmax(Q K^T * scale + bias, masked) V per head, as `jax.nn.dot_product_attention`'s XLA path.

    Shapes are (batch, seq, heads, head_dim) (leading dims may be left out). Key/value heads may be fewer
    than query heads (grouped-query attention): each key/value head serves `N // K` query heads. `mask`
    (boolean), `is_causal`, `local_window_size` and the sequence lengths hide logits with a large negative
    number; the softmax runs in float32. Only `implementation='xla'` (or None) exists in numax."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("dot_product_attention: numax has no cuDNN implementation; use "
                                      "implementation='xla' or None")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    output_shape = xnp.shape(query)
    query, key, value = (_attention_4d(t) for t in (query, key, value))
    bias = None if bias is None else _attention_4d(bias)
    mask = None if mask is None else _attention_4d(mask)
    query_seq_lengths = None if query_seq_lengths is None else xnp.asarray(query_seq_lengths)
    key_value_seq_lengths = None if key_value_seq_lengths is None else xnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)

    batch, kv_len, kv_heads, head_dim = key.shape
    _check_attention_operand(value, [batch, kv_len, kv_heads, head_dim], key.dtype, "value")
    _check_attention_operand(query, [batch, -1, -1, head_dim], key.dtype, "query")
    _check_attention_operand(mask, [-1] * 4, np.dtype(bool), "mask")
    _check_attention_operand(bias, [-1] * 4, None, "bias")
    _check_attention_operand(query_seq_lengths, [batch], np.dtype(np.int32), "query_seq_lengths")
    _check_attention_operand(key_value_seq_lengths, [batch], np.dtype(np.int32), "key_value_seq_lengths")
    if query.shape[-2] % kv_heads != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, but got "
                         f"{query.shape[-2]} vs {kv_heads}")
    scale = 1.0 / np.sqrt(head_dim) if scale is None else scale
    out, residual = _attention_xla(query, key, value, bias, mask, is_causal, scale, query_seq_lengths,
                                   key_value_seq_lengths, local_window_size)
    out = xnp.reshape(out, output_shape)
    if return_residual:
        return out, xnp.reshape(residual, output_shape[:-1])
    return out


def _attention_4d(t):
    t = xnp.asarray(t)
    return xnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check_attention_operand(t, shape, dtype, name):
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    if any(want != -1 and got != want for got, want in zip(t.shape, shape)):
        raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def _attention_xla(query, key, value, bias, mask, is_causal, scale, q_lengths, kv_lengths, window):
    """Attention with query heads grouped by the key/value head they share: labels B(atch), T (query
    positions), S (key positions), K (key/value heads), G (query heads per K), H (head dim). Returns the
    encoded (B, T, N, H) values and the (B, T, N) logsumexp residual."""
    batch, q_len, num_heads, head_dim = query.shape
    kv_len, kv_heads = key.shape[1], key.shape[2]
    group = num_heads // kv_heads
    query = xnp.reshape(query, (batch, q_len, kv_heads, group, head_dim))
    logits_dtype = xnp.promote_types(query.dtype, np.float32)
    logits = xnp.einsum("BTKGH,BSKH->BKGTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * xnp.asarray(scale, logits.dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, num_heads, kv_heads, group, "bias")).astype(logits.dtype)
    keep = None if mask is None else _grouped(mask, num_heads, kv_heads, group, "mask")
    positions_q = lax.broadcasted_iota(np.int32, (q_len, kv_len), 0)
    positions_kv = lax.broadcasted_iota(np.int32, (q_len, kv_len), 1)
    if is_causal:
        keep = _and(keep, positions_q >= positions_kv)
    if window is not None:
        left, right = window
        keep = _and(keep, (positions_q <= positions_kv + left) & (positions_q >= positions_kv - right))
    if q_lengths is not None:
        keep = _and(keep, (positions_q < q_lengths[:, None, None])[:, None, None])
    if kv_lengths is not None:
        keep = _and(keep, (positions_kv < kv_lengths[:, None, None])[:, None, None])
    if keep is not None:
        finite_max = min(float(xnp.finfo(logits.dtype).max), float(np.finfo(np.float32).max))
        logits = xnp.where(keep, logits, xnp.asarray(-0.7 * finite_max, logits.dtype))
    logits = logits.astype(np.float32)  # the softmax always runs in float32, as in JAX
    probs = softmax(logits, axis=-1).astype(key.dtype)
    encoded = xnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if q_lengths is not None:
        valid = lax.broadcasted_iota(np.int32, (batch, q_len), 1) < q_lengths[:, None]
        encoded = encoded * valid[:, :, None, None, None].astype(encoded.dtype)
    residual = xnp.transpose(logsumexp(logits, axis=-1).astype(key.dtype), (0, 3, 1, 2))  # B K G T -> B T K G
    return (xnp.reshape(encoded, (batch, q_len, num_heads, head_dim)),
            lax.stop_gradient(xnp.reshape(residual, (batch, q_len, num_heads))))


def _grouped(t, num_heads, kv_heads, group, name):
    """A (b, n, t, s) bias or mask split into (b, K, G, t, s) heads; n is 1 or the query head count."""
    b, n, t_len, s_len = t.shape
    if n == 1:
        return t[:, :, None]
    if n != num_heads:
        raise ValueError(f"{name} has {n} heads; it must have 1 or as many as the query ({num_heads})")
    return xnp.reshape(t, (b, kv_heads, group, t_len, s_len))


def _and(mask, other):
    return other if mask is None else xnp.logical_and(mask, other)
