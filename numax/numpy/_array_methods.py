"""Operators and methods of `numax.Array` and of tracers, defined once over numax.numpy."""

import numpy as np

from numax.core import dtypes
from numax.core.avals import symbolic_dim_types
from numax.core.trace import Tracer
from numax.lax import conversions, elementwise
from numax.lowering.array import Array
from numax.lowering.dispatch import eager_same_aval

from . import _array_api, _creation, _eager, _indexing, _linalg_ops, _logic, _reductions, _shape, _ufuncs
from ._util import requested_dtype


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _defer_to_unknown(fn):
    """Binary operators return NotImplemented for types numax does not know (as numpy arrays do)."""

    def method(self, other):
        if not _is_operand(other):
            return NotImplemented
        return fn(self, other)

    return method


def _is_operand(value):
    return isinstance(value, (Array, Tracer, np.ndarray, np.generic, list, tuple)) or type(value) in (
        dtypes.python_scalar_types) or type(value) in symbolic_dim_types


def _astype(self, dtype, copy=False, device=None):
    result = conversions.convert_element_type(self, requested_dtype(dtype, "astype"))
    return result if device is None else result.to_device(device)


def _setitem(self, index, value):
    raise TypeError("numax arrays are immutable and do not support in-place item assignment. Instead of "
                    "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method")


def _tracer_to_device(self, device, /, *, stream=None):
    # A traced value is placed where its program runs: it stays as it is (as numax.device_put leaves it).
    if stream is not None:
        raise NotImplementedError("stream argument of array.to_device()")
    return self


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return _shape.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


_binary_operators = {
    "add": _ufuncs.add, "sub": _ufuncs.subtract, "mul": _ufuncs.multiply, "truediv": _ufuncs.true_divide,
    "floordiv": _ufuncs.floor_divide, "mod": _ufuncs.remainder, "pow": _ufuncs.power,
    "matmul": _linalg_ops.matmul, "and": _ufuncs.bitwise_and, "or": _ufuncs.bitwise_or,
    "xor": _ufuncs.bitwise_xor, "lshift": _ufuncs.left_shift, "rshift": _ufuncs.right_shift,
    "divmod": _ufuncs.divmod,
}
_comparisons = {"eq": _ufuncs.equal, "ne": _ufuncs.not_equal, "lt": _ufuncs.less, "le": _ufuncs.less_equal,
                "gt": _ufuncs.greater, "ge": _ufuncs.greater_equal}

_methods = {
    "__neg__": _ufuncs.negative, "__pos__": _ufuncs.positive, "__abs__": _ufuncs.absolute,
    "__invert__": _ufuncs.invert, "__getitem__": _indexing.getitem, "__setitem__": _setitem,
    "__round__": lambda self, ndigits=None: _ufuncs.round(self, ndigits or 0),
    "astype": _astype, "reshape": _reshape, "transpose": _transpose,
    "T": property(lambda self: _shape.transpose(self)),
    "mT": property(lambda self: _shape.matrix_transpose(self)),
    "real": property(_ufuncs.real), "imag": property(_ufuncs.imag),
    "conj": _ufuncs.conjugate, "conjugate": _ufuncs.conjugate,
    "sum": _reductions.sum, "prod": _reductions.prod, "max": _reductions.max, "min": _reductions.min,
    "mean": _reductions.mean, "var": _reductions.var, "std": _reductions.std, "all": _reductions.all,
    "any": _reductions.any, "argmax": _reductions.argmax, "argmin": _reductions.argmin, "ptp": _reductions.ptp,
    "ravel": _shape.ravel, "flatten": lambda self, order="C": _shape.ravel(self, order),
    "squeeze": _shape.squeeze, "swapaxes": _shape.swapaxes, "repeat": _shape.repeat,
    "clip": _logic.clip, "round": _ufuncs.round, "dot": _linalg_ops.dot, "trace": _linalg_ops.trace,
    "diagonal": _linalg_ops.diagonal, "take": _indexing.take, "nonzero": _indexing.nonzero,
    "copy": lambda self: _creation.array(self, copy=True),
    "__array_namespace__": _array_api.array_namespace,
}


