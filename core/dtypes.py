"""Dtypes and JAX's type-promotion semantics.

Owns: the dtypes numax supports, canonicalization under the 64-bit flag, weak types (Python
scalars), and the promotion lattice from which `result_type` is the least upper bound.
"""

import abc
import builtins

import ml_dtypes
import numpy as np

from . import caches
from .config import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# The tangent type of integer and boolean values, as in JAX: a dtype with no data.
float0 = np.dtype([("float0", np.void, 0)])

signed_integers = (int8, int16, int32, int64)
unsigned_integers = (uint8, uint16, uint32, uint64)
integers = signed_integers + unsigned_integers
floats = (bfloat16, float16, float32, float64)
complexes = (complex64, complex128)
all_dtypes = (bool_,) + integers + floats + complexes

_to_32_bit = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_known = frozenset(all_dtypes) | {float0}


class extended(np.generic):
    """The category of jax's extended dtypes (typed PRNG keys' `key<fry>`), for `issubdtype`; never instantiated.
    An extended dtype object says its category in `.type`."""


class prng_key(extended):
    """The category of typed PRNG key dtypes."""


class ExtendedDType(abc.ABC):
    """The base class of extended dtype objects (typed PRNG keys' `key<fry>`, and those libraries define): `type`
    is the dtype's category, a subclass of `extended`, for `issubdtype`."""

    _rules = None

    @property
    @abc.abstractmethod
    def type(self): ...

    def abstract_array(self, struct):
        """What stands for an array of this dtype known only by its type (`struct`, a ShapeDtypeStruct given to
        jit's `trace`/`lower` or `eval_shape`): a pytree of ShapeDtypeStructs of ordinary dtypes."""
        raise TypeError(f"no abstract array of the extended dtype {self} can stand for {struct}")


def has_extended_dtype(value) -> bool:
    """True for a value whose dtype is an extended one (an array of typed PRNG keys)."""
    return isinstance(getattr(value, "dtype", None), ExtendedDType)


def issubdtype(dtype, category) -> bool:
    """`np.issubdtype` that knows bfloat16 is a floating type and the extended (key) dtypes' categories."""
    if isinstance(getattr(dtype, "type", None), type) and issubclass(dtype.type, extended):
        return isinstance(category, type) and issubclass(dtype.type, category) or category == dtype
    if isinstance(category, type) and issubclass(category, extended):
        return isinstance(dtype, type) and issubclass(dtype, category)
    dtype = np.dtype(dtype)
    if dtype == bfloat16:
        return category in (np.floating, np.inexact, np.number, np.generic)
    return np.issubdtype(dtype, category)


def is_float(dtype) -> bool:
    return dtype in floats


def is_complex(dtype) -> bool:
    return dtype in complexes


def is_inexact(dtype) -> bool:
    return dtype in floats or dtype in complexes


def is_integer(dtype) -> bool:
    return dtype in integers


def is_unsigned(dtype) -> bool:
    return dtype in unsigned_integers


def canonicalize_dtype(dtype) -> np.dtype:
    """The dtype numax really uses for `dtype`: 64-bit types become 32-bit unless x64 is on."""
    dtype = np.dtype(dtype)
    if dtype not in _known:
        raise TypeError(f"numax does not support the dtype {dtype}")
    if not config.enable_x64:
        return _to_32_bit.get(dtype, dtype)
    return dtype


def default_int_dtype():
    return int64 if config.enable_x64 else int32


def default_uint_dtype():
    return uint64 if config.enable_x64 else uint32


def default_float_dtype():
    return float64 if config.enable_x64 else float32


def default_complex_dtype():
    return complex128 if config.enable_x64 else complex64


# The inexact type of an integer or boolean operand, as JAX's `to_inexact_dtype`: by width, not by the 64-bit
# flag, so that sin(int32) stays float32 with x64 on (only 64-bit integers become float64).
_inexact_of_exact = {bool_: float32, int8: float32, uint8: float32, int16: float32, uint16: float32,
                     int32: float32, uint32: float32, int64: float64, uint64: float64}


def to_inexact_dtype(dtype) -> np.dtype:
    """The dtype an integer or boolean becomes where an operation needs an inexact one (inexact ones stay)."""
    dtype = np.dtype(dtype)
    return _inexact_of_exact.get(dtype, dtype)


def to_numeric_dtype(dtype) -> np.dtype:
    """The dtype a boolean becomes where an operation needs a number: int32 whatever the 64-bit flag (as JAX)."""
    dtype = np.dtype(dtype)
    return int32 if dtype == bool_ else dtype


def to_complex_dtype(dtype) -> np.dtype:
    """The complex dtype of the same precision as `to_inexact_dtype(dtype)`."""
    return complex128 if to_inexact_dtype(dtype) in (float64, complex128) else complex64


