"""The neighbour layer (issue 24 item 1, issue 22 item 4): exact search in every metric, the
approximate NN-descent index (recall, sample-wise queries, determinism), bad input."""
import numpy as np
import pytest
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors

from manifold_studio.algorithms.neighbors import (
    AUTO_APPROXIMATE_MIN_POINTS, NeighborIndex, knn_query, make_index, resolve_neighbors,
)
from manifold_studio.algorithms.neighbor_metrics import Float32Screen, brute_knn
from manifold_studio.errors import DataError, InvalidParameterError


def _walk(n=3000, d=20, seed=0):
    """Points along a random walk: low intrinsic dimension, distinct neighbourhoods."""
    return np.random.default_rng(seed).normal(size=(n, d)).cumsum(axis=0)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_exact_index_matches_sklearn_in_every_metric(metric):
    X = _walk(600, 20)
    Q = X[:40] + 0.5
    sk = NearestNeighbors(n_neighbors=7, metric=metric, algorithm="brute").fit(X)
    d_sk, i_sk = sk.kneighbors(Q)
    for method in ("brute", "tree"):
        d, i = NeighborIndex(X, method=method, metric=metric).query(Q, 7)
        np.testing.assert_array_equal(i, i_sk)
        np.testing.assert_allclose(d, d_sk, rtol=1e-9, atol=1e-12)


def test_precomputed_index_takes_distance_rows():
    X = _walk(400, 5)
    D = pairwise_distances(X)
    d1, i1 = knn_query(D, D, 6, exclude_self=True, index=NeighborIndex(D, metric="precomputed"))
    d2, i2 = knn_query(X, X, 6, exclude_self=True)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, atol=1e-12)
    index = NeighborIndex(D, metric="precomputed")
    np.testing.assert_array_equal(index.match(D[:5]), np.arange(5))
    with pytest.raises(DataError, match="400 columns"):
        index.query(D[:3, :10], 2)
    with pytest.raises(DataError, match="square"):
        NeighborIndex(D[:10], metric="precomputed")


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_approximate_neighbours_have_high_recall_and_exact_distances(metric):
    X = _walk()
    approx = make_index(X, neighbors="approximate", metric=metric, n_neighbors=15)
    exact = NeighborIndex(X, metric=metric)
    d_a, i_a = knn_query(X, X, 10, exclude_self=True, index=approx)
    d_e, i_e = knn_query(X, X, 10, exclude_self=True, index=exact)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(i_a, i_e)])
    assert recall >= 0.99
    assert abs(approx.recall() - recall) < 0.02          # the sample estimate is close
    # the distances reported are the exact distances to the neighbours found
    ref = pairwise_distances(X[:50], X, metric=metric)
    np.testing.assert_allclose(d_a[:50], np.take_along_axis(ref, i_a[:50], axis=1), rtol=1e-9, atol=1e-12)
    assert (np.diff(d_a, axis=1) >= 0).all()
    # new points: queried against the fitted index
    Q = X[::37] + 0.1
    _, qa = approx.query(Q, 10)
    _, qe = exact.query(Q, 10)
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(qa, qe)]) >= 0.99
    np.testing.assert_array_equal(approx.match(X[:20]), np.arange(20))
    assert (approx.match(Q) == -1).all()


def test_approximate_queries_are_sample_wise_and_deterministic():
    X = _walk(2500, 10)
    Q = _walk(60, 10, seed=3) * 0.5
    a = make_index(X, neighbors="approximate", n_neighbors=10, random_state=4)
    d_all, i_all = a.query(Q, 8)
    for r in (0, 17, 59):
        d1, i1 = a.query(Q[r:r + 1], 8)
        np.testing.assert_array_equal(i1[0], i_all[r])
        np.testing.assert_array_equal(d1[0], d_all[r])
    b = make_index(X, neighbors="approximate", n_neighbors=10, random_state=4)
    np.testing.assert_array_equal(a.training_neighbors(10)[1], b.training_neighbors(10)[1])


