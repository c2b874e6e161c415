"""Running test work in several threads at once, shared by the thread-safety tests."""

import threading

NUM_THREADS = 8


def run_in_threads(work, count=NUM_THREADS):
    """Runs `work(index, barrier)` in `count` threads started together; re-raises the first failure."""
    barrier = threading.Barrier(count)
    failures = []

    def target(index):
        try:
            work(index, barrier)
        except BaseException as error:  # noqa: BLE001  (reported below, with its thread)
            failures.append((index, error))
            barrier.abort()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    if failures:
        index, error = failures[0]
        raise AssertionError(f"thread {index} failed: {type(error).__name__}: {error}") from error
