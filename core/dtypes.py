"""Dtypes and JAX's type-promotion semantics.

Owns: the dtypes numax supports, canonicalization under the 64-bit flag, weak types (Python
scalars), and the promotion lattice from which `result_type` is the least upper bound.
"""

import builtins

import ml_dtypes
import numpy as np

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


def issubdtype(dtype, category) -> bool:
    """`np.issubdtype` that knows bfloat16 is a floating type."""
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


def _compute_upper_bounds():
    bounds = {}

    def visit(node):
        if node not in bounds:
            above = {node}
            for parent in _lattice_edges[node]:
                above |= visit(parent)
            bounds[node] = frozenset(above)
        return bounds[node]

    for node in _lattice_edges:
        visit(node)
    return bounds


_upper_bounds = _compute_upper_bounds()
_weak_node_of_kind = {"i": weak_int, "u": weak_int, "f": weak_float, "c": weak_complex, "V": weak_float}


def _lattice_node(dtype, weak_type):
    if weak_type and dtype != bool_:
        return weak_float if dtype == bfloat16 else _weak_node_of_kind[dtype.kind]
    return dtype


def _least_upper_bound(nodes):
    common = frozenset.intersection(*(_upper_bounds[n] for n in nodes))
    for candidate in common:
        if all(c in _upper_bounds[candidate] for c in common):
            return candidate
    raise TypeError(f"no common type for {sorted(map(str, nodes))}")  # unreachable: the lattice has a top


_node_default = {weak_int: default_int_dtype, weak_float: default_float_dtype, weak_complex: default_complex_dtype}


def promote_types(dtype_a, dtype_b) -> np.dtype:
    """JAX's `promote_types`: the promotion of two (strong) dtypes, canonicalized."""
    dtype, _ = result_type_and_weak((np.dtype(dtype_a), False), (np.dtype(dtype_b), False))
    return dtype


def result_type_and_weak(*dtype_weak_pairs):
    """Least upper bound of (dtype, weak_type) pairs: returns (canonical dtype, weak_type)."""
    first_dtype, first_weak = dtype_weak_pairs[0]
    if all(d == first_dtype for d, _ in dtype_weak_pairs[1:]):
        return canonicalize_dtype(first_dtype), all(w for _, w in dtype_weak_pairs)
    nodes = {_lattice_node(d, w) for d, w in dtype_weak_pairs}
    top = _least_upper_bound(nodes)
    if isinstance(top, str):
        return canonicalize_dtype(_node_default[top]()), True
    return canonicalize_dtype(top), False


def dtype_and_weak_of(value):
    """(dtype, weak_type) of an operand: a Python scalar, a numpy value, a dtype, or an array-like."""
    if type(value) in python_scalar_types:
        return python_scalar_dtype(value), is_weak_scalar(value)
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(value, (np.dtype, type)) or (isinstance(value, str)):
        return canonicalize_dtype(value), False
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return canonicalize_dtype(dtype), False
    return canonicalize_dtype(np.asarray(value).dtype), False


def result_type(*operands, return_weak_type_flag=False):
    """`jnp.result_type`: the dtype that operands of these types promote to."""
    if not operands:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = result_type_and_weak(*(dtype_and_weak_of(x) for x in operands))
    return (dtype, weak) if return_weak_type_flag else dtype


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
