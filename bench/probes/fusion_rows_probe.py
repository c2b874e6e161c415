"""Where the time of the generated row kernel for bench/fusion.py case (c) goes, on one GPU (issue 14's
diagnosis; needs torch for CUDA events).

Case (c), layernorm + GELU + residual in float16 over 16384x4096, is one row region. Its generated kernel is
launched by Triton's own launcher on torch tensors (device time by CUDA events, triton.testing.do_bench) over
rows per program and warps, as generated and with memory hints (loads marked evict-first, streaming stores).
Each form's largest difference from XLA's result is printed beside its time, and the copy floor and XLA's own
program (wall clock, back to back) frame them. (Session 8 compared three forms of GELU's tanh here: the
hardware's tanh.approx.f32 won, 102 us against libdevice's 157, and is what the fuser now emits for 16-bit
results.)

    python3 bench/probes/fusion_rows_probe.py [--quick]
"""

import argparse
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from fusion import layernorm_gelu_residual  # noqa: E402
from fusion_probe import wall_us  # noqa: E402
from numax.lowering import fusion_codegen  # noqa: E402
from numax.transforms import fusion  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

LOAD, STORE = "tl.load(in0_ptr + offsets)", "tl.store(out0_ptr + offsets, "
LOAD_FIRST = 'tl.load(in0_ptr + offsets, eviction_policy="evict_first")'
STORE_STREAMING = 'tl.store(out0_ptr + offsets, cache_modifier=".cs", value='


def variants(source):
    """The kernel's source with the memory hints a streaming row kernel might want: (label, source). Loads that
    read each byte once may be marked to leave the L2 cache first, and stores may bypass it (".cs", streaming)."""
    assert LOAD in source and STORE in source, "the generated kernel's loads and stores changed form"
    load_first = source.replace(LOAD, LOAD_FIRST)
    return [("as generated", source), ("load evict_first", load_first),
            ("store .cs", source.replace(STORE, STORE_STREAMING)), ("both", load_first.replace(STORE, STORE_STREAMING))]


def persistent(source):
    """The kernel's source rewritten so that each program loops over row blocks (`tl.range` over the blocks from
    its id, stepping by the number of programs, `STAGES` deep): the body moves into the loop."""
    head, body = source.split("    row = tl.program_id(0) * ROWS", 1)
    head = head.replace("ROWS: tl.constexpr)", "ROWS: tl.constexpr, STAGES: tl.constexpr)")
    lines = ("        row = block_index * ROWS" + body).splitlines()
    loop = "    for block_index in tl.range(tl.program_id(0), tl.cdiv(m, ROWS), tl.num_programs(0), num_stages=STAGES):"
    return head + "\n".join([loop, lines[0]] + ["    " + line if line.strip() else line for line in lines[1:]]) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a quarter of the rows")
    rows = 4096 if parser.parse_args().quick else 16384
    length = 4096
    rng = np.random.default_rng(0)
    x_host = rng.normal(size=(rows, length)).astype(np.float16)
    scale_host, shift_host = (rng.normal(size=length).astype(np.float16) for _ in range(2))
    f = layernorm_gelu_residual(xnp, numax.lax.rsqrt, numax.nn.gelu)

    x, scale, shift = (numax.device_put(a) for a in (x_host, scale_host, shift_host))
    plain = numax.jit(f)
    expected = np.asarray(plain(x, scale, shift)).astype(np.float32)
    xla_us = wall_us(lambda: plain(x, scale, shift))

    closed = numax.make_jaxpr(f)(x_host, scale_host, shift_host)
    fused, kernels = fusion.fuse_with_kernels(closed, "gpu")
    (call,) = [e for e in fused.program.equations if e.primitive.name == "triton_call"]
    shapes = [v.aval.shape for v in call.inputs]
    assert shapes == [(rows, length), (1, length), (1, length)], shapes
    (kernel,) = kernels
    tx = torch.from_numpy(x_host).cuda()
    tscale, tshift = (torch.from_numpy(a).cuda().reshape(1, length) for a in (scale_host, shift_host))
    out = torch.empty_like(tx)
    floor = triton.testing.do_bench(lambda: tx.clone()) * 1e3
    print(f"## (c) layernorm + GELU + residual f16 {rows}x{length}: copy floor {floor:.1f} us (CUDA events); "
          f"XLA's program {xla_us:.1f} us (wall clock, back to back) = {floor / xla_us:.0%}")
    print("| memory hints | ROWS | warps | kernel | fraction of the floor | largest difference from XLA |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, source in variants(kernel.source):
        jit_fn = fusion_codegen.load_kernel(kernel.name, source)
        for per_program, warps in ((1, 4), (1, 8), (1, 16), (2, 8)):
            def launch():
                jit_fn[(triton.cdiv(rows, per_program),)](tx, tscale, tshift, length, rows, out, BLOCK=length,
                                                          ROWS=per_program, num_warps=warps)

            launch()
            difference = float(np.max(np.abs(out.float().cpu().numpy() - expected)))
            us = triton.testing.do_bench(launch) * 1e3
            print(f"| {label} | {per_program} | {warps} | {us:.1f} us | {floor / us:.0%} | {difference:.3g} |")
    processors = torch.cuda.get_device_properties(0).multi_processor_count
    jit_fn = fusion_codegen.load_kernel(kernel.name, persistent(kernel.source))
    print(f"\n| persistent: programs per SM ({processors} SMs) | stages | warps | kernel | fraction of the floor |"
          " largest difference from XLA |")
    print("| --- | --- | --- | --- | --- | --- |")
    for per_sm in (1, 2, 4, 8):
        for stages in (1, 2, 3):
            for warps in (4, 8):
                def launch():
                    jit_fn[(min(rows, per_sm * processors),)](tx, tscale, tshift, length, rows, out, BLOCK=length,
                                                              ROWS=1, STAGES=stages, num_warps=warps)

                try:
                    launch()
                except Exception as error:  # noqa: BLE001 (a form Triton refuses is reported, not fatal)
                    print(f"| {per_sm} | {stages} | {warps} | {type(error).__name__} | | |")
                    continue
                difference = float(np.max(np.abs(out.float().cpu().numpy() - expected)))
                us = triton.testing.do_bench(launch) * 1e3
                print(f"| {per_sm} | {stages} | {warps} | {us:.1f} us | {floor / us:.0%} | {difference:.3g} |")


if __name__ == "__main__":
    main()
