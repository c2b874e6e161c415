"""StableHLO for modules with symbolic dimensions (shape-polymorphic exports).

Such a module's types print `?` for a symbolic dimension. Its `main` solves each dimension variable from the
argument dimensions (`stablehlo.get_dimension_size`), and ops whose result shape is symbolic take their dynamic forms
(`dynamic_broadcast_in_dim`, `dynamic_iota`, `dynamic_reshape`, `real_dynamic_slice`, `dynamic_pad`) with shape
operands computed from those values.
Before XLA compiles a caller, the runtime refines every shape to a static one (`xla.refined_module`).

Symbolic dimensions are duck-typed here (`variables()`, `evaluate_with(...)`, see numax/export/_shape_poly.py):
lowering does not import the export package. Only primitives in `polymorphic_primitives` (rules known to
emit the dynamic forms, or whose ops accept dynamic types) are lowered with symbolic shapes; others raise.
A dimension variable that no argument shape gives raises jax's `UnexpectedDimVar` where it is computed.
"""

import numpy as np

from ..core.avals import is_static_shape
from .stablehlo import i64_array, tensor_type

polymorphic_primitives = set()  # primitives whose lowering rules handle symbolic shapes
_I64 = "tensor<i64>"
_BOOL = "tensor<i1>"
_SOLVABLE_DOCS = ("https://docs.jax.dev/en/latest/export/shape_poly.html"
                  "#dimension-variables-must-be-solvable-from-the-input-shapes")


class UnexpectedDimVar(Exception):
    """jax's error for a dimension variable that no argument shape determines, met when the module computes a
    symbolic dimension that came from elsewhere (a static argument, say)."""


def solving_plan(dims) -> tuple:
    """jax's order of solving dimension variables from symbolic dimensions `dims` (those of the arguments, in
    order): sweeps over the dimensions, each one linear in a single variable not yet known solving it
    (`(size - rest) // coefficient`, see DimExpr.linear_in_one_unknown). Returns (steps, unsolved): steps are
    (index, (variable, coefficient, rest)) for a dimension that solves a variable, or (index, None) for one whose
    variables were all known by then (to check); unsolved are the indices of the dimensions no sweep could use.
    A call binds the variables by this plan (numax/export/_shape_binding.py), and a module computes them by it."""
    steps, known, pending = [], set(), list(range(len(dims)))
    while pending:
        unsolved = []
        for index in pending:
            if dims[index].variables() <= known:
                steps.append((index, None))
            elif (form := dims[index].linear_in_one_unknown(known)) is not None:
                steps.append((index, form))
                known.add(form[0])
            else:
                unsolved.append(index)
        if len(unsolved) == len(pending):
            break
        pending = unsolved
    return steps, pending


def dimension_variable_values(builder, args, in_avals):
    """{variable name: its tensor<i64> value}, solved from the argument dimensions by `solving_plan`: so `b + 15`
    and `2*d` give `b` and `d`. ValueError, as jax's, for variables that no dimension solves (`a^2`)."""
    symbolic = [(arg, axis, dim) for arg, aval in zip(args, in_avals) for axis, dim in enumerate(aval.shape)
                if not is_static_shape((dim,))]
    steps, unsolved = solving_plan([dim for _, _, dim in symbolic])
    if unsolved:
        variables = set().union(*(symbolic[i][2].variables() for i in unsolved)) - {f[0] for _, f in steps if f}
        unprocessed = ", ".join(f"'{symbolic[i][2]}'" for i in unsolved)
        raise ValueError(f"Cannot solve for values of dimension variables {variables}. We can only solve linear "
                         f"uni-variate constraints. The argument shapes are {[a.str_short() for a in in_avals]}; "
                         f"unprocessed dimensions: {unprocessed}. Please see {_SOLVABLE_DOCS} for more details.")
    values = DimensionValues()
    arithmetic = _arithmetic(builder)
    for index, form in steps:
        if form is None:
            continue  # a check, which the call makes (`bind_dimensions`) before running the module
        (arg, axis, _), (variable, coefficient, rest) = symbolic[index], form
        size = builder.op1("stablehlo.get_dimension_size", [arg], tensor_type((), np.dtype(np.int32)),
                           {"dimension": f"{axis} : i64"})
        size = builder.op1("stablehlo.convert", [size], _I64)
        if rest != 0:
            size = arithmetic["add"](size, _computed(builder, -rest, values))
        if coefficient != 1:
            size = arithmetic["divide"](size, builder.scalar(coefficient, np.int64), "floordiv")
        values[variable] = size
    return values


