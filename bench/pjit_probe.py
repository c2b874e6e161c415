"""Probe (issue 16): can numax drive jaxlib's C++ jit fast path (`_jax.pjit`) with its own cache miss?

A standalone experiment; the library is untouched. It compiles a function with numax.jit, takes the
executable out of numax's cache, and builds a `PjitFunction` whose cache-miss function runs that
executable and returns jaxlib's "fastpath data" (the executable, output avals and shardings, the
output tree), so that later calls with the same signature run in C++ alone. Three ways to feed it:

- raw:      jaxlib's own arrays in and out (numax.Array's `_buffer`): the ceiling of the C++ path;
- node:     numax.Array registered as a node of a private jaxlib pytree registry (Python flatten and
            unflatten per array), so numax.Arrays go in and come out;
- dataclass: the same through `register_dataclass_node` (flatten read in C++, unflatten calls the
            class with keywords), on a stand-in class with numax.Array's fields (the aval, backend and
            device as the node's metadata: compared and hashed per call);
- bare:     a stand-in whose only pytree field is the buffer: the aval rides on the raw array (jaxlib
            keeps the aval object it is given, so numax's own avals would), the device is read lazily.

Each is checked against numax.jit for equal results, then timed (interleaved medians) against
numax.jit and jax.jit on a tiny add, a 17-array pytree and an MLP train step (6 in, 5 out).
`--no-jax` runs the raw path in a process that never imports jax and asserts that it stays so.

    python bench/pjit_probe.py [--quick] [--no-jax]
"""

import argparse
import collections
import os
import statistics
import sys
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from jaxlib import _jax  # noqa: E402
from numax.lowering import xla  # noqa: E402
from numax.lowering.array import Array  # noqa: E402

import numax  # noqa: E402
import numax.numpy as xnp  # noqa: E402

# jaxlib reads this tuple's fields by name (jax's `pxla.MeshExecutableFastpathData` in 0.10.2).
FastpathData = collections.namedtuple("FastpathData", [
    "xla_executable", "out_pytree_def", "in_shardings", "out_shardings", "out_avals", "out_committed",
    "kept_var_bitvec", "in_device_local_layouts", "const_args"])


def install_jit_state():
    """The C++ path refuses to run ("disable_jit_state is not set") until three process-wide config slots
    are filled; jax fills them with its own flags on import. Without jax, numax must fill them."""
    if "jax" in sys.modules:
        return "jax's"
    _jax.jax_jit.set_disable_jit_state(_jax.config.Config("numax_disable_jit", False, include_in_jit_key=False))
    _jax.jax_jit.set_enable_x64_state(_jax.config.Config("numax_enable_x64", False, include_in_jit_key=True))
    _jax.jax_jit.set_post_hook_state(_jax.config.Config("numax_jit_post_hook", None, include_in_jit_key=False))
    return "numax's"


def refuse_shard_arg(value, *rest):
    """jaxlib calls this for arguments that are neither its arrays nor known host types' fast cases."""
    raise TypeError(f"the probe passes only device arrays, got {type(value).__name__}")


class StandIn:
    """numax.Array's fields under the names `register_dataclass_node` passes as keywords (timing only)."""

    __slots__ = ("_buffer", "aval", "_backend", "_device")

    def __init__(self, _buffer, aval, _backend, _device):
        self._buffer, self.aval, self._backend, self._device = _buffer, aval, _backend, _device


class BareArray:
    """A stand-in for a numax.Array built from its buffer alone (timing only): the aval is the one the raw
    array carries (numax's own for program outputs; jaxlib's transfers here carry a stand-in aval that is
    never weakly typed, which a real design would replace by numax's), the device is looked up when asked."""

    __slots__ = ("_buffer", "aval", "_host_value")

    def __init__(self, _buffer):
        self._buffer = _buffer
        self.aval = _buffer.aval
        self._host_value = None

    @property
    def _device(self):
        return xla.buffer_device(self._buffer)


WRAPPERS = (StandIn, BareArray)


