"""Does the custom-call route of a generated Triton kernel cost time per call (issue 14's diagnosis; one GPU,
needs torch for its profiler)?

Case (c)'s row kernel (layernorm + GELU + residual, float16 16384x4096) runs several ways:
- "XLA": numax.jit without fusion (XLA's own fusion);
- "triton_kernel_call_ffi": numax.jit(fusion="triton"), the kernel as the CUDA plugin's typed-FFI custom call
  `triton_kernel_call_ffi` (what numax emits; its `opaque` attribute carries the compressed kernel);
- "triton_kernel_call, raw": the same program text with the custom call changed to the plugin's legacy target
  (api_version 2, the same bytes as backend_config, what numax emitted before), run on raw buffers, beside the
  first two programs also run on raw buffers (jaxlib's execute without numax's dispatch);
- "xla.gpu.triton": the same kernel source, its sizes made constexprs (this route passes buffers only), as
  XLA's own `__gpu$xla.gpu.triton` custom call fed Triton's TTIR, which XLA compiles into an ordinary kernel.
For each: the wall time per call back to back (100 calls), and from torch's profiler the device time per call
split into kernel time and idle time between kernels. (The host time to issue a call, without waiting, varied
by 2x between runs on one machine, so it is not reported.)

Then the same question where only the launch matters: a 1024-float vector add (numax.triton_call, the add
kernel of bench/triton_call.py) in the FFI and the legacy forms and XLA's own add, all on raw buffers, each
call waited for (medians of interleaved rounds, the order rotated).

The last way of case (c) runs only with `--xla-triton`: on the H100 with jaxlib 0.11.2 and triton 3.6, XLA crashes the
process (a segmentation fault inside the compile) on this kernel's TTIR, though it compiled a vector add's
(../shared/RUNTIME.md section 9): XLA's Triton is not triton 3.6, and its TTIR reader is not a stable interface.

    python3 bench/probes/fusion_route_probe.py [--quick] [--xla-triton]
"""

import argparse
import os
import re
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from dispatch import interleaved  # noqa: E402
from fusion import layernorm_gelu_residual  # noqa: E402
from fusion_trace_probe import CALLS, kernel_events  # noqa: E402
from numax.lowering import fusion_codegen, xla  # noqa: E402
from numax.lowering.stablehlo import mlir_string  # noqa: E402
from numax.transforms import fusion  # noqa: E402
from triton_call import numax_add  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

WARPS = 8
MATRIX_LAYOUT = "dense<[1, 0]> : tensor<2xindex>"  # row-major, for the custom call's operands and result


