"""Hierarchical clustering: divisive (seed 000 "Hierarchical Clustering") and agglomerative.

Divisive (top-down), as in the seed: split the data in two with 2-means, then recursively split
the parts; the part split next is the one whose split gains most, where the gain of splitting a
cluster is the decrease of the within-cluster inertia W it brings. Splitting stops when
``n_clusters`` clusters exist or when the best remaining gain is below the threshold.

Agglomerative (bottom-up), through :func:`scipy.cluster.hierarchy.linkage`: start from single
points and repeatedly merge the two closest clusters, with Ward's criterion (the merge that
increases W least), average, complete or single linkage.

Agglomerative clustering also takes a precomputed distance matrix (``metric="precomputed"``;
average, complete or single linkage): new points then arrive as their distances to the training
points and join the cluster at the smallest linkage distance (mean, largest or smallest distance
to its members).

The tree is cut as scikit-learn's AgglomerativeClustering cuts it: with ``distance_threshold``
only merges strictly below the threshold are made (a merge at exactly the threshold is not), and
``n_clusters`` undoes the last merges in merge order, so ties of heights still give exactly
``n_clusters`` clusters.

Both give a scipy-format linkage matrix for a dendrogram. Heights are comparable between
Ward and divisive: Ward's merge height is sqrt(2 ΔW) with ΔW the increase of W, and a divisive
split with gain G is drawn at height sqrt(2 G) (raised, where a later split gains more, to that
split's height, so that the tree is monotone; such splits then share a height).
"""
from __future__ import annotations

import heapq
import math

import numpy as np
from scipy import sparse

from manifold_studio.algorithms import Choice, ClusteringAlgorithm, Float
from manifold_studio.algorithms.params import n_clusters_param, n_init_param, random_state_param
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.ward_chain import CENTROID_MAX_FEATURES, ward_linkage
from manifold_studio.algorithms.row_keys import match_rows, row_keys
from manifold_studio.algorithms.kmeans_core import assign_nearest, count_distinct_rows, kmeans
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

AGGLOMERATIVE = ("ward", "average", "complete", "single")
#: largest condensed distance matrix (in bytes) agglomerative clustering may allocate
MAX_PDIST_BYTES = 4 * 1024 ** 3


class _Node:
    __slots__ = ("indices", "size", "split", "gain", "height")

    def __init__(self, indices):
        self.indices = indices
        self.size = int(indices.shape[0])
        self.split = None      # (left_indices, right_indices) of the best 2-means split
        self.gain = 0.0
        self.height = 0.0


def divisive_tree(X, *, n_clusters=None, distance_threshold=None, n_init=3, random_state=None,
                  progress=None):
    """Top-down bisecting 2-means clustering.

    Returns (labels, linkage) where ``linkage`` is a valid, monotone scipy linkage matrix whose
    leaves are the final clusters (leaf j = cluster j; column 3 counts leaf clusters, as scipy
    requires; the numbers of points are the cluster sizes).
    """
    n = X.shape[0]
    rng = check_random_state(random_state)
    target = n_clusters if n_clusters is not None else n
    max_splits = max(target - 1, 0)

    def evaluate(node):
        if node.size < 2:
            return
        Xs = X[node.indices]
        dev = Xs - Xs.mean(axis=0)
        w = float(np.einsum("ij,ij->", dev, dev))
        if w <= 0.0:
            return
        try:
            res = kmeans(Xs, 2, n_init=n_init, random_state=rng)
        except DataError:  # a single distinct point: cannot be split
            return
        node.split = (node.indices[res.labels == 0], node.indices[res.labels == 1])
        node.gain = max(w - res.inertia, 0.0)

    root = _Node(np.arange(n))
    nodes = [root]
    leaves = {0}
    splits = []           # (parent, left, right) node ids in split order
    heap = []
    if max_splits > 0:
        evaluate(root)
        if root.split is not None:
            heapq.heappush(heap, (-root.gain, 0))
    while len(splits) < max_splits and heap:
        if progress is not None:
            progress.checkpoint(len(splits) / max(max_splits, 1) if n_clusters is not None else 0.0,
                                f"Divisive clustering: {len(leaves)} clusters")
        neg_gain, pid = heapq.heappop(heap)
        height = math.sqrt(2.0 * -neg_gain)
        if distance_threshold is not None and height < distance_threshold:
            break
        parent = nodes[pid]
        parent.height = height
        child_ids = []
        for part in parent.split:
            child = _Node(part)
            nodes.append(child)
            cid = len(nodes) - 1
            child_ids.append(cid)
            leaves.add(cid)
            if len(splits) + 1 < max_splits:
                evaluate(child)
                if child.split is not None:
                    heapq.heappush(heap, (-child.gain, cid))
        leaves.discard(pid)
        parent.split = None
        splits.append((pid, child_ids[0], child_ids[1]))
    if n_clusters is not None and len(leaves) < n_clusters and distance_threshold is None:
        m = count_distinct_rows(X)
        raise DataError(f"Cannot form n_clusters={n_clusters} clusters: the data have only {m} distinct "
                        f"point(s) (out of {n} samples). Choose n_clusters <= {m}.")
    # leaves in creation order -> cluster labels 0..K-1
    leaf_order = sorted(leaves)
    leaf_label = {nid: j for j, nid in enumerate(leaf_order)}
    labels = np.empty(n, dtype=np.intp)
    for nid in leaf_order:  # loop over clusters
        labels[nodes[nid].indices] = leaf_label[nid]
    linkage = _linkage_from_splits(splits, nodes, leaf_label)
    return labels, linkage


