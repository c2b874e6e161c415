"""The test of one documentation page: its cells, run with jax and with numax in a fresh process, must agree
except for the cells known_failures.py lists, and those must still fail (so the table stays true), unless listed
as nondeterministic."""

import json
import os
import subprocess
import sys
import tempfile

from known_failures import KNOWN_FAILURES

_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doc_runner.py")
TIMEOUT_SECONDS = 600


def run_page(stem):
    """The page's per-cell records; a crash or time-out of the page's process fails with its last output."""
    with tempfile.TemporaryDirectory() as scratch:
        report_path = os.path.join(scratch, "report.jsonl")
        process = subprocess.run([sys.executable, _RUNNER, stem, report_path], capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=TIMEOUT_SECONDS, cwd=scratch)
        records = []
        if os.path.exists(report_path):
            with open(report_path) as report:
                records = [json.loads(line) for line in report]
    if process.returncode != 0:
        last = f"after cell at line {records[-1]['line']}" if records else "before its first cell"
        raise AssertionError(f"{stem}: the page's process ended with status {process.returncode} {last}:\n"
                             f"{process.stderr[-4000:]}")
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
