"""k-means: the shared iteration (kmeans_core) and the ``kmeans`` plugin."""
import numpy as np
import pytest

from manifold_studio.algorithms.conformance import CancelAfter
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

import manifold_studio as ms
from manifold_studio.algorithms.kmeans_core import assign_nearest, kmeans
from manifold_studio.errors import DataError, FitCancelled
from manifold_studio_builtins.kmeans import KMeans
from fakes import RecordingProgress  # noqa: E402


def brute_labels(X, C):
    return np.argmin(((X[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(4000, 6, centers=8, cluster_std=1.5, random_state=7)
    return X, y


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_inertia_no_worse_than_sklearn(blobs, init):
    X, _ = blobs
    for k in (4, 8, 12):
        ours = kmeans(X, k, init=init, n_init=10, random_state=0)
        ref = SKKMeans(k, init=init, n_init=10, random_state=0).fit(X)
        assert ours.inertia <= ref.inertia_ * 1.001, (k, ours.inertia, ref.inertia_)


def test_result_is_a_fixed_point(blobs):
    X, _ = blobs
    res = kmeans(X, 8, n_init=3, random_state=1, tol=0.0)
    np.testing.assert_array_equal(res.labels, brute_labels(X, res.centers))
    for j in range(8):
        np.testing.assert_allclose(res.centers[j], X[res.labels == j].mean(axis=0), rtol=1e-10, atol=1e-10)
    assert res.inertia == pytest.approx(np.sum((X - res.centers[res.labels]) ** 2), rel=1e-12)
    hist = res.inertia_history
    assert len(hist) == res.n_iter + 1
    assert np.all(np.diff(hist) <= 1e-9 * hist[0])
    assert hist[-1] == pytest.approx(res.inertia, rel=1e-12)


def test_many_clusters_and_far_from_origin():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3)) + 1e6
    res = kmeans(X, 60, n_init=2, random_state=0)
    assert np.unique(res.labels).size == 60
    np.testing.assert_array_equal(res.labels, brute_labels(X - 1e6, res.centers - 1e6))
    labels, d2 = assign_nearest(X, res.centers)
    np.testing.assert_array_equal(labels, res.labels)
    np.testing.assert_allclose(d2, np.sum((X - res.centers[labels]) ** 2, axis=1), rtol=1e-12)


def test_random_init_uses_data_points_and_is_reproducible(blobs):
    X, _ = blobs
    one = kmeans(X, 5, init="random", n_init=1, max_iter=1, tol=0, random_state=5)
    two = kmeans(X, 5, init="random", n_init=1, max_iter=1, tol=0, random_state=5)
    np.testing.assert_array_equal(one.labels, two.labels)
    # with max_iter=1 the first assignment's inertia is measured against k data points
    rng = np.random.default_rng(5)
    idx = rng.choice(X.shape[0], size=5, replace=False, p=np.full(X.shape[0], 1.0 / X.shape[0]))
    d2 = ((X[:, None, :] - X[idx][None]) ** 2).sum(-1).min(axis=1)
    assert one.inertia_history[0] == pytest.approx(d2.sum(), rel=1e-9)


def test_empty_cluster_is_reseeded():
    X, _ = make_blobs(500, 2, centers=3, random_state=0)
    init = np.array([X[0], X[1], [1e4, 1e4], [-1e4, 1e4]])  # two centres attract no point
    res = kmeans(X, 4, init=init)
    assert np.bincount(res.labels, minlength=4).min() > 0


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_more_clusters_than_distinct_points(init):
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 20, axis=0)
    with pytest.raises(DataError, match="only 3 distinct"):
        kmeans(X, 4, init=init, random_state=0)
    assert kmeans(X, 3, init=init, n_init=4, random_state=0).inertia == pytest.approx(0.0, abs=1e-20)
    with pytest.raises(DataError, match="from 2 sample"):
        kmeans(X[:2], 3)


def test_identical_points():
    X = np.ones((40, 3))
    res = kmeans(X, 1)
    assert res.inertia == 0.0 and np.all(res.labels == 0)
    with pytest.raises(DataError, match="1 distinct point"):
        KMeans(n_clusters=2).fit(X)


def test_cancel_and_partial_results(blobs):
    X, _ = blobs
    with pytest.raises(FitCancelled):
        kmeans(X, 8, progress=CancelAfter(3))
    with pytest.raises(FitCancelled):
        KMeans(n_clusters=8).fit(X, progress=CancelAfter(2))

    rec = RecordingProgress()
    res = kmeans(X, 8, n_init=1, random_state=0, progress=rec)
    steps = rec.partials
    assert all(0.0 <= f <= 1.0 for f in rec.fractions)
    assert len(steps) == res.n_iter
    assert steps[-1]["labels"].shape == (X.shape[0],)


def test_plugin_attributes_and_extend(blobs):
    X, _ = blobs
    est = ms.get_algorithm("kmeans", n_clusters=8, random_state=0)
    assert isinstance(est, KMeans)
    est.fit(X)
    for attr in ("labels_", "cluster_centers_", "inertia_", "n_iter_", "inertia_history_"):
        assert hasattr(est, attr)
    X_new = X[:50] + 0.1
    np.testing.assert_array_equal(est.extend(X_new), brute_labels(X_new, est.cluster_centers_))
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    summary = est.result_summary()
    assert summary["inertia"] == pytest.approx(est.inertia_, rel=1e-6) and summary["n_iter"] == est.n_iter_
    dist = est.transform_distances(X_new)
    assert dist.shape == (50, 8)
    np.testing.assert_array_equal(np.argmin(dist, axis=1), est.extend(X_new))


@pytest.mark.parametrize("k", [5, 24])   # 24 > 16: the bounds' exact-distance step is used
def test_same_iterations_as_sklearn_from_the_same_centres(k):
    # tol has scikit-learn's meaning (centre moves against tol x mean feature variance, or an
    # unchanged assignment): from the same initial centres, the same labels after the same n_iter
    X, _ = make_blobs(6000, 5, centers=12, cluster_std=2.0, random_state=4)
    rng = np.random.default_rng(k)
    w = rng.uniform(0.2, 3.0, X.shape[0])
    for weights in (None, w):
        init = X[rng.choice(X.shape[0], k, replace=False)]
        ours = kmeans(X, k, init=init, sample_weight=weights)
        ref = SKKMeans(k, init=init, n_init=1).fit(X, sample_weight=weights)
        np.testing.assert_array_equal(ours.labels, ref.labels_)
        assert ours.n_iter == ref.n_iter_
        np.testing.assert_allclose(ours.centers, ref.cluster_centers_, atol=1e-9)
        assert ours.inertia == pytest.approx(ref.inertia_, rel=1e-9)


def test_result_does_not_depend_on_the_number_of_threads(monkeypatch):
    from manifold_studio.algorithms import threads

    X, _ = make_blobs(40_000, 3, centers=6, random_state=2)    # several chunks of points
    results = []
    for n in (1, 3):
        monkeypatch.setattr(threads, "n_threads", lambda n=n: n)
        results.append(kmeans(X, 6, init="random", n_init=2, random_state=0))
    np.testing.assert_array_equal(results[0].labels, results[1].labels)
    np.testing.assert_array_equal(results[0].centers, results[1].centers)
    assert results[0].inertia == results[1].inertia
