"""Issue 13's GPU checks of the Triton engine (lowering/triton_gpu.py), on an NVIDIA GPU.

Part 1 calls the engine directly: each check builds a StableHLO module around the lowering rule
`lower_triton_call_gpu` (with the `triton_call` primitive's params), compiles it for the GPU, runs it and
compares with numpy: vector add (also between other ops), row softmax, scalars of each type, aliasing,
zeroed outputs (also of an aliased buffer), several outputs, float16, heuristics, autotuning (also with an
aliased input, which the plugin must restore between timing runs), the disk cache, and timings.
Part 2 runs the same kernels through `numax.triton.triton_call` (eagerly and under jit) when it exists.

Usage, from the repo root on the GPU machine: python3 bench/gpu_triton_check.py
One line per check ("ok" or "FAIL" with the reason); the exit status is the number of failures.
"""

import os
import sys
import tempfile
import time
import traceback

import numpy as np
import triton

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("NUMAX_CACHE_DIR", tempfile.mkdtemp(prefix="numax-triton-check-"))

from numax.core.avals import ShapedArray  # noqa: E402
from numax.lowering import triton_gpu, xla  # noqa: E402
from numax.lowering.lower import ModuleContext, RuleContext  # noqa: E402
from numax.lowering.stablehlo import FunctionBuilder, aval_type  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from sample_triton_kernels import (  # noqa: E402
    accumulate_kernel,
    add_kernel,
    atomic_sum_into_kernel,
    atomic_sum_kernel,
    autotuned_accumulate_kernel,
    autotuned_add_kernel,
    axpy_kernel,
    heuristic_softmax_kernel,
    softmax_kernel,
    sum_and_difference_kernel,
)


def blocks(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


# --- running the engine on its own -----------------------------------------------------------------------
BACKEND = DEVICE = None  # the GPU backend and its first device, set by main()


def build_module(inputs, out_avals, surrounded, **params):
    """Module text: main(inputs) -> the kernel call's results (inputs and results doubled by XLA ops
    around the call when `surrounded`)."""
    builder = FunctionBuilder()
    in_avals = [ShapedArray(np.shape(x), np.asarray(x).dtype) for x in inputs]
    args = []
    for i, aval in enumerate(in_avals):
        args.append(f"%arg{i}")
        builder.types[args[-1]] = aval_type(aval)
    operands = [builder.op1("stablehlo.add", [a, a], builder.types[a]) for a in args] if surrounded else args
    ctx = RuleContext(ModuleContext("gpu", devices=[DEVICE]), builder, in_avals, list(out_avals))
    results = triton_gpu.lower_triton_call_gpu(ctx, *operands, out_avals=tuple(out_avals), **params)
    if surrounded:
        results = [builder.op1("stablehlo.add", [r, r], builder.types[r]) for r in results]
    out_types = [aval_type(a) for a in out_avals]
    signature = ", ".join(f"{a}: {builder.types[a]}" for a in args)
    return "\n".join([f"module @triton_check {{\n  func.func public @main({signature}) -> ({', '.join(out_types)}) {{",
                      *builder.lines, f"    return {', '.join(results)} : {', '.join(out_types)}", "  }\n}"])


class Program:
    """A compiled kernel-call module and the way to run it on host arrays."""

    def __init__(self, inputs, out_shapes, *, kernel, grid, call_spec, metaparams=(), aliases=(), zeroed=(),
                 num_warps=None, surrounded=False, name=""):
        self.out_avals = [ShapedArray(shape, dtype) for shape, dtype in out_shapes]
        self.text = build_module(inputs, self.out_avals, surrounded, kernel=kernel, grid=grid, call_spec=call_spec,
                                 metaparams=tuple(sorted(metaparams)), input_output_aliases=tuple(aliases),
                                 zeroed_outputs=zeroed, num_warps=num_warps, num_stages=None, num_ctas=1,
                                 debug=False, name=name)
        self.executable = xla.compile_module(self.text, BACKEND, [DEVICE])
        self.handlers = [xla.result_handler(a.shape, a.dtype, BACKEND, DEVICE) for a in self.out_avals]

    def buffers(self, inputs):
        return [xla.device_put(np.ascontiguousarray(x), BACKEND, DEVICE) for x in inputs]

    def run_buffers(self, buffers):
        return xla.execute(self.executable, buffers, self.handlers)

    def __call__(self, *inputs):
        return [xla.to_numpy_via_host_copy(out) for out in self.run_buffers(self.buffers(inputs))]


def run(inputs, out_shapes, **options):
    return Program(inputs, out_shapes, **options)(*inputs)


# --- checks ----------------------------------------------------------------------------------------------
failures = []


def check(name, function):
    try:
        function()
        print(f"ok    {name}")
    except Exception as error:  # a failed check is reported, and the others still run
        failures.append(name)
        print(f"FAIL  {name}: {type(error).__name__}: {error}")
        traceback.print_exc(limit=4, file=sys.stdout)


def close(actual, expected, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), rtol=rtol,
                               atol=atol)


