"""Qt-free tasks behind the clustering views (run on a worker thread by the GUI).

Nothing here imports Qt: every function is a plain callable taking ``progress=`` (an object
with ``checkpoint(fraction, message)``, or None) so that :meth:`MainWindow.start_job` can run
it with progress and cancel, and a test or a script can call it directly.

- :func:`map_centres` — where to draw cluster centres on a map: the centres of a clustering
  fitted on that map, the raw-data centres projected with the map run's ``extend``, or the
  mean of each cluster's map coordinates;
- :func:`silhouette_task` — per-point silhouettes (on a random subsample of large data);
- :func:`contingency_task` — clusters against the data labels, with the adjusted Rand index;
- :func:`dendrogram_task` — dendrogram coordinates of a linkage matrix (scipy, ``no_plot``);
- :func:`cut_labels` / :func:`n_clusters_at` — cutting a linkage at a height (fcluster).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.analysis.metrics import (
    adjusted_rand_index,
    contingency_table,
    silhouette_samples,
)
from manifold_studio.errors import DataError, error_message
from manifold_studio.analysis.map_coords import as_map_xy

__all__ = ["CentresResult", "SilhouetteResult", "ContingencyResult", "DendrogramResult",
           "estimator_centres", "group_means", "map_centres", "silhouette_task", "contingency_task",
           "dendrogram_task", "cut_labels", "n_clusters_at", "SILHOUETTE_MAX_POINTS"]

#: the silhouette view computes on at most this many points (O(n²) work), drawn at random
SILHOUETTE_MAX_POINTS = 5000
#: dendrograms with more leaves are truncated to this many (scipy's "lastp")
DENDROGRAM_MAX_LEAVES = 80

PROJECTED, MEAN = "projected", "mean"


@dataclass
class CentresResult:
    labels: np.ndarray    #: (K,) cluster label of each centre
    xy: np.ndarray        #: (K, 2) centre positions in map coordinates
    how: str              #: PROJECTED, MEAN or "fitted" (the clustering was fitted on the map)
    note: str = ""        #: a sentence for the user


@dataclass
class SilhouetteResult:
    values: np.ndarray    #: (m,) silhouette of each point computed
    labels: np.ndarray    #: (m,) its cluster
    index: np.ndarray     #: (m,) its position among the run's points
    mean: float           #: mean silhouette of those points
    n_total: int          #: number of points of the run


@dataclass
class ContingencyResult:
    clusters: np.ndarray  #: row labels (clusters)
    classes: np.ndarray   #: column labels (data labels)
    counts: np.ndarray    #: (K, C) counts
    ari: float            #: adjusted Rand index


@dataclass
class DendrogramResult:
    icoord: np.ndarray    #: (m, 4) x of each U link
    dcoord: np.ndarray    #: (m, 4) y (heights)
    leaf_text: list = field(default_factory=list)  #: text of each leaf, left to right
    n_leaves: int = 0     #: leaves drawn
    truncated: bool = False
    max_height: float = 0.0


def estimator_centres(estimator) -> np.ndarray | None:
    """The (K, d) centres a fitted clustering estimator exposes (k-means, hierarchical:
    ``cluster_centers_``; Gaussian mixture: ``means_``), or None."""
    for name in ("cluster_centers_", "means_"):
        c = getattr(estimator, name, None)
        if c is not None:
            c = np.asarray(c, dtype=float)
            if c.ndim == 2 and c.shape[0] > 0:
                return c
    return None


def group_means(values, labels):
    """(distinct labels (K,), (K, d) mean of ``values`` per label) — bincount, no Python loop
    over points."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    uniq, codes = np.unique(np.asarray(labels), return_inverse=True)
    codes = codes.ravel()
    counts = np.bincount(codes, minlength=len(uniq)).astype(float)
    sums = np.stack([np.bincount(codes, weights=values[:, j], minlength=len(uniq))
                     for j in range(values.shape[1])], axis=1)
    return uniq, sums / counts[:, None]


def map_centres(labels, map_xy, *, mode: str = PROJECTED, centres=None, centre_labels=None,
                raw_X=None, extend=None, map_name: str = "the map", progress=None) -> CentresResult:
    """Cluster centres in map coordinates.

    Parameters
    ----------
    labels : (n,) cluster of each point drawn on the map.
    map_xy : (n, >=1) the map coordinates of those points.
    mode : PROJECTED — project data-space centres with ``extend`` (the map run's out-of-sample
        extension); the centres are ``centres`` (labelled ``centre_labels``, default 0..K-1) or,
        when None, the centroids of ``raw_X`` per cluster. Falls back to MEAN when there is no
        ``extend`` or it fails. MEAN — the mean of each cluster's map coordinates.
    """
    progress = as_progress(progress)
    labels = np.asarray(labels)
    if len(labels) != len(map_xy):
        raise DataError(f"{len(labels)} cluster labels for {len(map_xy)} map points.")
    note = ""
    if mode == PROJECTED and extend is not None:
        progress.checkpoint(0.1, "Projecting the cluster centres onto the map")
        try:
            if centres is None:
                if raw_X is None:
                    raise DataError("no data to compute the centres from")
                c_labels, centres = group_means(raw_X, labels)
            else:
                centres = np.asarray(centres, dtype=float)
                c_labels = (np.arange(centres.shape[0]) if centre_labels is None
                            else np.asarray(centre_labels))
            present = np.isin(c_labels, labels)  # a centre without points has no colour
            xy = as_map_xy(np.asarray(extend(centres[present])))
            progress.checkpoint(1.0, "Centres projected")
            return CentresResult(c_labels[present], xy, PROJECTED,
                                 f"centres projected onto {map_name} by its extension")
        except Exception as exc:  # noqa: BLE001 - fall back to the mean, and say why
            note = f" (projection failed: {error_message(exc)})"
    uniq, means = group_means(as_map_xy(map_xy), labels)
    progress.checkpoint(1.0, "Centres computed")
    return CentresResult(uniq, means, MEAN, f"centres = mean map position of each cluster{note}")