# Operators whose numpy meaning, for two arrays of one numeric (non-bool) dtype, is exactly one lax
# primitive: eager Array-Array calls of these skip promotion (see dispatch.eager_same_aval).
_same_dtype_primitives = {
    "add": elementwise.add_p, "sub": elementwise.sub_p, "mul": elementwise.mul_p, "eq": elementwise.eq_p,
    "ne": elementwise.ne_p, "lt": elementwise.lt_p, "le": elementwise.le_p, "gt": elementwise.gt_p,
    "ge": elementwise.ge_p,
}
# Operators whose other eager calls on an Array (a scalar operand, broadcasting, mixed dtypes) run as one compiled
# program (see _eager.binary): their functions compute from the operands' avals alone (`power` looks at a
# concrete exponent, and takes the general path).
_compiled_operators = frozenset(_same_dtype_primitives) | {"truediv", "floordiv", "mod", "and", "or", "xor",
                                                          "lshift", "rshift"}
_ordered_dtypes = frozenset(dtypes.integers + dtypes.floats)
_numeric_dtypes = _ordered_dtypes | frozenset(dtypes.complexes)


def _with_fast_paths(name, fn, reflected=False):
    """Array's operator `name` (its reflected form `__rname__` if `reflected`): the fast paths, else `fn`'s general
    path (not the function's own eager wrapper, whose key would compile the same program again)."""
    primitive = None if reflected else _same_dtype_primitives.get(name)
    general = getattr(fn, "__wrapped__", fn)
    allowed = _numeric_dtypes if name in ("add", "sub", "mul", "eq", "ne") else _ordered_dtypes

    def method(self, other):
        if primitive is not None and self.aval.dtype in allowed:
            result = eager_same_aval(primitive, self, other)
            if result is not None:
                return result
        result = _eager.binary(general, self, other, reflected)
        if result is not None:
            return result
        if not _is_operand(other):
            return NotImplemented
        return general(other, self) if reflected else general(self, other)

    return method


def install(cls):
    for name, fn in _binary_operators.items():
        setattr(cls, f"__{name}__", _defer_to_unknown(fn))
        setattr(cls, f"__r{name}__", _defer_to_unknown(_reflected(fn)))
    for name, fn in _comparisons.items():
        setattr(cls, f"__{name}__", _defer_to_unknown(fn))
    for name, fn in _methods.items():
        setattr(cls, name, fn)


def install_late(name, fn):
    """Adds a method defined in a module that imports after this one (sort, cumsum, at, ...)."""
    for cls in (Array, Tracer):
        setattr(cls, name, fn)


for _cls in (Array, Tracer):
    install(_cls)
Tracer.to_device = _tracer_to_device  # Array's own moves the buffer
for _name, _fn in {**_binary_operators, **_comparisons}.items():
    if _name in _compiled_operators:
        setattr(Array, f"__{_name}__", _with_fast_paths(_name, _fn))
        if _name in _binary_operators:
            setattr(Array, f"__r{_name}__", _with_fast_paths(_name, _fn, reflected=True))


def _array_pow(self, other):
    """`Array ** float`: one compiled program (see _eager.binary); other exponents take `power`'s general path,
    which looks at the value of a concrete integer exponent."""
    if type(other) is float:
        result = _eager.binary(_ufuncs.power, self, other, False)
        if result is not None:
            return result
    if not _is_operand(other):
        return NotImplemented
    return _ufuncs.power(self, other)


Array.__pow__ = _array_pow


def _array_matmul(self, other):
    """`Array @ other`: matmul's fast path for two small Arrays, else its general path (one call less than
    through `matmul` on every `@`)."""
    if type(other) is Array:
        result = _linalg_ops.eager_small_matmul(self, other)
        return result if result is not None else _linalg_ops.general_matmul(self, other)
    if not _is_operand(other):
        return NotImplemented
    return _linalg_ops.general_matmul(self, other)


Array.__matmul__ = _array_matmul
