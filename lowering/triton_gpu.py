"""The GPU engine of `triton_call`: compiling `@triton.jit` kernels for a CUDA device and calling them
from inside an XLA program.

A kernel is compiled by `triton.compile` (the same call in Triton 3.6 and 3.9) for the device's compute
capability, cached in memory and on disk (lowering/triton_cache.py), and embedded as a
`stablehlo.custom_call @triton_kernel_call_ffi` (XLA's typed FFI, api_version 4) whose `opaque` attribute is
the zlib-compressed kernel-call proto that the CUDA plugin's handler launches: kernel image (PTX), grid,
parameters, shared memory, scratch. The plugin's legacy target `triton_kernel_call` (api_version 2, the same
bytes as backend_config) launches the same kernel at the same cost (bench/probes/fusion_route_probe.py: 69-70 us per
call + wait of a one-kernel program on the H100 either way, XLA's own add 63 us); the typed-FFI target is
XLA's current custom-call interface. A `triton.autotune` kernel
becomes an autotuned call: the plugin times each config on the first run and keeps the fastest for the process.
Kernel arguments are the user's arguments in order (arrays as pointers, scalars by value), then one pointer per
output, as in jax-triton 0.3.

Triton is imported on first use; jaxlib only through lowering/xla/. Nothing here knows the
`triton_call` primitive: the rule `lower_triton_call_gpu` takes its params.
"""

import contextlib
import dataclasses
import math
import sys
import zlib

import numpy as np

from ..core import dtypes
from . import xla
from .fusion_codegen import GENERATED_MODULE_PREFIX
from .stablehlo import aval_type, mlir_string, output_operand_alias, row_major_layout
from .triton_cache import KernelCache
from .triton_signature import TRITON_LANGUAGE, resolve_grid, resolve_zeroed, unwrap_kernel

# Triton's names of element types (pointer targets and scalars).
_TRITON_TYPES = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    dtypes.bfloat16: "bf16", np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32",
    np.dtype(np.float64): "fp64",
}
# The scalar types the CUDA plugin can pass by value.
_SCALAR_TYPES = ("i1", "i32", "u32", "i64", "u64", "fp32", "fp64")
_INTEGER_SCALARS = ("i32", "u32", "i64", "u64")
# XLA aligns every buffer it hands a custom call to at least this; the plugin checks it at launch.
POINTER_DIVISIBILITY = 16
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
kernel_cache = KernelCache()


# --- argument types ------------------------------------------------------------------------------------
def pointer_type(dtype) -> str:
    """Triton's type of a pointer to `dtype` elements: `*fp32`."""
    try:
        return "*" + _TRITON_TYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"Triton kernels cannot take arrays of dtype {np.dtype(dtype)}") from None


def scalar_type(kind, value) -> str:
    """Triton's type of a scalar argument: `kind` is a numpy dtype or the Python type bool, int or float
    (typed as Triton's own launcher and jax-triton do: ints by range, floats as fp32 when they fit)."""
    if kind is bool:
        return "i1"
    if kind is int:
        for name, low, high in (("i32", -2**31, 2**31), ("u32", 0, 2**32), ("i64", -2**63, 2**63),
                                ("u64", 0, 2**64)):
            if low <= value < high:
                return name
        raise OverflowError(f"the integer {value} does not fit a Triton scalar (64 bits)")
    if kind is float:
        magnitude, limits = abs(value), np.finfo(np.float32)
        if not math.isfinite(value) or magnitude == 0 or float(limits.tiny) <= magnitude <= float(limits.max):
            return "fp32"
        return "fp64"
    name = _TRITON_TYPES.get(np.dtype(kind))
    if name not in _SCALAR_TYPES:
        raise TypeError(f"a Triton kernel scalar of dtype {np.dtype(kind)} cannot be passed on the GPU; pass a "
                        "bool, int32, uint32, int64, uint64, float32 or float64 (or a Python number)")
    return name


