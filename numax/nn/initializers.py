"""`numax.nn.initializers`: functions `init(key, shape, dtype)` that build parameter arrays.

The numbers match `jax.nn.initializers` for the same key, shape and dtype (they draw from the same
`numax.random` streams and scale them the same way).
"""

import math
import typing

import numpy as np

from numax import numpy as xnp
from numax import random
from numax.core import dtypes


@typing.runtime_checkable
class Initializer(typing.Protocol):
    """What every initializer here is (a Protocol, for annotations and `isinstance`): a function
    `init(key, shape, dtype=None, out_sharding=None)` returning an array of that shape and dtype."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        raise NotImplementedError


def _dtype(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def _shape(shape):
    return tuple(int(d) for d in shape)


def zeros(key, shape, dtype=None):
    """An initializer-shaped function returning zeros."""
    return xnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    return xnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """Initializer filling with `value`."""

    def init(key, shape, dtype=dtype):
        return xnp.full(_shape(shape), value, dtype=_dtype(dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """Initializer drawing uniformly from [0, scale)."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.uniform(key, _shape(shape), dtype) * xnp.array(scale, dtype)

    return init


def normal(stddev=1e-2, dtype=None):
    """Initializer drawing from N(0, stddev^2)."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.normal(key, _shape(shape), dtype) * xnp.array(stddev, dtype)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Initializer drawing stddev * (a standard normal truncated to (lower, upper))."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dtype) * xnp.array(stddev, dtype)

    return init


def _size_over(shape, axes):
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): input and output sizes times the receptive field (the remaining axes)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
                         "default in_axis. Must be at least 2D or specify in_axis explicitly.")
    in_size, out_size = _size_over(shape, in_axis), _size_over(shape, out_axis)
    batch_size = _size_over(shape, batch_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


# Standard deviations of a unit normal truncated to (-2, 2), and of a complex one truncated to |z| < 2.
_TRUNCATED_STDDEV = 0.87962566103423978
_COMPLEX_TRUNCATED_STDDEV = 0.95311164380491208


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Initializer with variance scale / n, n chosen by `mode` from the fans, drawn from `distribution`."""

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominators = {"fan_in": lambda: fan_in, "fan_out": lambda: fan_out,
                        "fan_avg": lambda: (fan_in + fan_out) / 2, "fan_geo_avg": lambda: (fan_in * fan_out) ** 0.5}
        if mode not in denominators:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = xnp.array(scale / denominators[mode](), dtype=dtype)
        complex_dtype = dtypes.is_complex(dtype)
        if distribution == "truncated_normal":
            if not complex_dtype:
                stddev = xnp.sqrt(variance) / xnp.array(_TRUNCATED_STDDEV, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            stddev = xnp.sqrt(variance) / xnp.array(_COMPLEX_TRUNCATED_STDDEV, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * xnp.sqrt(variance)
        if distribution == "uniform":
            if not complex_dtype:
                return random.uniform(key, shape, dtype, -1) * xnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dtype) * xnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    return init


def _complex_uniform(key, shape, dtype):
    """Uniform over the unit disk: radius sqrt(2u), uniform angle."""
    key_r, key_theta = random.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    r = xnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * xnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """Complex normal truncated to |z| < upper, by inverting the radial CDF."""
    key_r, key_theta = random.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    t = (1 - xnp.exp(xnp.array(-(upper ** 2), dtype))) * random.uniform(key_r, shape, real_dtype).astype(dtype)
    r = xnp.sqrt(-xnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * xnp.exp(1j * theta)


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Initializer of `scale` times a Haar-random matrix with orthonormal columns along `column_axis` (or rows,
    whichever are fewer): the other axes are flattened into the rows."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        if out_sharding is not None:
            raise NotImplementedError("orthogonal initializer: out_sharding")
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return xnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        matrix = random.orthogonal(key, math.prod(shape) // n_cols, (), dtype, n_cols)
        rows_shape = tuple(np.delete(shape, column_axis))
        return xnp.array(scale, dtype) * xnp.moveaxis(matrix.reshape(*rows_shape, n_cols), -1, column_axis)

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Initializer of convolution kernels (3-, 4- or 5-D: spatial axes, then in and out features) that are zero
    except at the spatial center, which holds an `orthogonal` (in, out) matrix."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        if out_sharding is not None:
            raise NotImplementedError("delta_orthogonal initializer: out_sharding")
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        center = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        middle = tuple((k - 1) // 2 for k in shape[:-2])
        return xnp.zeros(shape, dtype).at[middle].set(center)

    return init
