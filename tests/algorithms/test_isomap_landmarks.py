"""Landmark Isomap (n_landmarks), the memory check of the classic one, and joining the pieces of
a disconnected graph from samples (approximate neighbours)."""
import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra
from scipy.stats import spearmanr

import manifold_studio as ms
from manifold_studio.algorithms import graph_components
from manifold_studio.algorithms.graph_components import connect_components
from manifold_studio.errors import DataError, InvalidParameterError
from procrustes import procrustes_residual
from spectral_data import swiss_roll


@pytest.fixture(scope="module")
def roll():
    X, t = swiss_roll(1500)
    est = ms.get_algorithm("isomap", n_neighbors=10, n_landmarks=200, random_state=0).fit(X)
    return X, t, est


def test_landmark_map_is_landmark_mds_of_the_graph_geodesics(roll):
    """Independent of our code path: scikit-learn's k-NN graph, scipy's Dijkstra from the same
    landmarks, classical MDS of the landmark block by numpy's eigh, and every other point by
    de Silva & Tenenbaum's Landmark MDS formula y = 1/2 L# (mean column of Delta - delta_x)."""
    from sklearn.neighbors import kneighbors_graph

    X, _t, est = roll
    lm = est.landmarks_
    assert lm.shape == (200,) and np.unique(lm).size == 200
    G = kneighbors_graph(X, 10, mode="distance")
    G = G.maximum(G.T)
    D = dijkstra(G, directed=False, indices=lm).T          # (n, L) geodesics to the landmarks
    Delta = D[lm] ** 2
    H = np.eye(200) - 1.0 / 200
    vals, vecs = np.linalg.eigh(-0.5 * H @ Delta @ H)
    vals, vecs = vals[::-1][:2], vecs[:, ::-1][:, :2]
    L_sharp = vecs.T / np.sqrt(vals)[:, None]
    Y = 0.5 * (L_sharp @ (Delta.mean(axis=1)[:, None] - (D ** 2).T)).T
    assert procrustes_residual(Y, est.embedding_, scale=False) < 1e-6
    # theorem 5.1: the landmarks are placed exactly where MDS of the landmarks puts them
    np.testing.assert_allclose(est.embedding_[lm], est.spectral_embedding_, atol=1e-9 * np.abs(Y).max())


def test_landmark_map_agrees_with_the_classic_one_and_unrolls_the_roll(roll):
    X, t, est = roll
    full = ms.get_algorithm("isomap", n_neighbors=10).fit(X)
    assert procrustes_residual(full.embedding_, est.embedding_) < 0.01
    rho = max(abs(spearmanr(est.embedding_[:, j], t)[0]) for j in range(2))
    assert rho > 0.99
    summary = est.result_summary()
    assert summary["geodesics"] == "from 200 landmarks (Landmark Isomap)"
    assert full.result_summary()["geodesics"] == "all pairs of points"
    assert "shortest paths" in est.timings_ and "placing points" in est.timings_


def test_landmark_extension_is_samplewise_and_reproduces_training_points(roll):
    X, _t, est = roll
    X_new, _ = swiss_roll(60, seed=4)
    E = est.extend(X_new)
    one_by_one = np.vstack([est.extend(X_new[i:i + 1]) for i in range(X_new.shape[0])])
    np.testing.assert_allclose(E, one_by_one, rtol=0, atol=1e-10 * np.abs(E).max())
    np.testing.assert_array_equal(est.extend(X[:40]), est.embedding_[:40])
    # a new point between training points lands between their places
    mid = 0.5 * (X[3] + X[4]) if np.linalg.norm(X[3] - X[4]) < 1.0 else X[3] + 1e-3
    y = est.extend(mid[None, :])[0]
    spread = np.ptp(est.embedding_, axis=0).max()
    assert np.linalg.norm(y - est.embedding_[3]) < 0.05 * spread


def test_same_seed_same_map_other_seed_other_landmarks(roll):
    X, _t, est = roll
    again = ms.get_algorithm("isomap", n_neighbors=10, n_landmarks=200, random_state=0).fit(X)
    np.testing.assert_array_equal(again.landmarks_, est.landmarks_)
    np.testing.assert_array_equal(again.embedding_, est.embedding_)
    other = ms.get_algorithm("isomap", n_neighbors=10, n_landmarks=200, random_state=1).fit(X)
    assert not np.array_equal(other.landmarks_, est.landmarks_)
    assert procrustes_residual(other.embedding_, est.embedding_) < 0.01


def test_landmark_model_survives_save_and_load(roll, tmp_path):
    from manifold_studio.files.model_file import load_model, save_model

    X, _t, est = roll
    save_model(est, tmp_path / "iso.npz")
    again = load_model(tmp_path / "iso.npz")
    np.testing.assert_array_equal(again.landmarks_, est.landmarks_)
    X_new, _ = swiss_roll(30, seed=5)
    np.testing.assert_allclose(again.extend(X_new), est.extend(X_new), rtol=0, atol=1e-12)


def test_n_landmarks_bounds():
    X, _ = swiss_roll(300)
    with pytest.raises(InvalidParameterError, match=r"n_landmarks=2 is too small for n_components=2.*at least 3"):
        ms.get_algorithm("isomap", n_landmarks=2).fit(X)
    with pytest.raises(InvalidParameterError, match="n_landmarks"):
        ms.get_algorithm("isomap", n_landmarks=0)
    # as many landmarks as points: the classic Isomap
    classic = ms.get_algorithm("isomap").fit(X)
    every = ms.get_algorithm("isomap", n_landmarks=300).fit(X)
    np.testing.assert_array_equal(every.embedding_, classic.embedding_)
    assert not hasattr(every, "landmarks_")


