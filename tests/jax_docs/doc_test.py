"""The test of one documentation page: its cells, run with jax and with numax in a fresh process, must agree
except for the cells known_failures.py lists, and those must still fail (so the table stays true), unless listed
as nondeterministic."""

import json
import multiprocessing
import os
import sys
import tempfile

from known_failures import KNOWN_FAILURES

TIMEOUT_SECONDS = 600

# Each page runs in a process forked from a server that has imported jax, numax and the runner once (about 0.9 s
# of CPU a page otherwise, 43 pages): the page still starts from a fresh interpreter state, before either library
# has made a backend or compiled anything, and its configuration changes and crashes stay in its own process.
_PAGES = multiprocessing.get_context("forkserver")
_PAGES.set_forkserver_preload(["doc_runner"])


def _run_in_page_process(stem, report_path, output_path):
    with open(output_path, "w") as output:  # the page's stdout and stderr, for the failure message
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    os.chdir(os.path.dirname(report_path))
    import doc_runner

    doc_runner.main(stem, report_path)
    sys.stdout.flush()
    sys.stderr.flush()


def run_page(stem):
    """The page's per-cell records; a crash or time-out of the page's process fails with its last output."""
    with tempfile.TemporaryDirectory() as scratch:
        report_path, output_path = os.path.join(scratch, "report.jsonl"), os.path.join(scratch, "output.txt")
        page = _PAGES.Process(target=_run_in_page_process, args=(stem, report_path, output_path))
        page.start()
        page.join(TIMEOUT_SECONDS)
        timed_out = page.is_alive()
        if timed_out:
            page.kill()
            page.join()
        records, output = [], ""
        if os.path.exists(report_path):
            with open(report_path) as report:
                records = [json.loads(line) for line in report]
        if os.path.exists(output_path):
            with open(output_path) as page_output:
                output = page_output.read()
    if page.exitcode != 0:
        last = f"after cell at line {records[-1]['line']}" if records else "before its first cell"
        ended = f"was killed after {TIMEOUT_SECONDS} s" if timed_out else f"ended with status {page.exitcode}"
        raise AssertionError(f"{stem}: the page's process {ended} {last}:\n{output[-4000:]}")
    return records


def check_page(stem):
    records = run_page(stem)
    known = KNOWN_FAILURES.get(stem, {})
    failing = {record["line"]: record for record in records if record["problem"]}
    unexpected = [record for line, record in failing.items() if line not in known]
    # A nondeterministic cell (printing from unordered callbacks, say) may agree on one run and not the next.
    fixed = sorted(line for line in set(known) - set(failing) if not known[line].startswith("nondeterministic"))
    messages = [f"cell at line {record['line']}: {record['problem']}\n{record.get('numax_traceback', '')}"
                for record in unexpected]
    messages += [f"cell at line {line} is listed in known_failures.py ({known[line]}) but now agrees with jax: "
                 "remove it from the table" for line in fixed]
    assert not messages, f"{stem}: " + "\n".join(messages)
