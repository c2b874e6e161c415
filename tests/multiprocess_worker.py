"""One process of the multi-process tests (tests/test_multiprocess.py starts two of these).

    python tests/multiprocess_worker.py PROCESS_ID NUM_PROCESSES PORT SCENARIO

Each process joins the run with `numax.distributed.initialize`, builds its share of one global batch and
runs a data-parallel training step of a small MLP under `pmap` over every process's devices, with the
gradients averaged by `lax.pmean`, and again on global arrays under jit with in/out shardings. Scenario
`train` checks the results against the one-process numpy computation in this process and prints a
`REPORT {json}` line for the parent to compare; scenario `until_killed` trains until something fails (the
parent kills the other process meanwhile); scenario `multihost_utils` checks
numax.experimental.multihost_utils across the processes (for tests/test_multihost_utils.py). The numpy
reference below is imported by the parent too; numax is imported only in `main`.
"""

import json
import sys

import numpy as np

GLOBAL_BATCH, FEATURES, HIDDEN = 16, 3, 5
LEARNING_RATE = 0.1
STEPS = 3


def initial_params():
    rng = np.random.default_rng(1)
    return {"w1": rng.normal(size=(FEATURES, HIDDEN)).astype(np.float32) / 2,
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": rng.normal(size=(HIDDEN, 1)).astype(np.float32) / 2,
            "b2": np.zeros(1, np.float32)}


def global_batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(GLOBAL_BATCH, FEATURES)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    return x, y


def reference_step(params, x, y):
    """(new params, loss) of one SGD step on the whole batch, by hand-written backpropagation in float64."""
    p = {name: value.astype(np.float64) for name, value in params.items()}
    hidden = np.tanh(x @ p["w1"] + p["b1"])
    error = hidden @ p["w2"] + p["b2"] - y
    loss = np.mean(error ** 2)
    d_out = 2 * error / error.size
    d_hidden = (d_out @ p["w2"].T) * (1 - hidden ** 2)
    grads = {"w2": hidden.T @ d_out, "b2": d_out.sum(0), "w1": x.T @ d_hidden, "b1": d_hidden.sum(0)}
    return {name: p[name] - LEARNING_RATE * grads[name] for name in p}, loss


def reference_training():
    """The parameters and losses after each of STEPS steps, computed in one process."""
    params, (x, y) = initial_params(), global_batch()
    history = []
    for _ in range(STEPS):
        params, loss = reference_step(params, x, y)
        history.append((params, loss))
    return history


def _local_share(value, process_id, num_processes, local_devices):
    """This process's rows of a global batch, split into one block per local device."""
    rows = len(value) // num_processes
    mine = value[process_id * rows:(process_id + 1) * rows]
    return mine.reshape(local_devices, rows // local_devices, *value.shape[1:])


def _loss(params, x, y):
    import numax.numpy as mnp

    hidden = mnp.tanh(x @ params["w1"] + params["b1"])
    return mnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def _sgd_step(numax, params, x, y, mean=lambda value: value):
    """One SGD step; `mean` averages the loss and gradients over the devices (pmap) or is nothing (jit)."""
    loss, grads = numax.value_and_grad(_loss)(params, x, y)
    grads, mean_loss = mean(grads), mean(loss)
    return numax.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads), mean_loss, loss


def _make_train_step(numax):
    from numax import lax

    def step(params, x, y):
        return _sgd_step(numax, params, x, y, lambda value: lax.pmean(value, "batch"))

    # params replicated (in and out), batch split; the last output: each device's own loss
    return numax.pmap(step, "batch", in_axes=(None, 0, 0), out_axes=(None, None, 0))


def _check_close(what, ours, reference, failures):
    ours, reference = np.asarray(ours), np.asarray(reference)
    if ours.shape != reference.shape or not np.allclose(ours, reference, rtol=2e-5, atol=2e-6):
        failures.append(f"{what}: numax {ours.tolist()} != reference {reference.tolist()}")


