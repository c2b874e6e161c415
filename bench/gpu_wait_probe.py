"""How late the GPU runtime says that a program is done, and whether the CUDA driver can say it sooner (issue 16's
call + wait latency; issue 14's per-call gap). bench/fusion_call_timeline_probe.py found 75-90 us between a
program's last kernel and the moment PJRT marks its results ready, against 8-12 us for torch's synchronize.

This probe drives libcuda through ctypes. It prints the primary context's flags, checks on a long program that
`cuCtxSynchronize` waits for XLA's stream, then times call + wait with PJRT's wait, with the driver's
synchronize alone, and with the driver's synchronize followed by PJRT's wait, and how long PJRT's readiness
lags behind the synchronize. Readback (np.asarray) is timed after each kind of wait.

    python3 bench/gpu_wait_probe.py [--cases PREFIX,...]   (e.g. --cases "(a),1024")
"""

import collections
import ctypes
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
from dispatch import median_time  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

cuda = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


def primary_context():
    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    flags, active = ctypes.c_uint(), ctypes.c_int()
    check(cuda.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)), "GetState")
    print(f"primary context: active={active.value} flags=0x{flags.value:x} (sched bits 0x{flags.value & 7:x}: "
          "0 auto, 1 spin, 2 yield, 4 blocking sync)")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "Retain")
    check(cuda.cuCtxSetCurrent(context), "SetCurrent")
    return context


def synchronize():
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")


def covers_xla_stream():
    @numax.jit
    def long_program(x):
        return numax.lax.fori_loop(0, 300, lambda i, y: numax.numpy.tanh(y @ x), x)

    x = xnp.ones((2048, 2048)) / 2048
    long_program(x).block_until_ready()
    start = time.perf_counter()
    y = long_program(x)
    launched = time.perf_counter()
    synchronize()
    synced = time.perf_counter()
    ready_right_after = y._buffer.is_ready()
    y.block_until_ready()
    pjrt = time.perf_counter()
    z = long_program(x)
    z.block_until_ready()
    reference = time.perf_counter()
    print(f"long program: call {1e3 * (launched - start):.2f} ms, cuCtxSynchronize returned after "
          f"{1e3 * (synced - start):.2f} ms (ready by PJRT then: {ready_right_after}), PJRT wait done at "
          f"{1e3 * (pjrt - start):.2f} ms; the same program with PJRT's wait alone: {1e3 * (reference - pjrt):.2f} ms")


def cases():
    """name -> (numax call, jax call) of the same program."""
    import jax
    import jax.numpy as jnp

    def layer(np_, rsqrt, gelu):
        def f(x, scale, shift):
            mean = x.mean(-1, keepdims=True)
            centered = x - mean
            variance = (centered * centered).mean(-1, keepdims=True)
            return gelu(centered * rsqrt(variance + 1e-5) * scale + shift) + x
        return f

    rng = np.random.default_rng(0)
    host = [rng.normal(size=(16384, 4096)).astype(np.float16), np.ones(4096, np.float16), np.zeros(4096, np.float16)]
    ln = numax.jit(layer(xnp, numax.lax.rsqrt, numax.nn.gelu), fusion="triton")
    jln = jax.jit(layer(jnp, jax.lax.rsqrt, jax.nn.gelu))
    args, jargs = [xnp.asarray(v) for v in host], [jnp.asarray(v) for v in host]
    add, jadd = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
    a, ja = xnp.ones(1024), jnp.ones(1024)
    small = [rng.normal(size=(32, 512, 512)).astype(np.float16), np.ones(512, np.float16), np.zeros(512, np.float16)]
    sargs, jsargs = [xnp.asarray(v) for v in small], [jnp.asarray(v) for v in small]
    from fusion import chain

    big = [rng.normal(size=64 << 20).astype(np.float32) for _ in range(2)]
    chain_numax, chain_jax = numax.jit(chain(xnp)), jax.jit(chain(jnp))
    bargs, jbargs = [xnp.asarray(v) for v in big], [jnp.asarray(v) for v in big]
    return {"1024-element add": (lambda: add(a, a), lambda: jadd(ja, ja)),
            "(a) 64M float32 chain of 8 ops": (lambda: chain_numax(*bargs), lambda: chain_jax(*jbargs)),
            "layernorm + GELU + residual 32x512x512 f16": (lambda: ln(*sargs), lambda: jln(*jsargs)),
            "(c) layernorm + GELU + residual 16384x4096 f16": (lambda: ln(*args), lambda: jln(*jargs))}


def lag_of_pjrt(call):
    """After cuCtxSynchronize returns, how long until PJRT's is_ready() says True (us, median)."""
    lags = []
    for _ in range(100):
        y = call()
        synchronize()
        start = time.perf_counter()
        while not y._buffer.is_ready():
            pass
        lags.append((time.perf_counter() - start) * 1e6)
        y.block_until_ready()
    return statistics.median(lags)


def main():
    numax.numpy.zeros(1).block_until_ready()  # the runtime makes its context first
    primary_context()
    covers_xla_stream()
    only = sys.argv[sys.argv.index("--cases") + 1].split(",") if "--cases" in sys.argv else None
    for name, (call, jax_call) in cases().items():
        if only is not None and not any(name.startswith(prefix) for prefix in only):
            continue
        call().block_until_ready()

        def driver_wait():
            y = call()
            synchronize()
            return y

        def driver_readback():
            y = call()
            y.copy_to_host_async()
            synchronize()
            return np.asarray(y)

        kept = collections.deque(maxlen=8)

        def driver_wait_keeping_outputs():
            kept.append(driver_wait())

        rows = {
            "numax: call alone (returns)": lambda: call(),
            "numax: call + cuCtxSynchronize, the last 8 outputs kept alive": driver_wait_keeping_outputs,
            "numax: call + block_until_ready": lambda: call().block_until_ready(),
            "numax: call + cuCtxSynchronize": driver_wait,
            "numax: call + cuCtxSynchronize + block_until_ready": lambda: driver_wait().block_until_ready(),
            "jax: call + block_until_ready": lambda: jax_call().block_until_ready(),
            "numax: call + np.asarray": lambda: np.asarray(call()),
            "numax: call + copy_to_host_async + cuCtxSynchronize + np.asarray": driver_readback,
            "jax: call + np.asarray": lambda: np.asarray(jax_call()),
        }
        print(f"\n## {name}")
        for row, fn in rows.items():
            repeats = 5 if ("16384" in name or "64M" in name) and "asarray" in row else 200
            median_time(fn, min(repeats, 20))
            print(f"  {row:66s} {median_time(fn, repeats):9.1f} us")
        print(f"  PJRT's readiness after cuCtxSynchronize returned: {lag_of_pjrt(call):.1f} us later")


if __name__ == "__main__":
    main()
