"""densMAP (Narayan, Berger & Cho 2021), UMAP's density-preserving variant, as umap-learn: the
data's local radius of each point, ``ro_i = log(sum_j mu_ij d_ij^2 / sum_j mu_ij)`` over the
edges of the fuzzy graph (memberships ``mu``, distances in the data's metric), standardised to
``R``. The SGD (:func:`manifold_studio.algorithms.umap_layout.optimize_layout` with
``densmap=``) then adds, over the last ``dens_frac`` of the epochs, ``dens_lambda`` times the
gradient of the correlation between the map's log local radii and ``R``."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbor_metrics import unit_rows
from manifold_studio.algorithms.umap_graph import _METRIC_CODE, _row_distances
from manifold_studio.algorithms.neighbors_sparse import as_csr, pair_distances, sparse_unit_rows

__all__ = ["edge_distances", "original_radii", "log_radii"]


def edge_distances(X, rows: np.ndarray, cols: np.ndarray, metric: str) -> np.ndarray:
    """Distances between the points of each pair (rows[p], cols[p]) under ``metric``
    ('precomputed': X is the distance matrix)."""
    if metric == "precomputed":
        return np.asarray(X[rows, cols], dtype=float).ravel()
    if sp.issparse(X):
        Xc = as_csr(X)
        if metric == "cosine":
            Xc = sparse_unit_rows(Xc)
        d2 = pair_distances(Xc, Xc, rows, cols)
        return 0.5 * d2 if metric == "cosine" else np.sqrt(d2)
    X = np.ascontiguousarray(X, dtype=float)
    if metric == "cosine":
        X = unit_rows(X)
    # feature by feature in order, as the sparse differences: the same sums for sparse X and its
    # dense copy
    out = np.empty((rows.size, 1))
    step = max(1, 2_000_000 // max(X.shape[1], 1))
    for a in range(0, rows.size, step):
        _row_distances(X[rows[a:a + step]], X, cols[a:a + step, None], _METRIC_CODE[metric], out[a:a + step])
    return out.ravel()


def log_radii(n: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, d2: np.ndarray):
    """(log local radius of every point, sum of its edge weights) from the graph's edges with
    squared lengths ``d2`` (umap-learn's ``ro`` and ``mu_sum``)."""
    ro = np.bincount(rows, weights * d2, minlength=n) + np.bincount(cols, weights * d2, minlength=n)
    mu_sum = np.bincount(rows, weights, minlength=n) + np.bincount(cols, weights, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(1e-8 + ro / mu_sum), mu_sum


def original_radii(X, graph: sp.coo_matrix, metric: str):
    """``(R, mu_sum)`` for densMAP: the standardised log local radii of the data over the edges
    of ``graph`` (the pruned fuzzy graph the SGD samples) and each point's total membership."""
    rows, cols = graph.row.astype(np.intp), graph.col.astype(np.intp)
    d = edge_distances(X, rows, cols, metric)
    ro, mu_sum = log_radii(graph.shape[0], rows, cols, np.asarray(graph.data, float), d * d)
    std = float(np.std(ro))
    R = (ro - ro.mean()) / (std if std > 0 else 1.0)
    return R, mu_sum
