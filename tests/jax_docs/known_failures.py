"""The documentation cells that do not yet run as they do under jax, with the reason, per page (by the cell's
first line in the page). doc_test.py holds every page to this table both ways: a cell that fails and is not
listed fails its page's test, and so does a listed cell that now passes (remove it). The README's
"Compatibility with JAX" section shows this table (`python tests/jax_docs/known_failures.py` prints it;
test_known_failures_table.py checks that the README has it)."""

import os

from extract_cells import CELLS_DIR

KNOWN_FAILURES = {
    'autodiff_cookbook': {
        438: "by design: a vjp function's pytree leaves are numax's residuals, not jax's",
    },
    'buffer_donation': {
        13: "jax 0.10.2 fails too: NameError: name 'update_fn' is not defined",
        41: "jax 0.10.2 fails too: NameError: name 'update_fn' is not defined",
        48: "jax 0.10.2 fails too: NameError: name 'List' is not defined",
    },
    'checkify_guide': {
        242: 'jax 0.10.2 fails too: SyntaxError: invalid syntax',
    },
    'Common_Gotchas_in_JAX': {
        704: "jax 0.10.2 fails too: ModuleNotFoundError: No module named 'absl'",
        711: "jax 0.10.2 fails too: ModuleNotFoundError: No module named 'absl'",
    },
    'convolutions': {
        77: "jax 0.10.2 fails too: ImportError: Missing optional dependency 'pooch' required for scipy",
    },
    'Custom_derivative_rules_for_Python_code': {
        961: "by design: a vjp function's pytree leaves are numax's residuals, not jax's",
        1029: 'jax 0.10.2 fails too: SyntaxError: invalid syntax (<Custom_derivative_rules_for_Python_co',
    },
    'debugging': {
        93: 'nondeterministic: unordered debug prints (the page promises no order)',
    },
    'export': {
        300: "by design: a serialized module's size is numax's own",
        305: "by design: a serialized module's size is numax's own",
        744: 'jax 0.10.2 fails too: SyntaxError: invalid syntax',
    },
    'flags': {
        45: "by design: jax prints its de-optimized-rerun notice for eager ops too (they are jitted; numax's eager ops "
            "are not)",
    },
    'gradient_checkpointing': {
        383: "jax 0.10.2 fails too: ModuleNotFoundError: No module named 'absl'",
    },
    'grid_blockspec': {
        14: "jax 0.10.2 fails too: NameError: name 'pl' is not defined",
        18: "jax 0.10.2 fails too: NameError: name 'n' is not defined",
        25: "jax 0.10.2 fails too: NameError: name 'pl' is not defined",
        29: "jax 0.10.2 fails too: NameError: name 'n' is not defined",
    },
    'higher_order': {
        56: "jax 0.10.2 fails too: NameError: name 'params' is not defined",
    },
    'jacobian_vector_products': {
        131: "by design: a vjp function's pytree leaves are numax's residuals, not jax's",
    },
    'migrate_pmap': {
        205: "jax 0.10.2 fails too: NameError: name 'x' is not defined",
        416: "jax 0.10.2 fails too: NameError: name 'mesh' is not defined",
        437: "jax 0.10.2 fails too: NameError: name 'mesh' is not defined",
        488: 'jax 0.10.2 fails too: SyntaxError: positional argument follows keyword argument (<migrate',
        662: "jax 0.10.2 fails too: NameError: name 'pmapped_fn' is not defined",
        678: 'jax 0.10.2 fails too: SyntaxError: invalid syntax',
        777: "jax 0.10.2 fails too: ModuleNotFoundError: No module named 'flax'",
    },
    'Neural_Network_and_Data_Loading': {
        192: "jax 0.10.2 fails too: ModuleNotFoundError: No module named 'torch'",
        212: "jax 0.10.2 fails too: NameError: name 'MNIST' is not defined",
        222: "jax 0.10.2 fails too: NameError: name 'mnist_dataset' is not defined",
        240: "jax 0.10.2 fails too: NameError: name 'training_generator' is not defined",
    },
    'parallel': {
        123: "jax 0.10.2 fails too: NameError: name 'AxisType' is not defined",
        138: "jax 0.10.2 fails too: NameError: name 'AxisType' is not defined",
    },
    'persistent_compilation_cache': {
        14: 'jax 0.10.2 fails too: SyntaxError: invalid syntax',
    },
    'print_breakpoint': {
        35: "jax 0.10.2 fails too: SyntaxError: expected '('",
        52: 'nondeterministic: unordered debug prints (the page promises no order)',
        88: 'nondeterministic: unordered debug prints (the page promises no order)',
        150: "jax 0.10.2 fails too: NameError: name 'Callable' is not defined",
    },
    'pytrees': {
        184: "jax 0.10.2 fails too: NameError: name 'vmap' is not defined",
        190: "jax 0.10.2 fails too: NameError: name 'vmap' is not defined",
        198: "jax 0.10.2 fails too: NameError: name 'vmap' is not defined",
        204: "jax 0.10.2 fails too: NameError: name 'vmap' is not defined",
    },
    'shard_map': {
        586: "jax 0.10.2 fails too: NameError: name 'PyTree' is not defined",
    },
    'stateful_computations': {
        126: "jax 0.10.2 fails too: SyntaxError: expected ':'",
        136: "jax 0.10.2 fails too: SyntaxError: expected ':'",
    },
    'Writing_custom_interpreters_in_Jax': {
        132: "jax 0.10.2 fails too: NameError: name 'inverse' is not defined",
    },
}


def page_of(stem):
    """The page's path in jax's repository, from its cells file's first line."""
    with open(os.path.join(CELLS_DIR, stem + ".py")) as cells:
        return cells.readline().split("jax-ml/jax ", 1)[1].split(" at ", 1)[0]


def markdown_table():
    rows = ["| page | line | why it does not run as under jax |", "| --- | --- | --- |"]
    for stem in sorted(KNOWN_FAILURES, key=str.lower):
        for line, reason in sorted(KNOWN_FAILURES[stem].items()):
            rows.append(f"| `{page_of(stem)}` | {line} | {reason} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
