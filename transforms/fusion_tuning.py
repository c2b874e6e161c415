"""The fusion autotuner: for each region `transforms/fusion.py` would fuse, time its kernel under each candidate
launch configuration against XLA's own code for the region, on the device the program compiles for, and keep
the fastest; a region whose kernel is not faster stays with XLA.

A region is timed in a program of its own, on random inputs of its avals: `copies` of it, each on arguments of
its own (so that XLA cannot merge them), one after another (each copy's inputs pass through an
`optimization_barrier` together with the previous copy's results); enough copies that the device, not the
host, sets the pace of back-to-back calls (one on the CPU, whose kernels run in Triton's interpreter). The time per copy
is the best of a few rounds of back-to-back calls.

Decisions are kept per region signature (the kernel's source and launch candidates, XLA's equations, the
device kind and Triton's version) in memory and on disk, as checked JSON files under
`$NUMAX_CACHE_DIR/fusion/tuning` written atomically: a program compiled again, in this process or the next,
is not timed again. `numax_fusion_autotune` ("auto": on GPUs only; "always"; "never") says when to tune.
"""

import dataclasses
import hashlib
import json
import math
import os
import threading
import time

import numpy as np

from ..core import dtypes
from ..core.config import config
from ..core.dce import has_effects
from ..core.ir import ClosedProgram, Equation, Program, Var, all_equations
from ..lax.lax_extras import optimization_barrier_p
from ..lowering import dispatch, xla
from ..lowering.atomic_file import write_atomically
from ..lowering.fusion_codegen import kernel_directory
from . import fusion_regions as region_search

FORMAT = 1  # of the decision files
COPY_BYTES = 1 << 28  # a timing program's copies together read and write about this much (GPU)
MAX_COPIES = 32
ROUND_SECONDS = 0.01  # back-to-back calls per round: about this long
ROUNDS = 3
MARGIN = 0.97  # a kernel must take less than this fraction of XLA's time to replace XLA's code
WHOLE_PROGRAM_EQUATIONS = 400  # a whole program is timed in copies of at most about this many equations
# A whole program and its fused form are timed in turn this many times (each time `ROUNDS` rounds), each side's best
# kept: the two are compared under the same drift of clocks and load (on an H200 a GPT-2 step's verdict flipped
# between two runs timed one side after the other, bench/RESULTS.md).
WHOLE_PROGRAM_TURNS = 4


@dataclasses.dataclass(frozen=True)
class Decision:
    """The tuner's verdict on one region: `choice`, the index of the fastest launch candidate, or None where
    XLA's code is at least as fast; the measured microseconds per run; `remembered`: from an earlier tuning."""

    choice: object
    kernel_us: tuple
    xla_us: float
    remembered: bool = False

    def describe(self, launches=None):
        """The times behind the decision: the best kernel's and XLA's, and which won by how much; with the
        candidates' `launches` (their descriptions), each candidate's time too."""
        earlier = ", decided earlier" if self.remembered else ""
        best = min(self.kernel_us)
        if self.choice is not None:
            verdict = f"kernel {self.xla_us / best:.2f}x faster" if best > 0 else "kernel faster"
        else:
            verdict = f"XLA {best / self.xla_us:.2f}x faster" if self.xla_us > 0 else "XLA faster"
        each = ""
        if launches is not None and len(launches) > 1:
            each = " [" + "; ".join(f"{launch}: {us:.1f} us" for launch, us in zip(launches, self.kernel_us)) + "]"
        return f"kernel {best:.1f} us, XLA {self.xla_us:.1f} us: {verdict}{earlier}{each}"


def should_tune(platform):
    mode = config.fusion_autotune
    return mode == "always" or (mode == "auto" and platform == "gpu")