rng = np.random.default_rng(0)
N = 100_003
x32, y32 = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
add_spec = (("array", 0), ("array", 1), ("scalar", N))


def vector_add():
    (out,) = run([x32, y32], [((N,), np.float32)], kernel=add_kernel, grid=blocks(N), call_spec=add_spec,
                 metaparams=[("BLOCK", 1024)])
    np.testing.assert_array_equal(out, x32 + y32)


def vector_add_between_ops():
    (out,) = run([x32, y32], [((N,), np.float32)], kernel=add_kernel, grid=blocks(N), call_spec=add_spec,
                 metaparams=[("BLOCK", 1024)], surrounded=True)
    np.testing.assert_array_equal(out, 2 * (2 * x32 + 2 * y32))


def row_softmax(kernel=softmax_kernel, metaparams=(("BLOCK", 1024),)):
    x = rng.standard_normal((37, 781), dtype=np.float32)
    (out,) = run([x], [(x.shape, np.float32)], kernel=kernel, grid=(x.shape[0],),
                 call_spec=(("array", 0), ("scalar", x.shape[1])), metaparams=metaparams, num_warps=8)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def scalars():
    for a, n in ((0.5, N), (np.float64(-1.25), np.int64(N)), (np.float32(3.0), np.uint32(N)), (2, N)):
        (out,) = run([x32, y32], [((N,), np.float32)], kernel=axpy_kernel, grid=blocks(N),
                     call_spec=(("scalar", a), ("array", 0), ("array", 1), ("scalar", n)), metaparams=[("BLOCK", 512)])
        close(out, np.float32(a) * x32 + y32, rtol=1e-6)


def aliasing():
    program = Program([x32, y32], [((N,), np.float32)], kernel=accumulate_kernel, grid=blocks(N),
                      call_spec=add_spec, metaparams=[("BLOCK", 1024)], aliases=[(0, 0)])
    assert "output_operand_alias" in program.text
    np.testing.assert_array_equal(program(x32, y32)[0], x32 + y32)


