#!/bin/bash
# A few corpus cases on a lent GPU with the fusion log on (each region's candidates and XLA's time, the whole
# program's verdict), the log written to $OUT/fusion_log_<label>.txt.
#   bash bench/gpu_corpus_log.sh TREE LABEL [fusion_corpus.py arguments...]
set -e
tree=$1; label=$2; shift 2
cd "$tree"
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export NUMAX_CACHE_DIR=/tmp/numax_cache_log NUMAX_LOG_FUSION=1
python3 bench/fusion_corpus.py --json "$OUT/corpus_$label.json" "$@" 2> "$OUT/fusion_log_$label.txt" | grep "^## \|numax"
grep -c "numax:" "$OUT/fusion_log_$label.txt"
