"""UMAP's fuzzy simplicial set: the weighted neighbour graph of McInnes, Healy & Melville (2018).

* :func:`training_knn`, :func:`query_knn` — the k nearest fitted points under ``euclidean``,
  ``cosine`` or ``manhattan`` from an index of the shared neighbour layer
  (:func:`manifold_studio.algorithms.neighbors.make_index`: exact, or approximate by
  NN-descent), of each fitted point (itself excluded) or of each new point (each row on its
  own: extension stays sample-wise). The distances of the neighbours an exact index finds are
  recomputed row by row from the coordinates, so they are exact (no ``|x|^2 + |y|^2 - 2 x.y``
  cancellation: copies are at distance 0, which local connectivity needs); the approximate
  index returns exact distances itself. A new all-zero row under 'cosine' is at distance 1 from
  every point (umap-learn's convention).
* :func:`smooth_knn_dist` — per point ``rho_i`` (distance to the nearest non-identical
  neighbour, local connectivity) and ``sigma_i`` by binary search so that
  ``sum_j exp(-(d_ij - rho_i) / sigma_i) = log2(k)``, exactly as umap-learn.
* :func:`memberships` — ``exp(-(d_ij - rho_i) / sigma_i)`` (1 within ``rho_i``).
* :func:`fuzzy_union` — ``A + A^T - A * A^T`` (the probabilistic t-conorm).
* :func:`fuzzy_graph` — the symmetric graph from the k-NN lists; :func:`fuzzy_simplicial_set`
  — the search and the graph on training data.
* Supervised and semi-supervised UMAP: :mod:`manifold_studio.algorithms.umap_target`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.neighbors import check_n_neighbors, make_index
from manifold_studio.algorithms.neighbors_sparse import as_csr, same_rows
from manifold_studio.errors import DataError

#: the metrics UMAP offers (the neighbour layer's; 'precomputed': X is a square distance matrix)
METRICS = ("euclidean", "cosine", "manhattan", "precomputed")
#: umap-learn's tolerance of the binary search and floor of sigma (relative to mean distance)
SMOOTH_K_TOLERANCE = 1e-5
MIN_K_DIST_SCALE = 1e-3
_METRIC_CODE = {"euclidean": 0, "cosine": 1, "manhattan": 2}


@jit(fastmath=False)
def _row_distances(X, Y, idx, code, out):
    """out[r, j] = distance(X[r], Y[idx[r, j]]) computed directly (0 euclidean, 1 cosine on unit
    rows, 2 manhattan)."""
    m, k = idx.shape
    d = X.shape[1]
    for r in range(m):
        for j in range(k):
            y = idx[r, j]
            s = 0.0
            if code == 2:
                for f in range(d):
                    s += abs(X[r, f] - Y[y, f])
                out[r, j] = s
            else:
                for f in range(d):
                    t = X[r, f] - Y[y, f]
                    s += t * t
                out[r, j] = np.sqrt(s) if code == 0 else 0.5 * s


def _exact(index, Xp, dist, idx):
    """An exact index's neighbours with distances recomputed from the coordinates, re-sorted
    (stable: exact distances may reorder near-ties); the approximate index's as they are."""
    idx = np.ascontiguousarray(idx, dtype=np.intp)
    if index.approximate or getattr(index, "exact_distances", False) or index.metric == "precomputed":
        return dist, idx
    dist = np.empty(idx.shape)
    _row_distances(Xp, index.Y, idx, _METRIC_CODE[index.metric], dist)
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)


def training_knn(index, k: int, *, progress=None):
    """(dist, idx) (n, k): each fitted point's k nearest other fitted points (exact copies stay,
    at distance 0), increasing distance."""
    dist, idx = index.training_neighbors(k, progress=progress)
    return _exact(index, index.Y, dist, idx)


