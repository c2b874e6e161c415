"""Differential testing of numax against jax: seeded random programs run under both, compared.

A program is a short chain of operations drawn from `OPS` (numax.numpy / numax.lax functions and their jax
twins), over random inputs of random shapes and dtypes (bool, int8, int32, uint8, float16, bfloat16, float32,
complex64) and Python scalars. `generate(seed, x64)` builds one, choosing each step's operands and parameters
by running jax on the way (so steps fit the shapes and dtypes they meet); a step that jax rejects may end the
program, so that error classes are compared too. `check(program)` runs it under numax and jax in every
transform (eager, jit, vmap, grad, jvp) and returns the mismatches: result dtype, weak type, shape, values
(to a tolerance per dtype) and error class (where jax raises, numax must raise the same built-in class).

Used by tests/test_differential_jax.py (a fixed set of programs) and bench/differential_jax.py (long runs).
"""

import contextlib
import dataclasses
import random

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

import numax
import numax.numpy as xnp

DTYPES = ["bool", "int8", "int32", "uint8", "float16", "bfloat16", "float32", "complex64"]
SCALARS = [True, 2, -1, 0, 0.5, 2.5, 1.5 - 0.5j]
SHAPES = [(), (3,), (2, 3), (1, 3), (3, 1), (2, 1, 3)]
TRANSFORMS = ("eager", "jit", "vmap", "grad", "jvp")


@dataclasses.dataclass(frozen=True)
class Library:
    """One side of the comparison: its numpy, lax and nn modules and its transforms."""
    name: str
    np: object
    lax: object
    nn: object
    api: object


JAX = Library("jax", jnp, jax.lax, jax.nn, jax)
NUMAX = Library("numax", xnp, numax.lax, numax.nn, numax)


# --- the operation table ----------------------------------------------------------------------------------
# Each operation: (name, arity, function(library, *operands, **params), parameters(rng, operand ranks)).
def _no_params(rng, ranks):
    return {}


def _axis(rng, ranks, allow_none=True):
    rank = ranks[0]
    choices = ([None] if allow_none else []) + list(range(-rank, rank))
    return rng.choice(choices) if choices else None


def _reduction_params(rng, ranks):
    return {"axis": _axis(rng, ranks), "keepdims": rng.random() < 0.3}


def _var_params(rng, ranks):
    return {"axis": _axis(rng, ranks), "ddof": rng.choice([0, 1, 2, 3]), "keepdims": rng.random() < 0.3}


def _sum_params(rng, ranks):
    params = _reduction_params(rng, ranks)
    if rng.random() < 0.3:
        params["dtype"] = rng.choice(DTYPES)
    return params


def _cumulative_params(rng, ranks):
    return {"axis": _axis(rng, ranks, allow_none=ranks[0] == 0) if ranks[0] else 0, "reverse": rng.random() < 0.5}


def _np_unary(name):
    return (name, 1, lambda L, x: getattr(L.np, name)(x), _no_params)


def _np_binary(name):
    return (name, 2, lambda L, x, y: getattr(L.np, name)(x, y), _no_params)


def _lax_cumulative(name):
    return (f"lax.{name}", 1, lambda L, x, axis, reverse: getattr(L.lax, name)(x, axis=axis, reverse=reverse),
            _cumulative_params)


def _np_reduction(name, params=_reduction_params):
    return (name, 1, lambda L, x, **kw: getattr(L.np, name)(x, **kw), params)


