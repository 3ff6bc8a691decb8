"""LLE: agreement with scikit-learn (standard LLE + transform), duplicates, k >= n."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError
from procrustes import procrustes_residual
from spectral_data import swiss_roll


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_matches_sklearn_lle_fit_and_transform(solver):
    from sklearn.manifold import LocallyLinearEmbedding

    X, _ = swiss_roll(800)
    X_new, _ = swiss_roll(200, seed=1)
    ours = ms.get_algorithm("lle", n_neighbors=12, n_components=2, eigen_solver=solver).fit(X)
    sk = LocallyLinearEmbedding(n_neighbors=12, n_components=2, eigen_solver="dense").fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_) < 1e-5
    assert procrustes_residual(sk.transform(X_new), ours.extend(X_new)) < 1e-5
    # unit mean-square coordinates (eq. 4.13)
    np.testing.assert_allclose(np.mean(ours.embedding_ ** 2, axis=0), 1.0, rtol=1e-8)


def test_duplicated_points_are_handled_by_regularisation():
    X, _ = swiss_roll(400)
    X = np.vstack([X, X[:50]])  # 50 exact duplicates: singular local Gram matrices
    est = ms.get_algorithm("lle", n_neighbors=10).fit(X)
    assert np.isfinite(est.embedding_).all()
    ext = est.extend(X[:60])
    # a duplicated point is one of its twins: its extension is that twin's embedding
    twin_gap = np.minimum(np.abs(ext[:50] - est.embedding_[:50]).max(axis=1),
                          np.abs(ext[:50] - est.embedding_[400:]).max(axis=1))
    assert twin_gap.max() < 1e-8
    np.testing.assert_allclose(ext[50:], est.embedding_[50:60], atol=1e-8)
    # twins get (nearly) the same coordinates
    assert np.abs(est.embedding_[:50] - est.embedding_[400:]).max() < 1e-2


def test_duplicates_without_regularisation_give_a_clear_message():
    X, _ = swiss_roll(200)
    X = np.vstack([X] * 12)  # every neighbourhood is all duplicates
    with pytest.raises(DataError, match="reg"):
        ms.get_algorithm("lle", n_neighbors=10, reg=0.0).fit(X)


def test_k_not_smaller_than_n():
    X, _ = swiss_roll(8)
    with pytest.raises(DataError, match="n_neighbors=8 is too large"):
        ms.get_algorithm("lle", n_neighbors=8).fit(X)
