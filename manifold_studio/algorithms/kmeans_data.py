"""The data of a k-means run, stored once for the distance products (used by
:mod:`manifold_studio.algorithms.kmeans_core`): dense (centred, row-major) or sparse (CSR, never
densified), each optionally with sample weights.

Both give the same operations: a (k, block) slab of squared distances to k centres from one
product, exact distances to the assigned centres, a few points as dense rows, and the number of
distinct points (for error messages); the sparse data also give per-cluster (weighted) sums and
counts (the dense ones are kept by the compiled assignment step).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["DenseData", "SparseData", "augment", "count_distinct_rows"]


def augment(centers: np.ndarray) -> np.ndarray:
    """Centres as rows ``[-2c, ||c||^2, 1]``: with a point stored as ``[x, 1, ||x||^2]`` one product
    gives ``||x||^2 - 2 c.x + ||c||^2``."""
    k = centers.shape[0]
    aug = np.empty((k, centers.shape[1] + 2))
    aug[:, :-2] = -2.0 * centers
    aug[:, -2] = np.einsum("ij,ij->i", centers, centers)
    aug[:, -1] = 1.0
    return aug


def count_distinct_rows(X) -> int:
    """Number of distinct rows of ``X`` (dense or sparse; exact, used for error messages)."""
    if sp.issparse(X):
        X = sp.csr_array(X, dtype=float, copy=True)
        X.sum_duplicates()
        X.data += 0.0          # -0.0 and 0.0 are the same point
        X.eliminate_zeros()
        seen = set()
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            seen.add(X.indices[lo:hi].tobytes() + b"|" + X.data[lo:hi].tobytes())
        return len(seen)
    X = np.ascontiguousarray(X)
    if X.shape[0] == 0:
        return 0
    Xn = X + 0.0
    rows = Xn.view(np.dtype((np.void, Xn.dtype.itemsize * Xn.shape[1]))).ravel()
    return int(np.unique(rows).shape[0])


class DenseData:
    """The centred data stored once, row-major, with their squared norms.

    ``X`` is the C-contiguous (n, d) array of points and ``x_sq`` their squared norms; with a
    centre augmented by :func:`augment` one matrix product and two additions give the squared
    distances as a (k, block) slab with contiguous rows. ``w``: sample weights (None: every
    weight 1). Lloyd's iterations on these data run in
    :class:`~manifold_studio.algorithms.kmeans_lloyd.DenseAssigner`.
    """

    sparse = False

    def __init__(self, Xc: np.ndarray, weights: np.ndarray | None = None):
        self.X = np.ascontiguousarray(Xc, dtype=float)
        self.n, self.d = self.X.shape
        self.x_sq = np.einsum("ij,ij->i", self.X, self.X)
        self.w = weights
        self.x_sq_sum = float(self.x_sq.sum() if weights is None else self.x_sq @ weights)

    def rows(self, idx) -> np.ndarray:
        """Points ``idx`` as an (m, d) array (a copy)."""
        return self.X[np.atleast_1d(np.asarray(idx, dtype=np.intp))]

    def points(self) -> np.ndarray:
        return self.X

    def distinct_count(self) -> int:
        return count_distinct_rows(self.X)

    def slab(self, aug: np.ndarray, start: int, stop: int) -> np.ndarray:
        """(k, stop - start) squared distances (unclipped) of points start..stop to the centres."""
        d = self.d
        D = aug[:, :d] @ self.X[start:stop].T      # -2 c.x (BLAS reads the rows transposed)
        D += aug[:, d][:, None]                      # ||c||^2
        D += aug[:, d + 1][:, None] * self.x_sq[None, start:stop]
        return D

    def sq_dist_to_assigned(self, centers: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """||x_i - c_{labels_i}||^2 computed directly (chunked, no cancellation)."""
        n, d = self.n, self.d
        out = np.empty(n)
        step = max(256, (1 << 18) // max(d, 1))
        for start in range(0, n, step):
            stop = min(start + step, n)
            diff = self.X[start:stop] - centers[labels[start:stop]]
            out[start:stop] = np.einsum("ij,ij->i", diff, diff)
        return out


class SparseData:
    """Sparse (CSR) points, not centred and never densified: squared distances by the expansion
    ``||x||^2 - 2 x.c + ||c||^2`` (one sparse-dense product per block), cluster sums by one sparse
    product with the (weighted) one-hot assignment matrix."""

    sparse = True

    def __init__(self, X, weights: np.ndarray | None = None):
        self.X = sp.csr_array(X, dtype=float)
        self.n, self.d = self.X.shape
        self.x_sq = np.asarray(self.X.multiply(self.X).sum(axis=1), dtype=float).ravel()
        self.w = weights
        self.x_sq_sum = float(self.x_sq.sum() if weights is None else self.x_sq @ weights)

    def rows(self, idx) -> np.ndarray:
        idx = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        return self.X[idx].toarray()

    def points(self):
        return self.X

    def distinct_count(self) -> int:
        return count_distinct_rows(self.X)

    def slab(self, aug: np.ndarray, start: int, stop: int) -> np.ndarray:
        d = self.d
        D = np.asarray(self.X[start:stop] @ aug[:, :d].T).T    # (k, block): -2 c.x
        D = np.ascontiguousarray(D)
        D += aug[:, d][:, None]
        D += aug[:, d + 1][:, None] * self.x_sq[start:stop][None, :]
        return D

    def cluster_sums(self, labels: np.ndarray, k: int):
        values = np.ones(self.n) if self.w is None else self.w
        onehot = sp.csr_array((values, (labels, np.arange(self.n))), shape=(k, self.n))
        sums = np.asarray((onehot @ self.X).toarray(), dtype=float)
        counts = np.bincount(labels, weights=self.w, minlength=k).astype(float)
        return sums, counts

    def sq_dist_to_assigned(self, centers: np.ndarray, labels: np.ndarray) -> np.ndarray:
        out = np.empty(self.n)
        c_sq = np.einsum("ij,ij->i", centers, centers)
        step = max(256, (1 << 18) // max(centers.shape[0], 1))
        for start in range(0, self.n, step):
            stop = min(start + step, self.n)
            P = np.asarray(self.X[start:stop] @ centers.T)
            lab = labels[start:stop]
            dot = P[np.arange(stop - start), lab]
            out[start:stop] = np.maximum(self.x_sq[start:stop] - 2.0 * dot + c_sq[lab], 0.0)
        return out