python_scalar_types = (bool, int, float, complex)


def python_scalar_dtype(value) -> np.dtype:
    """The dtype of a Python scalar: bool, or the default int/float/complex (weakly typed)."""
    kind = type(value)
    if kind is bool:
        return bool_
    if kind is int:
        return default_int_dtype()
    if kind is float:
        return default_float_dtype()
    if kind is complex:
        return default_complex_dtype()
    raise TypeError(f"{value!r} is not a Python scalar")


def is_weak_scalar(value) -> bool:
    """Python ints, floats and complexes are weakly typed; bools are not (as in JAX)."""
    kind = type(value)
    return kind is int or kind is float or kind is complex


def check_int_fits(value: int, dtype) -> None:
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"Python int {value} too large to convert to {dtype}")


# --- the promotion lattice -------------------------------------------------------------------
# Nodes are dtypes plus the three weak kinds of Python scalars. Each node lists the nodes just
# above it; the result type of a set of operands is their least upper bound. This is JAX's table.
weak_int, weak_float, weak_complex = "i*", "f*", "c*"
_lattice_edges = {
    bool_: [weak_int],
    weak_int: [uint8, int8],
    uint8: [uint16, int16],
    uint16: [uint32, int32],
    uint32: [uint64, int64],
    uint64: [weak_float],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [weak_float],
    weak_float: [bfloat16, float16, weak_complex],
    bfloat16: [float32],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    weak_complex: [complex64],
    complex64: [complex128],
    complex128: [],
}


def _compute_upper_bounds(edges):
    bounds = {}

    def visit(node):
        if node not in bounds:
            above = {node}
            for parent in edges[node]:
                above |= visit(parent)
            bounds[node] = frozenset(above)
        return bounds[node]

    for node in edges:
        visit(node)
    return bounds


# With x64 off, uint32 with int32 must not form int64 (the only 64-bit type the lattice would make from
# 32-bit inputs), so JAX lets uint32 promote to int32 instead.
_upper_bounds_x64 = _compute_upper_bounds(_lattice_edges)
_upper_bounds_x32 = _compute_upper_bounds({**_lattice_edges, uint32: [uint64, int32]})
_weak_node_of_kind = {"i": weak_int, "u": weak_int, "f": weak_float, "c": weak_complex, "V": weak_float}
_weak_node_of_type = {builtins.int: weak_int, builtins.float: weak_float, builtins.complex: weak_complex}
_dtype_of_weak_node = {weak_int: int64, weak_float: float64, weak_complex: complex128}
_node_default = {weak_int: default_int_dtype, weak_float: default_float_dtype, weak_complex: default_complex_dtype}
_default_of_kind = {"i": default_int_dtype, "u": default_uint_dtype, "f": default_float_dtype,
                    "c": default_complex_dtype}


def _lattice_node(dtype, weak_type):
    if weak_type and dtype != bool_:
        return weak_float if dtype == bfloat16 else _weak_node_of_kind[dtype.kind]
    return dtype


# jax_numpy_dtype_promotion='strict': a Python scalar's weak type still adapts to an array's dtype of its kind
# (or a wider kind), but two different dtypes never meet.
_strict_edges = {weak_int: [weak_float, *integers], weak_float: [weak_complex, *floats],
                 weak_complex: list(complexes), **{d: [] for d in all_dtypes}}
_upper_bounds_strict = _compute_upper_bounds(_strict_edges)
_weak_node_names = {weak_int: "int", weak_float: "float", weak_complex: "complex"}


class TypePromotionError(ValueError):
    """Dtypes that have no implicit promotion (mixing dtypes under jax_numpy_dtype_promotion='strict'), as
    jax.dtypes.TypePromotionError."""


def _least_upper_bound(nodes):
    strict = config.numpy_dtype_promotion == "strict"
    key = (frozenset(nodes), config.enable_x64, strict)
    top = _least_upper_bound_cache.get(key)
    if top is None:
        upper_bounds = _upper_bounds_strict if strict else _upper_bounds_x64 if config.enable_x64 else (
            _upper_bounds_x32)
        unknown = [str(n) for n in nodes if n not in upper_bounds]
        if unknown:
            raise TypeError(f"dtype {unknown[0]} does not take part in type promotion")
        common = frozenset.intersection(*(upper_bounds[n] for n in nodes))
        top = next((c for c in common if common <= upper_bounds[c]), None)
        if top is None:  # only the strict lattice has no common bound for some dtypes
            names = tuple(sorted(_weak_node_names.get(n, str(n)) for n in nodes))
            raise TypePromotionError(
                f"Input dtypes {names} have no implicit promotion path with jax_numpy_dtype_promotion='strict'. "
                "Cast the inputs to the dtype wanted (x.astype(...)), or use numax.numpy_dtype_promotion('standard').")
        _least_upper_bound_cache[key] = top
    return top


