"""Import-time benchmark: `import numax` against `import jax`, each in fresh interpreters.

Each sample is one new `python -c` process that times its own statement (interpreter start-up and exit
excluded), in wall time and in CPU time (the process's own, which other work on a shared machine inflates
far less); the cases alternate so that machine noise hits them alike, and the best of N rounds is kept, as
load only ever adds time. `import numpy, ml_dtypes` is shown too: numax needs both, so it is the floor.
Both libraries load their XLA runtime at the first operation, so "import + first op" (creating a small
array, adding 1, waiting for the result) is shown as well.
Two settings of Python's bytecode cache:

- bytecode cached: as for an installed package (pip compiles `.pyc` files). The children cache bytecode in
  a private temporary directory (`PYTHONPYCACHEPREFIX`), warmed by one unmeasured run of each case.
- inherited environment: this process's settings as they are. This project's sandbox sets
  `PYTHONDONTWRITEBYTECODE=1`, so numax (an editable install) compiles all its sources on every import
  while jax reads the `.pyc` files its wheel installed.

    python bench/import_time.py [--rounds N]
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile

# What each fresh process times. The first-op rows add jaxlib's runtime, which both load on first use.
STATEMENTS = {
    "import numax": "import numax",
    "import jax": "import jax",
    "import numpy, ml_dtypes (numax's floor)": "import numpy, ml_dtypes",
    "numax: import + first op": "import numax.numpy as xnp; (xnp.ones(3) + 1).block_until_ready()",
    "jax: import + first op": "import jax.numpy as jnp; (jnp.ones(3) + 1).block_until_ready()",
}


def fresh_process_seconds(statement, env):
    """(wall, CPU) seconds a fresh interpreter spends running `statement`."""
    code = ("import time; wall, cpu = time.perf_counter(), time.process_time(); "
            f"{statement}; print(time.perf_counter() - wall, time.process_time() - cpu)")
    finished = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return [float(seconds) for seconds in finished.stdout.split()]


def best_times(env, rounds):
    """{statement's name: (wall, CPU)}: the best of `rounds` alternating rounds, in milliseconds."""
    samples = {name: [] for name in STATEMENTS}
    for _ in range(rounds):
        for name, statement in STATEMENTS.items():
            samples[name].append(fresh_process_seconds(statement, env))
    return {name: [min(column) * 1e3 for column in zip(*values)] for name, values in samples.items()}


def report(setting, best):
    print(f"\n{setting}:  wall ms, CPU ms")
    for name, (wall, cpu) in best.items():
        print(f"  {name:>40}: {wall:7.1f} {cpu:7.1f}")
    for label, numax_row, jax_row in (("import", "import numax", "import jax"),
                                      ("import + first op", "numax: import + first op", "jax: import + first op")):
        wall, cpu = (numax / jax for numax, jax in zip(best[numax_row], best[jax_row]))
        print(f"  {'numax / jax, ' + label:>40}: {wall:6.2f}x {cpu:6.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="fresh processes per case (the best is kept)")
    args = parser.parse_args()
    import jax
    import jaxlib

    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, jax {jax.__version__}, "
          f"jaxlib {jaxlib.__version__}; best of {args.rounds} fresh processes")
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        for statement in STATEMENTS.values():
            fresh_process_seconds(statement, cached)  # writes the bytecode cache
        report("bytecode cached", best_times(cached, args.rounds))
    setting = "PYTHONDONTWRITEBYTECODE=1" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode written"
    report(f"inherited environment ({setting})", best_times(dict(os.environ), args.rounds))


if __name__ == "__main__":
    main()
