"""Vectorizing map: the batching interpreter and `numax.vmap`.

A `BatchTracer` carries a value with one extra dimension (its batch dimension, at any position) or no
batch dimension at all (`None`: the same for every example). Each primitive applied to batch tracers
goes through its batching rule, which produces one batched operation, never a loop over examples.
Each `vmap` pushes its own main trace and names its axis, so nested vmaps and collectives over a named
axis find the right one.
"""

import functools
import inspect

from ..core import pytree as tree
from ..core.dtypes import has_extended_dtype
from ..core.primitives import batching_rules
from ..core.trace import Trace, Tracer, full_lower, get_aval_of, new_main, trace_state
from ..lax.batching import batch_at
from ..lax.reductions import reduce_sum


class AxisData:
    """A vmap's axis: its size and name (None when unnamed)."""

    __slots__ = ("size", "name", "spmd_name")

    def __init__(self, size, name, spmd_name=None):
        self.size = size
        self.name = name
        self.spmd_name = spmd_name


class BatchTracer(Tracer):
    __slots__ = ("value", "batch_dim")

    def __init__(self, trace, value, batch_dim):
        self._trace = trace
        self.value = value
        self.batch_dim = batch_dim

    @property
    def aval(self):
        aval = get_aval_of(self.value)
        if self.batch_dim is None:
            return aval
        shape = aval.shape[:self.batch_dim] + aval.shape[self.batch_dim + 1:]
        return aval.update(shape=shape)

    def full_lower(self):
        if self.batch_dim is None:
            return full_lower(self.value)
        return self


class BatchTrace(Trace):
    __slots__ = ()

    @property
    def axis(self) -> AxisData:
        return self.main.global_data

    def pure(self, value):
        return BatchTracer(self, value, None)

    lift = pure

    @staticmethod
    def axis_name_of(main):
        return main.global_data.name

    def process_primitive(self, primitive, tracers, params):
        values = [t.value for t in tracers]
        dims = [t.batch_dim for t in tracers]
        name = self.axis.name
        if all(d is None for d in dims) and (name is None or name not in primitive.named_axes(params)):
            out = primitive.bind(*values, **params)
            return [self.pure(o) for o in out] if primitive.multiple_results else self.pure(out)
        rule = batching_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"batching rule for '{primitive.name}' not implemented")
        if getattr(rule, "needs_axis", False):  # rules that batch sub-programs get the axis itself
            out, out_dims = rule(values, dims, axis=self.axis, **params)
        else:
            out, out_dims = rule(values, dims, **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dims)]
        return BatchTracer(self, out, out_dims)


def find_axis(name):
    """The innermost vmap (its main trace) whose axis is called `name`, or None."""
    for main in reversed(trace_state.stack):
        if main.trace_type is BatchTrace and main.global_data.name == name:
            return main
    return None


def batch_flat(flat_fun, values, dims, axis: AxisData, out_dims_thunk, sum_match=False):
    """Runs `flat_fun` on values batched along `dims`; returns outputs with their batch dims moved to
    `out_dims_thunk()` (a callable, as the output count is known only after the call). A batched output
    whose out dim is None is an error, or with `sum_match` summed over the batch."""
    with new_main(BatchTrace, axis) as main:
        trace = BatchTrace(main)
        inputs = [BatchTracer(trace, v, d) if d is not None else v for v, d in zip(values, dims)]
        outs = [trace.full_raise(o) for o in flat_fun(*inputs)]
        out_dims = out_dims_thunk()
        results = []
        for i, (out, out_dim) in enumerate(zip(outs, out_dims)):
            if out_dim is None:
                if out.batch_dim is not None and not sum_match:
                    raise ValueError(f"vmap has mapped output (output {i}) but out_axes is None")
                results.append(out.value if out.batch_dim is None else reduce_sum(out.value, (out.batch_dim,)))
                continue
            results.append(batch_at(out.value, out.batch_dim, axis.size, out_dim))
        return results


