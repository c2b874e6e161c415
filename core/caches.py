"""numax's caches of traced and compiled work, safe to share between threads, and the registry that
`numax.clear_caches()` empties.

`ComputeOnceCache` is the one cache class: a dictionary whose missing entries are computed once even when
threads ask for them together (a data loader and a training loop compiling the same step wait for one
compile, never run two). `lru(maxsize)` puts one, bounded, in front of a function.
"""

import collections
import functools
import threading

_clearers = []


def register(clear):
    """Registers `clear()`, called by `clear_all`; returns it."""
    _clearers.append(clear)
    return clear


def clear_all():
    """Empties every registered cache: later calls trace and compile again."""
    for clear in _clearers:
        clear()


class _InFlight:
    """A value one thread (`owner`) is computing; other threads wait on `done`."""

    __slots__ = ("owner", "done")

    def __init__(self):
        self.owner = threading.get_ident()
        self.done = threading.Event()


class ComputeOnceCache:
    """A dictionary of expensive values (traces, executables) that threads share.

    A missing key is computed by the first thread that asks; threads asking for it meanwhile wait for that
    result instead of computing it again. If the computation raises, each waiter then tries it itself (the
    error belongs to the asker and may not repeat). A thread asking again for a key it is computing itself
    (a function traced inside its own trace) computes it without waiting on itself. With `maxsize`, the
    least recently used entries are dropped past that size. Hits are a dictionary lookup: hot paths may
    read `entries` directly, and call `get` on a miss."""

    __slots__ = ("entries", "maxsize", "_in_flight", "_lock", "__weakref__")

    def __init__(self, maxsize=None):
        self.entries = {} if maxsize is None else collections.OrderedDict()
        self.maxsize = maxsize
        self._in_flight = {}
        self._lock = threading.Lock()

    def get(self, key, compute):
        """The value for `key`, computed by `compute()` if missing (None results are not kept)."""
        value = self.entries.get(key)
        if value is None:
            return self._compute_once(key, compute)
        if self.maxsize is not None:
            with self._lock:
                if key in self.entries:
                    self.entries.move_to_end(key)
        return value

    def _compute_once(self, key, compute):
        me = threading.get_ident()
        while True:
            with self._lock:
                value = self.entries.get(key)
                if value is not None:
                    return value
                flight = self._in_flight.get(key)
                if flight is None:
                    flight = self._in_flight[key] = _InFlight()
                    break
                if flight.owner == me:
                    return compute()
            flight.done.wait()
        try:
            value = compute()
            if value is not None:
                with self._lock:
                    self.entries[key] = value
                    if self.maxsize is not None and len(self.entries) > self.maxsize:
                        self.entries.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._in_flight[key]
            flight.done.set()

    def __contains__(self, key):
        return key in self.entries

    def __len__(self):
        return len(self.entries)

    def clear(self):
        with self._lock:
            self.entries.clear()


def lru(maxsize):
    """Decorates a function of hashable positional arguments with a bounded `ComputeOnceCache` that
    `clear_all` empties (`cache_size()` and `cache_clear()` on the result, for tests and tools)."""
    def decorate(function):
        cache = ComputeOnceCache(maxsize)

        @functools.wraps(function)
        def cached(*args):
            return cache.get(args, lambda: function(*args))

        cached.cache_size = cache.__len__
        cached.cache_clear = register(cache.clear)
        return cached

    return decorate
