"""`jax.api_util`: helpers for writing transformations on `linear_util.WrappedFun`s, as libraries built on jax's
internals use them (flax's lazy init and `nn.scan` trace with `flatten_fun` and `partial_eval`).

- `debug_info(traced_for, fun, args, kwargs)`: what a traced function is, for messages.
- `flatten_fun` / `flatten_fun_nokwargs`: a WrappedFun of flat leaves (in `in_tree`'s order) returning flat
  leaves, with a thunk giving the output treedef once it has run.
- `argnums_partial`, `flatten_axes`, `donation_vector`, `rebase_donate_argnums`, `shaped_abstractify`, `safe_map`.
"""

import functools
import inspect

from numax._src.util import safe_map
from numax.core import pytree as _tree
from numax.extend import linear_util as lu
from numax.extend.linear_util import DebugInfo

__all__ = ["argnums_partial", "debug_info", "donation_vector", "flatten_axes", "flatten_fun", "flatten_fun_nokwargs",
           "rebase_donate_argnums", "safe_map", "shaped_abstractify"]


def _source_info(fun):
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", None)
    if code is not None and name is not None:
        return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    return name if isinstance(name, str) and " " not in name else "<unknown>"


def _arg_names(fun, args, kwargs, static_argnums, static_argnames):
    static = {i % len(args) for i in static_argnums if -len(args) <= i < len(args)} if args else set()
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        named = [(name, value) for name, value in bound.arguments.items() if name not in kwargs]
        positions = dict(zip((name for name, _ in named), range(len(named))))
    except (TypeError, ValueError):
        named = [(f"args[{i}]", value) for i, value in enumerate(args)]
        positions = {name: i for i, (name, _) in enumerate(named)}
    named += sorted((name, value) for name, value in kwargs.items() if name not in static_argnames)
    names = []
    for name, value in named:
        if positions.get(name) in static:
            continue
        for path, _ in _tree.tree_flatten_with_path(value)[0]:
            names.append(name + _tree.keystr(path))
    return tuple(names)


def debug_info(traced_for, fun, args, kwargs, *, static_argnums=(), static_argnames=(), result_paths_thunk=None,
               sourceinfo=None, signature=None):
    """The DebugInfo of tracing `fun` (for `traced_for`: 'jit', 'scan', ...) on example `args` and `kwargs`: its
    source location and the names of its flat non-static arguments."""
    del signature
    recorded = getattr(fun, "__fun_debug_info__", None)
    if recorded is not None:
        return recorded
    if sourceinfo is None:
        sourceinfo = _source_info(fun)
    try:
        names = _arg_names(fun, tuple(args), dict(kwargs), static_argnums, set(static_argnames))
    except Exception:  # arguments that are not pytrees (a treedef passed as an example): names unknown
        names = None
    return DebugInfo(traced_for, sourceinfo, names, result_paths_thunk)


@lu.transformation_with_aux2
def flatten_fun(f, store, in_tree, *args_flat):
    """`f(*args, **kwargs)` as a function of the leaves of `(args, kwargs)` (structure `in_tree`), returning the
    leaves of its result; the result's treedef goes to the store."""
    args, kwargs = _tree.tree_unflatten(in_tree, args_flat)
    leaves, out_tree = _tree.tree_flatten(f(*args, **kwargs))
    store.store(out_tree)
    return leaves


@lu.transformation_with_aux2
def flatten_fun_nokwargs(f, store, in_tree, *args_flat):
    """`f(*args)` as a function of the leaves of `args` (structure `in_tree`), returning its result's leaves."""
    leaves, out_tree = _tree.tree_flatten(f(*_tree.tree_unflatten(in_tree, args_flat)))
    store.store(out_tree)
    return leaves


class _Static:
    """A static argument kept in a transformation's parameters: equal when of the same type and equal."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return hash(self.val)

    def __eq__(self, other):
        return type(other) is _Static and type(self.val) is type(other.val) and self.val == other.val


@lu.transformation2
def _with_static_args(f, dyn_argnums, static_args, *dyn_args, **kwargs):
    given, static = iter(dyn_args), iter(static_args)
    num_args = len(dyn_args) + len(static_args)
    return f(*[next(given) if i in dyn_argnums else next(static).val for i in range(num_args)], **kwargs)


def argnums_partial(f, dyn_argnums, args, require_static_args_hashable=True):
    """(`f` taking only the arguments at `dyn_argnums`, the others fixed to those in `args`; those arguments)."""
    dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    dyn_argnums = tuple(sorted(i % len(args) for i in dyn_argnums)) if args else ()
    static = []
    for i, arg in enumerate(args):
        if i in dyn_argnums:
            continue
        if require_static_args_hashable:
            try:
                hash(arg)
            except TypeError:
                raise ValueError(f"Non-hashable static arguments are not supported, as this can lead to unexpected "
                                 f"cache-misses. Static argument (index {i}) of type {type(arg)} for function "
                                 f"{f.__name__} is non-hashable.") from None
        static.append(_Static(arg))
    return _with_static_args(f, dyn_argnums, tuple(static)), tuple(args[i] for i in dyn_argnums)


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
    """The leaf of `axis_tree` (a prefix of `treedef`'s tree; None is a leaf) above each of `treedef`'s leaves."""
    del kws, tupled_args
    full = _tree.tree_unflatten(treedef, [object()] * treedef.num_leaves)
    try:
        return _tree.broadcast_prefix_leaves(axis_tree, full, is_leaf=lambda x: x is None)
    except ValueError as error:
        raise ValueError(f"{name} specification must be a tree prefix of the corresponding value, got specification "
                         f"{axis_tree} for value tree {treedef}. ({error})") from None


def donation_vector(donate_argnums, donate_argnames, in_tree, kws=True):
    """One bool per leaf of `in_tree` (the `(args, kwargs)` tree, or the args tree with `kws=False`): whether it
    belongs to a donated argument."""
    args_tree, kwargs_tree = in_tree.children() if kws else (in_tree, None)
    donated = []
    for i, arg in enumerate(args_tree.children()):
        donated += [i in donate_argnums] * arg.num_leaves
    if kwargs_tree is not None:
        kwargs = _tree.tree_unflatten(kwargs_tree, [object()] * kwargs_tree.num_leaves)
        for key, child in zip(sorted(kwargs), kwargs_tree.children()):
            donated += [key in donate_argnames] * child.num_leaves
    return tuple(donated)


def rebase_donate_argnums(donate_argnums, static_argnums):
    """`donate_argnums` renumbered as positions among the non-static arguments, sorted and unique."""
    static = sorted(set(static_argnums))
    return tuple(sorted({i - sum(s < i for s in static) for i in set(donate_argnums) if i not in static}))


def shaped_abstractify(x):
    """The ShapedArray of an array, tracer, scalar or anything with `shape` and `dtype` (a ShapeDtypeStruct)."""
    from numax.core.avals import ShapedArray
    from numax.transforms.aot import _abstract

    return x if isinstance(x, ShapedArray) else _abstract(x)
