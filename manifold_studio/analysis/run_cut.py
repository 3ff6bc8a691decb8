"""A dendrogram cut is run state (Qt-free): what the exported script and replay need to repeat it.

The window's dendrogram sets ``run.cut_labels`` (the clusters of the cut, no refit) and
``run.meta["cut"]`` (``height``, ``n_clusters``, ``note``). The fitted estimator repeats the cut
with its ``cut(n_clusters=..., height=...)`` method (the built-in hierarchical clustering has
one), from its fitted linkage:

- :func:`cut_arguments` — ``{"height": h}`` or ``{"n_clusters": k}`` from the run's record;
- :func:`extend_cut` — the cut's clusters for new points: a row identical to a training row
  keeps that row's cluster of the cut (so replaying the training file gives the cut exactly);
  any other joins the cut cluster whose training points are nearest as the clustering's own
  extension measures it (the centroid in the space the clustering was fitted in, after the
  preparation chain; with ``metric="precomputed"`` the linkage distance to the cluster's points).
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.kmeans_core import assign_nearest

__all__ = ["cut_arguments", "extend_cut"]


def cut_arguments(run) -> dict | None:
    """How to repeat ``run``'s dendrogram cut with its estimator's ``cut``: ``{"height": h}``
    (preferred: the cut line the user placed) or ``{"n_clusters": k}``; None when the run has no
    cut or its record does not say how it was made."""
    cut = run.meta.get("cut") if isinstance(run.meta, dict) else None
    if run.cut_labels is None or not isinstance(cut, dict):
        return None
    height, k = cut.get("height"), cut.get("n_clusters")
    if isinstance(height, (int, float)) and not isinstance(height, bool) and math.isfinite(height) and height >= 0:
        return {"height": float(height)}
    if isinstance(k, int) and not isinstance(k, bool) and k >= 1:
        return {"n_clusters": int(k)}
    return None


def extend_cut(run, train_X, new_X) -> np.ndarray | None:
    """The clusters of ``run``'s dendrogram cut for the rows of ``new_X`` (what its model is
    applied to: a matrix, or the data set for a fitted pipeline), given ``train_X``, the matrix
    it was fitted on. None when the run has no cut its estimator can repeat."""
    args = cut_arguments(run)
    est = run.estimator
    final = getattr(est, "final", None) or est
    if args is None or not callable(getattr(final, "cut", None)):
        return None
    labels = np.asarray(final.cut(**args))
    prepare = est.prepare if final is not est else np.asarray
    train, new = np.asarray(prepare(train_X), dtype=float), prepare(new_X)
    k = int(labels.max()) + 1
    if getattr(final, "metric", None) == "precomputed":  # new rows are distances to the training points
        reduce = {"single": np.min, "complete": np.max}.get(getattr(final, "method", ""), np.mean)
        new = np.asarray(new, dtype=float)
        return np.argmin(np.column_stack([reduce(new[:, labels == c], axis=1) for c in range(k)]), axis=1)
    centres = np.stack([train[labels == c].mean(axis=0) for c in range(k)])
    out = assign_nearest(new, centres)[0]
    same = final.training_rows(new) if callable(getattr(final, "training_rows", None)) else None
    if same is not None:   # a training row keeps its cluster of the cut
        hit = same >= 0
        out[hit] = labels[same[hit]]
    return out