# --- numax.vmap ---------------------------------------------------------------------------------------
def _axes_of_leaves(axes, args, what, transform="vmap"):
    """One axis (int or None) per leaf of `args`, from a prefix tree of `axes` (JAX's in_axes rules)."""
    prefix = tree.tree_structure(axes, is_leaf=lambda x: x is None)
    try:
        subtrees = prefix.flatten_up_to(args)
    except tree.PrefixMismatchError as error:
        # jax names the spot as a path into the transform's argument: vmap's in_axes within the positional
        # arguments, pmap's within (positional, keyword) arguments, as numax flattens both.
        path = error.path[1:] if (transform, what) == ("vmap", "in_axes") else error.path
        raise ValueError(f"{transform} {what} specification must be a tree prefix of the corresponding value, got "
                         f"specification {axes} for value tree {tree.tree_structure(args)}: pytree structure "
                         f"error at key path {transform} {what}{tree.keystr(path)}: {error}") from None
    except TypeError as error:
        raise ValueError(f"{transform} {what} specification must be a tree prefix of the corresponding value, got "
                         f"specification {axes} for value tree {tree.tree_structure(args)}: {error}") from None
    axis_leaves = tree.tree_leaves(axes, is_leaf=lambda x: x is None)
    result = []
    for axis, subtree in zip(axis_leaves, subtrees):
        if axis is not None and not isinstance(axis, int):
            raise TypeError(f"{transform} {what} must be an int, None, or (nested) container with those types as "
                            f"leaves, but got {axis!r}")
        for value in tree.tree_leaves(subtree, is_leaf=has_extended_dtype):
            if axis is not None and has_extended_dtype(value):
                result += [_axis_of_key_data(axis, value, transform, what)] * len(tree.tree_leaves(value))
            else:
                result.append(axis)
    return result


def _axis_of_key_data(axis, keys, transform, what):
    """`axis` of a typed PRNG key array as an axis of its key data, whose trailing axis of key words is no axis of
    the keys (a negative axis counts from the keys' last one)."""
    rank = len(keys.shape) + (what == "out_axes")  # an output's axis places the batch among its axes
    if not -rank <= axis < rank:
        if what == "out_axes":
            raise ValueError(f"{transform} out_axes: axis {axis} is out of bounds for an output of dimension {rank} "
                             "(the batch included)")
        raise ValueError(f"{transform} was requested to map its argument along axis {axis}, which implies that its "
                         f"rank should be at least {axis + 1 if axis >= 0 else -axis}, but is only {rank} (its shape "
                         f"is {tuple(keys.shape)})")
    return axis - 1 if axis < 0 else axis


