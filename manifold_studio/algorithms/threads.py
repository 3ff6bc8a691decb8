"""Row-parallel calls of compiled ``nogil`` kernels on every core (t-SNE, neighbour search), and
independent tasks pulled from a list by every core (:func:`run_tasks`: tiles of BLAS products).

The numba kernels of this package release the GIL (:func:`~manifold_studio.algorithms.jit.jit`
compiles with ``nogil=True``), so splitting their rows into one contiguous share per core and
running the shares in threads uses every core without numba's parallel backend (whose
threading layer is another thing a frozen installation would have to ship). Each share writes
only its own rows, so results do not depend on the number of threads, except where shares add
into a common array (the t-SNE grid charges: one grid per share, summed), which differs in
rounding only.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["n_threads", "row_shares", "run_shares", "run_tasks"]

_POOL: ThreadPoolExecutor | None = None


def n_threads() -> int:
    """Cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def row_shares(n: int, min_rows: int = 2048) -> list[tuple[int, int]]:
    """[start, stop) shares of n rows, one per core (one share when n is small)."""
    parts = max(1, min(n_threads(), n // max(min_rows, 1)))
    bounds = [n * t // parts for t in range(parts + 1)]
    return [(bounds[t], bounds[t + 1]) for t in range(parts)]


_PREFIX = "ms-rows"


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=n_threads(), thread_name_prefix=_PREFIX)
    return _POOL


def _niceness() -> int | None:
    """The calling thread's niceness (Linux; None elsewhere)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return None


def _as_nice(fn, nice: int | None):
    """``fn`` run in a pool thread at least as nice as the thread that submitted it: a window's
    worker thread runs nicer than its main thread (so the window gets the CPU first), and its
    shares must not outrank the main thread either."""
    def run(*args):
        if nice is not None:
            try:
                tid = threading.get_native_id()
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:  # pragma: no cover - not allowed: keep the priority
                pass
        return fn(*args)
    return run


def run_shares(fn, n: int, min_rows: int = 2048) -> list:
    """``[fn(start, stop) for each share]``, the shares run in threads (the first one in the
    calling thread, which would otherwise only wait), each at least as nice as the caller."""
    shares = row_shares(n, min_rows)
    if len(shares) == 1:
        return [fn(*shares[0])]
    task = _as_nice(fn, _niceness())
    others = [_pool().submit(task, *s) for s in shares[1:]]
    try:
        first = fn(*shares[0])
    finally:
        rest = [f.result() for f in others]    # every share done (or failed) before returning
    return [first] + rest


def run_tasks(tasks: list, workers: int | None = None) -> list:
    """``[task() for task in tasks]``, each core's thread taking the next task as it finishes one
    (the calling thread takes part). Where a static share per core waits for a core that another
    process holds, the free core takes the remaining tasks; put the largest first. A task must
    write only its own output, so results do not depend on which thread ran it. Run serially
    from inside the pool (a nested call would wait for threads busy with its caller).
    ``workers``: at most that many threads (default: one per core)."""
    workers = min(n_threads() if workers is None else max(1, workers), len(tasks))
    if workers <= 1 or threading.current_thread().name.startswith(_PREFIX):
        return [task() for task in tasks]
    results = [None] * len(tasks)
    lock = threading.Lock()
    state = {"next": 0}

    def work():
        while True:
            with lock:
                i = state["next"]
                state["next"] = i + 1
            if i >= len(tasks):
                return
            try:
                results[i] = tasks[i]()
            except BaseException:
                with lock:
                    state["next"] = len(tasks)   # hand out no more
                raise

    task = _as_nice(work, _niceness())
    others = [_pool().submit(task) for _ in range(workers - 1)]
    try:
        work()
    finally:
        errors = [f.exception() for f in others]   # every worker done before returning
    if error := next((e for e in errors if e is not None), None):
        raise error
    return results
