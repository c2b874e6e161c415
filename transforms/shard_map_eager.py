"""Eager shard_map: a shard_map called outside every transformation runs its function once, in Python, on
per-device values, as JAX's does; `print(x)` in the body shows each device's block.

Owns the eager trace and its tracers. A tracer stands for one block per device, held in one of two forms:
`const`, a value that is the same on every device (an argument whose in_spec names no mesh axis, a closed-over
array, a Python scalar), or `stacked`, a global array of shape (n, *block) whose dimension 0 is split over the mesh
axes `axes` the value varies over (n their total size): each device's block is its row. With check_vma=False the
values are untyped and a stacked one is split over every manual axis.

Each primitive applied to these tracers runs as a one-equation shard_map (`shard_map_p`,
compiled over the mesh): stacked operands are passed split by their axes and lose dimension 0 in the body, const
ones are passed whole; the result varies over the axes its type says (check_vma), so collectives, control flow
holding collectives and everything else keep the compiled path's semantics. A primitive on const operands alone
that involves no mesh axis runs once, as an ordinary eager operation. The traced one-equation programs are
cached by (primitive, params, operand types, forms), so a loop in the body compiles each operation once.

This module must not know how shard_map lowers or differentiates: it takes the primitive and its specs' meaning from
shard_map_specs.py, and transforms/shard_map.py (which gives the primitive its rules) calls `run_eager`.
"""

import numpy as np

from ..core import caches, dtypes, errors
from ..core import pytree as tree
from ..core.sharding import P
from ..core.staging import hoist_tracer_consts, trace_to_program
from ..core.trace import Trace, Tracer, ensure_compile_time_eval, get_aval_of, new_main
from ..lax.shapes import reshape
from ..lowering.array import Array
from .shard_map_specs import _mesh_axes_bound, _named_axes_of, _shard_aval, shard_map_p

__all__ = ["run_eager"]


class _EagerMapData:
    """The eager trace's private data: the mesh, the manual axes and whether values are typed by vma."""

    __slots__ = ("mesh", "manual_axes", "check_vma")

    def __init__(self, mesh, manual_axes, check_vma):
        self.mesh, self.manual_axes, self.check_vma = mesh, manual_axes, check_vma


def _dim0_spec(axes):
    """The spec of a stacked value: dimension 0 split over `axes` (mesh order)."""
    if not axes:
        return P()
    return P(tuple(axes))  # (P keeps a 1-tuple as its axis)


class EagerShardMapTracer(Tracer):
    """One block per device: `const` (the same on every device) or `stacked` over `axes` (see the module doc)."""

    __slots__ = ("const", "stacked", "axes", "_aval")

    def __init__(self, trace, const=None, stacked=None, axes=()):
        self._trace = trace
        self.const, self.stacked, self.axes = const, stacked, axes
        data = trace.main.global_data
        if stacked is None:
            self._aval = get_aval_of(const).update(vma=frozenset())
        else:
            aval = get_aval_of(stacked)
            self._aval = aval.update(shape=aval.shape[1:], vma=frozenset(axes) if data.check_vma else frozenset())

    @property
    def aval(self):
        return self._aval

    def to_concrete_value(self):
        # As in JAX, a value is known at trace time only when it is the same on every device.
        if self.stacked is None:
            return self.const
        return None

    def __array__(self, dtype=None, copy=None):
        # As in JAX, even a value the same on every device is not converted to a host array.
        raise errors.TracerArrayConversionError(self)

    def device_blocks(self):
        """[(device, mesh coordinates, block as a numpy array)] in the mesh's device order."""
        mesh = self._trace.main.global_data.mesh
        if self.stacked is None:
            block = np.asarray(self.const)
            return [(device, index, block) for index, device in np.ndenumerate(mesh.devices)]
        rows = np.asarray(self.stacked)
        names = list(mesh.axis_names)
        positions = [names.index(axis) for axis in self.axes]
        sizes = [mesh.devices.shape[p] for p in positions]
        out = []
        for index, device in np.ndenumerate(mesh.devices):
            row = int(np.ravel_multi_index([index[p] for p in positions], sizes)) if positions else 0
            out.append((device, index, rows[row]))
        return out

    def __str__(self):
        mesh = self._trace.main.global_data.mesh
        names = f"({', '.join(map(str, mesh.axis_names))},)"
        return "\n".join(f"On {device} at mesh coordinates {names} = {index}:\n{block}\n"
                         for device, index, block in self.device_blocks())

    __repr__ = __str__


