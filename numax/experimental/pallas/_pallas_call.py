"""`pallas_call`: a kernel over refs to blocks, run at every point of a grid. numax runs it as JAX's interpret mode
does, where the call asks for it (`interpret=True`: without it JAX runs kernels on GPUs only, and numax compiles none
yet): the operands padded (by `pl.Element` paddings, then to whole blocks) with "uninitialized" values (NaN, the
integer minimum, False), the results starting as such values (or as the input they alias), then a loop over the grid
points in row-major order, each slicing its blocks out, running the kernel on refs to them and writing every block
back. The grid loop and the kernel are numax operations, so jit, vmap and grad compose with a call."""

import contextlib
import math
import threading

import numpy as np

from numax import lax
from numax import numpy as xnp
from numax import tree_util as tree
from numax.core.trace import get_aval_of
from numax.ref import freeze, new_ref

from ._blocks import BlockMapping, BlockSpec, GridSpec
from ._refs import KernelRef, read, uninitialized

_grids = threading.local()


@contextlib.contextmanager
def _grid_point(program_ids, grid):
    stack = _grids.__dict__.setdefault("stack", [])
    stack.append((program_ids, grid))
    try:
        yield
    finally:
        stack.pop()


def _current_grid(what):
    stack = getattr(_grids, "stack", None)
    if not stack:
        raise ValueError(f"{what} is only meaningful inside a Pallas kernel (a function pallas_call runs)")
    return stack[-1]


def program_id(axis):
    """The index of the running program along grid axis `axis` (an int32 scalar)."""
    ids, grid = _current_grid("program_id")
    if not -len(grid) <= axis < len(grid):
        raise ValueError(f"program_id: axis {axis} is out of range for a grid of {len(grid)} dimensions {grid}")
    return ids[axis]


def num_programs(axis):
    """The size of grid axis `axis`."""
    _, grid = _current_grid("num_programs")
    if not -len(grid) <= axis < len(grid):
        raise ValueError(f"num_programs: axis {axis} is out of range for a grid of {len(grid)} dimensions {grid}")
    return grid[axis]


def when(condition):
    """A decorator: the decorated function (of no arguments, writing refs) runs where `condition` holds."""

    def decorator(fun):
        if isinstance(condition, bool | np.bool_):
            if condition:
                fun()
            return None
        lax.cond(condition, lambda: (fun(), None)[1], lambda: None)
        return None

    return decorator


def _specs(specs, values, what):
    """One BlockSpec (or None) per leaf of `values`, from a spec tree matching it (or None / one spec for all)."""
    leaves = tree.tree_leaves(values)
    if specs is None:
        return [None] * len(leaves)
    flat = tree.tree_leaves(specs, is_leaf=lambda s: isinstance(s, BlockSpec) or s is None)
    if len(flat) == 1 and len(leaves) != 1 and isinstance(flat[0], BlockSpec):
        flat = flat * len(leaves)
    if len(flat) != len(leaves):
        raise ValueError(f"pallas_call: {len(flat)} {what} for {len(leaves)} arrays")
    return flat


