"""UMAP (issue 24): the fuzzy graph against umap-learn, reproducibility, extension, supervision,
bad input. umap-learn is a test-only dependency (the [test] extra)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import manifold_studio as ms
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.algorithms.neighbors import make_index
from manifold_studio.algorithms.umap_graph import fuzzy_simplicial_set, query_knn
from manifold_studio.algorithms.umap_layout import find_ab_params, place_points, row_seeds
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError


def blobs(n=300, d=10, centers=4, scale=8.0, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.normal(scale=scale, size=(centers, d))
    y = rng.integers(0, centers, n)
    return C[y] + rng.normal(size=(n, d)), y


def umap(**params):
    return ms.get_algorithm("umap", **params)


def reference_knn(X, k, metric):
    """Exact neighbours with exact distances (the point itself first, distance 0), as
    umap-learn's fuzzy_simplicial_set takes them precomputed."""
    D = cdist(X, X, {"manhattan": "cityblock"}.get(metric, metric))
    np.fill_diagonal(D, -1.0)   # self first even against exact copies
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    dist = np.take_along_axis(D, idx, axis=1)
    dist[:, 0] = 0.0
    return idx, dist


# -- the fuzzy simplicial set ------------------------------------------------------------------
# The comparisons with umap-learn itself are slow (its first call compiles with numba, 35-60 s on a
# busy machine); the default run checks the graph against its definition with numpy instead.

def test_fuzzy_graph_follows_its_definition():
    X, _ = blobs(200, 5)
    k = 15
    G, sigma, rho, dist, idx, _ = fuzzy_simplicial_set(X, k)
    ref_idx, ref_dist = reference_knn(X, k, "euclidean")
    n = len(X)
    # the k - 1 nearest other points (distances in float32, as umap-learn)
    np.testing.assert_array_equal(idx, ref_idx[:, 1:])
    np.testing.assert_allclose(dist, ref_dist[:, 1:], rtol=1e-6)
    # rho: the distance to the nearest other point; sigma: the k - 1 memberships sum to log2(k)
    np.testing.assert_allclose(rho, dist[:, 0], rtol=1e-7)     # (kept in float32, as umap-learn)
    W = np.exp(-np.maximum(dist.astype(float) - rho[:, None], 0.0) / sigma[:, None])
    np.testing.assert_allclose(W.sum(axis=1), np.log2(k), rtol=1e-4)
    # the graph is the fuzzy union W + Wᵀ − W ∘ Wᵀ of those memberships
    M = np.zeros((n, n))
    M[np.repeat(np.arange(n), k - 1), idx.ravel()] = W.ravel()
    union = M + M.T - M * M.T
    np.testing.assert_allclose(G.toarray(), union, rtol=1e-6, atol=1e-12)
    assert G.nnz == np.count_nonzero(union) and np.all(G.diagonal() == 0)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
