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
def test_matches_sklearn_spectral_embedding_on_the_same_affinity(solver, normalization):
    from sklearn.manifold import SpectralEmbedding

    X, _ = swiss_roll(800)
    ours = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, eigen_solver=solver,
                            normalization=normalization).fit(X)
    # n_neighbors counts the point itself (scikit-learn's meaning): 9 other points
    A = heat_affinity(knn_graph(X, 9), ours.sigma_)
    sk = SpectralEmbedding(n_components=2, affinity="precomputed", random_state=0).fit(A)
    # scikit-learn returns D^-1/2 v (random walk); the thesis' kernel 5.2 embedding is a multiple of v
    ref = sk.embedding_ if normalization == "random_walk" else sk.embedding_ * np.sqrt(ours.degrees_)[:, None]
    assert procrustes_residual(ref, ours.embedding_) < 1e-6


def test_close_to_sklearn_nearest_neighbors_affinity():
    from sklearn.manifold import SpectralEmbedding

    X, _ = swiss_roll(800)
    ours = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, sigma=1e6).fit(X)  # ~binary weights
    sk = SpectralEmbedding(n_components=2, n_neighbors=10, random_state=0).fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_) < 0.05


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
