"""`jax.extend.source_info_util`: where libraries register the source files whose frames should not be named as
an operation's source location (`register_exclusion`), and the name stack jax keeps for the operations being
traced. numax's programs carry no source locations and no name stack (`numax.named_scope` checks its name and
records nothing), so what is registered or pushed here changes no program and no result: the exclusions are kept
(in `_exclude_paths`) and the name stack is tracked for code that reads it back. (Tracebacks shown to users are
filtered by `numax._src.traceback_util`'s own registry, as in jax.)
"""

import contextlib
import threading
from typing import NamedTuple

__all__ = ["NameStack", "SourceInfo", "current", "current_name_stack", "extend_name_stack", "new_name_stack",
           "new_source_info", "register_exclusion", "reset_name_stack", "set_name_stack", "summarize",
           "transform_name_stack", "user_context"]

_exclude_paths = []


def register_exclusion(path):
    """Excludes the source files under `path` (a file, or a folder's prefix) from source locations."""
    _exclude_paths.append(path)


class _Transform(NamedTuple):
    name: str


class NameStack(NamedTuple):
    """The scope names around the operations being traced, outermost first; a transformation's name wraps the
    scopes inside it (`outer/jvp(inner)`) when printed."""

    stack: tuple = ()

    def extend(self, name):
        return NameStack(self.stack + ((name,) if isinstance(name, str) else tuple(name)))

    def transform(self, transform_name):
        return NameStack(self.stack + (_Transform(transform_name),))

    def __getitem__(self, index):
        return NameStack(self.stack[index])

    def __len__(self):
        return len(self.stack)

    def __add__(self, other):
        return NameStack(self.stack + other.stack)

    def __str__(self):
        names = []
        for entry in reversed(self.stack):
            if isinstance(entry, _Transform):
                if names:
                    names[-1] = f"{entry.name}({names[-1]})"
                else:
                    names.append(f"{entry.name}()")
            else:
                names.append(entry)
        return "/".join(reversed(names))


class SourceInfo(NamedTuple):
    """An operation's source: a traceback (None: numax records none) and its name stack."""

    traceback: object = None
    name_stack: NameStack = NameStack()


class _State(threading.local):
    def __init__(self):
        self.name_stack = NameStack()


_state = _State()


def new_name_stack(name=""):
    return NameStack((name,) if name else ())


def current_name_stack():
    return _state.name_stack


def current():
    return SourceInfo(None, _state.name_stack)


def new_source_info():
    return SourceInfo(None, NameStack())


@contextlib.contextmanager
def set_name_stack(name_stack):
    previous, _state.name_stack = _state.name_stack, name_stack
    try:
        yield
    finally:
        _state.name_stack = previous


def extend_name_stack(name):
    return set_name_stack(_state.name_stack.extend(name))


def reset_name_stack():
    return set_name_stack(NameStack())


def transform_name_stack(name):
    return set_name_stack(_state.name_stack.transform(name))


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
    """Attributes the operations inside to the traceback `c` (numax records none) under `name_stack`."""
    del c
    if name_stack is None:
        yield
    else:
        with set_name_stack(name_stack):
            yield


def summarize(source_info, num_frames=1):
    del num_frames
    return str(source_info.name_stack) or "unknown"
