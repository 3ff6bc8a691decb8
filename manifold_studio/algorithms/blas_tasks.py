"""Large dense BLAS products as independent tasks on the package's threads, each task on one
BLAS thread (PCA's covariance XᵀX and projection X·M).

OpenBLAS splits one product statically between its threads and makes them meet at barriers;
when other processes hold the cores (a shared machine, a GUI, other fits), one descheduled
thread stalls the others: XᵀX of 20,000 × 784 took 1.7–2.4 s on two busy cores against 0.12 s
on idle ones. Here the product is cut into tasks that each core's thread pulls as it finishes
the previous one (:func:`~manifold_studio.algorithms.threads.run_tasks`), each a one-thread BLAS
call: a core that another process holds delays only its own task, and the other core takes the
rest (0.8–1.0 s on the same busy cores). Every task writes its own block of the result, so the
values do not depend on which thread ran what (nor on the load); they differ from one BLAS call
by rounding only. Every BLAS call here runs on one BLAS thread (small products too), and the
tasks' count follows the libraries' own thread count, not a one-thread block that another thread
holds (:func:`~manifold_studio.algorithms.blas_limits.blas_threads`): the values do not change
with what else runs in the process.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.blas_limits import blas_single_thread, blas_threads
from manifold_studio.algorithms.threads import n_threads, run_tasks

__all__ = ["crossprod", "matmul_rows"]

#: below this many multiply-adds one BLAS call is quicker than tasks on threads
MIN_WORK = 2e7
#: width of the column tiles of XᵀX (a tile is one BLAS call at full speed)
TILE = 196
#: multiply-adds per task of X·M (and of XᵀX when X has too few columns for tiles): big enough
#: that a task's overhead (tens of microseconds) is lost in it, small enough to share the work out
TASK_WORK = 4e6
#: fewest rows per task
MIN_ROWS = 64


def _row_parts(n: int, work: float, workers: int, per_worker: int) -> int:
    return int(max(1, min(per_worker * workers, n // MIN_ROWS, work // TASK_WORK)))


def _workers() -> int:
    """Threads for the tasks: one per core, but no more than BLAS itself would use (a limit set by
    OPENBLAS_NUM_THREADS=1 or threadpoolctl holds here too)."""
    limit = blas_threads()
    return n_threads() if limit is None else max(1, min(n_threads(), limit))


def _edges(size: int, parts: int) -> list[int]:
    return [size * i // parts for i in range(parts + 1)]


def crossprod(X: np.ndarray) -> np.ndarray:
    """XᵀX (d × d, symmetric) of a dense C-ordered X (n × d). Tiles of TILE columns: the diagonal
    ones by a symmetric rank-k update, the others by a general product, largest first. With fewer
    columns than two tiles, row blocks whose products are summed in a fixed order."""
    n, d = X.shape
    workers = _workers()
    if workers == 1 or n * d * d / 2 < MIN_WORK:
        with blas_single_thread():
            return X.T @ X
    parts = round(d / TILE)
    if parts >= 2:
        edges = _edges(d, parts)
        C = np.empty((d, d))
        tiles = [(i, j) for i in range(parts) for j in range(i, parts)]
        tiles.sort(key=lambda t: t[0] == t[1])   # the general products (twice the work) first

        def tile(i, j):
            a, b = slice(edges[i], edges[i + 1]), slice(edges[j], edges[j + 1])
            block = X[:, a].T @ X[:, b]           # i == j: numpy calls syrk
            C[a, b] = block
            if i != j:
                C[b, a] = block.T

        with blas_single_thread():
            run_tasks([lambda i=i, j=j: tile(i, j) for i, j in tiles], workers)
        return C
    edges = _edges(n, _row_parts(n, n * d * d / 2, workers, 4))

    def rows(start, stop):
        B = X[start:stop]
        return B.T @ B

    with blas_single_thread():
        parts = run_tasks([lambda s=s, e=e: rows(s, e) for s, e in zip(edges[:-1], edges[1:])], workers)
    C = parts[0]
    for P in parts[1:]:
        C += P
    return C


def matmul_rows(X: np.ndarray, M: np.ndarray, shift: np.ndarray | None = None) -> np.ndarray:
    """X·M − shift (shift broadcast over rows; None: nothing subtracted) of a dense X (n × d) and
    M (d × k), in blocks of rows."""
    n, d = X.shape
    k = M.shape[1]
    workers = _workers()
    if workers == 1 or n * d * k < MIN_WORK:
        with blas_single_thread():
            out = X @ M
        if shift is not None:
            out -= shift
        return out
    out = np.empty((n, k), dtype=np.result_type(X, M))
    edges = _edges(n, _row_parts(n, n * d * k, workers, 8))

    def rows(start, stop):
        np.matmul(X[start:stop], M, out=out[start:stop])
        if shift is not None:
            out[start:stop] -= shift

    with blas_single_thread():
        run_tasks([lambda s=s, e=e: rows(s, e) for s, e in zip(edges[:-1], edges[1:])], workers)
    return out
