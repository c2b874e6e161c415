"""The persistent compilation cache: serialized XLA executables in a directory, shared across processes.

On with `numax.config.update("jax_compilation_cache_dir", path)` (or `numax_compilation_cache_dir`, or the
environment variables `NUMAX_COMPILATION_CACHE_DIR` / `JAX_COMPILATION_CACHE_DIR`), with JAX's knobs:
`jax_persistent_cache_min_compile_time_secs` (default 1 s: quicker compiles are not written),
`jax_persistent_cache_min_entry_size_bytes` (smaller executables are not written; 0 or -1: no minimum),
`jax_compilation_cache_max_size` (bytes; -1: unbounded, 0: cache off; past it the least recently used
entries are deleted) and `jax_enable_compilation_cache`.

The directory must be trusted: loading an entry runs the machine code in it. Only files numax wrote are
ever read, and each is checked before it is loaded: a file holds a magic header, a format version, the key
it was written for, the payload's length and its sha256, then the payload (the serialized executable). A
truncated, corrupt or foreign file is reported once as a warning, deleted, and the program compiled again.
Files are written under a temporary name in the same directory and renamed into place, so a reader sees
either no entry or a whole one, also with several processes writing the same key.

This module knows nothing of jaxlib: lowering/xla/compiler.py computes the key fields, serializes and loads.
"""

import hashlib
import json
import os
import struct
import sys
import threading
import warnings

from ..core.config import config
from .atomic_file import write_atomically

_MAGIC = b"NUMAXEXE"
_FORMAT = 1  # bumped when the file layout changes, so old files are rejected instead of misread
_HEADER = struct.Struct("<8sI64sQ32s")  # magic, format, key (hex), payload length, payload sha256
_SUFFIX = ".xla"


class CacheStatistics:
    """What this process's lookups found: `hits` (executables loaded), `misses` (compiled, with the cache
    on), `writes` (entries stored), `skipped` (compiled but not stored: under a threshold), `discarded`
    (unusable entries deleted) and `evicted` (entries deleted to keep the directory under its bound)."""

    def __init__(self):
        self.hits = self.misses = self.writes = self.skipped = self.discarded = self.evicted = 0

    def __repr__(self):
        fields = ", ".join(f"{name}={value}" for name, value in vars(self).items())
        return f"CacheStatistics({fields})"


statistics = CacheStatistics()
_lock = threading.Lock()


def directory():
    """The cache directory, or None while the cache is off."""
    path = config.compilation_cache_dir
    if not path or not config.enable_compilation_cache or int(config.compilation_cache_max_size) == 0:
        return None
    return os.path.expanduser(str(path))


def cache_key(fields) -> str:
    """The key of an executable: a sha256 over its (JSON-serializable) key fields and the file format."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"format": _FORMAT, "fields": fields}, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def text_digest(text: str) -> str:
    """A module text's sha256 (key fields hold it rather than the whole text)."""
    return hashlib.sha256(text.encode()).hexdigest()


def _entry_path(root, key):
    return os.path.join(root, key + _SUFFIX)


def lookup(root, key, deserialize, loadable=True):
    """The executable stored under `key` (`deserialize(payload)` loads it), or None: a miss, or an entry that
    could not be used (reported once and deleted). Never raises for a bad entry: the caller compiles. Where
    the runtime cannot load executables at all (not `loadable`), nothing is read, and it counts as a miss."""
    payload = _load(root, key) if loadable else None
    if payload is not None:
        try:
            executable = deserialize(payload)
        except Exception as error:  # a whole entry the runtime rejects: another build's, or a runtime bug
            _discard(root, key, f"was rejected by the runtime ({type(error).__name__}: {error})")
        else:
            with _lock:
                statistics.hits += 1
            return executable
    with _lock:
        statistics.misses += 1
    return None


def remember(root, key, compile_seconds, serialize):
    """Stores a fresh executable (`serialize()` gives its bytes) if it passes the thresholds:
    `jax_persistent_cache_min_compile_time_secs`, then `jax_persistent_cache_min_entry_size_bytes`."""
    if compile_seconds < float(config.persistent_cache_min_compile_time_secs):
        with _lock:
            statistics.skipped += 1
        return
    _store(root, key, serialize())


