"""GPU readback of a fresh result (issue 16): what jaxlib's host copy returns (did_copy, ownership) and how long
np.asarray takes for numax and jax, side by side, and with the copy to the host started first.

    python3 bench/gpu_readback_probe.py [--alone numax|jax] [--profile]

With --alone, one library alone in the process (the other's client never made): np.asarray of a 16 MB result.
With --profile (needs torch), the CUDA runtime and driver calls and the copies on the GPU of one 16 MB readback per
library, on one clock from torch's profiler: how many copies, of which kind (pageable or pinned), and how long.
With --held, the host memory still held after ten readbacks whose results were dropped, per way of reading back.
With --sequence numax|jax, ten readbacks one by one (each result made just before), then ten more with a 16 MB
NumPy array freed just before each (glibc then serves the next 16 MB from pages it already holds).
"""

import ctypes
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402


def median_us(make, use, rounds=9, keep=5):
    """Median time of use(value) over fresh values from make(); `keep` results stay alive per round, as in
    bench/dispatch.py's readback."""
    samples = []
    for _ in range(rounds):
        values = [make() for _ in range(keep)]
        start = time.perf_counter()
        kept = [use(value) for value in values]
        samples.append((time.perf_counter() - start) / keep * 1e6)
        del kept
    return statistics.median(samples)


def main():
    add, jadd = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
    def host_copy(value):
        return value._buffer._single_device_array_to_np_array_did_copy()

    for n in (3, 1 << 22):
        x, jx = xnp.ones(n), jnp.ones(n)
        y = add(x, x).block_until_ready()
        array, did_copy = y._buffer._single_device_array_to_np_array_did_copy()
        print(f"{n} elements: did_copy {did_copy}, writeable {array.flags.writeable}, base {type(array.base)}")
        numax_fresh = lambda: add(x, x).block_until_ready()  # noqa: E731
        jax_fresh = lambda: jadd(jx, jx).block_until_ready()  # noqa: E731

        def started_first(value):
            value._buffer.copy_to_host_async()
            return np.asarray(value)

        rows = {
            "numax np.asarray": (numax_fresh, np.asarray),
            "jax np.asarray": (jax_fresh, np.asarray),
            "numax jaxlib host copy alone": (numax_fresh, host_copy),
            "jax jaxlib host copy alone": (jax_fresh, lambda v: v._single_device_array_to_np_array_did_copy()),
            "numax copy_to_host_async + np.asarray": (numax_fresh, started_first),
            "jax copy_to_host_async + np.asarray": (jax_fresh, lambda v: (v.copy_to_host_async(), np.asarray(v))),
        }
        for _ in range(2):
            for name, (make, use) in rows.items():
                print(f"    {name:40s} {median_us(make, use):9.1f} us")


def rewrapped():
    """The host copy of numax's result wrapped as numax does (GSPMDSharding) and with jaxlib's SingleDeviceSharding,
    as jax wraps its own; and the options jax made its GPU client with (numax's client is another one)."""
    from numax.lowering import xla

    add = numax.jit(lambda a, b: a + b)
    x = xnp.ones(1 << 22)
    template = add(x, x).block_until_ready()
    device = template._device
    single = xla._jax.SingleDeviceSharding(device)

    def host_copy(value):
        return value._single_device_array_to_np_array_did_copy()

    variants = {
        "numax wrap (GSPMDSharding)": lambda: add(x, x).block_until_ready()._buffer,
        "SingleDeviceSharding wrap": lambda: xla._jax.ArrayImpl(
            template._buffer.aval, single, [add(x, x).block_until_ready()._buffer], True, True),
    }
    for _ in range(2):
        for name, make in variants.items():
            try:
                print(f"    {name:30s} {median_us(make, host_copy):9.1f} us")
            except Exception as error:  # a wrapping that jaxlib refuses
                print(f"    {name:30s} refused: {type(error).__name__}: {str(error)[:200]}")
    try:
        from jax._src import xla_bridge

        print("jax's GPU client options:", xla_bridge._options_from_jax_configs("cuda"))
    except Exception as error:  # (a private function of jax's; its name may change)
        print("jax's client options unknown:", error)

def alone(library):
    if library == "numax":
        add, x = numax.jit(lambda a, b: a + b), xnp.ones(1 << 22)
    else:
        add, x = jax.jit(lambda a, b: a + b), jnp.ones(1 << 22)
    fresh = lambda: add(x, x).block_until_ready()  # noqa: E731
    print(f"{library} alone (XLA_PYTHON_CLIENT_PREALLOCATE={os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE')}, "
          f"ALLOCATOR={os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR')}): 16 MB np.asarray "
          + ", ".join(f"{median_us(fresh, np.asarray):.0f}" for _ in range(3)) + " us")


