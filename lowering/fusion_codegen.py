"""What the generated Triton kernels of fused regions share: each primitive's Triton expression, the math forms per
platform, dtypes, launch parameters, how an operand broadcast into a region is read, and the kernels' files.
lowering/fusion_elementwise_codegen.py writes elementwise regions' kernels, lowering/fusion_rows_codegen.py
row-wise regions' ones.

16-bit floats are widened to float32 in registers, as XLA computes them, and narrowed only where the program
converts explicitly and where a result is stored. `EQUATION_TEMPLATES` maps a primitive's name to the Triton
expression of one equation; `fusible` says whether an equation has a faithful form (numerics within a few ulps of
XLA's, integer and boolean results exact).

Transcendental functions take a form per platform (`MATH_FORMS`): for "gpu", libdevice's precise functions
(`triton.language.extra.libdevice`, in Triton 3.x: `tl.exp` and `tl.log` lower to approximate PTX there), which
are what XLA's GPU code calls, except that a 16-bit result's exp and tanh take the hardware's approximate forms
(`NARROW_GPU_FORMS`), and float32 values seen only through 16-bit results the forms within 2^-22
(`VISIBLY_NARROW_GPU_FORMS`); for "cpu" (Triton's interpreter, which cannot run libdevice), `tl.exp`/`tl.log`
(numpy's) and accurate helpers built on them.

Kernels are written to files under `$NUMAX_CACHE_DIR/fusion` (Triton reads a kernel's source from its file),
named by a hash of the source, and imported once per process. This module knows equations only through their
primitive names, params and avals: nothing here knows how regions are chosen.
"""

import dataclasses
import hashlib
import importlib.util
import math
import os
import sys
import threading

import numpy as np

from ..core import dtypes
from ..core.ir import Literal, Var
from .atomic_file import write_atomically

SMALL_REGION = 1024  # elements: one program covers a region this small
LARGE_REGION = 1 << 20  # elements: from here on, blocks of 4096 over 8 warps


def launch_parameters(size):
    """(BLOCK, num_warps) for an elementwise region of `size` elements.

    A small region (up to 1024 elements) runs as one program of 4 warps over the next power of two of its size
    (at least 128: one element per thread); a middle-sized one in blocks of 1024 over 4 warps;
    a large one (a million elements or more) in blocks of 4096 over 8 warps, 16 elements per thread, which
    keeps more loads in flight per program and launches a quarter of the programs."""
    if size <= SMALL_REGION:
        return max(128, 1 << (size - 1).bit_length()), 4
    if size < LARGE_REGION:
        return 1024, 4
    return 4096, 8

@dataclasses.dataclass(frozen=True)
class Launch:
    """One way to launch a generated kernel: BLOCK, its warps, and for a row kernel the rows each program
    computes (ROWS; None for an elementwise kernel, which has no such parameter)."""

    block: int
    num_warps: int
    rows: int = None

    def metaparams(self):
        return (("BLOCK", self.block),) + ((("ROWS", self.rows),) if self.rows else ())

    def __str__(self):
        rows = f", ROWS={self.rows}" if self.rows else ""
        return f"BLOCK={self.block}{rows}, num_warps={self.num_warps}"


def launch_candidates(size):
    """The Launches the tuner tries for an elementwise region of `size` elements, the default
    (`launch_parameters`) first: one for a small region, three block sizes for a larger one."""
    default = launch_parameters(size)
    if size <= SMALL_REGION:
        return [Launch(*default)]
    others = [(1024, 4), (2048, 8), (4096, 8)]
    return [Launch(*c) for c in [default] + [c for c in others if c != default
                                             and c[0] <= 1 << (size - 1).bit_length()]]


_TRITON_DTYPES = {
    dtypes.bool_: "tl.int1", np.dtype(np.int8): "tl.int8", np.dtype(np.int16): "tl.int16",
    np.dtype(np.int32): "tl.int32", np.dtype(np.int64): "tl.int64", np.dtype(np.uint8): "tl.uint8",
    np.dtype(np.uint16): "tl.uint16", np.dtype(np.uint32): "tl.uint32", np.dtype(np.uint64): "tl.uint64",
    dtypes.float16: "tl.float16", dtypes.bfloat16: "tl.bfloat16", dtypes.float32: "tl.float32",
    dtypes.float64: "tl.float64",
}
_NARROW_FLOATS = (dtypes.float16, dtypes.bfloat16)


