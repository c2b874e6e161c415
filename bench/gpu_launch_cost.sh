#!/bin/bash
# Host cost of fused kernels on a lent GPU (issue 32): the launch-cost probe and the GPT-2 step, each with XLA's
# command buffers (CUDA graphs) as configured by default and turned off, written under $OUT.
#   bash bench/gpu_launch_cost.sh [TREE] [gpt2 sides]
set -u
cd "${1:-.}"
sides=${2:-numax-xla,numax-fusion,jax}
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export NUMAX_CACHE_DIR=/tmp/numax_cache NUMAX_LOG_FUSION=1
nvidia-smi --query-gpu=name --format=csv,noheader
for label in default no_command_buffers; do
  flags=""; [ "$label" = no_command_buffers ] && flags="--xla_gpu_enable_command_buffer="
  mkdir -p "$OUT/$label"
  echo "## $label (XLA_FLAGS=$flags)"
  XLA_FLAGS="$flags" timeout 120 python3 bench/probes/fusion_launch_cost_probe.py --legacy 2> "$OUT/$label/probe.err"
  XLA_FLAGS="$flags" timeout 200 python3 bench/gpt2_step.py --size small --sides "$sides" \
    --json "$OUT/$label/gpt2_small.json" --logs "$OUT/$label" 2>&1 | grep -v "^W\|Warning\|warn("
done
