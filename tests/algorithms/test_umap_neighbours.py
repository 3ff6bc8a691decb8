"""UMAP on the shared neighbour layer (issue 24): the ``neighbors`` parameter, the approximate
(NN-descent) index at fit and extend, its model round trip, the run's log and bad input.
The fuzzy graph, the layout and the other UMAP checks are in test_umap.py."""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
import pytest

import manifold_studio as ms
from manifold_studio.algorithms import umap_layout
from manifold_studio.algorithms.neighbors import NEIGHBOR_METHODS, make_index, neighbors_param
from manifold_studio.algorithms.umap_graph import fuzzy_simplicial_set, query_knn, training_knn
from manifold_studio.errors import DataError, InvalidParameterError

PHASES = ("neighbours", "fuzzy graph", "spectral start", "sgd")


def clusters(n=3000, d=30, centers=6, seed=0):
    """Clusters on curved 2-D sheets in d > 15 dimensions (where 'auto' may pick approximate)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=2.0, size=(centers, 2, d))
    C = rng.normal(scale=6.0, size=(centers, d))
    y = rng.integers(0, centers, n)
    t = rng.uniform(-1.0, 1.0, size=(n, 2))
    X = C[y] + np.cos(np.einsum("nk,nkd->nd", t, W[y])) + 0.05 * rng.normal(size=(n, d))
    return X, y


def umap(**params):
    return ms.get_algorithm("umap", **params)


@pytest.fixture(scope="module")
def fitted_pair():
    """The same 3,000-point map with approximate and with exact neighbours (and 60 new points
    of the same clusters)."""
    from sklearn.manifold import trustworthiness

    X_all, y_all = clusters(3060)
    X, y = X_all[:3000], y_all[:3000]
    kw = dict(random_state=0, n_epochs=200)
    approx = umap(neighbors="approximate", **kw).fit(X)
    exact = umap(neighbors="exact", **kw).fit(X)
    tw = {name: trustworthiness(X, est.embedding_, n_neighbors=10) for name, est in
          (("approximate", approx), ("exact", exact))}
    return X, y, approx, exact, tw, X_all[3000:], y_all[3000:]


def test_neighbors_parameter_is_the_shared_one():
    (p,) = [c for c in ms.get_algorithm("umap").params if c.name == "neighbors"]
    shared = neighbors_param()
    assert (p.default, tuple(p.choices), p.help) == ("auto", NEIGHBOR_METHODS, shared.help)
    with pytest.raises(InvalidParameterError, match="neighbors"):
        umap(neighbors="hnsw")


def test_approximate_map_as_trustworthy_as_exact(fitted_pair):
    X, y, approx, exact, tw, _, _ = fitted_pair
    assert approx.neighbors_method_ == "approximate" and exact.neighbors_method_ == "exact"
    assert 0.95 <= approx.neighbors_recall_ <= 1.0 and exact.neighbors_recall_ is None
    assert abs(tw["approximate"] - tw["exact"]) <= 0.01 and tw["exact"] > 0.95, tw


def test_approximate_knn_lists_close_to_exact():
    X, _ = clusters(1500)
    approx = make_index(X, neighbors="approximate", n_neighbors=14)
    exact = make_index(X, neighbors="exact")
    da, ia = training_knn(approx, 14)
    de, ie = training_knn(exact, 14)
    recall = np.mean([len(set(a) & set(b)) / 14 for a, b in zip(ia, ie)])
    assert recall >= 0.98
    # the graph built on either: almost the same memberships, same sizes
    Ga, *_ = fuzzy_simplicial_set(X, 15, index=approx)
    Ge, *_ = fuzzy_simplicial_set(X, 15, index=exact)
    assert abs(Ga - Ge).sum() / Ge.sum() < 0.05
    # the distances the approximate index returns are exact
    np.testing.assert_allclose(da, np.linalg.norm(X[ia] - X[:, None, :], axis=2), rtol=1e-12)


def test_auto_picks_exact_below_and_approximate_from_the_switch():
    from manifold_studio.algorithms.neighbors import resolve_neighbors

    assert umap(n_epochs=20, random_state=0).fit(clusters(500)[0]).neighbors_method_ == "exact"
    # the benchmark's sizes (UMAP asks the index for n_neighbors - 1 = 14 neighbours)
    assert resolve_neighbors("auto", 70_000, 784, "euclidean", 14) == "approximate"
    assert resolve_neighbors("auto", 19_999, 784, "euclidean", 14) == "exact"


def test_extend_with_the_approximate_index_is_sample_wise(fitted_pair, monkeypatch):
    X, y, approx, _exact, _tw, X_new, y_new = fitted_pair
    full = approx.extend(X_new)
    for i in range(0, 60, 7):
        np.testing.assert_array_equal(approx.extend(X_new[i:i + 1])[0], full[i])
    np.testing.assert_array_equal(approx.extend(X_new[::-1]), full[::-1])
    # independent of the number of threads placing the points: all rows in one share
    monkeypatch.setattr(umap_layout, "run_shares", lambda fn, n, min_rows=1: [fn(0, n)])
    np.testing.assert_array_equal(approx.extend(X_new), full)
    monkeypatch.undo()
    # new points land among their own cluster's fitted points; training points on their place
    from scipy.spatial import cKDTree

    _, near = cKDTree(approx.embedding_).query(full, k=10)
    assert np.mean((y[near] == y_new[:, None]).mean(axis=1) > 0.5) >= 0.95
    np.testing.assert_array_equal(approx.extend(X[:20]), approx.embedding_[:20])


def test_query_knn_is_row_by_row_for_the_approximate_index():
    X, _ = clusters(800)
    index = make_index(X, neighbors="approximate", n_neighbors=14)
    Q = clusters(850)[0][800:]
    d, i = query_knn(index, Q, 14)
    for r in (0, 17, 49):
        d1, i1 = query_knn(index, Q[r:r + 1], 14)
        np.testing.assert_array_equal(i1[0], i[r])
        np.testing.assert_array_equal(d1[0], d[r])


def test_model_round_trip_with_the_approximate_index(fitted_pair, tmp_path):
    from manifold_studio.files.model_file import load_model, save_model

    X, _y, approx, _exact, _tw, X_new, _ = fitted_pair
    before = approx.extend(X_new)
    loaded = load_model(save_model(approx, tmp_path / "umap.npz"))
    assert loaded.get_params() == approx.get_params() and loaded.neighbors_method_ == "approximate"
    assert loaded.neighbors_recall_ == approx.neighbors_recall_
    np.testing.assert_array_equal(loaded.embedding_, approx.embedding_)
    np.testing.assert_array_equal(loaded.extend(X_new), before)    # the index rebuilt: the same graph
    assert loaded.result_summary()["neighbours"] == "approximate"


def test_run_log_reports_method_recall_and_phases():
    from manifold_studio.plugins.host import PluginHost
    from manifold_studio.session.model import Session

    X, _ = clusters(1200)
    approx = umap(neighbors="approximate", n_epochs=50, random_state=0).fit(X)
    exact = umap(neighbors="exact", n_epochs=50, random_state=0).fit(X)
    for est in (approx, exact):
        assert set(est.timings_) == set(PHASES) and all(t >= 0 for t in est.timings_.values())
        s = est.result_summary()
        assert {f"time_{p.replace(' ', '_')}_s" for p in PHASES} <= set(s)
    sa, se = approx.result_summary(), exact.result_summary()
    assert sa["neighbours"] == "approximate" and 0.95 <= sa["neighbours_recall_at_10"] <= 1.0
    assert se["neighbours"] == "exact" and "neighbours_recall_at_10" not in se
    # the same entries reach the run (the window's run log shows run.summary)
    session = Session(PluginHost().discover())
    session.load("sample:iris")
    run = session.run("umap", neighbors="approximate", n_neighbors=10, n_epochs=30, random_state=0)
    assert run.summary["neighbours"] == "approximate" and "neighbours_recall_at_10" in run.summary
    assert "time_sgd_s" in run.summary and "time_neighbours_s" in run.summary


def test_fewer_points_than_neighbours_truncates_for_both_searches():
    # umap-learn warns and uses n - 1; the approximate index then holds n - 2 neighbours
    X, _ = clusters(12)
    for neighbors in ("approximate", "exact"):
        with pytest.warns(UserWarning, match=r"n_neighbors=15 is larger than the data \(12 points\): truncated to 11"):
            est = umap(neighbors=neighbors, n_epochs=20, random_state=0).fit(X)
        assert est.n_neighbors_ == 11 and est.neighbors_method_ == neighbors
        assert np.isfinite(est.extend(X[:3] + 0.1)).all()


@pytest.mark.parametrize("neighbors", ["exact", "approximate"])
def test_metric_unknown_to_the_index(neighbors):
    X, _ = clusters(100)
    with pytest.raises(InvalidParameterError, match=r"metric='chebyshev' is not known to the neighbour search"):
        make_index(X, neighbors=neighbors, metric="chebyshev", n_neighbors=14)
    with pytest.raises(InvalidParameterError, match="metric"):
        umap(metric="chebyshev", neighbors=neighbors)
    # 'precomputed' distances are searched exactly only
    D = cdist(X, X)
    if neighbors == "approximate":
        with pytest.raises(InvalidParameterError, match="'approximate' does not apply to metric='precomputed'"):
            umap(metric="precomputed", neighbors=neighbors).fit(D)
    else:
        assert umap(metric="precomputed", neighbors=neighbors, n_epochs=10).fit(D).embedding_.shape == (100, 2)


@pytest.mark.parametrize("metric", ["cosine", "manhattan"])
def test_other_metrics_with_the_approximate_index(metric):
    X, y = clusters(1000)
    approx = umap(metric=metric, neighbors="approximate", n_epochs=60, random_state=0).fit(X[:900])
    exact = umap(metric=metric, neighbors="exact", n_epochs=60, random_state=0).fit(X[:900])
    assert approx.neighbors_recall_ >= 0.95
    E = approx.extend(X[900:])
    assert np.isfinite(E).all()
    np.testing.assert_array_equal(approx.extend(X[950:951])[0], E[50])
    # the same neighbour lists for most points as the exact index
    _, ia = training_knn(make_index(X[:900], neighbors="approximate", metric=metric, n_neighbors=14), 14)
    _, ie = training_knn(make_index(X[:900], neighbors="exact", metric=metric), 14)
    assert np.mean([len(set(a) & set(b)) / 14 for a, b in zip(ia, ie)]) >= 0.95
    assert exact.neighbors_method_ == "exact"
