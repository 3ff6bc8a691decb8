"""Nearest neighbours and neighbourhood graphs (Qt-free, chunked, with progress/cancel).

* :func:`knn_query` — the k nearest rows of a reference set for each query row. A
  :class:`scipy.spatial.cKDTree` (``workers=-1``) for low dimensions, blockwise brute
  force with BLAS for high dimensions (where trees degrade), chosen automatically.
* :func:`radius_query` — every reference row within a radius (ragged, as CSR arrays).
* :func:`knn_graph`, :func:`radius_graph` — neighbourhood graphs as scipy.sparse CSR.
* :func:`neighbor_rows` — per-point values on each point's k neighbours as a sparse matrix.
* :func:`check_n_neighbors` — the clear "k must be smaller than n" message.
* :func:`smallest_connecting_k` — the smallest k whose k-NN graph is connected.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.distances import rows_per_block, squared_distances
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError

#: above this many features a brute-force (BLAS) search beats a k-d tree
TREE_MAX_FEATURES = 15
#: query rows per chunk for tree searches (progress and cancel between chunks)
TREE_CHUNK = 8192


class NeighborIndex:
    """A reusable search structure over reference points ``Y`` (tree or brute force)."""

    def __init__(self, Y: np.ndarray, method: str = "auto"):
        self.Y = np.ascontiguousarray(Y, dtype=float)
        if method == "auto":
            method = "tree" if self.Y.shape[1] <= TREE_MAX_FEATURES else "brute"
        self.method = method
        self.tree = cKDTree(self.Y) if method == "tree" else None
        self.y_sq = np.einsum("ij,ij->i", self.Y, self.Y) if method == "brute" else None

    @property
    def n(self) -> int:
        return self.Y.shape[0]

    # -- k nearest -----------------------------------------------------------------
    def query(self, X: np.ndarray, k: int, *, progress=None, message: str = "Neighbours"):
        """(dist, idx), both (len(X), k), sorted by increasing distance."""
        X = np.ascontiguousarray(X, dtype=float)
        progress = as_progress(progress)
        m = X.shape[0]
        k = int(k)
        dist = np.empty((m, k), dtype=float)
        idx = np.empty((m, k), dtype=np.intp)
        step = TREE_CHUNK if self.tree is not None else rows_per_block(self.n)
        for start in range(0, m, step):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + step)
            if self.tree is not None:
                d, i = self.tree.query(X[start:stop], k=k, workers=-1)
                if k == 1:
                    d, i = d[:, None], i[:, None]
            else:
                d, i = self._brute(X[start:stop], k)
            dist[start:stop], idx[start:stop] = d, i
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        return dist, idx

    def _brute(self, X, k):
        if k < self.n:
            x_sq = np.einsum("ij,ij->i", X, X)
            G = X @ self.Y.T
            d2 = np.empty((X.shape[0], k))
            idx = np.empty((X.shape[0], k), dtype=np.intp)
            _top_k_rows(G, x_sq, self.y_sq, d2, idx)
            return np.sqrt(d2), idx
        D = squared_distances(X, self.Y, y_sq=self.y_sq)
        if k < self.n:
            part = np.argpartition(D, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(self.n), (X.shape[0], self.n)).copy()
        dk = np.take_along_axis(D, part, axis=1)
        order = np.argsort(dk, axis=1, kind="stable")
        idx = np.take_along_axis(part, order, axis=1)
        dist = np.sqrt(np.take_along_axis(dk, order, axis=1))
        return dist, idx

    # -- within a radius -------------------------------------------------------------
    def query_radius(self, X: np.ndarray, radius: float, *, progress=None,
                     message: str = "Neighbours within radius"):
        """CSR-like ragged result: (indptr, idx, dist) of the reference rows within ``radius``."""
        X = np.ascontiguousarray(X, dtype=float)
        progress = as_progress(progress)
        m = X.shape[0]
        ptr_parts, idx_parts, dist_parts = [np.zeros(1, dtype=np.intp)], [], []
        offset = 0
        step = TREE_CHUNK if self.tree is not None else rows_per_block(self.n)
        for start in range(0, m, step):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + step)
            if self.tree is not None:
                lists = self.tree.query_ball_point(X[start:stop], radius, workers=-1, return_sorted=False)
                lens = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
                idx = (np.concatenate([np.asarray(a, dtype=np.intp) for a in lists])
                       if lens.sum() else np.empty(0, dtype=np.intp))
                rows = np.repeat(np.arange(start, stop), lens)
                diff = X[rows] - self.Y[idx]
                dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
            else:
                D = squared_distances(X[start:stop], self.Y, y_sq=self.y_sq)
                r_loc, idx = np.nonzero(D <= radius * radius)
                dist = np.sqrt(D[r_loc, idx])
                lens = np.bincount(r_loc, minlength=stop - start)
            ptr_parts.append(offset + np.cumsum(lens))
            offset += int(lens.sum())
            idx_parts.append(idx)
            dist_parts.append(dist)
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        indptr = np.concatenate(ptr_parts)
        idx = np.concatenate(idx_parts) if idx_parts else np.empty(0, dtype=np.intp)
        dist = np.concatenate(dist_parts) if dist_parts else np.empty(0)
        return indptr, idx, dist

    def match(self, X: np.ndarray) -> np.ndarray:
        """Index of a reference row exactly equal to each row of X, or -1."""
        dist, idx = self.query(X, 1)
        idx = idx[:, 0]
        hit = dist[:, 0] <= 0.0
        exact = np.zeros(X.shape[0], dtype=bool)
        if hit.any():
            exact[hit] = np.all(self.Y[idx[hit]] == X[hit], axis=1)
        return np.where(exact, idx, -1)


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


def knn_query(Y, X, k: int, *, exclude_self: bool = False, progress=None, index: NeighborIndex | None = None):
    """The k nearest rows of ``Y`` for each row of ``X``: (dist, idx), (len(X), k).

    With ``exclude_self=True`` (``X`` is ``Y``), each point's own row is left out even
    when it has exact duplicates (which are kept as neighbours at distance 0)."""
    index = index or NeighborIndex(Y)
    if not exclude_self:
        return index.query(X, k, progress=progress)
    n = index.n
    kk = min(k + 1, n)
    dist, idx = index.query(X, kk, progress=progress)
    own = idx == np.arange(X.shape[0])[:, None]
    missing = ~own.any(axis=1)
    own[missing, -1] = True  # self not among the k+1 (many duplicates): drop the farthest
    keep = ~own
    return dist[keep].reshape(-1, kk - 1)[:, :k], idx[keep].reshape(-1, kk - 1)[:, :k]


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
              progress=None, index: NeighborIndex | None = None, return_query: bool = False):
    """The k-NN graph of X (self excluded) as CSR; symmetric = union of both directions."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    check_n_neighbors(k, n)
    dist, idx = knn_query(X, X, k, exclude_self=True, progress=progress, index=index)
    data = dist.copy() if mode == "distance" else np.ones((n, k))
    # zero-length edges between duplicates must survive as explicit edges
    data[data == 0] = np.finfo(float).tiny
    G = neighbor_rows(data, idx, n)
    if symmetric:
        G = G.maximum(G.T).tocsr()
    if return_query:
        return G, dist, idx
    return G