class Probe:
    """A PjitFunction around one numax-compiled executable (one signature), fed in one of four ways."""

    def __init__(self, jitted, example_args, mode):
        self.jitted, self.mode = jitted, mode
        jitted(*example_args)
        (entry,) = jitted.cache.entries.values()
        self.executable = executable = entry.executable
        assert not executable.const_buffers, "the probe's functions have no hoisted constants"
        backend, device = executable.backend, executable.device
        sharding = backend.sharding(device)
        self.registry = registry = _jax.pytree.PyTreeRegistry()
        if mode == "node":
            registry.register_node(Array, lambda a: ((a._buffer,), (a.aval, a._backend, a._device)),
                                   lambda aux, children: Array(aux[0], children[0], aux[1], aux[2]))
        elif mode == "dataclass":
            registry.register_dataclass_node(StandIn, ["_buffer"], ["aval", "_backend", "_device"])
        elif mode == "bare":
            registry.register_dataclass_node(BareArray, ["_buffer"], [])
        # The output tree the C++ path unflattens into: raw leaves, or one array node per leaf.
        example_out = jitted(*example_args)
        out_leaves = numax.tree.leaves(example_out)
        wrapped = [self._wrap_raw(leaf) for leaf in out_leaves]
        _, out_pytree_def = registry.flatten(numax.tree.unflatten(numax.tree.structure(example_out), wrapped))
        num_in = len(executable.in_avals)
        self.fastpath = FastpathData(
            executable.compiled, out_pytree_def, [sharding] * num_in, [sharding] * len(out_leaves),
            list(executable.out_avals),  # numax's own avals: jaxlib reads .shape, .dtype and .weak_type
            [True] * len(out_leaves), [True] * num_in, [None] * num_in, [])
        self.misses = 0
        self.function = _jax.pjit(f"probe_{mode}", None, self.cache_miss, [], [], ("numax-probe", mode, id(self)),
                                  registry, refuse_shard_arg, _jax.PjitFunctionCache(capacity=16))

    def _wrap_raw(self, leaf):
        if self.mode == "raw":
            return leaf._buffer
        if self.mode == "dataclass":
            return StandIn(aval=leaf.aval, _buffer=leaf._buffer, _backend=leaf._backend, _device=leaf._device)
        if self.mode == "bare":
            return BareArray(_buffer=leaf._buffer)
        return leaf

    def cache_miss(self, *args, **kwargs):
        """Called by jaxlib when the signature is new or not one it can compute (tracers, foreign types):
        the Python path runs and says how to run the next call in C++."""
        self.misses += 1
        leaves, _ = self.registry.flatten((args, kwargs))
        if not all(type(leaf) is _jax.ArrayImpl for leaf in leaves):  # not ours to speed up: no fast path
            return self.jitted(*args), None, False
        raw_outs = xla.execute(self.executable.compiled, leaves, self.executable.handlers)
        return self.fastpath.out_pytree_def.unflatten(raw_outs), self.fastpath, False

    def __call__(self, *args):
        return self.function(*args)

    def to_inputs(self, args):
        """The probe's inputs for numax arguments: raw arrays, numax Arrays or stand-ins."""
        return numax.tree.map(self._wrap_raw, args)


def wait(out):
    """Blocks until every output of a probe, numax or jax call is computed; returns them."""
    for leaf in numax.tree.leaves(out):
        (leaf._buffer if type(leaf) in WRAPPERS else leaf).block_until_ready()
    return out


def to_numpy(out):
    """Host values of a probe's outputs, whichever of the three forms they take."""
    def host(leaf):
        if type(leaf) is Array:
            return np.asarray(leaf)
        return xla.to_numpy(leaf._buffer if type(leaf) in WRAPPERS else leaf)

    return [host(leaf) for leaf in numax.tree.leaves(out)]


# --- cases ------------------------------------------------------------------------------------------
def tiny_case():
    return (lambda np_module, value_and_grad: lambda a, b: a + b), (xnp.ones(3), xnp.ones(3))


def pytree_case(pairs=8):
    def chain(params, x):
        for w, b in params:
            x = x * w + b
        return x

    return (lambda np_module, value_and_grad: chain), ([(xnp.ones(3), xnp.ones(3)) for _ in range(pairs)],
                                                       xnp.ones(3))


