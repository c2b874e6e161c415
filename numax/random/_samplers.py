"""Samplers: random arrays of given distributions drawn from a key, matching `jax.random` bit for bit.

Each public sampler checks its arguments, then calls a jitted implementation with the shape and dtype
static (as JAX does), so eager and jitted calls compile the same program and give the same numbers.
"""

import math
from collections.abc import Sequence

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.trace import Tracer, get_aval_of
from numax.lowering.array import Array
from numax.numpy._util import requested_dtype
from numax.transforms.jit import named_jit

from ._keys import UINT_DTYPES, random_bits, random_bits_impl, split_impl, unwrap


# --- argument checks -----------------------------------------------------------------------------
def _canonical_shape(name, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, Sequence) and not isinstance(shape, np.ndarray):
        raise TypeError(f"{name}: shape must be a sequence of non-negative integers, got {shape!r}")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: shape {shape} has negative dimensions")
    return shape


def _shape_or_none(name, shape):
    return None if shape is None else _canonical_shape(name, shape)


def _float_dtype(name, dtype, allow_complex=False):
    dtype = requested_dtype(float if dtype is None else dtype, name)
    ok = dtypes.is_inexact(dtype) if allow_complex else dtypes.is_float(dtype)
    if not ok:
        kind = "a float or complex" if allow_complex else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {kind} dtype, got {dtype}")
    return dtype


def _shape_of(value):
    if isinstance(value, (Array, Tracer)):
        return tuple(get_aval_of(value).shape)
    return np.shape(value)


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        try:
            combined = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            combined = None
        if combined is None or tuple(combined) != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape argument, and the "
                             f"result of broadcasting the shapes must equal the shape argument, but got "
                             f"parameter shapes {list(param_shapes)} for shape argument {shape}.")


def _as_operand(value):
    """Array-likes as something lax takes (lists become numpy arrays)."""
    if isinstance(value, (Array, Tracer, np.ndarray, np.generic)) or type(value) in dtypes.python_scalar_types:
        return value
    return np.asarray(value)


def _dtype_of(value):
    return get_aval_of(_as_operand(value)).dtype


def _const(value, dtype):
    return np.asarray(value, dtype)


# --- bits and uniform ----------------------------------------------------------------------------------
def bits(key, shape=(), dtype=None):
    """Uniform random unsigned integers of `dtype` (default uint32)."""
    key_words, _ = unwrap("bits", key)
    dtype = requested_dtype(dtypes.default_uint_dtype() if dtype is None else dtype, "bits")
    if not dtypes.is_unsigned(dtype):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return random_bits(key_words, dtype.itemsize * 8, _canonical_shape("bits", shape))


def _uniform_impl(key_words, minval, maxval, shape, dtype):
    minval = lax.broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = lax.broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); subtracting 1 maps it
    # to [0, 1). Types with fewer than 8 mantissa bits still draw a byte (as JAX does).
    rng_bits = 8 if nmant < 8 else nbits
    uint_dtype = UINT_DTYPES[nbits]
    raw = random_bits_impl(key_words, rng_bits, shape)
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint_dtype)
    mantissa = lax.shift_right_logical(raw, _const(rng_bits - nmant, uint_dtype))
    one_bits = np.array(1.0, dtype).view(uint_dtype)
    floats = lax.sub(lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dtype), _const(1.0, dtype))
    scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
    return lax.max(minval, lax.reshape(scaled, shape))


