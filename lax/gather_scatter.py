"""Gather and scatter: reads and writes of windows at indices given by an array.

`gather` and the scatter family (`scatter`, `scatter_add`, `scatter_mul`, `scatter_min`, `scatter_max`)
follow XLA's dimension-number model, with JAX's conventions: the index vector is the last dimension of
the indices, and out-of-bounds behaviour is chosen by a `GatherScatterMode`:

- CLIP: indices are clamped so that every window lies inside the operand.
- FILL_OR_DROP: a gather fills windows that are not wholly inside the operand with `fill_value`; a
  scatter drops updates whose window is not wholly inside the operand.
- PROMISE_IN_BOUNDS: the caller promises in-bounds indices; XLA's native behaviour (clamping for gather,
  dropping for scatter) is used as is.

As in JAX, `gather` defaults to PROMISE_IN_BOUNDS and the scatters to FILL_OR_DROP.
"""

import enum
from typing import NamedTuple

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, canonical_shape, is_static_shape
from ..core.primitives import Primitive
from ..lowering import dynamic_shapes
from ..lowering.lower import register_lowering
from ..lowering.stablehlo import aval_type, i64_array, tensor_type
from . import typing as T
from .reductions import lexicographic_pick
from .slicing import index_dtype_for_shape


class GatherScatterMode(enum.Enum):
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    def __repr__(self):
        return f"GatherScatterMode.{self.name}"

    @staticmethod
    def from_any(mode):
        """JAX's parsing: a mode, or 'clip' / 'fill' / 'drop' / 'promise_in_bounds'; None means FILL_OR_DROP."""
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode is None or mode == "fill" or mode == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"unknown gather/scatter mode {mode!r}: expected 'clip', 'fill', 'drop' or "
                         "'promise_in_bounds'")


