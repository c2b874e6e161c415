"""The registry of numax's caches of traced and compiled work, which `numax.clear_caches()` empties.

Each cache registers how to clear itself where it is defined; `lru` is `functools.lru_cache` registered so.
"""

import functools

_clearers = []


def register(clear):
    """Registers `clear()`, called by `clear_all`; returns it."""
    _clearers.append(clear)
    return clear


def lru(maxsize):
    """`functools.lru_cache(maxsize)` whose entries `clear_all` drops."""
    def decorate(function):
        cached = functools.lru_cache(maxsize=maxsize)(function)
        register(cached.cache_clear)
        return cached

    return decorate


def clear_all():
    """Empties every registered cache: later calls trace and compile again."""
    for clear in _clearers:
        clear()
