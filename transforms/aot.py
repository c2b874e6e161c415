"""Ahead-of-time compilation, as JAX's AOT API: `jit(f).trace(...)` gives a `Traced`, `.lower()` a `Lowered`,
`.compile()` a `Compiled`; arguments may be `ShapeDtypeStruct`s, so nothing needs data until the call.

Owns those three stages, `ShapeDtypeStruct`, `ArgInfo`, and `ClosedJaxpr` (a traced program under jax's
ClosedJaxpr names, which `Traced.jaxpr` is). Knows nothing of jit's cache: `Traced.lower` goes back to the jit
function for placement, shardings and fusion. `Lowered.compiler_ir()` is an MLIR module object from jaxlib's MLIR
Python bindings (numax imports jaxlib, never jax).
"""

import numpy as np

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import ShapedArray, get_aval
from ..core.ir import ClosedProgram
from ..core.sharding import SingleDeviceSharding
from ..core.trace import Tracer
from ..lowering import dispatch, sharded, xla
from ..lowering.lower import lower_to_module


class ShapeDtypeStruct:
    """A shape and dtype standing for an array (what `eval_shape` returns, and a valid jit argument)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None):
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)  # (typed keys' key<fry>)
        self.weak_type = weak_type
        self.sharding = sharding  # a Sharding (NamedSharding over a Mesh or AbstractMesh) or None; export reads it

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def aval(self):
        return ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

    @classmethod
    def like(cls, x):
        """The struct of `x` (an array, tracer, scalar, numpy array or anything with `shape` and `dtype`): its
        shape, dtype as numax computes in it, and weak type. (numax's structs carry no sharding: jit reads an
        argument's layout from the array itself.)"""
        aval = x.aval if isinstance(x, ShapeDtypeStruct) else _abstract(x)
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type, self.sharding)
                == (other.shape, other.dtype, other.weak_type, other.sharding))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type, self.sharding))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak}{sharding})"


def _abstract(x):
    if isinstance(x, Tracer) or hasattr(x, "aval"):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)) or type(x) in dtypes.python_scalar_types:
        return get_aval(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype), bool(getattr(x, "weak_type", False)))
    return get_aval(np.asarray(x))


# --- jax's names for a traced program ----------------------------------------------------------------------
class ClosedJaxpr(ClosedProgram):
    """What `Traced.jaxpr` is: a ClosedProgram (usable wherever one is) that also answers to jax's ClosedJaxpr
    names: `.jaxpr` (with `constvars`, `invars`, `outvars`, `eqns`), `.eqns`, `.consts` (also `.literals`),
    `.in_avals`, `.out_avals`."""

    __slots__ = ()

    @property
    def jaxpr(self):
        return Jaxpr(self.program)

    @property
    def eqns(self):
        return self.jaxpr.eqns

    @property
    def literals(self):
        return self.consts


class Jaxpr:
    """A numax Program under jax's Jaxpr names (a view: the program is not copied); prints as the program."""

    __slots__ = ("program",)

    def __init__(self, program):
        self.program = program

    constvars = property(lambda self: self.program.constvars)
    invars = property(lambda self: self.program.invars)
    outvars = property(lambda self: self.program.outvars)
    in_avals = property(lambda self: self.program.in_avals)
    out_avals = property(lambda self: self.program.out_avals)

    @property
    def eqns(self):
        return [JaxprEqn(equation) for equation in self.program.equations]

    def __str__(self):
        return str(self.program)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)


class JaxprEqn:
    """An equation under jax's JaxprEqn names: `primitive` (with `.name`), `params`, `invars`, `outvars`."""

    __slots__ = ("equation",)

    def __init__(self, equation):
        self.equation = equation

    primitive = property(lambda self: self.equation.primitive)
    params = property(lambda self: self.equation.params)
    invars = property(lambda self: self.equation.inputs)
    outvars = property(lambda self: self.equation.outvars)

    def __repr__(self):
        return repr(self.equation)


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
        self.jaxpr = ClosedJaxpr(closed.program, closed.consts)
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

    def as_text(self, dialect="stablehlo", *, debug_info=False):
        """The StableHLO module as text (numax lowers to StableHLO), or with `dialect="hlo"` XLA's HLO text
        converted from it, as jax's. numax's modules carry no source locations, so `debug_info=True` (jax's,
        which adds them) gives the same StableHLO text."""
        if _check_dialect(dialect) == "hlo":
            return xla.hlo_text(self.as_text(), debug_info)
        if self._text is None:
            mesh = sharded.program_mesh(self.closed.program, self.in_shardings, self.out_shardings)
            if mesh is not None:  # partitioned over the mesh's devices
                self._text = sharded.lower_partitioned(
                    self.closed, self.name, mesh, self.in_shardings or [None] * len(self.closed.program.invars),
                    self.out_shardings or [None] * len(self.closed.program.outvars), self.backend.platform)[0]
            else:  # constants are written into the module so that the text is self-contained
                self._text, _ = lower_to_module(self.closed, self.name, self.backend.platform, self.arg_attributes)
        return self._text

    def compiler_ir(self, dialect=None):
        """The lowered module as an MLIR module object (`jaxlib.mlir.ir.Module`, parsed by jaxlib's MLIR Python
        bindings, which come with every jaxlib; `str()` of it is the text), as jax returns; only where the
        bindings cannot be imported, the StableHLO text itself. `dialect="hlo"`: the XLA HLO computation
        converted from it (jaxlib's XlaComputation), as jax's."""
        if _check_dialect(dialect) == "hlo":
            return xla.hlo_computation(self.as_text())
        try:
            return xla.parse_module(self.as_text())
        except ImportError:
            return self.as_text()

    def cost_analysis(self):
        """XLA's cost estimates of the lowered module before optimization (a dict: 'flops', 'transcendentals',
        'bytes accessed', ...), as jax's; None where the runtime gives none. `compile().cost_analysis()` gives
        the optimized program's."""
        return xla.hlo_cost_analysis(self.backend, self.as_text())

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

    @property
    def input_shardings(self):
        """Each argument's sharding, as (positional, keyword) trees of the lowered arguments, as jax's."""
        shardings = getattr(self.executable, "in_shardings", None)
        return self.in_tree.unflatten(self._leaf_shardings(shardings, len(self._in_avals)))

    @property
    def output_shardings(self):
        """Each result's sharding, in the results' tree."""
        shardings = getattr(self.executable, "out_shardings", None)
        return self.out_tree.unflatten(self._leaf_shardings(shardings, len(self._out_avals)))

    def _leaf_shardings(self, shardings, count):
        if shardings:  # (a program over several devices: the layouts XLA takes and gives)
            return list(shardings)
        device = self.executable.device or self.executable.backend.default_device
        return [SingleDeviceSharding(device)] * count

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


def _check_dialect(dialect):
    """The dialect asked for ("stablehlo" when None); ValueError for one jax does not know, in jax's words."""
    if dialect not in (None, "stablehlo", "hlo"):
        raise ValueError(f"unknown dialect: {dialect}")
    return dialect or "stablehlo"


def _argument_name(path):
    """`args[0]['w']` or `kwargs['x']` for a leaf's path in `(args, kwargs)`."""
    first, rest = path[0].idx, tree.keystr(path[1:])
    return f"args{rest}" if first == 0 else f"kwargs{rest}"
