"""Array creation: array/asarray, zeros/ones/full/empty and their *_like forms, arange, linspace,
logspace, eye/identity, meshgrid, tri/triu/tril."""

import builtins
import operator

import numpy as np

from numax import lax
from numax.core import dtypes
from numax.core.avals import ShapedArray, symbolic_dim_types
from numax.core.trace import Tracer, concrete_or_error
from numax.lowering.array import Array, put
from numax.transforms.jit import jit

from ._util import (
    asarray_from_sequence,
    aval,
    canonicalize_axis,
    index_dims,
    is_array,
    promote_dtypes,
    requested_dtype,
    shape,
    to_array,
)


def _placed(value, device):
    """A creation function's result on its `device` keyword (None: where it was made, the default placement)."""
    return value if device is None else value.to_device(device)


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):
    """A numax array from any array-like (Python scalars stay weakly typed, as in JAX)."""
    dtype = requested_dtype(dtype, "array")
    if dtype == dtypes.float0:  # (no device holds float0 values: a host array of them, as jax gives)
        return np.zeros(np.shape(object), dtypes.float0)
    if dtypes.has_extended_dtype(object):
        return _typed_key_array(object, dtype, copy)
    if isinstance(object, (Array, Tracer)):
        out = object if dtype is None else lax.convert_element_type(object, dtype)
        if copy and out is object and type(object) is Array:
            out = _fresh_copy(object)  # a new buffer: deleting or donating one leaves the other usable
    elif type(object) in dtypes.python_scalar_types:
        weak = dtype is None and dtypes.is_weak_scalar(object)
        value_dtype = dtype or dtypes.python_scalar_dtype(object)
        if type(object) is int and dtypes.is_integer(value_dtype):
            dtypes.check_int_fits(object, value_dtype)
        out = put(np.asarray(object, value_dtype), weak_type=weak)
    elif type(object) in symbolic_dim_types:  # a dimension used as a value: a weak int, as a Python int
        out = lax.convert_element_type(object, dtype or dtypes.default_int_dtype(), dtype is None)
    elif isinstance(object, (list, tuple)):
        value = asarray_from_sequence(object)
        out = value if is_array(value) else put(_host(value, dtype))
        # An array built from a sequence is strongly typed, even from weakly typed elements (as in JAX).
        out = lax.convert_element_type(out, dtype if dtype is not None else aval(out).dtype)
    elif hasattr(object, "__jax_array__"):
        return array(object.__jax_array__(), dtype, copy, order, ndmin, device=device)
    else:
        out = put(_host(np.asarray(object), dtype))
    if ndmin > len(shape(out)):
        out = lax.broadcast_to_rank(out, ndmin)
    return _placed(out, device)


_fresh_copy = jit(lambda x: x)  # an identity program's output is a new buffer


def _typed_key_array(keys, dtype, copy):
    """`array`/`asarray` of typed PRNG keys, as in jax: the keys themselves (a new key array over copied data
    when `copy`); another dtype is refused, as their conversion is."""
    if dtype is not None and dtype != keys.dtype:
        name = dtype if isinstance(dtype, (str, dtypes.ExtendedDType)) else np.dtype(dtype)
        raise ValueError(f"Cannot convert_element_type from {keys.dtype} to {name}")
    if not copy:
        return keys
    from numax import random  # (numax.random builds on numax.numpy)

    return random.wrap_key_data(_fresh_copy(random.key_data(keys)))


def _host(value, dtype):
    value = np.asarray(value)
    if value.dtype == object:
        if any(item is None for item in value.flat):  # (jax's ValueError, as for an empty pytree node)
            raise ValueError("None is not a valid value for numax.numpy.array")
        raise TypeError(f"numax cannot make an array of Python objects: {value!r}")
    return value.astype(dtype if dtype is not None else dtypes.canonicalize_dtype(value.dtype), copy=False)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    if copy:
        return array(a, dtype=dtype, copy=True, device=device)
    dtype = requested_dtype(dtype, "asarray")
    if isinstance(a, (Array, Tracer)) and (dtype is None or aval(a).dtype == dtype):
        return _placed(a, device)
    if dtypes.has_extended_dtype(a):
        return _placed(_typed_key_array(a, dtype, False), device)
    return array(a, dtype=dtype, device=device)


