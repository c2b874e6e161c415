"""Long differential runs of numax against jax: random programs (tests/differential.py) in every transform and
both 64-bit modes; prints each mismatch and a count per final operation.

    python bench/differential_jax.py --programs 2000 --seed 0
"""

import argparse
import collections
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import differential  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=200, help="how many programs to run")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed (then seed + 1, ...)")
    parser.add_argument("--transforms", default=",".join(differential.TRANSFORMS),
                        help="comma-separated subset of " + ",".join(differential.TRANSFORMS))
    args = parser.parse_args()
    transforms = tuple(args.transforms.split(","))
    by_op = collections.Counter()
    failing = 0
    start = time.perf_counter()
    for seed in range(args.seed, args.seed + args.programs):
        program = differential.generate(seed, x64=bool(seed % 2))
        mismatches = differential.check(program, transforms)
        failing += bool(mismatches)
        for mismatch in mismatches:
            by_op[mismatch.program.steps[-1].op] += 1
            print(mismatch, "\n", flush=True)
        if (seed - args.seed + 1) % 50 == 0:
            done = seed - args.seed + 1
            print(f"-- {done} programs, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    print(f"{args.programs} programs in {elapsed:.0f} s: {failing} with mismatches")
    for op, count in by_op.most_common():
        print(f"  {op}: {count}")


if __name__ == "__main__":
    main()
