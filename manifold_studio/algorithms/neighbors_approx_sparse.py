"""Approximate neighbours of sparse rows (CSR; 'euclidean' or 'cosine'): NN-descent on the rows
themselves (kernels in :mod:`~manifold_studio.algorithms.nndescent_sparse`), never densified.

The random-projection trees that give NN-descent its first guess and the queries their starting
points split a dense sketch of the rows (``X @ R``, R seeded Gaussian, at most
:data:`~manifold_studio.algorithms.nndescent_sparse.SKETCH_WIDTH` columns); every distance the
search compares is the rows' own. The neighbours found get exact float64 distances from the
sparse differences (:func:`~manifold_studio.algorithms.nndescent_sparse._pair_sq`). The interface
is :class:`~manifold_studio.algorithms.neighbors_approx.ApproximateIndex`'s.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import nndescent_sparse as S
from manifold_studio.algorithms.neighbors_approx import ApproximateIndex, NNDescent
from manifold_studio.algorithms.neighbors_sparse import (
    SparseNeighborIndex, as_csr, check_sparse_metric, sparse_unit_rows,
)
from manifold_studio.algorithms.threads import run_shares


class SparseApproximateIndex(ApproximateIndex):
    """:class:`~manifold_studio.algorithms.neighbors_approx.ApproximateIndex` over sparse reference
    rows ``Y`` (any scipy.sparse matrix; searched as CSR)."""

    def _checked_metric(self, metric: str) -> str:
        return check_sparse_metric(metric)

    def _reference(self, Y):
        return self._rows(Y, "data")

    def _rows(self, X, what: str):
        X = as_csr(X)
        X.sum_duplicates()
        return sparse_unit_rows(X, what) if self.metric == "cosine" else X

    def prepare(self, X):
        return X if X is self.Y else self._rows(X, "new points")

    #: the reference row equal to each query row, or -1 (rows compared value for value)
    match = SparseNeighborIndex.match

    def _nndescent(self, seed: int, progress) -> NNDescent:
        d = self.Y.shape[1]
        rng = np.random.default_rng(seed)
        self._sketch = rng.standard_normal((d, min(S.SKETCH_WIDTH, d))) / np.sqrt(min(S.SKETCH_WIDTH, d))
        return NNDescent(self._packed(self.Y), self.k, random_state=seed, progress=progress, kernels=S)

    def _packed(self, X):
        return S.pack(X, X @ self._sketch)

    def _exact_distances(self, X, idx):
        """Metric distances of the sparse rows of X to the reference rows idx (m, k), float64."""
        d2 = self._squared_distances(X, idx)
        return 0.5 * d2 if self.metric == "cosine" else np.sqrt(d2)

    def _squared_distances(self, X, idx):
        """|x_r - y_idx[r, t]|^2 (m, k) from the sparse differences, float64, on every core."""
        S.compile_kernels()
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        d2 = np.empty(idx.shape)
        Y = self.Y

        def share(a, b):
            S._pair_sq(X.indptr, X.indices, X.data, Y.indptr, Y.indices, Y.data, idx, a, b, d2,
                       np.zeros(Y.shape[1]))

        run_shares(share, X.shape[0], 256)
        return d2

    def _brute(self, X, k: int):
        """Exact (dist, idx) of the k nearest reference rows of a few prepared sparse rows X
        (Euclidean; on unit rows for cosine): a dense block of products screens candidates, whose
        distances are then recomputed from the sparse differences (blocks of at most 4 million
        products)."""
        Y = self.Y
        step = max(1, 4_000_000 // max(1, Y.shape[0]))
        if X.shape[0] > step:
            parts = [self._brute(X[a:a + step], k) for a in range(0, X.shape[0], step)]
            return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])
        x_sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        y_sq = np.asarray(Y.multiply(Y).sum(axis=1)).ravel()
        D2 = x_sq[:, None] + y_sq[None, :] - 2.0 * (Y @ X.T.toarray()).T
        kk = min(Y.shape[0], k + k // 8 + 4)
        cand = np.argpartition(D2, kk - 1, axis=1)[:, :kk] if kk < Y.shape[0] else np.argsort(D2, axis=1)
        dist = np.sqrt(self._squared_distances(X, cand))
        order = np.lexsort((cand, dist), axis=1)[:, :k]
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(cand, order, axis=1)
