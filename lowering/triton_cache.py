"""Compiled Triton kernels, cached in memory and on disk.

An entry is keyed on a sha256 over everything that changes the compiler's output (the caller's key
fields: kernel source and dependencies, signature, constexprs, options, Triton version, device). Each
file holds the key fields, the compiled kernel (a dict of strings and ints) and a sha256 of both, so a
torn, truncated or edited file is recompiled, never trusted. Files are written under a temporary name
and renamed into place, so a reader sees either nothing or a whole entry, also across processes.

This module knows nothing of Triton: it stores what the compile function returns.
"""

import hashlib
import json
import os
import sys
import threading
import time

from ..core.config import config
from .atomic_file import write_atomically

_FORMAT = 1  # bumped when the file layout changes, so old files miss instead of misreading


def default_directory() -> str:
    """`NUMAX_CACHE_DIR` if set (kernels go in its `triton` folder), else ~/.cache/numax/triton."""
    root = os.environ.get("NUMAX_CACHE_DIR")
    if root:
        return os.path.join(root, "triton")
    return os.path.join(os.path.expanduser("~"), ".cache", "numax", "triton")


def _digest(data) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class KernelCache:
    """Compiled kernels by key: memory first, then disk, else compile (and store in both).

    `misses`, `memory_hits` and `disk_hits` count lookups; `last_reason` says why the last compile
    happened (printed when `numax_log_compiles` is on)."""

    def __init__(self, directory=None):
        self._directory = directory
        self._entries = {}  # key digest -> compiled kernel dict
        self._lock = threading.Lock()
        self.misses = self.memory_hits = self.disk_hits = 0
        self.last_reason = None

    @property
    def directory(self) -> str:
        return self._directory or default_directory()

    def key(self, key_fields) -> str:
        """The printable key: a sha256 over the (JSON-serializable) key fields."""
        return _digest({"format": _FORMAT, "fields": key_fields})

    def path(self, key) -> str:
        return os.path.join(self.directory, f"{key}.json")

    def get_or_compile(self, key_fields, compile_fn, description=""):
        """The compiled kernel for `key_fields`; `compile_fn()` makes it (a JSON-serializable dict)."""
        key = self.key(key_fields)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self.memory_hits += 1
                return found
        found, reason = self._read(key, key_fields)
        if found is not None:
            with self._lock:
                self.disk_hits += 1
                self._entries[key] = found
            return found
        start = time.perf_counter()
        compiled = compile_fn()
        elapsed = 1e3 * (time.perf_counter() - start)
        with self._lock:
            self.misses += 1
            self.last_reason = reason
            self._entries[key] = compiled
        if config.log_compiles:
            print(f"numax: compiled Triton kernel {description} in {elapsed:.1f} ms ({reason}; key {key[:16]})",
                  file=sys.stderr)
        self._write(key, key_fields, compiled)
        return compiled

    def clear_memory(self):
        """Forgets the in-memory entries (the disk keeps its own)."""
        with self._lock:
            self._entries.clear()

    def _read(self, key, key_fields):
        """(compiled kernel, None) from the disk, or (None, why it could not be used)."""
        try:
            with open(self.path(key), encoding="utf-8") as file:
                stored = json.load(file)
        except FileNotFoundError:
            return None, "not in the disk cache"
        except (OSError, ValueError) as error:
            return None, f"disk cache entry unreadable ({type(error).__name__}); recompiled"
        if not isinstance(stored, dict) or stored.get("sha256") != _digest([stored.get("fields"),
                                                                            stored.get("compiled")]):
            return None, "disk cache entry corrupt (checksum mismatch); recompiled"
        if stored["fields"] != json.loads(json.dumps(key_fields)):  # a sha256 collision, in theory only
            return None, "disk cache entry for other key fields; recompiled"
        return stored["compiled"], None

    def _write(self, key, key_fields, compiled):
        """Stores an entry atomically; a cache that cannot be written only costs recompiles."""
        entry = {"fields": key_fields, "compiled": compiled}
        entry["sha256"] = _digest([key_fields, compiled])
        try:
            write_atomically(self.path(key), json.dumps(entry, sort_keys=True))
        except OSError as error:
            print(f"numax: could not write the Triton kernel cache in {self.directory}: {error}", file=sys.stderr)