def _type_of(arg_type) -> str:
    """The Triton type of one entry of `arg_types`: ('pointer', dtype) or ('scalar', kind, value)."""
    return pointer_type(arg_type[1]) if arg_type[0] == "pointer" else scalar_type(arg_type[1], arg_type[2])


# --- kernels and their wrappers --------------------------------------------------------------------------
def _specialization(jit_fn, arg_types, metaparams):
    """Triton's (signature, constexprs, attrs) for `triton.compile`: every parameter typed (constexprs as
    'constexpr'), constexpr values from `metaparams` or the kernel's defaults, and the 16-byte divisibility
    of pointers and of integers that are multiples of 16 (what Triton's own launcher specializes on)."""
    expected = sum(not p.is_constexpr for p in jit_fn.params)
    if len(arg_types) != expected:
        raise TypeError(f"Triton kernel {jit_fn.__name__} takes {expected} non-constexpr arguments (inputs, then "
                        f"outputs), but the call gives {len(arg_types)}")
    values = iter(arg_types)
    signature, constexprs, attrs = {}, {}, {}
    for index, param in enumerate(jit_fn.params):
        if param.is_constexpr:
            if param.name in metaparams:
                constexprs[param.name] = metaparams[param.name]
            elif param.has_default:
                constexprs[param.name] = param.default
            else:
                raise TypeError(f"Triton kernel {jit_fn.__name__} needs a value for its constexpr parameter "
                                f"{param.name!r}: pass it as a keyword argument of triton_call")
            signature[param.name] = "constexpr"
            continue
        if param.name in metaparams:
            raise TypeError(f"{param.name!r} is not a constexpr parameter of Triton kernel {jit_fn.__name__}; "
                            "pass it as a positional argument of triton_call instead of a keyword")
        arg_type = next(values)
        signature[param.name] = _type_of(arg_type)
        if arg_type[0] == "pointer" or (signature[param.name] in _INTEGER_SCALARS and arg_type[2] % 16 == 0):
            attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs


# --- compiling -------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CompiledTritonKernel:
    """A kernel compiled for one device: what the plugin's `TritonKernel` needs, plus its TTIR."""

    name: str
    ptx: str
    ttir: str
    shared_mem_bytes: int
    num_warps: int
    num_ctas: int
    compute_capability: int
    global_scratch_size: int = 0
    global_scratch_align: int = 1


def _constexpr_key(value):
    """A constexpr value as JSON for the cache key (its type matters: 1 and 1.0 and True compile apart)."""
    return [type(value).__name__, repr(value)]