class GatherDimensionNumbers(NamedTuple):
    """How a gather reads windows: which output dimensions are window (offset) dimensions, which operand
    dimensions are collapsed away (their window size must be 1), and which operand dimension each entry
    of the index vector addresses."""

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter writes windows: which update dimensions are window dimensions, which operand
    dimensions the windows leave out (size 1), and which operand dimension each index entry addresses."""

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _as_tuples(numbers):
    return type(numbers)(*(tuple(int(d) for d in field) for field in numbers))


def _check_dims(name, what, dims, rank, sorted_required=True):
    if any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {what} {dims} must be distinct dimensions in [0, {rank})")
    if sorted_required and list(dims) != sorted(dims):
        raise TypeError(f"{name}: {what} {dims} must be sorted")


def _check_indices(name, indices, index_map, operand_batching_dims, indices_batching_dims, operand):
    if indices.dtype not in T.integer_dtypes:
        raise ValueError(f"{name}: indices must have an integer dtype, got {indices.str_short()}")
    if indices.ndim == 0:
        raise TypeError(f"{name}: indices must have at least one dimension (the index vector is the last one)")
    if indices.shape[-1] != len(index_map):
        raise TypeError(f"{name}: the index vector (last dimension of indices {indices.str_short()}) has "
                        f"{indices.shape[-1]} entries, but {len(index_map)} operand dimensions are mapped "
                        f"({index_map})")
    _check_dims(name, "the index map", index_map, operand.ndim, sorted_required=False)
    _check_dims(name, "operand_batching_dims", operand_batching_dims, operand.ndim)
    _check_dims(name, "the indices' batching dims", indices_batching_dims, indices.ndim - 1, sorted_required=False)
    if set(index_map) & set(operand_batching_dims):
        raise TypeError(f"{name}: operand batching dims {operand_batching_dims} may not be indexed ({index_map})")
    if len(operand_batching_dims) != len(indices_batching_dims):
        raise TypeError(f"{name}: operand batching dims {operand_batching_dims} and indices batching dims "
                        f"{indices_batching_dims} must pair up")
    for od, idim in zip(operand_batching_dims, indices_batching_dims):
        if operand.shape[od] != indices.shape[idim]:
            raise TypeError(f"{name}: batching dimension {od} of the operand {operand.str_short()} and {idim} of "
                            f"the indices {indices.str_short()} differ in size")


# --- gather ---------------------------------------------------------------------------------------------
gather_p = Primitive("gather")


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                          unique_indices, mode, fill_value):
    dn = dimension_numbers
    _check_indices("gather", indices, dn.start_index_map, dn.operand_batching_dims,
                   dn.start_indices_batching_dims, operand)
    _check_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim)
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather: slice_sizes {slice_sizes} must have one entry per dimension of {operand.str_short()}")
    if any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"gather: slice_sizes {slice_sizes} must lie between 0 and the operand shape {operand.shape}")
    removed = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    if len(removed) != len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims):
        raise TypeError("gather: collapsed_slice_dims and operand_batching_dims must not overlap")
    if any(slice_sizes[d] > 1 for d in removed):
        raise TypeError(f"gather: collapsed and batching dimensions {sorted(removed)} need slice size <= 1, "
                        f"got slice_sizes {slice_sizes}")
    batch_shape = indices.shape[:-1]
    rank = len(batch_shape) + len(dn.offset_dims)
    _check_dims("gather", "offset_dims", dn.offset_dims, rank)
    if len(dn.offset_dims) + len(removed) != operand.ndim:
        raise TypeError(f"gather: offset_dims {dn.offset_dims} must name one output dimension per operand dimension "
                        f"that is neither collapsed nor batching ({operand.ndim - len(removed)} of them)")
    window_sizes = iter([s for d, s in enumerate(slice_sizes) if d not in removed])
    batch_sizes = iter(batch_shape)
    shape = [next(window_sizes) if d in dn.offset_dims else next(batch_sizes) for d in range(rank)]
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _dims_text(name, dims):
    return f"{name} = [{', '.join(map(str, dims))}]" if dims else None


def _gather_attribute(dn, index_vector_dim):
    fields = [_dims_text("offset_dims", dn.offset_dims), _dims_text("collapsed_slice_dims", dn.collapsed_slice_dims),
              _dims_text("operand_batching_dims", dn.operand_batching_dims),
              _dims_text("start_indices_batching_dims", dn.start_indices_batching_dims),
              _dims_text("start_index_map", dn.start_index_map), f"index_vector_dim = {index_vector_dim}"]
    return f"#stablehlo.gather<{', '.join(f for f in fields if f)}>"


def _compare(builder, a, b, direction, dtype, shape):
    kind = "UNSIGNED" if dtypes.is_unsigned(dtype) else "SIGNED"
    return builder.op1("stablehlo.compare", [a, b], tensor_type(shape, dtypes.bool_), {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {kind}>"})


def _signed_indices(builder, indices, indices_aval, operand_shape):
    """The indices converted to the signed dtype that holds every position of the operand (as JAX does before
    bounds checks): comparisons against the bounds then neither overflow nor wrap."""
    dtype = index_dtype_for_shape(operand_shape)
    if indices_aval.dtype == dtype:
        return indices, indices_aval
    aval = ShapedArray(indices_aval.shape, dtype)
    return builder.op1("stablehlo.convert", [indices], aval_type(aval)), aval


def _index_bounds(builder, indices_aval, upper_bounds):
    """Constants of the indices' shape: zeros, and `upper_bounds` (one per index entry) along the last axis."""
    shape, dtype = indices_aval.shape, indices_aval.dtype
    zeros = builder.broadcast_scalar(0, shape, dtype)
    if is_static_shape(upper_bounds):
        upper = builder.constant(np.asarray(upper_bounds, dtype))
    else:
        upper = builder.op1("stablehlo.convert", [dynamic_shapes.shape_value(builder, upper_bounds)],
                            tensor_type((len(upper_bounds),), dtype))
    upper = builder.broadcast_in_dim(upper, shape, dtype, [len(shape) - 1])
    return zeros, upper


def _in_bounds_mask(builder, indices, indices_aval, upper_bounds):
    """A boolean of the batch shape: True where every entry of the index vector is in [0, upper bound]."""
    shape, dtype = indices_aval.shape, indices_aval.dtype
    zeros, upper = _index_bounds(builder, indices_aval, upper_bounds)
    pred = tensor_type(shape, dtypes.bool_)
    ok = builder.op1("stablehlo.and", [_compare(builder, indices, zeros, "GE", dtype, shape),
                                       _compare(builder, indices, upper, "LE", dtype, shape)], pred)
    scalar = tensor_type((), dtypes.bool_)
    region = builder.region([scalar, scalar], lambda inner, args: [inner.op1("stablehlo.and", args, scalar)])
    return builder.op1("stablehlo.reduce", [ok, builder.constant(np.array(True))],
                       tensor_type(shape[:-1], dtypes.bool_), {"dimensions": i64_array([len(shape) - 1])}, [region])


