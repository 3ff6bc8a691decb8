"""The neighbour-graph methods on the shared neighbour layer: scikit-learn's meanings (issue 22
items 2-4), approximate neighbours and phase timings (issue 24), B3, empty embeddings (issue 23)."""
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, pairwise_distances

import manifold_studio as ms
from manifold_studio.algorithms.conformance import CancelAfter
from manifold_studio.errors import DataError, InvalidParameterError
from procrustes import procrustes_residual
from spectral_data import moons, swiss_roll

SPECTRAL = ("isomap", "lle", "laplacian_eigenmaps", "spectral_clustering")


def test_precomputed_isomap_matches_sklearn_and_extends_from_distance_rows():
    from sklearn.manifold import Isomap

    X, _ = swiss_roll(500)
    X_new, _ = swiss_roll(100, seed=1)
    D = pairwise_distances(X)
    ours = ms.get_algorithm("isomap", n_neighbors=10, metric="precomputed").fit(D)
    sk = Isomap(n_neighbors=10, metric="precomputed").fit(D)
    assert procrustes_residual(sk.embedding_, ours.embedding_, scale=False) < 1e-8
    D_new = pairwise_distances(X_new, X)
    assert procrustes_residual(sk.transform(D_new), ours.extend(D_new), scale=False) < 1e-6
    # the same map as from the coordinates
    feat = ms.get_algorithm("isomap", n_neighbors=10).fit(X)
    np.testing.assert_allclose(ours.extend(D_new), feat.extend(X_new), atol=1e-4)
    np.testing.assert_allclose(ours.extend(D[:7]), ours.embedding_[:7], atol=1e-9)


@pytest.mark.parametrize("metric", ["cosine", "manhattan"])
def test_isomap_metric_matches_sklearn(metric):
    from sklearn.manifold import Isomap

    X, _ = swiss_roll(400)
    X = X + np.array([20.0, 0.0, 20.0])          # cosine needs points away from the origin
    ours = ms.get_algorithm("isomap", n_neighbors=10, metric=metric).fit(X)
    sk = Isomap(n_neighbors=10, metric=metric).fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_, scale=False) < 1e-6


def test_cosine_tsne_trustworthiness_close_to_sklearn():
    from sklearn.datasets import make_blobs
    from sklearn.manifold import TSNE as SkTSNE
    from sklearn.manifold import trustworthiness

    X, _ = make_blobs(300, 10, centers=5, cluster_std=2.0, random_state=0)
    ours = ms.get_algorithm("tsne", perplexity=20, metric="cosine", random_state=0, max_iter=500).fit(X)
    sk = SkTSNE(perplexity=20, metric="cosine", init="pca", random_state=0, max_iter=500).fit(X)
    t_ours = trustworthiness(X, ours.embedding_, n_neighbors=10, metric="cosine")
    t_sk = trustworthiness(X, sk.embedding_, n_neighbors=10, metric="cosine")
    assert t_ours >= t_sk - 0.01
    # precomputed cosine distances give the same map (the same P), extended from distance rows
    D = pairwise_distances(X, metric="cosine")
    pre = ms.get_algorithm("tsne", perplexity=20, metric="precomputed", init="random", random_state=0,
                           max_iter=500).fit(D)
    assert trustworthiness(X, pre.embedding_, n_neighbors=10, metric="cosine") >= t_sk - 0.01
    np.testing.assert_allclose(pre.extend(D[:5]), pre.embedding_[:5])
    with pytest.raises(InvalidParameterError, match="init='pca' cannot be used"):
        ms.get_algorithm("tsne", metric="precomputed").fit(D)


def test_n_neighbors_counts_the_point_itself_as_sklearn_for_eigenmaps():
    from sklearn.manifold import SpectralEmbedding

    X, _ = swiss_roll(800)
    sk = SpectralEmbedding(n_components=2, n_neighbors=5, random_state=0).fit(X)
    same = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=5, sigma=1e6).fit(X)      # ~binary weights
    shifted = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=6, sigma=1e6).fit(X)   # old meaning
    assert procrustes_residual(sk.embedding_, same.embedding_) < 0.05
    assert procrustes_residual(sk.embedding_, shifted.embedding_) > 0.1