_least_upper_bound_cache = {}  # (nodes, x64, strict) -> their least upper bound; the lattice is small


def _retrace_after_promotion_change(attribute, value):
    # The caches of traced programs key on the promotion options (config.trace_context), but other caches of
    # traced work (custom rules', vmap's and grad's programs) do not: a new global value drops them all, so that
    # functions trace again under it, as jax's do.
    if attribute in ("numpy_dtype_promotion", "numpy_rank_promotion"):
        caches.clear_all()


config.on_change(_retrace_after_promotion_change)


def _promotion_node(value):
    """A lattice node for a `promote_types` argument: the types int/float/complex are weak nodes."""
    if isinstance(value, type) and value in _weak_node_of_type:
        return _weak_node_of_type[value]
    dtype = np.dtype(value)
    if dtype not in _known:
        raise TypeError(f"numax does not support the dtype {dtype}")
    return dtype


def promote_types(dtype_a, dtype_b) -> np.dtype:
    """`jnp.promote_types`: the promotion of two dtypes (not canonicalized, as in JAX).

    The Python types int, float and complex count as weak types, so `promote_types('uint8', int)` is uint8.
    """
    top = _least_upper_bound({_promotion_node(dtype_a), _promotion_node(dtype_b)})
    return _dtype_of_weak_node.get(top, top) if isinstance(top, str) else top


def result_type_and_weak(*dtype_weak_pairs):
    """Least upper bound of (dtype, weak_type) pairs: returns (canonical dtype, weak_type).

    As in JAX: when every operand is weak, the bound of their strong dtypes is taken and made weak (so
    weak int8 with weak int16 is weak int16, not the default integer).
    """
    first_dtype = dtype_weak_pairs[0][0]
    all_weak = all(w for _, w in dtype_weak_pairs)
    if all(d == first_dtype for d, _ in dtype_weak_pairs[1:]):
        dtype, weak = first_dtype, all_weak
    else:
        # All weak: the bound of their strong dtypes, made weak (strict promotion takes the weak kinds instead).
        strong = all_weak and config.numpy_dtype_promotion != "strict"
        nodes = {d if strong else _lattice_node(d, w) for d, w in dtype_weak_pairs}
        top = _least_upper_bound(nodes)
        dtype = _node_default[top]() if isinstance(top, str) else top
        weak = all_weak or isinstance(top, str)
    return canonicalize_dtype(dtype), weak and dtype != bool_


def dtype_and_weak_of(value):
    """(dtype, weak_type) of an operand: a Python scalar or scalar type, a numpy value, a dtype, an array."""
    if type(value) in python_scalar_types:
        return python_scalar_dtype(value), is_weak_scalar(value)
    if value is None:
        return default_float_dtype(), False
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(value, type) and value in _weak_node_of_type:
        return python_scalar_dtype(value(0)), True
    if isinstance(value, (np.dtype, type, str)):
        return canonicalize_dtype(value), False
    dtype = getattr(value, "dtype", None)
    if dtype is not None:  # (a symbolic dimension used as a value says that it is weakly typed)
        return canonicalize_dtype(dtype), getattr(value, "weak_type", False) is True
    return canonicalize_dtype(np.asarray(value).dtype), False


def result_type(*operands, return_weak_type_flag=False):
    """`jnp.result_type`: the dtype that operands of these types promote to.

    A weakly typed result is reported as its kind's default dtype (as JAX does); with
    `return_weak_type_flag=True` the exact (dtype, weak_type) of the promotion is returned instead, which is
    what operations use to convert their operands.
    """
    if not operands:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = result_type_and_weak(*(dtype_and_weak_of(x) for x in operands))
    if return_weak_type_flag:
        return dtype, weak
    if weak:
        return _default_of_kind["f" if dtype == bfloat16 else dtype.kind]()
    return dtype

def dtype(value) -> np.dtype:
    """`numax.numpy.dtype`-like: the canonical dtype of a value or a dtype specifier."""
    return dtype_and_weak_of(value)[0]


def short_name(dtype) -> str:
    """The short name the IR printer uses: f32, i32, u8, bool, bf16, c64."""
    return _short_names[dtype]


_short_names = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
    complex64: "c64", complex128: "c128", float0: "float0",
}


def finfo(dtype):
    dtype = np.dtype(dtype)
    return ml_dtypes.finfo(dtype) if dtype == bfloat16 else np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


def scalar_type_of(dtype):
    """The Python scalar type whose weak type lives in the same lattice family as `dtype`."""
    if dtype == bool_:
        return builtins.bool
    if dtype in integers:
        return builtins.int
    if dtype in complexes:
        return builtins.complex
    return builtins.float
