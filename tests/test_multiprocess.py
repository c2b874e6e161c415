"""numax across processes: `numax.distributed` on XLA's distributed runtime, pmap over every process's devices.

Two worker processes (tests/multiprocess_worker.py) on localhost, 2 forced CPU devices each, join one run
through a coordinator on a free port and train a small MLP data-parallel under pmap over the 4 global
devices, then on global arrays under sharded jit; each checks itself against the one-process numpy
computation and the parent checks their reports. A process killed mid-run must make the other fail, not
hang. Processes are killed and reaped in `finally`, every wait is bounded. `initialize`'s errors and
one-process runs are compared with jax.
"""

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest
from multiprocess_worker import reference_training

import numax
from numax.sharding import Mesh, NamedSharding, PartitionSpec

WORKER = pathlib.Path(__file__).with_name("multiprocess_worker.py")
DEADLINE = 60  # seconds any one wait may take before the test fails instead of hanging
# A survivor must be gone this soon: the workers' heartbeat timeout is 3 s, their shutdown timeout 10 s.
FAILS_WITHIN = 20


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(devices=2):
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu",
               PYTHONUNBUFFERED="1")
    env.pop("PJRT_NPROC", None)  # numax must size the CPU thread pool itself (see lowering/xla/backends.py)
    return env


@contextlib.contextmanager
def _workers(scenario, folder, count=2):
    """`count` worker processes running `scenario`; their output goes to files (no pipe can fill up)."""
    port = _free_port()
    processes, outputs = [], []
    try:
        for index in range(count):
            out, err = (open(folder / f"worker{index}.{kind}", "w+") for kind in ("out", "err"))
            outputs += [out, err]
            command = [sys.executable, str(WORKER), str(index), str(count), str(port), scenario]
            processes.append(subprocess.Popen(command, stdout=out, stderr=err, env=_environment(), cwd=WORKER.parent))
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        for process in processes:
            process.wait(timeout=DEADLINE)
        for stream in outputs:
            stream.close()


def _read(folder, index, kind):
    return (folder / f"worker{index}.{kind}").read_text()


def test_two_processes_train_data_parallel_and_agree_with_one_process(tmp_path):
    with _workers("train", tmp_path) as processes:
        for process in processes:
            process.wait(timeout=DEADLINE)
    reports = []
    for index, process in enumerate(processes):
        output = _read(tmp_path, index, "out")
        assert process.returncode == 0, f"worker {index} failed:\n{output}\n{_read(tmp_path, index, 'err')[-3000:]}"
        lines = [line for line in output.splitlines() if line.startswith("REPORT ")]
        assert len(lines) == 1, output
        reports.append(json.loads(lines[0][len("REPORT "):]))
    for index, report in enumerate(reports):
        assert report["process_id"] == index
        assert report["failures"] == [], f"worker {index}: " + "\n".join(report["failures"])
    history = reference_training()
    np.testing.assert_allclose(reports[0]["losses"], [loss for _, loss in history], rtol=2e-5)
    for name, value in history[-1][0].items():
        for report in reports:
            np.testing.assert_allclose(report["params"][name], value, rtol=2e-5, atol=2e-6)
        assert reports[0]["params"][name] == reports[1]["params"][name]  # the same bits in both processes


@pytest.mark.parametrize("victim", [1, 0], ids=["worker_killed", "coordinator_killed"])
def test_a_killed_process_makes_the_other_fail_soon_instead_of_hanging(tmp_path, victim):
    with _workers("until_killed", tmp_path) as processes:
        started = time.monotonic()
        while not all("step 2" in _read(tmp_path, index, "out") for index in range(2)):
            assert all(p.poll() is None for p in processes), [_read(tmp_path, i, "err")[-2000:] for i in range(2)]
            assert time.monotonic() - started < DEADLINE, "the workers did not start training"
            time.sleep(0.05)
        processes[victim].kill()
        killed_at = time.monotonic()
        survivor = processes[1 - victim]
        try:
            survivor.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the surviving process still runs {DEADLINE} s after the other was killed")
        took = time.monotonic() - killed_at
    errors = _read(tmp_path, 1 - victim, "err")
    assert survivor.returncode != 0, errors[-3000:]
    # Seen: a gloo error in the collective that lost its peer ("Connection closed by peer", or gloo's own
    # abort on a torn message), or, when the survivor waits in a collective, the coordination service ending
    # it once the dead process misses its heartbeats (3 s in the worker).
    assert any(clue in errors.lower() for clue in ("gloo", "heartbeat", "distributed service detected fatal errors")), \
        errors[-3000:]
    assert took < FAILS_WITHIN, f"the surviving process took {took:.1f} s to fail"


