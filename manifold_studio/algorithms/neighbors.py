"""Nearest neighbours and neighbourhood graphs (Qt-free, chunked, with progress/cancel).

Shared by every neighbour-graph method (Isomap, LLE, Laplacian eigenmaps, spectral clustering,
t-SNE, UMAP). The API:

* :func:`make_index` — the search structure a method fits on: ``neighbors`` = ``'exact'``
  (:class:`NeighborIndex`), ``'approximate'`` (:class:`ApproximateIndex`, NN-descent) or
  ``'auto'`` (:func:`resolve_neighbors`: approximate from :data:`AUTO_APPROXIMATE_MIN_POINTS`
  points with more than :data:`TREE_MAX_FEATURES` features, later for more than 30
  neighbours, with the square of k / 30); ``metric`` in :data:`METRICS`. Both index kinds answer ``query(X, k)`` (new
  points against the fitted points, each row on its own: sample-wise), ``query_radius`` (exact
  only), ``match`` (rows equal to a fitted point), ``training_neighbors(k)`` (each fitted
  point's k nearest others, self excluded) and ``recall(k=10)`` (1 for exact; for approximate,
  recall@k estimated on a sample, stored as ``neighbors_recall_`` by the methods).
* :data:`METRICS`: ``'euclidean'``, ``'cosine'`` (1 - cos; rows must not be zero),
  ``'manhattan'`` (L1) and ``'precomputed'``: X is then the n x n distance matrix at fit and the
  m x n new-to-training distance matrix at extend.
* :func:`neighbors_param`, :func:`metric_param` — the two parameters as a method declares them;
  :class:`PhaseTimer` and :func:`neighbour_summary` — ``timings_`` and the run log's entries.

Modules: :mod:`~manifold_studio.algorithms.neighbor_metrics` (metric helpers, re-exported here),
:mod:`~manifold_studio.algorithms.neighbors_approx` (the approximate index, the NN-descent
driver) and :mod:`~manifold_studio.algorithms.nndescent` (its numba kernels, compiled at the
first approximate search; numba is not imported before).

Why our own NN-descent rather than pynndescent or hnswlib (benchmarks/bench_neighbors.py,
results/neighbors.txt): it is about 450 lines of numba in this package, so the frozen installer
needs nothing beyond numba, which it already ships (hnswlib is a C++ extension; pynndescent
adds joblib and compiles its own numba code at first use); it uses every core with a result
that does not depend on the number of threads; its queries read only the fitted index, which
keeps ``extend`` sample-wise. In one run on 70,000 x 784 image-like data its 10-NN graph took
51 s (recall@10 0.9997), pynndescent's 60 s (0.9999), hnswlib's 362 s (1.0).

The exact layer:

* :func:`knn_query` — the k nearest rows of a reference set for each query row. A
  :class:`scipy.spatial.cKDTree` (``workers=-1``) for low dimensions, blockwise brute
  force with BLAS for high dimensions (where trees degrade), chosen automatically.
* :func:`knn_graph`, :func:`radius_graph` — neighbourhood graphs as scipy.sparse CSR.
* :func:`neighbor_rows` — per-point values on each point's k neighbours as a sparse matrix.
* :func:`check_n_neighbors` — the clear "k must be smaller than n" message.

Disconnected graphs (the smallest connecting k, joining pieces) are handled in
:mod:`~manifold_studio.algorithms.graph_components`.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbor_metrics import (  # noqa: F401  (part of this module's API)
    METRICS, SCREEN_MIN_POINTS, SCREEN_PAIRS, TREE_CHUNK, Float32Screen, _top_k_rows, check_metric,
    check_precomputed, drop_self, exact_hits, unit_rows,
)
from manifold_studio.algorithms.neighbors_approx import ApproximateIndex
from manifold_studio.algorithms.neighbors_approx_sparse import SparseApproximateIndex
from manifold_studio.algorithms.neighbors_sparse import SparseNeighborIndex
from manifold_studio.algorithms.distances import BLOCK_ELEMENTS, rows_per_block, squared_distances
from manifold_studio.algorithms.params import Choice
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.algorithms.threads import run_shares
from manifold_studio.errors import DataError, InvalidParameterError

#: above this many features a brute-force (BLAS) search beats a k-d tree
TREE_MAX_FEATURES = 15
#: values of the ``neighbors`` parameter
NEIGHBOR_METHODS = ("auto", "exact", "approximate")
#: 'auto' switches to approximate neighbours from this many points (with more than
#: TREE_MAX_FEATURES features; below, k-d trees are exact and fast), for up to
#: AUTO_NEIGHBOURS_SCALE neighbours per point. Measured in benchmarks/bench_neighbors.py
#: (results/neighbors.txt, 10-NN graph of 50-d data): equal at 10,000 points, NN-descent 3.2x
#: faster at 20,000 and 40,000.
AUTO_APPROXIMATE_MIN_POINTS = 20_000
#: With more neighbours the switch moves up with the square of k / AUTO_NEIGHBOURS_SCALE: the
#: exact search (float32 screen, neighbor_metrics.Float32Screen) hardly depends on k, NN-descent's
#: heaps and updates grow with it. Measured for t-SNE's 91 neighbours on 100,000 x 50 clustered
#: points in one run (shared machine, CPU seconds): exact 35 s, our NN-descent 62 s (recall@10
#: 0.996), pynndescent 27 s; exact grows with n^2, so it stays ahead up to about 180,000 points
#: (20,000 x (91/30)^2 = 184,000). At 20,000 points: exact 3.0 s, NN-descent 9.3 s.
AUTO_NEIGHBOURS_SCALE = 30


def neighbors_param() -> Choice:
    """``neighbors``: exact or approximate (NN-descent) nearest neighbours."""
    return Choice("neighbors", "auto", "Nearest-neighbour search: 'exact', 'approximate' (NN-descent: "
                  "close to linear time, about 99% of the true neighbours on structured data; the run's "
                  f"log gives the recall) or 'auto' (approximate from {AUTO_APPROXIMATE_MIN_POINTS:,} "
                  "points with more than 15 features; later with more than 30 neighbours: 184,000 for 91).", choices=NEIGHBOR_METHODS,
                  label="Neighbour search")


def metric_param(choices: tuple = METRICS) -> Choice:
    """``metric``: the distance between input points."""
    return Choice("metric", "euclidean", "Distance between input points: 'euclidean', 'cosine' "
                  "(1 - cosine similarity), 'manhattan' (sum of absolute differences)"
                  + (" or 'precomputed' (the data is the n x n distance matrix; new points are given "
                     "by their distances to the n fitted points)" if "precomputed" in choices else "")
                  + ".", choices=choices)


class NeighborIndex:
    """A reusable exact search structure over reference points ``Y`` (tree or brute force) for
    one of :data:`METRICS`. With ``metric='precomputed'`` Y is the n x n distance matrix and
    queries are rows of distances to the n reference points."""

    approximate = False

    def __init__(self, Y: np.ndarray, method: str = "auto", metric: str = "euclidean"):
        self.metric = check_metric(metric)
        Y = np.ascontiguousarray(Y, dtype=float)
        self.screen = None
        if metric == "precomputed":
            self.Y = check_precomputed(Y)
            self.method = "precomputed"
            self.tree = None
            self.y_sq = None
            return
        self.Y = unit_rows(Y) if metric == "cosine" else Y
        if method == "auto":
            method = "tree" if self.Y.shape[1] <= TREE_MAX_FEATURES else "brute"
        self.method = method
        from scipy.spatial import cKDTree  # lazy: kept off the start-up
        self.tree = cKDTree(self.Y) if method == "tree" else None
        self.y_sq = np.einsum("ij,ij->i", self.Y, self.Y) if method == "brute" else None
        self._p = 1 if metric == "manhattan" else 2
        self.screen = (Float32Screen(self.Y) if method == "brute" and metric != "manhattan"
                       and self.n >= SCREEN_MIN_POINTS else None)

    @property
    def n(self) -> int:
        return self.Y.shape[0]

    def prepare(self, X: np.ndarray) -> np.ndarray:
        """Query rows in the index's space (unit rows for cosine; checked distance rows)."""
        X = np.ascontiguousarray(X, dtype=float)
        if self.metric == "cosine":
            return unit_rows(X, "new points")
        if self.metric == "precomputed":
            return check_precomputed(X, self.n)
        return X

    def recall(self, k: int = 10, sample: int = 200, seed: int = 0) -> float:
        return 1.0

    def _from_search(self, d):
        """Search distances -> metric distances (cosine: |u - v|^2 / 2 on unit rows)."""
        return 0.5 * d * d if self.metric == "cosine" else d

    def training_neighbors(self, k: int, *, progress=None):
        """Each reference point's k nearest other points: (dist, idx), (n, k)."""
        return knn_query(self.Y, self.Y, k, exclude_self=True, progress=progress, index=self)

    # -- k nearest -----------------------------------------------------------------
    def query(self, X: np.ndarray, k: int, *, progress=None, message: str = "Neighbours",
              prepared: bool = False):
        """(dist, idx), both (len(X), k), sorted by increasing distance."""
        X = X if prepared else self.prepare(X)
        progress = as_progress(progress)
        m = X.shape[0]
        k = int(k)
        dist = np.empty((m, k), dtype=float)
        idx = np.empty((m, k), dtype=np.intp)
        step = (TREE_CHUNK if self.tree is not None
                else rows_per_block(self.n, SCREEN_PAIRS if self.screen else BLOCK_ELEMENTS))
        for start in range(0, m, step):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + step)
            if self.tree is not None:
                d, i = self.tree.query(X[start:stop], k=k, p=self._p, workers=-1)
                if k == 1:
                    d, i = d[:, None], i[:, None]
            else:
                d, i = self._brute(X[start:stop], k)
            dist[start:stop], idx[start:stop] = self._from_search(d), i
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        return dist, idx

    def _block_distances(self, X):
        """Full distances (search units) of query rows X to every reference point."""
        if self.metric == "precomputed":
            return X
        if self.metric == "manhattan":
            from scipy.spatial.distance import cdist
            return cdist(X, self.Y, "cityblock")
        return np.sqrt(squared_distances(X, self.Y, y_sq=self.y_sq))

    def _brute(self, X, k):
        if k < self.n and self.screen is not None:
            return self.screen.knn(X, k)
        if k < self.n and self.metric in ("euclidean", "cosine"):
            x_sq = np.einsum("ij,ij->i", X, X)
            G = X @ self.Y.T
            d2 = np.empty((X.shape[0], k))
            idx = np.empty((X.shape[0], k), dtype=np.intp)
            run_shares(lambda a, b: _top_k_rows(G[a:b], x_sq[a:b], self.y_sq, d2[a:b], idx[a:b]),
                       X.shape[0], 64)
            return np.sqrt(d2), idx
        D = self._block_distances(X)
        if k < self.n:
            part = np.argpartition(D, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(self.n), (X.shape[0], self.n)).copy()
        dk = np.take_along_axis(D, part, axis=1)
        # ties broken by the smaller index, as the heap of _top_k_rows
        order = np.lexsort((part, dk), axis=1) if dk.size else np.argsort(dk, axis=1)
        idx = np.take_along_axis(part, order, axis=1)
        dist = np.take_along_axis(dk, order, axis=1)
        return dist, idx

    # -- within a radius -------------------------------------------------------------
    def query_radius(self, X: np.ndarray, radius: float, *, progress=None,
                     message: str = "Neighbours within radius", prepared: bool = False):
        """CSR-like ragged result: (indptr, idx, dist) of the reference rows within ``radius``."""
        X = X if prepared else self.prepare(X)
        progress = as_progress(progress)
        m = X.shape[0]
        r_search = float(np.sqrt(2.0 * radius)) if self.metric == "cosine" else float(radius)
        ptr_parts, idx_parts, dist_parts = [np.zeros(1, dtype=np.intp)], [], []
        offset = 0
        step = TREE_CHUNK if self.tree is not None else rows_per_block(self.n)
        for start in range(0, m, step):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + step)
            if self.tree is not None:
                lists = self.tree.query_ball_point(X[start:stop], r_search, p=self._p, workers=-1,
                                                   return_sorted=False)
                lens = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
                idx = (np.concatenate([np.asarray(a, dtype=np.intp) for a in lists])
                       if lens.sum() else np.empty(0, dtype=np.intp))
                rows = np.repeat(np.arange(start, stop), lens)
                diff = X[rows] - self.Y[idx]
                dist = (np.abs(diff).sum(axis=1) if self._p == 1
                        else np.sqrt(np.einsum("ij,ij->i", diff, diff)))
            else:
                D = self._block_distances(X[start:stop])
                r_loc, idx = np.nonzero(D <= r_search)
                dist = D[r_loc, idx]
                lens = np.bincount(r_loc, minlength=stop - start)
            ptr_parts.append(offset + np.cumsum(lens))
            offset += int(lens.sum())
            idx_parts.append(idx)
            dist_parts.append(self._from_search(dist))
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        indptr = np.concatenate(ptr_parts)
        idx = np.concatenate(idx_parts) if idx_parts else np.empty(0, dtype=np.intp)
        dist = np.concatenate(dist_parts) if dist_parts else np.empty(0)
        return indptr, idx, dist

    def match(self, X: np.ndarray) -> np.ndarray:
        """Index of a reference row exactly equal to each row of X (for 'precomputed': at
        distance 0), or -1."""
        X = self.prepare(X)
        dist, idx = self.query(X, 1, prepared=True)
        return exact_hits(self, X, dist[:, 0], idx[:, 0])


