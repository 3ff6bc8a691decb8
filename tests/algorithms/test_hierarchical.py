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


def test_ward_chain_merges_as_scipy_with_ties_duplicates_and_many_features():
    from manifold_studio.algorithms.ward_chain import CENTROID_MAX_FEATURES, ward_linkage

    rng = np.random.default_rng(0)
    grid = np.round(rng.uniform(0, 3, size=(300, 2)))       # many equal distances and duplicates
    assert ward_linkage(grid) is None                         # ties: rounding decides, so scipy's
    est = HierarchicalClustering(method="ward", n_clusters=4).fit(grid)
    np.testing.assert_array_equal(est.linkage_matrix_, hierarchy.linkage(grid, "ward"))
    wide = make_blobs(200, CENTROID_MAX_FEATURES, centers=4, random_state=1)[0]
    for X in (wide, rng.normal(size=(500, 3)), np.array([[0.0, 1.0], [2.0, 1.5]])):
        Z, ref = ward_linkage(X), hierarchy.linkage(X, "ward")
        np.testing.assert_array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]])
        np.testing.assert_allclose(Z[:, 2], ref[:, 2], rtol=1e-12, atol=1e-12)
    assert ward_linkage(np.zeros((1, 3))).shape == (0, 4)
    # more features: scipy's own chain, exactly
    X = make_blobs(60, CENTROID_MAX_FEATURES + 1, centers=3, random_state=2)[0]
    est = HierarchicalClustering(method="ward", n_clusters=3).fit(X)
    np.testing.assert_array_equal(est.linkage_matrix_, hierarchy.linkage(X, "ward"))


@pytest.mark.parametrize("method", ["ward", "average", "complete", "single"])
def test_agglomerative_linkage_equals_scipy(blobs, method):
    X, _ = blobs
    est = ms.get_algorithm("hierarchical", method=method, n_clusters=5).fit(X)
    Z = hierarchy.linkage(X, method=method)
    if method == "ward":   # the centroid chain (ward_chain): scipy's merges; heights to rounding
        np.testing.assert_array_equal(est.linkage_matrix_[:, [0, 1, 3]], Z[:, [0, 1, 3]])
        np.testing.assert_allclose(est.linkage_matrix_[:, 2], Z[:, 2], rtol=1e-12)
    else:
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


def _tie_data():
    rng = np.random.default_rng(0)
    return {"grid": np.array([[i, j] for i in range(5) for j in range(4)], dtype=float),   # many tied heights
            "integers": rng.integers(0, 4, size=(40, 2)).astype(float),
            "normal": rng.normal(size=(60, 3))}


def test_distance_threshold_tie_is_not_merged():
    # issue 22 B1: scikit-learn merges only strictly below the threshold
    est = HierarchicalClustering(n_clusters=None, distance_threshold=1.0, method="ward").fit([[0.0], [1.0]])
    ref = AgglomerativeClustering(n_clusters=None, distance_threshold=1.0, linkage="ward").fit([[0.0], [1.0]])
    assert est.n_clusters_ == ref.n_clusters_ == 2
    assert HierarchicalClustering(n_clusters=None, distance_threshold=1.0 + 1e-9,
                                  method="ward").fit([[0.0], [1.0]]).n_clusters_ == 1
    # divisive: a split whose height equals the threshold is made (sqrt(2 * gain) = 1 here)
    div = HierarchicalClustering(n_clusters=None, distance_threshold=1.0, method="divisive",
                                 random_state=0).fit([[0.0], [1.0]])
    assert div.n_clusters_ == 2


@pytest.mark.parametrize("method", ["ward", "average", "complete", "single"])
def test_cut_matches_sklearn_with_ties(method):
    for name, X in _tie_data().items():
        for t in (0.5, 1.0, 1.5, 2.0, 3.0):   # 1.0, 2.0, ... are exact merge heights of the grid
            est = HierarchicalClustering(method=method, n_clusters=None, distance_threshold=t).fit(X)
            ref = AgglomerativeClustering(n_clusters=None, distance_threshold=t, linkage=method).fit(X)
            assert est.n_clusters_ == ref.n_clusters_, (name, t)
            assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0, (name, t)
        for k in (2, 3, 5):   # n_clusters cuts in merge order: exactly k even when heights tie
            est = HierarchicalClustering(method=method, n_clusters=k).fit(X)
            ref = AgglomerativeClustering(n_clusters=k, linkage=method).fit(X)
            assert est.n_clusters_ == k
            assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0, (name, k)


