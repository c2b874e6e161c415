"""`python -m numax.run script.py [args]` (or `python -m numax.run -m module [args]`): runs a program written for
jax on numax, unchanged. The switch (`numax.compat.install()`) goes in before the program starts, so its
`import jax` and every library it uses (optax, flax, chex, equinox) get numax's modules."""

import runpy
import sys

from numax import compat

_USAGE = "usage: python -m numax.run script.py [args ...]  |  python -m numax.run -m module [args ...]"


def main(argv):
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(_USAGE, file=sys.stderr if argv[:1] != ["-h"] and argv[:1] != ["--help"] else sys.stdout)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    compat.install()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
