"""Helpers for writing numpy functions over lax: argument checks, dtype promotion, broadcasting."""

import operator
import warnings

import numpy as np

from numax import lax
from numax.core import dtypes, errors
from numax.core.avals import InconclusiveDimensionOperation, get_aval, symbolic_dim_types
from numax.core.trace import Tracer, get_aval_of, is_tracing
from numax.lowering.array import Array, put
from numax.lowering.dispatch import scalar_array


def is_array(value):
    return isinstance(value, (Array, Tracer))


def check_arraylike(name, *args):
    for i, arg in enumerate(args):
        if not (is_array(arg) or isinstance(arg, (np.ndarray, np.generic)) or type(arg) in dtypes.python_scalar_types
                or type(arg) in symbolic_dim_types):  # a symbolic dimension used as a value
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(arg).__name__} at position {i}")


def aval(value):
    return get_aval_of(value) if is_array(value) else get_aval(_as_host(value))


def _as_host(value):
    if (isinstance(value, (np.ndarray, np.generic)) or type(value) in dtypes.python_scalar_types
            or type(value) in symbolic_dim_types):
        return value
    return np.asarray(value)


def shape(value):
    return aval(value).shape


def ndim(value):
    return len(aval(value).shape)


def to_array(value, dtype=None, weak_type=None):
    """Any array-like as something lax accepts: arrays and tracers pass, lists become numpy arrays."""
    if is_array(value) or isinstance(value, (np.ndarray, np.generic)) or type(value) in dtypes.python_scalar_types:
        out = value
    elif isinstance(value, (list, tuple)):
        out = asarray_from_sequence(value)
    elif type(value) in symbolic_dim_types:  # staged as a value computed from the dimension variables
        out = value
    else:
        out = np.asarray(value)
    if dtype is not None:
        out = lax.convert_element_type(out, dtype, False if weak_type is None else weak_type)
    return out


def asarray_from_sequence(value):
    leaves = _sequence_leaves(value)
    if any(is_array(x) for x in leaves):
        from . import _shape  # stacking traced elements needs lax

        return _shape.stack([to_array(x) for x in value])
    host = np.asarray(value)
    if host.dtype == np.float64 and not dtypes.config.enable_x64:
        return host.astype(np.float32)
    return host


def _sequence_leaves(value):
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_sequence_leaves(item))
        return out
    return [value]


def device_array(value, weak_type=None):
    """`value` as a numax.Array (tracers pass): numpy functions return arrays, as jax.numpy's do."""
    if is_array(value):
        return value
    weak = dtypes.is_weak_scalar(value) if weak_type is None else weak_type
    if type(value) in dtypes.python_scalar_types or isinstance(value, np.generic):
        scalar = value.item() if isinstance(value, np.generic) else value
        dtype = dtypes.canonicalize_dtype(np.asarray(value).dtype) if isinstance(value, np.generic) else (
            dtypes.python_scalar_dtype(value))
        if type(scalar) is int and dtypes.is_integer(dtype):
            dtypes.check_int_fits(scalar, dtype)
        return scalar_array(scalar, dtype, weak)
    if type(value) in symbolic_dim_types:  # staged by lax from the dimension variables; it has no host value
        return value
    if is_tracing() and not weak:
        # Under a transformation, host arrays stay host values: the trace captures each one once, by identity.
        # (A weak one is put on the device all the same: a numpy array cannot say that it is weakly typed.)
        return value
    return put(np.asarray(value), weak_type=weak)


def promote_dtypes(*args):
    """Converts arguments to their common (JAX-promoted) dtype, keeping weak types where JAX does.

    Host values (numpy arrays, Python scalars) become device arrays carrying the result's weak type, so
    that `int32 array + 1.5` is a weakly typed float32 array as in JAX."""
    arrays = [to_array(a) for a in args]
    if len(args) < 2:
        return [device_array(a) for a in arrays]
    for a in arrays:  # as jax's jitted functions take a Python int: it must fit the default int type
        if type(a) is int:
            dtypes.check_int_fits(a, dtypes.default_int_dtype())
    dtype, weak = dtypes.result_type(*arrays, return_weak_type_flag=True)
    return [device_array(lax.convert_element_type(a, dtype, weak), weak) for a in arrays]


def promote_dtypes_inexact(*args):
    """Like promote_dtypes, then integers and bools become a float type of their width (`to_inexact_dtype`)."""
    arrays = promote_dtypes(*args)
    dtype, weak = dtypes.result_type(*arrays, return_weak_type_flag=True)
    if not dtypes.is_inexact(dtype):
        return [lax.convert_element_type(a, dtypes.to_inexact_dtype(dtype), weak) for a in arrays]
    return arrays


def promote_dtypes_numeric(*args):
    arrays = promote_dtypes(*args)
    dtype, weak = dtypes.result_type(*arrays, return_weak_type_flag=True)
    if dtype == dtypes.bool_:
        return [lax.convert_element_type(a, dtypes.to_numeric_dtype(dtype), weak) for a in arrays]
    return arrays


