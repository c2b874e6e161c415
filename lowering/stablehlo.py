"""Writing StableHLO text: types, attributes, constants, and a builder for one function's body.

Ops are written in MLIR's generic form (`%r = "stablehlo.add"(%a, %b) : (T, T) -> T`), which is
uniform for every op; the module is parsed and verified by the runtime before it is compiled.
"""

import collections

import numpy as np

from ..core import dtypes

_element_types = {
    dtypes.bool_: "i1",
    dtypes.int8: "i8", dtypes.int16: "i16", dtypes.int32: "i32", dtypes.int64: "i64",
    dtypes.uint8: "ui8", dtypes.uint16: "ui16", dtypes.uint32: "ui32", dtypes.uint64: "ui64",
    dtypes.bfloat16: "bf16", dtypes.float16: "f16", dtypes.float32: "f32", dtypes.float64: "f64",
    dtypes.complex64: "complex<f32>", dtypes.complex128: "complex<f64>",
    # float0 (the tangent type of integers) has no StableHLO type: as in jax, it is held as i1, whose
    # value nothing reads (constants of it are `false`; jit passes and returns it on the host side)
    dtypes.float0: "i1",
}


def element_type(dtype) -> str:
    try:
        return _element_types[dtype]
    except KeyError:
        raise TypeError(f"numax cannot lower arrays of dtype {dtype}") from None


def comparison_type(dtype) -> str:
    """The `compare_type` of a stablehlo.compare of `dtype` values: FLOAT, UNSIGNED (bool too) or SIGNED."""
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    if dtypes.is_unsigned(dtype) or dtype == dtypes.bool_:
        return "UNSIGNED"
    return "SIGNED"


def tensor_type(shape, dtype) -> str:
    """`tensor<2x3xf32>`; a symbolic dimension (of a shape-polymorphic export) prints as `?`."""
    try:
        return _tensor_types[shape, dtype]
    except (KeyError, TypeError):  # new, or an unhashable shape (a list)
        pass
    dims = "".join(f"{d}x" if isinstance(d, int | np.integer) else "?x" for d in shape)
    text = f"tensor<{dims}{element_type(dtype)}>"
    if len(_tensor_types) < _MEMO_SIZE and type(shape) is tuple:
        _tensor_types[shape, dtype] = text
    return text


# Texts written again and again in one module (every value's type, every scalar constant), remembered: a program's
# lowering spends its time formatting them otherwise. Bounded, as the shapes a process meets are.
_MEMO_SIZE = 4096
_tensor_types = {}  # (shape, dtype) -> type text
_constants = {}  # (dtype, shape, bytes) of a small constant -> (type text, value attribute)


def aval_type(aval) -> str:
    return tensor_type(aval.shape, aval.dtype)


def layout_attr(minor_to_major) -> str:
    """A custom call's layout attribute for one operand or result: its dimensions, minor to major."""
    if not len(minor_to_major):
        return "dense<> : tensor<0xindex>"
    dims = ", ".join(str(int(d)) for d in minor_to_major)
    return f"dense<[{dims}]> : tensor<{len(minor_to_major)}xindex>"


def row_major_layout(aval) -> str:
    """The layout attribute of a C-order array (minor-to-major dimensions), for custom calls."""
    return layout_attr(tuple(reversed(range(aval.ndim))))


def output_operand_alias(output_index, operand_index) -> str:
    """A custom call's result `output_index` (None: its single result, which is no tuple) reusing the buffer of
    operand `operand_index`; a call's `output_operand_aliases` is a list of these."""
    indices = "[]" if output_index is None else f"[{output_index}]"
    return (f"#stablehlo.output_operand_alias<output_tuple_indices = {indices}, operand_index = {operand_index}, "
            "operand_tuple_indices = []>")


_ESCAPED = [chr(b) if 0x20 <= b < 0x7F and chr(b) not in '"\\' else f"\\{b:02X}" for b in range(256)]


def mlir_string(data: bytes) -> str:
    """An MLIR string literal holding arbitrary bytes (\\XX escapes for all but printable ASCII)."""
    return '"' + "".join(map(_ESCAPED.__getitem__, data)) + '"'


def i64_array(values) -> str:
    """`array<i64: 1, 2>`: StableHLO's dimension lists."""
    values = [int(v) for v in values]
    return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"


def bool_array(values) -> str:
    values = ["true" if v else "false" for v in values]
    return f"array<i1: {', '.join(values)}>" if values else "array<i1>"


def i64_attr(value) -> str:
    return f"{int(value)} : i64"