class EagerShardMapTrace(Trace):
    """Runs each primitive on every device's blocks at once (a one-equation shard_map)."""

    __slots__ = ()

    def pure(self, value):
        return EagerShardMapTracer(self, const=value)

    def lift(self, tracer):
        raise AssertionError("an eager shard_map runs only outside every transformation")

    def process_primitive(self, primitive, tracers, params):
        data = self.main.global_data
        if all(t.stacked is None for t in tracers) and not set(primitive.named_axes(params)) & set(
                data.mesh.axis_names):
            with ensure_compile_time_eval():  # the same on every device: computed once
                outs = primitive.bind(*(t.const for t in tracers), **params)
            wrap = [EagerShardMapTracer(self, const=o) for o in (outs if primitive.multiple_results else [outs])]
            return wrap if primitive.multiple_results else wrap[0]
        # Python scalars become literals of the program (no transfer per application); the rest are operands.
        literals = tuple(_literal_key(t.const) if t.stacked is None else None for t in tracers)
        operands = [t.const if t.stacked is None else t.stacked for t, lit in zip(tracers, literals) if lit is None]
        forms = tuple(None if t.stacked is None else t.axes for t, lit in zip(tracers, literals) if lit is None)
        literal_values = [t.const for t, lit in zip(tracers, literals) if lit is not None]
        closed, out_specs, out_axes = _one_equation_program(data, primitive, params, operands, forms, literals,
                                                            literal_values)
        outs = _bind_compiled(data, closed, operands, [P() if f is None else _dim0_spec(f) for f in forms],
                              out_specs)
        wrap = [EagerShardMapTracer(self, const=o) if axes is None else EagerShardMapTracer(self, stacked=o, axes=axes)
                for o, axes in zip(outs, out_axes)]
        return wrap if primitive.multiple_results else wrap[0]


# --- compiled shard_maps over stacked values ------------------------------------------------------------------
_programs = caches.ComputeOnceCache()


@caches.register
def _clear_caches():
    _programs.clear()


def _axes_of(data, aval):
    """The mesh axes (mesh order) along which a value of the body's type `aval` varies: its vma (check_vma), else
    every manual axis."""
    if not data.check_vma:
        return tuple(data.manual_axes)
    return tuple(axis for axis in data.mesh.axis_names if axis in aval.vma)


def _trace_blocks(data, body, avals):
    """Traces `body` on the blocks of operands of global types `avals` laid out by specs; returns ClosedProgram."""
    with _mesh_axes_bound(data.mesh, data.check_vma):
        program, consts = trace_to_program(body, avals)
    closed, hoisted = hoist_tracer_consts(program, consts)
    assert not hoisted, "an eager shard_map's one-equation program closes over no tracer"
    return closed


def _block_aval(data, aval, axes):
    vma = frozenset(axes) if data.check_vma else frozenset()
    return aval.update(shape=(1,) + aval.shape[1:] if axes else aval.shape, vma=vma)


def _literal_key(value):
    """A key telling scalars apart by type and exact value (0.0 from -0.0, 1 from True) for a Python scalar or a
    0-d Array, which a program holds as a constant (transferred once, with its executable); None for other
    values."""
    if type(value) in dtypes.python_scalar_types:
        return type(value), repr(value)
    if type(value) is Array and value.ndim == 0:
        return value.dtype, value.weak_type, repr(np.asarray(value).item())
    return None


