#!/bin/bash
# The GPT-2 small step's first call with fusion on a lent GPU (issue 32): cold (empty kernel and tuning caches),
# then warm (the same caches), then numax on XLA; each side's standard error time-stamped (seconds since its
# start) under $OUT, and a Python traceback of every thread if a side runs past its limit.
#   bash bench/gpu_gpt2_first_call.sh [TREE] [COLD_LIMIT_S]
set -u
cd "${1:-.}"
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader
export NUMAX_LOG_FUSION=1 PYTHONFAULTHANDLER=1 NUMAX_CACHE_DIR=/tmp/numax_cache_first TRITON_CACHE_DIR=/tmp/triton_first
stamp() { python3 -u -c "import sys, time
start = time.time()
for line in sys.stdin: sys.stdout.write(f'{time.time() - start:7.1f} {line}')"; }
side() {  # label, numax side, limit in seconds
  echo "## $1"
  timeout -s ABRT "$3" python3 -u bench/gpt2_step.py --child "$2" --size small --steps 20 2>&1 | stamp > "$OUT/$1.log"
  grep "RESULT" "$OUT/$1.log" || tail -5 "$OUT/$1.log"
}
side fusion_cold numax-fusion "${2:-260}"
side fusion_warm numax-fusion 90
side xla numax-xla 80
