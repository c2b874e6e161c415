"""Devices of another runtime (jax's) are refused with a ValueError wherever numax meets them, instead of
reaching XLA: a numax buffer or program on a jax device made XLA fail and then crashed the process. Run in a
fresh process, so a regression fails this test instead of killing the test run."""

import json
import os
import subprocess
import sys

_SCRIPT = """
import json
import jax, numpy as np, numax
from numax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax_mesh = Mesh(np.array(jax.devices()), ('x',))
attempts = {
    "device_put to a device": lambda: numax.device_put(np.ones(8), jax.devices()[1]) * 2,
    "device_put by a sharding": lambda: numax.device_put(np.ones(8), NamedSharding(jax_mesh, P('x'))) * 2,
    "jit(device=)": lambda: numax.jit(lambda x: x * 2, device=jax.devices()[1])(np.ones(3)),
    "jit(out_shardings=)": lambda: numax.jit(lambda x: x * 2, out_shardings=NamedSharding(jax_mesh, P('x')))(
        np.ones(8)),
    "pmap(devices=)": lambda: numax.pmap(lambda x: x, devices=jax.devices())(np.ones(8)),
}
outcomes = {}
for name, attempt in attempts.items():
    try:
        attempt()
        outcomes[name] = "returned"
    except ValueError as error:
        outcomes[name] = "ValueError" if "numax" in str(error) and "devices()" in str(error) else str(error)
print(json.dumps(outcomes))
"""


def test_devices_of_another_runtime_are_refused_without_a_crash():
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout.splitlines()[-1])
    assert outcomes == {name: "ValueError" for name in outcomes} and len(outcomes) == 5, outcomes
