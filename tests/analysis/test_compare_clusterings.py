"""compare_clusterings: several clustering methods over a range of k, every seed-001 measure and
seed 000's validation log-likelihood, checked against scikit-learn and direct formulas on the
shipped iris and wine samples."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.metrics import davies_bouldin_score, silhouette_score

import manifold_studio as ms
from manifold_studio.analysis.compare_clusterings import (
    MEASURES,
    cluster_count_methods,
    parse_k_range,
)
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio.evaluation import ClusteringComparison, compare_clusterings
from manifold_studio.project.analysis_records import (
    clustering_comparison_from_record,
    clustering_comparison_record,
)
from fakes import RecordingProgress

METHODS = ["kmeans", "gmm", "hierarchical"]


@pytest.fixture(scope="module", params=["iris", "wine"])
def compared(request):
    ds = ms.load_data(f"sample:{request.param}")
    X = ds.X if request.param == "iris" else (ds.X - ds.X.mean(0)) / ds.X.std(0)
    return X, compare_clusterings(METHODS, X, range(2, 7), seed=4, validation=0.3)


def _direct(X, labels):
    """W, B, T, H, S of seed 001 written out with numpy."""
    ks = np.unique(labels)
    cent = np.array([X[labels == k].mean(0) for k in ks])
    mean = X.mean(0)
    W = sum(((X[labels == k] - c) ** 2).sum() for k, c in zip(ks, cent))
    B = sum((labels == k).sum() * ((c - mean) ** 2).sum() for k, c in zip(ks, cent))
    T = ((X - mean) ** 2).sum()
    H = np.mean([np.linalg.norm(X[labels == k] - c, axis=1).mean() for k, c in zip(ks, cent)])
    S = np.mean([np.linalg.norm(cent[a] - cent[b]) for a in range(len(ks)) for b in range(a + 1, len(ks))])
    return W, B, T, H, S


def test_measures_equal_scikit_learn_and_the_seed_formulas(compared):
    X, c = compared
    assert isinstance(c, ClusteringComparison)
    assert c.methods == METHODS and c.k_values == [2, 3, 4, 5, 6] and len(c.rows) == 15
    assert c.failures == []
    for r in c.rows:
        assert r.labels.shape == (X.shape[0],) and r.n_clusters_found == r.k
        assert r.value("silhouette") == pytest.approx(silhouette_score(X, r.labels), abs=1e-12)
        assert r.value("davies_bouldin") == pytest.approx(davies_bouldin_score(X, r.labels), abs=1e-12)
        W, B, T, H, S = _direct(X, r.labels)
        assert r.value("within") == pytest.approx(W, rel=1e-12)
        assert r.value("between") == pytest.approx(B, rel=1e-12)
        assert r.value("within") + r.value("between") == pytest.approx(T, rel=1e-12)  # König–Huygens
        assert c.total == pytest.approx(T, rel=1e-12)
        assert r.value("homogeneity") == pytest.approx(H, rel=1e-12)
        assert r.value("separability") == pytest.approx(S, rel=1e-12)
        assert np.isfinite([r.value(m) for m in MEASURES]).all() and r.notes == {}


def test_kmeans_labels_are_the_projects_own_fit_with_the_seed(compared):
    X, c = compared
    for k in c.k_values:
        row = c.row("kmeans", k)
        assert row.params["random_state"] == 4 and row.params["n_clusters"] == k
        own = ms.get_algorithm("kmeans", n_clusters=k, random_state=4).fit(X)
        np.testing.assert_array_equal(row.labels, own.labels_)
        assert row.value("within") == pytest.approx(own.inertia_, rel=1e-10)
        g = c.row("gmm", k)
        assert g.params["n_components"] == k
        np.testing.assert_array_equal(g.labels, ms.get_algorithm("gmm", n_components=k, random_state=4).fit(X).labels_)


def test_validation_log_likelihood_of_the_gmm_and_of_seed_000s_mixture(compared):
    X, c = compared
    tr, va = c.train_index, c.validation_index
    assert len(np.intersect1d(tr, va)) == 0 and len(tr) + len(va) == X.shape[0]
    assert len(va) == round(0.3 * X.shape[0])
    for k in (2, 4, 6):
        # the Gaussian mixture: its own score of the held-out rows, after a fit on the training rows
        g = c.row("gmm", k)
        gmm = ms.get_algorithm("gmm", n_components=k, random_state=4).fit(X[tr])
        assert g.validation_how == "model density"
        assert g.value("validation_log_likelihood") == pytest.approx(gmm.score(X[va]), rel=1e-12)
        dens = sum(w * multivariate_normal(m, s).pdf(X[va]) for w, m, s in
                   zip(gmm.weights_, gmm.means_, gmm.covariances_))
        assert g.value("validation_log_likelihood") == pytest.approx(np.log(dens).mean(), rel=1e-9)
        # k-means: the mixture built from its training partition (seed 000), written out with scipy
        r = c.row("kmeans", k)
        lab = ms.get_algorithm("kmeans", n_clusters=k, random_state=4).fit(X[tr]).labels_
        Xt = X[tr]
        dens = sum((lab == j).mean() * multivariate_normal(Xt[lab == j].mean(0),
                                                           np.cov(Xt[lab == j].T, bias=True)
                                                           + 1e-6 * np.eye(X.shape[1])).pdf(X[va])
                   for j in range(k))
        assert r.validation_how == "mixture of the partition"
        assert r.value("validation_log_likelihood") == pytest.approx(np.log(dens).mean(), rel=1e-9)


def test_same_seed_same_numbers_and_the_record_round_trip():
    X = ms.load_data("sample:iris").X
    a = compare_clusterings(["kmeans", ("hierarchical", {"method": "average"})], X, [3, 2, 4], seed=7)
    b = compare_clusterings(["kmeans", ("hierarchical", {"method": "average"})], X, range(2, 5), seed=7)
    assert a.table() == b.table()
    np.testing.assert_array_equal(a.validation_index, b.validation_index)
    other = compare_clusterings(["kmeans"], X, range(2, 5), seed=8)
    assert not np.array_equal(other.validation_index, a.validation_index)
    assert a.row("hierarchical", 3).params["method"] == "average"
    doc, arrays = clustering_comparison_record(a)
    back = clustering_comparison_from_record(doc, arrays)
    assert back.table() == a.table() and back.methods == a.methods and back.seed == 7
    for x, y in zip(back.rows, a.rows):
        np.testing.assert_array_equal(x.labels, y.labels)


def test_two_copies_without_validation():
    X = ms.load_data("sample:iris").X
    c = compare_clusterings(["kmeans", ("kmeans", {"init": "random"})], X, range(2, 4), seed=0, validation=None)
    assert c.methods == ["kmeans #1", "kmeans #2"] and c.validation is None
    r = c.row("kmeans #2", 3)
    assert r.params["init"] == "random" and np.isnan(r.value("validation_log_likelihood"))
    assert "no rows were held out" in r.notes["validation_log_likelihood"]
    assert "n/a" in c.format_table()


def test_progress_over_method_and_k_and_cancel():
    X = ms.load_data("sample:iris").X
    p = RecordingProgress()
    c = compare_clusterings(["kmeans", "gmm"], X, range(2, 5), seed=0, progress=p)
    assert [(r.method, r.k) for r in p.partials] == [(r.method, r.k) for r in c.rows]
    assert p.fractions[-1] == 1.0 and all(b >= a - 1e-12 for a, b in zip(p.fractions, p.fractions[1:]))
    assert any(m.startswith("gmm, k = 3") for m in p.messages)
    # cancel after the first half: FitCancelled, and only the rows before it were finished
    stop = RecordingProgress(cancel_above=0.5)
    with pytest.raises(FitCancelled):
        compare_clusterings(["kmeans", "gmm"], X, range(2, 5), seed=0, progress=stop)
    assert [(r.method, r.k) for r in stop.partials] == [("kmeans", 2), ("kmeans", 3), ("kmeans", 4)]


def test_bad_input():
    X = ms.load_data("sample:iris").X
    with pytest.raises(InvalidParameterError, match="k = 1 is below 2"):
        compare_clusterings(["kmeans"], X, range(1, 4))
    with pytest.raises(DataError, match=r"k = 150 is above n − 1 = 149"):
        compare_clusterings(["kmeans"], X, [2, 150])
    with pytest.raises(InvalidParameterError, match="'pca' is not a clustering method"):
        compare_clusterings(["kmeans", "pca"], X, range(2, 4))
    with pytest.raises(InvalidParameterError, match="metric='precomputed'"):
        compare_clusterings([("hierarchical", {"metric": "precomputed", "method": "average"})], X, range(2, 4))
    with pytest.raises(InvalidParameterError, match="n_init"):
        compare_clusterings([("kmeans", {"n_init": 0})], X, range(2, 4))
    with pytest.raises(InvalidParameterError, match="k range"):
        parse_k_range("2-8")
    assert parse_k_range("2:5") == [2, 3, 4, 5] and parse_k_range("2,4") == [2, 4]


def test_a_method_failing_at_one_k_is_reported_and_the_rest_computed():
    # five distinct points, four copies each: agglomerative clustering cannot form 6 clusters
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(5, 2)) * 10, 4, axis=0)
    c = compare_clusterings(["hierarchical", "kmeans"], X, range(2, 7), seed=0, validation=None)
    failed = c.row("hierarchical", 6)
    assert failed.labels is None and failed.error.startswith("hierarchical at k = 6: the fit failed")
    assert "only 5 distinct" in failed.error and np.isnan(failed.value("within"))
    assert any(e.startswith("hierarchical at k = 6") for e in c.failures)
    for k in range(2, 6):
        assert np.isfinite(c.row("hierarchical", k).value("silhouette"))
    assert np.isfinite(c.row("kmeans", 3).value("davies_bouldin"))


def test_an_undefined_measure_says_why():
    # a distance threshold above every merge: hierarchical forms one cluster whatever k asks
    X = ms.load_data("sample:iris").X
    c = compare_clusterings([("hierarchical", {"distance_threshold": 1e9})], X, [2, 3], seed=0)
    r = c.row("hierarchical", 3)
    assert r.error == "" and r.n_clusters_found == 1
    assert r.value("within") == pytest.approx(c.total) and r.value("between") == pytest.approx(0.0, abs=1e-9)
    for m in ("separability", "davies_bouldin", "silhouette"):
        assert np.isnan(r.value(m))
        assert "undefined" in r.notes[m] and "1 cluster" in r.notes[m]
    assert np.isfinite(r.value("validation_log_likelihood"))
    table = c.table()[1]
    assert "Silhouette:" in table["notes"] and np.isnan(table["silhouette"])


def test_the_methods_with_a_number_of_clusters_are_found_by_their_constraints():
    found = cluster_count_methods(ms._host().algorithms)
    assert {"kmeans", "gmm", "hierarchical", "spectral_clustering"} <= set(found)
    assert "pca" not in found and "svm" not in found
