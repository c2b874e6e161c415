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
gpt2() {  # label, sides, environment assignments...
  local label=$1 sides=$2; shift 2
  mkdir -p "$OUT/$label"
  echo "## GPT-2 small, $label ($*)"
  env NUMAX_CACHE_DIR=/tmp/numax_cache_$label TRITON_CACHE_DIR=/tmp/triton_cache_$label "$@" timeout 150 \
    python3 bench/gpt2_step.py --size small --sides "$sides" --json "$OUT/$label/gpt2_small.json" \
    --logs "$OUT/$label" 2>&1 | grep -v "^W\|Warning\|warn("
}
probe() {  # label, environment assignments...
  local label=$1; shift
  mkdir -p "$OUT/$label"
  echo "## launch-cost probe, $label ($*)"
  env NUMAX_CACHE_DIR=/tmp/numax_cache_$label TRITON_CACHE_DIR=/tmp/triton_cache_$label "$@" timeout 100 \
    python3 bench/probes/fusion_launch_cost_probe.py --legacy --stages 1,16,64 2> "$OUT/$label/probe.err"
}
# most telling first: a run cut short by the device's time limit still returns what finished
gpt2 default numax-fusion,numax-xla XLA_FLAGS=
probe default XLA_FLAGS=
gpt2 no_command_buffers numax-fusion,numax-xla XLA_FLAGS=--xla_gpu_enable_command_buffer=
gpt2 jax jax XLA_FLAGS=
probe no_command_buffers XLA_FLAGS=--xla_gpu_enable_command_buffer=
gpt2 custom_calls_outside_graphs numax-fusion XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUDNN
