"""Cluster quality measures (seed 001) against scikit-learn and brute force."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn import metrics as skm
from sklearn.datasets import make_blobs

from manifold_studio.analysis import metrics as m
from manifold_studio.errors import DataError


@pytest.fixture(scope="module")
def data():
    X, y = make_blobs(1500, 4, centers=5, cluster_std=2.0, random_state=2)
    rng = np.random.default_rng(0)
    noisy = y.copy()
    flip = rng.random(y.shape[0]) < 0.3
    noisy[flip] = rng.integers(0, 5, flip.sum())
    return X, y, noisy


def test_total_equals_within_plus_between(data):
    X, y, noisy = data
    for Xs in (X, X * 1e3 + 1e6):
        for labels in (y, noisy, np.arange(len(y)) % 2):
            d = m.inertia_decomposition(Xs, labels)
            assert abs(d.total - (d.within + d.between)) <= 1e-9 * d.total
            assert d.total == pytest.approx(np.sum((Xs - Xs.mean(0)) ** 2), rel=1e-12)
            w = sum(np.sum((Xs[labels == c] - Xs[labels == c].mean(0)) ** 2) for c in np.unique(labels))
            assert d.within == pytest.approx(w, rel=1e-10)
            assert d.within_per_cluster.sum() == pytest.approx(d.within, rel=1e-12)


@pytest.mark.parametrize("which", ["true", "noisy"])
def test_silhouette_and_davies_bouldin_equal_sklearn(data, which):
    X, y, noisy = data
    labels = y if which == "true" else noisy
    assert m.silhouette(X, labels) == pytest.approx(skm.silhouette_score(X, labels), rel=1e-10)
    np.testing.assert_allclose(m.silhouette_samples(X, labels, block_size=37),
                               skm.silhouette_samples(X, labels), rtol=1e-9, atol=1e-12)
    assert m.davies_bouldin(X, labels) == pytest.approx(skm.davies_bouldin_score(X, labels), rel=1e-10)


def test_silhouette_singletons_string_labels_and_many_clusters(data):
    X, y, _ = data
    labels = np.array([f"c{v}" for v in y], dtype=object)
    labels[0] = "alone"
    np.testing.assert_allclose(m.silhouette_samples(X, labels), skm.silhouette_samples(X, labels),
                               rtol=1e-9, atol=1e-12)
    many = np.arange(len(y)) % 700          # many clusters: the segment-sum path
    assert m.silhouette(X, many) == pytest.approx(skm.silhouette_score(X, many), rel=1e-9)


def test_silhouette_seed_convention_by_brute_force():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    labels = np.repeat([0, 1, 2], 10)
    labels[0] = 3                            # a singleton
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    s = np.empty(30)
    for i in range(30):
        same = labels == labels[i]
        a = D[i, same].sum() / same.sum()    # seed 001: 1/|pi_k|, the sum excludes i (D_ii = 0)
        b = min(D[i, labels == c].mean() for c in np.unique(labels) if c != labels[i])
        s[i] = (b - a) / max(a, b)
    np.testing.assert_allclose(m.silhouette_samples(X, labels, convention="seed"), s, rtol=1e-10)
    assert m.silhouette_samples(X, labels, convention="seed")[0] == pytest.approx(1.0)
    assert m.silhouette_samples(X, labels)[0] == 0.0


def test_homogeneity_separability_by_brute_force(data):
    X, y, _ = data
    ks = np.unique(y)
    cent = np.array([X[y == k].mean(0) for k in ks])
    H = np.array([np.linalg.norm(X[y == k] - cent[i], axis=1).mean() for i, k in enumerate(ks)])
    h = m.homogeneity(X, y)
    np.testing.assert_allclose(h.per_cluster, H, rtol=1e-10)
    assert h.overall == pytest.approx(H.mean(), rel=1e-12)
    pair = [np.linalg.norm(cent[i] - cent[j]) for i in range(len(ks)) for j in range(i + 1, len(ks))]
    assert m.separability(X, y) == pytest.approx(np.mean(pair), rel=1e-10)
    db, db_k = m.davies_bouldin(X, y, per_cluster=True)
    ref = [max((H[i] + H[j]) / np.linalg.norm(cent[i] - cent[j]) for j in range(len(ks)) if j != i)
           for i in range(len(ks))]
    np.testing.assert_allclose(db_k, ref, rtol=1e-10)


def test_adjusted_rand_index_and_contingency_equal_sklearn(data):
    _, y, noisy = data
    rng = np.random.default_rng(4)
    cases = [(y, noisy), (y, y), (y, rng.integers(0, 3, y.size)), (np.zeros(10), np.zeros(10)),
             (np.arange(10), np.arange(10)), (np.zeros(10), np.arange(10)), ([0, 0, 1, 1], [1, 1, 0, 0])]
    for a, b in cases:
        assert m.adjusted_rand_index(a, b) == pytest.approx(skm.adjusted_rand_score(a, b), abs=1e-12)
    ct = m.contingency_table(y, noisy)
    np.testing.assert_array_equal(ct.table, skm.cluster.contingency_matrix(y, noisy))
    assert ct.table.sum() == y.size


def test_undefined_for_a_single_cluster(data):
    X, _, _ = data
    one = np.zeros(X.shape[0], dtype=int)
    for func in (m.davies_bouldin, m.silhouette, m.silhouette_samples, m.separability):
        with pytest.raises(m.UndefinedMetricError, match="undefined"):
            func(X, one)
    with pytest.raises(m.UndefinedMetricError, match="undefined"):
        m.silhouette(X[:5], np.arange(5))      # K = n
    # inertia and homogeneity are defined for K = 1
    d = m.inertia_decomposition(X, one)
    assert d.between == pytest.approx(0.0, abs=1e-9 * d.total) and d.within == pytest.approx(d.total)
    assert m.homogeneity(X, one).per_cluster.shape == (1,)


def test_wrong_labels_and_identical_points(data):
    X, y, _ = data
    for func in (m.inertia_decomposition, m.homogeneity, m.separability, m.davies_bouldin, m.silhouette):
        with pytest.raises(DataError, match=f"{y.size - 1} entries but X has {y.size} samples"):
            func(X, y[:-1])
    with pytest.raises(DataError, match="different lengths"):
        m.adjusted_rand_index(y, y[:-3])
    with pytest.raises(DataError, match="NaN"):
        m.silhouette(X[:3], [0.0, np.nan, 1.0])
    same = np.ones((20, 3))
    labels = np.arange(20) % 2
    np.testing.assert_array_equal(m.silhouette_samples(same, labels), np.zeros(20))
    with pytest.raises(m.UndefinedMetricError, match="same centroid"):
        m.davies_bouldin(same, labels)
    d = m.inertia_decomposition(same, labels)
    assert d.total == d.within == d.between == 0.0


def test_mixture_from_partition_log_likelihood(data):
    X, y, _ = data
    for cov_type in ("full", "diag", "spherical"):
        mix = m.mixture_from_partition(X, y, cov_type, reg_covar=0.0)
        dens = np.zeros(50)
        for k in range(5):
            Xk = X[y == k]
            cov = np.cov(Xk.T, bias=True)
            if cov_type == "diag":
                cov = np.diag(np.diag(cov))
            elif cov_type == "spherical":
                cov = np.eye(4) * np.diag(cov).mean()
            dens += np.mean(y == k) * multivariate_normal(Xk.mean(0), cov).pdf(X[:50])
        np.testing.assert_allclose(m.mixture_log_likelihood(X[:50], mix), np.log(dens), rtol=1e-9)


def test_singular_partition_covariance():
    X = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])   # points on a line
    with pytest.raises(DataError, match="singular"):
        m.mixture_from_partition(X, np.zeros(10, int), "full", reg_covar=0.0)
    mix = m.mixture_from_partition(X, np.zeros(10, int), "full", reg_covar=1e-6)
    assert np.all(np.isfinite(m.mixture_log_likelihood(X, mix)))
