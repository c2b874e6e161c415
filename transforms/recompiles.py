"""Why a jit function compiled again: call descriptions, their differences, and compile statistics.

Owns `CallDescription` (what a call's cache key stands for, written by Python path: `params['w']: f32[3]`),
`explain_miss` (the differences from the closest call compiled before), the `jax_explain_cache_misses` log
message (logged as JAX does, at WARNING on the "numax.jit" logger, which Python prints to stderr when
logging is not configured), `RecompileWarning` past `numax_recompile_limit`, and `JitStatistics`.
Knows nothing of tracing or lowering: jit hands it the arguments of a call that missed its cache.
"""

import inspect
import logging
import sys
import warnings

from ..core import dtypes
from ..core import pytree as tree
from ..core.avals import ShapedArray, get_aval
from ..core.trace import Tracer

logger = logging.getLogger("numax.jit")


class RecompileWarning(UserWarning):
    """A jit function compiled more times than `numax_recompile_limit`: its argument shapes keep changing."""


class JitStatistics:
    """Counts of one jit function's calls (`numax.jit(f).stats`) or of all of them (`numax.jit_statistics()`):
    `compiles` (cache misses that compiled), `cache_hits` (calls served by a compiled executable) and
    `compile_seconds` (time spent tracing, lowering and compiling on misses). Counted without a lock: under
    threads the counts are close, not exact."""

    __slots__ = ("compiles", "cache_hits", "compile_seconds")

    def __init__(self):
        self.reset()

    def reset(self):
        self.compiles = 0
        self.cache_hits = 0
        self.compile_seconds = 0.0

    def __repr__(self):
        return (f"JitStatistics(compiles={self.compiles}, cache_hits={self.cache_hits}, "
                f"compile_seconds={self.compile_seconds:.3f})")


global_statistics = JitStatistics()


def jit_statistics():
    """Compile statistics summed over every `numax.jit` function of this process (a `JitStatistics`)."""
    return global_statistics


def record_compile(stats, seconds):
    for counts in (stats, global_statistics):
        counts.compiles += 1
        counts.compile_seconds += seconds


def leaf_text(leaf):
    """A leaf's type as the explanations write it: `f32[3]`, `Python float`."""
    if isinstance(leaf, Tracer):
        return leaf.aval.str_short()
    if type(leaf) in dtypes.python_scalar_types:
        return f"Python {type(leaf).__name__}"
    aval = getattr(leaf, "aval", None)
    text = (aval if isinstance(aval, ShapedArray) else get_aval(leaf)).str_short()
    sharding = getattr(leaf, "_sharding", None)
    return text if sharding is None else f"{text} laid out by {sharding}"


class CallDescription:
    """What one call's cache key stands for: each argument leaf's type by its Python path, each argument's
    tree structure, the static arguments by name, and the configuration the trace depends on."""

    __slots__ = ("leaves", "structures", "static", "context")

    def __init__(self, signature, args, kwargs, static_argnums, static_argnames, context):
        self.leaves, self.structures, self.static = {}, {}, {}
        for name, value, is_static in _named_arguments(signature, args, kwargs, static_argnums, static_argnames):
            if is_static:
                self.static[name] = value
                continue
            paths_and_leaves, structure = tree.tree_flatten_with_path(value)
            self.structures[name] = structure
            for path, leaf in paths_and_leaves:
                self.leaves[name + tree.keystr(path)] = leaf_text(leaf)
        if signature is not None:  # a static argument left out takes its default: `training: True -> False`
            for parameter in signature.parameters.values():
                if (parameter.name in static_argnames and parameter.name not in self.static
                        and parameter.default is not parameter.empty):
                    self.static[parameter.name] = parameter.default
        self.context = dict(context)

    def differences(self, before):
        """What changed from the call `before` to this one, one line each."""
        changes = [_context_change(name, old, self.context[name])
                   for name, old in before.context.items() if self.context.get(name) != old]
        for name in sorted(set(before.static) | set(self.static)):
            old, new = before.static.get(name, _MISSING), self.static.get(name, _MISSING)
            if old is _MISSING or new is _MISSING or type(old) is not type(new) or old != new:
                changes.append(f"static argument {name}: {_value_text(old)} -> {_value_text(new)}")
        gained = [p for p in self.leaves if p not in before.leaves]
        lost = [p for p in before.leaves if p not in self.leaves]
        if gained or lost:
            changes.append("new argument structure: " + ", ".join(
                [f"{p} added" for p in gained] + [f"{p} removed" for p in lost]))
        else:
            changes += [f"new argument structure: {name}: {before.structures[name]} -> {structure}"
                        for name, structure in self.structures.items()
                        if name in before.structures and before.structures[name] != structure]
        changes += [f"{path}: {before.leaves[path]} -> {text}" for path, text in self.leaves.items()
                    if path in before.leaves and before.leaves[path] != text]
        return changes