def _check_topology(numax, process_id, num_processes, failures):
    from numax import lax

    local = numax.local_device_count()
    expected = {"process_index": process_id, "process_count": num_processes, "device_count": local * num_processes,
                "devices": local * num_processes, "local_devices": local}
    found = {"process_index": numax.process_index(), "process_count": numax.process_count(),
             "device_count": numax.device_count(), "devices": len(numax.devices()),
             "local_devices": len(numax.local_devices())}
    if found != expected:
        failures.append(f"topology {found} != {expected}")
    if any(d.process_index != process_id for d in numax.local_devices()):
        failures.append(f"local_devices() holds another process's device: {numax.local_devices()}")
    # Device indices along the pmap axis are global: process p's devices are p*local, p*local+1, ...
    gathered = numax.pmap(lambda x: lax.all_gather(lax.axis_index("i"), "i"), "i")(np.zeros(local))
    expected_rows = np.tile(np.arange(local * num_processes), (local, 1))
    _check_close("all_gather(axis_index)", gathered, expected_rows, failures)
    total = numax.pmap(lambda x: lax.psum(x, "i"), "i")(np.full(local, process_id + 1.0, np.float32))
    _check_close("psum across processes", total, np.full(local, local * num_processes * (num_processes + 1) / 2),
                 failures)


def sharded_jit_half(numax, process_id, num_processes, failures):
    """The same training as global arrays (each process building its rows' blocks with
    make_array_from_process_local_data) under jit with in_shardings / out_shardings over all 4 devices."""
    from numax.sharding import AxisType, NamedSharding, PartitionSpec

    mesh = numax.make_mesh((numax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))
    split, replicated = NamedSharding(mesh, PartitionSpec("batch")), NamedSharding(mesh, PartitionSpec())
    x, y = global_batch()
    rows = len(x) // num_processes
    mine = slice(process_id * rows, (process_id + 1) * rows)
    x_global, y_global = (numax.make_array_from_process_local_data(split, v[mine]) for v in (x, y))
    for shard in x_global.addressable_shards:
        if shard.device.process_index != process_id:
            failures.append(f"an addressable shard lies on {shard.device}, another process's device")
        _check_close(f"global batch block on {shard.device}", shard.data, x[shard.index], failures)
    step = numax.jit(lambda p, a, b: _sgd_step(numax, p, a, b)[:2], in_shardings=(replicated, split, split),
                     out_shardings=replicated)
    params = numax.make_array_from_process_local_data(replicated, initial_params())
    for number, (reference_params, reference_loss) in enumerate(reference_training()):
        params, loss = step(params, x_global, y_global)
        # replicated over both processes: read as a whole, and this process's copy
        _check_close(f"jit step {number} loss", loss, reference_loss, failures)
        for name in reference_params:
            _check_close(f"jit step {number} {name}", params[name], reference_params[name], failures)
            _check_close(f"jit step {number} {name} (local copy)", params[name].addressable_shards[0].data,
                         reference_params[name], failures)