@pytest.mark.parametrize("d", [3, 40])     # k-d tree and brute-force searches
def test_fuzzy_graph_equals_umap_learn(metric, d):
    from umap.umap_ import fuzzy_simplicial_set as reference

    rng = np.random.default_rng(d)
    X = np.vstack([rng.normal(size=(150, d)), rng.normal(size=(100, d)) * 0.3 + 2.0])
    k = 15
    G, sigma, rho, *_ = fuzzy_simplicial_set(X, k, metric=metric)
    idx, dist = reference_knn(X, k, metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R, r_sigma, r_rho = reference(X, k, np.random.RandomState(0), metric, knn_indices=idx, knn_dists=dist)
    R = R.tocsr()
    assert G.shape == R.shape and G.nnz == R.nnz
    np.testing.assert_array_equal(G.indices, R.indices)
    assert abs(G - R).max() < 1e-6
    np.testing.assert_allclose(rho, r_rho, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sigma, r_sigma, rtol=1e-5)
    # memberships sum to log2(k) per point before the union (the binary search's target)
    assert np.all(G.diagonal() == 0) and abs(G - G.T).max() == 0


@pytest.mark.slow
def test_fuzzy_graph_with_duplicates_matches_umap_learn():
    from umap.umap_ import fuzzy_simplicial_set as reference

    X, _ = blobs(120, 5)
    X[10] = X[11]       # one exact copy: distance 0, membership 1 both ways
    G, *_ = fuzzy_simplicial_set(X, 10)
    idx, dist = reference_knn(X, 10, "euclidean")
    R, *_ = reference(X, 10, np.random.RandomState(0), "euclidean", knn_indices=idx, knn_dists=dist)
    assert abs(G - R.tocsr()).max() < 1e-6
    assert G[10, 11] == 1.0


@pytest.mark.slow
def test_supervised_intersection_equals_umap_learn():
    from umap.umap_ import discrete_metric_simplicial_set_intersection as reference

    from manifold_studio.algorithms.umap_target import categorical_intersection

    X, y = blobs(200, 5, centers=3, scale=1.5)
    G, *_ = fuzzy_simplicial_set(X, 12)
    for far in (2.5, 5.0, 1e12):
        ours = categorical_intersection(G, y, far)
        ref = reference(G.copy(), y, far_dist=far).tocsr()
        assert abs(ours - ref).max() < 1e-6


def test_ab_curve_is_the_least_squares_fit_of_the_target_curve():
    from scipy.optimize import curve_fit

    # umap-learn's definition: 1 / (1 + a d^(2b)) fitted to 1 below min_dist, exp(-(d - min_dist) / spread) beyond
    for spread, min_dist in [(1.0, 0.1), (2.0, 0.5)]:
        d = np.linspace(0, spread * 3, 300)
        target = np.where(d < min_dist, 1.0, np.exp(-(d - min_dist) / spread))
        (a, b), _ = curve_fit(lambda x, a, b: 1.0 / (1.0 + a * x ** (2 * b)), d, target)
        np.testing.assert_allclose(find_ab_params(spread, min_dist), (a, b), rtol=1e-6)


@pytest.mark.slow
def test_ab_curve_matches_umap_learn():
    from umap.umap_ import find_ab_params as reference

    for spread, min_dist in [(1.0, 0.1), (1.0, 0.0), (2.0, 0.5), (0.5, 0.5)]:
        np.testing.assert_allclose(find_ab_params(spread, min_dist), reference(spread, min_dist), rtol=1e-6)


def test_spectral_start_and_edge_schedule_match_umap_learn():
    """The start umap-learn's simplicial_set_embedding gives the SGD (the graph pruned below
    w_max / n_epochs, spectral_layout, noisy_scale_coords, each column onto [0, 10]) and its
    epochs_per_sample: ours equal them (up to the sign of an eigenvector, a mirror of the map)."""
    from umap.spectral import spectral_layout
    from umap.umap_ import make_epochs_per_sample, noisy_scale_coords

    from manifold_studio.algorithms.umap_layout import epochs_per_sample, rescale_init, spectral_init

    # one anisotropic cloud: the eigenvalues 2 and 3 are apart, so each eigenvector is unique up
    # to its sign (three equal blobs would leave a rotation inside a two-dimensional eigenspace)
    X = np.random.default_rng(0).normal(size=(300, 5)) * [4.0, 2.0, 1.0, 1.0, 1.0]
    G = fuzzy_simplicial_set(X, 15)[0].tocoo()
    n_epochs = 500
    keep = G.data >= G.data.max() / n_epochs
    P = G.copy()
    P.data[~keep] = 0.0
    P.eliminate_zeros()
    # umap-learn's graph is float32 (on a float64 copy its eigsh, started from ones, misses the
    # trivial eigenvector and drops the Fiedler vector instead)
    ref = noisy_scale_coords(spectral_layout(X, P.astype(np.float32), 2, np.random.RandomState(0)),
                             np.random.RandomState(0), max_coord=10, noise=0.0001)
    ref = 10.0 * (ref - ref.min(0)) / (ref.max(0) - ref.min(0))
    Y, how, n_comp = spectral_init(P.tocsr(), 2, np.random.default_rng(0), X=X)
    Y = rescale_init(Y)
    assert (how, n_comp) == ("spectral", 1)
    for d in range(2):
        mirrored = np.corrcoef(Y[:, d], ref[:, d])[0, 1] < 0
        col = 10.0 - Y[:, d] if mirrored else Y[:, d]
        assert np.abs(col - ref[:, d]).max() < 2e-3      # 3e-4 measured: ARPACK tol 1e-4, jitter
    np.testing.assert_allclose(epochs_per_sample(P.data, n_epochs), make_epochs_per_sample(P.data, n_epochs),
                               rtol=1e-12)


# -- the fit ------------------------------------------------------------------------------------

def test_same_seed_same_map_other_seed_other_map():
    X, _ = blobs()
    a = umap(random_state=3, n_epochs=100).fit(X).embedding_
    b = umap(random_state=3, n_epochs=100).fit(X).embedding_
    c = umap(random_state=4, n_epochs=100).fit(X).embedding_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.slow
def test_clusters_are_separated_and_quality_matches_umap_learn():
    import umap as umap_learn
    from sklearn.datasets import load_digits
    from sklearn.manifold import trustworthiness

    X, y = load_digits(return_X_y=True)
    X, y = X[:800], y[:800]
    est = umap(random_state=0, n_epochs=200).fit(X)
    assert est.embedding_.shape == (800, 2) and est.init_ == "spectral"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = umap_learn.UMAP(random_state=0, n_epochs=200).fit(X)
    tw, tw_ref = (trustworthiness(X, E, n_neighbors=10) for E in (est.embedding_, ref.embedding_))
    assert tw >= tw_ref - 0.01 and tw > 0.95, (tw, tw_ref)
    # a, b as umap-learn's defaults
    np.testing.assert_allclose([est.a_, est.b_], [ref._a, ref._b], rtol=1e-6)


def test_disconnected_graph_starts_from_each_components_eigenmap():
    from manifold_studio.algorithms.umap_layout import spectral_init

    X, y = blobs(200, 5, centers=2, scale=100.0)
    with pytest.warns(UserWarning, match="2 separate components"):
        est = umap(n_neighbors=5, random_state=0, n_epochs=50).fit(X)
    assert est.init_ == "components" and np.all(np.isfinite(est.embedding_))
    E = est.embedding_
    a, b = E[y == 0], E[y == 1]      # the two components apart in the map
    assert np.linalg.norm(a.mean(0) - b.mean(0)) > 2 * max(a.std(0).max(), b.std(0).max())
    G, *_ = fuzzy_simplicial_set(X, 5)
    rng = np.random.default_rng(0)
    Y, how, n_comp = spectral_init(G, 2, rng)          # without the data: a random start
    assert (how, n_comp) == ("random", 2) and np.abs(Y).max() <= 10
    Y, how, _ = spectral_init(G, 2, rng, X=X)
    assert how == "components" and np.abs(Y).max() == pytest.approx(10.0, abs=1e-3)
    # each component's start is its own eigenmap: a connected component alone gives the same shape
    rows = np.flatnonzero(y == 0)
    alone, how_alone, _ = spectral_init(G[rows][:, rows].tocsr(), 2, np.random.default_rng(1))
    assert how_alone == "spectral"
    part = Y[rows] - Y[rows].mean(0)
    ref = alone - alone.mean(0)
    cos = np.abs(np.sum(part * ref, axis=0)) / (np.linalg.norm(part, axis=0) * np.linalg.norm(ref, axis=0))
    assert np.all(cos > 0.99)


def test_progress_partial_maps_and_cancel_keeps_the_map():
    X, _ = blobs(400)
    maps = []
    progress = CallbackProgress(on_partial=maps.append)
    est = umap(random_state=0, n_epochs=1500).fit(X, progress=progress)
    assert len(maps) >= 2 and maps[0].shape == (400, 2)
    assert not np.allclose(maps[0], maps[-1])
    seen = []

    class StopAfterMaps(CallbackProgress):
        def partial(self, result):
            seen.append(result)
            if len(seen) == 2:
                self.cancel()

    with pytest.warns(UserWarning, match="Stopped early"):
        est = umap(random_state=0, n_epochs=1_000_000).fit(X, progress=StopAfterMaps())
    assert est.stopped_early_ and 0 < est.n_iter_ < 1_000_000
    np.testing.assert_array_equal(est.embedding_, seen[-1])
    assert est.extend(X[:3]).shape == (3, 2)


def test_cancel_during_the_neighbour_search():
    X, _ = blobs(300)
    progress = CallbackProgress()
    progress.cancel()
    with pytest.raises(FitCancelled):
        umap().fit(X, progress=progress)


# -- extend -------------------------------------------------------------------------------------

def test_extend_places_new_points_of_a_cluster_inside_it():
    X, y = blobs(600, 10, centers=4)
    X_fit, y_fit, X_new, y_new = X[:500], y[:500], X[500:], y[500:]
    est = umap(random_state=0, n_epochs=200).fit(X_fit)
    E = est.extend(X_new)
    centres = np.array([est.embedding_[y_fit == c].mean(axis=0) for c in range(4)])
    nearest_centre = np.argmin(((E[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest_centre == y_new) == 1.0
    # inside: each new point's 10 nearest fitted points in the map are all of its cluster, and it
    # is far nearer its own cluster's centre than any other
    from scipy.spatial import cKDTree

    _, near = cKDTree(est.embedding_).query(E, k=10)
    assert np.all(y_fit[near] == y_new[:, None])
    d = np.linalg.norm(E[:, None, :] - centres[None], axis=2)
    own = d[np.arange(len(E)), y_new]
    d[np.arange(len(E)), y_new] = np.inf
    assert np.all(own < 0.5 * d.min(axis=1))


def test_extend_is_sample_wise_and_deterministic():
    X, _ = blobs(400, 30)       # brute-force search (above the k-d tree's dimension)
    est = umap(random_state=0, n_epochs=100).fit(X[:300])
    X_new = X[300:340]
    full = est.extend(X_new)
    for i in range(0, 40, 3):
        np.testing.assert_array_equal(est.extend(X_new[i:i + 1])[0], full[i])
    np.testing.assert_array_equal(est.extend(X_new[::-1]), full[::-1])
    np.testing.assert_array_equal(est.extend(X_new), full)


def test_extend_of_a_training_point_is_its_place():
    X, _ = blobs(200)
    est = umap(random_state=0, n_epochs=50).fit(X)
    np.testing.assert_array_equal(est.extend(X[:10]), est.embedding_[:10])


def test_place_points_uses_each_row_own_stream():
    Y = np.random.default_rng(0).normal(size=(50, 2))
    idx = np.tile(np.arange(5), (2, 1))
    w = np.ones((2, 5))
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    out = place_points(X, idx, w, Y, 1.6, 0.9, seed=1, n_epochs=30, learning_rate=0.25, negative_sample_rate=5)
    np.testing.assert_array_equal(out[0], out[1])       # same row, same stream, same result
    assert not np.array_equal(row_seeds(X[:1], 1), row_seeds(X[:1] + 1e-12, 1))


# -- supervised UMAP ------------------------------------------------------------------------------

def test_supervised_separates_classes_that_unsupervised_mixes():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))                    # one blob, labels by a hidden direction
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)

    def separation(E):
        return cross_val_score(KNeighborsClassifier(10), E, y, cv=5).mean()

    plain = umap(random_state=0, n_epochs=200).fit(X, y).embedding_   # target_weight 0 ignores y
    sup = umap(random_state=0, n_epochs=200, target_weight=0.5).fit(X, y).embedding_
    assert separation(sup) > 0.97 > separation(plain) + 0.05, (separation(sup), separation(plain))
    np.testing.assert_array_equal(plain, umap(random_state=0, n_epochs=200).fit(X).embedding_)


def test_supervised_with_text_labels():
    X, y = blobs(200, 5, centers=2, scale=1.0)
    names = np.array(["left", "right"], dtype=object)[y]
    est = umap(random_state=0, n_epochs=100, target_weight=1.0).fit(X, names)
    assert np.all(np.isfinite(est.embedding_))


# -- bad input ----------------------------------------------------------------------------------

def test_n_neighbors_larger_than_data_truncated_with_a_warning():
    # umap-learn: n_neighbors >= n warns and uses n - 1; the map is then the n - 1 map
    X, _ = blobs(20)
    with pytest.warns(UserWarning, match=r"n_neighbors=25 is larger than the data \(20 points\): truncated to 19"):
        big = umap(n_neighbors=25, n_epochs=10, random_state=0).fit(X)
    same = umap(n_neighbors=19, n_epochs=10, random_state=0).fit(X)
    assert big.n_neighbors_ == 19
    np.testing.assert_array_equal(big.embedding_, same.embedding_)
    np.testing.assert_array_equal(big.extend(X[:3] + 0.01), same.extend(X[:3] + 0.01))


def test_n_neighbors_below_two_refused():
    with pytest.raises(InvalidParameterError, match="n_neighbors"):
        umap(n_neighbors=1).fit(blobs(20)[0])


def test_min_dist_larger_than_spread():
    with pytest.raises(InvalidParameterError, match=r"min_dist=2 is larger than spread=1"):
        umap(min_dist=2.0).fit(blobs(50)[0])


def test_constant_data():
    with pytest.raises(DataError, match="All 30 points are identical"):
        umap().fit(np.ones((30, 4)))


def test_duplicate_points_fit_with_a_warning():
    X, _ = blobs(200, 5)
    X = np.vstack([X, np.repeat(X[:1], 20, axis=0)])     # 21 copies of one point
    with pytest.warns(UserWarning, match=r"21 point\(s\) have at least n_neighbors - 1 exact duplicates"):
        est = umap(random_state=0, n_epochs=100).fit(X)
    E = est.embedding_
    assert np.all(np.isfinite(E))
    copies = np.r_[0, 200:220]
    assert np.ptp(E[copies], axis=0).max() < 0.05 * np.ptp(E, axis=0).max()


def test_nan_refused():
    X, _ = blobs(50)
    X[7, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        umap().fit(X)


@pytest.mark.parametrize("neighbors", ["exact", "approximate"])
def test_unknown_metric(neighbors):
    with pytest.raises(InvalidParameterError, match=r"metric.*'euclidean', 'cosine', 'manhattan'"):
        umap(metric="chebyshev", neighbors=neighbors).fit(blobs(50)[0])
    # the index itself names the metrics it knows
    with pytest.raises(InvalidParameterError, match=r"metric='chebyshev' is not known to the neighbour search"):
        fuzzy_simplicial_set(blobs(50)[0], 10, metric="chebyshev")
    with pytest.raises(InvalidParameterError, match=r"metric='chebyshev' is not known to the neighbour search"):
        make_index(blobs(50)[0], neighbors=neighbors, metric="chebyshev", n_neighbors=5)


def test_cosine_refuses_zero_rows():
    X, _ = blobs(50)
    X[4] = 0.0
    with pytest.raises(DataError, match=r"cosine.*non-zero length.*row 4.*all zeros"):
        umap(metric="cosine").fit(X)


def test_cosine_new_zero_row_is_at_distance_one_from_everything():
    X, _ = blobs(60, 6)
    for kind in ("exact", "approximate"):
        index = make_index(X, neighbors=kind, metric="cosine", n_neighbors=5)
        dist, idx = query_knn(index, np.vstack([np.zeros((1, 6)), X[:1]]), 5)
        np.testing.assert_array_equal(dist[0], np.ones(5))
        assert idx[1, 0] == 0 and dist[1, 0] == pytest.approx(0.0, abs=1e-12)
    est = umap(metric="cosine", n_epochs=20, random_state=0).fit(X)
    assert np.all(np.isfinite(est.extend(np.zeros((2, 6)))))


def test_target_weight_without_labels():
    with pytest.raises(DataError, match=r"target_weight=0.5 asks for supervised UMAP, but no labels"):
        umap(target_weight=0.5).fit(blobs(50)[0])


@pytest.mark.parametrize("metric", ["cosine", "manhattan"])
def test_other_metrics_fit_and_extend(metric):
    X, y = blobs(300, 20)
    est = umap(metric=metric, random_state=0, n_epochs=100).fit(X[:250])
    E = est.extend(X[250:])
    assert E.shape == (50, 2) and np.all(np.isfinite(E))


# -- labels reach supervised UMAP through the session and the command line ---------------------------

def test_session_passes_labels_only_when_target_weight_asks():
    from manifold_studio.plugins.host import PluginHost
    from manifold_studio.session.model import Session

    assert umap(target_weight=0.3).uses_labels() and not umap().uses_labels()
    assert ms.get_algorithm("svm").uses_labels() and not ms.get_algorithm("pca").uses_labels()
    session = Session(PluginHost().discover())
    ds = session.load("sample:iris")
    plain = session.run("umap", n_neighbors=10, n_epochs=50, random_state=0)
    sup = session.run("umap", n_neighbors=10, n_epochs=50, random_state=0, target_weight=0.9)
    direct = umap(n_neighbors=10, n_epochs=50, random_state=0, target_weight=0.9).fit(ds.X, ds.labels)
    np.testing.assert_array_equal(sup.embedding, direct.embedding_)
    np.testing.assert_array_equal(plain.embedding, umap(n_neighbors=10, n_epochs=50, random_state=0).fit(ds.X).embedding_)


def test_command_line_supervised_umap(tmp_path):
    from manifold_studio.cli.main import main

    out = tmp_path / "map.csv"
    assert main(["run", "umap", "--data", "sample:iris", "--param", "target_weight=0.9", "--param", "n_epochs=50",
                 "--param", "random_state=0", "--param", "n_neighbors=10", "--out", str(out), "--quiet"]) == 0
    ds = ms.load_data("sample:iris")
    expected = umap(n_neighbors=10, n_epochs=50, random_state=0, target_weight=0.9).fit(ds.X, ds.labels).embedding_
    import pandas as pd

    table = pd.read_csv(out)
    got = table[["umap_1", "umap_2"]].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_model_file_round_trip(tmp_path):
    from manifold_studio.files.model_file import load_model, save_model

    X, y = blobs(250, 12)
    est = umap(metric="cosine", random_state=0, n_epochs=80, target_weight=0.5).fit(X[:200], y[:200])
    loaded = load_model(save_model(est, tmp_path / "umap.npz"))
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.embedding_, est.embedding_)
    np.testing.assert_array_equal(loaded.extend(X[200:]), est.extend(X[200:]))
