"""numax.debug.breakpoint with the CLI debugger: the cases of jax-v0.10.2 tests/debugger_test.py, each run
under jax and numax from the same source (so even the listed source lines agree) and compared, plus the
debugger reading a real stdin in a fresh process."""

import io
import os
import re
import subprocess
import sys
import textwrap

import pytest
from harness import jax

import numax

foo = 2  # a module global: the debugger does not see globals, as in JAX


def fake_stdin_stdout(commands):
    return io.StringIO("".join(command + "\n" for command in commands)), io.StringIO()


def run_both(case, commands):
    """`case(api, stdin, stdout)` with api = jax, then numax; returns both sessions' output."""
    outputs = []
    for api in (jax, numax):
        stdin, stdout = fake_stdin_stdout(commands)
        case(api, stdin, stdout)
        api.effects_barrier()
        outputs.append(stdout.getvalue())
    return outputs


def expect(text):
    return textwrap.dedent(text).lstrip()


def test_debugger_eof():
    for api in (jax, numax):
        stdin, stdout = fake_stdin_stdout([])

        def f(x):
            y = api.numpy.sin(x)
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            return y

        with pytest.raises(SystemExit):
            f(2.0)
            api.effects_barrier()


def _sin_then_break(api, stdin, stdout, jit):
    def f(x):
        y = api.numpy.sin(x)
        api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
        return y

    (api.jit(f) if jit else f)(api.numpy.array(2.0, api.numpy.float32))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("commands, expected", [
    (["c"], "Entering jdb:\n(jdb) "),
    (["p x", "c"], "Entering jdb:\n(jdb) Array(2., dtype=float32)\n(jdb) "),
])
def test_debugger_can_continue_and_print_value(jit, commands, expected):
    jax_out, numax_out = run_both(lambda api, i, o: _sin_then_break(api, i, o, jit), commands)
    assert numax_out == jax_out == expected


def test_debugger_can_print_multiple_values():
    def case(api, stdin, stdout):
        @api.jit
        def f(x):
            y = x + 1.0
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            return y

        f(api.numpy.array(2.0, api.numpy.float32))

    jax_out, numax_out = run_both(case, ["p x, y", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) (Array(2., dtype=float32), Array(3., dtype=float32))
        (jdb) """)


def test_debugger_can_print_context_and_backtrace():
    jax_out, numax_out = run_both(lambda api, i, o: _sin_then_break(api, i, o, True), ["l", "bt", "c"])
    assert re.match(r"Entering jdb:\n\(jdb\) > .*test_debugger\.py\([0-9]+\)\n\s+def f\(x\):\n\s+y = api\.numpy\.sin"
                    r"\(x\)\n->\s+api\.debug\.breakpoint\(stdin=stdin, stdout=stdout, backend=\"cli\"\)\n\s+return y\n",
                    numax_out)
    assert re.search(r"\(jdb\) Traceback:\n(.*\n)*  File .*test_debugger.py\", line [0-9]+\n    api\.debug\.breakpoint",
                     numax_out)
    # jax's stack has one more frame of its own between the test and the traced function (its pjit's
    # cache miss path), which numax has not: compare the listed source and the innermost frames only.
    assert numax_out.split("Traceback:")[0] == jax_out.split("Traceback:")[0]
    assert numax_out.splitlines()[-3:] == jax_out.splitlines()[-3:]


def test_debugger_can_work_with_multiple_stack_frames():
    def case(api, stdin, stdout):
        def f(x):
            y = api.numpy.sin(x)
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            return y

        @api.jit
        def g(x):
            y = f(x)
            return api.numpy.exp(y)

        g(api.numpy.array(2.0, api.numpy.float32))

    jax_out, numax_out = run_both(case, ["l", "u", "p x", "d", "c"])
    assert numax_out == jax_out
    sessions = numax_out.split("(jdb) ")
    assert sessions[0] == "Entering jdb:\n"
    assert re.search(r"->\s+api\.debug\.breakpoint", sessions[1]) and "def f(x):" in sessions[1]
    assert re.search(r"->\s+y = f\(x\)", sessions[2]) and "@api.jit" in sessions[2]
    assert sessions[3] == "Array(2., dtype=float32)\n"
    assert re.search(r"->\s+api\.debug\.breakpoint", sessions[4])


def test_can_use_multiple_ordered_breakpoints():
    def case(api, stdin, stdout):
        def f(x):
            y = x + 1.0
            api.debug.breakpoint(stdin=stdin, stdout=stdout, ordered=True, backend="cli")
            return y

        @api.jit
        def g(x):
            y = f(x) * 2.0
            api.debug.breakpoint(stdin=stdin, stdout=stdout, ordered=True, backend="cli")
            return api.numpy.exp(y)

        g(api.numpy.array(2.0, api.numpy.float32))

    jax_out, numax_out = run_both(case, ["p y", "c", "p y", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) Array(3., dtype=float32)
        (jdb) Entering jdb:
        (jdb) Array(6., dtype=float32)
        (jdb) """)


