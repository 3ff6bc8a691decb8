"""Metrics of the neighbour layer (:mod:`manifold_studio.algorithms.neighbors`), shared by its
exact and approximate indexes: the metric names, unit rows for 'cosine', checks of precomputed
distances, recognition of query rows equal to a fitted point, and a small brute-force search."""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from manifold_studio.errors import DataError, InvalidParameterError

#: query rows per chunk for searches (progress and cancel between chunks)
TREE_CHUNK = 8192
#: distances the neighbour methods accept
METRICS = ("euclidean", "cosine", "manhattan", "precomputed")


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise InvalidParameterError(f"metric={metric!r} is not known to the neighbour search; use one "
                                    f"of {', '.join(repr(m) for m in METRICS)}.")
    return metric


def unit_rows(X: np.ndarray, what: str = "data") -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", X, X))
    zero = norm == 0
    if zero.any():
        raise DataError(f"metric='cosine' needs rows of non-zero length, but {int(zero.sum())} row(s) of "
                        f"the {what} (e.g. row {int(np.flatnonzero(zero)[0])}) are all zeros; their "
                        "cosine distance is undefined. Remove them or use metric='euclidean'.")
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


def exact_hits(index, X: np.ndarray, d1: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """For an index's ``match``: the nearest reference row found, i1, where it equals the
    (prepared) query row (BLAS distances of equal rows are rounding-size, not 0: the rows
    themselves are compared; 'precomputed': at distance 0), -1 elsewhere."""
    if index.metric == "precomputed":
        return np.where(d1 <= 0.0, i1, -1)
    return np.where(np.all(index.Y[i1] == X, axis=1), i1, -1)




def brute_knn(Y: np.ndarray, X: np.ndarray, k: int, metric: str):
    """Exact (dist, idx) of the k nearest rows of Y for each row of X by full distance rows
    (``metric`` 'euclidean' or 'manhattan'; for a few hundred query rows)."""
    D = cdist(X, Y, "cityblock" if metric == "manhattan" else "euclidean")
    part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < Y.shape[0] else np.argsort(D, axis=1)
    dk = np.take_along_axis(D, part, axis=1)
    order = np.lexsort((part, dk), axis=1)
    return np.take_along_axis(dk, order, axis=1), np.take_along_axis(part, order, axis=1)