def silhouette_task(X, labels, *, max_points: int = SILHOUETTE_MAX_POINTS, random_state=0,
                    progress=None) -> SilhouetteResult:
    """Silhouettes of the points (of at most ``max_points`` of them, drawn at random)."""
    X = np.asarray(X, dtype=float)
    labels = np.asarray(labels)
    n = X.shape[0]
    if labels.shape[0] != n:
        raise DataError(f"{labels.shape[0]} cluster labels for {n} points.")
    if n > max_points:
        index = np.sort(np.random.default_rng(random_state).choice(n, max_points, replace=False))
    else:
        index = np.arange(n)
    values = silhouette_samples(X[index], labels[index], progress=progress)
    return SilhouetteResult(np.asarray(values, dtype=float), labels[index], index,
                            float(np.mean(values)), n)


def contingency_task(cluster_labels, data_labels, progress=None) -> ContingencyResult:
    """Contingency table of clusters (rows) against data labels (columns), and the ARI."""
    progress = as_progress(progress)
    progress.checkpoint(0.0, "Contingency table")
    table = contingency_table(cluster_labels, data_labels)
    ari = adjusted_rand_index(cluster_labels, data_labels)
    progress.checkpoint(1.0, "Contingency table done")
    return ContingencyResult(np.asarray(table.rows), np.asarray(table.cols),
                             np.asarray(table.table), float(ari))


def dendrogram_task(Z, *, leaves: str = "points", leaf_sizes=None,
                    max_leaves: int = DENDROGRAM_MAX_LEAVES, progress=None) -> DendrogramResult:
    """Coordinates of the dendrogram of linkage ``Z`` (scipy's ``dendrogram(no_plot=True)``),
    truncated to the last ``max_leaves`` merges when the tree is larger."""
    progress = as_progress(progress)
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2 or Z.shape[1] != 4 or Z.shape[0] == 0:
        raise DataError("The run has no linkage matrix with at least one merge to draw.")
    progress.checkpoint(0.1, "Dendrogram")
    n_leaves = Z.shape[0] + 1
    truncated = n_leaves > max_leaves
    kw = dict(no_plot=True, truncate_mode="lastp", p=max_leaves) if truncated else dict(no_plot=True)
    from scipy.cluster import hierarchy  # lazy: kept off the start-up
    d = hierarchy.dendrogram(Z, **kw)
    texts = []
    for leaf in d["leaves"]:
        if leaf >= n_leaves:  # a truncated subtree: scipy reports its node; show its size
            texts.append(f"({int(Z[leaf - n_leaves, 3])})")
        elif leaves == "clusters":
            size = "" if leaf_sizes is None else f" ({int(leaf_sizes[leaf])})"
            texts.append(f"c{leaf}{size}")
        else:
            texts.append(str(leaf))
    progress.checkpoint(1.0, "Dendrogram done")
    dcoord = np.asarray(d["dcoord"], dtype=float)
    return DendrogramResult(np.asarray(d["icoord"], dtype=float), dcoord, texts, len(d["leaves"]),
                            truncated, float(Z[:, 2].max()))


def n_clusters_at(Z, height: float) -> int:
    """Number of clusters a cut of linkage ``Z`` at ``height`` gives (merges above it + 1)."""
    Z = np.asarray(Z, dtype=float)
    from scipy.cluster import hierarchy
    return int(np.unique(hierarchy.fcluster(Z, height, criterion="distance")).size)


def cut_labels(Z, height: float, *, leaves: str = "points", leaf_labels=None) -> np.ndarray:
    """Cluster of every point when linkage ``Z`` is cut at ``height`` (fcluster, criterion
    "distance"), numbered 0..K-1. ``leaves="clusters"`` (divisive trees): the leaves are
    clusters and ``leaf_labels`` (the run's labels) maps points to them."""
    from scipy.cluster import hierarchy
    raw = hierarchy.fcluster(np.asarray(Z, dtype=float), height, criterion="distance")
    _, codes = np.unique(raw, return_inverse=True)
    codes = codes.ravel().astype(np.intp)
    if leaves == "clusters":
        if leaf_labels is None:
            raise DataError("A tree of clusters needs the run's labels to cut it.")
        return codes[np.asarray(leaf_labels)]
    return codes