def zeroed_outputs():
    for _ in range(3):  # fresh output buffers each time: whatever memory they reuse, they start at zero
        (out,) = run([x32], [((1,), np.float32)], kernel=atomic_sum_kernel, grid=blocks(N),
                     call_spec=(("array", 0), ("scalar", N)), metaparams=[("BLOCK", 1024)], zeroed=(0,))
        close(out[0], x32.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def zeroed_aliased_output():
    accumulator = np.full((1,), 1000.0, np.float32)  # zeroing the output zeroes this buffer: it is the output
    (out,) = run([x32, accumulator], [((1,), np.float32)], kernel=atomic_sum_into_kernel, grid=blocks(N),
                 call_spec=(("array", 0), ("array", 1), ("scalar", N)), metaparams=[("BLOCK", 1024)],
                 aliases=[(1, 0)], zeroed=(0,))
    close(out[0], x32.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def several_outputs():
    total, difference = run([x32, y32], [((N,), np.float32), ((N,), np.float32)], kernel=sum_and_difference_kernel,
                            grid=blocks(N), call_spec=add_spec, metaparams=[("BLOCK", 1024)])
    np.testing.assert_array_equal(total, x32 + y32)
    np.testing.assert_array_equal(difference, x32 - y32)


def float16():
    x16, y16 = x32.astype(np.float16), y32.astype(np.float16)
    (out,) = run([x16, y16], [((N,), np.float16)], kernel=add_kernel, grid=blocks(N), call_spec=add_spec,
                 metaparams=[("BLOCK", 1024)])
    np.testing.assert_array_equal(out, x16 + y16)


def autotuned():
    launches = triton_gpu.kernel_launches(
        autotuned_add_kernel, [ShapedArray((N,), np.float32)] * 2, [ShapedArray((N,), np.float32)], grid=blocks(N),
        call_spec=add_spec, metaparams={}, zeroed_outputs=(), num_warps=None, num_stages=None, num_ctas=1,
        debug=False, compute_capability=xla.gpu_compute_capability(DEVICE))
    assert len(launches) == 3, launches
    program = Program([x32, y32], [((N,), np.float32)], kernel=autotuned_add_kernel, grid=blocks(N),
                      call_spec=add_spec)
    for _ in range(2):  # the first run times the configs, the second runs the chosen one
        np.testing.assert_array_equal(program(x32, y32)[0], x32 + y32)


def autotuned_aliased():
    """The plugin times each config on the real buffers; it must restore the aliased input after."""
    program = Program([x32, y32], [((N,), np.float32)], kernel=autotuned_accumulate_kernel, grid=blocks(N),
                      call_spec=add_spec, aliases=[(0, 0)])
    np.testing.assert_array_equal(program(x32, y32)[0], x32 + y32)


def disk_cache():
    cache = triton_gpu.kernel_cache
    misses = cache.misses
    cache.clear_memory()
    vector_add()
    assert cache.misses == misses and cache.disk_hits >= 1, (cache.misses, cache.disk_hits)
    print(f"      cache {cache.directory}: {cache.misses} compiles, {cache.disk_hits} disk hits, "
          f"{cache.memory_hits} memory hits")


def median_call_ms(program, buffers, calls):
    program.run_buffers(buffers)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        outs = program.run_buffers(buffers)
        xla.block_until_ready(outs, program.backend.polls_waits)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def timings():
    for n, calls in ((1024, 300), (64 * 2**20, 30)):
        x, y = np.ones(n, np.float32), np.ones(n, np.float32)
        program = Program([x, y], [((n,), np.float32)], kernel=add_kernel, grid=blocks(n),
                          call_spec=(("array", 0), ("array", 1), ("scalar", n)), metaparams=[("BLOCK", 1024)])
        print(f"      vector add n={n}: {median_call_ms(program, program.buffers([x, y]), calls):.3f} ms per call "
              "(median, with block_until_ready)")


# --- part 2: the user API, when the branch with numax.triton is merged ------------------------------------
def user_api_checks():
    try:
        import numax
        import numax.triton as nt
    except ImportError as error:
        print(f"skip  numax.triton checks: {error} (part 1 checked the engine)")
        return
    import numax.numpy as xnp

    def add(x, y):
        return nt.triton_call(x, y, x.size, kernel=add_kernel, out_shape=numax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=blocks(x.size), BLOCK=1024)

    def api_add():
        np.testing.assert_array_equal(np.asarray(add(xnp.asarray(x32), xnp.asarray(y32))), x32 + y32)
        np.testing.assert_array_equal(np.asarray(numax.jit(lambda x, y: add(x * 2, y) + 1)(x32, y32)),
                                      (2 * x32 + y32) + 1)

    def api_alias_donated():
        def accumulate(x, y):
            return nt.triton_call(x, y, x.size, kernel=accumulate_kernel, out_shape=numax.ShapeDtypeStruct(
                x.shape, x.dtype), grid=blocks(x.size), input_output_aliases={0: 0}, BLOCK=1024)
        out = numax.jit(accumulate, donate_argnums=0)(xnp.asarray(x32), xnp.asarray(y32))
        np.testing.assert_array_equal(np.asarray(out), x32 + y32)

    def api_zeroed_and_autotune():
        out = nt.triton_call(xnp.asarray(x32), N, kernel=atomic_sum_kernel,
                             out_shape=numax.ShapeDtypeStruct((1,), np.float32), grid=blocks(N), zeroed_outputs=(0,),
                             BLOCK=1024)
        close(np.asarray(out)[0], x32.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
        out = nt.triton_call(xnp.asarray(x32), xnp.asarray(y32), N, kernel=autotuned_add_kernel,
                             out_shape=numax.ShapeDtypeStruct((N,), np.float32), grid=blocks(N))
        np.testing.assert_array_equal(np.asarray(out), x32 + y32)

    check("numax.triton_call: vector add, eager and between ops under jit", api_add)
    check("numax.triton_call: aliasing under jit with donation", api_alias_donated)
    check("numax.triton_call: zeroed outputs, autotuned kernel", api_zeroed_and_autotune)


def main():
    import jaxlib

    global BACKEND, DEVICE
    BACKEND = xla.get_backend("gpu")
    DEVICE = BACKEND.devices[0]
    print(f"triton {triton.__version__}, jaxlib {jaxlib.__version__}, device {DEVICE}, "
          f"compute capability {xla.gpu_compute_capability(DEVICE)}")
    for name, function in [
        ("vector add (n not a multiple of the block, grid callable)", vector_add),
        ("vector add between XLA ops", vector_add_between_ops),
        ("row softmax", row_softmax),
        ("row softmax, BLOCK from triton.heuristics",
         lambda: row_softmax(kernel=heuristic_softmax_kernel, metaparams=())),
        ("scalars: fp32, fp64, int32, int64, uint32", scalars),
        ("input/output aliasing", aliasing),
        ("zeroed outputs", zeroed_outputs),
        ("zeroed output aliased to an input", zeroed_aliased_output),
        ("several outputs", several_outputs),
        ("float16 arrays", float16),
        ("triton.autotune (3 configs timed by the plugin)", autotuned),
        ("triton.autotune with an aliased input (restored after timing)", autotuned_aliased),
        ("disk cache hit after clearing the memory cache", disk_cache),
        ("timings", timings),
    ]:
        check(name, function)
    user_api_checks()
    print(f"{len(failures)} failed" + (f": {', '.join(failures)}" if failures else ""))
    return len(failures)


if __name__ == "__main__":
    sys.exit(main())