def test_auto_switches_to_approximate_above_the_measured_size():
    assert resolve_neighbors("auto", AUTO_APPROXIMATE_MIN_POINTS - 1, 50, "euclidean") == "exact"
    assert resolve_neighbors("auto", AUTO_APPROXIMATE_MIN_POINTS, 50, "euclidean") == "approximate"
    assert resolve_neighbors("auto", 10 * AUTO_APPROXIMATE_MIN_POINTS, 3, "euclidean") == "exact"   # k-d tree
    assert resolve_neighbors("auto", 10 * AUTO_APPROXIMATE_MIN_POINTS, 50, "precomputed") == "exact"
    # more neighbours: brute force stays cheaper for longer (t-SNE's 91 neighbours)
    assert resolve_neighbors("auto", 9 * AUTO_APPROXIMATE_MIN_POINTS, 50, "euclidean", 91) == "exact"
    assert resolve_neighbors("auto", 10 * AUTO_APPROXIMATE_MIN_POINTS, 50, "euclidean", 91) == "approximate"


def test_bad_input_is_refused_with_a_clear_message():
    X = _walk(8, 4)
    with pytest.raises(DataError, match="more points than neighbours: 8 point"):
        make_index(X, neighbors="approximate", n_neighbors=10)
    with pytest.raises(InvalidParameterError, match="metric='chebyshev' is not known"):
        make_index(X, metric="chebyshev")
    with pytest.raises(InvalidParameterError, match="neighbors='fast'"):
        make_index(X, neighbors="fast")
    with pytest.raises(InvalidParameterError, match="precomputed"):
        make_index(pairwise_distances(X), neighbors="approximate", metric="precomputed", n_neighbors=3)
    Z = X.copy()
    Z[2] = 0.0
    with pytest.raises(DataError, match="cosine.*row 2"):
        NeighborIndex(Z, metric="cosine")


def test_float32_screen_finds_the_exact_neighbours_and_distances():
    # far from the origin (the screen centres the data) and with exact duplicates
    rng = np.random.default_rng(3)
    Y = 100.0 + rng.normal(size=(3000, 20))
    Y[10] = Y[11]
    Q = np.vstack([Y[:200], 100.0 + rng.normal(size=(50, 20))])
    d, i = Float32Screen(Y).knn(Q, 15)
    d_ref, i_ref = brute_knn(Y, Q, 15, "euclidean")
    np.testing.assert_allclose(d, d_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(i, i_ref)
    d1, i1 = Float32Screen(Y).knn(Q[7:8], 15)          # one row on its own: the same answer
    np.testing.assert_array_equal(i1[0], i[7])


def test_large_exact_index_uses_the_screen_and_agrees_with_float64_blocks(monkeypatch):
    import manifold_studio.algorithms.neighbors as nb

    X = np.random.default_rng(4).normal(size=(1500, 30))
    monkeypatch.setattr(nb, "SCREEN_MIN_POINTS", 1000)
    screened = NeighborIndex(X)
    assert screened.screen is not None
    monkeypatch.setattr(nb, "SCREEN_MIN_POINTS", 10**9)
    plain = NeighborIndex(X)
    assert plain.screen is None
    d_s, i_s = screened.training_neighbors(12)
    d_p, i_p = plain.training_neighbors(12)
    np.testing.assert_array_equal(i_s, i_p)
    np.testing.assert_allclose(d_s, d_p, rtol=1e-9, atol=1e-9)


def test_nn_descent_graph_does_not_depend_on_the_number_of_threads(monkeypatch):
    import manifold_studio.algorithms.neighbors_approx as na
    import manifold_studio.algorithms.threads as threads

    X = _walk(2500, 12, seed=5)
    two = na.NNDescent(X, 15, random_state=3)
    monkeypatch.setattr(threads, "n_threads", lambda: 1)
    monkeypatch.setattr(na, "n_threads", lambda: 1)
    one = na.NNDescent(X, 15, random_state=3)
    np.testing.assert_array_equal(one.graph_idx, two.graph_idx)
    np.testing.assert_array_equal(one.graph_dist, two.graph_dist)
