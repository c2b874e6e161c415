"""Runs one documentation page's cells twice, with jax and with numax, and reports each cell's agreement.

    python tests/jax_docs/doc_runner.py STEM REPORT.jsonl

Run in a process of its own per page (doc_test.py starts it): pages change global configuration, and a crash
must fail the page's test, not the test run. Cells run in order in two namespaces, the jax one first; numpy's
and Python's global random state are reset before each side runs a cell, so unseeded host data is the same.
A cell agrees when both sides raise exceptions of the same kind (see `same_exception_kind`) where the page shows
the cell raising, or neither raises and every value it leaves behind (its last expression, and each top-level name
it binds) is the same pytree with the same leaves (arrays of the same kind, dtype and shape with values within a
dtype's tolerance, Python scalars of the same type and value), and what it prints carries the same numbers and
truth values in the same order (`compare_printed`). Values of other kinds (functions, jaxprs) are not compared.
A cell that jax itself cannot run for want of a name, a package or valid syntax is reported too: it checks
nothing.
One JSON line per cell is appended to the report as soon as the cell is done.
"""

import ast
import contextlib
import io
import json
import linecache
import os
import random
import re
import sys
import time
import traceback

import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")  # pages plot with matplotlib: no window
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402  (the oracle)
from doc_cells import read_cells, runnable, swap_imports  # noqa: E402
from numax.core.trace import Tracer  # noqa: E402

import numax  # noqa: E402

_RTOL = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 2e-5, "complex64": 2e-5, "float64": 1e-10,
         "complex128": 1e-10}


def run_cell(code, namespace, filename):
    """Executes a cell as a notebook does; returns (value of its last expression or None, exception or None)."""
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    try:
        tree = ast.parse(code, filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            return eval(compile(ast.Expression(last.value), filename, "eval"), namespace), None
        return None, None
    except BaseException as error:  # noqa: B036  (a cell's SystemExit or KeyboardInterrupt is its outcome too)
        return None, error


def same_exception_kind(jax_error, numax_error):
    """jax's own exception classes must be matched by name (ConcretizationTypeError, TypePromotionError, ...);
    a builtin one (ValueError, TypeError, ...) by numax raising an instance of it."""
    jax_type = type(jax_error)
    if jax_type.__module__.split(".")[0] in ("jax", "jaxlib"):
        return any(base.__name__ == jax_type.__name__ for base in type(numax_error).__mro__)
    return isinstance(numax_error, jax_type)


def _jax_leaf(value):
    if isinstance(value, jax.core.Tracer):
        return value, "tracer"
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.extended):
        return np.asarray(jax.random.key_data(value)), "key"
    if isinstance(value, jax.Array):
        return np.asarray(value), "array"
    return value, _kind(value)


def _is_numax_key(value):
    return str(getattr(value, "dtype", "")).startswith("key<")


def _numax_leaf(value):
    if isinstance(value, Tracer):
        return value, "tracer"
    if _is_numax_key(value):
        return np.asarray(numax.random.key_data(value)), "key"
    if isinstance(value, numax.Array):
        return np.asarray(value), "array"
    return value, _kind(value)


def _kind(value):
    if isinstance(value, (bool, int, float, complex)):
        return type(value).__name__
    if isinstance(value, np.ndarray):
        return "numpy.ndarray"
    if isinstance(value, np.generic):
        return "numpy scalar"
    return None


def _readable(leaf_of, value):
    """(host value, kind) of a leaf; an array that cannot be read (deleted by donation) is of kind 'unreadable
    (its exception)', so that both sides must fail to read it alike."""
    try:
        return leaf_of(value)
    except Exception as error:
        return None, f"unreadable ({type(error).__name__})"


def compare_values(jax_value, numax_value):
    """A description of the first difference between the two values, or None."""
    jax_leaves, jax_tree = jax.tree_util.tree_flatten(jax_value)
    # numax's typed keys are pytree nodes over their key data, where jax's are leaves (a known difference,
    # test_jax_parity_api.py): taken as leaves here so that cells holding keys still compare everything else.
    numax_leaves, numax_tree = numax.tree_util.tree_flatten(numax_value, is_leaf=_is_numax_key)
    if len(jax_leaves) != len(numax_leaves):
        return f"pytree structure differs: jax {jax_tree}, numax {numax_tree}"
    for position, (jax_leaf, numax_leaf) in enumerate(zip(jax_leaves, numax_leaves)):
        expected, kind = _readable(_jax_leaf, jax_leaf)
        if kind is None:
            continue
        actual, numax_kind = _readable(_numax_leaf, numax_leaf)
        where = f"leaf {position}" if len(jax_leaves) > 1 else "value"
        if numax_kind != kind:
            return f"{where}: jax gives a {kind} ({type(jax_leaf).__name__}), numax a {type(numax_leaf).__name__}"
        if kind == "tracer" or kind.startswith("unreadable"):  # a leaked tracer, a deleted array: kinds only
            continue
        difference = _compare_leaf(np.asarray(expected), np.asarray(actual))
        if difference:
            return f"{where}: {difference}"
    return None


def _compare_leaf(expected, actual):
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype}, jax {expected.dtype}"
    if expected.shape != actual.shape:
        return f"shape {actual.shape}, jax {expected.shape}"
    if expected.dtype.kind in "fc" or expected.dtype.name == "bfloat16":
        rtol = _RTOL.get(expected.dtype.name, 1e-5)
        expected64 = expected.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
        actual64 = actual.astype(expected64.dtype)
        scale = np.max(np.abs(expected64[np.isfinite(expected64)]), initial=1.0)
        close = np.isclose(actual64, expected64, rtol=rtol, atol=rtol * scale, equal_nan=True)
    elif expected.dtype.kind in "biu" or expected.dtype.kind == "?":
        close = actual == expected
    else:
        return None
    if not np.all(close):
        where = tuple(np.transpose(np.argwhere(~np.asarray(close))[:3]))
        return f"values differ at {np.transpose(where).tolist()}: numax {actual[where]}, jax {expected[where]}"
    return None


