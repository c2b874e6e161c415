"""GPU readback of a fresh result (issue 16): what jaxlib's host copy returns (did_copy, ownership) and how long
np.asarray takes for numax and jax, side by side, and with the copy to the host started first.

    python3 bench/gpu_readback_probe.py [--alone numax|jax]

With --alone, one library alone in the process (the other's client never made): np.asarray of a 16 MB result.
"""

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


if __name__ == "__main__":
    if "--alone" in sys.argv:
        alone(sys.argv[sys.argv.index("--alone") + 1])
    else:
        main()
        rewrapped()
