"""`jax.extend.linear_util`: wrapped functions with a stack of transformations, the calling convention jax's
internal tracing functions take (`numax.api_util.flatten_fun`, `numax.interpreters.partial_eval`).

A `WrappedFun` holds a Python function and the transformations applied to it, innermost first; calling
`call_wrapped` runs them all. A transformation is a function `gen(f, *static_args, *args, **kwargs)` that calls
`f` (the function it wraps) somewhere inside; one with auxiliary output also receives a `Store` to put it in, read
after the call through the thunk `transformation_with_aux2` returns. The older generator style (`transformation`,
`transformation_with_aux`: a generator that yields the arguments and then the result) is accepted too.
"""

import functools
import weakref
from typing import NamedTuple

__all__ = ["DebugInfo", "EqualStore", "Store", "StoreException", "WrappedFun", "cache", "merge_linear_aux",
           "transformation", "transformation2", "transformation_with_aux", "transformation_with_aux2", "wrap_init"]


class StoreException(Exception):
    """A store read while empty, or written twice."""


_EMPTY = object()


class Store:
    """A slot written once (by a transformation, while the function runs) and read afterwards."""

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty")
        return self._val

    def __bool__(self):
        return self._val is not _EMPTY


class EqualStore(Store):
    """A store that may be written again with an equal value (a function traced twice the same way)."""

    __slots__ = ()

    def store(self, val):
        if self._val is not _EMPTY:
            try:
                equal = bool(self._val == val)
            except Exception:
                equal = False
            if not equal:
                raise StoreException("Store occupied with not-equal value")
            return
        self._val = val


class DebugInfo(NamedTuple):
    """What a traced function is, for messages: what traced it (`traced_for`: 'jit', 'scan', ...), the function
    and its source location (`func_src_info`), the flat argument names and result paths (None where unknown)."""

    traced_for: str
    func_src_info: str
    arg_names: tuple | None
    result_paths: object = None

    @property
    def func_name(self):
        return self.func_src_info.split(" ")[0] if self.func_src_info else "<unknown>"

    def replace_func_name(self, name):
        rest = self.func_src_info.split(" ", 1)[1:] if self.func_src_info else []
        return self._replace(func_src_info=" ".join([name, *rest]))

    def with_unknown_names(self):
        return self._replace(arg_names=None, result_paths=None)

    def safe_arg_names(self, expected_count):
        names = self.arg_names
        return tuple(names) if names is not None and len(names) == expected_count else ("",) * expected_count

    def safe_result_paths(self, expected_count):
        paths = self.result_paths
        return tuple(paths) if isinstance(paths, tuple) and len(paths) == expected_count else ("",) * expected_count


def _missing_debug_info(for_what):
    return DebugInfo(for_what, "<missing_debug_info>", None, None)


class WrappedFun:
    """`f` with `transforms` applied (the outermost first), `stores` their auxiliary outputs (None for those
    without) and `params` keyword arguments bound to `f`. Equal (and of equal hash) when the function,
    transformations and parameters are, which is what `cache` keys on."""

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

    def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen, gen_static_args, out_store):
        """This function with one more transformation (outermost), whose auxiliary output goes to `out_store`."""
        bound = (self.f_transformed,) if out_store is None else (self.f_transformed, out_store)
        return WrappedFun(self.f, functools.partial(gen, *bound, *gen_static_args),
                          ((gen, gen_static_args),) + self.transforms, (out_store,) + self.stores, self.params,
                          None, self.debug_info)

    def populate_stores(self, stores):
        """Copies the values of `stores` (those of an earlier, cached call) into this function's stores."""
        for mine, other in zip(self.stores, stores):
            if mine is not None:
                mine.store(other.val)

    def call_wrapped(self, *args, **kwargs):
        """Runs the function through all its transformations."""
        return self.f_transformed(*args, **kwargs)

    def replace_debug_info(self, debug_info):
        return WrappedFun(self.f, self.f_transformed, self.transforms, self.stores, self.params, self.in_type,
                          debug_info)

    def with_unknown_names(self):
        return self.replace_debug_info(self.debug_info.with_unknown_names())

    def __repr__(self):
        names = [getattr(gen, "__name__", repr(gen)) for gen, _ in self.transforms]
        return f"Wrapped function {self.__name__} under [{', '.join(names)}]"

    def __hash__(self):
        return hash((self.f, self.transforms, self.params, self.in_type, self.debug_info))

    def __eq__(self, other):
        return (isinstance(other, WrappedFun) and self.f == other.f and self.transforms == other.transforms
                and self.params == other.params and self.in_type == other.in_type
                and self.debug_info == other.debug_info)


