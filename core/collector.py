"""Full garbage collections deferred while a program is traced or lowered.

A trace allocates objects that live as long as the program does (equations, variables, avals, the text's
pieces). CPython's collector counts each survivor toward a full collection, which walks every tracked object of
the process, and the rule that starts one (survivors past a quarter of the old generation) fires again and again
while a large program grows: three full collections, a third of the trace's time, for an unrolled 128-block
value_and_grad program (bench/RESULTS.md, issue 31), and more the larger the program. Inside
`full_collections_deferred()` the two young generations are collected as usual, so cyclic garbage of the traced
function is still freed; a full collection waits until the outermost block (of any thread) ends, after which the
collector's own rule starts one when it is due. Thresholds that someone else changed meanwhile are left as they are.
"""

import contextlib
import gc
import threading

_NEVER = 2**30  # a young-collection count that a trace does not reach
_lock = threading.Lock()
_depth = 0  # blocks open, in every thread
_restore = None  # (thresholds found on entering the outermost block, thresholds set there)


class full_collections_deferred(contextlib.ContextDecorator):
    """Context manager (and, called, a decorator): no full collection while any thread is inside one of these
    blocks."""

    __slots__ = ()

    def __enter__(self):
        global _depth, _restore
        with _lock:
            if _depth == 0:
                found = gc.get_threshold()
                deferred = (found[0], found[1], _NEVER)
                gc.set_threshold(*deferred)
                _restore = (found, deferred)
            _depth += 1
        return self

    def __exit__(self, *exc_info):
        global _depth, _restore
        with _lock:
            _depth -= 1
            if _depth == 0:
                found, deferred = _restore
                if gc.get_threshold() == deferred:
                    gc.set_threshold(*found)
                _restore = None
        return False