def pallas_call(kernel, out_shape, *, grid_spec=None, grid=(), in_specs=None, out_specs=None, scratch_shapes=(),
                input_output_aliases=None, debug=False, interpret=False, name=None, compiler_params=None,
                cost_estimate=None, metadata=None):
    """A function of the kernel's inputs running `kernel(*input_refs, *output_refs)` at every point of `grid`,
    whose results have the shapes and dtypes of `out_shape` (a ShapeDtypeStruct, or a pytree of them)."""
    del debug, compiler_params, cost_estimate, metadata
    if isinstance(grid_spec, GridSpec):
        grid, in_specs, out_specs, scratch_shapes = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs, \
            grid_spec.scratch_shapes
    if scratch_shapes:
        raise NotImplementedError("pallas_call: scratch_shapes")
    grid = (grid,) if isinstance(grid, int | np.integer) else tuple(grid)
    if not all(isinstance(g, int | np.integer) and g >= 0 for g in grid):
        raise ValueError(f"pallas_call: the grid must be static non-negative ints, got {grid}")
    grid = tuple(int(g) for g in grid)
    kernel_name = name or getattr(kernel, "__name__", "kernel")
    aliases = dict(input_output_aliases or {})

    def call(*args):
        if not interpret:
            _check_interpretable()
        arg_leaves, in_tree = tree.tree_flatten(args)
        leaves = [xnp.asarray(a) for a in arg_leaves]
        out_leaves, out_tree = tree.tree_flatten(out_shape)
        in_maps = [BlockMapping.of(spec, get_aval_of(a).shape, f"{kernel_name}: input {i}")
                   for i, (spec, a) in enumerate(zip(_specs(in_specs, args, "in_specs"), leaves))]
        out_maps = [BlockMapping.of(spec, o.shape, f"{kernel_name}: output {i}")
                    for i, (spec, o) in enumerate(zip(_specs(out_specs, out_shape, "out_specs"), out_leaves))]
        starts_out = []
        for i, o in enumerate(out_leaves):
            source = [j for j, k in aliases.items() if k == i]
            starts_out.append(leaves[source[0]] if source else uninitialized(o.shape, o.dtype))
        buffers = [new_ref(_padded(value, mapping)) for value, mapping in zip(leaves + starts_out,
                                                                              in_maps + out_maps)]
        mappings = in_maps + out_maps

        def run_point(flat_index, carry):
            ids = _unraveled(flat_index, grid)
            with _grid_point(ids, grid):
                starts = [[lax.convert_element_type(x, np.int32) for x in m.starts(ids)] for m in mappings]
                blocks = [KernelRef(lax.dynamic_slice(buffer[...], s, m.sizes).reshape(m.block_shape))
                          for buffer, m, s in zip(buffers, mappings, starts)]
                kernel(*_kernel_arguments(blocks, len(leaves), in_tree, out_tree, out_shape))
            for buffer, block, m, s in zip(buffers, blocks, mappings, starts):
                buffer[...] = lax.dynamic_update_slice(buffer[...], freeze(block).reshape(m.sizes), s)
            return carry

        points = math.prod(grid)
        if points == 1:
            run_point(np.int32(0), 0)
        elif points:
            lax.fori_loop(0, points, run_point, 0)
        results = []
        for buffer, o, m in zip(buffers[len(leaves):], out_leaves, out_maps):
            value = freeze(buffer)
            results.append(value if tuple(value.shape) == tuple(o.shape) else read(
                value, tuple(slice(low, low + d) for d, (low, _) in zip(o.shape, m.padding))))
        return out_tree.unflatten(results)

    return call


def _kernel_arguments(refs, inputs, in_tree, out_tree, out_shape):
    """The kernel's arguments, as JAX passes them: a ref per input leaf in the inputs' structure, then the outputs'
    refs, spread where out_shape is a tuple or list."""
    outputs = out_tree.unflatten(refs[inputs:])
    return (*in_tree.unflatten(refs[:inputs]), *(outputs if isinstance(out_shape, tuple | list) else (outputs,)))


def _check_interpretable():
    """Without interpret=True, a call is refused as JAX refuses it: on a CPU only interpret mode exists, and numax
    has no compiled (Triton) lowering of kernels yet."""
    from numax.lowering import xla

    if xla.default_backend().platform == "cpu":
        raise ValueError("Only interpret mode is supported on CPU backend.")
    raise NotImplementedError("numax compiles no Pallas kernels for GPUs yet: pass interpret=True to pallas_call")


def _padded(value, mapping):
    """`value` padded by its Element paddings and at the end of each dimension to whole blocks, with uninitialized
    values."""
    target = mapping.padded_shape()
    if target == tuple(value.shape):
        return value
    padded = uninitialized(target, value.dtype)
    return lax.dynamic_update_slice(padded, value, [low for low, _ in mapping.padding])


def _unraveled(flat_index, grid):
    """The program ids of grid point `flat_index` (row-major: the last axis fastest), int32 scalars."""
    flat_index = lax.convert_element_type(flat_index, np.int32)
    ids = []
    for size in reversed(grid):
        ids.append(flat_index % size)
        flat_index = flat_index // size
    return tuple(reversed(ids))