def compile_kernel(kernel, arg_types, metaparams, *, num_warps, num_stages, num_ctas, compute_capability,
                   debug=False, line_info=True) -> CompiledTritonKernel:
    """Compiles a @triton.jit kernel for a CUDA device of `compute_capability` (e.g. 90), cached in memory
    and on disk. `arg_types` has one entry per non-constexpr kernel parameter, in order: ('pointer', numpy
    dtype) for arrays (inputs, then outputs), ('scalar', numpy dtype or bool/int/float, value) for scalars;
    `metaparams` ({name: value}) gives the constexprs (names the kernel lacks are ignored: they are for the
    grid). Without `line_info` the PTX carries no source lines (2-4 times smaller: the plugin copies and hashes
    it at every launch)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, constexprs, attrs = _specialization(kernel, arg_types, metaparams)
    # fp fusion on explicitly: Triton 3.9 warns when it is left to the default, which 3.10 changes
    options = {"num_warps": num_warps, "num_stages": num_stages, "num_ctas": num_ctas, "debug": bool(debug),
               "enable_fp_fusion": True}
    key_fields = {
        "kernel": f"{kernel.fn.__module__}.{kernel.fn.__qualname__}",
        "source": kernel.cache_key,  # a sha256 of its source, the sources it calls and the globals it reads
        "signature": list(signature.items()),
        "constexprs": sorted((name, _constexpr_key(value)) for name, value in constexprs.items()),
        "attrs": sorted([list(index), spec] for index, spec in attrs.items()),
        "options": options,
        "triton": triton.__version__,
        "compute_capability": compute_capability,
        "line_info": line_info,
    }

    def compile_now():
        if num_ctas > 1 and compute_capability < 90:
            raise ValueError(f"num_ctas > 1 needs compute capability 9.0 or newer, not {compute_capability}")
        source = ASTSource(kernel, signature, constexprs, attrs)
        with TRITON_LANGUAGE.compiling(("line info", line_info), lambda: _line_info(line_info)):
            compiled = triton.compile(source, target=GPUTarget("cuda", compute_capability, 32), options=options)
        metadata = compiled.metadata
        if getattr(metadata, "profile_scratch_size", 0):
            raise NotImplementedError("Triton kernels compiled with instrumentation (a profile scratch buffer) "
                                      "cannot run inside numax programs")
        return {"name": metadata.name, "ptx": compiled.asm["ptx"], "ttir": compiled.asm["ttir"],
                "shared_mem_bytes": int(metadata.shared), "num_warps": num_warps, "num_ctas": num_ctas,
                "compute_capability": compute_capability,
                "global_scratch_size": int(getattr(metadata, "global_scratch_size", 0) or 0),
                "global_scratch_align": int(getattr(metadata, "global_scratch_align", 1) or 1)}

    description = f"{kernel.__name__} for sm_{compute_capability} ({', '.join(signature.values())})"
    compiled = CompiledTritonKernel(**kernel_cache.get_or_compile(key_fields, compile_now, description))
    if debug:
        print(f"numax: Triton kernel {description}, TTIR:\n{compiled.ttir}", file=sys.stderr)
    return compiled


@contextlib.contextmanager
def _line_info(wanted):
    """Triton's compiler with or without source line info in its PTX (its `disable_line_info` knob, as
    TRITON_DISABLE_LINE_INFO sets it), restored after."""
    from triton import knobs

    if wanted:
        yield
        return
    with knobs.compilation.scope():
        knobs.compilation.disable_line_info = True
        yield


# --- the kernel call -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class KernelLaunch:
    """One launch the custom call can make: a compiled kernel, its grid (3 ints) and its parameters, one
    per kernel argument: ('array', bytes to zero before the launch, pointer divisibility) consumes the next
    buffer (operands, then results); ('scalar', value, Triton type) is passed by value."""

    compiled: CompiledTritonKernel
    grid: tuple
    parameters: tuple
    description: str = ""


def kernel_parameters(arg_types, zeroed_bytes) -> tuple:
    """The launch parameters of `arg_types` (see compile_kernel); `zeroed_bytes` maps a kernel argument's
    position to the bytes the plugin zeroes before the launch."""
    parameters = []
    for position, arg_type in enumerate(arg_types):
        if arg_type[0] == "pointer":
            parameters.append(("array", zeroed_bytes.get(position, 0), POINTER_DIVISIBILITY))
        else:
            kind = scalar_type(arg_type[1], arg_type[2])
            value = bool(arg_type[2]) if kind == "i1" else float(arg_type[2]) if kind[0] == "f" else int(arg_type[2])
            parameters.append(("scalar", value, kind))
    return tuple(parameters)


def _builder():
    builder = xla.gpu_triton_module()
    if builder is None:
        raise RuntimeError("calling a Triton kernel on the GPU needs jaxlib's CUDA plugin (jax-cuda13-pjrt and "
                           "jax-cuda13-plugin); without a GPU, triton_call runs kernels through Triton's interpreter")
    return builder


def _plugin_kernel_call(builder, launch):
    compiled = launch.compiled
    scratch = {}
    if compiled.global_scratch_size:
        scratch = {"global_scratch_size": compiled.global_scratch_size,
                   "global_scratch_align": compiled.global_scratch_align}
    try:
        # no TTIR: the plugin launches the PTX and keeps the TTIR only to copy it at every launch
        kernel = builder.TritonKernel(compiled.name, compiled.num_warps, compiled.num_ctas, compiled.shared_mem_bytes,
                                      compiled.ptx, "", compiled.compute_capability, **scratch)
    except TypeError:
        if not scratch:
            raise
        raise NotImplementedError(f"Triton kernel {compiled.name} needs a global scratch buffer, which this "
                                  "jaxlib's Triton kernel call cannot allocate (jaxlib > 0.11.0 can)") from None
    parameters = [builder.create_array_parameter(p[1], p[2]) if p[0] == "array"
                  else builder.create_scalar_parameter(p[1], p[2]) for p in launch.parameters]
    return builder.TritonKernelCall(kernel, *launch.grid, parameters)


def backend_config(launches, name, input_output_aliases=()) -> bytes:
    """The opaque bytes of the `triton_kernel_call` custom call: the zlib-compressed kernel-call proto of
    one launch, or of an autotuned call choosing among several (`input_output_aliases`: (operand buffer,
    result buffer counted after the operands, bytes) pairs the plugin saves and restores while it times)."""
    builder = _builder()
    calls = [_plugin_kernel_call(builder, launch) for launch in launches]
    if len(calls) == 1:
        call = calls[0]
    else:
        call = builder.TritonAutotunedKernelCall(
            name, [(c, launch.description) for c, launch in zip(calls, launches)], list(input_output_aliases))
    return zlib.compress(call.to_proto(name, b""))


# --- configs: plain, autotuned, heuristics ----------------------------------------------------------------
def _configs(autotuner, metaparams, named_args, num_warps, num_stages, num_ctas):
    """[(config metaparams, num_warps, num_stages, num_ctas, description)]: the autotuner's configs that
    agree with the caller's metaparams (after its early pruning), or the one the caller asked for."""
    if autotuner is None:
        return [({}, num_warps, num_stages, num_ctas, "")]
    configs = [c for c in autotuner.configs
               if all(metaparams.get(k, v) == v for k, v in c.kwargs.items())]
    if getattr(autotuner, "early_config_prune", None) is not None and configs:
        configs = list(autotuner.early_config_prune(configs, named_args))
    if not configs:
        raise ValueError(f"no triton.autotune config of {autotuner.fn} agrees with the metaparams {metaparams}")
    for config in configs:
        if getattr(config, "pre_hook", None) is not None:
            raise NotImplementedError("triton.Config pre_hook cannot run inside a compiled numax program")
    return [(dict(c.kwargs), c.num_warps, c.num_stages, c.num_ctas, str(c)) for c in configs]