def _shape_arg(shape_value):
    if isinstance(shape_value, (int, np.integer)) or (is_array(shape_value) and not aval(shape_value).shape):
        return (operator.index(shape_value),)
    return tuple(index_dims(shape_value))  # (a float dimension is a TypeError, as in JAX)


def _check_fill_value(fill_value, dtype):
    """A Python complex fill value has no real or integer value: jax.numpy raises a TypeError for it (as
    `int(1j)` does) where numpy arrays of complex type would be truncated to their real part."""
    if type(fill_value) is complex and dtype is not None and not dtypes.is_complex(dtype):
        raise TypeError(f"cannot fill an array of dtype {np.dtype(dtype).name} with the complex value {fill_value}")


def full(shape, fill_value, dtype=None, *, device=None):
    dtype = requested_dtype(dtype, "full")
    _check_fill_value(fill_value, dtype)
    shape = _shape_arg(shape)
    if aval(fill_value).shape:
        from ._shape import broadcast_to

        value = fill_value if dtype is None else lax.convert_element_type(fill_value, dtype)
        return _placed(broadcast_to(value, shape), device)
    return _placed(lax.full(shape, fill_value, dtype), device)


def zeros(shape, dtype=None, *, device=None):
    dtype = requested_dtype(dtype, "zeros") or dtypes.default_float_dtype()
    if dtype == dtypes.float0:
        return np.zeros(_shape_arg(shape), dtypes.float0)
    return _placed(lax.full(_shape_arg(shape), 0, dtype), device)


def ones(shape, dtype=None, *, device=None):
    dtype = requested_dtype(dtype, "ones") or dtypes.default_float_dtype()
    return _placed(lax.full(_shape_arg(shape), 1, dtype), device)


def empty(shape, dtype=None, *, device=None):
    return zeros(shape, dtype, device=device)


def _keep_weak(result, a_aval, dtype):
    """*_like results keep a weakly typed input's weak type when no dtype is given (as in JAX)."""
    if dtype is None and a_aval.weak_type:
        return lax.convert_element_type(result, a_aval.dtype, weak_type=True)
    return result


def _like_aval(a):
    """The shape and dtype that a *_like function copies: an array-like's or, duck-typed as in jax, those of any
    object with `shape` and `dtype` (a ShapeDtypeStruct, a ShapedArray), as of a strongly typed array."""
    if not (is_array(a) or isinstance(a, (np.ndarray, np.generic))) and hasattr(a, "shape") and hasattr(a, "dtype"):
        return ShapedArray(tuple(a.shape), dtypes.canonicalize_dtype(np.dtype(a.dtype)))
    return aval(to_array(a))


def _like(fill, name):
    def like(a, dtype=None, shape=None, *, device=None):
        a_aval = _like_aval(a)
        target = a_aval.shape if shape is None else _shape_arg(shape)
        result = lax.full(target, fill if fill is not None else 0, requested_dtype(dtype, name) or a_aval.dtype)
        return _placed(_keep_weak(result, a_aval, dtype), device)

    return like


zeros_like = _like(0, "zeros_like")
ones_like = _like(1, "ones_like")
empty_like = _like(None, "empty_like")


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    a_aval = _like_aval(a)
    out_dtype = requested_dtype(dtype, "full_like") or a_aval.dtype
    _check_fill_value(fill_value, out_dtype)
    result = full(a_aval.shape if shape is None else shape, fill_value, out_dtype)
    return _placed(_keep_weak(result, a_aval, dtype), device)