@pytest.mark.parametrize("method", ["average", "complete", "single"])
def test_precomputed_distances_match_sklearn(blobs, method):
    from scipy.spatial.distance import cdist

    for name, X in {**_tie_data(), "blobs": blobs[0][:150]}.items():
        D = cdist(X, X)
        for kw in ({"n_clusters": 4}, {"n_clusters": None, "distance_threshold": 2.0}):
            est = HierarchicalClustering(method=method, metric="precomputed", **kw).fit(D)
            ref = AgglomerativeClustering(linkage=method, metric="precomputed", **kw).fit(D)
            assert est.n_clusters_ == ref.n_clusters_, (name, kw)
            assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0, (name, kw)
            assert not hasattr(est, "cluster_centers_")
    # extension: distances of new points to the training points; the linkage distance decides
    X = blobs[0][:150]
    est = HierarchicalClustering(method=method, metric="precomputed", n_clusters=5).fit(cdist(X, X))
    X_new = X[:20] + 0.3
    D_new = cdist(X_new, X)
    reduce = {"single": np.min, "complete": np.max, "average": np.mean}[method]
    brute = np.argmin([[reduce(row[est.labels_ == c]) for c in range(5)] for row in D_new], axis=1)
    np.testing.assert_array_equal(est.extend(D_new), brute)
    np.testing.assert_array_equal(est.extend(cdist(X, X)), est.labels_)   # training points keep their cluster
    assert all(est.extend(D_new[i:i + 1])[0] == est.extend(D_new)[i] for i in range(20))
    with pytest.raises(DataError, match="150 features"):
        est.extend(D_new[:, :10])


def test_precomputed_refusals(blobs):
    from scipy.spatial.distance import cdist

    X = blobs[0][:30]
    D = cdist(X, X)
    for method in ("ward", "divisive"):
        with pytest.raises(InvalidParameterError, match="needs coordinates.*'average', 'complete' or 'single'"):
            HierarchicalClustering(method=method, metric="precomputed").fit(D)
    with pytest.raises(DataError, match="square"):
        HierarchicalClustering(method="average", metric="precomputed").fit(D[:, :20])
    with pytest.raises(DataError, match="not symmetric"):
        HierarchicalClustering(method="average", metric="precomputed").fit(D + np.triu(np.ones_like(D)))
    with pytest.raises(DataError, match="Negative values"):
        HierarchicalClustering(method="average", metric="precomputed").fit(-D)
    with pytest.raises(InvalidParameterError, match="metric"):
        HierarchicalClustering(method="average", metric="cosine").fit(X)


def test_training_points_extend_to_their_own_cluster_and_the_model_file_keeps_it(tmp_path):
    # the nearest centroid can be another cluster's for points on a border; a "new" point that
    # is a training point is that point (thesis section 5.1), so it keeps its own cluster
    from manifold_studio.algorithms.row_keys import match_rows, row_keys
    from manifold_studio.files.model_file import load_model, save_model
    X = np.random.default_rng(3).normal(size=(200, 3))
    est = ms.get_algorithm("hierarchical", method="single", n_clusters=4).fit(X)
    centroid = np.argmin(((X[:, None] - est.cluster_centers_[None]) ** 2).sum(-1), axis=1)
    assert (centroid != est.labels_).any()           # single linkage: some are nearer another centre
    np.testing.assert_array_equal(est.extend(X), est.labels_)
    np.testing.assert_array_equal(est.extend(X[7:8]), est.labels_[7:8])   # sample-wise
    moved = X + 1e-9
    np.testing.assert_array_equal(est.extend(moved), est.extend(moved[::-1])[::-1])
    assert (est.training_rows(moved) == -1).all()
    keys = row_keys(X)
    assert np.unique(keys).size == 200 and (match_rows(keys, X) == np.arange(200)).all()
    assert match_rows(keys, -0.0 * np.ones((1, 3)) + X[:1] * 0 + X[:1])[0] == 0
    back = load_model(save_model(est, tmp_path / "h.msmodel"))
    np.testing.assert_array_equal(back.extend(X), est.labels_)