def radius_graph(X: np.ndarray, radius: float, *, progress=None, index: NeighborIndex | None = None):
    """The epsilon-graph of X (edges between different points closer than ``radius``)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    index = index or NeighborIndex(X)
    indptr, idx, dist = index.query_radius(X, radius, progress=progress)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    keep = rows != idx
    G = sp.csr_matrix((dist[keep], (rows[keep], idx[keep])), shape=(n, n))
    # zero-length edges between duplicates must survive as explicit edges
    G.data[G.data == 0] = np.finfo(float).tiny
    return G.maximum(G.T).tocsr()


def smallest_connecting_k(X: np.ndarray, k_start: int, *, index: NeighborIndex | None = None,
                          max_elements: int = 20_000_000) -> int | None:
    """The smallest k whose symmetric k-NN graph on X is connected (None if beyond the budget)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    index = index or NeighborIndex(X)
    k_cap = min(n - 1, max(k_start + 1, max_elements // max(n, 1)))

    def connected(idx, k):
        G = neighbor_rows(np.ones((n, k)), idx[:, :k], n)
        return connected_components(G, directed=False)[0] == 1

    hi = min(k_cap, max(2 * k_start, k_start + 1))
    while True:
        _, idx = knn_query(X, X, hi, exclude_self=True, index=index)
        if connected(idx, hi):
            break
        if hi >= k_cap:
            return None
        hi = min(k_cap, 2 * hi)
    lo = k_start  # known disconnected
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if connected(idx, mid):
            hi = mid
        else:
            lo = mid
    return hi


def connect_components(X: np.ndarray, G: sp.spmatrix) -> tuple[sp.csr_matrix, list[tuple[int, int, float]]]:
    """Join the connected components of the symmetric graph ``G`` on the points ``X`` through
    their closest pairs of points: in rounds (Borůvka), every component gets an edge to its
    nearest point outside it, until one component is left. Returns (the connected graph, the
    edges added as (i, j, distance))."""
    X = np.asarray(X, dtype=float)
    G = sp.csr_matrix(G, dtype=float)
    added: list[tuple[int, int, float]] = []
    while True:
        n_comp, comp = connected_components(G, directed=False)
        if n_comp == 1:
            return G, added
        best: dict[int, tuple[float, int, int]] = {}
        for c in range(n_comp):
            inside = np.flatnonzero(comp == c)
            outside = np.flatnonzero(comp != c)
            dist, j = cKDTree(X[outside]).query(X[inside], k=1)
            a = int(np.argmin(dist))
            i, o = int(inside[a]), int(outside[j[a]])
            best[c] = (float(dist[a]), min(i, o), max(i, o))  # one pair may be the best of both ends
        rows, cols, vals = [], [], []
        for d, i, j in sorted(set(best.values())):
            rows += [i, j]
            cols += [j, i]
            # a zero length (duplicate points in two components) would be no edge in a sparse graph
            vals += [max(d, np.finfo(float).tiny)] * 2
            added.append((i, j, d))
        G = (G + sp.csr_matrix((vals, (rows, cols)), shape=G.shape)).tocsr()