def resolve_neighbors(neighbors: str, n: int, n_features: int, metric: str, n_neighbors: int = 10) -> str:
    """'exact' or 'approximate' for the ``neighbors`` parameter on n points (``n_neighbors``
    each)."""
    if neighbors not in NEIGHBOR_METHODS:
        raise InvalidParameterError(f"neighbors={neighbors!r}: use one of "
                                    f"{', '.join(repr(m) for m in NEIGHBOR_METHODS)}.")
    if neighbors != "auto":
        return neighbors
    threshold = AUTO_APPROXIMATE_MIN_POINTS * max(1.0, n_neighbors / AUTO_NEIGHBOURS_SCALE) ** 2
    if metric == "precomputed" or n < threshold or n_features <= TREE_MAX_FEATURES:
        return "exact"
    return "approximate"


def make_index(X: np.ndarray, *, neighbors: str = "auto", metric: str = "euclidean", n_neighbors: int = 10,
               random_state=0, progress=None):
    """The search index a neighbour method fits on (see the module docstring): an exact
    :class:`NeighborIndex` or an :class:`ApproximateIndex` whose graph holds ``n_neighbors``
    neighbours of every point. Sparse X (euclidean or cosine) gets the exact
    :class:`~manifold_studio.algorithms.neighbors_sparse.SparseNeighborIndex` (sparse products in
    blocks) or NN-descent on the sparse rows themselves, never densified
    (:class:`~manifold_studio.algorithms.neighbors_approx_sparse.SparseApproximateIndex`); 'auto'
    chooses by the number of points, as for dense rows of many features."""
    check_metric(metric)
    if sp.issparse(X):
        if resolve_neighbors(neighbors, X.shape[0], TREE_MAX_FEATURES + 1, metric, n_neighbors) == "approximate":
            return SparseApproximateIndex(X, n_neighbors, metric=metric, random_state=random_state,
                                          progress=progress)
        return SparseNeighborIndex(X, metric=metric)
    X = np.asarray(X, dtype=float)
    kind = resolve_neighbors(neighbors, X.shape[0], X.shape[1], metric, n_neighbors)
    if kind == "approximate":
        return ApproximateIndex(X, n_neighbors, metric=metric, random_state=random_state, progress=progress)
    return NeighborIndex(X, metric=metric)