def _one_equation_program(data, primitive, params, operands, forms, literals, literal_values):
    """(ClosedProgram, out specs, out forms) of `primitive` applied to blocks: a stacked operand's block has its
    dimension 0 of size 1 dropped; a result that varies over no axis is left whole (a const), the others get it.
    `literals` has, per operand of the primitive, the key of the scalar constant it is (the next of
    `literal_values`), or None (the next of `operands`)."""
    avals = [get_aval_of(o) for o in operands]
    block_avals = [aval if form is None else _block_aval(data, aval, form) for aval, form in zip(avals, forms)]

    def compute():
        def body(*blocks):
            given = iter(b if form is None else reshape(b, b.shape[1:]) for b, form in zip(blocks, forms))
            constants = iter(literal_values)
            values = [next(given) if lit is None else next(constants) for lit in literals]
            outs = primitive.bind(*values, **params)
            outs = list(outs) if primitive.multiple_results else [outs]
            axes = [_axes_of(data, get_aval_of(o)) for o in outs]
            body.axes = [a if a else None for a in axes]
            return [reshape(o, (1,) + tuple(o.shape)) if a else o for o, a in zip(outs, axes)]

        closed = _trace_blocks(data, body, block_avals)
        return closed, tuple(P() if a is None else _dim0_spec(a) for a in body.axes), body.axes

    key = (primitive, tuple(params.items()), tuple(block_avals), forms, literals, data.mesh,
           tuple(data.manual_axes), data.check_vma)
    try:
        hash(key)
    except TypeError:  # unhashable params: traced on every application
        return compute()
    return _programs.get(key, compute)


def _bind_compiled(data, closed, operands, in_specs, out_specs):
    with ensure_compile_time_eval():  # run now, over the mesh
        return shard_map_p.bind(*operands, program=closed, mesh=data.mesh, in_specs=tuple(in_specs),
                                out_specs=tuple(out_specs), manual_axes=tuple(data.manual_axes),
                                check_vma=data.check_vma)


def _stack(trace, value, spec):
    """The tracer for an argument laid out by `spec`: a const when the spec names no axis (check_vma), else each
    device's block stacked along a new dimension 0."""
    data = trace.main.global_data
    named = _named_axes_of(spec)
    axes = tuple(a for a in data.mesh.axis_names if a in named) if data.check_vma else tuple(data.manual_axes)
    if not axes:
        return EagerShardMapTracer(trace, const=value)
    aval = get_aval_of(value)

    def compute():
        block = _shard_aval(data.mesh, spec, aval, data.check_vma)
        return _trace_blocks(data, lambda b: [reshape(b, (1,) + tuple(b.shape))], [block])

    key = ("stack", aval, spec, data.mesh, tuple(data.manual_axes), data.check_vma)
    (stacked,) = _bind_compiled(data, _programs.get(key, compute), [value], [spec], [_dim0_spec(axes)])
    return EagerShardMapTracer(trace, stacked=stacked, axes=axes)


def _unstack(data, tracer, spec):
    """The global value of an output laid out by `spec` from its per-device blocks."""
    if tracer.stacked is None:
        value, form, in_spec = tracer.const, None, P()
    else:
        value, form, in_spec = tracer.stacked, tracer.axes, _dim0_spec(tracer.axes)
    aval = get_aval_of(value)

    def compute():
        block = aval if form is None else _block_aval(data, aval, form)
        return _trace_blocks(data, lambda b: [b if form is None else reshape(b, b.shape[1:])], [block])

    key = ("unstack", aval, form, spec, data.mesh, tuple(data.manual_axes), data.check_vma)
    (out,) = _bind_compiled(data, _programs.get(key, compute), [value], [in_spec], [spec])
    return out


def run_eager(fun, mesh, manual_axes, check_vma, in_tree, dynamic, static, in_specs, arguments, out_specs_of,
              check_outputs):
    """Calls `fun` once on per-device tracers of `arguments` (laid out by `in_specs`; `static` leaves are passed as
    they are) and returns its outputs put together by their out specs. `out_specs_of(out)` gives the out specs per
    output leaf; `check_outputs(out block avals, out specs)` raises shard_map's errors for outputs that do not fit
    their specs."""
    data = _EagerMapData(mesh, manual_axes, check_vma)
    with new_main(EagerShardMapTrace, data, dynamic=True) as main, _mesh_axes_bound(mesh, check_vma):
        trace = EagerShardMapTrace(main)
        blocks = iter([_stack(trace, value, spec) for value, spec in zip(arguments, in_specs)])
        constants = iter(static)
        leaves = [next(blocks) if is_dynamic else next(constants) for is_dynamic in dynamic]
        out = fun(*in_tree.unflatten(leaves))
        out_leaves, out_tree = tree.tree_flatten(out)
        out_specs = out_specs_of(out)
        out_tracers = [trace.full_raise(leaf) for leaf in out_leaves]
        check_outputs([t.aval for t in out_tracers], out_specs)
        results = [_unstack(data, t, spec) for t, spec in zip(out_tracers, out_specs)]
    return out_tree.unflatten(results)