def _load(root, key):
    """The payload stored under `key`, or None. An entry that cannot be used is reported and deleted."""
    path = _entry_path(root, key)
    try:
        with open(path, "rb") as file:
            data = file.read()
            identity = os.fstat(file.fileno())
    except FileNotFoundError:
        return None
    except OSError as error:
        _warn(key, f"could not be read ({error})")
        return None
    problem = _check_entry(data, key)
    if problem is not None:
        _discard(root, key, problem, identity)
        return None
    _mark_used(path)
    return data[_HEADER.size:]


def _check_entry(data, key):
    """None for a whole, intact entry written for `key`; else what is wrong with it."""
    if len(data) < _HEADER.size:
        return "truncated (shorter than its header)"
    magic, version, stored_key, length, checksum = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        return "not a numax cache entry (wrong magic header)"
    if version != _FORMAT:
        return f"written in format {version}, this numax reads format {_FORMAT}"
    if stored_key != key.encode():
        return "written for another key"
    payload = memoryview(data)[_HEADER.size:]
    if len(payload) != length:
        return f"truncated ({len(payload)} of {length} payload bytes)"
    if hashlib.sha256(payload).digest() != checksum:
        return "corrupt (checksum mismatch)"
    return None


def _discard(root, key, problem, identity=None):
    """Reports an unusable entry (once per key in this process) and deletes it; the caller recompiles.
    With `identity` (the os.stat of the file that was read), a file another process has since replaced with
    a fresh entry is left alone."""
    path = _entry_path(root, key)
    try:
        if identity is None or os.path.samestat(identity, os.stat(path)):
            os.remove(path)
    except OSError:
        pass  # already gone, or not ours to delete: a later lookup looks again
    with _lock:
        statistics.discarded += 1
    _warn(key, f"{problem}; deleted, and the program is compiled again")


_warned = set()


def _warn(key, problem):
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(f"numax persistent compilation cache: entry {key[:16]} {problem}", RuntimeWarning, stacklevel=2)


def _mark_used(path):
    """Sets the entry's modification time to now: eviction deletes the least recently used entries first
    (access times are unreliable: many file systems do not record them)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _store(root, key, payload: bytes):
    """Writes an entry atomically, then evicts past the size bound. A directory that cannot be written only
    costs recompiles later, never an error now."""
    if len(payload) < int(config.persistent_cache_min_entry_size_bytes):
        with _lock:
            statistics.skipped += 1
        return
    header = _HEADER.pack(_MAGIC, _FORMAT, key.encode(), len(payload), hashlib.sha256(payload).digest())
    try:
        write_atomically(_entry_path(root, key), header + payload)
    except OSError as error:
        print(f"numax: could not write the persistent compilation cache entry {key[:16]} ({error})",
              file=sys.stderr)
        return
    with _lock:
        statistics.writes += 1
    _evict(root, int(config.compilation_cache_max_size))


def _evict(root, max_size):
    """Deletes the least recently used entries until the directory's entries fit in `max_size` bytes."""
    if max_size < 0:
        return
    entries = []
    try:
        with os.scandir(root) as scan:
            for entry in scan:
                if entry.name.endswith(_SUFFIX):
                    try:
                        status = entry.stat()
                    except OSError:
                        continue  # deleted meanwhile by another process
                    entries.append((status.st_mtime, status.st_size, entry.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_size:
            break
        try:
            os.remove(path)
        except OSError:
            continue
        total -= size
        with _lock:
            statistics.evicted += 1


def log_hit(text, key, seconds, log_as=None):
    """The `jax_log_compiles` line for an executable loaded from the cache; `log_as` = (what, reason) names it
    (else the module's name)."""
    what, reason = log_as or (text[:200].partition("module @")[2].split(" ", 1)[0] or "module", None)
    print(f"numax: loaded {what} from the persistent compilation cache in {1e3 * seconds:.1f} ms "
          f"(key {key[:16]})" + (f" ({reason})" if reason else ""), file=sys.stderr)


def reset_statistics():
    """Zeroes the counters and forgets which entries were reported (for tests and benchmarks)."""
    with _lock:
        statistics.__init__()
        _warned.clear()