def _mapped_size(leaves, axes, argument_names, transform="vmap"):
    """The size of the mapped axes; `argument_names()` names the leaves when the sizes disagree."""
    sizes = {}
    for index, (leaf, axis) in enumerate(zip(leaves, axes)):
        if axis is None:
            continue
        aval = get_aval_of(leaf)
        if not -aval.ndim <= axis < aval.ndim:
            raise ValueError(f"{transform} was requested to map its argument along axis {axis}, which implies that its "
                             f"rank should be at least {axis + 1 if axis >= 0 else -axis}, but is only "
                             f"{aval.ndim} (its shape is {aval.shape})")
        sizes.setdefault(aval.shape[axis % aval.ndim], []).append((index, axis, aval))
    if len(sizes) > 1:
        names = argument_names()
        most = max(len(entries) for entries in sizes.values())
        lines = []
        for size, entries in sizes.items():
            index, axis, aval = entries[0]
            where = f"axis {axis} of {names[index]} of type {aval.str_short()}"
            if len(entries) == 1:
                lines.append(f"  * one axis had size {size}: {where}")
            else:
                which = "most" if len(entries) == most else "some"
                lines.append(f"  * {which} axes ({len(entries)} of them) had size {size}, e.g. {where}")
        raise ValueError(f"{transform} got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines))
    return next(iter(sizes)) if sizes else None


def _argument_names(fun, args, kwargs):
    """Names of the argument leaves for error messages, as JAX writes them: `argument x['w']`."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = []
    for path, _ in tree.tree_flatten_with_path((args, kwargs))[0]:
        if path[0].idx == 0:  # a positional argument
            index = path[1].idx
            head = positional[index] if index < len(positional) else f"args[{index}]"
        else:
            head = str(path[1].key)
        names.append(f"argument {head}{tree.keystr(path[2:])}")
    return names


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None, sum_match=False):
    """Vectorizes `fun` over the axes `in_axes` of its arguments, putting the batch at `out_axes`. With
    `sum_match`, an output that depends on the batch but has out axis None is summed over the batch."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict)) or tree.tree_leaves(in_axes)):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                        f"positional arguments passed to the function, but got {in_axes}.")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                             f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        leaves, in_tree = tree.tree_flatten((args, kwargs))
        axes = _axes_of_leaves((in_axes, 0), (args, kwargs), "in_axes")
        size = _mapped_size(leaves, axes, lambda: _argument_names(fun, args, kwargs))
        if size is None:
            if axis_size is None:
                raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must be specified")
            size = axis_size
        elif axis_size is not None and axis_size != size:
            raise ValueError(f"vmap got axis_size={axis_size} but the mapped arguments have axis size {size}")
        axes = [a if a is None else a % get_aval_of(leaf).ndim for a, leaf in zip(axes, leaves)]

        out_info = {}

        def flat_fun(*flat_args):
            call_args, call_kwargs = in_tree.unflatten(flat_args)
            out = fun(*call_args, **call_kwargs)
            out_leaves, out_tree = tree.tree_flatten(out)
            out_info["tree"] = out_tree
            out_info["axes"] = _axes_of_leaves(out_axes, out, "out_axes")
            out_info["ranks"] = [get_aval_of(o).ndim for o in out_leaves]
            return out_leaves

        def out_dims():
            for axis, rank in zip(out_info["axes"], out_info["ranks"]):
                if axis is not None and not -(rank + 1) <= axis <= rank:
                    raise ValueError(f"vmap out_axes: axis {axis} is out of bounds for an output of dimension "
                                     f"{rank + 1} (the batch included)")
            return [a if a is None else a % (rank + 1) for a, rank in zip(out_info["axes"], out_info["ranks"])]

        outs = batch_flat(flat_fun, leaves, axes, AxisData(size, axis_name, spmd_axis_name), out_dims, sum_match)
        return out_info["tree"].unflatten(outs)

    return batched




def batch_program(closed, in_dims, axis: AxisData, force_batched=False):
    """The batched version of a closed program, as a program (for primitives holding sub-programs).

    Inputs are batched at `in_dims` (None: unbatched); outputs come out batched at 0, or unbatched (None)
    where they do not depend on the batch, unless `force_batched` (a bool, or one per output) asks for them
    batched. Returns (ClosedProgram, out_dims)."""
    from ..core.evaluation import eval_closed_program
    from ..core.staging import trace_to_closed_program

    in_avals = []
    for aval, dim in zip(closed.program.in_avals, in_dims):
        if dim is None:
            in_avals.append(aval)
        else:
            shape = list(aval.shape)
            shape.insert(dim, axis.size)
            in_avals.append(aval.update(shape=tuple(shape)))
    n_out = len(closed.program.outvars)
    force = [force_batched] * n_out if isinstance(force_batched, bool) else list(force_batched)
    out_dims = []

    def traced(*values):
        with new_main(BatchTrace, axis) as main:
            trace = BatchTrace(main)
            inputs = [BatchTracer(trace, v, d) if d is not None else v for v, d in zip(values, in_dims)]
            outs = [trace.full_raise(o) for o in eval_closed_program(closed, *inputs)]
            results = []
            out_dims.clear()
            for out, forced in zip(outs, force):
                if out.batch_dim is None and not forced:
                    results.append(out.value)
                    out_dims.append(None)
                else:
                    results.append(batch_at(out.value, out.batch_dim, axis.size, 0))
                    out_dims.append(0)
            return results

    return trace_to_closed_program(traced, in_avals), list(out_dims)