OPS = [
    *(_np_unary(n) for n in ["sin", "cos", "tanh", "exp", "log", "sqrt", "abs", "negative", "sign", "floor", "ceil",
                             "square", "reciprocal", "logical_not", "isnan", "isfinite", "exp2", "log1p", "expm1",
                             "arctan", "sinh", "conj", "real", "imag", "rint", "trunc", "cbrt", "invert",
                             "positive", "sort_complex", "deg2rad", "signbit", "fabs", "log2"]),
    *(_np_binary(n) for n in ["add", "subtract", "multiply", "true_divide", "floor_divide", "power", "maximum",
                              "minimum", "fmod", "remainder", "arctan2", "hypot", "heaviside", "logaddexp", "equal",
                              "less", "greater_equal", "logical_and", "logical_xor", "bitwise_and", "bitwise_or",
                              "ldexp", "copysign", "float_power", "fmax", "divmod"]),
    ("where", 3, lambda L, c, x, y: L.np.where(c, x, y), _no_params),
    ("clip", 3, lambda L, x, lo, hi: L.np.clip(x, lo, hi), _no_params),
    *(_np_reduction(n) for n in ["max", "min", "mean", "all", "any", "ptp", "count_nonzero"]),
    *(_np_reduction(n, _sum_params) for n in ["sum", "prod"]),
    *(_np_reduction(n, _var_params) for n in ["var", "std"]),
    ("median", 1, lambda L, x, **kw: L.np.median(x, **kw), _reduction_params),
    ("argmax", 1, lambda L, x, axis: L.np.argmax(x, axis=axis), lambda rng, ranks: {"axis": _axis(rng, ranks)}),
    ("cumsum", 1, lambda L, x, axis: L.np.cumsum(x, axis=axis), lambda rng, ranks: {"axis": _axis(rng, ranks)}),
    ("cumprod", 1, lambda L, x, axis: L.np.cumprod(x, axis=axis), lambda rng, ranks: {"axis": _axis(rng, ranks)}),
    ("sort", 1, lambda L, x, axis: L.np.sort(x, axis=axis), lambda rng, ranks: {"axis": _axis(rng, ranks)}),
    ("around", 1, lambda L, x, decimals: L.np.around(x, decimals=decimals),
     lambda rng, ranks: {"decimals": rng.choice([-1, 0, 1])}),
    ("astype", 1, lambda L, x, dtype: L.np.asarray(x).astype(dtype), lambda rng, ranks: {"dtype": rng.choice(DTYPES)}),
    ("full_like", 2, lambda L, x, v: L.np.full_like(x, v), _no_params),
    ("zeros_like", 1, lambda L, x: L.np.zeros_like(x), _no_params),
    ("reshape", 1, lambda L, x: L.np.reshape(x, (-1,)), _no_params),
    ("transpose", 1, lambda L, x: L.np.transpose(x), _no_params),
    ("expand_dims", 1, lambda L, x: L.np.expand_dims(x, 0), _no_params),
    ("flip", 1, lambda L, x: L.np.flip(x), _no_params),
    ("concatenate", 2, lambda L, x, y: L.np.concatenate([L.np.atleast_1d(x), L.np.atleast_1d(y)], axis=0),
     _no_params),
    ("nonzero", 1, lambda L, x, size: L.np.nonzero(L.np.atleast_1d(x), size=size)[0],
     lambda rng, ranks: {"size": rng.choice([0, 2])}),
    ("gelu", 1, lambda L, x, approximate: L.nn.gelu(x, approximate=approximate),
     lambda rng, ranks: {"approximate": rng.random() < 0.5}),
    ("relu", 1, lambda L, x: L.nn.relu(x), _no_params),
    ("softplus", 1, lambda L, x: L.nn.softplus(x), _no_params),
    ("sigmoid", 1, lambda L, x: L.nn.sigmoid(x), _no_params),
    *(_lax_cumulative(n) for n in ["cumsum", "cummax", "cummin", "cumlogsumexp", "cumprod"]),
    ("lax.clamp", 3, lambda L, lo, x, hi: L.lax.clamp(lo, x, hi), _no_params),
    ("lax.integer_pow", 1, lambda L, x, y: L.lax.integer_pow(x, y), lambda rng, ranks: {"y": rng.choice([2, 3, -1])}),
    ("lax.convert_element_type", 1, lambda L, x, dtype: L.lax.convert_element_type(x, dtype),
     lambda rng, ranks: {"dtype": rng.choice(DTYPES)}),
    ("lax.square", 1, lambda L, x: L.lax.square(x), _no_params),
    ("lax.max", 2, lambda L, x, y: L.lax.max(x, y), _no_params),
    ("lax.rsqrt", 1, lambda L, x: L.lax.rsqrt(x), _no_params),
]
OPS_BY_NAME = {op[0]: op for op in OPS}


# --- programs ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Step:
    op: str
    operands: list  # ("input", i), ("step", j) or ("scalar", value)
    params: dict


