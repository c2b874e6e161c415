"""Distributions drawn by a closed-form transform of normal, uniform and Rademacher draws (no rejection
loop, no gamma variate): maxwell, double_sided_maxwell, orthogonal, wald and triangular.

Each follows JAX's algorithm step by step, so `numax.random.X(key, ...)` gives the bits
`jax.random.X(key, ...)` gives. Building blocks come from `_samplers`.
"""

import numpy as np

from numax import lax
from numax.transforms.jit import named_jit

from ._keys import unwrap
from ._samplers import (
    _as_operand,
    _broadcast_to,
    _canonical_shape,
    _checked_float_params,
    _const,
    _float_dtype,
    _normal_impl,
    _rademacher_impl,
    _shape_of,
    _split_two,
    _uniform_impl,
)


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
    key_words, shape, dtype, (mean,) = _checked_float_params("wald", key, shape, dtype, mean)
    return _wald(key_words, mean, shape, dtype)


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
    key_words, shape, dtype, (left, mode, right) = _checked_float_params("triangular", key, shape, dtype, left,
                                                                         mode, right)
    return _triangular(key_words, left, mode, right, shape, dtype)