def check_polymorphic(primitive, avals):
    """Raises NotImplementedError when `primitive` meets a symbolic shape and has no polymorphic lowering."""
    if primitive not in polymorphic_primitives and not all(is_static_shape(a.shape) for a in avals):
        shapes = ", ".join(a.str_short() for a in avals)
        raise NotImplementedError(f"export: primitive {primitive.name} is not supported with symbolic shapes "
                                  f"(its operands and results: {shapes}); export it with static shapes")


def _arithmetic(builder):
    """The tensor<i64> operations `evaluate_with` computes a symbolic dimension with."""
    def binary(name):
        return lambda a, b: builder.op1(name, [a, b], _I64)

    def compare(a, b, direction):
        return builder.op1("stablehlo.compare", [a, b], _BOOL,
                           {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"})

    def divide(numerator, denominator, operation):
        # StableHLO's divide and remainder round toward zero; dimension arithmetic floors (as Python's).
        quotient = binary("stablehlo.divide")(numerator, denominator)
        remainder = binary("stablehlo.remainder")(numerator, denominator)
        zero = builder.scalar(0, np.int64)
        signs_differ = compare(compare(remainder, zero, "LT"), compare(denominator, zero, "LT"), "NE")
        adjust = builder.op1("stablehlo.and", [compare(remainder, zero, "NE"), signs_differ], _BOOL)
        if operation == "floordiv":
            adjusted = binary("stablehlo.subtract")(quotient, builder.scalar(1, np.int64))
            return builder.op1("stablehlo.select", [adjust, adjusted, quotient], _I64)
        adjusted = binary("stablehlo.add")(remainder, denominator)
        return builder.op1("stablehlo.select", [adjust, adjusted, remainder], _I64)

    return {"add": binary("stablehlo.add"), "multiply": binary("stablehlo.multiply"), "divide": divide,
            "constant": lambda value: builder.scalar(value, np.int64)}


def _computed(builder, dim, values):
    """A tensor<i64> holding `dim` (an int, or a symbolic dimension) computed from the variables' `values`;
    jax's UnexpectedDimVar when it has a variable that the argument shapes do not give."""
    if is_static_shape((dim,)):
        return builder.scalar(int(dim), np.int64)
    missing = dim.variables() - values.keys()
    if missing:
        raise unexpected_dim_var(missing, values)
    return dim.evaluate_with(values, **_arithmetic(builder))


def unexpected_dim_var(missing, known) -> UnexpectedDimVar:
    """jax's UnexpectedDimVar for the first of the variables `missing` (the argument shapes give those `known`)."""
    return UnexpectedDimVar(
        f"Encountered dimension variable '{min(missing)}' that is not appearing in the shapes of the function "
        f"arguments.\nThe following dimension variables are appearing in the shapes of the function arguments: "
        f"{sorted(known)}.\nPlease see {_SOLVABLE_DOCS} for more details.")


def dimension_value(builder, dim):
    """A tensor<i64> holding `dim` (an int, or a symbolic dimension computed from the dimension variables)."""
    return _computed(builder, dim, builder.dimension_values or {})


def shape_value(builder, shape):
    """A tensor<Nxi64> holding `shape`: the shape operand of StableHLO's dynamic ops."""
    return _vector_of(builder, [dimension_value(builder, d) for d in shape])


def _vector_of(builder, scalars):
    """A tensor<Nxi64> of N tensor<i64> values."""
    one = tensor_type((1,), np.dtype(np.int64))
    pieces = [builder.op1("stablehlo.reshape", [scalar], one) for scalar in scalars]
    if len(pieces) == 1:
        return pieces[0]
    return builder.op1("stablehlo.concatenate", pieces, tensor_type((len(pieces),), np.dtype(np.int64)),
                       {"dimension": "0 : i64"})


def dynamic_broadcast_in_dim(builder, value, shape, dtype, broadcast_dimensions):
    attributes = {"broadcast_dimensions": i64_array(broadcast_dimensions)}
    if is_static_shape(shape):
        return builder.op1("stablehlo.broadcast_in_dim", [value], tensor_type(shape, dtype), attributes)
    return builder.op1("stablehlo.dynamic_broadcast_in_dim", [value, shape_value(builder, shape)],
                       tensor_type(shape, dtype), attributes)


def iota(builder, shape, dtype, dimension):
    """`stablehlo.iota`, or `dynamic_iota` for a symbolic shape."""
    attributes = {"iota_dimension": f"{int(dimension)} : i64"}
    if is_static_shape(shape):
        return builder.op1("stablehlo.iota", [], tensor_type(shape, dtype), attributes)
    return builder.op1("stablehlo.dynamic_iota", [shape_value(builder, shape)], tensor_type(shape, dtype),
                       attributes)


def reshape(builder, value, shape, dtype):
    """`stablehlo.reshape`, or `dynamic_reshape` for a symbolic shape."""
    if is_static_shape(shape):
        return builder.op1("stablehlo.reshape", [value], tensor_type(shape, dtype))
    return builder.op1("stablehlo.dynamic_reshape", [value, shape_value(builder, shape)], tensor_type(shape, dtype))


def slice(builder, value, start_indices, limit_indices, strides, result_type):
    """`stablehlo.slice`, or `real_dynamic_slice` when a start or limit is symbolic (a slice up to a symbolic
    dimension's end)."""
    if is_static_shape(start_indices) and is_static_shape(limit_indices):
        return builder.op1("stablehlo.slice", [value], result_type, {
            "start_indices": i64_array(start_indices), "limit_indices": i64_array(limit_indices),
            "strides": i64_array(strides)})
    operands = [value] + [shape_value(builder, indices) for indices in (start_indices, limit_indices, strides)]
    return builder.op1("stablehlo.real_dynamic_slice", operands, result_type)


def dynamic_slice(builder, value, start_indices, slice_sizes, operand_shape, result_type):
    """`stablehlo.dynamic_slice`, or for symbolic `slice_sizes` a `real_dynamic_slice` from the starts clamped
    as XLA clamps them (into [0, dimension - size])."""
    if is_static_shape(slice_sizes):
        return builder.op1("stablehlo.dynamic_slice", [value, *start_indices], result_type,
                           {"slice_sizes": i64_array(slice_sizes)})
    # Vector forms, limit = start + sizes: shape refinement turns this pattern back into a dynamic_slice.
    vector = tensor_type((len(slice_sizes),), np.dtype(np.int64))
    starts = _vector_of(builder, [builder.op1("stablehlo.convert", [start], _I64) for start in start_indices])
    sizes = shape_value(builder, slice_sizes)
    highest = builder.op1("stablehlo.subtract", [shape_value(builder, operand_shape), sizes], vector)
    starts = builder.op1("stablehlo.clamp", [shape_value(builder, (0,) * len(slice_sizes)), starts, highest], vector)
    limits = builder.op1("stablehlo.add", [starts, sizes], vector)
    return builder.op1("stablehlo.real_dynamic_slice", [value, starts, limits,
                                                        shape_value(builder, (1,) * len(slice_sizes))], result_type)


def pad(builder, value, padding_value, padding_config, result_type):
    """`stablehlo.pad`, or `dynamic_pad` when an edge padding is symbolic (the transpose of a slice up to a
    symbolic end)."""
    lows, highs, interiors = zip(*padding_config) if padding_config else ((), (), ())
    if is_static_shape(lows) and is_static_shape(highs):
        return builder.op1("stablehlo.pad", [value, padding_value], result_type, {
            "edge_padding_low": i64_array(lows), "edge_padding_high": i64_array(highs),
            "interior_padding": i64_array(interiors)})
    widths = [shape_value(builder, part) for part in (lows, highs, interiors)]
    return builder.op1("stablehlo.dynamic_pad", [value, padding_value, *widths], result_type)


def gather(builder, operand, indices, slice_sizes, attributes, result_type):
    """`stablehlo.gather`, or `dynamic_gather` (its slice sizes an operand) when a slice size is symbolic (a
    whole symbolic dimension taken with every index)."""
    if is_static_shape(slice_sizes):
        return builder.op1("stablehlo.gather", [operand, indices], result_type,
                           {**attributes, "slice_sizes": i64_array(slice_sizes)})
    return builder.op1("stablehlo.dynamic_gather", [operand, indices, shape_value(builder, slice_sizes)],
                       result_type, attributes)


class DimensionValues(dict):
    """{dimension variable: its tensor<i64> value}: a FunctionBuilder's `dimension_values` in a function with
    symbolic shapes. The builder asks it for the dynamic forms of its own ops, so that stablehlo.py, below this
    module, knows nothing of symbolic shapes."""

    broadcast_in_dim = staticmethod(dynamic_broadcast_in_dim)