def profiled_readbacks():
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    add, jadd = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
    x, jx = xnp.ones(1 << 22), jnp.ones(1 << 22)
    sides = {
        "numax result": lambda: add(x, x).block_until_ready(),
        "jax result": lambda: jadd(jx, jx).block_until_ready(),
        "numax device_put": lambda: numax.device_put(np.ones(1 << 22, np.float32)).block_until_ready(),
        "jax device_put": lambda: jax.device_put(np.ones(1 << 22, np.float32)).block_until_ready(),
    }
    for name, make in sides.items():
        for _ in range(3):
            np.asarray(make())
        values = [make() for _ in range(3)]
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
            for value in values:
                with record_function("readback"):
                    np.asarray(value)
        events = sorted(((e.name, e.time_range.start, e.time_range.end, e.device_type) for e in trace.events()),
                        key=lambda e: e[1])
        ranges = [e for e in events if e[0] == "readback" and e[3] == DeviceType.CPU]
        last = ranges[-1]
        print(f"{name}: readbacks " + ", ".join(f"{r[2] - r[1]:.0f}" for r in ranges) + " us; the last one:")
        for event in events:
            if last[1] <= event[1] <= last[2] and event[0] != "readback":
                where = "GPU " if event[3] == DeviceType.CUDA else "host"
                print(f"    {where} {event[1] - last[1]:9.1f} us {event[2] - event[1]:9.1f} us  {event[0][:90]}")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_libc = ctypes.CDLL(None)
_libc.mallinfo2.restype = _MallInfo2


def heap_state():
    """glibc's heap (MB): mmapped chunks, the main arena, its free bytes and its releasable top."""
    info = _libc.mallinfo2()
    return (f"mmapped {info.hblkhd / 2**20:6.1f} ({info.hblks}) arena {info.arena / 2**20:6.1f} "
            f"free {info.fordblks / 2**20:6.1f} top {info.keepcost / 2**20:6.1f}")


def heap_mb():
    info = _libc.mallinfo2()
    return (info.hblkhd + info.arena - info.fordblks) / 2**20


def held_after_readbacks():
    """Host memory still held after ten 16 MB readbacks whose arrays were all dropped, per way of reading back;
    and what refers to a numax result's jaxlib array after its readback."""
    import gc

    add, jadd = numax.jit(lambda a, b: a + b), jax.jit(lambda a, b: a + b)
    x, jx = xnp.ones(1 << 22), jnp.ones(1 << 22)
    template = add(x, x).block_until_ready()
    single = numax.lowering.xla._jax.SingleDeviceSharding(template._device)
    ways = {
        "numax np.asarray": (lambda: add(x, x).block_until_ready(), np.asarray),
        "numax jaxlib host copy": (lambda: add(x, x).block_until_ready()._buffer,
                                   lambda b: b._single_device_array_to_np_array_did_copy()),
        "numax result rewrapped (SingleDeviceSharding)": (
            lambda: numax.lowering.xla._jax.ArrayImpl(template._buffer.aval, single,
                                                      [add(x, x).block_until_ready()._buffer], True, True),
            lambda b: b._single_device_array_to_np_array_did_copy()),
        "jax np.asarray": (lambda: jadd(jx, jx).block_until_ready(), np.asarray),
    }
    collections = []
    gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
    for name, (make, read) in ways.items():
        gc.collect()
        start, collections[:] = heap_mb(), []
        for _ in range(10):
            value = make()
            host = read(value)
            del host, value
        held, automatic = heap_mb() - start, len(collections)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        gc.set_debug(0)
        kinds = sorted({type(garbage).__name__ for garbage in gc.garbage})
        gc.garbage.clear()
        gc.collect()
        print(f"{name:48s} held after 10 readbacks: {held:6.1f} MB ({automatic} automatic collections); after "
              f"gc.collect(): {heap_mb() - start:6.1f} MB; the collected cycles held {kinds}")
    value = add(x, x).block_until_ready()
    buffer = value._buffer
    before = sys.getrefcount(buffer)
    host = np.asarray(value)
    print(f"numax result's jaxlib array: references before readback {before}, after {sys.getrefcount(buffer)}; "
          f"referrers: {[type(r).__name__ for r in gc.get_referrers(buffer)]}; host base {type(host.base).__name__}"
          f" (references {sys.getrefcount(host.base)})")


def sequence(library):
    if library == "numax":
        add, x = numax.jit(lambda a, b: a + b), xnp.ones(1 << 22)
    else:
        add, x = jax.jit(lambda a, b: a + b), jnp.ones(1 << 22)
    for freed_first in (False, True):
        times = []
        for _ in range(10):
            value = add(x, x).block_until_ready()
            if freed_first:
                del_me = np.ones(1 << 22, np.float32)
                del del_me
            before = heap_state()
            start = time.perf_counter()
            host = np.asarray(value)
            times.append((time.perf_counter() - start) * 1e3)
            after = heap_state()
            del host, value
            if len(times) <= 4:
                print(f"    {times[-1]:5.1f} ms; before: {before}; after: {after}; freed: {heap_state()}")
        print(f"{library} readbacks, {'a 16 MB array freed first' if freed_first else 'plain':26s}: "
              + " ".join(f"{t:.1f}" for t in times) + " ms")


if __name__ == "__main__":
    if "--held" in sys.argv:
        held_after_readbacks()
    elif "--sequence" in sys.argv:
        sequence(sys.argv[sys.argv.index("--sequence") + 1])
    elif "--profile" in sys.argv:
        profiled_readbacks()
    elif "--alone" in sys.argv:
        alone(sys.argv[sys.argv.index("--alone") + 1])
    else:
        main()
        rewrapped()