def _linkage_from_splits(splits, nodes, leaf_label):
    """Linkage over the leaf clusters: the last split is the first merge.

    A split is drawn at the height sqrt(2·gain) of its own gain or, when a later split gains
    more, at that later split's height (running maximum from the last split backwards): the
    heights then never decrease from the leaves to the root, and cutting the dendrogram at a
    height reproduces the partition reached when the split order passes that height.
    """
    K = len(leaf_label)
    ids = dict(leaf_label)
    n_leaves = {nid: 1 for nid in leaf_label}
    rows = []
    running = 0.0
    for pid, left, right in reversed(splits):
        running = max(running, nodes[pid].height)
        n_leaves[pid] = n_leaves[left] + n_leaves[right]
        rows.append([ids[left], ids[right], running, n_leaves[pid]])
        ids[pid] = K + len(rows) - 1
    return np.asarray(rows, dtype=float).reshape(-1, 4)


def agglomerative_linkage(X, method: str, metric: str = "euclidean") -> np.ndarray:
    """scipy linkage of the rows of X (Euclidean), or of the precomputed distance matrix X
    (``metric="precomputed"``), with a clear error when it would not fit in memory."""
    n = X.shape[0]
    need = n * (n - 1) // 2 * 8
    if need > MAX_PDIST_BYTES:
        raise DataError(f"Agglomerative clustering of {n:,} points needs {need / 1024 ** 3:.1f} GB for the "
                        f"pairwise distances (limit {MAX_PDIST_BYTES / 1024 ** 3:.0f} GB): use "
                        "method='divisive', or fit on a sample and extend to the rest.")
    from scipy.cluster import hierarchy  # lazy: kept off the start-up
    from scipy.spatial.distance import squareform

    if metric == "precomputed":
        return hierarchy.linkage(squareform(X, checks=False), method=method)
    if method == "ward" and X.shape[1] <= CENTROID_MAX_FEATURES:
        Z = ward_linkage(X)   # scipy's merges without the distance matrix (None: near-ties)
        if Z is not None:
            return Z
    return hierarchy.linkage(X, method=method, metric="euclidean")


