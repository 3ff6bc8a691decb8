"""UMAP's fuzzy simplicial set: the weighted neighbour graph of McInnes, Healy & Melville (2018).

* :class:`MetricIndex` — k nearest training points under ``euclidean``, ``cosine`` or
  ``manhattan``, on the project's k-NN search (:mod:`manifold_studio.algorithms.neighbors`).
  Cosine is the Euclidean search on unit rows (``1 - cos = |a - b|^2 / 2``); Manhattan uses
  scipy's k-d tree (p = 1) in low dimension and a compiled blockwise scan above. The
  distances of the neighbours found are recomputed row by row from the coordinates, so they
  are exact (no ``|x|^2 + |y|^2 - 2 x.y`` cancellation) and do not depend on the other rows
  of a query (extension stays sample-wise).
* :func:`smooth_knn_dist` — per point ``rho_i`` (distance to the nearest non-identical
  neighbour, local connectivity) and ``sigma_i`` by binary search so that
  ``sum_j exp(-(d_ij - rho_i) / sigma_i) = log2(k)``, exactly as umap-learn.
* :func:`memberships` — ``exp(-(d_ij - rho_i) / sigma_i)`` (1 within ``rho_i``).
* :func:`fuzzy_union` — ``A + A^T - A * A^T`` (the probabilistic t-conorm).
* :func:`fuzzy_simplicial_set` — all of the above on training data.
* :func:`categorical_intersection` — supervised UMAP: edges between different labels are
  weakened by ``exp(-far_dist)``, then local connectivity is restored (row maxima 1, union).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.kernels import rows_per_block
from manifold_studio.algorithms.neighbors import TREE_MAX_FEATURES, NeighborIndex, check_n_neighbors
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError

METRICS = ("euclidean", "cosine", "manhattan")
#: umap-learn's tolerance of the binary search and floor of sigma (relative to mean distance)
SMOOTH_K_TOLERANCE = 1e-5
MIN_K_DIST_SCALE = 1e-3
_METRIC_CODE = {"euclidean": 0, "cosine": 1, "manhattan": 2}


def _unit_rows(X: np.ndarray, what: str, allow_zero: bool = False) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows refused (training data) or kept as zeros."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    zero = np.flatnonzero(norms == 0)
    if allow_zero:
        return X / np.where(norms == 0, 1.0, norms)[:, None]
    if zero.size:
        rows = ", ".join(str(int(r)) for r in zero[:5]) + (" ..." if zero.size > 5 else "")
        raise DataError(f"metric='cosine' is undefined for all-zero rows: {what} has {zero.size} "
                        f"(row {rows}); remove them or use metric='euclidean'.")
    return X / norms[:, None]


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


@jit
def _manhattan_block(X, Y, k, out_d, out_i):
    """The k smallest L1 distances from each row of X to the rows of Y (insertion into a sorted
    list; ties keep the smaller index)."""
    m, d = X.shape
    n = Y.shape[0]
    for r in range(m):
        size = 0
        for j in range(n):
            s = 0.0
            for f in range(d):
                s += abs(X[r, f] - Y[j, f])
            if size == k and s >= out_d[r, k - 1]:
                continue
            pos = size if size < k else k - 1
            while pos > 0 and out_d[r, pos - 1] > s:
                if pos < k:
                    out_d[r, pos] = out_d[r, pos - 1]
                    out_i[r, pos] = out_i[r, pos - 1]
                pos -= 1
            out_d[r, pos] = s
            out_i[r, pos] = j
            if size < k:
                size += 1


class MetricIndex:
    """k nearest reference rows under one of :data:`METRICS` (exact search).

    The single place where UMAP meets the neighbour search: approximate neighbours and more
    metrics in :mod:`~manifold_studio.algorithms.neighbors` plug in here."""

    def __init__(self, Y: np.ndarray, metric: str = "euclidean"):
        if metric not in METRICS:
            raise DataError(f"Unknown metric {metric!r}: the neighbour index knows "
                            f"{', '.join(repr(m) for m in METRICS)}.")
        self.metric = metric
        self.Y_raw = np.ascontiguousarray(Y, dtype=float)
        self.Y = _unit_rows(self.Y_raw, "the training data") if metric == "cosine" else self.Y_raw
        self.index = None if metric == "manhattan" else NeighborIndex(self.Y)
        self.tree = (cKDTree(self.Y) if metric == "manhattan" and self.Y.shape[1] <= TREE_MAX_FEATURES
                     else None)

    @property
    def n(self) -> int:
        return self.Y.shape[0]

    def prepare(self, X: np.ndarray) -> np.ndarray:
        """New points in the search space (unit rows for cosine; an all-zero row stays zero)."""
        X = np.ascontiguousarray(X, dtype=float)
        return _unit_rows(X, "the new data", allow_zero=True) if self.metric == "cosine" else X

    def query(self, X: np.ndarray, k: int, *, exclude_self: bool = False, progress=None):
        """(dist, idx), (m, k), increasing distance. ``exclude_self``: X is the reference set
        and each row's own index is left out (exact duplicates stay, at distance 0)."""
        progress = as_progress(progress)
        Xp = self.Y if exclude_self else self.prepare(X)
        kk = min(k + 1, self.n) if exclude_self else k
        if self.index is not None:
            _, idx = self.index.query(Xp, kk, progress=progress, message="Neighbours")
        else:
            idx = self._manhattan(Xp, kk, progress)
        if exclude_self:
            own = idx == np.arange(idx.shape[0])[:, None]
            own[~own.any(axis=1), -1] = True       # self beyond k+1 copies: drop the farthest
            idx = idx[~own].reshape(-1, kk - 1)[:, :k]
        idx = np.ascontiguousarray(idx, dtype=np.intp)
        dist = np.empty(idx.shape)
        _row_distances(Xp, self.Y, idx, _METRIC_CODE[self.metric], dist)
        if self.metric == "cosine" and not exclude_self:
            # an all-zero new row has cosine distance 1 to every point (umap-learn's convention)
            dist[~Xp.any(axis=1)] = 1.0
        order = np.argsort(dist, axis=1, kind="stable")  # exact distances may reorder near-ties
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)

    def _manhattan(self, X, k, progress):
        m = X.shape[0]
        idx = np.empty((m, k), dtype=np.intp)
        if self.tree is not None:
            _, i = self.tree.query(X, k=k, p=1, workers=-1)
            return i.reshape(m, k)
        step = max(1, rows_per_block(self.n) // 8)
        for start in range(0, m, step):
            progress.checkpoint(start / max(m, 1), f"Neighbours {start:,}/{m:,}")
            stop = min(m, start + step)
            d = np.empty((stop - start, k))
            _manhattan_block(X[start:stop], self.Y, k, d, idx[start:stop])
        return idx

    def exact_match(self, X: np.ndarray, dist: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Index of a reference row equal to each row of X (from a query's nearest), or -1."""
        hit = dist[:, 0] <= 0.0
        out = np.full(X.shape[0], -1, dtype=np.intp)
        if hit.any():
            rows = np.flatnonzero(hit)
            same = np.all(self.Y_raw[idx[rows, 0]] == X[rows], axis=1)
            out[rows[same]] = idx[rows[same], 0]
        return out


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


def fuzzy_simplicial_set(X: np.ndarray, n_neighbors: int, *, metric: str = "euclidean",
                         local_connectivity: float = 1.0, index: MetricIndex | None = None,
                         progress=None):
    """The symmetric fuzzy graph of X (CSR, float64) and what extension reuses.

    Returns ``(graph, sigma, rho, dist, idx, mean_distance)``; ``n_neighbors`` counts each
    point itself (umap-learn's convention), so ``n_neighbors - 1`` other points are linked."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    check_n_neighbors(n_neighbors, n)
    if n_neighbors < 2:
        raise DataError(f"n_neighbors={n_neighbors} is too small: it counts the point itself, so "
                        "UMAP needs at least 2 (typically 15).")
    index = index or MetricIndex(X, metric)
    dist, idx = index.query(X, n_neighbors - 1, exclude_self=True, progress=progress)
    sigma, rho, mean_d = smooth_knn_dist(dist, n_neighbors, local_connectivity=local_connectivity)
    vals = memberships(dist, sigma, rho).astype(np.float32)
    k = idx.shape[1]
    A = sp.csr_matrix((vals.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    A.eliminate_zeros()
    return fuzzy_union(A).astype(np.float64), sigma, rho, dist, idx, mean_d


def categorical_intersection(graph: sp.csr_matrix, labels: np.ndarray, far_dist: float,
                             unknown_dist: float = 1.0) -> sp.csr_matrix:
    """Supervised UMAP (umap-learn's categorical simplicial set intersection): an edge between
    two different labels is multiplied by exp(-far_dist), one touching an unknown label (-1)
    by exp(-unknown_dist); then each row is rescaled to maximum 1 and the fuzzy union taken
    again (local connectivity reset)."""
    G = sp.coo_matrix(graph, copy=True)
    li, lj = labels[G.row], labels[G.col]
    unknown = (li < 0) | (lj < 0)
    G.data[unknown] *= np.exp(-unknown_dist)
    G.data[~unknown & (li != lj)] *= np.exp(-far_dist)
    G = G.tocsr()
    G.eliminate_zeros()
    row_max = np.zeros(G.shape[0])
    nonempty = np.diff(G.indptr) > 0
    if G.nnz:
        row_max[nonempty] = np.maximum.reduceat(G.data, G.indptr[:-1][nonempty])
    scale = np.divide(1.0, row_max, out=np.zeros_like(row_max), where=row_max > 0)
    G = sp.diags(scale) @ G
    return fuzzy_union(G)