def neighbour_summary(est) -> dict:
    """The neighbour search and phase times of a fitted estimator, as scalar log entries."""
    out = {}
    if getattr(est, "neighbors_method_", None) is not None:
        out["neighbours"] = est.neighbors_method_
    if getattr(est, "neighbors_recall_", None) is not None:
        out["neighbours_recall_at_10"] = round(float(est.neighbors_recall_), 4)
    for phase, seconds in getattr(est, "timings_", {}).items():
        out[f"time_{phase.replace(' ', '_')}_s"] = round(float(seconds), 3)
    return out


class PhaseTimer:
    """Wall-clock seconds per named phase, accumulated in ``timings``: ``with timer("neighbours"):``."""

    def __init__(self):
        self.timings: dict[str, float] = {}

    def __call__(self, phase: str):
        @contextlib.contextmanager
        def run():
            t0 = time.perf_counter()
            try:
                yield
            finally:
                self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - t0

        return run()


def knn_query(Y, X, k: int, *, exclude_self: bool = False, progress=None, index: NeighborIndex | None = None):
    """The k nearest rows of ``Y`` for each row of ``X``: (dist, idx), (len(X), k).

    With ``exclude_self=True`` (``X`` is ``Y``), each point's own row is left out even
    when it has exact duplicates (which are kept as neighbours at distance 0)."""
    index = index or (SparseNeighborIndex(Y) if sp.issparse(Y) else NeighborIndex(Y))
    if not exclude_self:
        return index.query(X, k, progress=progress)
    if index.approximate:
        return index.training_neighbors(k, progress=progress)
    dist, idx = index.query(X, min(k + 1, index.n), progress=progress)
    return drop_self(dist, idx, k)