def test_classic_isomap_refuses_geodesics_beyond_the_memory_limit(monkeypatch):
    X, _ = swiss_roll(400)                       # 400^2 x 12 bytes = 1.9 MB
    monkeypatch.setenv("MANIFOLD_STUDIO_MAX_LOAD_BYTES", "1M")
    from manifold_studio.algorithms import CallbackProgress

    seen = []
    with pytest.raises(DataError) as err:
        ms.get_algorithm("isomap").fit(X, progress=CallbackProgress(lambda f, m: seen.append(m), min_interval=0.0))
    assert not any("Neighbour" in m for m in seen)     # refused before any work
    msg = str(err.value)
    assert "Isomap on 400 points" in msg and "400 x 400" in msg and "1.8 MiB" in msg
    assert "memory limit of 1.0 MiB" in msg and "MANIFOLD_STUDIO_MAX_LOAD_BYTES" in msg
    assert "Set n_landmarks (for example 50)" in msg
    est = ms.get_algorithm("isomap", n_landmarks=50, random_state=0).fit(
        X, progress=CallbackProgress(lambda f, m: seen.append(m), min_interval=0.0))   # 400 x 50 x 4 bytes
    assert np.isfinite(est.embedding_).all() and any("Neighbour" in m for m in seen)


def _blobs(sizes, dim=5, gap=30.0, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(s, dim)) + gap * np.eye(dim)[c] for c, s in enumerate(sizes)])


def test_sampled_joining_equals_exact_when_the_samples_hold_every_point():
    from manifold_studio.algorithms.neighbors import knn_graph

    X = _blobs([120, 80, 60])
    G = knn_graph(X, 5)
    _, exact = connect_components(X, G)
    _, sampled = connect_components(X, G, approximate=True)
    assert len(exact) == 2
    assert [e[:2] for e in sorted(exact)] == [e[:2] for e in sorted(sampled)]
    np.testing.assert_allclose([e[2] for e in sorted(exact)], [e[2] for e in sorted(sampled)], rtol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_sampled_joining_from_small_samples_finds_short_links(monkeypatch, metric):
    """With samples far smaller than the pieces the pairs are found by refinement: the graph
    is connected and each link is at most a little longer than the exact closest pair."""
    from manifold_studio.algorithms.neighbors import NeighborIndex, knn_graph
    from scipy.sparse.csgraph import connected_components

    monkeypatch.setattr(graph_components, "CONNECT_SAMPLE", 16)
    X = _blobs([400, 300, 300], dim=8) + (5.0 if metric == "cosine" else 0.0)
    G = knn_graph(X, 6, index=NeighborIndex(X, metric=metric))
    G_exact, exact = connect_components(X, G, metric=metric)
    G_sampled, sampled = connect_components(X, G, metric=metric, approximate=True, seed=3)
    assert connected_components(G_sampled, directed=False)[0] == 1
    lengths_exact = sorted(d for _i, _j, d in exact)
    lengths_sampled = sorted(d for _i, _j, d in sampled)
    assert len(lengths_sampled) >= len(lengths_exact)
    assert lengths_sampled[0] <= 1.05 * lengths_exact[0]
    assert sum(lengths_sampled[:len(lengths_exact)]) <= 1.10 * sum(lengths_exact)
    # every reported length is the pair's true distance
    from scipy.spatial.distance import cdist

    name = {"euclidean": "euclidean", "manhattan": "cityblock", "cosine": "cosine"}[metric]
    for i, j, d in sampled:
        assert d == pytest.approx(cdist(X[i:i + 1], X[j:j + 1], name)[0, 0], rel=1e-9)


def test_isomap_with_approximate_neighbours_joins_pieces_from_samples():
    X = _blobs([300, 250], dim=30)
    with pytest.warns(UserWarning, match="searched from samples as the neighbours are approximate"):
        est = ms.get_algorithm("isomap", n_neighbors=8, neighbors="approximate", n_landmarks=100,
                               random_state=0).fit(X)
    assert np.isfinite(est.embedding_).all()
    # the two blobs stay apart in the map
    a, b = est.embedding_[:300].mean(axis=0), est.embedding_[300:].mean(axis=0)
    assert np.linalg.norm(a - b) > 3 * est.embedding_[:300].std(axis=0).max()


@pytest.mark.parametrize("neighbors", ["exact", "approximate"])
def test_joining_pieces_reports_progress_and_stops_on_cancel(neighbors):
    from manifold_studio.algorithms import CallbackProgress
    from manifold_studio.errors import FitCancelled

    X = _blobs([150, 120, 100, 90], dim=12)
    seen = []

    def on_progress(fraction, message):
        seen.append(message)
        if "Joining pieces" in message and "piece 2" in message:
            progress.cancel()                    # the user pressed Cancel

    progress = CallbackProgress(on_progress, min_interval=0.0)
    with pytest.raises(FitCancelled):
        ms.get_algorithm("isomap", n_neighbors=6, neighbors=neighbors, n_landmarks=60,
                         random_state=0).fit(X, progress=progress)
    assert any("4 pieces: piece 1" in m for m in seen)
    assert not any("Shortest paths" in m for m in seen)
