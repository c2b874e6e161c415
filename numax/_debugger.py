"""The interactive debugger behind `numax.debug.breakpoint`: the caller's stack frames, captured when the
breakpoint is traced, with the traced values made concrete when the program runs, and the text debugger
(JAX's "cli" backend: `(jdb)` commands read from stdin, or from the `stdin` passed to `breakpoint`).

A frame's local variables that hold tracers (or pytrees of them) become the arguments of one debug
callback; when it runs, they come back as arrays and the debugger opens on the rebuilt frames.
"""

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback

from numax.core import pytree as tree
from numax.core.trace import Tracer

__all__ = ["DebuggerFrame", "get_debugger", "register_debugger", "capture_frames", "CliDebugger"]


class _CantFlatten:
    """Stands for a local that is not a pytree numax can flatten (a dict whose keys do not sort)."""

    def __repr__(self):
        return "<cant_flatten>"


cant_flatten = _CantFlatten()


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """One Python stack frame as the debugger shows it: its locals (globals are not captured, as in JAX),
    its source lines and the position of the current line in them (`offset`, None without source)."""

    filename: str
    locals: dict
    globals: dict
    code_context: list
    source: list
    lineno: int
    offset: int

    @classmethod
    def from_frame_info(cls, frame_info):
        try:
            lines, start = inspect.getsourcelines(frame_info.frame)
            source = "".join(lines).split("\n")
            # `start` is 1-based, or 0 for a whole module; `lineno` is 1-based.
            offset = frame_info.lineno - max(start, 1)
            if offset >= len(source):  # (code made by eval/exec has no matching source)
                source, offset = [], None
        except OSError:
            source, offset = [], None
        return cls(frame_info.filename, dict(frame_info.frame.f_locals), {}, frame_info.code_context, source,
                   frame_info.lineno, offset)


def _is_numax_frame(frame_info):
    return frame_info.frame.f_globals.get("__name__", "").startswith("numax.")


def capture_frames(filter_frames=True, num_frames=None, skip=1):
    """The caller's stack (innermost first, skipping `skip` frames of the caller's own), without numax's
    frames when `filter_frames`, at most `num_frames` of them."""
    frame_infos = inspect.stack()[skip + 1:]
    if filter_frames:
        frame_infos = [info for info in frame_infos if not _is_numax_frame(info)]
    frames = [DebuggerFrame.from_frame_info(info) for info in frame_infos]
    return frames if num_frames is None else frames[:num_frames]


@dataclasses.dataclass(frozen=True)
class _Slot:
    """Where a frame's local held a tracer: the position of its value among the callback's arguments."""

    position: int


def split_traced(frames):
    """(the tracers among the frames' locals, a function of their concrete values rebuilding the frames)."""
    tracers = []
    plans = []  # per frame: [(name, value, None) or (name, treedef, [leaf or position of a tracer value])]
    for frame in frames:
        plan = []
        for name, value in frame.locals.items():
            try:
                leaves, treedef = tree.tree_flatten(value)
            except Exception:  # noqa: BLE001  (any failure to flatten makes the local unreadable, as in JAX)
                plan.append((name, cant_flatten, None))
                continue
            if not any(isinstance(leaf, Tracer) for leaf in leaves):
                plan.append((name, value, None))
                continue
            slots = []
            for leaf in leaves:
                if isinstance(leaf, Tracer):
                    slots.append(_Slot(len(tracers)))
                    tracers.append(leaf)
                else:
                    slots.append(leaf)
            plan.append((name, treedef, slots))
        plans.append(plan)

    def rebuild(values):
        rebuilt = []
        for frame, plan in zip(frames, plans):
            local_values = {}
            for name, value_or_tree, slots in plan:
                if slots is None:
                    local_values[name] = value_or_tree
                else:
                    leaves = [values[s.position] if isinstance(s, _Slot) else s for s in slots]
                    local_values[name] = value_or_tree.unflatten(leaves)
            rebuilt.append(dataclasses.replace(frame, locals=local_values))
        return rebuilt

    return tracers, rebuild


# --- backends --------------------------------------------------------------------------------------------
_debuggers = {}  # name -> (priority, function(frames, thread_id, **kwargs))
debug_lock = threading.Lock()  # one debugger session at a time, whichever thread a callback runs on


def register_debugger(name, debugger, priority):
    if name in _debuggers:
        raise ValueError(f'Debugger with name "{name}" already registered.')
    _debuggers[name] = (priority, debugger)


def get_debugger(backend=None):
    """The debugger named `backend`, else the one of highest priority."""
    if backend is not None and backend in _debuggers:
        return _debuggers[backend][1]
    if not _debuggers:
        raise ValueError("No debuggers registered!")
    return max(_debuggers.values(), key=lambda entry: entry[0])[1]


class CliDebugger(cmd.Cmd):
    """The text debugger: evaluate expressions in a frame (`p`, `pp`, or a bare expression), move between
    frames (`u`, `d`), show the source (`l`) and the stack (`bt`), continue (`c`) or quit (`q`)."""

    prompt = "(jdb) "

    def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
        super().__init__(completekey=completekey, stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None  # (so `input()` reads the terminal, with line editing)
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def _write(self, text):
        print(text, file=self.stdout)

    def evaluate(self, expression):
        frame = self.frames[self.frame_index]
        return eval(expression, {}, {**frame.globals, **frame.locals})  # noqa: S307  (the user's own input)

    def _show(self, expression, formatter):
        try:
            self._write(formatter(self.evaluate(expression)))
        except Exception:  # noqa: BLE001  (reported like pdb does, and the session goes on)
            self._write("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

    def default(self, line):
        """Evaluates an expression and prints its repr."""
        self._show(line, repr)

    def do_p(self, arg):
        """p expression: prints the repr of the expression's value."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expression: pretty-prints the expression's value."""
        self._show(arg, pprint.pformat)

    def do_up(self, arg):
        """u(p): moves to the frame that called this one."""
        if self.frame_index == len(self.frames) - 1:
            self._write("At topmost frame.")
        else:
            self.frame_index += 1
        self.print_context()

    def do_down(self, arg):
        """d(own): moves to the frame this one called."""
        if self.frame_index == 0:
            self._write("At bottommost frame.")
        else:
            self.frame_index -= 1
        self.print_context()

    def do_list(self, arg):
        """l(ist): shows the source around the current line."""
        self.print_context(num_lines=5)

    def do_continue(self, arg):
        """c(ont(inue)): leaves the debugger; the program goes on."""
        return True

    def do_quit(self, arg):
        """q(uit), exit: exits the program."""
        sys.exit(0)

    def do_where(self, arg):
        """w(here), bt: prints the stack, innermost frame last."""
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    <no source>" if frame.offset is None else f"    {frame.source[frame.offset].strip()}")
        self._write("\n".join(lines))

    do_u, do_d, do_l = do_up, do_down, do_list
    do_c = do_cont = do_continue
    do_q = do_exit = do_EOF = do_quit
    do_w = do_bt = do_where

    def print_context(self, num_lines=2):
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(("->  " if i == frame.offset else "    ") + line)
        self._write("\n".join(lines))

    def run(self):
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                print("--KeyboardInterrupt--", file=sys.stdout)


def run_cli_debugger(frames, thread_id, **kwargs):
    CliDebugger(frames, thread_id, **kwargs).run()


register_debugger("cli", run_cli_debugger, -1)