def test_spectral_clustering_graph_is_sklearns():
    from sklearn.cluster import SpectralClustering

    X, _ = moons(300)
    # k >= 6: the graph is the two moons. With k = 5 it falls into 4 pieces, the eigenvalue 0 is
    # fourfold and any 2 vectors of its space are a right answer (scikit-learn warns "not fully
    # connected"): which partition comes out is rounding, so it cannot be compared.
    for k in (6, 10):
        sk = SpectralClustering(2, affinity="nearest_neighbors", n_neighbors=k, random_state=0).fit(X)
        ours = ms.get_algorithm("spectral_clustering", n_clusters=2, affinity="nearest_neighbors",
                                n_neighbors=k, random_state=0).fit(X)
        A = sk.affinity_matrix_.tocsr()
        # 0.5 (A + A^T) with the point itself in A; the Laplacian ignores the diagonal
        np.testing.assert_allclose(ours.degrees_, np.asarray(A.sum(axis=1)).ravel() - A.diagonal())
        assert adjusted_rand_score(sk.labels_, ours.labels_) == 1.0


@pytest.mark.parametrize("algo", ["laplacian_eigenmaps", "spectral_clustering"])
def test_precomputed_distances_give_the_euclidean_result(algo):
    X, _ = swiss_roll(300) if algo == "laplacian_eigenmaps" else moons(200)
    D = pairwise_distances(X)
    X_new = X[:10] + 0.05
    kw = {"n_clusters": 2, "affinity": "nearest_neighbors", "random_state": 0} if algo == "spectral_clustering" else {}
    a = ms.get_algorithm(algo, n_neighbors=8, **kw).fit(X)
    b = ms.get_algorithm(algo, n_neighbors=8, metric="precomputed", **kw).fit(D)
    np.testing.assert_allclose(b.embedding_, a.embedding_, atol=1e-8)
    np.testing.assert_allclose(b.extend(pairwise_distances(X_new, X)), a.extend(X_new), atol=1e-8)


def test_isomap_radius_and_n_neighbors_are_exclusive():
    X, _ = swiss_roll(100)
    with pytest.raises(InvalidParameterError, match="either n_neighbors or radius, not both"):
        ms.get_algorithm("isomap", radius=5.0).fit(X)
    with pytest.raises(InvalidParameterError, match="needs n_neighbors or radius"):
        ms.get_algorithm("isomap", n_neighbors=None).fit(X)
    with pytest.raises(InvalidParameterError, match="radius needs neighbors='exact'"):
        ms.get_algorithm("isomap", radius=5.0, n_neighbors=None, neighbors="approximate").fit(X)
    assert ms.get_algorithm("isomap", radius=6.0, n_neighbors=None).fit(X).embedding_.shape == (100, 2)


def test_isomap_largest_gives_nan_for_left_out_points_in_fit_and_extend():
    X, _ = swiss_roll(200)
    far = np.random.default_rng(1).normal(size=(8, 3)) * 0.1 + 500.0      # a separate piece
    Xa = np.vstack([X, far])
    est = ms.get_algorithm("isomap", n_neighbors=6, disconnected="largest").fit(Xa)
    assert np.isnan(est.embedding_[200:]).all() and np.isfinite(est.embedding_[:200]).all()
    ext = est.extend(Xa)
    np.testing.assert_array_equal(np.isnan(ext), np.isnan(est.embedding_))
    np.testing.assert_allclose(ext[:200], est.embedding_[:200], atol=1e-9)
    for r in (3, 203):   # sample-wise
        np.testing.assert_array_equal(est.extend(Xa[r:r + 1])[0], ext[r])
    assert np.isfinite(est.extend(far[:2] + 1.0)).all()    # new points join the largest piece
    D = pairwise_distances(Xa)
    pre = ms.get_algorithm("isomap", n_neighbors=6, disconnected="largest", metric="precomputed").fit(D)
    np.testing.assert_array_equal(np.isnan(pre.extend(D)), np.isnan(est.embedding_))
    np.testing.assert_allclose(pre.embedding_[:200], est.embedding_[:200], atol=1e-8)