def cut_by_merges(Z: np.ndarray, n_clusters: int) -> np.ndarray:
    """Labels 0..n_clusters−1 after the first n − n_clusters merges of the linkage Z (scikit-learn's
    cut: the last merges are undone in merge order, so tied heights still give n_clusters clusters).
    Labels are numbered in the order of each cluster's first point."""
    n = Z.shape[0] + 1
    m = n - n_clusters
    children = Z[:m, :2].astype(np.intp)
    parents = n + np.arange(m)
    graph = sparse.coo_matrix((np.ones(2 * m), (np.concatenate([children[:, 0], children[:, 1]]),
                                                 np.concatenate([parents, parents]))), shape=(n + m, n + m))
    from scipy.sparse.csgraph import connected_components   # here: the window starts without csgraph

    _, comp = connected_components(graph, directed=False)
    _, first, labels = np.unique(comp[:n], return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[labels.reshape(-1)]


def check_distance_matrix(D: np.ndarray) -> None:
    """A precomputed distance matrix: square, symmetric, non-negative (DataError otherwise)."""
    if D.shape[0] != D.shape[1]:
        raise DataError(f"metric='precomputed' needs the square (n, n) matrix of distances between the "
                        f"training points; got shape {D.shape}.")
    if (D < 0).any():
        raise DataError("Negative values in data passed to hierarchical clustering with metric='precomputed': "
                        "distances must be >= 0.")
    scale = float(np.abs(D).max()) or 1.0
    if not np.allclose(D, D.T, rtol=0.0, atol=1e-10 * scale):
        raise DataError("metric='precomputed': the distance matrix is not symmetric (D[i, j] != D[j, i]).")


class HierarchicalClustering(ClusteringAlgorithm):
    """Hierarchical clustering, divisive (bisecting 2-means) or agglomerative.

    Parameters
    ----------
    n_clusters : int or None
        Number of clusters wanted (None: decided by ``distance_threshold`` alone).
    method : {"divisive", "ward", "average", "complete", "single"}
        "divisive": top-down splits with 2-means (seed 000); the others: bottom-up merges.
    distance_threshold : float or None
        Height at which the tree is cut, as scikit-learn: clusters are merged only below it (a
        merge at exactly the threshold is not made; agglomerative), and a split is made when its
        height sqrt(2·gain) reaches it, i.e. when it reduces the within-cluster inertia by at
        least distance_threshold²/2 (divisive). When both are given the partition has at most
        ``n_clusters`` clusters (scikit-learn refuses giving both).
    metric : {"euclidean", "precomputed"}
        "precomputed": X is the (n, n) matrix of distances between the training points (average,
        complete or single linkage), and new points are given as their (m, n) distances to the
        training points; they join the cluster at the smallest linkage distance.
    n_init : int
        Runs of each 2-means split (divisive only).
    random_state : int or None
        Seed of the 2-means splits (divisive only).

    Attributes
    ----------
    labels_ : (n,) cluster of each training point; n_clusters_ : number of clusters.
    cluster_centers_ : (K, d) centroids (used by ``extend``: nearest centroid); not with
        ``metric="precomputed"``, where ``extend`` uses the linkage distance to the clusters.
    linkage_matrix_ : scipy-format linkage for a dendrogram. Agglomerative: the n training points
        are the leaves. Divisive: the K clusters are the leaves (leaf j = cluster j, column 3
        counts leaf clusters; ``cluster_sizes_`` gives their points), so
        ``fcluster(linkage_matrix_, t, ...)[labels_]`` merges clusters.
    cluster_sizes_ : (K,) number of training points in each cluster.
    linkage_leaves_ : "points" or "clusters", what the leaves of ``linkage_matrix_`` are.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("hierarchical", n_clusters=3, method="ward").fit(X)
    >>> est.labels_.shape
    (150,)
    >>> len(set(est.labels_.tolist()))
    3
    >>> est.extend(X[:5]).shape
    (5,)
    """

    id = "hierarchical"
    holds_gil = True  # scipy's linkage and pdist hold the GIL (22 s at 20,000 points): the window fits it in a separate process
    name = "Hierarchical clustering"
    help = ("Builds a tree of nested clusters shown as a dendrogram and cuts it into clusters. "
            "Divisive: split the data in two with 2-means, then keep splitting the part whose split "
            "reduces the within-cluster inertia most, until the wanted number of clusters is "
            "reached or the gain of a split falls below the threshold. Agglomerative: start from "
            "single points and repeatedly merge the two closest clusters (Ward: the merge that "
            "increases the inertia least; average, complete or single linkage: mean, largest or "
            "smallest distance between their points). New points go to the nearest cluster centroid.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "cluster_centers_": Fitted(shape=("n_clusters_", "n_features_in_"), required=True),
        "cluster_sizes_": Fitted(shape=("n_clusters_",), kinds="iu"),
        "linkage_matrix_": Fitted(shape=(None, 4)),
        "labels_": Fitted(shape=(None,), kinds="iu"),
        # a key per training row: a new point identical to a training point gets its cluster
        "row_keys_": Fitted(shape=(None,), kinds="u"),
    }

    #: on a distance matrix (metric='precomputed') Ward's inertia has no meaning: average linkage
    distance_defaults = {"method": "average"}
    params = (
        n_clusters_param(3, "Number of clusters (empty: decided by the distance threshold alone).",
                         allow_none=True),
        Choice("method", "ward",
               "'divisive': top-down splits with 2-means; 'ward', 'average', 'complete', 'single': "
               "bottom-up merges with that linkage criterion.",
               choices=("divisive",) + AGGLOMERATIVE),
        Float("distance_threshold", None,
              "Cut height of the tree, as scikit-learn: clusters are merged only below it (a merge at "
              "exactly this height is not made); for divisive a split is made when sqrt(2 x its "
              "inertia gain) reaches it. With n_clusters also set, at most n_clusters clusters are "
              "formed.", low=0.0, allow_none=True),
        Choice("metric", "euclidean",
               "'euclidean': X holds coordinates; 'precomputed': X is the (n, n) matrix of distances "
               "between the points (average, complete or single linkage), and new points come as "
               "their distances to the training points.", choices=("euclidean", "precomputed")),
        n_init_param(3, "Runs of each 2-means split, the best is kept (divisive only)."),
        random_state_param("Seed of the 2-means splits (divisive only; empty: random)."),
    )

    def _fit(self, X, y, progress):
        p = self._p
        k, method, threshold = p["n_clusters"], p["method"], p["distance_threshold"]
        n = X.shape[0]
        if k is None and threshold is None:
            raise InvalidParameterError("Give n_clusters or distance_threshold (parameter 'n_clusters' "
                                        "is empty and so is 'distance_threshold').")
        if k is not None and k > n:
            raise DataError(f"Cannot form n_clusters={k} clusters from {n} samples: choose n_clusters <= {n}.")
        precomputed = p["metric"] == "precomputed"
        if precomputed:
            if method in ("ward", "divisive"):
                raise InvalidParameterError(
                    f"method='{method}' needs coordinates (it minimises the within-cluster inertia), not "
                    "the precomputed distances of metric='precomputed': use method 'average', "
                    "'complete' or 'single'.")
            check_distance_matrix(X)
        progress.checkpoint(0.0, f"Hierarchical clustering ({method})")
        if method == "divisive":
            labels, Z = divisive_tree(X, n_clusters=k, distance_threshold=threshold, n_init=p["n_init"],
                                      random_state=p["random_state"], progress=progress)
            self.linkage_leaves_ = "clusters"
        else:
            if k is not None and k > 1:
                m = _count_distinct_points(X, precomputed)
                if m < k:
                    raise DataError(f"Cannot form n_clusters={k} clusters: the data have only {m} distinct "
                                    f"point(s) (out of {n} samples). Choose n_clusters <= {m}.")
            progress.checkpoint(0.05, f"{method.capitalize()} linkage of {n:,} points")
            Z = agglomerative_linkage(X, method, p["metric"])
            progress.checkpoint(0.9, "Cutting the tree")
            # scikit-learn: only merges strictly below the threshold are made
            n_cut = n if threshold is None else 1 + int(np.count_nonzero(Z[:, 2] >= threshold))
            n_final = min(n_cut, k) if k is not None else n_cut
            labels = cut_by_merges(Z, n_final)
            self.linkage_leaves_ = "points"
        self.labels_ = labels
        self.linkage_matrix_ = Z
        K = int(labels.max()) + 1
        self.n_clusters_ = K
        counts = np.bincount(labels, minlength=K).astype(float)
        self.cluster_sizes_ = counts.astype(np.int64)
        if precomputed:
            progress.checkpoint(1.0, f"{K} clusters")
            return
        self.row_keys_ = row_keys(X)
        sums = np.zeros((K, X.shape[1]))
        for j in range(X.shape[1]):  # loop over features
            sums[:, j] = np.bincount(labels, weights=X[:, j], minlength=K)
        self.cluster_centers_ = sums / counts[:, None]
        dev = X - self.cluster_centers_[labels]
        self.inertia_ = float(np.einsum("ij,ij->", dev, dev))
        progress.checkpoint(1.0, f"{K} clusters")

    def cut(self, *, n_clusters: int | None = None, height: float | None = None) -> np.ndarray:
        """The clusters of the training points when the fitted tree is cut again, without a refit:
        at ``height`` (as the dendrogram's cut line: ``fcluster(linkage_matrix_, height,
        "distance")``, clusters numbered in the order of their fcluster ids) or into
        ``n_clusters`` clusters (the last merges undone in merge order, as the fit cuts; clusters
        numbered in the order of their first point). Give exactly one. Returns (n,) labels
        0..K-1; the fitted state is not changed."""
        self.check_is_fitted("cut")
        if (n_clusters is None) == (height is None):
            raise InvalidParameterError("Cut the tree either into n_clusters clusters or at a height, "
                                        f"exactly one of them (got n_clusters={n_clusters!r}, height={height!r}).")
        Z = np.asarray(self.linkage_matrix_, dtype=float)
        labels = np.asarray(self.labels_, dtype=np.intp)
        n_leaves = Z.shape[0] + 1
        leaves = getattr(self, "linkage_leaves_", None) or ("points" if n_leaves == labels.size else "clusters")
        if height is not None:
            height = float(height)
            if not np.isfinite(height) or height < 0:
                raise InvalidParameterError(f"A cut height must be a finite number >= 0, not {height!r}.")
            from scipy.cluster import hierarchy

            _, codes = np.unique(hierarchy.fcluster(Z, height, criterion="distance"), return_inverse=True)
            codes = codes.ravel().astype(np.intp)
        else:
            if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) \
                    or not 1 <= n_clusters <= n_leaves:
                raise InvalidParameterError(f"n_clusters of a cut must be an integer between 1 and {n_leaves} "
                                            f"(the leaves of the tree), not {n_clusters!r}.")
            codes = cut_by_merges(Z, int(n_clusters))
        return codes[labels] if leaves == "clusters" else codes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"   # X is the (n, n) matrix of the training points
        tags.input_tags.positive_only = self.metric == "precomputed"
        return tags

    def training_rows(self, X) -> np.ndarray:
        """For each row of ``X``, the index of the identical training row, else -1 (a "new"
        point identical to a training point is that point, as the thesis' section 5.1 reads it)."""
        self.check_is_fitted("training_rows")
        keys = getattr(self, "row_keys_", None)
        if keys is None or self._p["metric"] == "precomputed":
            return np.full(np.asarray(X).shape[0], -1, dtype=np.intp)
        return match_rows(keys, X)

    def _extend(self, X):
        if self._p["metric"] != "precomputed":
            labels = assign_nearest(X, self.cluster_centers_)[0]
            # a training point keeps its own cluster (the nearest centre may be another's)
            same = self.training_rows(X)
            hit = same >= 0
            labels[hit] = np.asarray(self.labels_)[same[hit]]
            return labels
        # X: distances to the training points; the linkage distance to each cluster
        reduce = {"single": np.min, "complete": np.max, "average": np.mean}[self._p["method"]]
        link = np.column_stack([reduce(X[:, self.labels_ == c], axis=1) for c in range(self.n_clusters_)])
        return np.argmin(link, axis=1)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_clusters"] = self.n_clusters_
            if hasattr(self, "inertia_"):
                out["inertia"] = round(self.inertia_, 6)
            out["method"] = self.method
        return out


def _count_distinct_points(X, precomputed: bool) -> int:
    """Distinct points: distinct rows, or for a distance matrix the groups at distance 0."""
    if not precomputed:
        return count_distinct_rows(X)
    from scipy.sparse.csgraph import connected_components

    return connected_components(sparse.csr_matrix(X == 0), directed=False)[0]


@hookimpl
def register_algorithms():
    return [HierarchicalClustering]