def wrap_init(f, params=None, *, debug_info=None):
    """`f` as a WrappedFun with no transformation yet; `params` (a dict) are keyword arguments bound to it."""
    params = {} if params is None else dict(params)
    if debug_info is None:
        debug_info = _missing_debug_info("linear_util.wrap_init")
    bound = functools.partial(f, **params) if params else f
    return WrappedFun(f, bound, (), (), tuple(sorted(params.items())), None, debug_info._replace(result_paths=None))


def _curried(transform):
    """`transform(gen, fun, *static)` usable as a decorator on `gen`: `transform(gen)(fun, *static)`."""
    @functools.wraps(transform)
    def curried(gen, *rest, **kwargs):
        if rest:
            return transform(gen, *rest, **kwargs)
        return functools.wraps(gen)(functools.partial(transform, gen, **kwargs))

    return curried


@_curried
def transformation2(gen, fun, *gen_static_args):
    """`fun` with `gen(f, *gen_static_args, *args, **kwargs)` applied on top: `gen` calls `f`."""
    return fun.wrap(gen, gen_static_args, None)


@_curried
def transformation_with_aux2(gen, fun, *gen_static_args, use_eq_store=False, unk_names=False):
    """`fun` with `gen(f, store, *gen_static_args, *args, **kwargs)` applied on top, and a thunk reading what
    `gen` put in `store` (available once the function has been called)."""
    out_store = EqualStore() if use_eq_store else Store()
    fun = fun.wrap(gen, gen_static_args, out_store)
    if unk_names:
        fun = fun.with_unknown_names()
    return fun, lambda: out_store.val


def _run_generator(f, generator):
    args, kwargs = next(generator)
    return generator.send(f(*args, **kwargs))


@_curried
def transformation(gen, fun, *gen_static_args):
    """The generator form: `gen(*gen_static_args, *args)` yields `(args, kwargs)` for the wrapped function, is
    sent its result and yields the transformed result."""
    def apply(f, *args, **kwargs):
        return _run_generator(f, gen(*gen_static_args, *args, **kwargs))

    apply.__name__ = getattr(gen, "__name__", "transformation")
    return fun.wrap(apply, (), None)


@_curried
def transformation_with_aux(gen, fun, *gen_static_args):
    """The generator form with auxiliary output: the generator's last yield is `(result, aux)`."""
    def apply(f, store, *args, **kwargs):
        result, aux = _run_generator(f, gen(*gen_static_args, *args, **kwargs))
        store.store(aux)
        return result

    apply.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    return transformation_with_aux2(apply, fun)


def cache(call, *, explain=None):
    """Memoizes `call(fun: WrappedFun, *args)` on the function's transformations, parameters and `args` (per
    underlying Python function, held weakly); a hit copies the cached call's auxiliary outputs into `fun`'s
    stores, as the call would have."""
    del explain
    per_function = weakref.WeakKeyDictionary()

    def memoized(fun, *args):
        entries = per_function.setdefault(fun.f, {})
        key = (fun.transforms, fun.params, fun.in_type, args)
        hit = entries.get(key)
        if hit is not None:
            answer, stores = hit
            fun.populate_stores(stores)
            return answer
        answer = call(fun, *args)
        entries[key] = (answer, fun.stores)
        return answer

    memoized.cache_clear = per_function.clear
    memoized.evict_function = lambda f: per_function.pop(f, None)
    return memoized


def merge_linear_aux(aux1, aux2):
    """Of two thunks exactly one of whose stores was written: (True, its value) for the first, (False, ...) for
    the second."""
    try:
        out1 = aux1()
    except StoreException:
        try:
            return False, aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores occupied")
