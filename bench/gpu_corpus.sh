#!/bin/bash
# The fusion corpus on a lent GPU: install the tree given (default: this one) and run bench/fusion_corpus.py with the
# arguments after it, its JSON written to $OUT/corpus_<label>.json.
#   bash bench/gpu_corpus.sh [TREE] [LABEL] [fusion_corpus.py arguments...]
set -e
tree=${1:-.}; label=${2:-run}; shift 2 || true
cd "$tree"
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export NUMAX_CACHE_DIR=/tmp/numax_cache
python3 bench/fusion_corpus.py --json "$OUT/corpus_$label.json" "$@" 2>&1 | grep -v "^W\|Warning\|warn("
