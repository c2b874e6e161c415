"""Is numax (fusion)'s per-call gap over numax (XLA) in bench/fusion.py an artifact of being timed first in each
round? Case (e) (its fused program loses to XLA's, so both sides compile the same program) and case (b), timed
with the same executable twice under two names, first in a fixed order as bench/fusion.py does, then with the
order rotated every round.

    python3 bench/fusion_order_probe.py
"""

import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from dispatch import interleaved  # noqa: E402
from fusion import cases, sides  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    for case in cases(quick=False):
        if case.key not in "be":
            continue
        found = sides(case, case.make_inputs(rng))
        plain_call, wait = found["numax (XLA)"]
        pairs = {"numax (fusion)": found["numax (fusion)"], "numax (XLA)": found["numax (XLA)"],
                 "numax (XLA) again": (plain_call, wait), "jax.jit": found["jax.jit"],
                 "copy (floor)": found["copy (floor)"]}
        for call, wait_ in pairs.values():
            wait_(call())
        waited = [(name, lambda c=call, w=wait_: w(c())) for name, (call, wait_) in pairs.items()]
        for rotate in (False, True):
            result = interleaved(waited, 15, 20, rotate)
            print(f"({case.key}) call + wait, {'rotated' if rotate else 'fixed order'}: "
                  + ", ".join(f"{name} {us:.1f} us" for name, us in result.items()))
        del found, pairs, waited
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