def _concrete_scalar(name, value, function):
    value = concrete_or_error(value, f"{function}'s {name} argument must be a concrete value (its size depends on it)")
    if value is not None and np.ndim(value) != 0:
        raise ValueError(f"numax.numpy.{function}: arguments must be scalars; got {name}={value}")
    return value


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in [start, stop): `start + step * i`, computed as jax.numpy does (in `dtype`, or
    float32 for narrower floats, from start and step converted to it). Bounds must be concrete scalars."""
    start_name = "stop" if stop is None and step is None else "start"
    start, stop, step = (_concrete_scalar(name, value, "arange") for name, value in (
        (start_name, start), ("stop", stop), ("step", step)))
    bounds = [v for v in (start, stop, step) if v is not None]
    if builtins.any(dtypes.is_complex(dtypes.dtype(v)) for v in bounds):
        raise ValueError("numax.numpy.arange takes real start, stop and step, not complex ones")
    dtype = requested_dtype(dtype, "arange") or dtypes.canonicalize_dtype(dtypes.result_type(*bounds))
    if dtype == dtypes.bool_:
        raise TypeError("numax.numpy.arange cannot make bool arrays; ask for a numeric dtype")
    start, stop, step = (v if v is None or type(v) in dtypes.python_scalar_types else np.asarray(v).item()
                         for v in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    size = builtins.max(int(np.ceil((stop - start) / step)), 0)
    if dtypes.is_integer(dtype) and type(start) is int and type(step) is int:
        values = lax.iota(dtype, size)
        if step != 1:
            values = lax.mul(values, lax.convert_element_type(step, dtype))
        values = values if start == 0 else lax.add(values, lax.convert_element_type(start, dtype))
        return _placed(values, device)
    working = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.asarray(start).astype(working) + np.asarray(step).astype(working) * np.arange(size, dtype=working)
    return put(values.astype(dtype), device)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    num = int(num)
    if num < 0:
        raise ValueError(f"number of samples, {num}, must be non-negative")
    start, stop = promote_dtypes(start, stop)
    computation_dtype = dtypes.result_type(start, stop, dtypes.default_float_dtype())
    out_dtype = requested_dtype(dtype, "linspace") or computation_dtype
    start = lax.convert_element_type(start, computation_dtype)
    stop = lax.convert_element_type(stop, computation_dtype)
    start_shape, stop_shape = shape(start), shape(stop)
    bounds_shape = np.broadcast_shapes(start_shape, stop_shape)
    from ._shape import broadcast_to, moveaxis

    start = broadcast_to(start, bounds_shape)
    stop = broadcast_to(stop, bounds_shape)
    divisor = (num - 1) if endpoint else num
    steps = lax.convert_element_type(lax.iota(dtypes.default_int_dtype(), num), computation_dtype)
    steps = lax.broadcast_in_dim(steps, (num,) + bounds_shape, (0,))
    delta = lax.sub(stop, start)
    start_b = lax.broadcast_in_dim(start, (num,) + bounds_shape, range(1, len(bounds_shape) + 1))
    delta_b = lax.broadcast_in_dim(delta, (num,) + bounds_shape, range(1, len(bounds_shape) + 1))
    if divisor > 0:
        step = lax.div(delta, lax.convert_element_type(divisor, computation_dtype))
        divisor_value = lax.convert_element_type(divisor, computation_dtype)
        values = lax.add(start_b, lax.div(lax.mul(steps, delta_b), divisor_value))
        if endpoint and num > 1:
            # The last sample is exactly `stop`, as numpy guarantees.
            stop_b = lax.broadcast_in_dim(stop, (num,) + bounds_shape, range(1, len(bounds_shape) + 1))
            is_last = lax.eq(steps, lax.convert_element_type(num - 1, computation_dtype))
            values = lax.select(is_last, stop_b, values)
    else:
        step = lax.full_like(delta, np.nan)
        values = start_b
    values = moveaxis(values, 0, canonicalize_axis(axis, len(bounds_shape) + 1)) if bounds_shape else values
    values = _placed(lax.convert_element_type(values, out_dtype), device)
    return (values, step) if retstep else values


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    from ._ufuncs import power

    exponents = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    out = power(lax.convert_element_type(base, aval(exponents).dtype), exponents)
    return out if dtype is None else lax.convert_element_type(out, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    from ._ufuncs import exp, log

    out = exp(linspace(log(start), log(stop), num, endpoint, axis=axis))
    return out if dtype is None else lax.convert_element_type(out, dtype)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    dtype = requested_dtype(dtype, "eye") or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    diagonal = lax.eq(lax.add(rows, lax.convert_element_type(int(k), dtypes.int32)), cols)
    return _placed(lax.convert_element_type(diagonal, dtype), device)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    M = N if M is None else M
    dtype = requested_dtype(dtype, "tri") or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    return lax.convert_element_type(lax.ge(lax.add(rows, lax.convert_element_type(int(k), dtypes.int32)), cols), dtype)


def _triangle_mask(x, k, lower):
    x_shape = shape(x)
    if len(x_shape) < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs an array of at least 2 dimensions, got {x_shape}")
    n, m = x_shape[-2:]
    mask = tri(n, m, k if lower else k - 1, dtype=dtypes.bool_)
    if not lower:
        mask = lax.bitwise_not(mask)
    return lax.broadcast_in_dim(mask, x_shape, (len(x_shape) - 2, len(x_shape) - 1))


def tril(m, k=0):
    m = to_array(m)
    return lax.select(_triangle_mask(m, k, True), m, lax.full_like(m, 0))


def triu(m, k=0):
    m = to_array(m)
    return lax.select(_triangle_mask(m, k, False), m, lax.full_like(m, 0))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [to_array(x) for x in xi]
    for x in arrays:
        if len(shape(x)) != 1:
            raise ValueError(f"meshgrid takes 1-d arrays, got shape {shape(x)}")
    sizes = [shape(x)[0] for x in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    outputs = []
    for i, x in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) >= 2 and i < 2:
            axis = 1 - i
        if sparse:
            target = [1] * len(arrays)
            target[axis] = sizes[axis]
            outputs.append(lax.reshape(x, target))
        else:
            outputs.append(lax.broadcast_in_dim(x, sizes, (axis,)))
    return outputs


def diag_indices(n, ndim=2):
    index = lax.iota(dtypes.default_int_dtype(), int(n))
    return (index,) * int(ndim)


def diag_indices_from(arr):
    arr_shape = shape(to_array(arr))
    if len(arr_shape) < 2 or len(set(arr_shape)) != 1:
        raise ValueError(f"diag_indices_from needs an array of rank >= 2 with equal dimensions, got {arr_shape}")
    return diag_indices(arr_shape[0], len(arr_shape))


def vander(x, N=None, increasing=False):
    """Columns x**0, x**1, ... x**(N-1) (reversed unless `increasing`)."""
    from ._ufuncs import power

    x = to_array(x)
    if len(shape(x)) != 1:
        raise ValueError(f"vander takes a 1-d array, got shape {shape(x)}")
    N = shape(x)[0] if N is None else int(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    exponents = lax.iota(dtypes.int32, N)
    if not increasing:
        exponents = lax.rev(exponents, (0,))
    rows = shape(x)[0]
    return power(lax.broadcast_in_dim(x, (rows, N), (0,)), lax.broadcast_in_dim(exponents, (rows, N), (1,)))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any object with `__dlpack__` and `__dlpack_device__` (numpy, numax, torch, ...), on
    `device` (None: a numax array's own device, else the default placement). Other libraries' values are
    always copied into a buffer of numax's own (numax arrays are immutable), so `copy=False` takes only
    numax arrays that need no move."""
    if isinstance(x, Array):
        if copy is False and device is not None and device != x.device:
            raise ValueError(f"moving the array from {x.device} to {device} needs a copy, but copy=False")
        return _placed(_fresh_copy(x) if copy else x, device)
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack takes an object with __dlpack__ and __dlpack_device__, got {type(x)}")
    if copy is False:
        raise ValueError("numax copies other libraries' DLPack values into its own buffers, but copy=False; "
                         "pass copy=None or copy=True")
    return put(np.from_dlpack(x, device="cpu"), device)
