#!/usr/bin/env bash
# The whole test suite and the benchmarks on an NVIDIA GPU machine (the device tool's H100/H200):
# numax's arrays live on the GPU by default there; jax (the tests' oracle) stays on the CPU.
# Usage (from the repo root, on the GPU machine): bash bench/gpu.sh [pytest args...]
set -uo pipefail
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -1
out=${OUT:-/tmp}
python3 - <<'PY'
import numax, numax.numpy as xnp
print("numax backend:", numax.default_backend(), numax.devices())
x = xnp.arange(8.0)
assert numax.default_backend() == "gpu", "expected arrays on the GPU"
print("sum on", x.device, "=", float((x * 2).sum()))
PY
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# The oracle runs where numax runs, so both use the same GPU code generation. The multi-device modules need 8
# devices: they run on the CPU's forced devices, and bench/gpu_parallel.py checks pmap, sharded jit and
# shard_map over the one GPU against jax. test_export (its committed artifact is a CPU one) and
# test_compile_cache (its keys, entries and processes are checked for CPU programs) run on the CPU too.
multi_device=(tests/test_pmap.py tests/test_collectives_permute.py tests/test_sharding_objects.py
              tests/test_sharded_jit.py tests/test_shard_map.py tests/test_multiprocess.py
              tests/test_export.py tests/test_compile_cache.py)
ignores=()
for module in "${multi_device[@]}"; do [ -e "$module" ] && ignores+=(--ignore="$module"); done
JAX_PLATFORMS=cuda,cpu XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -m pytest -n 8 -p no:cacheprovider "${ignores[@]}" "${@:-tests}" 2>&1 | tee "$out/gpu-tests.log" | tail -40
if [ $# -eq 0 ]; then
  present=(); for module in "${multi_device[@]}"; do [ -e "$module" ] && present+=("$module"); done
  JAX_PLATFORMS=cpu python3 -m pytest -n 4 -p no:cacheprovider "${present[@]}" 2>&1 | tee "$out/gpu-multidevice-tests.log" | tail -5
  JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false python3 bench/gpu_parallel.py 2>&1 | tee "$out/gpu-parallel.log" | tail -12
fi
python3 bench/dispatch.py 2>&1 | tee "$out/gpu-dispatch.md"