def multihost_utils_checks(numax, process_id, num_processes, failures):
    """Scenario `multihost_utils`: numax.experimental.multihost_utils across the processes, against numpy."""
    from numax.experimental import multihost_utils as mu
    from numax.sharding import Mesh, NamedSharding, PartitionSpec

    everyone = np.arange(num_processes)
    mine = {"a": np.full(3, process_id, np.float32), "s": np.int32(process_id)}
    stacked = mu.process_allgather(mine)
    _check_close("process_allgather a", stacked["a"], np.repeat(everyone[:, None], 3, axis=1), failures)
    _check_close("process_allgather s", stacked["s"], everyone, failures)
    tiled = mu.process_allgather(mine, tiled=True)
    _check_close("process_allgather tiled a", tiled["a"], np.repeat(everyone, 3), failures)
    _check_close("process_allgather tiled s", tiled["s"], everyone, failures)  # a scalar is stacked
    if tiled["s"].dtype != np.int32:
        failures.append(f"process_allgather changed int32 to {tiled['s'].dtype}")
    sent = {"x": np.arange(3, dtype=np.float32) + 10 * process_id, "flag": np.array([process_id == 0, True])}
    _check_close("broadcast_one_to_all", mu.broadcast_one_to_all(sent)["x"], np.arange(3), failures)
    _check_close("broadcast_one_to_all bool", mu.broadcast_one_to_all(sent)["flag"], [True, True], failures)
    from_last = mu.broadcast_one_to_all(sent, is_source=process_id == num_processes - 1)["x"]
    _check_close("broadcast_one_to_all from the last", from_last, np.arange(3) + 10 * (num_processes - 1), failures)
    mu.sync_global_devices("multihost_utils")
    mu.assert_equal({"same": np.arange(4)}, "must agree")
    try:
        mu.assert_equal(np.array([process_id]), "differs by process")
        failures.append("assert_equal passed on values that differ between processes")
    except AssertionError as error:
        if "differs by process" not in str(error):
            failures.append(f"assert_equal's message lacks fail_message: {error}")
    own = np.arange(4, dtype=np.float32) * (process_id + 1)
    same = np.arange(4, dtype=np.float32)  # replicated: every process must pass the same value
    flat = Mesh(np.array(numax.devices()), ("x",))
    grid = Mesh(np.array(numax.devices()).reshape(num_processes, numax.local_device_count()), ("host", "dev"))
    concatenated = np.concatenate([np.arange(4) * (p + 1) for p in range(num_processes)])
    for mesh, spec, local, expected in ((flat, PartitionSpec("x"), own, concatenated),
                                        (grid, PartitionSpec("host"), own, concatenated),
                                        (grid, PartitionSpec(), same, same)):
        where = f"{mesh.axis_names} {spec}"
        global_array = mu.host_local_array_to_global_array(local, mesh, spec)
        if global_array.shape != expected.shape or global_array.sharding != NamedSharding(mesh, spec):
            failures.append(f"host_local_array_to_global_array {where}: {global_array.shape} {global_array.sharding}")
        _check_close(f"allgather of the global array {where}", mu.process_allgather(global_array, tiled=True),
                     expected, failures)
        doubled = numax.jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, spec))(global_array)
        back = mu.global_array_to_host_local_array(doubled, mesh, spec)
        _check_close(f"global_array_to_host_local_array {where}", back, 2 * local, failures)
        if not back.is_fully_addressable:
            failures.append(f"global_array_to_host_local_array {where} is not host-local")
    try:
        mu.process_allgather(global_array)
        failures.append("process_allgather(tiled=False) took a global array")
    except ValueError:
        pass


def main(process_id, num_processes, port, scenario):
    import numax

    numax.distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id, initialization_timeout=30,
                                 heartbeat_timeout_seconds=3, shutdown_timeout_seconds=10)
    if scenario == "multihost_utils":
        failures = []
        multihost_utils_checks(numax, process_id, num_processes, failures)
        print("REPORT " + json.dumps({"process_id": process_id, "failures": failures}), flush=True)
        numax.distributed.shutdown()
        return
    local = numax.local_device_count()
    x, y = global_batch()
    x_local, y_local = (_local_share(v, process_id, num_processes, local) for v in (x, y))
    step = _make_train_step(numax)
    params = initial_params()
    if scenario == "until_killed":
        for count in range(10 ** 6):
            params, loss, _ = step(params, x_local, y_local)
            numax.block_until_ready(loss)
            print(f"step {count}", flush=True)
    failures = []
    _check_topology(numax, process_id, num_processes, failures)
    losses = []
    history = reference_training()
    device_rows = x_local.shape[1]
    for number, (reference_params, reference_loss) in enumerate(history):
        before = initial_params() if number == 0 else history[number - 1][0]
        # each device's own loss, before pmean: this process holds its own devices' blocks only
        device_losses = [reference_step(before, x[rows], y[rows])[1] for rows in (
            slice(k * device_rows, (k + 1) * device_rows) for k in range(process_id * local, (process_id + 1) * local))]
        params, loss, per_device_loss = step(params, x_local, y_local)
        _check_close(f"step {number} loss", loss, reference_loss, failures)
        _check_close(f"step {number} per-device losses", per_device_loss, device_losses, failures)
        for name in reference_params:
            _check_close(f"step {number} {name}", params[name], reference_params[name], failures)
        losses.append(float(np.asarray(loss)))
    if not all(d.process_index == process_id for d in params["w1"].devices()):
        failures.append("a pmap output holds blocks on another process's devices")
    sharded_jit_half(numax, process_id, num_processes, failures)
    report = {"process_id": process_id, "losses": losses, "failures": failures,
              "params": {name: np.asarray(value).tolist() for name, value in params.items()}}
    print("REPORT " + json.dumps(report), flush=True)
    numax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