def index_dims(dims) -> list:
    """`operator.index` of each dimension (a float is a TypeError, as in JAX); symbolic dimensions are kept."""
    try:
        return [operator.index(d) for d in dims]
    except InconclusiveDimensionOperation:  # symbolic dimensions (a shape-polymorphic export) refuse index()
        return [d if type(d) in symbolic_dim_types else operator.index(d) for d in dims]


def broadcast_shapes(*shapes):
    """NumPy's broadcast of `shapes`; a mismatch is jax's ValueError ("Incompatible shapes for broadcasting")."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except InconclusiveDimensionOperation:  # symbolic dimensions (a shape-polymorphic export)
        return _symbolic_broadcast_shapes(shapes)
    except ValueError:
        raise _incompatible(shapes) from None


def _incompatible(shapes):
    return ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}")


def _symbolic_broadcast_shapes(shapes):
    """numpy's broadcasting of shapes with symbolic dimensions: a symbolic dimension is not 1 (as in JAX)."""
    rank = max(len(shape) for shape in shapes)
    result = lax.typing.stretched_shape([(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes])
    if result is None:
        raise _incompatible(shapes)
    return result


def promote_shapes(name, *args):
    """NumPy's rank promotion as jax.numpy does it. Operands of one rank (scalars aside) go to lax as they are:
    lax stretches size-1 dimensions and rejects other mismatches with a TypeError. Operands of several ranks are
    first brought to the broadcast rank, where a mismatch is a ValueError, as `jax_numpy_rank_promotion` allows."""
    shapes = [shape(a) for a in args]
    if len({len(s) for s in shapes if s}) <= 1:
        return list(args)
    check_rank_promotion(name, shapes)
    rank = len(broadcast_shapes(*shapes))
    return [a if not s or len(s) == rank else lax.broadcast_to_rank(a, rank) for a, s in zip(args, shapes)]


def check_rank_promotion(name, shapes):
    """Implicit rank promotion under `jax_numpy_rank_promotion`: 'allow', 'warn' (a UserWarning) or 'raise'
    (a ValueError), with jax's messages."""
    mode = dtypes.config.numpy_rank_promotion
    if mode == "allow":
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {listed}. Set the "
                      "jax_numpy_rank_promotion config option to 'allow' to disable this warning.",
                      UserWarning, stacklevel=errors.user_stacklevel())
    else:
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes {listed} and with the "
                         "config option jax_numpy_rank_promotion='raise'.")


def _uniform_arrays(args):
    """The shared aval when every argument is an array (or tracer) of one aval: nothing to promote."""
    first = args[0]
    if type(first) is not Array and not isinstance(first, Tracer):
        return None
    shared = first.aval
    for arg in args[1:]:
        if (type(arg) is not Array and not isinstance(arg, Tracer)) or arg.aval != shared:
            return None
    return shared


def promote_args(name, *args):
    if _uniform_arrays(args) is not None:
        return list(args)
    check_arraylike(name, *args)
    return promote_shapes(name, *promote_dtypes(*args))


def promote_args_inexact(name, *args):
    shared = _uniform_arrays(args)
    if shared is not None and dtypes.is_inexact(shared.dtype):
        return list(args)
    check_arraylike(name, *args)
    return promote_shapes(name, *promote_dtypes_inexact(*args))


def promote_args_numeric(name, *args):
    shared = _uniform_arrays(args)
    if shared is not None and shared.dtype != dtypes.bool_:
        return list(args)
    check_arraylike(name, *args)
    return promote_shapes(name, *promote_dtypes_numeric(*args))


def canonicalize_axis(axis, rank):
    axis = int(axis)
    if not -rank <= axis < rank:
        # numpy's AxisError is both a ValueError and an IndexError: jax raises either, depending on the function.
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {rank}")
    return axis % rank


def canonicalize_axes(axis, rank):
    """`axis` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, rank) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return tuple(sorted(axes))
    return (canonicalize_axis(axis, rank),)


def materialize(value):
    """A concrete device array (used where a Python value must be turned into a numax.Array)."""
    if is_array(value):
        return value
    return put(np.asarray(value))


def requested_dtype(dtype, function):
    """A user's `dtype=` argument as numax computes in it (None stays None): 64-bit types become 32-bit
    unless 64-bit mode is on, with a UserWarning saying so, as jax.numpy warns. Python's `int`, `float`,
    `complex` and `bool` name the default types and truncate silently."""
    if dtype is None:
        return None
    canonical = dtypes.canonicalize_dtype(dtype)
    if canonical != np.dtype(dtype) and not any(dtype is kind for kind in dtypes.python_scalar_types):
        warnings.warn(
            f"Explicitly requested dtype {np.dtype(dtype).name} requested in {function} is not available while "
            f"64-bit mode is off, and will be truncated to dtype {canonical.name}. Turn 64-bit types on with "
            "numax.config.update('jax_enable_x64', True) or the JAX_ENABLE_X64=1 environment variable.",
            UserWarning, stacklevel=errors.user_stacklevel())
    return canonical