@dataclasses.dataclass
class Program:
    seed: int
    x64: bool
    inputs: list  # numpy arrays (the vmap transform stacks each with a second sample)
    batch_inputs: list
    steps: list

    def describe(self):
        inputs = ", ".join(f"in{i}: {_dtype_name(x.dtype)}{list(x.shape)}" for i, x in enumerate(self.inputs))
        lines = [f"program seed={self.seed} x64={self.x64} ({inputs})"]
        for j, step in enumerate(self.steps):
            operands = ", ".join(_describe_operand(o) for o in step.operands)
            params = "".join(f", {k}={v!r}" for k, v in step.params.items())
            lines.append(f"  s{j} = {step.op}({operands}{params})")
        return "\n".join(lines)

    def function(self, library, every_step=False):
        """The program as a function of its inputs, written with `library`'s operations (returning the value
        of every step with `every_step`, else the last one)."""
        def run(*inputs):
            values = []
            for step in self.steps:
                operands = [_operand(o, inputs, values) for o in step.operands]
                out = OPS_BY_NAME[step.op][2](library, *operands, **step.params)
                values.append(out[0] if isinstance(out, tuple) else out)
            return values if every_step else values[-1]
        return run


def _dtype_name(dtype):
    return np.dtype(dtype).name


def _describe_operand(operand):
    kind, value = operand
    return {"input": f"in{value}", "step": f"s{value}"}.get(kind, repr(value))


def _operand(operand, inputs, values):
    kind, value = operand
    if kind == "input":
        return inputs[value]
    if kind == "step":
        return values[value]
    return value


@contextlib.contextmanager
def x64_mode(enabled):
    """64-bit mode on or off in both libraries, restored after."""
    saved = (jax.config.jax_enable_x64, numax.config.enable_x64)
    jax.config.update("jax_enable_x64", enabled)
    numax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", saved[0])
        numax.config.update("jax_enable_x64", saved[1])


def random_array(rng, shape, dtype):
    dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -4
        return rng.integers(low, 5, shape).astype(dtype)
    values = rng.uniform(-3, 3, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-3, 3, shape)
    return np.asarray(values).astype(dtype)


def _broadcastable_shape(rng, base):
    """`base`, or a shape that broadcasts to it (a suffix, or ones in some places)."""
    choice = rng.random()
    if choice < 0.6:
        return base
    if choice < 0.8:
        return base[rng.integers(0, len(base) + 1):]
    return tuple(1 if rng.random() < 0.5 else d for d in base)