def has_triton_dtype(dtype):
    return np.dtype(dtype) in _TRITON_DTYPES


def triton_dtype(dtype):
    """The name of `dtype`'s Triton type ("tl.float32", ...)."""
    return _TRITON_DTYPES[np.dtype(dtype)]


def register_dtype(dtype):
    """The dtype a value of `dtype` has in the kernel's registers: float32 for 16-bit floats."""
    return dtypes.float32 if dtype in _NARROW_FLOATS else np.dtype(dtype)


def _is_float(dtype):
    return dtypes.is_inexact(dtype)


def _is_unsigned(dtype):
    return dtypes.is_unsigned(dtype)


# --- helpers written into kernels that need them ----------------------------------------------------------
# Triton's interpreter cannot run libdevice, and tl has no log1p, expm1 or tanh: these are Kahan's accurate
# forms over exp and log (a few ulps), which run the same way compiled and interpreted; erfc's is for the
# interpreter only (float64 arithmetic), as the GPU's form is libdevice's.
_HELPERS = {
    "_log1p": '''
@triton.jit
def _log1p(x):
    # log(u) * x / (u - 1) with u = 1 + x cancels the rounding error of 1 + x (Kahan); where that form would
    # divide 0 by 0 or inf by inf, u itself (2.0) stands in, and the outer where picks the exact answer.
    u = 1.0 + x
    exact = (u == 1.0) | (u == float("inf"))
    w = tl.where(exact, 2.0, u)
    return tl.where(exact, tl.where(u == 1.0, x, u), tl.log(w) * (x / (w - 1.0)))
''',
    "_expm1": '''
@triton.jit
def _expm1(x):
    # (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of exp (Kahan); at u == 1, u == inf and
    # u - 1 == -1 the answer is x, inf and -1, and a stand-in (2.0) keeps the general form from dividing by 0.
    u = tl.exp(x)
    exact = (u == 1.0) | (u == float("inf")) | (u - 1.0 == -1.0)
    w = tl.where(exact, 2.0, u)
    return tl.where(exact, tl.where(u == 1.0, x, u - 1.0), (w - 1.0) * (x / tl.log(w)))
''',
    "_tanh": '''
@triton.jit
def _tanh(x):
    # tanh|x| = -e / (e + 2) with e = expm1(-2|x|); the sign put back keeps tanh(-0.0) == -0.0.
    e = _expm1(-2.0 * tl.abs(x))
    magnitude = -e / (e + 2.0)
    return tl.where(x < 0, -magnitude, tl.where(x == 0, x, magnitude))
''',
    "_pow": '''
@triton.jit
def _pow(x, y):
    # C's pow, in float64 (the interpreter's numpy) and rounded once: |x|^y = exp(y log|x|), the sign of a negative
    # base to an odd integer power, NaN for a negative base to a non-integer one; y == 0 and x == 1 give 1 (even
    # for NaN), and so does x == -1 to an infinite power; an infinite base keeps exp's answer.
    a, b = x.to(tl.float64), y.to(tl.float64)
    integer = tl.floor(b) == b
    odd = integer & (tl.floor(b * 0.5) != b * 0.5)
    magnitude = tl.exp(b * tl.log(tl.abs(a)))
    signed = tl.where((a < 0) & odd, -magnitude, magnitude)
    signed = tl.where((a == 0) & odd & (b < 0) & (1.0 / a < 0), -magnitude, signed)  # -0 to an odd negative power
    finite = (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf"))
    signed = tl.where((a < 0) & ~integer & finite, float("nan"), signed)  # a finite negative base, non-integer y
    one = (b == 0) | (a == 1) | ((a == -1) & (tl.abs(b) == float("inf")))
    return tl.where(one, 1.0, signed).to(x.dtype)
''',
    "_erfc": '''
@triton.jit
def _erfc(x):
    # in float64 (the interpreter's numpy): 1 - erf(x) below 2, where erfc(2) = 0.0047 keeps 1e-13 of relative
    # accuracy; above, exp(-x^2) / sqrt(pi) times the continued fraction 1 / (x + (1/2) / (x + 1 / (x + (3/2) / ...)))
    # evaluated from its 60th term back (below 1e-12 of relative error from x = 2 on); then rounded once
    w = x.to(tl.float64)
    v = tl.maximum(w, 2.0)  # the tail's argument, kept where it converges
    fraction = v
    for k in tl.static_range(60, 0, -1):
        fraction = v + (k * 0.5) / fraction
    tail = tl.exp(-v * v) / (1.7724538509055159 * fraction)
    return tl.where(w < 2.0, 1.0 - tl.erf(w), tail).to(x.dtype)
''',
    "_tanh_approx": '''
@triton.jit
def _tanh_approx(x):
    # the GPU's own approximate tanh: a relative error of at most 2^-11 (PTX ISA), for 16-bit results only
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                     pack=1)
''',
    "_max_propagating": '''
@triton.jit
def _max_propagating(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
    "_min_propagating": '''
@triton.jit
def _min_propagating(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
''',
}
_HELPER_NEEDS = {"_tanh": ("_expm1",)}


# The form of each transcendental function per platform: a `tl`/`libdevice` function or a helper's name.
# sqrt is tl.sqrt_rn everywhere (correctly rounded, as XLA's is).
MATH_FORMS = {
    "cpu": {"exp": "tl.exp", "log": "tl.log", "log1p": "_log1p", "expm1": "_expm1", "tanh": "_tanh",
            "rsqrt": "tl.rsqrt", "sqrt": "tl.sqrt_rn", "erf": "tl.erf", "erfc": "_erfc", "sin": "tl.sin",
            "cos": "tl.cos", "pow": "_pow", "exp2": "tl.exp2"},
    "gpu": {"exp": "libdevice.exp", "log": "libdevice.log", "log1p": "libdevice.log1p",
            "expm1": "libdevice.expm1", "tanh": "libdevice.tanh", "rsqrt": "libdevice.rsqrt", "sqrt": "tl.sqrt_rn",
            "erf": "libdevice.erf", "erfc": "libdevice.erfc", "sin": "libdevice.sin", "cos": "libdevice.cos",
            "pow": "libdevice.pow", "exp2": "libdevice.exp2"},
}
# On the GPU, a function whose result is a 16-bit float takes the hardware's approximate form, whose relative
# error (tanh.approx.f32: 2^-11; tl.exp's ex2.approx: about 2^-22) is within that result's rounding to 16 bits
# (2^-11 for float16, 2^-8 for bfloat16). libdevice's tanh alone made case (c) of bench/fusion.py compute-bound
# (157 us against 102 us: bench/probes/fusion_rows_probe.py).
NARROW_GPU_FORMS = {"tanh": "_tanh_approx", "exp": "tl.exp"}
# A float32 value seen only through 16-bit results (`visibly_narrow`: the float32 statistics of a bfloat16 layer
# norm, a float16 softmax's exponentials) takes the forms whose relative error is about 2^-22 (ex2.approx,
# rsqrt.approx, div.full's 2 ulps): 14 bits below a bfloat16's rounding and 11 below a float16's.
VISIBLY_NARROW_GPU_FORMS = {"exp": "tl.exp", "rsqrt": "tl.rsqrt"}
# Equations whose result moves smoothly with their float operands (an error of 2^-22 in an operand stays of that
# order in the result, or shrinks): the precision a result needs is what its operands need. A comparison, a
# rounding to an integer or a select's predicate turns tiny errors into different results: what they read must be
# exact.
_SMOOTH = {"add", "add_any", "sub", "mul", "div", "neg", "max", "min", "exp", "log", "log1p", "expm1", "tanh",
           "logistic", "erf", "erfc", "sin", "cos", "sqrt", "rsqrt", "abs", "integer_pow", "convert_element_type",
           "broadcast_in_dim", "reshape", "reduce_sum", "reduce_max", "reduce_min", "stop_gradient", "clamp",
           "slice", "concatenate", "pad", "transpose", "rev", "squeeze"}


def visibly_narrow(equations, outputs):
    """The float values of a region seen only through 16-bit float results: every way from each of them to a
    stored output passes through smooth equations (`_SMOOTH`, or a select's cases) and ends at a 16-bit output."""
    seen = {}  # Var -> True where only 16-bit results see it
    for var in outputs:
        seen[var] = var.aval.dtype in _NARROW_FLOATS
    for eqn in reversed(equations):
        narrow = all(seen.get(v, True) for v in eqn.outvars) and any(v in seen for v in eqn.outvars)
        name = eqn.primitive.name
        for k, operand in enumerate(eqn.inputs):
            if not isinstance(operand, Var):
                continue
            smooth = (name in _SMOOTH or (name == "select_n" and k > 0)) and _is_float(operand.aval.dtype)
            seen[operand] = seen.get(operand, True) and narrow and smooth
    return {var for var, narrow in seen.items() if narrow and _is_float(var.aval.dtype)}


class KernelWriter:
    """Collects the lines of one kernel's body, the helpers it calls, and names for its values, for `platform`
    ("cpu": Triton's interpreter, "gpu": compiled for the device)."""

    literal_shape = "[BLOCK]"  # the shape of a constant: a block of it

    def __init__(self, platform="cpu"):
        if platform not in MATH_FORMS:
            raise ValueError(f"fusion code generation knows platforms {sorted(MATH_FORMS)}, got {platform!r}")
        self.platform = platform
        self.lines = []
        self.helpers = []
        self.uses_libdevice = False
        self.count = 0
        self.constants = {}  # a literal's text -> its value
        self.narrow_values = frozenset()  # the region's values seen only through 16-bit results (visibly_narrow)
        self.narrow = False  # is the equation being written one of them?

    def literal(self, literal):
        """The text of a Literal operand (a block of its value, or a scalar), its value remembered."""
        text = _literal_text(literal, self.literal_shape)
        self.constants[text] = np.asarray(literal.value).item()
        return text

    def flat_index(self, aval):
        """The flat index into a value of `aval` (the region's shape) that each lane computes."""
        return "offsets"

    def let(self, expression):
        """Binds `expression` to a fresh name and returns the name."""
        name = f"v{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {expression}")
        return name

    def helper(self, name):
        for needed in _HELPER_NEEDS.get(name, ()):
            self.helper(needed)
        if name not in self.helpers:
            self.helpers.append(name)
        return name

    def math(self, function, dtype=None):
        """The callable's text for the transcendental `function` ("exp", "tanh", ...) on this platform, for a
        result of `dtype`."""
        form = MATH_FORMS[self.platform][function]
        if self.platform == "gpu" and self.narrow:
            form = VISIBLY_NARROW_GPU_FORMS.get(function, form)
        if self.platform == "gpu" and dtype in _NARROW_FLOATS:
            form = NARROW_GPU_FORMS.get(function, form)
        if form.startswith("libdevice."):
            self.uses_libdevice = True
        return self.helper(form) if form in _HELPERS else form


# --- equation templates -------------------------------------------------------------------------------------
# Each takes (writer, operand expressions, input avals, output aval, params) and returns the expression of the
# equation's result in its register dtype; `_fusible_checks` refuses forms that would not match XLA.
def _binary(symbol):
    return lambda writer, ops, avals, out, params: f"({ops[0]} {symbol} {ops[1]})"


def _call(function):
    return lambda writer, ops, avals, out, params: f"{function}({', '.join(ops)})"


def _math(function):
    return lambda writer, ops, avals, out, params: f"{writer.math(function, out.dtype)}({ops[0]})"


def _nan_propagating(function):
    """tl.maximum/minimum; floats propagate NaN, as XLA's max and min do; booleans are or/and."""

    def template(writer, ops, avals, out, params):
        if out.dtype == dtypes.bool_:
            return f"({ops[0]} {'|' if function == 'tl.maximum' else '&'} {ops[1]})"
        if _is_float(out.dtype):
            return f"{function}({ops[0]}, {ops[1]}, propagate_nan=tl.PropagateNan.ALL)"
        return f"{function}({ops[0]}, {ops[1]})"

    return template


def _sign(writer, ops, avals, out, params):
    (x,) = ops
    if _is_float(out.dtype):  # zeros and NaN are their own sign
        return f"tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, {x}))"
    kind = _TRITON_DTYPES[out.dtype]
    if _is_unsigned(out.dtype):
        return f"({x} != 0).to({kind})"
    return f"(({x} > 0).to({kind}) - ({x} < 0).to({kind}))"


def _integer_pow(writer, ops, avals, out, params):
    """Exponentiation by squaring in XLA's order of multiplications; a negative power is a reciprocal."""
    power = params["y"]
    result, base, remaining = None, ops[0], abs(power)
    while remaining:
        if remaining & 1:
            result = base if result is None else writer.let(f"{result} * {base}")
        remaining >>= 1
        if remaining:
            base = writer.let(f"{base} * {base}")
    if result is None:
        result = f"tl.full({writer.literal_shape}, 1, {_TRITON_DTYPES[register_dtype(out.dtype)]})"
    return f"tl.div_rn(1.0, {result})" if power < 0 else result


def _select_n(writer, ops, avals, out, params):
    which, cases = ops[0], ops[1:]
    if avals[0].dtype == dtypes.bool_:
        return cases[0] if len(cases) == 1 else f"tl.where({which}, {cases[1]}, {cases[0]})"

    def choose(low, high):  # as XLA lowers it: halves split by `which < mid`
        if high - low == 1:
            return cases[low]
        mid = (low + high) // 2
        return f"tl.where({which} < {mid}, {choose(low, mid)}, {choose(mid, high)})"

    return choose(0, len(cases))


def _clamp(writer, ops, avals, out, params):
    low, x, high = ops
    nan = ", propagate_nan=tl.PropagateNan.ALL" if _is_float(out.dtype) else ""
    return f"tl.minimum(tl.maximum({x}, {low}{nan}), {high}{nan})"


def _not(writer, ops, avals, out, params):
    return f"({ops[0]} == 0)" if out.dtype == dtypes.bool_ else f"(~{ops[0]})"


def _convert(writer, ops, avals, out, params):
    (x,), source, target = ops, avals[0].dtype, out.dtype
    if source in _NARROW_FLOATS and target != source:  # leaving a 16-bit type: its value is rounded to it first
        x = f"{x}.to({_TRITON_DTYPES[source]})"
    if target == dtypes.bool_:
        return f"({x} != 0)"
    if target in _NARROW_FLOATS:  # the program's own rounding, kept; computing goes on in float32
        return f"{x}.to({_TRITON_DTYPES[target]}).to(tl.float32)"
    if source == target or (source not in _NARROW_FLOATS and register_dtype(source) == register_dtype(target)):
        return x
    return f"{x}.to({_TRITON_DTYPES[target]})"


def _broadcast(writer, ops, avals, out, params):
    return f"tl.broadcast_to({ops[0]}, [BLOCK])"


def _round(writer, ops, avals, out, params):
    """To the nearest integer, ties away from zero (rounding_method 0) or to even (1), exactly: from the floor of
    |x| and the fraction above it (x + 0.5 would round); magnitudes of 2^23 and more (2^52 for float64: whatever the
    register type's mantissa holds) are integers already, and NaN, infinities and zeros keep their value and sign."""
    (x,) = ops
    integral = 2.0 ** (np.finfo(register_dtype(out.dtype)).nmant)
    size = writer.let(f"tl.abs({x})")
    floor = writer.let(f"tl.floor({size})")
    fraction = writer.let(f"{size} - {floor}")
    if int(params["rounding_method"]) == 0:
        up = f"({fraction} >= 0.5)"
    else:
        up = f"(({fraction} > 0.5) | (({fraction} == 0.5) & ({floor} % 2.0 == 1.0)))"
    rounded = writer.let(f"tl.where({up}, {floor} + 1.0, {floor})")
    signed = f"tl.where({x} < 0, -{rounded}, {rounded})"
    return f"tl.where(({size} < {integral}) & ({x} != 0), {signed}, {x})"


def _float_remainder(writer, ops, avals, out, params):
    """C's fmod (the sign of the dividend), exact: libdevice's on the GPU (Triton's `%` there is x - trunc(x / y) * y,
    inexact for large quotients), numpy's through the interpreter's `%`."""
    if writer.platform == "gpu":
        writer.uses_libdevice = True
        return f"libdevice.fmod({ops[0]}, {ops[1]})"
    return f"({ops[0]} % {ops[1]})"


def _iota(writer, ops, avals, out, params):
    """The coordinate along `dimension` of each element: its flat index (`writer.flat_index`) divided by the
    elements after that axis, modulo the axis's length."""
    shape, dimension = tuple(params["shape"]), params["dimension"]
    inner = math.prod(shape[dimension + 1:])
    index = writer.flat_index(out)
    index = index if inner == 1 else f"({index} // {inner})"
    coordinate = index if dimension == 0 else f"({index} % {shape[dimension]})"
    return f"{coordinate}.to({_TRITON_DTYPES[register_dtype(out.dtype)]})"


def _shift(kind):
    """A shift by an amount of the operands' type; amounts outside [0, bits) give what XLA's do (0, or the sign
    for an arithmetic right shift), which Triton's operators leave undefined: guarded unless the amount is a
    literal in range."""

    def template(writer, ops, avals, out, params):
        x, amount = ops
        bits = np.dtype(out.dtype).itemsize * 8
        own, unsigned = _TRITON_DTYPES[out.dtype], _TRITON_DTYPES[np.dtype(f"uint{bits}")]
        if kind == "left":
            shifted, overflow = f"({x} << {{amount}})", "0"
        elif kind == "logical":
            shifted = f"({x}.to({unsigned}, bitcast=True) >> {{amount}}.to({unsigned}, bitcast=True))"
            shifted, overflow = f"{shifted}.to({own}, bitcast=True)", "0"
        else:  # on the value's bits as a signed integer's, whatever its type
            as_signed = f"{x}.to(tl.int{bits}, bitcast=True)"
            shifted = f"({as_signed} >> {{amount}}.to(tl.int{bits}, bitcast=True)).to({own}, bitcast=True)"
            overflow = f"tl.where({as_signed} < 0, -1, 0).to(tl.int{bits}).to({own}, bitcast=True)"
        literal = writer.constants.get(amount)
        if literal is not None and 0 <= literal < bits:
            return shifted.format(amount=amount)
        in_range = writer.let(f"{amount}.to({unsigned}, bitcast=True) < {bits}")
        safe = writer.let(f"tl.where({in_range}, {amount}, 0)")
        return f"tl.where({in_range}, {shifted.format(amount=safe)}, {overflow})"

    return template


def _bitcast(writer, ops, avals, out, params):
    return f"{ops[0]}.to({_TRITON_DTYPES[out.dtype]}, bitcast=True)"


_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry(writer, ops, avals, out, params):
    """Threefry-2x32's twenty rounds (lax/prng.py has its definition) on uint32 registers: two results."""
    key1, key2, x1, x2 = ops
    schedule = [key1, key2, writer.let(f"{key1} ^ {key2} ^ 0x1BD11BDA")]
    x = [writer.let(f"{x1} + {key1}"), writer.let(f"{x2} + {key2}")]
    for block in range(5):
        for distance in _THREEFRY_ROTATIONS[block % 2]:
            x[0] = writer.let(f"{x[0]} + {x[1]}")
            x[1] = writer.let(f"{x[0]} ^ (({x[1]} << {distance}) | ({x[1]} >> {32 - distance}))")
        x[0] = writer.let(f"{x[0]} + {schedule[(block + 1) % 3]}")
        x[1] = writer.let(f"{x[1]} + {schedule[(block + 2) % 3]} + {block + 1}")
    return x


EQUATION_TEMPLATES = {
    "add": _binary("+"), "add_any": _binary("+"), "sub": _binary("-"), "mul": _binary("*"),
    "div": lambda writer, ops, avals, out, params: (
        f"({ops[0]} / {ops[1]})" if writer.platform == "gpu" and writer.narrow else f"tl.div_rn({ops[0]}, {ops[1]})"),
    "neg": lambda writer, ops, avals, out, params: f"(-{ops[0]})",
    "max": _nan_propagating("tl.maximum"), "min": _nan_propagating("tl.minimum"),
    "exp": _math("exp"), "log": _math("log"), "log1p": _math("log1p"), "expm1": _math("expm1"),
    "tanh": _math("tanh"), "erf": _math("erf"), "erfc": _math("erfc"), "sin": _math("sin"), "cos": _math("cos"),
    "pow": lambda writer, ops, avals, out, params: f"{writer.math('pow', out.dtype)}({ops[0]}, {ops[1]})",
    "exp2": _math("exp2"), "rem": _float_remainder, "round": _round,
    "logistic": lambda writer, ops, avals, out, params: (
        f"tl.div_rn(1.0, 1.0 + {writer.math('exp', out.dtype)}(-{ops[0]}))"),
    "sqrt": _math("sqrt"), "rsqrt": _math("rsqrt"), "abs": _call("tl.abs"), "sign": _sign,
    "floor": _call("tl.floor"), "ceil": _call("tl.ceil"),
    "integer_pow": _integer_pow, "select_n": _select_n, "clamp": _clamp,
    "eq": _binary("=="), "ne": _binary("!="), "lt": _binary("<"), "le": _binary("<="), "gt": _binary(">"),
    "ge": _binary(">="),
    "is_finite": lambda writer, ops, avals, out, params: f"(tl.abs({ops[0]}) < float(\"inf\"))",  # NaN: False
    "and": _binary("&"), "or": _binary("|"), "xor": _binary("^"), "not": _not,
    "convert_element_type": _convert, "broadcast_in_dim": _broadcast, "iota": _iota,
    "shift_left": _shift("left"), "shift_right_logical": _shift("logical"),
    "shift_right_arithmetic": _shift("arithmetic"), "bitcast_convert_type": _bitcast, "threefry2x32": _threefry,
    "stop_gradient": lambda writer, ops, avals, out, params: ops[0],  # the identity once derivatives are taken
}

# Equations of these primitives fuse only for some dtypes: integer division has XLA-defined results for x / 0
# and INT_MIN / -1 that Triton leaves undefined; a float-to-integer conversion saturates in XLA and is undefined
# out of range in Triton (to bool it is `x != 0`, exact).
_fusible_checks = {
    "div": lambda avals, out: _is_float(out.dtype),
    "pow": lambda avals, out: _is_float(out.dtype) and all(_is_float(a.dtype) for a in avals),
    "rem": lambda avals, out: _is_float(out.dtype),  # integer x % 0 and INT_MIN % -1: XLA's, undefined in Triton
    "bitcast_convert_type": lambda avals, out: np.dtype(avals[0].dtype).itemsize == np.dtype(out.dtype).itemsize
    and avals[0].dtype not in _NARROW_FLOATS and out.dtype not in _NARROW_FLOATS and avals[0].dtype != dtypes.bool_,
    "convert_element_type": lambda avals, out: not (_is_float(avals[0].dtype) and dtypes.is_integer(out.dtype)),
}


def fusible(primitive_name, in_avals, out_avals):
    """True when the equation has a Triton form here and all its values have Triton dtypes."""
    if primitive_name not in EQUATION_TEMPLATES or len(out_avals) != (2 if primitive_name == "threefry2x32" else 1):
        return False
    if not all(has_triton_dtype(a.dtype) for a in list(in_avals) + list(out_avals)):
        return False
    check = _fusible_checks.get(primitive_name)
    return check is None or check(in_avals, out_avals[0])


# --- kernel source ---------------------------------------------------------------------------------------
def _literal_text(literal, shape="[BLOCK]"):
    value = np.asarray(literal.value).item()
    dtype = register_dtype(literal.aval.dtype)
    if isinstance(value, float) and not np.isfinite(value):
        value = f'float("{value}")'
    elif dtype == dtypes.bool_:
        value = int(value)
    return f"tl.full({shape}, {value}, {_TRITON_DTYPES[dtype]})"


def load_text(address, dtype, mask=None):
    """A load of `address` (masked by `mask`), widened to float32 from a 16-bit float."""
    load = f"tl.load({address})" if mask is None else f"tl.load({address}, mask={mask})"
    return load + ".to(tl.float32)" if dtype in _NARROW_FLOATS else load


def stored_text(value, dtype):
    """`value` narrowed to `dtype` for a store where `dtype` is a 16-bit float."""
    return f"{value}.to({_TRITON_DTYPES[dtype]})" if dtype in _NARROW_FLOATS else value


def emit_equations(writer, equations, names, outputs, templates=EQUATION_TEMPLATES, narrow_values=None):
    """Binds each equation's results to names in `writer` (`names`: Var -> name, the inputs' already there), each
    in the forms its precision needs (what the region's `outputs` see of it: `narrow_values`, the region's
    `visibly_narrow` values, where `equations` are part of it). A template returns its result's expression, or a
    list of names (an equation of several results)."""
    writer.narrow_values = visibly_narrow(equations, outputs) if narrow_values is None else narrow_values
    for eqn in equations:
        writer.narrow = all(v in writer.narrow_values for v in eqn.outvars)
        operands = [writer.literal(a) if isinstance(a, Literal) else names[a] for a in eqn.inputs]
        template = templates[eqn.primitive.name]
        expression = template(writer, operands, [a.aval for a in eqn.inputs], eqn.outvars[0].aval, eqn.params)
        if isinstance(expression, list):
            names.update(zip(eqn.outvars, expression))
        else:
            names[eqn.outvars[0]] = writer.let(expression)


def kernel_source(writer, equations, parameters, constexprs=("BLOCK",)):
    """(name, source) of the kernel whose body `writer` holds: named by its operations and a hash of its text."""
    body = "".join(f"    {line}\n" for line in writer.lines)
    helpers = "".join(_HELPERS[name] for name in writer.helpers)
    signature = f"({', '.join(list(parameters) + [f'{c}: tl.constexpr' for c in constexprs])}):\n"
    digest = hashlib.sha256((helpers + signature + body).encode()).hexdigest()[:10]
    operations = list(dict.fromkeys(eqn.primitive.name for eqn in equations))
    name = "_".join(["fused"] + operations[:3] + (["etc"] if len(operations) > 3 else []) + [digest])
    imports = "import triton\nimport triton.language as tl\n"
    if writer.uses_libdevice:
        imports += "from triton.language.extra import libdevice\n"
    return name, imports + helpers + f"\n\n@triton.jit\ndef {name}{signature}{body}"


def read_shape(eqn, operand, shape):
    """How `eqn`, an equation over `shape`, reads `operand`: its shape with a 1 on each axis of `shape` along which
    it is repeated (broadcast_in_dim's operand placed on its broadcast_dimensions; another equation's operand
    aligned with the result's trailing axes, as numpy broadcasts)."""
    if eqn.primitive.name == "broadcast_in_dim":
        placed = [1] * len(shape)
        for axis, n in zip(eqn.params["broadcast_dimensions"], operand.aval.shape):
            placed[axis] = n
        return tuple(placed)
    own = tuple(operand.aval.shape)
    return (1,) * (len(shape) - len(own)) + own


def read_index(placed, shape):
    """The flat index into an operand read as `placed` (read_shape) over `shape`, as text over `offsets`, the flat
    indices of the result: each run of axes the operand has contributes (offsets // the elements after the run) %
    the run's elements, times the operand's elements after the run. None: a single value (no index)."""
    terms, inner, stride, axis = [], 1, 1, len(shape)
    while axis > 0:  # runs of axes, from the last: kept ones (the operand's own) and repeated ones
        kept = placed[axis - 1] != 1 or shape[axis - 1] == 1
        start = axis
        while start > 0 and (placed[start - 1] != 1 or shape[start - 1] == 1) == kept:
            start -= 1
        run = math.prod(shape[start:axis])
        if kept and run > 1:
            term = "offsets" if inner == 1 else f"(offsets // {inner})"
            term = term if start == 0 else f"{term} % {run}"
            terms.append(term if stride == 1 else f"({term}) * {stride}")
            stride *= run
        inner *= run
        axis = start
    if not terms:
        return None
    return " + ".join(reversed(terms))


# --- kernel files ------------------------------------------------------------------------------------------
def kernel_directory():
    """`$NUMAX_CACHE_DIR/fusion` if set, else ~/.cache/numax/fusion."""
    root = os.environ.get("NUMAX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "numax")
    return os.path.join(root, "fusion")


_kernels = {}  # source -> @triton.jit kernel
_kernels_lock = threading.Lock()


# The module name of every kernel the fuser writes begins so (how triton_gpu tells them from a user's kernels).
GENERATED_MODULE_PREFIX = "_numax_fused_"


def load_kernel(name, source):
    """The @triton.jit function `name` defined by `source`: written to a file named by the source's hash (under
    a temporary name, then renamed into place) and imported, once per source and process."""
    with _kernels_lock:
        kernel = _kernels.get(source)
        if kernel is not None:
            return kernel
        digest = hashlib.sha256(source.encode()).hexdigest()
        path = os.path.join(kernel_directory(), f"{digest}.py")
        if not os.path.exists(path):
            write_atomically(path, source)
        module_name = f"{GENERATED_MODULE_PREFIX}{digest}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # Triton finds a kernel's globals and source through its module
        spec.loader.exec_module(module)
        kernel = _kernels[source] = getattr(module, name)
        return kernel