def query_knn(index, X: np.ndarray, k: int, *, progress=None):
    """(dist, idx) (m, k): each new row's k nearest fitted points, increasing distance; each row
    on its own (sample-wise). Under 'cosine' an all-zero row is at distance 1 from every point
    (its neighbours: the first k)."""
    X = sp.csr_array(X) if sp.issparse(X) else np.ascontiguousarray(X, dtype=float)
    m = X.shape[0]
    dist = np.ones((m, k))
    idx = np.broadcast_to(np.arange(k, dtype=np.intp), (m, k)).copy()
    nonzero = np.diff(X.indptr) > 0 if sp.issparse(X) else X.any(axis=1)
    rows = np.flatnonzero(nonzero) if index.metric == "cosine" else np.arange(m)
    if rows.size:
        Xp = index.prepare(X[rows] if rows.size < m else X)
        d, i = index.query(Xp, k, progress=progress, prepared=True)
        dist[rows], idx[rows] = _exact(index, Xp, d, i)
    return dist, idx


def same_points(Y: np.ndarray, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For each row of X, the nearest fitted point found (``idx[:, 0]``) if it equals that row
    (the raw coordinates compared, not a distance), else -1."""
    if X.shape[0] == 0:
        return np.empty(0, dtype=np.intp)
    first = idx[:, 0]
    if sp.issparse(X) or sp.issparse(Y):
        return np.where(same_rows(as_csr(X), as_csr(Y), np.arange(X.shape[0]), first), first, -1)
    X = np.asarray(X, dtype=float)
    return np.where(np.all(Y[first] == X, axis=1), first, -1)


@jit(fastmath=False)
def _smooth(dist, k_target, local_connectivity, row_k, mean_all, sigma, rho):
    """umap-learn's smooth_knn_dist on the (m, c) distances to each point's c neighbours, the
    point itself not included (umap-learn's column 0); ``row_k`` is the neighbour count the row
    means divide by and ``mean_all`` the floor's global mean distance."""
    target = np.log2(k_target)
    m, c = dist.shape
    big = np.finfo(np.float64).max
    for i in range(m):
        lo = 0.0
        hi = big
        mid = 1.0
        nz = 0
        for j in range(c):
            if dist[i, j] > 0.0:
                nz += 1
        r = np.float32(0.0)
        if nz >= local_connectivity:
            index = int(np.floor(local_connectivity))
            interp = local_connectivity - index
            nonzero = np.empty(nz, dtype=np.float32)
            p = 0
            for j in range(c):
                if dist[i, j] > 0.0:
                    nonzero[p] = dist[i, j]
                    p += 1
            if index > 0:
                r = nonzero[index - 1]
                if interp > SMOOTH_K_TOLERANCE:
                    r += np.float32(interp * (nonzero[index] - nonzero[index - 1]))
            elif nz > 0:
                r = np.float32(interp * nonzero[0])
        elif nz > 0:
            for j in range(c):
                if dist[i, j] > r:
                    r = dist[i, j]
        rho[i] = r
        for _ in range(64):
            psum = 0.0
            for j in range(c):
                d = dist[i, j] - r
                if d > 0:
                    psum += np.exp(-(d / mid))
                else:
                    psum += 1.0
            if np.fabs(psum - target) < SMOOTH_K_TOLERANCE:
                break
            if psum > target:
                hi = mid
                mid = (lo + hi) / 2.0
            else:
                lo = mid
                if hi >= big:
                    mid *= 2
                else:
                    mid = (lo + hi) / 2.0
        s = np.float32(mid)
        if r > 0.0:
            row_mean = 0.0
            for j in range(c):
                row_mean += dist[i, j]
            row_mean /= row_k
            if s < MIN_K_DIST_SCALE * row_mean:
                s = np.float32(MIN_K_DIST_SCALE * row_mean)
        elif s < MIN_K_DIST_SCALE * mean_all:
            s = np.float32(MIN_K_DIST_SCALE * mean_all)
        sigma[i] = s


def smooth_knn_dist(dist: np.ndarray, n_neighbors: int, *, local_connectivity: float = 1.0,
                    mean_distance: float | None = None):
    """(sigma, rho) for each row of ``dist`` (m, n_neighbors - 1): the sorted distances to a
    point's neighbours other than itself. ``n_neighbors`` counts the point itself, as
    umap-learn does; ``mean_distance`` (default: the mean over ``dist`` with the zero
    self-distances counted) floors sigma where every neighbour is a copy. Float32 as umap-learn."""
    d32 = np.ascontiguousarray(dist, dtype=np.float32)
    if mean_distance is None:
        mean_distance = float(np.sum(d32, dtype=np.float64)) / max(d32.shape[0] * n_neighbors, 1)
    sigma = np.empty(d32.shape[0], dtype=np.float32)
    rho = np.empty(d32.shape[0], dtype=np.float32)
    _smooth(d32, float(n_neighbors), float(local_connectivity), float(n_neighbors),
            float(mean_distance), sigma, rho)
    return sigma, rho, mean_distance


def memberships(dist: np.ndarray, sigma: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """exp(-(d_ij - rho_i) / sigma_i), 1 where d_ij <= rho_i (float32 distances as umap-learn)."""
    d = np.asarray(dist, dtype=np.float32) - rho[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = np.exp(-(d.astype(np.float64) / sigma[:, None].astype(np.float64)))
    vals[(d <= 0) | (sigma[:, None] == 0)] = 1.0
    return vals


def fuzzy_union(A: sp.spmatrix) -> sp.csr_matrix:
    """A + A^T - A .* A^T (probabilistic t-conorm), explicit zeros removed."""
    A = sp.csr_matrix(A)
    At = A.T.tocsr()
    G = (A + At - A.multiply(At)).tocsr()
    G.eliminate_zeros()
    G.sort_indices()
    return G


def fuzzy_graph(dist: np.ndarray, idx: np.ndarray, n_neighbors: int, *, local_connectivity: float = 1.0):
    """The symmetric fuzzy graph (CSR, float64) of the k-NN lists (dist, idx) (n, n_neighbors - 1)
    of n points, self excluded: ``(graph, sigma, rho, mean_distance)``."""
    n = idx.shape[0]
    sigma, rho, mean_d = smooth_knn_dist(dist, n_neighbors, local_connectivity=local_connectivity)
    vals = memberships(dist, sigma, rho).astype(np.float32)
    k = idx.shape[1]
    A = sp.csr_matrix((vals.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    A.eliminate_zeros()
    return fuzzy_union(A).astype(np.float64), sigma, rho, mean_d


def check_graph_size(n_neighbors: int, n: int) -> None:
    """UMAP's n_neighbors counts each point itself: 2 <= n_neighbors < n."""
    check_n_neighbors(n_neighbors, n)
    if n_neighbors < 2:
        raise DataError(f"n_neighbors={n_neighbors} is too small: it counts the point itself, so "
                        "UMAP needs at least 2 (typically 15).")


def fuzzy_simplicial_set(X: np.ndarray, n_neighbors: int, *, metric: str = "euclidean",
                         local_connectivity: float = 1.0, index=None, progress=None):
    """The symmetric fuzzy graph of X (CSR, float64) and what extension reuses.

    Returns ``(graph, sigma, rho, dist, idx, mean_distance)``; ``n_neighbors`` counts each
    point itself (umap-learn's convention), so ``n_neighbors - 1`` other points are linked.
    ``index``: a search index over X from :func:`~manifold_studio.algorithms.neighbors.make_index`
    (default: exact)."""
    X = np.asarray(X, dtype=float)
    check_graph_size(n_neighbors, X.shape[0])
    if index is None:
        index = make_index(X, neighbors="exact", metric=metric)
    dist, idx = training_knn(index, n_neighbors - 1, progress=progress)
    graph, sigma, rho, mean_d = fuzzy_graph(dist, idx, n_neighbors, local_connectivity=local_connectivity)
    return graph, sigma, rho, dist, idx, mean_d
