#!/usr/bin/env bash
# Issue 12 on a one-GPU machine: pmap, sharded jit and shard_map over the GPU against jax
# (bench/gpu_parallel.py), the data-parallel bench on the GPU, and the multi-device test modules on 8 forced
# CPU devices of the same machine (jaxlib 0.11 there, 0.10 here).
# Usage (repo root, on the GPU machine): bash bench/gpu_parallel.sh
set -uo pipefail
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false python3 bench/gpu_parallel.py 2>&1 | tee "$out/gpu-parallel.log"
JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false python3 bench/parallel.py --devices 1 2>&1 \
  | tee "$out/gpu-parallel-bench.md" | tail -6
JAX_PLATFORMS=cpu python3 -m pytest -n 8 -p no:cacheprovider tests/test_pmap.py tests/test_sharded_jit.py \
  tests/test_shard_map.py tests/test_collectives_permute.py tests/test_sharding_objects.py tests/test_multiprocess.py \
  2>&1 | tee "$out/gpu-machine-multidevice-tests.log" | tail -15
