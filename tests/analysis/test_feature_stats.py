"""The feature views' statistics against numpy / scipy (and scikit-learn's mutual information)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import manifold_studio as ms
from manifold_studio.analysis import feature_stats as fs
from manifold_studio.errors import DataError


@pytest.fixture(scope="module")
def iris():
    return ms.load_data("sample:iris")


def test_histogram_counts_and_kde_match_numpy_scipy(iris):
    col = iris.X[:, 2]
    dist = fs.distribution(col, iris.labels, bins=12, column="petal")
    edges = np.histogram_bin_edges(col, bins=12)
    np.testing.assert_array_equal(dist.edges, edges)
    for i, cls in enumerate(dist.classes):
        values = col[iris.labels.astype(str) == cls]
        np.testing.assert_array_equal(dist.counts[i], np.histogram(values, bins=edges)[0])
        np.testing.assert_allclose(dist.densities[i], stats.gaussian_kde(values)(dist.grid), rtol=1e-10)
    assert dist.counts.sum() == col.size


def test_box_stats_are_numpy_percentiles_with_1_5_iqr_whiskers():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=200), [9.0, -8.0, 12.0]])
    b = fs.box_stats(v)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    assert (b.q1, b.median, b.q3) == (q1, med, q3)
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    assert (b.whisker_low, b.whisker_high) == (inside.min(), inside.max())
    np.testing.assert_array_equal(b.outliers, np.sort(v[(v < inside.min()) | (v > inside.max())]))
    assert {-8.0, 9.0, 12.0} <= set(b.outliers.tolist())


def test_missing_values_are_left_out_and_counted():
    v = np.array([1.0, np.nan, 2.0, 3.0, np.nan, 10.0])
    dist = fs.distribution(v, np.array(["a", "a", "a", "b", "b", "b"]), bins=3)
    assert dist.n_missing == 2
    assert dist.counts.sum() == 4
    np.testing.assert_array_equal(dist.rows[1], [3, 5])
    with pytest.raises(DataError, match="every value is missing"):
        fs.distribution(np.full(3, np.nan), column="empty")


@pytest.mark.parametrize("method", [fs.PEARSON, fs.SPEARMAN])
def test_correlations_equal_scipy_and_are_ordered_by_clustering(iris, method):
    res = fs.correlations(iris.X, iris.feature_names, method)
    ref = stats.pearsonr if method == fs.PEARSON else stats.spearmanr
    d = iris.n_features
    for a in range(d):
        for b in range(d):
            ia, ib = res.order[a], res.order[b]
            assert res.r[a, b] == pytest.approx(ref(iris.X[:, ia], iris.X[:, ib])[0], abs=1e-12)
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform
    full = fs.correlation_matrix(iris.X, method)
    dist = 1 - np.abs(full)
    np.fill_diagonal(dist, 0)
    Z = hierarchy.linkage(squareform(dist, checks=False), method="average")
    np.testing.assert_array_equal(res.order, hierarchy.leaves_list(Z))
    assert res.names == [iris.feature_names[j] for j in res.order]


def test_correlations_drop_incomplete_rows():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    X[[3, 7], 1] = np.nan
    res = fs.correlations(X, method=fs.PEARSON)
    keep = np.isfinite(X).all(axis=1)
    r = np.corrcoef(X[keep].T)
    np.testing.assert_allclose(res.r, r[np.ix_(res.order, res.order)], atol=1e-12)
    assert res.n_rows == 48


def test_pca_loadings_are_components_times_sqrt_variance(iris):
    res = fs.pca_loadings(iris.X, iris.feature_names, 2)
    est = ms.get_algorithm("pca", n_components=2).fit(iris.X)
    np.testing.assert_allclose(res.loadings, est.components_.T * np.sqrt(est.explained_variance_), atol=1e-12)
    np.testing.assert_allclose(res.scores, est.embedding_, atol=1e-12)
    # loading = covariance of the feature with the unit-variance component score
    unit = est.embedding_ / np.sqrt(est.explained_variance_)
    cov = (iris.X - iris.X.mean(0)).T @ unit / (iris.n_samples - 1)
    np.testing.assert_allclose(res.loadings, cov, atol=1e-10)
    assert np.abs(res.arrows).max() == pytest.approx(0.8 * np.abs(res.scores).max())


def test_ranking_matches_f_oneway_mutual_info_variance_missing(iris):
    from sklearn.metrics import mutual_info_score
    X = iris.X.copy()
    X[:15, 0] = np.nan
    rank = fs.feature_ranking(X, iris.labels, iris.feature_names)
    y = iris.labels
    for j in range(X.shape[1]):
        ok = np.isfinite(X[:, j])
        groups = [X[ok & (y == c), j] for c in np.unique(y)]
        f = stats.f_oneway(*groups)
        assert rank.anova_f[j] == pytest.approx(f.statistic, rel=1e-12)
        assert rank.anova_p[j] == pytest.approx(f.pvalue, rel=1e-9, abs=1e-300)
        v = X[ok, j]
        edges = np.unique(np.quantile(v, np.linspace(0, 1, fs.MI_BINS + 1)))
        bins = np.searchsorted(edges[1:-1], v, side="right")
        assert rank.mutual_info[j] == pytest.approx(mutual_info_score(y[ok], bins), rel=1e-12)
        assert rank.variance[j] == pytest.approx(np.var(v, ddof=1), rel=1e-12)
    assert rank.missing_share[0] == pytest.approx(0.1)
    assert rank.missing_share[1] == 0.0
    best = rank.top("anova_f", 2)
    assert list(rank.anova_f[best]) == sorted(rank.anova_f, reverse=True)[:2]
    assert rank.top("missing_share", 1)[0] != 0


def test_ranking_without_labels_has_only_variance_and_missing():
    X = np.array([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0]])
    rank = fs.feature_ranking(X)
    assert np.isnan(rank.anova_f).all() and np.isnan(rank.mutual_info).all()
    np.testing.assert_allclose(rank.variance, [np.var([1, 2, 4], ddof=1), 0.0])
    assert list(rank.order("variance")) == [0, 1]
    with pytest.raises(ValueError, match="Unknown ranking column"):
        rank.order("gain")


def test_kde_of_many_values_is_binned_and_close_to_exact():
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.normal(0, 1, 30_000), rng.normal(5, 0.5, 20_000)])
    grid = np.linspace(-4, 8, 50)
    binned = fs.kde(v, grid)
    exact = stats.gaussian_kde(v)(grid)
    assert v.size > fs.KDE_EXACT
    np.testing.assert_allclose(binned, exact, atol=1e-4 * exact.max())
    assert fs.kde(np.ones(5), grid) is None
