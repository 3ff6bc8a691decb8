"""k-means with sample_weight and an array init, against scikit-learn's KMeans."""
import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import manifold_studio as ms
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.files.model_file import model_bytes, model_from_bytes


@pytest.fixture
def blobs():
    X, _ = make_blobs(300, n_features=4, centers=4, cluster_std=1.5, random_state=0)
    w = np.random.default_rng(1).uniform(0.1, 3.0, 300)
    return X, w


def test_array_init_with_weights_matches_sklearn_exactly(blobs):
    X, w = blobs
    init = X[[0, 70, 140, 210]]
    ours = ms.get_algorithm("kmeans", n_clusters=4, init=init, n_init=1, tol=0).fit(X, sample_weight=w)
    ref = SkKMeans(4, init=init, n_init=1, tol=0).fit(X, sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, atol=1e-12)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    new = X[::7] + 0.3
    np.testing.assert_array_equal(ours.predict(new), ref.predict(new))


def test_weighted_centres_and_inertia_are_weighted_means_and_sums(blobs):
    X, w = blobs
    est = ms.get_algorithm("kmeans", n_clusters=4, random_state=0).fit(X, sample_weight=w)
    for k in range(4):
        mine = est.labels_ == k
        np.testing.assert_allclose(est.cluster_centers_[k], np.average(X[mine], axis=0, weights=w[mine]),
                                   atol=1e-10)
    d2 = np.sum((X - est.cluster_centers_[est.labels_]) ** 2, axis=1)
    assert est.inertia_ == pytest.approx(float(w @ d2), rel=1e-12)
    wmean = np.average(X, axis=0, weights=w)
    assert est.total_inertia_ == pytest.approx(float(w @ np.sum((X - wmean) ** 2, axis=1)), rel=1e-12)


def test_weighted_fit_agrees_with_sklearn_on_blobs(blobs):
    X, w = blobs
    ours = ms.get_algorithm("kmeans", n_clusters=4, random_state=0).fit(X, sample_weight=w)
    ref = SkKMeans(4, random_state=0, n_init=10).fit(X, sample_weight=w)
    assert adjusted_rand_score(ours.labels_, ref.labels_) == 1.0
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-9)


def test_integer_weights_equal_repeated_points_with_array_init(blobs):
    X, _ = blobs
    counts = np.random.default_rng(2).integers(0, 4, X.shape[0])
    init = X[[1, 71, 141, 211]]
    weighted = ms.get_algorithm("kmeans", n_clusters=4, init=init, n_init=1, tol=0).fit(X, sample_weight=counts)
    repeated = ms.get_algorithm("kmeans", n_clusters=4, init=init, n_init=1, tol=0).fit(np.repeat(X, counts, axis=0))
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_, atol=1e-10)
    assert weighted.inertia_ == pytest.approx(repeated.inertia_, rel=1e-10)


@pytest.mark.parametrize("init", ["random", "k-means++"])
@pytest.mark.parametrize("n_init", [1, 3])
def test_unit_and_constant_weights_change_nothing(blobs, init, n_init):
    # scikit-learn: sample_weight=np.ones(n) gives the identical partition (the same seed draws
    # the same centres); a constant weight c gives it too, with c times the inertia
    X, _ = blobs
    def fit(w):
        return ms.get_algorithm("kmeans", n_clusters=4, random_state=5, init=init,
                                n_init=n_init).fit(X, sample_weight=w)
    plain, ones, twos = fit(None), fit(np.ones(300)), fit(np.full(300, 2.0))
    np.testing.assert_array_equal(plain.labels_, ones.labels_)
    np.testing.assert_array_equal(plain.labels_, twos.labels_)
    assert plain.inertia_ == ones.inertia_
    assert 2 * plain.inertia_ == pytest.approx(twos.inertia_, rel=1e-12)


def test_array_init_overrides_n_init_with_a_runtime_warning(blobs):
    X, _ = blobs
    init = X[[0, 70, 140, 210]]
    with pytest.warns(RuntimeWarning, match="only one init in k-means instead of n_init=10"):
        est = ms.get_algorithm("kmeans", n_clusters=4, init=init).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = ms.get_algorithm("kmeans", n_clusters=4, init=init, n_init=1).fit(X)
    np.testing.assert_array_equal(est.labels_, again.labels_)


def test_bad_weights_and_init_are_named(blobs):
    X, w = blobs
    est = ms.get_algorithm("kmeans", n_clusters=4)
    with pytest.raises(DataError, match=r"sample_weight has shape \(299,\)"):
        est.fit(X, sample_weight=w[:-1])
    with pytest.raises(DataError, match="non-negative"):
        est.fit(X, sample_weight=-w)
    with pytest.raises(DataError, match="all zero"):
        est.fit(X, sample_weight=np.zeros(300))
    with pytest.raises(InvalidParameterError, match=r"expected shape \(4, 4\), got \(3, 4\)"):
        ms.get_algorithm("kmeans", n_clusters=4, init=X[:3], n_init=1).fit(X)
    with pytest.raises(InvalidParameterError, match="'init'"):
        ms.get_algorithm("kmeans", init="farthest").fit(X)


def test_array_init_survives_a_model_file(blobs):
    X, _ = blobs
    est = ms.get_algorithm("kmeans", n_clusters=4, init=X[[0, 70, 140, 210]], n_init=1).fit(X)
    back = model_from_bytes(model_bytes(est))
    np.testing.assert_array_equal(back.init, est.init)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
