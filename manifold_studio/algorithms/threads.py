"""Row-parallel calls of compiled ``nogil`` kernels on every core (t-SNE, neighbour search).

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

__all__ = ["n_threads", "row_shares", "run_shares"]

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
    global _POOL
    shares = row_shares(n, min_rows)
    if len(shares) == 1:
        return [fn(*shares[0])]
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=n_threads(), thread_name_prefix="ms-rows")
    task = _as_nice(fn, _niceness())
    others = [_POOL.submit(task, *s) for s in shares[1:]]
    try:
        first = fn(*shares[0])
    finally:
        rest = [f.result() for f in others]    # every share done (or failed) before returning
    return [first] + rest