def test_debugger_works_with_vmap():
    def case(api, stdin, stdout):
        def f(x):
            y = x + 1.0
            api.debug.breakpoint(stdin=stdin, stdout=stdout, ordered=True, backend="cli")
            return 2.0 * y

        @api.jit
        @api.vmap
        def g(x):
            return api.numpy.exp(f(x))

        g(api.numpy.arange(2.0, dtype=api.numpy.float32))

    jax_out, numax_out = run_both(case, ["p y", "c", "p y", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) Array(1., dtype=float32)
        (jdb) Entering jdb:
        (jdb) Array(2., dtype=float32)
        (jdb) """)


def test_debugger_works_with_pmap():
    def case(api, stdin, stdout):
        def f(x):
            y = api.numpy.sin(x)
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            return y

        api.pmap(lambda x: api.numpy.exp(f(x)))(api.numpy.arange(2.0, dtype=api.numpy.float32))

    jax_out, numax_out = run_both(case, ["p y", "c", "p y", "c"])
    pattern = expect(r"""
        Entering jdb:
        \(jdb\) Array\(.*, dtype=float32\)
        \(jdb\) Entering jdb:
        \(jdb\) Array\(.*, dtype=float32\)
        \(jdb\) """)
    assert re.fullmatch(pattern, numax_out) and re.fullmatch(pattern, jax_out)
    values = lambda out: sorted(re.findall(r"Array\((.*), dtype", out))  # noqa: E731  (devices in any order)
    assert values(numax_out) == values(jax_out)


def test_debugger_uses_local_before_global_scope_and_not_globals():
    def case(api, stdin, stdout):
        def f(x):
            foo = "inner"
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            del foo
            return x

        f(2.0)

        @api.jit
        def g():
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")

        g()

    jax_out, numax_out = run_both(case, ["p foo", "c", "p foo", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) 'inner'
        (jdb) Entering jdb:
        (jdb) *** NameError: name 'foo' is not defined
        (jdb) """)


def test_can_limit_num_frames():
    def case(api, stdin, stdout):
        def g():
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli", num_frames=2)

        @api.jit
        def f():
            x = 2
            g()
            return x

        f()

    jax_out, numax_out = run_both(case, ["u", "p x", "u", "c"])
    assert numax_out == jax_out
    assert "(jdb) 2\n" in numax_out and "At topmost frame." in numax_out


def test_can_handle_dictionaries_with_unsortable_keys():
    def case(api, stdin, stdout):
        @api.jit
        def f():
            weird_dict = {(lambda x: x): 2.0, (lambda x: x * 2): 3}
            weirder_dict = {(lambda x: x): weird_dict}
            x = 2.0
            api.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            del weirder_dict
            return x

        f()

    jax_out, numax_out = run_both(case, ["p x", "p weird_dict", "p weirder_dict", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) 2.0
        (jdb) <cant_flatten>
        (jdb) <cant_flatten>
        (jdb) """)


def test_token_runs_the_breakpoint_once_the_token_is_computed():
    def case(api, stdin, stdout):
        @api.jit
        def f(x):
            y = x * 2.0
            y = api.debug.breakpoint(token=y, stdin=stdin, stdout=stdout, backend="cli")
            return y + 1.0

        assert float(f(api.numpy.float32(3.0))) == 7.0

    jax_out, numax_out = run_both(case, ["p x", "p y", "c"])
    assert numax_out == jax_out == expect("""
        Entering jdb:
        (jdb) Array(3., dtype=float32)
        (jdb) Array(6., dtype=float32)
        (jdb) """)


def test_ordered_and_token_are_exclusive():
    for api in (jax, numax):
        with pytest.raises(ValueError, match="`ordered` and `token` are mutually exclusive arguments."):
            api.debug.breakpoint(token=1.0, ordered=True)


_SCRIPT = """
import os, sys
api = __import__(sys.argv[1])

def f(x):
    y = api.numpy.sin(x) + 1.0
    api.debug.breakpoint()
    return y

print(float(api.jit(f)(api.numpy.float32(0.5))))
"""


@pytest.mark.parametrize("commands", ["p x, y\npp [x]\nc\n", "p x\nq\n"])
def test_cli_debugger_reads_stdin_in_a_fresh_process(commands):
    """The default backend reads commands from the real stdin (`input()`, prompts on stdout)."""
    runs = []
    for module in ("jax", "numax"):
        done = subprocess.run([sys.executable, "-c", _SCRIPT, module], input=commands, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        runs.append((done.returncode, done.stdout))
    (jax_code, jax_out), (numax_code, numax_out) = runs
    assert numax_out.startswith("Entering jdb:\n(jdb) (Array(0.5, dtype=float32), Array(1.4794255, dtype=float32))"
                                if "x, y" in commands else "Entering jdb:\n(jdb) Array(0.5, dtype=float32)")
    if commands.endswith("c\n"):
        assert numax_code == jax_code == 0 and numax_out == jax_out
        assert numax_out.endswith("1.4794255495071411\n")
    else:
        # q exits from inside the compiled program's callback: jax's process and numax's both fail (the
        # exit becomes the program's runtime error) without printing the result.
        assert numax_code == jax_code != 0
        assert "1.47" not in numax_out and "1.47" not in jax_out
        assert numax_out.split("(jdb)")[:2] == jax_out.split("(jdb)")[:2]
