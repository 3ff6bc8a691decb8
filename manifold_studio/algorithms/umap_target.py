"""Supervised and semi-supervised UMAP: the fuzzy graph of the data combined with a target
(McInnes, Healy & Melville 2018, section on supervised UMAP; umap-learn's meanings and names).

* :func:`target_codes` — a categorical target as class codes, with ``-1`` (and missing values)
  meaning *unlabelled* (umap-learn's convention for semi-supervised UMAP); at least two classes
  among the labelled points.
* :func:`categorical_intersection` — an edge between two different classes is weakened by
  ``exp(-far_dist)``, one touching an unlabelled point by ``exp(-unknown_dist)`` (umap-learn:
  1, the same for every unlabelled point whatever its neighbour's class), then local
  connectivity is reset.
* :func:`general_intersection` — a numeric target: the data's graph and the target's own fuzzy
  graph combined edge by edge with ``target_weight`` (umap-learn's
  general_simplicial_set_intersection: an edge missing from one graph counts with half that
  graph's smallest membership).
* :func:`reset_local_connectivity` — rows rescaled to maximum 1, then the fuzzy union.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.labels import _missing_mask, class_label_vector
from manifold_studio.algorithms.umap_graph import fuzzy_union
from manifold_studio.errors import DataError

#: target metrics: a categorical target, or a numeric one under these distances
TARGET_METRICS = ("categorical", "euclidean", "manhattan")


def target_codes(y, n: int) -> np.ndarray:
    """Class codes 0..c-1 of a categorical target, -1 for unlabelled points (-1 or missing);
    DataError unless the labelled points hold at least two classes."""
    if y is None:
        raise DataError("Supervised UMAP (target_weight > 0) needs labels y (-1 for unlabelled points).")
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    arr = arr.ravel() if arr.ndim == 2 and 1 in arr.shape else arr
    missing = _missing_mask(arr) if arr.ndim == 1 else np.zeros(0, dtype=bool)
    if missing.any():          # missing labels are unlabelled points here, not an error
        arr = np.where(missing, -1, arr) if arr.dtype.kind in "iufb" else \
            np.asarray(["-1" if m else v for v, m in zip(arr, missing)], dtype=object)
    arr = class_label_vector(arr, n, "y")
    if arr.dtype.kind in "iufb":
        unlabelled = arr.astype(float) == -1
    else:
        arr = np.asarray([str(v) for v in arr], dtype=object)
        unlabelled = arr == "-1"
    codes = np.full(n, -1, dtype=np.intp)
    classes, inv = np.unique(arr[~unlabelled], return_inverse=True)
    if classes.size < 2:
        found = "no labelled point" if classes.size == 0 else f"a single class ('{classes[0]}')"
        raise DataError(f"Supervised UMAP (target_weight > 0) needs at least two classes among the "
                        f"labelled points, but y has {found} ({int(unlabelled.sum()):,} of {n:,} points "
                        "unlabelled, -1); give labels of two or more classes or set target_weight=0.")
    codes[~unlabelled] = inv.reshape(-1)
    return codes


def numeric_target(y, n: int) -> np.ndarray:
    """A numeric target as an (n, 1) or (n, t) float array (DataError for text or non-finite)."""
    try:
        arr = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise DataError("A numeric target (target_metric other than 'categorical') needs numbers in y; "
                        "use target_metric='categorical' for class labels.") from None
    arr = arr.reshape(n, -1) if arr.size == n or arr.ndim > 1 else arr
    if arr.shape[0] != n:
        raise DataError(f"y has {arr.shape[0]:,} values for {n:,} points.")
    if not np.isfinite(arr).all():
        raise DataError("A numeric target must be finite: y holds NaN or infinite values.")
    return arr.reshape(n, -1)


def reset_local_connectivity(G) -> sp.csr_matrix:
    """Each row divided by its largest membership, then the fuzzy union (umap-learn's
    reset_local_connectivity)."""
    G = sp.csr_matrix(G)
    G.eliminate_zeros()
    row_max = np.zeros(G.shape[0])
    nonempty = np.diff(G.indptr) > 0
    if G.nnz:
        row_max[nonempty] = np.maximum.reduceat(G.data, G.indptr[:-1][nonempty])
    scale = np.divide(1.0, row_max, out=np.zeros_like(row_max), where=row_max > 0)
    return fuzzy_union(sp.diags(scale) @ G)


def categorical_intersection(graph, labels: np.ndarray, far_dist: float,
                             unknown_dist: float = 1.0) -> sp.csr_matrix:
    """Edges between different labels times exp(-far_dist), edges touching an unlabelled point
    (-1) times exp(-unknown_dist); then local connectivity is reset."""
    G = sp.coo_matrix(graph, copy=True)
    li, lj = labels[G.row], labels[G.col]
    unknown = (li < 0) | (lj < 0)
    G.data[unknown] *= np.exp(-unknown_dist)
    G.data[~unknown & (li != lj)] *= np.exp(-far_dist)
    return reset_local_connectivity(G)


@jit(fastmath=False)
def _values_at(indptr, indices, data, rows, cols, missing, out):
    """out[e] = the CSR matrix's value at (rows[e], cols[e]), ``missing`` where none is stored
    (column indices sorted: binary search)."""
    for e in range(rows.shape[0]):
        i, j = rows[e], cols[e]
        lo, hi = indptr[i], indptr[i + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if indices[mid] < j:
                lo = mid + 1
            else:
                hi = mid
        out[e] = data[lo] if lo < indptr[i + 1] and indices[lo] == j else missing


def _mix(lv, rv, left_min, right_min, weight):
    """umap-learn's mixing of two memberships (0 where both are missing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = (lv * rv ** (weight / (1.0 - weight)) if weight < 0.5
                else lv ** ((1.0 - weight) / weight) * rv)
    return np.where((lv > left_min) | (rv > right_min), vals, 0.0)


def general_intersection(left, right, weight: float) -> sp.csr_matrix:
    """The data's graph ``left`` and the target's graph ``right`` combined on the union of their
    edges: ``l * r^(w / (1 - w))`` for w < 1/2, ``l^((1 - w) / w) * r`` otherwise, a missing edge
    counting as half its graph's smallest membership; then local connectivity is reset."""
    L, R = sp.csr_matrix(left), sp.csr_matrix(right)
    L.sort_indices()
    R.sort_indices()
    U = (L + R).tocoo()
    left_min = max(float(L.data.min()) / 2.0, 1e-8) if L.nnz else 1e-8
    right_min = min(max(float(R.data.min()) / 2.0, 1e-8), 1e-4) if R.nnz else 1e-8
    rows, cols = U.row.astype(np.intp), U.col.astype(np.intp)
    lv, rv = np.empty(U.nnz), np.empty(U.nnz)
    _values_at(L.indptr, L.indices, L.data.astype(float), rows, cols, left_min, lv)
    _values_at(R.indptr, R.indices, R.data.astype(float), rows, cols, right_min, rv)
    vals = _mix(lv, rv, left_min, right_min, float(weight))
    out = sp.csr_matrix((vals, (rows, cols)), shape=L.shape)
    return reset_local_connectivity(out)
