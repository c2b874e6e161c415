#!/usr/bin/env bash
# Issue 31 on a one-GPU machine: the host cost of small steps, numax against jax in one process per bench
# (bench/dispatch.py: jit calls and the MLP train step with a sync; bench/parallel.py --devices 1: pmap and sharded
# jit; bench/eager_ops.py: eager ops), for the tree given (default: this one; an older tree to compare) installed
# editable.
# Usage (repo root, on the GPU machine): bash bench/gpu_host_cost.sh [TREE] [LABEL]; logs go to $OUT (or /tmp).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:-.}
label=${2:-current}
out=${OUT:-/tmp}
python3 -m pip install -q --no-deps --no-build-isolation -e "$tree" 2>&1 | tail -1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
export XLA_PYTHON_CLIENT_PREALLOCATE=false
cd "$tree"
python3 -c "from numax.lowering import native_dispatch as n; print('native path built:', n.available)"
python3 bench/dispatch.py 2>&1 | tee "$out/$label-dispatch.md"
JAX_PLATFORMS=cuda python3 bench/parallel.py --devices 1 2>&1 | tee "$out/$label-parallel.md"
JAX_PLATFORMS=cuda python3 bench/parallel.py --devices 1 --width 64 --features 16 --batch 64 --steps 50 2>&1 \
  | tee "$out/$label-parallel-small.md"
python3 "$here/bench/eager_ops.py" --quick 2>&1 | tee "$out/$label-eager.md"  # (this tree's bench, either tree's numax)
