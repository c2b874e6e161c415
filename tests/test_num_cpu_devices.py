"""`jax_num_cpu_devices` (set first thing in JAX's sharding tutorials) makes that many CPU devices, as in jax,
when no XLA_FLAGS device count is given; each library runs in a fresh process of its own."""

import json
import os
import subprocess
import sys

import pytest

_SCRIPT = """
import json, {lib}
{lib}.config.update("jax_num_cpu_devices", {count})
print(json.dumps([len({lib}.devices()), {lib}.config.jax_num_cpu_devices]))
"""


def _device_count(lib, count, environment=None):
    env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    env.update(environment or {})
    done = subprocess.run([sys.executable, "-c", _SCRIPT.format(lib=lib, count=count)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("count", [3, 8])
def test_num_cpu_devices_makes_that_many_devices_as_in_jax(count):
    assert _device_count("numax", count) == _device_count("jax", count) == [count, count]