def _lower_gather(ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices,
                  mode, fill_value):
    builder = ctx.builder
    operand_aval, indices_aval = ctx.avals_in
    out = ctx.aval_out
    dn = dimension_numbers
    filling = mode is GatherScatterMode.FILL_OR_DROP and out.size != 0
    if filling:
        indices, indices_aval = _signed_indices(builder, indices, indices_aval, operand_aval.shape)
    attributes = {"dimension_numbers": _gather_attribute(dn, indices_aval.ndim - 1),
                  "indices_are_sorted": "true" if indices_are_sorted else "false"}
    gathered = dynamic_shapes.gather(builder, operand, indices, slice_sizes, attributes, aval_type(out))
    if not filling:
        return gathered  # XLA itself clamps the start of every window into the operand
    upper_bounds = [operand_aval.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    mask = _in_bounds_mask(builder, indices, indices_aval, upper_bounds)
    batch_dims = [d for d in range(out.ndim) if d not in dn.offset_dims]
    mask = builder.broadcast_in_dim(mask, out.shape, dtypes.bool_, batch_dims)
    fill = builder.broadcast_scalar(gather_fill_value(fill_value, out.dtype), out.shape, out.dtype)
    return builder.op1("stablehlo.select", [mask, gathered, fill], aval_type(out))


def gather_fill_value(fill_value, dtype):
    """JAX's default fill for out-of-bounds gathers: NaN, the lowest signed / highest unsigned int, True."""
    if fill_value is not None:
        return np.asarray(fill_value).astype(dtype)
    if dtypes.is_inexact(dtype):
        return np.asarray(np.nan, dtype)
    if dtypes.is_unsigned(dtype):
        return np.asarray(np.iinfo(dtype).max, dtype)
    if dtype == dtypes.bool_:
        return np.asarray(True)
    return np.asarray(np.iinfo(dtype).min, dtype)


gather_p.def_abstract_eval(_gather_abstract_eval)
register_lowering(gather_p, _lower_gather)


def _hashable_scalar(value):
    if value is None:
        return None
    value = np.asarray(value)
    if value.ndim != 0:
        raise TypeError(f"fill_value must be a scalar, got shape {value.shape}")
    return value.item()


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """Reads the windows of `slice_sizes` starting at each index vector of `start_indices` (JAX's lax.gather).
    Out-of-bounds windows are clamped into the operand unless `mode` says otherwise ('fill', 'clip')."""
    if mode is None:
        mode = GatherScatterMode.PROMISE_IN_BOUNDS  # (for scatters, None means FILL_OR_DROP, as in JAX)
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got {dimension_numbers!r}")
    return gather_p.bind(operand, start_indices, dimension_numbers=_as_tuples(dimension_numbers),
                         slice_sizes=canonical_shape(slice_sizes), indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode),
                         fill_value=_hashable_scalar(fill_value))


# --- scatter ----------------------------------------------------------------------------------------------
def _scatter_window_sizes(operand, updates, dn):
    """The window size along each operand dimension (1 where the window leaves a dimension out)."""
    removed = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window = iter(updates.shape[d] for d in dn.update_window_dims)
    return [1 if d in removed else next(window) for d in range(operand.ndim)]


def _scatter_abstract_eval(name, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                           unique_indices, mode):
    dn = dimension_numbers
    T.check_dtype(name, operand, _combiners[name][1])
    T.check_same_dtypes(name, (operand, updates))
    _check_indices(name, indices, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                   dn.scatter_indices_batching_dims, operand)
    _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim)
    _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim)
    removed = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    if len(removed) != len(dn.inserted_window_dims) + len(dn.operand_batching_dims):
        raise TypeError(f"{name}: inserted_window_dims and operand_batching_dims must not overlap")
    if len(dn.update_window_dims) + len(removed) != operand.ndim:
        raise TypeError(f"{name}: update_window_dims {dn.update_window_dims} must name one updates dimension per "
                        f"operand dimension that is neither inserted nor batching ({operand.ndim - len(removed)})")
    scatter_shape = tuple(s for d, s in enumerate(updates.shape) if d not in dn.update_window_dims)
    if scatter_shape != indices.shape[:-1]:
        raise TypeError(f"{name}: the scatter dimensions of updates {updates.str_short()} (shape {scatter_shape}) "
                        f"must equal the batch shape of the indices {indices.str_short()}")
    sizes = _scatter_window_sizes(operand, updates, dn)
    # Only the window's own dimensions must fit (as in JAX): an inserted dimension of an empty operand takes no
    # element, and XLA drops (or clamps) every update into it.
    if any(s > d for i, (s, d) in enumerate(zip(sizes, operand.shape)) if i not in removed):
        raise TypeError(f"{name}: update windows {tuple(sizes)} do not fit in the operand {operand.str_short()}")
    return operand


