"""Probe (GPU): every row region of the corpus's forward norms and causal softmax timed under a wide set of launches
(warps 2-16, 1-8 rows per program) against XLA, through the autotuner's own timing; the fusion log prints each
region's times."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fusion_corpus as corpus  # noqa: E402
from numax.lowering import fusion_codegen as codegen  # noqa: E402
from numax.lowering import fusion_rows_codegen as rows_codegen  # noqa: E402

import numax  # noqa: E402

default_candidates = rows_codegen.row_launch_candidates


def wide_candidates(length, rows):
    block = rows_codegen.row_launch_parameters(length)[0]
    found = list(default_candidates(length, rows))
    for per_program in (1, 2, 4, 8):
        for warps in (2, 4, 8, 16):
            launch = codegen.Launch(block, warps, per_program)
            if block * per_program <= 16384 and launch not in found:
                found.append(launch)
    return found


rows_codegen.row_launch_candidates = wide_candidates
numax.config.update("numax_log_fusion", True)
api = corpus.api_of("numax")
for key in sys.argv[1:] or ["ln", "rms", "softmax"]:
    case = corpus.CASES[key]
    args = case.make_inputs(np.random.default_rng(0), corpus.BF16, False)
    print(f"--- {key}", file=sys.stderr, flush=True)  # the fusion log goes to stderr
    numax.block_until_ready(numax.jit(case.forward(api), fusion="triton")(*args))
