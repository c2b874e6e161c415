"""Where the test suite's time goes: a pytest plugin that records, for every test, its wall time and the time and
number of XLA compiles numax and jax (the oracle) made during it, and a summary of those records by file or by
test function.

    PYTHONPATH=bench SUITE_PROFILE_DIR=/tmp/suite python -m pytest -n 2 tests -p suite_profile
    python bench/suite_profile.py /tmp/suite [--by function] [--top 40]

Each pytest process (the xdist workers) appends one tab-separated line per test to a file of its own in
SUITE_PROFILE_DIR: seconds, numax compile seconds, numax compiles, jax compile seconds, jax compiles, test id.
Compiles are counted where each library hands a module to XLA (a program loaded from a persistent cache is not
a compile); each process also writes its totals of persistent-cache reads, hits and seconds spent reading and
writing the cache, summed in the summary's last line. Documentation pages run in processes of their own: their
compiles are not seen, only their time.
"""

import argparse
import collections
import os
import time

import pytest

_totals = {"numax_seconds": 0.0, "numax_compiles": 0, "jax_seconds": 0.0, "jax_compiles": 0}
_report = None


def _count_calls(module, name, library):
    original = getattr(module, name)

    def counted(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _totals[f"{library}_seconds"] += time.perf_counter() - start
            _totals[f"{library}_compiles"] += 1

    setattr(module, name, counted)


def pytest_configure(config):
    global _report
    directory = os.environ.get("SUITE_PROFILE_DIR")
    controller = not hasattr(config, "workerinput") and config.getoption("numprocesses", default=None)
    if not directory or controller:  # (the xdist controller runs no tests: its workers record them)
        return
    import jax._src.compiler as jax_compiler
    import numax.lowering.compile_cache as numax_cache
    import numax.lowering.xla.compiler as numax_compiler

    os.makedirs(directory, exist_ok=True)
    _report = open(os.path.join(directory, f"tests_{os.getpid()}.tsv"), "a")
    _count_calls(numax_compiler, "_compile", "numax")
    _count_calls(jax_compiler, "backend_compile_and_load", "jax")
    _count_cache(numax_cache, "lookup", "remember", "numax", hit=lambda result: result is not None)
    _count_cache(jax_compiler, "_cache_read", "_cache_write", "jax", hit=lambda result: result[0] is not None)


_caches = collections.Counter()  # per library: persistent-cache reads, hits, and seconds reading and writing


def _count_cache(module, read_name, write_name, library, hit):
    read, write = getattr(module, read_name), getattr(module, write_name)

    def counted_read(*args, **kwargs):
        start = time.perf_counter()
        result = read(*args, **kwargs)
        _caches[f"{library} cache seconds"] += time.perf_counter() - start
        _caches[f"{library} cache reads"] += 1
        _caches[f"{library} cache hits"] += bool(hit(result))
        return result

    def counted_write(*args, **kwargs):
        start = time.perf_counter()
        try:
            return write(*args, **kwargs)
        finally:
            _caches[f"{library} cache seconds"] += time.perf_counter() - start

    setattr(module, read_name, counted_read)
    setattr(module, write_name, counted_write)


def pytest_unconfigure(config):
    if _report is not None:
        with open(os.path.join(os.path.dirname(_report.name), f"caches_{os.getpid()}.tsv"), "w") as totals:
            totals.writelines(f"{key}\t{value}\n" for key, value in sorted(_caches.items()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, start = dict(_totals), time.perf_counter()
    yield
    if _report is not None:
        spent = {key: _totals[key] - before[key] for key in _totals}
        _report.write(f"{time.perf_counter() - start:.3f}\t{spent['numax_seconds']:.3f}\t{spent['numax_compiles']}\t"
                      f"{spent['jax_seconds']:.3f}\t{spent['jax_compiles']}\t{item.nodeid}\n")
        _report.flush()


def _summarize(directory, by, top):
    groups = collections.defaultdict(lambda: [0.0, 0.0, 0, 0.0, 0, 0])
    caches = collections.Counter()
    for name in os.listdir(directory):
        if name.startswith("caches_"):
            with open(os.path.join(directory, name)) as totals:
                for line in totals:
                    key, value = line.rstrip("\n").split("\t")
                    caches[key] += float(value)
            continue
        with open(os.path.join(directory, name)) as records:
            for line in records:
                seconds, nx_seconds, nx_count, jx_seconds, jx_count, test = line.rstrip("\n").split("\t")
                key = test.split("::")[0] if by == "file" else test.split("[")[0]
                group = groups[key]
                group[0] += float(seconds)
                group[1] += float(nx_seconds)
                group[2] += int(nx_count)
                group[3] += float(jx_seconds)
                group[4] += int(jx_count)
                group[5] += 1
    total = [sum(group[i] for group in groups.values()) for i in range(6)]
    print(f"{'seconds':>8} {'numax compiling':>18} {'jax compiling':>16} {'other':>7} {'tests':>6}  {by}")
    for key, group in [("(all)", total)] + sorted(groups.items(), key=lambda item: -item[1][0])[:top]:
        seconds, nx_seconds, nx_count, jx_seconds, jx_count, tests = group
        print(f"{seconds:8.1f} {nx_seconds:8.1f} s {nx_count:6d} {jx_seconds:7.1f} s {jx_count:5d} "
              f"{seconds - nx_seconds - jx_seconds:7.1f} {tests:6d}  {key}")
    if caches:
        shown = [f"{key} {value:.1f}" if "seconds" in key else f"{key} {value:.0f}"
                 for key, value in sorted(caches.items())]
        print("persistent compilation caches (all workers): " + ", ".join(shown))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--by", choices=("file", "function"), default="file")
    parser.add_argument("--top", type=int, default=40)
    arguments = parser.parse_args()
    _summarize(arguments.directory, arguments.by, arguments.top)
