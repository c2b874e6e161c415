#!/usr/bin/env bash
# Issue 16 on an NVIDIA GPU machine (the device tool's H100/H200): host overhead per call with jit's native
# call path and with the Python path (NUMAX_NATIVE_DISPATCH=0), numax against jax (and torch in gpu_latency).
# Usage (from the repo root, on the GPU machine): bash bench/gpu_dispatch.sh; results go to $OUT (or /tmp).
set -uo pipefail
out=${OUT:-/tmp}
{
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
  python3 -c "from numax.lowering import native_dispatch as n; print('native call path built:', n.available)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} 2>&1 | tee "$out/setup.log"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
JAX_PLATFORMS=cuda,cpu python3 -m pytest -q -p no:cacheprovider tests/test_native_dispatch.py tests/test_native_arrays.py tests/test_jit.py tests/test_array.py \
  tests/test_eager_fast_paths.py 2>&1 | tail -30 | tee "$out/tests.log"
python3 bench/dispatch.py --json "$out/dispatch_native.json" 2>&1 | tee "$out/dispatch_native.log"
NUMAX_NATIVE_DISPATCH=0 python3 bench/dispatch.py --json "$out/dispatch_python.json" 2>&1 | tee "$out/dispatch_python.log"
python3 bench/gpu_latency.py --json "$out/gpu_latency_native.json" 2>&1 | tee "$out/gpu_latency_native.log"
NUMAX_NATIVE_DISPATCH=0 python3 bench/gpu_latency.py --quick --json "$out/gpu_latency_python.json" 2>&1 \
  | tee "$out/gpu_latency_python.log"
# The TFRT CUDA client (numax_gpu_client="tfrt"): the GPU tests that touch dispatch, callbacks, kernels and solvers,
# then the latency benchmark, under it.
NUMAX_GPU_CLIENT=tfrt JAX_PLATFORMS=cuda,cpu python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_native_dispatch.py \
  tests/test_native_arrays.py tests/test_jit.py tests/test_eager_fast_paths.py tests/test_callbacks.py \
  tests/test_triton_call.py tests/test_linalg.py tests/test_array.py 2>&1 | tail -60 | tee "$out/tests_tfrt.log"
NUMAX_GPU_CLIENT=tfrt python3 bench/gpu_latency.py --quick --json "$out/gpu_latency_tfrt.json" 2>&1 \
  | tee "$out/gpu_latency_tfrt.log"
