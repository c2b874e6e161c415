"""`jax._src.traceback_util`: the registry of source files whose frames a library hides from the stack traces it
shows its users. Libraries (flax, equinox) register their own files with `register_exclusion` and ask
`include_frame` when they format a trace themselves. numax does not rewrite the tracebacks of exceptions, so
`api_boundary` returns the function it is given: an exception raised below it keeps its full, unmodified trace."""

import os

_exclude_paths = []


def register_exclusion(path):
    """Hides the frames of the source files under `path` (a file or a folder) from `include_frame`."""
    _exclude_paths.append(path)


def _path_starts_with(path, prefix):
    if path == prefix:
        return True
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(prefix)]) == os.path.abspath(prefix)
    except ValueError:  # paths on different drives, or a relative path against an absolute one
        return False


def include_filename(filename):
    """Whether frames of source file `filename` are shown (no registered exclusion covers it)."""
    return not any(_path_starts_with(filename, path) for path in _exclude_paths)


def include_frame(frame):
    """Whether the frame `frame` is shown (its source file is not excluded)."""
    return include_filename(frame.f_code.co_filename)


def api_boundary(fun, *, repro_api_name=None, repro_user_func=False):
    """Marks `fun` as a boundary below which jax filters stack traces; numax keeps every frame, so `fun` itself."""
    del repro_api_name, repro_user_func
    return fun


register_exclusion(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
