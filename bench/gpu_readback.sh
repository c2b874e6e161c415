#!/usr/bin/env bash
# Issue 16's 16 MB GPU readback: the readback tests, the host memory held after dropped readbacks, one readback
# at a time per library, then bench/dispatch.py's rows. From the repo root on the GPU machine.
set -uo pipefail
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
JAX_PLATFORMS=cuda,cpu python3 -m pytest -q -p no:cacheprovider -p no:warnings tests/test_array.py \
  tests/test_api_extras.py tests/test_import.py 2>&1 | tail -15
python3 bench/gpu_readback_probe.py --held
for library in numax jax; do
  python3 bench/gpu_readback_probe.py --sequence $library | grep readbacks
done
python3 bench/gpu_readback_probe.py | tail -30
python3 bench/dispatch.py --json "${OUT:-/tmp}/dispatch_native.json" 2>&1 | tail -40
