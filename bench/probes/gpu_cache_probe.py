"""Why numax's persistent compilation cache rejected GPU entries ("Supported GPU plugins not found"): serialize an
executable and load it back, in the process that compiled it and in fresh ones, with and without jax's own GPU
client in the process, and with the compile options passed to the loader or not.

    python3 bench/probes/gpu_cache_probe.py   (every case, each in its own process; PROBE_PLATFORM=cpu to try it here)
"""

import os
import subprocess
import sys
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
SOURCE = "func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n" \
         "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"


def parts():
    import numpy as np
    from numax.lowering import xla

    backend = xla.get_backend(os.environ.get("PROBE_PLATFORM", "gpu"))
    devices = [backend.default_device]
    module = xla.parse_module("module {\n" + SOURCE + "}\n")
    options = xla.xc.CompileOptions()
    options.device_assignment = xla.xc.DeviceAssignment.create(np.array([[devices[0].id]], np.int32))
    return xla, backend, devices, module, options


def load(xla, backend, devices, blob, options):
    import numpy as np

    executable = backend.client.deserialize_executable(blob, backend.device_list(devices), options, [])
    x = xla.device_put(np.arange(4, dtype=np.float32), backend, devices[0])
    out = executable.execute_sharded([x]).disassemble_into_single_device_arrays()[0][0]
    if backend.platform == "cpu":
        return np.asarray(memoryview(out))
    return out._single_device_array_to_np_array_did_copy()[0]


def case(step, path, with_jax, with_options):
    if with_jax:
        import jax

        jax.devices()  # jax's own "cuda" client, made first
    xla, backend, devices, module, options = parts()
    if step == "write":
        executable = backend.client.compile_and_load(module, backend.device_list(devices), options, [])
        with open(path, "wb") as file:
            file.write(executable.serialize())
    with open(path, "rb") as file:
        blob = file.read()
    try:
        print(f"{step:5s} jax client first: {with_jax!s:5s} options given: {with_options!s:5s} -> loaded, runs: "
              f"{load(xla, backend, devices, blob, options if with_options else None).tolist()}")
    except Exception as error:
        print(f"{step:5s} jax client first: {with_jax!s:5s} options given: {with_options!s:5s} -> "
              f"{type(error).__name__}: {str(error)[:160]}")


def main():
    if len(sys.argv) > 1:
        case(sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1")
        return
    with tempfile.TemporaryDirectory() as directory:
        for writer_jax in ("0", "1"):
            path = os.path.join(directory, f"blob{writer_jax}")
            print(f"-- written by a process {'with' if writer_jax == '1' else 'without'} jax's client")
            runs = [("write", writer_jax, "0"), ("write", writer_jax, "1")]
            runs += [("read", jax_first, given) for jax_first in ("0", "1") for given in ("0", "1")]
            for step, jax_first, given in runs:
                finished = subprocess.run([sys.executable, __file__, step, path, jax_first, given],
                                          capture_output=True, text=True)
                print(finished.stdout.strip() or finished.stderr.strip()[-300:])


if __name__ == "__main__":
    main()
