"""PCA against scikit-learn (the test oracle) and the seeds' identities."""
import numpy as np
import pytest
from sklearn.decomposition import PCA as SkPCA

import manifold_studio as ms
from manifold_studio.errors import DataError


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d) * 3


def _same_up_to_sign(A, B, tol=1e-8):
    signs = np.sign(np.sum(A * B, axis=0))
    np.testing.assert_allclose(A * signs, B, atol=tol * max(1.0, np.abs(B).max()))


@pytest.mark.parametrize("shape", [(200, 6), (30, 80)], ids=["n>d", "d>n"])
@pytest.mark.parametrize("whiten", [False, True])
def test_matches_sklearn(shape, whiten):
    X = _data(*shape)
    k = 4
    ours = ms.get_algorithm("pca", n_components=k, whiten=whiten).fit(X)
    ref = SkPCA(n_components=k, whiten=whiten, svd_solver="full").fit(X)
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(ours.singular_values_, ref.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(ours.mean_, ref.mean_, atol=1e-12)
    _same_up_to_sign(ours.embedding_, ref.transform(X))
    X_new = _data(25, shape[1], seed=3)
    _same_up_to_sign(ours.extend(X_new), ref.transform(X_new))
    _same_up_to_sign(ours.components_.T, ref.components_.T)


@pytest.mark.parametrize("fraction", [0.5, 0.8, 0.95, 0.999])
def test_fraction_of_variance(fraction):
    X = _data(150, 10)
    ours = ms.get_algorithm("pca", n_components=fraction).fit(X)
    ref = SkPCA(n_components=fraction, svd_solver="full").fit(X)
    assert ours.n_components_ == ref.n_components_
    assert ours.explained_variance_ratio_.sum() >= fraction
    assert ours.embedding_.shape == (150, ref.n_components_)


def test_whitened_coordinates_are_sphered():
    X = _data(300, 5)
    Z = ms.get_algorithm("pca", n_components=3, whiten=True).fit_transform(X)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(3), atol=1e-10)


def test_extend_of_training_points_is_the_embedding():
    X = _data(100, 5)
    est = ms.get_algorithm("pca", n_components=3).fit(X)
    np.testing.assert_allclose(est.extend(X), est.embedding_, atol=1e-10)


@pytest.mark.parametrize("whiten", [False, True])
def test_reconstruction(whiten):
    X = _data(120, 6)
    full = ms.get_algorithm("pca", n_components=6, whiten=whiten).fit(X)
    np.testing.assert_allclose(full.reconstruct(full.embedding_), X, atol=1e-9)
    part = ms.get_algorithm("pca", n_components=2, whiten=whiten).fit(X)
    ref = SkPCA(2, whiten=whiten).fit(X)
    np.testing.assert_allclose(part.reconstruct(part.extend(X)), ref.inverse_transform(ref.transform(X)), atol=1e-8)
    # mean reconstruction error equals the discarded variance (times (n-1)/n)
    rest = full.explained_variance_[2:].sum() * (X.shape[0] - 1) / X.shape[0]
    assert part.reconstruction_error(X) == pytest.approx(rest, rel=1e-8)


def test_pca_is_the_eigendecomposition_of_the_covariance():
    X = _data(200, 4)
    est = ms.get_algorithm("pca", n_components=4).fit(X)
    evals = np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1]
    np.testing.assert_allclose(est.explained_variance_, evals, rtol=1e-9)


# -- bad input ------------------------------------------------------------------------

def test_too_many_components_is_a_clear_error():
    X = _data(10, 3)
    with pytest.raises(DataError, match=r"n_components=5 .*min\(10, 3\) = 3"):
        ms.get_algorithm("pca", n_components=5).fit(X)


def test_one_row_is_a_clear_error():
    with pytest.raises(DataError, match="1 sample"):
        ms.get_algorithm("pca", n_components=1).fit(np.ones((1, 4)))


def test_nan_is_a_clear_error():
    X = _data(20, 3)
    X[4, 2] = np.nan
    with pytest.raises(DataError, match="NaN.*row 4 column 2"):
        ms.get_algorithm("pca").fit(X)


def test_invalid_parameter_names_the_parameter():
    with pytest.raises(ms.InvalidParameterError, match="n_components"):
        ms.get_algorithm("pca", n_components=0)
    with pytest.raises(ms.InvalidParameterError, match="whiten"):
        ms.get_algorithm("pca", whiten="sometimes")
    with pytest.raises(ms.InvalidParameterError, match="no_such"):
        ms.get_algorithm("pca", no_such=1)


def test_failed_fit_keeps_previous_results():
    X = _data(50, 4)
    est = ms.get_algorithm("pca", n_components=2).fit(X)
    before = est.embedding_.copy()
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(DataError):
        est.fit(bad)
    np.testing.assert_array_equal(est.embedding_, before)
