"""Probe (GPU): with every region left to XLA by the tuner, `jit(fusion="triton")` ran RMSNorm and rotary slower per
call than `jit` (bench/fusion_corpus.py, H100). Is it the fused side, or the order the sides compile in? Three jits
of the same function: XLA compiled first, fusion second (tuned), XLA again third; timed interleaved."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fusion_corpus as corpus  # noqa: E402
from dispatch import interleaved  # noqa: E402
from fusion import back_to_back  # noqa: E402

import numax  # noqa: E402

api = corpus.api_of("numax")
for key in ("rms", "rotary"):
    case = corpus.CASES[key]
    args = [numax.device_put(a) for a in case.make_inputs(np.random.default_rng(0), corpus.BF16, False)]
    sides = [("xla first", numax.jit(case.forward(api))), ("fusion", numax.jit(case.forward(api), fusion="triton")),
             ("xla third", numax.jit(case.forward(api)))]
    for name, fn in sides:
        numax.block_until_ready(fn(*args))
        print(name, "kernels:", len(fn.lower(*args).triton_kernels()), "same program:",
              str(fn.lower(*args).closed) == str(sides[0][1].lower(*args).closed))
    waited = interleaved([(n, lambda f=f: numax.block_until_ready(f(*args))) for n, f in sides], 15, 20)
    streamed = interleaved([(n, lambda f=f: back_to_back(lambda: f(*args), numax.block_until_ready, 100))
                            for n, f in sides], 15, 1)
    for name, _ in sides:
        print(f"{key} {name}: call + wait {waited[name]:.1f} us, back to back {streamed[name] / 100:.1f} us")