_INITIALIZE_ERRORS = textwrap.dedent("""
    import json, socket, sys
    library = sys.argv[1]
    if library == "jax":
        import jax as api
    else:
        import numax as api
    found = []
    def attempt(*args, **kwargs):
        try:
            api.distributed.initialize(*args, cluster_detection_method="deactivate", **kwargs)
            found.append("ok")
        except Exception as error:
            found.append(type(error).__name__)
    attempt(None, 2, 0)
    attempt("127.0.0.1:1", None, 0)
    attempt("127.0.0.1:1", 2, None)
    attempt("127.0.0.1:1", 2, 2)
    attempt("127.0.0.1:1", 2, "0")
    attempt("127.0.0.1:1", 2.0, 0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    attempt(f"127.0.0.1:{port}", 1, 0, initialization_timeout=20)
    found.append(api.distributed.is_initialized())
    attempt(f"127.0.0.1:{port}", 1, 0)  # twice
    found += [api.process_index(), api.process_count(), api.device_count(), api.local_device_count()]
    attempt(f"127.0.0.1:{port}", 1, 0)  # after the backend started
    api.distributed.shutdown()
    found.append(api.distributed.is_initialized())
    print(json.dumps(found))
""")


def test_initialize_errors_and_a_one_process_run_match_jax():
    results = {}
    for library in ("numax", "jax"):
        done = subprocess.run([sys.executable, "-c", _INITIALIZE_ERRORS, library], capture_output=True, text=True,
                              env=_environment(devices=3), timeout=DEADLINE)
        assert done.returncode == 0, done.stderr[-3000:]
        results[library] = json.loads(done.stdout.strip().splitlines()[-1])
    assert results["numax"] == results["jax"]
    assert results["numax"][:6] == ["ValueError"] * 4 + ["TypeError"] * 2
    assert results["numax"][6:] == ["ok", True, "RuntimeError", 0, 1, 3, 3, "RuntimeError", False]


def test_initialize_after_a_computation_is_refused():
    numax.devices()
    with pytest.raises(RuntimeError, match="must be called before any numax computation"):
        numax.distributed.initialize("127.0.0.1:1", 2, 0)
    assert not numax.distributed.is_initialized()


SPECS = [PartitionSpec("x", "y"), PartitionSpec("y"), PartitionSpec(None, ("x", "y")), PartitionSpec()]


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_make_array_from_process_local_data_in_one_process_matches_jax(spec):
    data = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    ours = numax.make_array_from_process_local_data(NamedSharding(Mesh(np.array(numax.devices()).reshape(4, 2),
                                                                       ("x", "y")), spec), data)
    theirs = jax.make_array_from_process_local_data(jax.sharding.NamedSharding(
        jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y")), jax.sharding.PartitionSpec(*spec)), data)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), data)
    expected = {shard.device.id: (shard.index, np.asarray(shard.data)) for shard in theirs.addressable_shards}
    assert len(ours.addressable_shards) == len(expected)
    for shard in ours.addressable_shards:
        index, block = expected[shard.device.id]
        assert shard.index == index
        np.testing.assert_array_equal(np.asarray(shard.data), block)


def test_make_array_from_process_local_data_checks_the_global_shape_as_jax():
    sharding = NamedSharding(Mesh(np.array(numax.devices()[:4]), ("x",)), PartitionSpec("x"))
    jax_sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()[:4]), ("x",)),
                                              jax.sharding.PartitionSpec("x"))
    data = np.ones((8, 2), np.float32)
    with pytest.raises(ValueError):
        jax.make_array_from_process_local_data(jax_sharding, data, (16, 2))
    with pytest.raises(ValueError):
        numax.make_array_from_process_local_data(sharding, data, (16, 2))
    tree = numax.make_array_from_process_local_data(sharding, {"a": data, "b": data[:4]})
    assert tree["a"].shape == (8, 2) and tree["b"].shape == (4, 2)
    assert tree["b"].addressable_shards[1].index == (slice(1, 2), slice(None))
