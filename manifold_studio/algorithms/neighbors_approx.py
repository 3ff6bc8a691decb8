"""The approximate neighbour index of :mod:`manifold_studio.algorithms.neighbors`
(``neighbors='approximate'``): NN-descent (:mod:`manifold_studio.algorithms.nndescent`) with
exact float64 distances for the neighbours it finds, and its recall estimate."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.neighbors import (
    TREE_CHUNK, NeighborIndex, unit_rows, check_metric, exact_hits, knn_query,
)
from manifold_studio.algorithms.nndescent import MANHATTAN, SQEUCLIDEAN, NNDescent
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError, InvalidParameterError


class ApproximateIndex:
    """Approximate k nearest neighbours by NN-descent (:mod:`~manifold_studio.algorithms.nndescent`)
    over reference points ``Y`` for 'euclidean', 'cosine' or 'manhattan'. The k-NN graph of the
    reference points is built once (``k`` neighbours each); ``query`` searches it for new points,
    each row independently of the others. Distances returned are exact (float64) for the
    neighbours found."""

    approximate = True
    method = "approximate"

    def __init__(self, Y: np.ndarray, k: int, *, metric: str = "euclidean", random_state=0,
                 progress=None):
        self.metric = check_metric(metric)
        if metric == "precomputed":
            raise InvalidParameterError("neighbors='approximate' does not apply to metric='precomputed' "
                                        "(every distance is already given); use neighbors='exact' or 'auto'.")
        Y = np.ascontiguousarray(Y, dtype=float)
        n = Y.shape[0]
        if k >= n:
            raise DataError(f"neighbors='approximate' needs more points than neighbours: {n} point(s) for "
                            f"{k} neighbours each; use neighbors='exact' (or 'auto'), or fewer neighbours.")
        self.Y = unit_rows(Y) if metric == "cosine" else Y
        self.k = int(k)
        seed = 0 if random_state is None else int(random_state)
        self.nnd = NNDescent(self.Y, self.k, code=MANHATTAN if metric == "manhattan" else SQEUCLIDEAN,
                             random_state=seed, progress=as_progress(progress))
        idx = self.nnd.graph_idx
        bad = (idx < 0).any(axis=1)
        if bad.any():  # tiny or degenerate data: fill incomplete lists exactly
            idx[bad] = _exact_fill(self, np.flatnonzero(bad))
        self._graph_dist = self._exact_distances(self.Y, idx)
        order = np.argsort(self._graph_dist, axis=1, kind="stable")
        self._graph_idx = np.take_along_axis(idx, order, axis=1)
        self._graph_dist = np.take_along_axis(self._graph_dist, order, axis=1)

    def _search_metric(self):
        return "manhattan" if self.metric == "manhattan" else "euclidean"

    @property
    def n(self) -> int:
        return self.Y.shape[0]

    def prepare(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=float)
        return unit_rows(X, "new points") if self.metric == "cosine" else X

    def _exact_distances(self, X, idx):
        """Metric distances of the rows of X to the reference points idx (m, k), float64."""
        out = np.empty(idx.shape)
        step = max(1, 4_000_000 // max(1, idx.shape[1] * self.Y.shape[1]))
        for start in range(0, X.shape[0], step):
            diff = self.Y[idx[start:start + step]] - X[start:start + step, None, :]
            if self.metric == "manhattan":
                out[start:start + step] = np.abs(diff).sum(axis=2)
            else:
                d2 = np.einsum("mkd,mkd->mk", diff, diff)
                out[start:start + step] = 0.5 * d2 if self.metric == "cosine" else np.sqrt(d2)
        return out

    def training_neighbors(self, k: int, *, progress=None):
        """Each reference point's k nearest other points from the NN-descent graph (k beyond
        the graph's width: searched like new points, self removed)."""
        if k <= self.k:
            return self._graph_dist[:, :k].copy(), self._graph_idx[:, :k].copy()
        dist, idx = self.query(self.Y, min(k + 1, self.n), progress=progress, prepared=True)
        own = idx == np.arange(self.n)[:, None]
        own[~own.any(axis=1), -1] = True
        keep = ~own
        kk = idx.shape[1] - 1
        return dist[keep].reshape(-1, kk)[:, :k], idx[keep].reshape(-1, kk)[:, :k]

    def query(self, X: np.ndarray, k: int, *, progress=None, message: str = "Neighbours",
              prepared: bool = False):
        """(dist, idx) (len(X), k) of approximate nearest reference points, sorted."""
        X = X if prepared else self.prepare(X)
        progress = as_progress(progress)
        m = X.shape[0]
        k = int(min(k, self.n))
        dist = np.empty((m, k))
        idx = np.empty((m, k), dtype=np.intp)
        for start in range(0, m, TREE_CHUNK):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + TREE_CHUNK)
            _d, i = self.nnd.query(X[start:stop], k)
            d = self._exact_distances(X[start:stop], i)
            order = np.lexsort((i, d), axis=1)
            dist[start:stop] = np.take_along_axis(d, order, axis=1)
            idx[start:stop] = np.take_along_axis(i, order, axis=1)
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        return dist, idx

    def recall(self, k: int = 10, sample: int = 200, seed: int = 0) -> float:
        """Recall@k of an approximate index's graph on ``sample`` of its points: the fraction of the
        k neighbours found that are among the true k nearest (ties at the k-th distance count as
        true)."""
        k = min(k, self.k)
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(self.n, size=min(sample, self.n), replace=False))
        exact = NeighborIndex(self.Y, method="brute", metric=self._search_metric())
        d_true, _ = knn_query(self.Y, self.Y[rows], k + 1, index=exact)
        kth = d_true[:, k]                       # (self at distance 0 is the first of k + 1)
        if self.metric == "cosine":
            kth = 0.5 * kth * kth
        found = self._graph_dist[rows, :k]
        return float(np.mean(found <= kth[:, None] * (1 + 1e-9) + 1e-12))

    def query_radius(self, X, radius, **_kw):
        raise InvalidParameterError("A radius neighbourhood needs neighbors='exact' (approximate "
                                    "neighbours give a fixed number of neighbours).")

    def match(self, X: np.ndarray) -> np.ndarray:
        X = self.prepare(X)
        dist, idx = self.query(X, 1, prepared=True)
        return exact_hits(self, X, dist[:, 0], idx[:, 0])


def _exact_fill(index, rows):
    exact = NeighborIndex(index.Y, metric=index._search_metric())
    _d, idx = knn_query(index.Y, index.Y[rows], index.k + 1, index=exact)
    out = np.empty((rows.size, index.k), dtype=np.intp)
    for r, i in enumerate(rows):
        out[r] = idx[r][idx[r] != i][:index.k]
    return out