_uniform = named_jit(_uniform_impl, "uniform", static_argnums=(3, 4))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval)."""
    key_words, _ = unwrap("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    return _uniform(key_words, _as_operand(minval), _as_operand(maxval), _canonical_shape("uniform", shape), dtype)


# --- normal family ---------------------------------------------------------------------------------------
def _normal_real(key_words, shape, dtype):
    low = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform_impl(key_words, low, np.array(1.0, dtype), shape, dtype)
    return lax.mul(_const(np.sqrt(2), dtype), lax.erf_inv(u))


def _normal_impl(key_words, shape, dtype):
    if dtypes.is_complex(dtype):
        real_dtype = np.dtype(np.array(0, dtype).real.dtype)
        key_re, key_im = _split_two(key_words)
        re = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
        im = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
        return lax.div(lax.add(re, lax.mul(_const(1j, dtype), im)), _const(np.sqrt(2), dtype))
    return _normal_real(key_words, shape, dtype)


_normal = named_jit(_normal_impl, "normal", static_argnums=(1, 2))


def _split_n(key_words, num):
    """`num` keys from one key, as a list of uint32[2] arrays."""
    keys = split_impl(key_words, (num,))
    return [lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in range(num)]


def _split_two(key_words):
    return _split_n(key_words, 2)


def normal(key, shape=(), dtype=None):
    """Standard normal floats (complex: unit variance split over the two parts)."""
    key_words, _ = unwrap("normal", key)
    dtype = _float_dtype("normal", dtype, allow_complex=True)
    return _normal(key_words, _canonical_shape("normal", shape), dtype)


def _truncated_normal_impl(key_words, lower, upper, shape, dtype):
    if shape is None:
        shape = tuple(np.broadcast_shapes(_shape_of(lower), _shape_of(upper)))
    else:
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    sqrt2 = _const(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform_impl(key_words, a, b, shape, dtype)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    # Keep samples strictly inside (lower, upper), as erf_inv rounding can land on the bounds.
    low = lax.nextafter(lower, _const(np.inf, dtype))
    high = lax.nextafter(upper, _const(-np.inf, dtype))
    out, low, high = _broadcast_all(out, low, high)
    return lax.min(high, lax.max(low, out))


def _broadcast_to(x, shape):
    x_shape = get_aval_of(x).shape
    if tuple(x_shape) == tuple(shape):
        return x
    return lax.broadcast_in_dim(x, shape, range(len(shape) - len(x_shape), len(shape)))


def _broadcast_all(*operands):
    shape = tuple(np.broadcast_shapes(*[get_aval_of(x).shape for x in operands]))
    return [_broadcast_to(x, shape) for x in operands]


_truncated_normal = named_jit(_truncated_normal_impl, "truncated_normal", static_argnums=(3, 4))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal floats conditioned on lower < x < upper."""
    key_words, _ = unwrap("truncated_normal", key)
    shape = None if shape is None else _canonical_shape("truncated_normal", shape)
    dtype = _float_dtype("truncated_normal", dtype)
    return _truncated_normal(key_words, _as_operand(lower), _as_operand(upper), shape, dtype)


# --- discrete ------------------------------------------------------------------------------------------
def _bernoulli_impl(key_words, p, shape, mode):
    if shape is None:
        shape = _shape_of(p)
    else:
        _check_shape("bernoulli", shape, _shape_of(p))
    dtype = get_aval_of(p).dtype
    if mode == "high":
        both = _uniform_impl(key_words, 0.0, 1.0, (2, *shape), dtype)
        u1 = lax.reshape(lax.slice_in_dim(both, 0, 1), shape)
        u2 = lax.reshape(lax.slice_in_dim(both, 1, 2), shape)
        u2 = lax.mul(u2, _const(2.0 ** -dtypes.finfo(dtype).nmant, dtype))
        u2, threshold = _broadcast_all(u2, lax.sub(*_broadcast_all(p, u1)))
        return lax.lt(u2, threshold)
    u, p = _broadcast_all(_uniform_impl(key_words, 0.0, 1.0, shape, dtype), p)
    return lax.lt(u, p)