def test_tsne_n_iter_is_scikit_learns_and_perplexity_below_n():
    X, _ = moons(60)
    est = ms.get_algorithm("tsne", perplexity=59.5, max_iter=40, random_state=0).fit(X)
    # scikit-learn's n_iter_: the index of the last iteration run; n_steps_ counts them
    assert est.n_iter_ == 39 and est.n_steps_ == 40 and np.isfinite(est.embedding_).all()
    rec = CancelAfter(15)
    stopped = ms.get_algorithm("tsne", perplexity=10, max_iter=200, random_state=0).fit(X, progress=rec)
    assert stopped.stopped_early_ and 0 < stopped.n_iter_ < 200
    with pytest.raises(DataError, match="perplexity=60 is too large: perplexity must be below n = 60"):
        ms.get_algorithm("tsne", perplexity=60).fit(X)


def test_empty_embeddings_are_errors():
    with pytest.raises(DataError, match="distances between linked neighbours are 0"):
        ms.get_algorithm("laplacian_eigenmaps").fit(np.ones((30, 3)))
    X, _ = swiss_roll(60)
    with pytest.raises(InvalidParameterError, match="reg=inf must be a finite number"):
        ms.get_algorithm("lle", reg=float("inf")).fit(X)


@pytest.mark.parametrize("algo", SPECTRAL + ("tsne",))
def test_approximate_neighbours_recall_timings_and_sample_wise_extend(algo):
    X, _ = swiss_roll(400, noise=0.05)
    kw = {"n_clusters": 3, "affinity": "nearest_neighbors", "random_state": 0} if algo == "spectral_clustering" else {}
    if algo == "tsne":
        kw = {"perplexity": 10, "max_iter": 100, "random_state": 0, "extend_iter": 20, "method": "fft"}
    if algo in ("isomap", "lle"):   # 10 neighbours (their default is 5, as scikit-learn's), as the others
        kw = {"n_neighbors": 10}
    est = ms.get_algorithm(algo, neighbors="approximate", **kw).fit(X)
    exact = ms.get_algorithm(algo, neighbors="exact", **kw).fit(X)
    assert est.neighbors_method_ == "approximate" and 0.95 <= est.neighbors_recall_ <= 1.0
    assert exact.neighbors_recall_ is None
    assert {"neighbours", "affinities" if algo == "tsne" else "neighbours"} <= set(est.timings_)
    assert all(v >= 0 for v in est.timings_.values())
    assert any(k.startswith("time_neighbours") for k in est.result_summary())
    if algo != "tsne":   # on 400 points the approximate graph is the exact one
        np.testing.assert_allclose(np.abs(est.embedding_), np.abs(exact.embedding_), atol=1e-6)
    X_new = swiss_roll(20, seed=5)[0]
    whole = est.extend(X_new)
    for r in (0, 11):
        np.testing.assert_allclose(est.extend(X_new[r:r + 1])[0], whole[r], atol=1e-12)


@pytest.mark.parametrize("algo", SPECTRAL + ("tsne",))
def test_unknown_metric_and_too_few_points_for_approximate(algo):
    X, _ = swiss_roll(12)
    with pytest.raises(InvalidParameterError, match="metric"):
        ms.get_algorithm(algo, metric="chebyshev")
    if algo == "tsne":   # its 3 * perplexity neighbours are capped at n - 1: perplexity is the bound
        with pytest.raises(DataError, match="perplexity"):
            ms.get_algorithm(algo, neighbors="approximate", perplexity=12).fit(X)
        return
    kw = {"affinity": "nearest_neighbors"} if algo == "spectral_clustering" else {}
    with pytest.raises(DataError, match="20"):
        ms.get_algorithm(algo, neighbors="approximate", n_neighbors=20, **kw).fit(X)
