"""Hierarchical clustering: agglomerative equals scipy, divisive recovers separated blobs."""
import numpy as np
import pytest

from manifold_studio.algorithms.conformance import CancelAfter
from scipy.cluster import hierarchy
from sklearn.cluster import AgglomerativeClustering
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import manifold_studio as ms
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio_builtins.hierarchical import HierarchicalClustering


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(400, 3, centers=5, cluster_std=0.4, center_box=(-20, 20), random_state=4)


@pytest.mark.parametrize("method", ["ward", "average", "complete", "single"])
def test_agglomerative_linkage_equals_scipy(blobs, method):
    X, _ = blobs
    est = ms.get_algorithm("hierarchical", method=method, n_clusters=5).fit(X)
    Z = hierarchy.linkage(X, method=method)
    np.testing.assert_array_equal(est.linkage_matrix_, Z)
    assert est.linkage_leaves_ == "points"
    ref = hierarchy.fcluster(Z, 5, criterion="maxclust")
    assert adjusted_rand_score(ref, est.labels_) == 1.0
    assert est.n_clusters_ == 5


def test_ward_matches_sklearn_including_distance_threshold(blobs):
    X, _ = blobs
    est = HierarchicalClustering(method="ward", n_clusters=5).fit(X)
    ref = AgglomerativeClustering(n_clusters=5, linkage="ward").fit(X)
    assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0
    for t in (5.0, 30.0, 80.0):
        est = HierarchicalClustering(method="ward", n_clusters=None, distance_threshold=t).fit(X)
        ref = AgglomerativeClustering(n_clusters=None, distance_threshold=t, linkage="ward").fit(X)
        assert est.n_clusters_ == ref.n_clusters_
        assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0


def test_divisive_recovers_separated_blobs(blobs):
    X, y = blobs
    est = HierarchicalClustering(method="divisive", n_clusters=5, random_state=0).fit(X)
    assert adjusted_rand_score(y, est.labels_) == 1.0
    Z = est.linkage_matrix_
    assert est.linkage_leaves_ == "clusters" and Z.shape == (4, 4)
    assert hierarchy.is_valid_linkage(Z) and hierarchy.is_monotonic(Z)
    assert est.cluster_sizes_.sum() == X.shape[0]
    # cutting the dendrogram of the clusters at any height coarsens the partition consistently
    for t in np.unique(Z[:, 2]):
        coarse = hierarchy.fcluster(Z, t, criterion="distance")[est.labels_]
        assert np.unique(coarse).size == 1 + np.count_nonzero(Z[:, 2] > t)
        assert adjusted_rand_score(coarse, est.labels_) > 0 or np.unique(coarse).size == 1
    # seed 000's stopping rule: no split whose gain is below the threshold
    # a gain threshold (W of the whole partition) no split inside a blob can reach, far below
    # the gains of the 4 real splits
    assert 2 * est.inertia_ < Z[0, 2] ** 2 / 10
    by_gain = HierarchicalClustering(method="divisive", n_clusters=None,
                                     distance_threshold=np.sqrt(2 * est.inertia_), random_state=0).fit(X)
    assert by_gain.n_clusters_ == 5 and adjusted_rand_score(y, by_gain.labels_) == 1.0


def test_divisive_heights_are_ward_like_gains():
    # two points per side: splitting {a, b} | {c, d} gains W(all) - W(parts)
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    est = HierarchicalClustering(method="divisive", n_clusters=2, random_state=0).fit(X)
    w_all = np.sum((X - X.mean(0)) ** 2)
    gain = w_all - 2 * 0.5
    assert est.linkage_matrix_[0, 2] == pytest.approx(np.sqrt(2 * gain))
    assert est.inertia_ == pytest.approx(1.0)


def test_deep_divisive_tree_is_valid():
    X, _ = make_blobs(500, 2, centers=3, random_state=0)
    est = HierarchicalClustering(method="divisive", n_clusters=25, random_state=1).fit(X)
    assert est.n_clusters_ == 25
    assert hierarchy.is_valid_linkage(est.linkage_matrix_) and hierarchy.is_monotonic(est.linkage_matrix_)


@pytest.mark.parametrize("method", ["divisive", "ward"])
def test_extend_is_nearest_centroid_and_bad_input(blobs, method):
    X, _ = blobs
    est = HierarchicalClustering(method=method, n_clusters=5, random_state=0).fit(X)
    for j in range(5):
        np.testing.assert_allclose(est.cluster_centers_[j], X[est.labels_ == j].mean(0))
    X_new = X[:30] + 0.05
    brute = np.argmin(((X_new[:, None] - est.cluster_centers_[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(est.extend(X_new), brute)
    few = np.repeat(np.eye(2), 10, axis=0)
    with pytest.raises(DataError, match="only 2 distinct"):
        HierarchicalClustering(method=method, n_clusters=3).fit(few)
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        HierarchicalClustering(method=method, n_clusters=None).fit(X)


def test_cancel_divisive(blobs):
    X, _ = blobs

    with pytest.raises(FitCancelled):
        HierarchicalClustering(method="divisive", n_clusters=5).fit(X, progress=CancelAfter(2))