def neighbor_rows(vals: np.ndarray, idx: np.ndarray, n: int) -> sp.csr_matrix:
    """The (m, n) CSR matrix with ``vals[i, j]`` in row i, column ``idx[i, j]`` ((m, k) arrays:
    a value on each of a point's k neighbours among n reference points)."""
    m, k = idx.shape
    return sp.csr_matrix((vals.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n))


def check_n_neighbors(k: int, n: int, *, name: str = "n_neighbors", what: str = "") -> None:
    """Clear message when k >= n (a point has only n-1 other points)."""
    if k >= n:
        for_what = f" for {what}" if what else ""
        raise DataError(f"{name}={k} is too large{for_what}: the data has {n} points, so each point has "
                        f"only {n - 1} other points; use {name} <= {n - 1} (typically 5 to 20).")


def knn_graph(X: np.ndarray, k: int, *, mode: str = "distance", symmetric: bool = True,
              progress=None, index: NeighborIndex | None = None, return_query: bool = False,
              symmetrize: str = "max"):
    """The k-NN graph of X (self excluded) as CSR; symmetric = union of both directions, with
    the larger weight of the two (``symmetrize='max'``) or their mean (``'mean'``: an edge
    found in one direction only has half its weight, as scikit-learn's 0.5 (A + A^T))."""
    X = X if sp.issparse(X) else np.asarray(X, dtype=float)
    n = X.shape[0]
    check_n_neighbors(k, n)
    dist, idx = knn_query(X, X, k, exclude_self=True, progress=progress, index=index)
    data = dist.copy() if mode == "distance" else np.ones((n, k))
    # zero-length edges between duplicates must survive as explicit edges
    data[data == 0] = np.finfo(float).tiny
    G = neighbor_rows(data, idx, n)
    if symmetric:
        G = (G.maximum(G.T) if symmetrize == "max" else 0.5 * (G + G.T)).tocsr()
    if return_query:
        return G, dist, idx
    return G


def radius_graph(X: np.ndarray, radius: float, *, progress=None, index: NeighborIndex | None = None):
    """The epsilon-graph of X (edges between different points closer than ``radius``)."""
    X = X if sp.issparse(X) else np.asarray(X, dtype=float)
    n = X.shape[0]
    index = index or (SparseNeighborIndex(X) if sp.issparse(X) else NeighborIndex(X))
    indptr, idx, dist = index.query_radius(X, radius, progress=progress)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    keep = rows != idx
    G = sp.csr_matrix((dist[keep], (rows[keep], idx[keep])), shape=(n, n))
    # zero-length edges between duplicates must survive as explicit edges
    G.data[G.data == 0] = np.finfo(float).tiny
    return G.maximum(G.T).tocsr()