def generate(seed, x64):
    """A random program, its steps checked against jax as they are drawn (see the module docstring)."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    base = SHAPES[rng.integers(len(SHAPES))]
    n_inputs = int(rng.integers(1, 3))
    shapes = [_broadcastable_shape(rng, base) for _ in range(n_inputs)]
    dtypes_ = [DTYPES[rng.integers(len(DTYPES))] for _ in range(n_inputs)]
    inputs = [random_array(rng, s, d) for s, d in zip(shapes, dtypes_)]
    batch_inputs = [np.stack([x, random_array(rng, x.shape, d)]) for x, d in zip(inputs, dtypes_)]
    program = Program(seed, x64, inputs, batch_inputs, [])
    n_steps = int(rng.integers(1, 4))
    with x64_mode(x64):
        step_values = []
        for _ in range(20):  # tries
            if len(program.steps) == n_steps:
                break
            name, arity, _, params_of = OPS[rng.integers(len(OPS))]
            operands = [_random_operand(rng, pick, len(inputs), len(program.steps), first=i == 0)
                        for i in range(arity)]
            ranks = [np.ndim(_operand(o, inputs, step_values)) for o in operands]
            step = Step(name, operands, params_of(pick, ranks))
            program.steps.append(step)
            try:
                step_values = program.function(JAX, every_step=True)(*inputs)
                jax.block_until_ready(step_values)
            except Exception:
                if rng.random() < 0.25:
                    break  # keep it: the program ends in an error both libraries must raise
                program.steps.pop()
                continue
        if not program.steps:
            program.steps.append(Step("negative", [("input", 0)], {}))
    return program


def _random_operand(rng, pick, n_inputs, n_steps, first):
    """The newest value mostly (programs are chains); sometimes an input, or a Python scalar (never first)."""
    choice = rng.random()
    if not first and choice < 0.3:
        return ("scalar", pick.choice(SCALARS))
    if n_steps and choice < 0.8:
        return ("step", n_steps - 1)
    return ("input", int(rng.integers(n_inputs)))


# --- running and comparing ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Mismatch:
    program: Program
    transform: str
    what: str

    def __str__(self):
        return f"[{self.transform}] {self.what}\n{self.program.describe()}"


def _builtin_class(error):
    return next(c for c in type(error).__mro__ if c.__module__ == "builtins").__name__


def _weak(value, library):
    return bool(getattr(value, "weak_type", False)) if library is NUMAX else bool(jax.typeof(value).weak_type)


def _first_inexact(program):
    """The index of the first real floating input (the one grad and jvp differentiate), or None."""
    for i, x in enumerate(program.inputs):
        if np.dtype(x.dtype).kind == "f" or x.dtype == ml_dtypes.bfloat16:
            return i
    return None


def transformed(program, library, transform):
    """(function, arguments) for one transform of the program under one library."""
    f = program.function(library, every_step=True)
    inputs = list(program.inputs)
    if transform == "eager":
        return f, inputs
    if transform == "jit":
        return library.api.jit(f), inputs
    if transform == "vmap":  # jitted: eager batching runs the same batching rules, one compile per op slower
        return library.api.jit(library.api.vmap(f)), list(program.batch_inputs)
    i = _first_inexact(program)

    def of_one(x):
        return f(*inputs[:i], x, *inputs[i + 1:])  # the other inputs are constants

    if transform == "grad":
        return library.api.grad(lambda x: library.np.sum(of_one(x)[-1])), [inputs[i]]
    tangent = np.ones_like(inputs[i])
    return (lambda x: library.api.jvp(of_one, (x,), (tangent,))), [inputs[i]]


def outcome(library, thunk):
    """(the (dtype, weak_type, shape, value) of each output leaf, None) of `thunk()`, or (None, its error)."""
    try:
        out = thunk()
        leaves = jax.tree_util.tree_leaves(out) if library is JAX else numax.tree_util.tree_leaves(out)
        return [(np.dtype(v.dtype), _weak(v, library), tuple(v.shape), np.asarray(v)) for v in leaves], None
    except Exception as error:  # compared by class
        return None, error


def _run(program, library, transform):
    function, arguments = transformed(program, library, transform)
    return outcome(library, lambda: function(*arguments))


_RTOL = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 2e-4, "complex64": 2e-4, "float64": 1e-9,
         "complex128": 1e-9}


def _values_match(a, b, dtype):
    if dtype == ml_dtypes.bfloat16 or dtype.kind in "fc":
        wide = np.complex128 if dtype.kind == "c" else np.float64
        a, b = np.asarray(a, wide), np.asarray(b, wide)
        rtol = _RTOL.get(_dtype_name(dtype), 1e-4)
        return np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
    return np.array_equal(a, b)


def compare(program, transform):
    """The mismatches of one transform of the program (empty when numax agrees with jax)."""
    if transform in ("grad", "jvp") and _first_inexact(program) is None:
        return []
    with x64_mode(program.x64):
        expected, jax_error = _run(program, JAX, transform)
        got, numax_error = _run(program, NUMAX, transform)
    return [Mismatch(program, transform, what) for what in differences((expected, jax_error), (got, numax_error))]


def differences(jax_outcome, numax_outcome):
    """What differs between two `outcome`s (jax's first), in words; empty when they agree."""
    (expected, jax_error), (got, numax_error) = jax_outcome, numax_outcome
    found = []
    mismatch = found.append
    if jax_error is not None:
        if numax_error is None:
            mismatch(f"jax raises {type(jax_error).__name__}: {str(jax_error)[:200]}; numax returns a value")
        elif _builtin_class(jax_error) != _builtin_class(numax_error):
            mismatch(f"jax raises {type(jax_error).__name__} ({str(jax_error)[:150]}), numax "
                     f"{type(numax_error).__name__} ({str(numax_error)[:150]})")
        return found
    if numax_error is not None:
        mismatch(f"numax raises {type(numax_error).__name__}: {str(numax_error)[:300]}; jax returns a value")
        return found
    if len(expected) != len(got):
        mismatch(f"{len(got)} outputs, jax {len(expected)}")
        return found
    for k, ((dtype, weak, shape, value), (n_dtype, n_weak, n_shape, n_value)) in enumerate(zip(expected, got)):
        if dtype != n_dtype:
            mismatch(f"output {k}: dtype {n_dtype}, jax {dtype}")
        elif weak != n_weak:
            mismatch(f"output {k}: weak_type {n_weak}, jax {weak}")
        elif shape != n_shape:
            mismatch(f"output {k}: shape {n_shape}, jax {shape}")
        elif not _values_match(value, n_value, dtype):
            mismatch(f"output {k}: values differ\n    numax {n_value!r}\n    jax   {value!r}")
    return found


def check(program, transforms=TRANSFORMS):
    """Every mismatch of the program over `transforms`."""
    return [m for t in transforms for m in compare(program, t)]