def train_step_case(batch=32, sizes=(64, 128, 10)):
    rng = np.random.default_rng(0)
    params = [(xnp.asarray(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m)), xnp.zeros(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = xnp.asarray(rng.normal(size=(batch, sizes[0])).astype(np.float32))
    y = xnp.asarray(rng.normal(size=(batch, sizes[-1])).astype(np.float32))

    def make_step(np_module, value_and_grad):
        def loss(params, x, y):
            (w1, b1), (w2, b2) = params
            return np_module.mean((np_module.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

        def step(params, x, y):
            value, grads = value_and_grad(loss)(params, x, y)
            return value, [(w - 1e-2 * gw, b - 1e-2 * gb) for (w, b), (gw, gb) in zip(params, grads)]

        return step

    return make_step, (params, x, y)


CASES = {"tiny jit (2 in, 1 out)": tiny_case, "17-array pytree (17 in, 1 out)": pytree_case,
         "MLP train step (6 in, 5 out)": train_step_case}


def interleaved(pairs, repeats, inner):
    """bench/dispatch.py's timing loop, repeated here: that module imports jax, which --no-jax must not."""
    samples = {name: [] for name, _ in pairs}
    for _ in range(repeats):
        for name, fn in pairs:
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def check_same(probe, numax_out, probe_out):
    expected = [np.asarray(leaf) for leaf in numax.tree.leaves(numax_out)]
    got = to_numpy(probe_out)
    assert len(expected) == len(got), (len(expected), len(got))
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)


def probe_contract(probe, args):
    """What the C++ path does with the inputs numax must handle: returns {situation: outcome}."""
    outcomes = {}
    inputs = probe.to_inputs(args)
    misses = probe.misses
    probe(*inputs)
    outcomes["repeat call"] = f"{probe.misses - misses} cache misses"
    # Another shape: a signature the C++ cache has not seen goes to the cache miss.
    misses = probe.misses
    if probe.mode in ("raw", "node"):
        other = probe.to_inputs(numax.tree.map(lambda a: xnp.ones((5,) + a.shape), args))
        try:
            probe(*other)
            outcomes["other shape"] = f"{probe.misses - misses} cache miss (numax's path decides)"
        except Exception as error:  # the probe's cache miss has one executable only
            outcomes["other shape"] = (f"{probe.misses - misses} cache miss, then {type(error).__name__} (the "
                                       "probe's miss has one executable, for the first shape)")
    # A numpy array instead of a device array: jaxlib computes its signature, then calls shard_arg.
    misses = probe.misses
    host = numax.tree.map(np.asarray, args)
    try:
        probe(*host)
        outcomes["numpy argument"] = f"ran, {probe.misses - misses} cache misses"
    except Exception as error:
        outcomes["numpy argument"] = f"{type(error).__name__}: {str(error)[:90]}"
    # A deleted argument.
    doomed = probe.to_inputs(numax.tree.map(lambda a: a + 0, args))
    first = numax.tree.leaves(doomed, is_leaf=lambda x: type(x) in (_jax.ArrayImpl, *WRAPPERS))[0]
    (first._buffer if type(first) in (Array, *WRAPPERS) else first).delete()
    misses = probe.misses
    try:
        probe(*doomed)
        outcomes["deleted argument"] = "ran (!)"
    except Exception as error:
        outcomes["deleted argument"] = (f"{type(error).__name__}: {str(error)[:90]} "
                                        f"({probe.misses - misses} cache misses)")
    # A tracer: not a type the C++ path knows, so every such call goes to the cache miss.
    if probe.mode == "node":
        misses = probe.misses
        numax.grad(lambda *a: numax.tree.leaves(probe(*a))[0].sum())(*args)
        outcomes["tracer argument"] = f"{probe.misses - misses} cache misses (ran numax's traced path)"
    # Threads: four threads calling at once.
    errors = []

    def worker():
        try:
            for _ in range(200):
                probe(*inputs)
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcomes["4 threads x 200 calls"] = f"{len(errors)} errors"
    return outcomes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-jax", action="store_true", help="raw path only, in a process without jax")
    args = parser.parse_args()
    repeats, inner = (9, 300) if args.quick else (25, 2000)
    if not args.no_jax:
        import jax  # noqa: F401  (before install_jit_state: jax's flags fill the slots)
    print(f"# jaxlib {_jax.__name__} state: {install_jit_state()}, Python {sys.version.split()[0]}")
    modes = ["raw"] if args.no_jax else ["raw", "node", "dataclass", "bare"]
    for title, make_case in CASES.items():
        make_fun, case_args = make_case()
        fun = make_fun(xnp, numax.value_and_grad)
        jitted = numax.jit(fun)
        probes = {mode: Probe(numax.jit(fun), case_args, mode) for mode in modes}
        numax_out = jitted(*case_args)
        # The train step is timed as a latency (each call waited for); the others as dispatch alone.
        waited = wait if "MLP" in title else (lambda out: out)
        pairs = [("numax.jit", lambda: waited(jitted(*case_args)))]
        for mode, probe in probes.items():
            inputs = probe.to_inputs(case_args)
            check_same(probe, numax_out, probe(*inputs))
            pairs.append((f"pjit {mode}", lambda probe=probe, inputs=inputs: waited(probe(*inputs))))
        if not args.no_jax:
            import jax

            jax_fun = jax.jit(make_fun(jax.numpy, jax.value_and_grad))
            jax_args = jax.tree.map(lambda a: jax.numpy.asarray(np.asarray(a)), case_args)
            jax_fun(*jax_args)
            pairs.append(("jax.jit", lambda: waited(jax_fun(*jax_args))))
        times = interleaved(pairs, repeats, inner if "MLP" not in title else inner // 10)
        base = times.get("jax.jit", times["numax.jit"])
        print(f"\n## {title}")
        print("| path | us per call | / " + ("jax.jit" if "jax.jit" in times else "numax.jit") + " |")
        print("| --- | --- | --- |")
        for name, value in times.items():
            print(f"| {name} | {value:.2f} | {value / base:.2f}x |")
        misses = {mode: probe.misses for mode, probe in probes.items()}
        print(f"cache misses while timing: {misses} (1 = the first call only)")
        if title.startswith("tiny"):
            for mode, probe in probes.items():
                print(f"contract ({mode}): {probe_contract(probe, case_args)}")
    if args.no_jax:
        assert "jax" not in sys.modules, "the C++ path imported jax"
        print("\njax was never imported")


if __name__ == "__main__":
    main()