def _apply_heuristics(heuristics, named_args, metaparams):
    metaparams = dict(metaparams)
    for wrapper in heuristics:
        for name, heuristic in wrapper.values.items():
            metaparams[name] = heuristic({**named_args, **metaparams})
    return metaparams


def kernel_launches(kernel, avals_in, avals_out, *, grid, call_spec, metaparams, zeroed_outputs, num_warps,
                    num_stages, num_ctas, debug, compute_capability) -> list:
    """The KernelLaunch of each config (one unless `kernel` is autotuned) for a call with the
    `triton_call` primitive's params."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    jit_fn, wrappers = unwrap_kernel(kernel)
    generated = jit_fn.fn.__module__.startswith(GENERATED_MODULE_PREFIX)  # the fuser's: no source to point to
    autotuner = next((w for w in wrappers if isinstance(w, Autotuner)), None)
    heuristics = [w for w in wrappers if isinstance(w, Heuristics)]
    arg_types, named_args = [], {}
    user_params = [p.name for p in jit_fn.params if not p.is_constexpr]
    for position, (kind, value) in enumerate(call_spec):
        if kind == "array":
            arg_types.append(("pointer", avals_in[value].dtype))
        else:
            arg_types.append(("scalar", _scalar_kind(value), value))
        if position < len(user_params):
            named_args[user_params[position]] = avals_in[value] if kind == "array" else value
    arg_types += [("pointer", aval.dtype) for aval in avals_out]
    for name, aval in zip(user_params[len(call_spec):], avals_out):
        named_args[name] = aval
    metaparams = dict(metaparams)
    launches = []
    for config_metaparams, warps, stages, ctas, description in _configs(
            autotuner, metaparams, named_args, num_warps or DEFAULT_NUM_WARPS,
            num_stages or DEFAULT_NUM_STAGES, num_ctas or 1):
        merged = _apply_heuristics(heuristics, named_args, {**metaparams, **config_metaparams})
        compiled = compile_kernel(jit_fn, arg_types, merged, num_warps=warps, num_stages=stages, num_ctas=ctas,
                                  compute_capability=compute_capability, debug=debug, line_info=not generated)
        zeroed_bytes = {len(call_spec) + i: avals_out[i].size * np.dtype(avals_out[i].dtype).itemsize
                        for i in resolve_zeroed(zeroed_outputs, merged)}
        launches.append(KernelLaunch(compiled, resolve_grid(grid, merged),
                                     kernel_parameters(arg_types, zeroed_bytes), description))
    return launches


def _scalar_kind(value):
    """The argument-type kind of a scalar argument: its numpy dtype, or bool/int/float for Python numbers."""
    if isinstance(value, np.generic):
        return value.dtype
    for kind in (bool, int, float):
        if isinstance(value, kind):
            return kind
    raise TypeError(f"a Triton kernel argument must be an array or a number, got {type(value).__name__}")


# --- the lowering ----------------------------------------------------------------------------------------
def emit_triton_kernel_call(ctx, operands, opaque, input_output_aliases=()):
    """Emits the `triton_kernel_call_ffi` custom call with the `opaque` attribute; returns its results.
    Buffers are C-order; each (operand index, output index) alias makes the output reuse the operand."""
    avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
    attributes = {
        "call_target_name": '"triton_kernel_call_ffi"',
        "api_version": "4 : i32",
        "backend_config": f"{{opaque = {mlir_string(opaque)}}}",
        "operand_layouts": "[" + ", ".join(row_major_layout(a) for a in avals_in) + "]",
        "result_layouts": "[" + ", ".join(row_major_layout(a) for a in avals_out) + "]",
    }
    if input_output_aliases:  # a single result is not a tuple: its alias has no tuple index
        attributes["output_operand_aliases"] = "[" + ", ".join(
            output_operand_alias(output if len(avals_out) > 1 else None, operand)
            for operand, output in input_output_aliases) + "]"
    return ctx.builder.op("stablehlo.custom_call", list(operands), [aval_type(a) for a in avals_out], attributes)


def lower_triton_call_gpu(ctx, *operands, kernel, out_avals, grid, call_spec, metaparams, input_output_aliases,
                          zeroed_outputs, num_warps, num_stages, num_ctas, debug, name):
    """The GPU lowering rule of the `triton_call` primitive (operands: its array arguments)."""
    del out_avals  # ctx.avals_out are the same
    devices = ctx.module.devices
    capability = xla.gpu_compute_capability(devices[0] if devices else None)
    launches = kernel_launches(kernel, ctx.avals_in, ctx.avals_out, grid=grid, call_spec=call_spec,
                               metaparams=metaparams, zeroed_outputs=zeroed_outputs, num_warps=num_warps,
                               num_stages=num_stages, num_ctas=num_ctas, debug=debug,
                               compute_capability=capability)
    kernel_name = name or unwrap_kernel(kernel)[0].fn.__name__
    aliases_with_sizes = [(operand, len(operands) + output,
                           ctx.avals_in[operand].size * np.dtype(ctx.avals_in[operand].dtype).itemsize)
                          for operand, output in input_output_aliases]
    opaque = backend_config(launches, kernel_name, aliases_with_sizes)
    return emit_triton_kernel_call(ctx, operands, opaque, input_output_aliases)
