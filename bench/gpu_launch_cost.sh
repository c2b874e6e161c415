#!/bin/bash
# Host cost of fused kernels on a lent GPU (issue 32): the launch-cost probe and the GPT-2 step under three
# configurations, each with a kernel cache of its own, written under $OUT/<configuration>:
#   default; no_command_buffers (XLA's CUDA graphs off); custom_calls_outside_graphs (XLA's CUDA graphs without
#   custom calls in them).
#   bash bench/gpu_launch_cost.sh [TREE]
set -u
cd "${1:-.}"
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export NUMAX_LOG_FUSION=1
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # label, gpt2 sides, environment assignments...
  local label=$1 sides=$2; shift 2
  mkdir -p "$OUT/$label"
  echo "## $label ($*)"
  env NUMAX_CACHE_DIR=/tmp/numax_cache_$label TRITON_CACHE_DIR=/tmp/triton_cache_$label "$@" timeout 100 python3 bench/probes/fusion_launch_cost_probe.py \
    --legacy --stages 1,16,64 2> "$OUT/$label/probe.err"
  env NUMAX_CACHE_DIR=/tmp/numax_cache_$label TRITON_CACHE_DIR=/tmp/triton_cache_$label "$@" timeout 150 python3 bench/gpt2_step.py --size small \
    --sides "$sides" --json "$OUT/$label/gpt2_small.json" --logs "$OUT/$label" 2>&1 | grep -v "^W\|Warning\|warn("
}
run default numax-xla,numax-fusion,jax XLA_FLAGS=
run no_command_buffers numax-xla,numax-fusion XLA_FLAGS=--xla_gpu_enable_command_buffer=
run custom_calls_outside_graphs numax-fusion XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUDNN
