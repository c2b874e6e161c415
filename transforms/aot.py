"""Ahead-of-time compilation, as JAX's AOT API: `jit(f).trace(...)` gives a `Traced`, `.lower()` a `Lowered`,
`.compile()` a `Compiled`; arguments may be `ShapeDtypeStruct`s, so nothing needs data until the call.

Owns those three stages, `ShapeDtypeStruct` and `ArgInfo`. Knows nothing of jit's cache: `Traced.lower`
goes back to the jit function for placement, shardings and fusion.
"""

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import ShapedArray, get_aval
from ..core.trace import Tracer
from ..lowering import dispatch, sharded
from ..lowering.lower import lower_to_module


class ShapeDtypeStruct:
    """A shape and dtype standing for an array (what `eval_shape` returns, and a valid jit argument)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def aval(self):
        return ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


class ArgInfo:
    """One argument leaf of a lowered function: its `shape`, `dtype` and whether it is `donated`."""

    __slots__ = ("shape", "dtype", "weak_type", "donated")

    def __init__(self, aval, donated):
        self.shape, self.dtype, self.weak_type, self.donated = aval.shape, aval.dtype, aval.weak_type, donated

    def __repr__(self):
        return f"ArgInfo(shape={self.shape}, dtype={self.dtype.name}, donated={self.donated})"


def _args_info(in_tree, in_avals, donated):
    donated = donated or [False] * len(in_avals)
    return in_tree.unflatten([ArgInfo(aval, bool(d)) for aval, d in zip(in_avals, donated)])


def _out_info(out_tree, out_avals):
    return out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in out_avals])


class _Stage:
    """What every stage tells about the function's signature: `in_tree` (of the non-static `(args, kwargs)`),
    `out_tree`, `args_info` and `out_info`."""

    @property
    def args_info(self):
        return _args_info(self.in_tree, self._in_avals, self.donated)

    @property
    def out_info(self):
        return _out_info(self.out_tree, self._out_avals)


class Traced(_Stage):
    """A jit function traced for some arguments: `.jaxpr` is its program; `.lower()` lowers it."""

    def __init__(self, function, closed, in_tree, out_tree, donated, args, kwargs):
        self.function = function
        self.jaxpr = closed
        self.in_tree, self.out_tree, self.donated = in_tree, out_tree, donated
        self.args, self.kwargs = args, kwargs
        self._in_avals, self._out_avals = closed.program.in_avals, closed.program.out_avals

    def lower(self):
        return self.function.lower_traced(self)


class Lowered(_Stage):
    """A traced and lowered jit function: `as_text()` is its StableHLO; `compile()` compiles it."""

    def __init__(self, name, closed, in_tree, out_tree, arg_attributes, backend, device, compiler_options=None,
                 shardings=((), ()), kernels=(), donated=None):
        self.name = name
        self.kernels = list(kernels)
        self.in_shardings, self.out_shardings = shardings
        self.closed = closed
        self.in_tree, self.out_tree, self.donated = in_tree, out_tree, donated
        self._in_avals, self._out_avals = closed.program.in_avals, closed.program.out_avals
        self.arg_attributes = arg_attributes
        self.backend = backend
        self.device = device
        self.compiler_options = compiler_options
        self._text = None

    def as_text(self, dialect="stablehlo"):
        if self._text is None:
            mesh = sharded.program_mesh(self.closed.program, self.in_shardings, self.out_shardings)
            if mesh is not None:  # partitioned over the mesh's devices
                self._text = sharded.lower_partitioned(
                    self.closed, self.name, mesh, self.in_shardings or [None] * len(self.closed.program.invars),
                    self.out_shardings or [None] * len(self.closed.program.outvars), self.backend.platform)[0]
            else:  # constants are written into the module so that the text is self-contained
                self._text, _ = lower_to_module(self.closed, self.name, self.backend.platform, self.arg_attributes)
        return self._text

    def compile(self, compiler_options=None):
        """Compiles for the lowered placement; `compiler_options` add to (and override) the jit's."""
        options = {**(self.compiler_options or {}), **(compiler_options or {})} or None
        executable = dispatch.compile_program(self.closed, self.name, self.backend, self.device,
                                              arg_attributes=self.arg_attributes, compiler_options=options,
                                              in_shardings=self.in_shardings, out_shardings=self.out_shardings)
        return Compiled(executable, self.in_tree, self.out_tree, self.donated)

    @property
    def jaxpr(self):
        return self.closed

    def triton_kernels(self):
        """The Triton kernels generated for this program's fused regions (with `fusion="triton"`): objects with
        `name`, `equations` (the region's equations as program text) and `source` (the kernel's Triton source)."""
        return list(self.kernels)


class Compiled(_Stage):
    """A compiled jit function: called with the lowered arguments, static ones left out, whose structure,
    shapes and dtypes must be the lowered ones exactly (a TypeError otherwise, as in JAX)."""

    def __init__(self, executable, in_tree, out_tree, donated=None):
        self.executable = executable
        self.in_tree, self.out_tree, self.donated = in_tree, out_tree, donated
        self._in_avals, self._out_avals = executable.in_avals, executable.out_avals

    def __call__(self, *args, **kwargs):
        paths_and_leaves, in_tree = tree.tree_flatten_with_path((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"Function compiled with input pytree {self.in_tree} was called with the input pytree "
                            f"{in_tree}; pass the arguments structured as at lowering (static ones left out)")
        mismatches = []
        for (path, leaf), aval in zip(paths_and_leaves, self._in_avals):
            if isinstance(leaf, Tracer):
                raise TypeError("a Compiled function cannot be called on traced values (inside jit, grad or vmap); "
                                "call the jit function itself there")
            given = get_aval(leaf)
            if (given.shape, given.dtype) != (aval.shape, aval.dtype):
                mismatches.append(f"argument {_argument_name(path)} compiled with {aval.str_short()} and called "
                                  f"with {given.str_short()}")
        if mismatches:
            raise TypeError("Argument types differ from the types for which this computation was compiled: "
                            + "; ".join(mismatches))
        return self.out_tree.unflatten(self.executable(*(leaf for _, leaf in paths_and_leaves)))

    def as_text(self):
        return self.executable.hlo_text()

    def cost_analysis(self):
        """XLA's cost estimates of the executable (a dict: 'flops', 'bytes accessed', ...), or None where the
        runtime gives none."""
        compiled = getattr(self.executable, "compiled", None)
        return compiled.cost_analysis() if hasattr(compiled, "cost_analysis") else None

    def memory_analysis(self):
        """XLA's memory statistics of the executable (argument_size_in_bytes, output_size_in_bytes,
        temp_size_in_bytes, generated_code_size_in_bytes, ...), or None where the runtime gives none."""
        compiled = getattr(self.executable, "compiled", None)
        return compiled.get_compiled_memory_stats() if hasattr(compiled, "get_compiled_memory_stats") else None


def _argument_name(path):
    """`args[0]['w']` or `kwargs['x']` for a leaf's path in `(args, kwargs)`."""
    first, rest = path[0].idx, tree.keystr(path[1:])
    return f"args{rest}" if first == 0 else f"kwargs{rest}"
