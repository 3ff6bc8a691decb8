"""Classical MDS: = PCA for training and extended points; precomputed input; bad matrices."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

import manifold_studio as ms
from manifold_studio.errors import DataError
from procrustes import procrustes_residual


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * [5, 2, 1, 0.3] + 1.0
    return X, rng.normal(size=(60, 4)) * 3


def _pca(X, X_new, k=2):
    mean = X.mean(0)
    _, _, Vt = np.linalg.svd(X - mean, full_matrices=False)
    return (X - mean) @ Vt[:k].T, (X_new - mean) @ Vt[:k].T


def test_euclidean_mds_is_pca_for_training_and_extended_points(data):
    X, X_new = data
    mds = ms.get_algorithm("mds").fit(X)
    ref_train, ref_new = _pca(X, X_new)
    np.testing.assert_allclose(np.abs(mds.embedding_), np.abs(ref_train), atol=1e-9)
    np.testing.assert_allclose(np.abs(mds.extend(X_new)), np.abs(ref_new), atol=1e-9)
    assert mds.n_negative_eigenvalues_ == 0 and mds.warning_ == ""


def test_precomputed_equals_euclidean_and_extends_from_dissimilarities(data):
    X, X_new = data
    a = ms.get_algorithm("mds").fit(X)
    b = ms.get_algorithm("mds", dissimilarity="precomputed").fit(cdist(X, X))
    np.testing.assert_allclose(np.abs(b.embedding_), np.abs(a.embedding_), atol=1e-8)
    np.testing.assert_allclose(np.abs(b.extend(cdist(X_new, X))), np.abs(a.extend(X_new)), atol=1e-8)
    assert b.n_negative_eigenvalues_ == 0


def test_matches_sklearn_classical_mds_when_available(data):
    X, _ = data
    manifold = pytest.importorskip("sklearn.manifold")
    if not hasattr(manifold, "ClassicalMDS"):
        pytest.skip("this scikit-learn has no ClassicalMDS")
    sk = manifold.ClassicalMDS(n_components=2).fit(X)
    assert procrustes_residual(sk.embedding_, ms.get_algorithm("mds").fit(X).embedding_, scale=False) < 1e-8


def test_negative_eigenvalues_are_reported(data):
    X, _ = data
    D = cdist(X, X, "cityblock")  # not Euclidean
    mds = ms.get_algorithm("mds", dissimilarity="precomputed").fit(D)
    assert mds.n_negative_eigenvalues_ > 0
    assert "not Euclidean" in mds.warning_ and "negative eigenvalue" in mds.warning_
    assert mds.result_summary()["n_negative_eigenvalues"] == mds.n_negative_eigenvalues_


def test_bad_dissimilarity_matrices(data):
    X, _ = data
    D = cdist(X[:20], X[:20])
    mds = ms.get_algorithm("mds", dissimilarity="precomputed")
    with pytest.raises(DataError, match="square"):
        mds.fit(D[:, :15])
    bad = D.copy()
    bad[2, 5] += 1.0
    with pytest.raises(DataError, match=r"symmetric: entry \((2, 5|5, 2)\)"):
        mds.fit(bad)
    bad = D.copy()
    bad[3, 3] = 0.5
    with pytest.raises(DataError, match=r"zero diagonal.*\(3, 3\)"):
        mds.fit(bad)
    bad = D.copy()
    bad[1, 4] = bad[4, 1] = -1.0
    with pytest.raises(DataError, match="negative"):
        mds.fit(bad)
    mds.fit(D)
    with pytest.raises(DataError, match="dissimilarities to the 20 fitted points"):
        mds.extend(D[:3, :10])