_PRINTED_VALUE = re.compile(r"\b(?:True|False|nan|inf)\b|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# Printed text that names the library's internals rather than values: programs (jaxprs, StableHLO), tracers,
# objects' addresses, timings.
_UNCOMPARED_PRINTS = ("lambda", "module @", "Traced<", "Tracer", " at 0x", "ms", "µs", "sec", "PyTreeDef",
                      "{", "ShapedArray", "HloModule", "compil")


# The source locations jax appends to what it describes (`output of sin from <file>:6:9 (g)`): numax's programs
# carry none (a documented difference), and their line numbers are not values.
_SOURCE_LOCATION = re.compile(r" from (?:<[^>]*>|\S+\.py):\d+:\d+ \([^)]*\)")


def compare_printed(jax_text, numax_text):
    """The printed values that differ, or None: the numbers and truth values in the text, in order (floats within
    print precision). Text about programs, tracers, addresses or timings is not compared."""
    if any(marker in jax_text for marker in _UNCOMPARED_PRINTS):
        return None
    jax_text = _SOURCE_LOCATION.sub("", jax_text)
    expected, actual = _PRINTED_VALUE.findall(jax_text), _PRINTED_VALUE.findall(numax_text)
    if len(expected) == len(actual) and all(map(_same_printed_value, expected, actual)):
        return None
    return f"printed {numax_text[:300]!r}, jax printed {jax_text[:300]!r}"


def _same_printed_value(expected, actual):
    if expected == actual:
        return True
    try:
        return bool(np.isclose(float(actual), float(expected), rtol=1e-4, atol=1e-6))
    except ValueError:
        return False


def bound_names(before, namespace):
    return [name for name, value in namespace.items()
            if not name.startswith("_") and (name not in before or before[name] is not value)]


def compare_cell(cell, index, namespaces, stem):
    outcomes = []
    seed_state = (np.random.get_state(), random.getstate())
    for side, namespace in zip(("jax", "numax"), namespaces):
        np.random.set_state(seed_state[0])
        random.setstate(seed_state[1])
        code = runnable(cell.code) if side == "jax" else swap_imports(runnable(cell.code))
        before = dict(namespace)
        printed = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(printed):
            value, error = run_cell(code, namespace, f"<{stem} cell {index} ({side})>")
            (jax if side == "jax" else numax).effects_barrier()  # host callbacks print within their cell
        outcomes.append((value, error, bound_names(before, namespace), time.perf_counter() - start,
                         printed.getvalue()))
    (jax_value, jax_error, names, jax_seconds, jax_printed), (numax_value, numax_error, _, numax_seconds,
                                                             numax_printed) = outcomes
    record = {"index": index, "line": cell.line, "jax_seconds": round(jax_seconds, 3),
              "numax_seconds": round(numax_seconds, 3), "jax_raised": _describe(jax_error),
              "numax_raised": _describe(numax_error), "expected_to_raise": cell.raises}
    record["problem"] = _problem(jax_value, jax_error, numax_value, numax_error, names, namespaces, cell.raises)
    if record["problem"] is None and jax_error is None:
        record["problem"] = compare_printed(jax_printed, numax_printed)
    if numax_error is not None and record["problem"]:
        record["numax_traceback"] = "".join(traceback.format_exception(numax_error)[-6:])[-3000:]
    return record


def _describe(error):
    return None if error is None else f"{type(error).__name__}: {str(error)[:300]}"


_ENVIRONMENT_ERRORS = (NameError, ImportError, SyntaxError)


def _problem(jax_value, jax_error, numax_value, numax_error, names, namespaces, expected_to_raise):
    if not expected_to_raise and isinstance(jax_error, _ENVIRONMENT_ERRORS):
        # A cell that cannot run here (a missing name or package, pseudo-code) checks nothing when both fail
        # alike: such a cell is listed, with why. Other errors are compared as the page's own.
        return f"jax itself raised {_describe(jax_error)} (the cell is not exercised)"
    if jax_error is not None or numax_error is not None:
        if jax_error is None:
            return f"numax raised {_describe(numax_error)}"
        if numax_error is None:
            return f"numax did not raise; jax raised {_describe(jax_error)}"
        if not same_exception_kind(jax_error, numax_error):
            return f"exception kinds differ: jax {type(jax_error).__name__}, numax {type(numax_error).__name__}"
        return None
    difference = compare_values(jax_value, numax_value)
    if difference:
        return f"last expression: {difference}"
    jax_namespace, numax_namespace = namespaces
    for name in names:
        if name not in numax_namespace:
            if _jax_leaf(jax_namespace[name])[1] is not None:
                return f"{name}: not defined under numax"
            continue
        difference = compare_values(jax_namespace[name], numax_namespace[name])
        if difference:
            return f"{name}: {difference}"
    return None


def main(stem, report_path):
    # What JAX's documentation tests predefine for doctests (its conftest.py), each side with its own library.
    namespaces = ({"__name__": "__main__", "jax": jax, "lax": jax.lax, "jnp": jax.numpy, "np": np},
                  {"__name__": "__main__", "jax": numax, "lax": numax.lax, "jnp": numax.numpy, "np": np})
    with open(report_path, "w") as report:
        for index, cell in enumerate(read_cells(stem)):
            report.write(json.dumps(compare_cell(cell, index, namespaces, stem)) + "\n")
            report.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
