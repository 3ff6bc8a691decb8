"""Laplacian eigenmaps: agreement with scikit-learn's SpectralEmbedding, kernel width underflow."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms.neighbors import knn_graph
from manifold_studio.errors import DataError
from manifold_studio_builtins.laplacian_eigenmaps import heat_affinity
from procrustes import procrustes_residual
from spectral_data import swiss_roll


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("normalization", ["random_walk", "symmetric"])
@pytest.mark.parametrize("symmetrize", ["mean", "max"])
def test_matches_sklearn_spectral_embedding_on_the_same_affinity(solver, normalization, symmetrize):
    from sklearn.manifold import SpectralEmbedding

    X, _ = swiss_roll(800)
    ours = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, eigen_solver=solver,
                            normalization=normalization, symmetrize=symmetrize).fit(X)
    # n_neighbors counts the point itself (scikit-learn's meaning): 9 other points; the directed
    # heat weights H, then 0.5 (H + H^T) (scikit-learn's graph) or the union max(H, H^T)
    H = heat_affinity(knn_graph(X, 9, symmetric=False), ours.sigma_)
    A = 0.5 * (H + H.T) if symmetrize == "mean" else H.maximum(H.T)
    sk = SpectralEmbedding(n_components=2, affinity="precomputed", random_state=0).fit(A)
    # scikit-learn returns D^-1/2 v (random walk); the thesis' kernel 5.2 embedding is a multiple of v
    ref = sk.embedding_ if normalization == "random_walk" else sk.embedding_ * np.sqrt(ours.degrees_)[:, None]
    assert procrustes_residual(ref, ours.embedding_) < 1e-6


def _digits():
    from sklearn.datasets import load_digits
    return load_digits().data[:600]   # (400: two nearly equal eigenvalues, the solvers mix them)


def _blobs():
    from sklearn.datasets import make_blobs
    return make_blobs(400, centers=3, cluster_std=3.0, random_state=0)[0]


@pytest.mark.parametrize("data,tol", [(lambda: swiss_roll(600)[0], 1e-9), (_blobs, 1e-9),
                                      (lambda: ms.load_data("sample:wine").X, 1e-6), (_digits, 1e-4)])
def test_matches_sklearn_nearest_neighbors_affinity_by_default(data, tol):
    """scikit-learn's SpectralEmbedding(affinity='nearest_neighbors') averages the two directions,
    0.5 (A + A^T) of 0/1 connectivities; so does the default graph, and with a sigma far above
    every distance the heat weights are 1: the same map up to sign and scale (Procrustes)."""
    from sklearn.manifold import SpectralEmbedding

    X = data()
    ours = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, sigma=1e6).fit(X)  # ~binary weights
    sk = SpectralEmbedding(n_components=2, n_neighbors=10, random_state=0).fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_) < tol
    # the union (symmetrize='max') is another graph: a one-way edge weighs 1 instead of 0.5
    union = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, sigma=1e6, symmetrize="max").fit(X)
    assert procrustes_residual(sk.embedding_, union.embedding_) > 100 * tol


@pytest.mark.parametrize("symmetrize", ["mean", "max"])
@pytest.mark.parametrize("normalization", ["random_walk", "symmetric"])
def test_training_points_extend_to_their_embedding(symmetrize, normalization):
    X, _ = swiss_roll(400)
    est = ms.get_algorithm("laplacian_eigenmaps", symmetrize=symmetrize, normalization=normalization).fit(X)
    np.testing.assert_allclose(est.extend(X), est.embedding_, atol=1e-10)


def test_extension_kernel_weighs_one_way_edges_half():
    """The extension kernel of a new point follows the graph: an edge to a training point that
    does not have the new point among its own neighbours (one-way) weighs 0.5, a mutual one 1."""
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    est = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=3, n_components=1, sigma=100.0).fit(X)
    # each point's 2 nearest others: the neighbour radius of 0 is 2, of 1 is 1, of 2 is 2
    np.testing.assert_allclose(est.neighbour_radius_, [2, 1, 2, 2, 1, 2])
    x = np.array([[1.5]])             # its 3 nearest: 1 (d 0.5 <= radius 1), 2 (0.5 <= 2), 0 (1.5 <= 2): all mutual
    dist, idx = est._index_for_extend().query(x, 3)
    np.testing.assert_array_equal(est._edge_weights(dist, idx), [[1.0, 1.0, 1.0]])
    x = np.array([[-1.5]])            # d 1.5 to 0 (within its radius 2: mutual), 2.5 to 1 (> 1: one-way), 3.5 to 2 (> 2)
    dist, idx = est._index_for_extend().query(x, 3)
    w = dict(zip(idx[0].tolist(), est._edge_weights(dist, idx)[0].tolist()))
    assert w == {0: 1.0, 1: 0.5, 2: 0.5}
    union = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=3, n_components=1, sigma=100.0,
                             symmetrize="max").fit(X)
    assert (union._edge_weights(dist, idx) == 1.0).all()


def test_extension_follows_the_manifold():
    from scipy.stats import spearmanr

    X, t = swiss_roll(1000)
    X_new, t_new = swiss_roll(500, seed=1)
    est = ms.get_algorithm("laplacian_eigenmaps").fit(X)
    j = int(np.argmax([abs(spearmanr(est.embedding_[:, c], t)[0]) for c in range(2)]))
    assert abs(spearmanr(est.embedding_[:, j], t)[0]) > 0.95
    assert abs(spearmanr(est.extend(X_new)[:, j], t_new)[0]) > 0.95


def test_sigma_underflow_message():
    X, _ = swiss_roll(200)
    with pytest.raises(DataError, match="sigma=1e-05 is too small.*underflows"):
        ms.get_algorithm("laplacian_eigenmaps", sigma=1e-5).fit(X)


def test_far_new_points_get_finite_coordinates():
    X, _ = swiss_roll(300)
    sym = ms.get_algorithm("laplacian_eigenmaps", normalization="symmetric").fit(X)
    far = sym.extend(X[:3] + 1e4)
    assert np.isfinite(far).all() and np.abs(far).max() < 1e-12  # the eigenfunction's limit, 0
    rw = ms.get_algorithm("laplacian_eigenmaps").fit(X)
    far = rw.extend(X[:3] + 1e4)  # random walk: the average of the nearest points' coordinates
    assert np.isfinite(far).all() and np.abs(far).max() <= 1.5 * np.abs(rw.embedding_).max()
