"""Metrics of the neighbour layer (:mod:`manifold_studio.algorithms.neighbors`), shared by its
exact and approximate indexes: the metric names, unit rows for 'cosine', checks of precomputed
distances, recognition of query rows equal to a fitted point, a small brute-force search, and
the blockwise exact search's kernels (:func:`_top_k_rows`, :class:`Float32Screen`)."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.threads import run_shares
from manifold_studio.errors import DataError, InvalidParameterError

#: query rows per chunk for searches (progress and cancel between chunks)
TREE_CHUNK = 8192
#: distances the neighbour methods accept
METRICS = ("euclidean", "cosine", "manhattan", "precomputed")
#: from this many reference points (Euclidean or cosine, brute force) an exact search screens
#: in float32 (:class:`Float32Screen`). At 100,000 x 50 with 91 neighbours (t-SNE) in one run:
#: 35 s of CPU against 71 s for the float64 blocks (BLAS sgemm does twice the work per second).
SCREEN_MIN_POINTS = 20_000
#: float32 distance-block elements of a screened search, all cores together (64 MB)
SCREEN_BLOCK = 16_000_000
#: pairs per call of a screened search (progress and cancel between calls: about a second)
SCREEN_PAIRS = 200_000_000


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise InvalidParameterError(f"metric={metric!r} is not known to the neighbour search; use one "
                                    f"of {', '.join(repr(m) for m in METRICS)}.")
    return metric


def zero_rows_error(zero: np.ndarray, what: str = "data") -> DataError:
    """The refusal of all-zero rows (mask ``zero``) under metric='cosine'."""
    return DataError(f"metric='cosine' needs rows of non-zero length, but {int(zero.sum())} row(s) of "
                     f"the {what} (e.g. row {int(np.flatnonzero(zero)[0])}) are all zeros; their "
                     "cosine distance is undefined. Remove them or use metric='euclidean'.")


def unit_rows(X: np.ndarray, what: str = "data") -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", X, X))
    zero = norm == 0
    if zero.any():
        raise zero_rows_error(zero, what)
    return X / norm[:, None]


def check_precomputed(D: np.ndarray, n_columns: int | None = None) -> np.ndarray:
    """A distance matrix: finite, non-negative, square at fit (``n_columns`` None) or with
    ``n_columns`` columns (new points' distances to the fitted points)."""
    D = np.asarray(D, dtype=float)
    if D.ndim != 2:
        raise DataError("metric='precomputed' needs a 2-D distance matrix.")
    if n_columns is None and D.shape[0] != D.shape[1]:
        raise DataError(f"metric='precomputed' needs a square n x n distance matrix at fit; got "
                        f"{D.shape[0]} x {D.shape[1]}.")
    if n_columns is not None and D.shape[1] != n_columns:
        raise DataError(f"metric='precomputed': new points must be given by their distances to the "
                        f"{n_columns} fitted points ({n_columns} columns); got {D.shape[1]} columns.")
    if not np.isfinite(D).all() or (D < 0).any():
        raise DataError("metric='precomputed' needs finite, non-negative distances.")
    return D


def drop_self(dist: np.ndarray, idx: np.ndarray, k: int):
    """The k nearest others of each reference point from its k + 1 nearest (dist, idx) found by
    a query of the reference points themselves: each point's own row is left out even among
    exact duplicates (kept as neighbours at distance 0); where it was not found (many
    duplicates), the farthest is dropped instead."""
    own = idx == np.arange(idx.shape[0])[:, None]
    own[~own.any(axis=1), -1] = True
    keep = ~own
    kk = idx.shape[1] - 1
    return dist[keep].reshape(-1, kk)[:, :k], idx[keep].reshape(-1, kk)[:, :k]


def exact_hits(index, X: np.ndarray, d1: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """For an index's ``match``: the nearest reference row found, i1, where it equals the
    (prepared) query row (BLAS distances of equal rows are rounding-size, not 0: the rows
    themselves are compared; 'precomputed': at distance 0), -1 elsewhere."""
    if index.metric == "precomputed":
        return np.where(d1 <= 0.0, i1, -1)
    return np.where(np.all(index.Y[i1] == X, axis=1), i1, -1)




def brute_knn(Y: np.ndarray, X: np.ndarray, k: int, metric: str):
    """Exact (dist, idx) of the k nearest rows of Y for each row of X by full distance rows
    (``metric`` 'euclidean' or 'manhattan'; for a few hundred query rows, in blocks of rows of
    at most 4 million distances)."""
    step = max(1, 4_000_000 // max(1, Y.shape[0]))
    if X.shape[0] > step:
        parts = [brute_knn(Y, X[a:a + step], k, metric) for a in range(0, X.shape[0], step)]
        return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])
    from scipy.spatial.distance import cdist  # lazy: kept off the start-up
    D = cdist(X, Y, "cityblock" if metric == "manhattan" else "euclidean")
    part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < Y.shape[0] else np.argsort(D, axis=1)
    dk = np.take_along_axis(D, part, axis=1)
    order = np.lexsort((part, dk), axis=1)
    return np.take_along_axis(dk, order, axis=1), np.take_along_axis(part, order, axis=1)


class Float32Screen:
    """Exact Euclidean k nearest reference rows, screened in float32: the reference rows are
    centred (smaller norms, less cancellation in |x|^2 + |y|^2 - 2 x.y) and kept in float32;
    each core takes a share of the queries and, block by block, gets a distance block from
    BLAS sgemm and the k + k/8 + 4 closest by :func:`_top_k_rows` (long shares that each run
    their own sgemm keep both cores busy on a loaded machine: 8 s of CPU and 10 s of wall for
    20,000 queries against 100,000 x 50 points, against 9 s and 15 s with one sgemm per block
    for both cores), and those candidates' distances are
    recomputed from the differences in float64. The k closest of them are the exact k nearest
    unless float32 rounding moves more than k/8 + 4 points across the k-th distance. Each query
    row is handled on its own (sample-wise)."""

    def __init__(self, Y: np.ndarray):
        self.Y = Y
        self.center = Y.mean(axis=0)
        self.Y32 = np.ascontiguousarray(Y - self.center, dtype=np.float32)
        self.y_sq = np.einsum("ij,ij->i", self.Y32, self.Y32)

    def knn(self, X: np.ndarray, k: int):
        """(Euclidean distances, idx), (m, k), sorted by distance then index."""
        n, m = self.Y.shape[0], X.shape[0]
        kk = min(n, k + k // 8 + 4)
        X32 = np.ascontiguousarray(X - self.center, dtype=np.float32)
        x_sq = np.einsum("ij,ij->i", X32, X32)
        cand = np.empty((m, kk), dtype=np.intp)
        d2 = np.empty((m, kk))
        rows = max(1, SCREEN_BLOCK // max(1, n) // 2)

        def share(a, b):   # one long share per core, each with its own sgemm blocks
            d32 = np.empty((rows, kk), dtype=np.float32)
            for s in range(a, b, rows):
                e = min(b, s + rows)
                _top_k_rows(X32[s:e] @ self.Y32.T, x_sq[s:e], self.y_sq, d32[:e - s], cand[s:e])
                diff = self.Y[cand[s:e]] - X[s:e, None, :]
                d2[s:e] = np.einsum("mkd,mkd->mk", diff, diff)

        run_shares(share, m, 16)
        order = np.lexsort((cand, d2), axis=1)[:, :k]
        return np.sqrt(np.take_along_axis(d2, order, axis=1)), np.take_along_axis(cand, order, axis=1)


@jit
def _top_k_rows(G, x_sq, y_sq, out_d, out_i):
    """The k = out_d.shape[1] smallest squared distances x_sq[r] + y_sq[j] − 2 G[r, j] of every
    row, in increasing order (ties: smaller index first), without writing the distance matrix:
    a bounded max-heap per row (the distance matrix's four element-wise passes and the
    argpartition cost 10x the product itself)."""
    m, n = G.shape
    k = out_d.shape[1]
    for r in range(m):
        hd = out_d[r]
        hi = out_i[r]
        size = 0
        xr = x_sq[r]
        for j in range(n):
            d = xr + y_sq[j] - 2.0 * G[r, j]
            if d < 0.0:
                d = 0.0
            if size < k:            # push, sift up
                pos = size
                size += 1
                while pos > 0:
                    parent = (pos - 1) // 2
                    if hd[parent] > d or (hd[parent] == d and hi[parent] > j):
                        break
                    hd[pos] = hd[parent]
                    hi[pos] = hi[parent]
                    pos = parent
                hd[pos] = d
                hi[pos] = j
            elif d < hd[0]:         # replace the largest, sift down (ties keep the earlier index)
                pos = 0
                while True:
                    child = 2 * pos + 1
                    if child >= k:
                        break
                    if child + 1 < k and (hd[child + 1] > hd[child]
                                          or (hd[child + 1] == hd[child] and hi[child + 1] > hi[child])):
                        child += 1
                    if hd[child] < d or (hd[child] == d and hi[child] < j):
                        break
                    hd[pos] = hd[child]
                    hi[pos] = hi[child]
                    pos = child
                hd[pos] = d
                hi[pos] = j
        for a in range(1, k):       # insertion sort by (distance, index)
            d = hd[a]
            j = hi[a]
            b = a - 1
            while b >= 0 and (hd[b] > d or (hd[b] == d and hi[b] > j)):
                hd[b + 1] = hd[b]
                hi[b + 1] = hi[b]
                b -= 1
            hd[b + 1] = d
            hi[b + 1] = j