def dense_elements(value: np.ndarray) -> str:
    """A dense elements attribute holding `value` (hex bytes; a single element means a splat)."""
    value = np.asarray(value)
    if value.dtype == dtypes.float0:  # (it has no bytes: its i1 stand-in is false)
        value = np.zeros(value.shape, np.bool_)
    if not value.flags.c_contiguous:  # (ascontiguousarray would also turn a 0-d array into 1-d)
        value = np.ascontiguousarray(value)
    type_text = tensor_type(value.shape, value.dtype)
    if value.size == 0:
        return f"dense<> : {type_text}"
    if value.dtype == np.bool_:
        flat = value.reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return f"dense<{'true' if flat[0] else 'false'}> : {type_text}"
        return f"dense<{_nested_bools(value)}> : {type_text}"
    flat = value.reshape(-1)
    if (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        flat = flat[:1]
    data = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    return f'dense<"0x{data.hex().upper()}"> : {type_text}'


def _nested_bools(value):
    if value.ndim == 0:
        return "true" if value else "false"
    return "[" + ", ".join(_nested_bools(v) for v in value) + "]"


def attributes_text(attributes) -> str:
    if not attributes:
        return ""
    return " {" + ", ".join(f"{k} = {v}" for k, v in attributes.items()) + "}"


class FunctionBuilder:
    """Accumulates the body of one function (or region) with module-unique SSA names."""

    def __init__(self, counter=None, indent=4, dimension_values=None):
        self.lines = []
        self.counter = counter if counter is not None else [0]
        self.indent = indent
        self.margin = " " * indent  # (each line's, built once)
        self.types = {}  # ssa value -> its type text
        # {dimension variable: its tensor<i64> value} in a function with symbolic shapes, else None
        self.dimension_values = dimension_values

    def fresh(self) -> str:
        name = f"%{self.counter[0]}"
        self.counter[0] += 1
        return name

    def op(self, name, operands, result_types, attributes=None, regions=None):
        """Emits `name` applied to operands; returns the list of its result values."""
        result = self.fresh()
        results = [result] if len(result_types) == 1 else [f"{result}#{i}" for i in range(len(result_types))]
        operand_types = ", ".join(self.types[o] for o in operands)
        regions_text = ""
        if regions:
            regions_text = " (" + ", ".join(regions) + ")"
        result_text = result_types[0] if len(result_types) == 1 else f"({', '.join(result_types)})"
        binder = result if len(result_types) == 1 else f"{result}:{len(result_types)}"
        prefix = f"{binder} = " if result_types else ""
        self.lines.append(
            f'{self.margin}{prefix}"{name}"({", ".join(operands)}){regions_text}'
            f"{attributes_text(attributes)} : ({operand_types}) -> {result_text}"
        )
        for value, type_text in zip(results, result_types):
            self.types[value] = type_text
        return results

    def op1(self, name, operands, result_type, attributes=None, regions=None) -> str:
        return self.op(name, operands, [result_type], attributes, regions)[0]

    def region(self, arg_types, body, terminator="stablehlo.return") -> str:
        """A one-block region: `body(builder, args)` returns the values the block yields."""
        inner = FunctionBuilder(self.counter, self.indent + 4, self.dimension_values)
        # A region may use values of the enclosing function: its table of types reads through to theirs (not a copy,
        # which made lowering quadratic in the number of regions times values: issue 31).
        inner.types = collections.ChainMap({}, self.types)
        args = [inner.fresh() for _ in arg_types]
        for arg, type_text in zip(args, arg_types):
            inner.types[arg] = type_text
        results = body(inner, args)
        inner.op(terminator, list(results), [])
        header = ", ".join(f"{a}: {t}" for a, t in zip(args, arg_types))
        block = f"{' ' * (self.indent + 2)}^bb0({header}):\n" + "\n".join(inner.lines)
        return "{\n" + block + "\n" + " " * self.indent + "}"

    def constant(self, value: np.ndarray) -> str:
        value = np.asarray(value)
        if value.size > 64 or value.dtype.hasobject:
            return self.op1("stablehlo.constant", [], tensor_type(value.shape, value.dtype),
                            {"value": dense_elements(value)})
        key = value.dtype, value.shape, value.tobytes()  # (the bytes say which value: -0.0 is not 0.0, nor NaN 0)
        texts = _constants.get(key)
        if texts is None:
            texts = tensor_type(value.shape, value.dtype), {"value": dense_elements(value)}
            if len(_constants) < _MEMO_SIZE:
                _constants[key] = texts
        return self.op1("stablehlo.constant", [], texts[0], texts[1])

    def scalar(self, value, dtype) -> str:
        return self.constant(np.asarray(value, dtype=dtype))

    def broadcast_scalar(self, value, shape, dtype) -> str:
        """A full array of `value`; XLA folds it, so this costs nothing at run time."""
        scalar = self.scalar(value, dtype)
        if not shape:
            return scalar
        return self.broadcast_in_dim(scalar, shape, dtype, [])

    def broadcast_in_dim(self, value, shape, dtype, broadcast_dimensions) -> str:
        """`value` broadcast to `shape` (of `dtype`), its dimensions at `broadcast_dimensions`; a symbolic
        `shape` takes the dynamic form, its sizes computed from the function's dimension variables."""
        if self.dimension_values is not None:  # (lowering/dynamic_shapes.py's DimensionValues writes that form)
            return self.dimension_values.broadcast_in_dim(self, value, shape, dtype, broadcast_dimensions)
        return self.op1("stablehlo.broadcast_in_dim", [value], tensor_type(shape, dtype),
                        {"broadcast_dimensions": i64_array(broadcast_dimensions)})
