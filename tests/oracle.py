"""Expected values for a whole table of test cases from one jax program.

A jax compile costs about 20 ms however small the program, so a table of a few dozen cases compiles its
oracle as one jax.jit program (once per process: the suite distributes whole files to its workers) and each
case's test reads its own result. Every case is still its own test with its own assertions; only the oracle
is shared.
"""

from harness import jax


def jit_all(functions, arguments):
    """[function(*args) for each function and its argument tuple], computed by one jax.jit program."""
    return jax.jit(lambda all_arguments: [f(*args) for f, args in zip(functions, all_arguments)])(list(arguments))


def jit_table(names, functions, arguments):
    """{name: function(*args)} for a table of cases, computed by one jax.jit program."""
    return dict(zip(names, jit_all(functions, arguments), strict=True))


def jit_cases(cases):
    """{key: function(*args)} for a table given as {key: (function, args)}, computed by one jax.jit program."""
    return jit_table(list(cases), [function for function, _ in cases.values()], [args for _, args in cases.values()])