_bernoulli = named_jit(_bernoulli_impl, "bernoulli", static_argnums=(2, 3))


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability `p`."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key_words, _ = unwrap("bernoulli", key)
    shape = None if shape is None else _canonical_shape("bernoulli", shape)
    p = _as_operand(p)
    dtype = _dtype_of(p)
    if not dtypes.is_float(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    return _bernoulli(key_words, lax.convert_element_type(p, dtype), shape, mode)


def _clip_integer(value, dtype):
    """`value` (integer) converted to `dtype`, saturating at the range both dtypes share."""
    source = get_aval_of(value).dtype
    low = max(int(np.iinfo(dtype).min), int(np.iinfo(source).min))
    high = min(int(np.iinfo(dtype).max), int(np.iinfo(source).max))
    clipped = lax.clamp(_const(low, source), value, _const(high, source))
    return lax.convert_element_type(clipped, dtype)


def _randint_impl(key_words, minval, maxval, shape, dtype):
    info = np.iinfo(dtype)
    if info.bits < 32:
        # Narrow types sample in int32 (less modulo bias), then convert.
        int32 = np.dtype(np.int32)
        minval = lax.clamp(_const(info.min, int32), lax.convert_element_type(minval, int32), _const(info.max, int32))
        maxval = lax.clamp(_const(info.min, int32), lax.convert_element_type(maxval, int32),
                           _const(int(info.max) + 1, int32))
        return lax.convert_element_type(_randint_impl(key_words, minval, maxval, shape, int32), dtype)
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    if not dtypes.is_integer(get_aval_of(minval).dtype):
        minval = lax.convert_element_type(minval, dtypes.default_int_dtype())
    if not dtypes.is_integer(get_aval_of(maxval).dtype):
        maxval = lax.convert_element_type(maxval, dtypes.default_int_dtype())
    maxval_dtype = get_aval_of(maxval).dtype
    top = _clip_integer(_const(info.max, dtype), maxval_dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = lax.broadcast_to_rank(_clip_integer(minval, dtype), len(shape))
    maxval = lax.broadcast_to_rank(_clip_integer(maxval, dtype), len(shape))
    maxval_out_of_range = lax.broadcast_to_rank(maxval_out_of_range, len(shape))
    nbits = info.bits
    key1, key2 = _split_two(key_words)
    higher_bits, lower_bits = random_bits_impl(key1, nbits, shape), random_bits_impl(key2, nbits, shape)
    unsigned = UINT_DTYPES[nbits]
    # span = maxval - minval as unsigned (1 for empty ranges; +1 when maxval was clipped down).
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    empty = lax.le(maxval, minval)
    span = lax.select(empty, lax.full_like(span, 1), span)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.bitwise_not(empty)),
                      lax.add(span, _const(1, unsigned)), span)
    # Two words of randomness combined modulo span: (hi * 2**nbits + lo) mod span, computed in nbits.
    multiplier = lax.rem(_const(2 ** (nbits // 2), unsigned), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    minval, offset = _broadcast_all(minval, lax.convert_element_type(offset, dtype))
    return lax.add(minval, offset)


_randint = named_jit(_randint_impl, "randint", static_argnums=(3, 4))


def _as_int_operand(value):
    value = _as_operand(value)
    if type(value) is int:
        return np.asarray(value, dtypes.default_int_dtype())  # raises OverflowError if it does not fit
    return value


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in [minval, maxval)."""
    key_words, _ = unwrap("randint", key)
    dtype = requested_dtype(int if dtype is None else dtype, "randint")
    if not dtypes.is_integer(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = _canonical_shape("randint", shape)
    return _randint(key_words, _as_int_operand(minval), _as_int_operand(maxval), shape, dtype)


# --- continuous, from one uniform draw ----------------------------------------------------------------------
def _exponential_impl(key_words, shape, dtype):
    u = _uniform_impl(key_words, 0.0, 1.0, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))  # 1 - u lies in (0, 1]


def _laplace_impl(key_words, shape, dtype):
    u = _uniform_impl(key_words, -1.0 + dtypes.finfo(dtype).epsneg, 1.0, shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic_impl(key_words, shape, dtype):
    x = _uniform_impl(key_words, dtypes.finfo(dtype).tiny, 1.0, shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _gumbel_impl(key_words, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if mode == "high":
        both = _uniform_impl(key_words, 0.0, 1.0, (2, *shape), dtype)
        high = lax.reshape(lax.slice_in_dim(both, 0, 1), shape)
        low = lax.reshape(lax.slice_in_dim(both, 1, 2), shape)
        # Below 0.5, refine the draw with a second uniform's bits to reach smaller values.
        refined = lax.add(lax.add(high, lax.mul(_const(2.0 ** -info.nmant, dtype), low)), _const(info.tiny, dtype))
        x = lax.select(lax.ge(high, _const(0.5, dtype)), high, refined)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform_impl(key_words, info.tiny, 1.0, shape, dtype)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


_exponential = named_jit(_exponential_impl, "exponential", static_argnums=(1, 2))
_laplace = named_jit(_laplace_impl, "laplace", static_argnums=(1, 2))
_logistic = named_jit(_logistic_impl, "logistic", static_argnums=(1, 2))
_gumbel = named_jit(_gumbel_impl, "gumbel", static_argnums=(1, 2, 3))


def _simple_sampler(name, impl):
    def sampler(key, shape=(), dtype=None):
        key_words, _ = unwrap(name, key)
        return impl(key_words, _canonical_shape(name, shape), _float_dtype(name, dtype))

    sampler.__name__ = name
    return sampler


exponential = _simple_sampler("exponential", _exponential)
exponential.__doc__ = "Exponential(1) floats: density exp(-x) on x >= 0."
laplace = _simple_sampler("laplace", _laplace)
laplace.__doc__ = "Laplace(0, 1) floats: density exp(-|x|) / 2."
logistic = _simple_sampler("logistic", _logistic)
logistic.__doc__ = "Standard logistic floats: density e^-x / (1 + e^-x)^2."


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats: density exp(-(x + exp(-x)))."""
    key_words, _ = unwrap("gumbel", key)
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel(key_words, _canonical_shape("gumbel", shape), _float_dtype("gumbel", dtype), mode)


def _categorical_impl(key_words, logits, axis, shape, batch_shape, mode):
    ndim = get_aval_of(logits).ndim
    prefix = shape[:len(shape) - len(batch_shape)]
    axis = axis % ndim
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis, get_aval_of(logits).shape[axis])
    noise = _gumbel_impl(key_words, (*prefix, *logits_shape), get_aval_of(logits).dtype, mode)
    expanded = lax.broadcast_to_rank(logits, len(prefix) + ndim)
    noise, expanded = _broadcast_all(noise, expanded)
    return lax.argmax(lax.add(noise, expanded), len(prefix) + axis, dtypes.default_int_dtype())


_categorical = named_jit(_categorical_impl, "categorical", static_argnums=(2, 3, 4, 5))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Category indices drawn with probabilities softmax(logits) along `axis` (Gumbel-max trick)."""
    key_words, _ = unwrap("categorical", key)
    logits = _as_operand(logits)
    logits_shape = _shape_of(logits)
    if not logits_shape:
        raise ValueError("categorical: logits must have at least one dimension")
    axis = int(axis)
    if not -len(logits_shape) <= axis < len(logits_shape):
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for logits of rank {len(logits_shape)}")
    batch_shape = tuple(np.delete(np.array(logits_shape, dtype=np.int64), axis).tolist())
    shape = batch_shape if shape is None else _canonical_shape("categorical", shape)
    _check_shape("categorical", shape, batch_shape)
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    dtype = _dtype_of(logits)
    if not dtypes.is_float(dtype):
        logits = lax.convert_element_type(logits, dtypes.default_float_dtype())
    if not replace:
        return _categorical_without_replacement(key_words, logits, axis, shape, batch_shape, mode)
    return _categorical(key_words, logits, axis, shape, batch_shape, mode)


def _categorical_without_replacement(key_words, logits, axis, shape, batch_shape, mode):
    from numax import numpy as xnp

    aval = get_aval_of(logits)
    prefix = shape[:len(shape) - len(batch_shape)]
    k = math.prod(prefix)
    if k > aval.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({aval.shape[axis]}).")
    perturbed = lax.add(logits, _gumbel_impl(key_words, aval.shape, aval.dtype, mode))
    _, indices = lax.top_k(xnp.moveaxis(perturbed, axis, -1), k)
    rank = len(batch_shape) + 1
    return lax.reshape(indices, shape, (rank - 1, *range(rank - 1)))


# --- permutations and choice (sort-based shuffles, as JAX's) -------------------------------------------------
def _shuffle_impl(key_words, x, axis):
    # Sorting by random 32-bit keys; enough rounds that key collisions (ties) are negligible.
    size = math.prod(get_aval_of(x).shape)
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        key_words, subkey = _split_two(key_words)
        sort_keys = random_bits_impl(subkey, 32, get_aval_of(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


_shuffle = named_jit(_shuffle_impl, "shuffle", static_argnums=(2,))


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) (integer x), or of `x` along `axis`.

    With `independent`, every slice along `axis` is shuffled separately; otherwise whole slices move.
    """
    from numax import numpy as xnp

    key_words, _ = unwrap("permutation", key)
    x = _as_operand(x)
    aval = get_aval_of(x)
    if not aval.ndim:
        if not dtypes.is_integer(aval.dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        if isinstance(x, Tracer):
            raise TypeError("permutation: an integer x must be concrete (it sets the result shape); "
                            "pass a static Python int")
        return _shuffle(key_words, xnp.arange(int(x)), 0)
    axis = int(axis)
    if not -aval.ndim <= axis < aval.ndim:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {aval.ndim}")
    axis %= aval.ndim
    if independent or aval.ndim == 1:
        return _shuffle(key_words, x, axis)
    order = _shuffle(key_words, xnp.arange(aval.shape[axis]), 0)
    return xnp.take(x, order, axis, unique_indices=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from `a` (an array, or range(a) for an integer) along `axis`, with or without
    replacement, uniformly or with probabilities `p`."""
    from numax import numpy as xnp

    key_words, _ = unwrap("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of numax.random.choice must be a sequence, got {shape}")
    shape = _canonical_shape("choice", shape)
    arr = xnp.asarray(_as_operand(a))
    if arr.ndim == 0:
        if isinstance(arr, Tracer):
            raise TypeError("choice: an integer `a` must be concrete (it sets the population size)")
        n_inputs = int(a)
    else:
        if not -arr.ndim <= axis < arr.ndim:
            raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {arr.ndim}")
        axis %= arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return xnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when "
                         "'replace=False'")
    if p is None:
        if replace:
            indices = randint(key_words, shape, 0, n_inputs)
            result = indices if arr.ndim == 0 else xnp.take(arr, indices, axis)
        else:
            shuffled = permutation(key_words, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(shuffled, 0, n_draws, axis=0 if arr.ndim == 0 else axis)
    else:
        from numax.numpy._util import promote_dtypes_inexact

        (p_arr,) = promote_dtypes_inexact(_as_operand(p))
        p_arr = xnp.asarray(p_arr)
        if p_arr.shape != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape "
                             f"{p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            # Inverse-CDF sampling: the first cumulative weight above a uniform draw.
            p_cumulative = lax.cumsum(p_arr, 0)
            total = lax.slice(p_cumulative, (n_inputs - 1,), (n_inputs,))
            draws = _uniform(key_words, 0.0, 1.0, shape, p_cumulative.dtype)
            r = lax.mul(lax.reshape(total, (1,) * len(shape)) if shape else lax.reshape(total, ()),
                        lax.sub(_const(1, p_cumulative.dtype), draws))
            indices = xnp.searchsorted(p_cumulative, r).astype(dtypes.default_int_dtype())
        else:
            # Gumbel top-k: the k largest perturbed log-weights are a sample without replacement.
            mode = "low" if mode is None else mode
            perturbed = lax.add(_gumbel(key_words, (n_inputs,), p_arr.dtype, mode), xnp.log(p_arr))
            indices = lax.top_k(perturbed, n_draws)[1].astype(dtypes.default_int_dtype())
        result = indices if arr.ndim == 0 else xnp.take(arr, indices, axis)
    return result.reshape(shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:])


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with the given mean (..., n) and covariance (..., n, n): mean + factor @ z with
    factor @ factor^T = cov (a Cholesky factor, or from svd/eigh for singular covariances)."""
    from numax import numpy as xnp
    from numax.numpy._util import promote_dtypes_inexact

    key_words, _ = unwrap("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = (xnp.asarray(v) for v in promote_dtypes_inexact(_as_operand(mean), _as_operand(cov)))
    dtype = requested_dtype(dtype, "multivariate_normal") or mean.dtype
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dtype}")
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == "
                         f"{cov.shape}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _canonical_shape("multivariate_normal", shape)
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = xnp.linalg.svd(cov)
        factor = u * xnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = xnp.linalg.eigh(cov)
        factor = v * xnp.sqrt(w[..., None, :])
    else:
        factor = xnp.linalg.cholesky(cov)
    samples = normal(key_words, shape + mean.shape[-1:], dtype)
    return mean + xnp.einsum("...ij,...j->...i", factor, samples)


# --- transforms of the basic samplers ------------------------------------------------------------------------
def _cauchy_impl(key_words, shape, dtype):
    u = _uniform_impl(key_words, dtypes.finfo(dtype).eps, 1.0, shape, dtype)
    return lax.tan(lax.mul(_const(np.pi, dtype), lax.sub(u, _const(0.5, dtype))))


_cauchy = named_jit(_cauchy_impl, "cauchy", static_argnums=(1, 2))
cauchy = _simple_sampler("cauchy", _cauchy)
cauchy.__doc__ = "Standard Cauchy floats: density 1 / (pi (1 + x^2))."


def _check_safe_to_cast(name, dtype, *params):
    """Array parameters must cast to `dtype` without loss (Python scalars always may), as in JAX."""
    for param in params:
        if type(param) in dtypes.python_scalar_types:
            continue
        param_dtype = _dtype_of(param)
        if dtypes.promote_types(param_dtype, dtype) != dtype:
            raise ValueError(f"In arguments to {name}, cannot safely cast argument of type {param_dtype} to {dtype}")


def _param_shape(name, shape, *params):
    if shape is None:
        return tuple(np.broadcast_shapes(*[_shape_of(p) for p in params]))
    shape = _canonical_shape(name, shape)
    _check_shape(name, shape, *[_shape_of(p) for p in params])
    return shape


def _checked_float_params(name, key, shape, dtype, *params):
    """The checks of a float sampler with array parameters, before its jitted implementation: the key, a float
    dtype, `shape` broadcast-compatible with the parameters (their broadcast shape when None) and parameters
    that cast safely to the dtype. Returns (key words, shape, dtype, parameters as operands)."""
    key_words, _ = unwrap(name, key)
    dtype = _float_dtype(name, dtype)
    params = [_as_operand(p) for p in params]
    shape = _param_shape(name, shape, *params)
    _check_safe_to_cast(name, dtype, *params)
    return key_words, shape, dtype, params


def _pareto_impl(key_words, b, shape, dtype):
    e = _exponential_impl(key_words, shape, dtype)
    e, b = _broadcast_all(e, lax.convert_element_type(b, dtype))
    return lax.exp(lax.div(e, b))


_pareto = named_jit(_pareto_impl, "pareto", static_argnums=(2, 3))


def pareto(key, b, shape=None, dtype=None):
    """Pareto floats with shape parameter `b`: density b / x^(b+1) on x >= 1."""
    key_words, shape, dtype, (b,) = _checked_float_params("pareto", key, shape, dtype, b)
    return _pareto(key_words, b, shape, dtype)


def _lognormal_impl(key_words, sigma, shape, dtype):
    scaled = _normal_impl(key_words, shape, dtype)
    scaled, sigma = _broadcast_all(scaled, lax.convert_element_type(sigma, dtype))
    return lax.exp(lax.mul(scaled, sigma))


_lognormal = named_jit(_lognormal_impl, "lognormal", static_argnums=(2, 3))


_UNIT_SIGMA = np.float32(1)  # JAX's default: a float32 scalar, so that it constrains the dtype like an array


def lognormal(key, sigma=_UNIT_SIGMA, shape=None, dtype=None):
    """exp(sigma * z) for standard normal z."""
    key_words, shape, dtype, (sigma,) = _checked_float_params("lognormal", key, shape, dtype, sigma)
    return _lognormal(key_words, sigma, shape, dtype)


def _rayleigh_impl(key_words, scale, shape, dtype):
    u = _uniform_impl(key_words, 0.0, 1.0, shape, dtype)
    scale = lax.broadcast_in_dim(lax.convert_element_type(scale, dtype), shape,
                                 range(len(shape) - len(_shape_of(scale)), len(shape)))
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _const(-2, dtype))))


_rayleigh = named_jit(_rayleigh_impl, "rayleigh", static_argnums=(2, 3))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh floats: scale * sqrt(-2 log u)."""
    key_words, shape, dtype, (scale,) = _checked_float_params("rayleigh", key, shape, dtype, scale)
    return _rayleigh(key_words, scale, shape, dtype)


def _weibull_min_impl(key_words, scale, concentration, shape, dtype):
    from numax import numpy as xnp

    u = _uniform_impl(key_words, 0, 1, shape, dtype)
    # The inverse of the Weibull CDF.
    return xnp.power(-xnp.log1p(-u), 1.0 / concentration) * scale


_weibull_min = named_jit(_weibull_min_impl, "weibull_min", static_argnums=(3, 4))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull floats: scale * (-log(1 - u))^(1 / concentration)."""
    key_words, _ = unwrap("weibull_min", key)
    return _weibull_min(key_words, _as_operand(scale), _as_operand(concentration),
                        _canonical_shape("weibull_min", shape), _float_dtype("weibull_min", dtype))


def _rademacher_impl(key_words, shape, dtype):
    signs = lax.convert_element_type(_bernoulli_impl(key_words, np.float32(0.5), shape, "low"), dtype)
    return lax.convert_element_type(lax.sub(lax.mul(_const(2, dtype), signs), _const(1, dtype)), dtype)


_rademacher = named_jit(_rademacher_impl, "rademacher", static_argnums=(1, 2))


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability (integers by default)."""
    key_words, _ = unwrap("rademacher", key)
    dtype = requested_dtype(int if dtype is None else dtype, "rademacher")
    return _rademacher(key_words, _canonical_shape("rademacher", shape), dtype)
