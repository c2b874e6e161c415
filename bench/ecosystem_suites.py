"""Runs optax's and chex's own test suites (the `*_test.py` files their wheels ship) with pytest, once on jax and
once on numax under the switch (`numax.compat.install()`, loaded as the pytest plugin bench/pytest_numax_switch.py
before collection, so the libraries and their tests run unmodified), and prints per-library
passed/failed/error/skipped counts for both sides and numax's failures grouped by cause (exception type and the
first line of its message).

    python bench/ecosystem_suites.py [--libs optax chex] [--sides jax numax] [-n 2] [--timeout 120]
                                     [-k EXPR] [--keep DIR] [--json FILE]

The test files need absl-py, cloudpickle (chex's dataclass_test), scikit-learn (optax's alias_test) and
pytest-timeout (for --timeout); pytest-xdist for -n. Each library runs on each side in a fresh pytest process
from an empty directory (no conftest, no pytest configuration of this repository). Counts are per collected
test: a test whose subtest fails counts as failed once (pytest's own summary counts subtest reports apart).
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

_BENCH = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_BENCH)


def _package_dir(name):
    return os.path.dirname(importlib.util.find_spec(name).origin)


def _test_paths(lib):
    """The library's shipped test files: every `*_test.py` of optax, those of chex/_src."""
    root = _package_dir(lib)
    if lib == "chex":
        root = os.path.join(root, "_src")
    paths = []
    for folder, _, files in os.walk(root):
        paths.extend(os.path.join(folder, name) for name in files if name.endswith("_test.py"))
    return sorted(paths)


def _selected(paths, exclude):
    return [path for path in paths if not any(part in path for part in exclude or ())]


def _run_side(side, lib, workers, timeout, keyword, exclude, work_dir):
    """One library's tests on one side, in a pytest process of their own (chex's fake_test sets the number of
    CPU devices, which only a process that has not started its backend can do)."""
    junit = os.path.join(work_dir, f"{side}-{lib}.xml")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               "--rootdir", work_dir, f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    if workers > 0:
        command += ["-n", str(workers)]
    if timeout:
        command += ["--timeout", str(timeout)]
    if keyword:
        command += ["-k", keyword]
    env = dict(os.environ)
    if side == "numax":
        command += ["-p", "pytest_numax_switch"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_BENCH, _REPO, env.get("PYTHONPATH")) if p)
    command += _selected(_test_paths(lib), exclude)
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    with open(os.path.join(work_dir, f"{side}-{lib}.log"), "w") as log:
        subprocess.run(command, cwd=work_dir, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return junit, time.perf_counter() - start, _children_cpu_seconds() - cpu_start


def _children_cpu_seconds():
    """CPU seconds of finished child processes (pytest and its xdist workers): on a shared machine a steadier
    measure of the work than wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_OUTCOME_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def _cause(element):
    """`Type: first line of the message` of a junit failure/error element, addresses and long tails cut."""
    message = (element.get("message") or "").strip()
    text = (element.text or "").strip()
    if not message and text:
        message = text.splitlines()[-1]
    first = message.splitlines()[0] if message else element.tag
    first = re.sub(r"0x[0-9a-f]+", "0x...", first)
    exception_line = next((line[2:].strip() for line in text.splitlines() if line.startswith("E   ")), "")
    if exception_line and ":" in exception_line.split(" ")[0] and not first.startswith(exception_line[:20]):
        first = exception_line
    return first[:200]


def _results(junit, lib):
    """{test id: (lib, outcome, cause)} from the junit file of lib's run; a test's worst report (subtests
    included) wins."""
    results = {}
    if not os.path.exists(junit):
        return results
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        file = (case.get("file") or "").replace(os.sep, "/")
        classname = case.get("classname") or ""
        # the path from the package's folder on (the rootdir-relative path climbs out of site-packages)
        short = re.sub(r"^.*?/(?=(optax|chex)/)", "", file)
        test_id = f"{short}::{classname.rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, cause = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, cause = ("failed" if child.tag == "failure" else "error"), _cause(child)
                break
            if child.tag == "skipped":
                outcome = "skipped"
        previous = results.get(test_id)
        if previous is None or _OUTCOME_RANK[outcome] > _OUTCOME_RANK[previous[1]]:
            results[test_id] = (lib, outcome, cause)
    return results


def _counts(results, lib):
    counts = collections.Counter(outcome for name, outcome, _ in results.values() if name == lib)
    return {key: counts.get(key, 0) for key in ("passed", "failed", "error", "skipped")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", nargs="+", default=["optax", "chex"], choices=["optax", "chex"])
    parser.add_argument("--sides", nargs="+", default=["jax", "numax"], choices=["jax", "numax"])
    parser.add_argument("-n", type=int, default=2, help="pytest-xdist workers (0: none)")
    parser.add_argument("--timeout", type=int, default=300, help="per-test timeout in seconds (pytest-timeout)")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    parser.add_argument("--exclude", nargs="*", default=(), help="leave out test files whose path contains one")
    parser.add_argument("--keep", default=None, help="directory for the junit files and pytest logs")
    parser.add_argument("--json", default=None, help="write every test's outcome on each side here")
    parser.add_argument("--top", type=int, default=40, help="causes listed per library")
    args = parser.parse_args()

    work_dir = args.keep or tempfile.mkdtemp(prefix="ecosystem_suites_")
    os.makedirs(work_dir, exist_ok=True)
    results, seconds, cpu_seconds = {}, {}, {}
    for side in args.sides:
        results[side] = {}
        for lib in args.libs:
            junit, wall, cpu = _run_side(side, lib, args.n, args.timeout, args.keyword, args.exclude, work_dir)
            results[side].update(_results(junit, lib))
            seconds[f"{side}-{lib}"], cpu_seconds[f"{side}-{lib}"] = wall, cpu
            print(f"{side} {lib}: {sum(v[0] == lib for v in results[side].values())} tests in {wall:.0f} s wall, "
                  f"{cpu:.0f} s CPU (log: {work_dir}/{side}-{lib}.log)", flush=True)

    print("\n| library | side | passed | failed | error | skipped |\n| --- | --- | --- | --- | --- | --- |")
    for lib in args.libs:
        for side in args.sides:
            counts = _counts(results[side], lib)
            print(f"| {lib} | {side} | {counts['passed']} | {counts['failed']} | {counts['error']} | "
                  f"{counts['skipped']} |")

    if "numax" in results:
        jax_results = results.get("jax", {})
        for lib in args.libs:
            groups = collections.defaultdict(list)
            for test_id, (name, outcome, cause) in results["numax"].items():
                if name != lib or outcome not in ("failed", "error"):
                    continue
                on_jax = jax_results.get(test_id, (None, "not run", ""))[1]
                groups[(cause, on_jax in ("failed", "error"))].append(test_id)
            total = sum(len(ids) for ids in groups.values())
            print(f"\n{lib}: {total} failed or errored on numax, by cause (count, fails on jax too?, cause, "
                  "an example)")
            ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
            for (cause, also_on_jax), ids in ordered[:args.top]:
                print(f"  {len(ids):4d}  {'jax too' if also_on_jax else '       '}  {cause}\n"
                      f"        e.g. {sorted(ids)[0]}")
            if len(ordered) > args.top:
                print(f"  ... {len(ordered) - args.top} more causes")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"seconds": seconds, "cpu_seconds": cpu_seconds, "results": results}, file, indent=0)


if __name__ == "__main__":
    main()