_MISSING = object()


def _value_text(value):
    return "(not given)" if value is _MISSING else repr(value)


def _context_change(name, old, new):
    if name == "enable_x64":
        return f"64-bit mode turned {'on' if new else 'off'}"
    return f"{name} changed: {old!r} -> {new!r}"


def _named_arguments(signature, args, kwargs, static_argnums, static_argnames):
    """(name, value, is_static) for each argument of a call: positional ones by their parameter's name
    (`args[i]` past the named ones, for `*args`), keyword ones by their keyword."""
    names = []
    if signature is not None:
        names = [p.name for p in signature.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, value in enumerate(args):
        name = names[i] if i < len(names) else f"args[{i}]"
        yield name, value, i in static_argnums
    for name in sorted(kwargs):
        yield name, kwargs[name], name in static_argnames


def explain_miss(descriptions, new):
    """The differences from the closest of the calls compiled before (the fewest differences; the latest
    of equally close ones)."""
    return min((new.differences(before) for before in reversed(descriptions)), key=len, default=[])


def reason_text(changes):
    """The reason a compile log line gives: the first few differences."""
    if not changes:
        return "first call"
    return "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")


def defined_at(fun):
    """`file:line` where a function is defined, or None (builtins, callables without source)."""
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return None if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _user_frames():
    """The call stack from the innermost frame outside numax outwards (the user's call first)."""
    frame, depth = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("numax."):
        frame, depth = frame.f_back, depth + 1
    return frame, depth


def user_call_site():
    """`file:line` of the innermost frame outside numax: the user's call that missed the cache."""
    frame, _ = _user_frames()
    return "an unknown place" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def log_explanation(name, fun, changes):
    where = defined_at(fun)
    lines = [f"jit cache miss of {name}" + (f" (defined at {where})" if where else "")
             + f", called at {user_call_site()}, because:"]
    lines += [f"  * {change}" for change in changes or ["a call equal to an earlier one (its cache was cleared)"]]
    logger.warning("\n".join(lines))


def warn_if_past_limit(function, limit, changes):
    """Warns once per function when its compile count since its caches were last cleared first passes `limit`
    (0 or less: never). Recompiles after `numax.clear_caches()` are not the arguments' doing."""
    compiles = len(function._descriptions)  # one description per compile since the last clear
    if limit <= 0 or compiles != limit + 1:
        return
    where = defined_at(function.fun)
    warnings.warn(
        f"jit function {function.name}" + (f" (defined at {where})" if where else "")
        + f" has compiled {compiles} times, more than numax_recompile_limit={limit}; the "
        f"latest because {reason_text(changes)}. Each new argument shape compiles anew: pad varying "
        "dimensions up to a few bucket sizes (powers of two, say) and mask the padding, or make an argument "
        "static only if it takes few values. Raise the limit with "
        "numax.config.update('numax_recompile_limit', n).", RecompileWarning, stacklevel=_user_frames()[1])