# name -> (combining op in the scatter's region, accepted dtypes); plain scatter keeps the update.
_combiners = {
    "scatter": (None, T.any_dtype), "scatter_add": ("stablehlo.add", T.numeric_dtypes),
    "scatter_mul": ("stablehlo.multiply", T.numeric_dtypes), "scatter_min": ("stablehlo.minimum", T.any_dtype),
    "scatter_max": ("stablehlo.maximum", T.any_dtype),
}


def _combined(builder, combiner, args, dtype):
    """The scatter region's combination of the old and the new value; complex minimum and maximum in
    lexicographic order, as JAX orders complex numbers (StableHLO's are real-only on XLA's CPU emitters)."""
    scalar = tensor_type((), dtype)
    if combiner in ("stablehlo.minimum", "stablehlo.maximum") and dtypes.is_complex(dtype):
        return lexicographic_pick(builder, args, "LT" if combiner == "stablehlo.minimum" else "GT", dtype)
    return builder.op1(combiner, args, scalar)


def _scatter_lowering(name):
    combiner = _combiners[name][0]

    def lower(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
        builder = ctx.builder
        operand_aval, indices_aval, updates_aval = ctx.avals_in
        dn = dimension_numbers
        if mode is GatherScatterMode.CLIP and indices_aval.size:
            indices, indices_aval = _signed_indices(builder, indices, indices_aval, operand_aval.shape)
            sizes = _scatter_window_sizes(operand_aval, updates_aval, dn)
            upper_bounds = [operand_aval.shape[d] - sizes[d] for d in dn.scatter_dims_to_operand_dims]
            low, high = _index_bounds(builder, indices_aval, upper_bounds)
            indices = builder.op1("stablehlo.clamp", [low, indices, high], aval_type(indices_aval))
        scalar = tensor_type((), operand_aval.dtype)
        if combiner is None:
            region = builder.region([scalar, scalar], lambda inner, args: [args[1]])
        else:
            region = builder.region([scalar, scalar],
                                    lambda inner, args: [_combined(inner, combiner, args, operand_aval.dtype)])
        fields = [_dims_text("update_window_dims", dn.update_window_dims),
                  _dims_text("inserted_window_dims", dn.inserted_window_dims),
                  _dims_text("input_batching_dims", dn.operand_batching_dims),
                  _dims_text("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
                  _dims_text("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
                  f"index_vector_dim = {indices_aval.ndim - 1}"]
        attributes = {
            "scatter_dimension_numbers": f"#stablehlo.scatter<{', '.join(f for f in fields if f)}>",
            "indices_are_sorted": "true" if indices_are_sorted else "false",
            "unique_indices": "true" if unique_indices else "false"}
        return builder.op1("stablehlo.scatter", [operand, indices, updates], aval_type(ctx.aval_out),
                           attributes, [region])

    return lower


def _define_scatter(name, doc):
    primitive = Primitive(name)
    primitive.def_abstract_eval(lambda *avals, **params: _scatter_abstract_eval(name, *avals, **params))
    register_lowering(primitive, _scatter_lowering(name))

    def wrapper(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
        if not isinstance(dimension_numbers, ScatterDimensionNumbers):
            raise TypeError(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, got {dimension_numbers!r}")
        return primitive.bind(operand, scatter_indices, updates, dimension_numbers=_as_tuples(dimension_numbers),
                              indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
                              mode=GatherScatterMode.from_any(mode))

    wrapper.__name__ = name
    wrapper.__doc__ = doc
    return primitive, wrapper


scatter_p, scatter = _define_scatter(
    "scatter", "Writes `updates` into windows of `operand` at `scatter_indices` (the last write of a repeated "
    "index wins, in an unspecified order).")
scatter_add_p, scatter_add = _define_scatter("scatter_add", "Adds `updates` into `operand`; repeated indices add up.")
scatter_mul_p, scatter_mul = _define_scatter("scatter_mul", "Multiplies `operand` by `updates` at the indices.")
scatter_min_p, scatter_min = _define_scatter("scatter_min", "The minimum of `operand` and `updates` at the indices.")
scatter_max_p, scatter_max = _define_scatter("scatter_max", "The maximum of `operand` and `updates` at the indices.")
# Gather takes dynamic_gather for symbolic slice sizes; scatter's windows come from its operands' (dynamic) types.
dynamic_shapes.polymorphic_primitives.update((gather_p, scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p,
                                              scatter_max_p))



# --- differentiation rules -------------------------------------------------------------------------------------
# gather and scatter_add are linear (in the operand, and in the operand and updates jointly) and transpose
# into each other with the same indices and mode. scatter, scatter_mul, scatter_min and scatter_max follow
# JAX's JVP rules, which express their tangents with gathers and scatter-adds.
from ..core.ad_util import Zero, is_undefined, tangent_aval  # noqa: E402
from ..core.primitives import jvp_rules, transpose_rules  # noqa: E402
from ..core.trace import get_aval_of  # noqa: E402
from . import ad  # noqa: E402
from .elementwise import add, div, eq, mul, select, sub  # noqa: E402
from .elementwise import max as maximum  # noqa: E402
from .shapes import broadcast_in_dim, full, iota, reshape  # noqa: E402


def _aval_of(x):
    return x.aval if is_undefined(x) else get_aval_of(x)


def _read_back(x, indices, dimension_numbers, updates_aval, *, indices_are_sorted, unique_indices, mode):
    """The gather that reads, from an array of the operand's shape, the windows a scatter with
    `dimension_numbers` writes: one value per element of the updates (0 for windows a scatter drops)."""
    dn = dimension_numbers
    gather_numbers = GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                            dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                            dn.scatter_indices_batching_dims)
    slice_sizes = tuple(_scatter_window_sizes(get_aval_of(x), updates_aval, dn))
    return gather_p.bind(x, indices, dimension_numbers=gather_numbers, slice_sizes=slice_sizes,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
                         fill_value=0)


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    out = gather_p.bind(operand, indices, **params)
    if type(tangents[0]) is Zero:
        return out, Zero(tangent_aval(get_aval_of(out)))
    # Filled windows are constants: their tangent is zero.
    return out, gather_p.bind(tangents[0], indices, **{**params, "fill_value": 0})


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices,
                      mode, fill_value):
    dn = dimension_numbers
    scatter_numbers = ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                              dn.operand_batching_dims, dn.start_indices_batching_dims)
    zeros = ad.zeros_like_aval(operand.aval)
    return [scatter_add_p.bind(zeros, indices, ct, dimension_numbers=scatter_numbers,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode), None]


def _scatter_add_transpose(ct, operand, indices, updates, **params):
    updates_ct = None
    if is_undefined(updates):
        updates_ct = _read_back(ct, indices, params["dimension_numbers"], updates.aval, **_flags(params))
    return [ct if is_undefined(operand) else None, None, updates_ct]


def _flags(params):
    return {k: params[k] for k in ("indices_are_sorted", "unique_indices", "mode")}


def _scatter_mul_jvp_operand(tangent, operand, indices, updates, **params):
    return scatter_mul_p.bind(tangent, indices, updates, **params)


def _scatter_mul_jvp_updates(tangent, operand, indices, updates, **params):
    if not params["unique_indices"]:
        raise NotImplementedError("scatter_mul gradients with respect to the updates are only implemented with "
                                  "unique_indices=True (as in JAX)")
    zeros = ad.zeros_like_aval(tangent_aval(get_aval_of(operand)))
    return mul(operand, scatter_add_p.bind(zeros, indices, tangent, **params))


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates (transposing it)")
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


def _scatter_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    operand_tangent, _, updates_tangent = tangents
    if type(operand_tangent) is Zero and type(updates_tangent) is Zero:
        out = scatter_p.bind(operand, indices, updates, **params)
        return out, Zero(tangent_aval(get_aval_of(out)))
    operand_tangent, updates_tangent = ad.instantiate(operand_tangent), ad.instantiate(updates_tangent)
    if params["unique_indices"]:
        # No two updates meet: the tangents are scattered like the values.
        return (scatter_p.bind(operand, indices, updates, **params),
                scatter_p.bind(operand_tangent, indices, updates_tangent, **params))
    # Which of several updates of one element wins is unspecified, so (as JAX does) every update gets an
    # id, the ids are scattered, and reading them back says which update each output element holds; values
    # and tangents are then masked to the winners and scatter-added, which has a transpose.
    dn = params["dimension_numbers"]
    operand_aval, updates_aval = get_aval_of(operand), get_aval_of(updates)
    ids_shape = tuple(1 if d in dn.update_window_dims else s for d, s in enumerate(updates_aval.shape))
    id_count = int(np.prod(ids_shape, dtype=np.int64))
    id_dtype = dtypes.canonicalize_dtype(np.int64 if id_count >= 2 ** 31 - 1 else np.int32)
    ids = add(reshape(iota(id_dtype, id_count), ids_shape), id_dtype.type(1))
    ids = broadcast_in_dim(ids, updates_aval.shape, tuple(range(updates_aval.ndim)))
    no_id = ad.zeros_like_aval(ShapedArray(operand_aval.shape, id_dtype))
    scattered_ids = scatter_p.bind(no_id, indices, ids, **params)
    winners = eq(ids, _read_back(scattered_ids, indices, dn, updates_aval, **_flags(params)))
    untouched = eq(scattered_ids, id_dtype.type(0))

    def masked_scatter(operand, updates):
        kept_operand = select(untouched, operand, ad.zeros_like_aval(operand_aval))
        kept_updates = select(winners, updates, ad.zeros_like_aval(updates_aval))
        return scatter_add_p.bind(kept_operand, indices, kept_updates, **params)

    return masked_scatter(operand, updates), masked_scatter(operand_tangent, updates_tangent)


def _scatter_transpose(ct, operand, indices, updates, **params):
    if not params["unique_indices"]:
        raise NotImplementedError("scatter is only transposed with unique_indices=True (its JVP uses scatter_add "
                                  "otherwise)")
    updates_aval = _aval_of(updates)
    operand_ct = updates_ct = None
    if is_undefined(operand):
        # Elements that were overwritten got nothing from the operand.
        operand_ct = scatter_p.bind(ct, indices, ad.zeros_like_aval(tangent_aval(updates_aval)), **params)
    if is_undefined(updates):
        updates_ct = _read_back(ct, indices, params["dimension_numbers"], updates_aval, **_flags(params))
    return [operand_ct, None, updates_ct]


def _scatter_extremal_jvp(primitive, primals, tangents, **params):
    """scatter_min / scatter_max: each output element's tangent is that of the value that won there; ties
    share it equally among the tied updates and the operand (JAX's convention)."""
    operand, indices, updates = primals
    operand_tangent, _, updates_tangent = tangents
    out = primitive.bind(operand, indices, updates, **params)
    if type(operand_tangent) is Zero and type(updates_tangent) is Zero:
        return out, Zero(tangent_aval(get_aval_of(out)))
    operand_tangent, updates_tangent = ad.instantiate(operand_tangent), ad.instantiate(updates_tangent)
    dn = params["dimension_numbers"]
    operand_aval, updates_aval = get_aval_of(operand), get_aval_of(updates)
    one = np.ones((), operand_aval.dtype)
    ones, zeros = full(updates_aval.shape, one), full(updates_aval.shape, np.zeros_like(one))

    def read(x):
        return _read_back(x, indices, dn, updates_aval, **_flags(params))

    def count(weights):
        """Per update: the total weight of the updates that reach its output element."""
        return read(scatter_add_p.bind(full(operand_aval.shape, np.zeros_like(one)), indices, weights, **params))

    result = read(out)
    won = eq(updates, result)
    kept = eq(read(operand), result)
    # Among the sharers of an element's tangent: the updates equal to the result, and the operand if it is too.
    share = div(one, maximum(add(count(select(won, ones, zeros)), select(kept, ones, zeros)), one))
    updates_coefficient = select(won, share, zeros)
    # Each of the n updates reaching an element removes 1/n of the operand's tangent there, and gives back
    # its part of the operand's share if the operand tied. (The maximums only matter for dropped updates.)
    operand_coefficient = div(sub(select(kept, share, zeros), one), maximum(count(ones), one))
    tangent_updates = add(mul(read(operand_tangent), operand_coefficient), mul(updates_tangent, updates_coefficient))
    return out, scatter_add_p.bind(operand_tangent, indices, tangent_updates, **params)


jvp_rules[gather_p] = _gather_jvp
transpose_rules[gather_p] = _gather_transpose
ad.deflinear_in(scatter_add_p, (0, 2), _scatter_add_transpose)
ad.defjvp(scatter_mul_p, _scatter_mul_jvp_operand, None, _scatter_mul_jvp_updates)
transpose_rules[scatter_mul_p] = _scatter_mul_transpose
jvp_rules[scatter_p] = _scatter_jvp
transpose_rules[scatter_p] = _scatter_transpose
jvp_rules[scatter_min_p] = lambda primals, tangents, **params: _scatter_extremal_jvp(scatter_min_p, primals, tangents,
                                                                                    **params)
jvp_rules[scatter_max_p] = lambda primals, tangents, **params: _scatter_extremal_jvp(scatter_max_p, primals, tangents,
                                                                                    **params)


# --- batching rules ------------------------------------------------------------------------------------------
# JAX's rules, each one gather or one scatter: the operand's batch dimension becomes a window dimension
# taken whole; the indices' batch dimension becomes one more batch dimension of the indices; when both are
# batched they are paired as operand / indices batching dimensions, so example b reads only operand b.
from ..core.primitives import batching_rules  # noqa: E402
from .batching import axis_size_of, batch_at_front  # noqa: E402


def _plus_one(dims):
    return tuple(d + 1 for d in dims)


def _gather_batch(values, dims, *, dimension_numbers, slice_sizes, **params):
    (operand, indices), (operand_dim, indices_dim) = values, dims
    dn = dimension_numbers
    size = axis_size_of(values, dims)
    if indices_dim is None:
        operand = batch_at_front(operand, operand_dim, size)
        numbers = GatherDimensionNumbers(
            offset_dims=(0,) + _plus_one(dn.offset_dims), collapsed_slice_dims=_plus_one(dn.collapsed_slice_dims),
            start_index_map=_plus_one(dn.start_index_map), operand_batching_dims=_plus_one(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        return gather_p.bind(operand, indices, dimension_numbers=numbers, slice_sizes=(size,) + slice_sizes,
                             **params), 0
    indices = batch_at_front(indices, indices_dim, size)
    if operand_dim is None:
        numbers = dn._replace(offset_dims=_plus_one(dn.offset_dims),
                              start_indices_batching_dims=_plus_one(dn.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=numbers, slice_sizes=slice_sizes, **params), 0
    operand = batch_at_front(operand, operand_dim, size)
    numbers = GatherDimensionNumbers(
        offset_dims=_plus_one(dn.offset_dims), collapsed_slice_dims=_plus_one(dn.collapsed_slice_dims),
        start_index_map=_plus_one(dn.start_index_map), operand_batching_dims=(0,) + _plus_one(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + _plus_one(dn.start_indices_batching_dims))
    # (A window of 0 along the batching dimension when there are no examples.)
    return gather_p.bind(operand, indices, dimension_numbers=numbers, slice_sizes=(min(size, 1),) + slice_sizes,
                         **params), 0


def _scatter_batch_rule(primitive):
    def rule(values, dims, *, dimension_numbers, **params):
        (operand, indices, updates), (operand_dim, indices_dim, updates_dim) = values, dims
        dn = dimension_numbers
        size = axis_size_of(values, dims)
        # The result differs per example whatever is batched, so the operand always gets the batch dimension.
        operand = batch_at_front(operand, operand_dim, size)
        if size == 0:  # no examples: nothing to write (and no window fits an empty batching dimension)
            return operand, 0
        updates = batch_at_front(updates, updates_dim, size)
        if indices_dim is None:
            numbers = ScatterDimensionNumbers(
                update_window_dims=(0,) + _plus_one(dn.update_window_dims),
                inserted_window_dims=_plus_one(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus_one(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_plus_one(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        else:
            indices = batch_at_front(indices, indices_dim, size)
            numbers = ScatterDimensionNumbers(
                update_window_dims=_plus_one(dn.update_window_dims),
                inserted_window_dims=_plus_one(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_plus_one(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0,) + _plus_one(dn.operand_batching_dims),
                scatter_indices_batching_dims=(0,) + _plus_one(dn.scatter_indices_batching_dims))
        return primitive.bind(operand, indices, updates, dimension_numbers=numbers, **params), 0

    return rule


batching_rules[gather_p] = _gather_batch
for _primitive in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    batching_rules[_primitive] = _scatter_batch_rule(_primitive)
del _primitive