def ttir_with_static_sizes(source, name, rows, length):
    """The TTIR of the generated kernel with its runtime sizes `n`, `m` made constexprs."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    head = f"def {name}(in0_ptr, in1_ptr, in2_ptr, n, m, out0_ptr, "
    assert head in source, "the generated kernel's signature changed"
    static = f"def {name}(in0_ptr, in1_ptr, in2_ptr, n: tl.constexpr, m: tl.constexpr, out0_ptr, "
    source = source.replace(head, static)
    kernel = fusion_codegen.load_kernel(name, source)
    signature = {"in0_ptr": "*fp16", "in1_ptr": "*fp16", "in2_ptr": "*fp16", "n": "constexpr", "m": "constexpr",
                 "out0_ptr": "*fp16", "BLOCK": "constexpr", "ROWS": "constexpr"}
    constexprs = {"n": length, "m": rows, "BLOCK": length, "ROWS": 1}
    compiled = triton.compile(ASTSource(kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": WARPS, "num_stages": 1})
    return compiled.asm["ttir"]


def xla_triton_module(ttir, name, rows, length):
    x, v = f"tensor<{rows}x{length}xf16>", f"tensor<1x{length}xf16>"
    layouts = ", ".join([MATRIX_LAYOUT] * 3)
    config = (f"{{name = \"{name}\", ir = {mlir_string(ttir.encode())}, num_stages = 1 : i32, "
              f"num_warps = {WARPS} : i32, grid_x = {rows} : i32, grid_y = 1 : i32, grid_z = 1 : i32, debug = false}}")
    return "\n".join([
        "module @route_probe {",
        f"  func.func public @main(%x: {x}, %s: {v}, %b: {v}) -> {x} {{",
        f"    %0 = stablehlo.custom_call @__gpu$xla.gpu.triton(%x, %s, %b) {{api_version = 4 : i32, "
        f"mhlo.backend_config = {config}, operand_layouts = [{layouts}], "
        f"result_layouts = [{MATRIX_LAYOUT}]}} : ({x}, {v}, {v}) -> {x}",
        f"    return %0 : {x}",
        "  }",
        "}"])


def xla_triton_side(f, x_host, scale_host, shift_host, x, expected):
    """(call, wait) of case (c)'s kernel as XLA's own Triton custom call, on raw buffers."""
    rows, length = x_host.shape
    closed = numax.make_jaxpr(f)(x_host, scale_host, shift_host)
    _, (kernel,) = fusion.fuse_with_kernels(closed, "gpu")
    ttir = ttir_with_static_sizes(kernel.source, kernel.name, rows, length)
    backend = xla.default_backend()
    device = backend.default_device
    compiled = xla.compile_module(xla_triton_module(ttir, kernel.name, rows, length), backend, [device])
    handler = [xla.result_handler((rows, length), np.dtype(np.float16), backend, device)]
    buffers = [x._buffer, *(xla.device_put(v.reshape(1, length), backend, device) for v in (scale_host, shift_host))]
    call = lambda: xla.execute(compiled, buffers, handler)  # noqa: E731
    wait = lambda out: xla.block_until_ready(out, backend.polls_waits)  # noqa: E731
    out = call()
    wait(out)
    value = xla.to_numpy_via_host_copy(out[0]).astype(np.float32)
    print(f"xla.gpu.triton route: largest difference from XLA's result {np.max(np.abs(value - expected)):.3g}")
    return call, wait


def legacy_form(text, calls=1):
    """A module's `calls` `triton_kernel_call_ffi` custom calls as the plugin's legacy `triton_kernel_call` (in
    either printed form: `@triton_kernel_call_ffi(` or `call_target_name = "triton_kernel_call_ffi"`)."""
    rewrites = [(r'@triton_kernel_call_ffi\(|call_target_name = "triton_kernel_call_ffi"',
                 lambda m: m[0].replace("_ffi", "")),
                (r"api_version = 4 : i32", lambda m: "api_version = 2 : i32"),
                (r'backend_config = \{opaque = ("(?:[^"\\]|\\.)*")\}', lambda m: f"backend_config = {m[1]}")]
    for pattern, replacement in rewrites:
        text, count = re.subn(pattern, replacement, text)
        assert count == calls, f"{count} matches of {pattern!r}, {calls} expected"
    return text


def raw_side(text, buffers, out_shape, out_dtype):
    """(call, wait) of a module compiled as it is and run on raw buffers (no numax dispatch)."""
    backend = xla.default_backend()
    device = backend.default_device
    compiled = xla.compile_module(text, backend, [device])
    handler = [xla.result_handler(out_shape, np.dtype(out_dtype), backend, device)]
    return (lambda: xla.execute(compiled, buffers, handler)), (lambda out: xla.block_until_ready(
        out, backend.polls_waits))


def back_to_back_us(call, wait):
    """Median over 5 rounds of the wall time per call of 100 calls queued back to back."""
    wait(call())
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(100):
            out = call()
        wait(out)
        rounds.append((time.perf_counter() - start) / 100 * 1e6)
    return statistics.median(rounds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--xla-triton", action="store_true", help="also XLA's own Triton route (crashes, see above)")
    args = parser.parse_args()
    rows = 4096 if args.quick else 16384
    length = 4096
    rng = np.random.default_rng(0)
    x_host = rng.normal(size=(rows, length)).astype(np.float16)
    scale_host, shift_host = (1 + 0.1 * rng.normal(size=length)).astype(np.float16), \
        (0.1 * rng.normal(size=length)).astype(np.float16)
    f = layernorm_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu)
    x, scale, shift = (numax.device_put(a) for a in (x_host, scale_host, shift_host))
    plain, fused = numax.jit(f), numax.jit(f, fusion="triton")
    expected = np.asarray(plain(x, scale, shift)).astype(np.float32)

    fused_value = np.asarray(fused(x, scale, shift)).astype(np.float32)
    print("triton_kernel_call_ffi route: largest difference from XLA's result "
          f"{np.max(np.abs(fused_value - expected)):.3g}")
    sides = {"XLA": ((lambda: plain(x, scale, shift)), numax.block_until_ready),
             "triton_kernel_call_ffi": ((lambda: fused(x, scale, shift)), numax.block_until_ready)}
    buffers = [v._buffer for v in (x, scale, shift)]
    fused_text = fused.lower(x, scale, shift).as_text()
    for name, text in (("XLA, raw", plain.lower(x, scale, shift).as_text()),
                       ("triton_kernel_call_ffi, raw", fused_text),
                       ("triton_kernel_call, raw", legacy_form(fused_text))):
        sides[name] = raw_side(text, buffers, (rows, length), np.float16)
    call, wait = sides["triton_kernel_call, raw"]
    out = call()
    wait(out)
    value = xla.to_numpy_via_host_copy(out[0]).astype(np.float32)
    print(f"triton_kernel_call route: largest difference from XLA's result {np.max(np.abs(value - expected)):.3g}")
    if args.xla_triton:
        sides["xla.gpu.triton"] = xla_triton_side(f, x_host, scale_host, shift_host, x, expected)
    print(f"\n(c) {rows}x{length}: | side | back to back | device per call | kernels | idle |")
    for name, (call, wait) in sides.items():
        streamed = back_to_back_us(call, wait)
        _, events = kernel_events(call, wait)
        span = (events[-1][2] - events[0][1]) / CALLS if events else float("nan")
        busy = sum(end - start for _, start, end in events) / CALLS
        print(f"| {name} | {streamed:.1f} us | {span:.1f} us | {busy:.1f} us | {span - busy:.1f} us |")
    torch.cuda.synchronize()
    launch_latency()


def launch_latency():
    """Call + wait of a 1024-float add: the Triton kernel through each custom-call target, and XLA's add."""
    host = np.linspace(-1, 1, 1024, dtype=np.float32)
    x = numax.device_put(host)
    buffers = [x._buffer, x._buffer]
    triton_text = numax.jit(numax_add).lower(x, x).as_text()
    texts = {"XLA add, raw": numax.jit(lambda a, b: a + b).lower(x, x).as_text(),
             "triton_kernel_call_ffi, raw": triton_text, "triton_kernel_call, raw": legacy_form(triton_text)}
    pairs = []
    for name, text in texts.items():
        call, wait = raw_side(text, buffers, (1024,), np.float32)
        np.testing.assert_allclose(xla.to_numpy_via_host_copy(call()[0]), 2 * host, err_msg=name)
        pairs.append((name, lambda c=call, w=wait: w(c())))
    print("\n1024-float add, call + wait: | side | us |")
    for name, us in interleaved(pairs, 21, 200).items():
        print(f"| {name} | {us:.1f} us |")


if __name__ == "__main__":
    main()