class RegionTuner:
    """Times regions on one `backend` and `device` (`timer`: how a compiled timing program is timed, in
    seconds per call, given its executable and argument buffers; tests give their own)."""

    def __init__(self, backend, device, timer=None):
        self.backend, self.device = backend, device
        self.timer = timer or seconds_per_call
        self.identity = [backend.platform, getattr(device, "device_kind", str(device)), _triton_version()]

    def decide(self, members, inputs, outputs, candidates, signature):
        """The Decision for a region (`members`: its equations, `inputs`/`outputs`: its Vars) among `candidates`,
        each a list of equations computing the same Vars (a `triton_call`, and what completes its results);
        `signature`: text naming the kernel and its candidates."""
        key = self.key(signature, str(Program([], inputs, outputs, members)))
        remembered = _decisions.get(key, len(candidates))
        if remembered is not None:
            return remembered
        buffers = self.random_buffers(inputs)
        *kernels, xla_code = self.timed_all([(program, inputs, outputs) for program in [*candidates, members]],
                                            buffers)
        kernel_us = tuple(timed() for timed in kernels)
        xla_us = xla_code()
        best = min(range(len(candidates)), key=kernel_us.__getitem__)
        decision = Decision(best if kernel_us[best] < MARGIN * xla_us else None, kernel_us, xla_us)
        _decisions.put(key, decision)
        return decision

    def program_is_faster(self, original, fused):
        """Does the ClosedProgram `fused` (its regions' kernels each faster than XLA's code alone) also run
        faster as a whole than `original`? XLA schedules, fuses and graphs a whole program differently from its
        regions one by one (a custom call ends a CUDA graph), so the whole program has the last word. Programs
        with side effects or loops (whose trip counts random inputs could not be trusted with) are not timed:
        their regions' decisions stand. Returns (verdict, Decision or None)."""
        program = original.program
        if _has_loops(program) or any(has_effects(eqn) for eqn in program.equations):
            return True, None
        inputs = program.constvars + program.invars
        key = self.key(str(original), str(fused))
        decision = _decisions.get(key, 1)
        if decision is None:
            consts = [dispatch.to_buffer(value, v.aval, self.backend, self.device)
                      for v, value in zip(program.constvars, original.consts)]
            buffers = consts + self.random_buffers(program.invars)
            copies = max(1, min(_copies(inputs, program.outvars), WHOLE_PROGRAM_EQUATIONS // len(program.equations)))
            timed = self.timed_all([(p.equations, p.constvars + p.invars, p.outvars) for p in (fused.program, program)],
                                   buffers, copies)
            times = [min(turns) for turns in zip(*([measure() for measure in timed]
                                                   for _ in range(WHOLE_PROGRAM_TURNS)))]
            decision = Decision(0 if times[0] < MARGIN * times[1] else None, (times[0],), times[1])
            _decisions.put(key, decision)
        return decision.choice is not None, decision

    def key(self, *texts):
        """The decision key of what `texts` describe, on this tuner's platform, device kind and Triton."""
        return hashlib.sha256(json.dumps(self.identity + list(texts)).encode()).hexdigest()

    def random_buffers(self, variables):
        """Device buffers of random values for `variables` (the same values for the same avals each time)."""
        rng = np.random.default_rng(0)
        return [dispatch.to_buffer(sample(v.aval, rng), v.aval, self.backend, self.device) for v in variables]

    def timed_all(self, programs, buffers, copies=None):
        """`timed` for each (equations, inputs, outputs) of `programs`, all on `buffers`: their compiles (XLA's
        and Triton's, which release the GIL) run side by side in threads, each under the calling thread's
        configuration; the timing itself is left to the caller, one program at a time."""
        overrides = config.thread_overrides()

        def timed(program):
            with config.overridden(overrides):
                return self.timed(*program, buffers, copies)

        if len(programs) == 1:
            return [timed(programs[0])]
        from concurrent.futures import ThreadPoolExecutor  # (imported by tuning only)

        with ThreadPoolExecutor(min(len(programs), os.cpu_count() or 1), "numax-fusion-tuning") as pool:
            return list(pool.map(timed, programs))

    def timed(self, equations, inputs, outputs, buffers, copies=None):
        """A function timing `equations` (compiled once, here) on `buffers`: microseconds per run."""
        if copies is None:
            copies = _copies(inputs, outputs)
        copies = 1 if self.backend.platform == "cpu" else copies
        closed = replicated(equations, inputs, outputs, copies)
        executable = dispatch.compile_program(closed, "fusion_tuning", self.backend, self.device)
        return lambda: self.timer(executable, buffers * copies) / copies * 1e6


def seconds_per_call(executable, buffers):
    """The best, over ROUNDS rounds, of the mean time of back-to-back calls (each round about ROUND_SECONDS)."""
    run, poll = executable.run_buffers, executable.backend.polls_waits
    xla.block_until_ready(run(buffers), poll)  # warm: the first call loads kernels
    start = time.perf_counter()
    xla.block_until_ready(run(buffers), poll)
    calls = max(1, min(100, int(ROUND_SECONDS / max(time.perf_counter() - start, 1e-6))))
    best = math.inf
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            outputs = run(buffers)
        xla.block_until_ready(outputs, poll)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _has_loops(program):
    """True when `program` or a program nested in it holds a while loop (`has_effects` looks inside for effects)."""
    return any(eqn.primitive.name == "while" for eqn in all_equations(program))


def _copies(inputs, outputs):
    moved = sum(v.aval.size * v.aval.dtype.itemsize for v in list(inputs) + list(outputs) if type(v) is Var)
    return max(1, min(MAX_COPIES, COPY_BYTES // max(moved, 1)))


def replicated(equations, inputs, outputs, copies):
    """A program running `equations` `copies` times one after another, each copy on inputs of its own (the
    same buffers may be passed to all: XLA cannot tell, so it merges no copies); each copy's inputs pass through
    an optimization barrier with the previous copy's results (XLA runs the copies in order and fuses none of
    them together), and every copy's results are the program's."""
    invars, program_equations, previous, kept = [], [], [], []
    for _ in range(copies):
        feed = [Var(v.aval) for v in inputs]
        invars += feed
        if previous:
            barred = [Var(v.aval) for v in previous + feed]
            program_equations.append(Equation(optimization_barrier_p, previous + feed, barred, {}))
            kept += barred[:len(previous)]
            feed = barred[len(previous):]
        renamed = dict(zip(inputs, feed))
        program_equations += region_search.copied(equations, renamed)
        results = [renamed.get(v, v) if type(v) is Var else v for v in outputs]
        previous = list(dict.fromkeys(v for v in results if type(v) is Var))
    return ClosedProgram(Program([], invars, kept + results, program_equations), [])


def sample(aval, rng, distinct=1 << 16):
    """Random values of `aval`'s shape and dtype (normal floats, small integers, booleans): `distinct` of them
    drawn, repeated to fill a larger shape (a region's time does not depend on more randomness than that)."""
    count = min(aval.size, distinct)
    if aval.dtype == dtypes.bool_:
        drawn = rng.random(count) < 0.5
    elif dtypes.is_integer(aval.dtype):
        drawn = rng.integers(0, 8, count)
    else:
        drawn = rng.standard_normal(count)
    return np.resize(drawn.astype(aval.dtype), aval.shape)


def _triton_version():
    import triton

    return triton.__version__


class _DecisionStore:
    """Decisions by key: in memory, and as checked JSON files written atomically."""

    def __init__(self):
        self.memory = {}
        self.lock = threading.Lock()

    def path(self, key):
        return os.path.join(kernel_directory(), "tuning", f"{key}.json")

    def get(self, key, candidates):
        with self.lock:
            found = self.memory.get(key)
        if found is not None:
            return found
        try:
            with open(self.path(key)) as file:
                record = json.load(file)
            decision = _checked(record, key, candidates)
        except (OSError, ValueError, TypeError, KeyError):
            return None  # absent, unreadable or not a decision of this region: tuned again, and rewritten
        with self.lock:
            self.memory[key] = decision
        return decision

    def put(self, key, decision):
        with self.lock:
            self.memory[key] = decision
        record = {"format": FORMAT, "key": key, "choice": decision.choice, "kernel_us": list(decision.kernel_us),
                  "xla_us": decision.xla_us}
        try:
            write_atomically(self.path(key), json.dumps(record))
        except OSError:
            pass  # a read-only cache directory: the decision holds for this process


def _checked(record, key, candidates):
    """The Decision a decision file holds, or a ValueError where it is not one for `key`."""
    choice, kernel_us, xla_us = record["choice"], record["kernel_us"], record["xla_us"]
    valid = (record["format"] == FORMAT and record["key"] == key and len(kernel_us) == candidates
             and (choice is None or (type(choice) is int and 0 <= choice < candidates))
             and all(isinstance(t, (int, float)) and t > 0 for t in kernel_us + [xla_us]))
    if not valid:
        raise ValueError(f"not a tuning decision of region {key}")
    return Decision(choice, tuple(float(t) for t in kernel_us), float(xla_us), remembered=True)


_decisions = _DecisionStore()
