"""Kernel PCA: agreement with scikit-learn (fit + transform), linear kernel = PCA, bad input."""
import numpy as np
import pytest
from sklearn.decomposition import KernelPCA

import manifold_studio as ms
from manifold_studio.errors import DataError
from procrustes import procrustes_residual
from spectral_data import swiss_roll


@pytest.mark.parametrize("kernel,kw", [("rbf", {"gamma": 0.02}), ("poly", {"gamma": 0.01, "degree": 2, "coef0": 1}),
                                       ("sigmoid", {"gamma": 0.001, "coef0": 0.5}), ("linear", {})])
def test_matches_sklearn_kernel_pca_fit_and_transform(kernel, kw):
    from sklearn.decomposition import KernelPCA

    X, _ = swiss_roll(500)
    X_new, _ = swiss_roll(200, seed=1)
    ours = ms.get_algorithm("kernel_pca", n_components=3, kernel=kernel, **kw).fit(X)
    sk = KernelPCA(n_components=3, kernel=kernel, **kw).fit(X)
    # same eigenvalues (sklearn's are the eigenvalues of the centred kernel too)
    np.testing.assert_allclose(ours.eigenvalues_, sk.eigenvalues_, rtol=1e-8)
    assert procrustes_residual(sk.transform(X), ours.embedding_, scale=False) < 1e-8
    assert procrustes_residual(sk.transform(X_new), ours.extend(X_new), scale=False) < 1e-8
    # component by component, up to sign
    np.testing.assert_allclose(np.abs(ours.extend(X_new)), np.abs(sk.transform(X_new)), atol=1e-7 * np.abs(ours.embedding_).max())


def test_linear_kernel_is_pca():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)) * [4, 2, 1, 0.5, 0.2] + 3.0
    X_new = rng.normal(size=(50, 5)) * 3
    kpca = ms.get_algorithm("kernel_pca", kernel="linear", n_components=3).fit(X)
    if "pca" in ms.list_algorithms():
        pca = ms.get_algorithm("pca", n_components=3).fit(X)
        ref_train, ref_new = pca.embedding_, pca.extend(X_new)
    else:  # pragma: no cover - the pca plugin is optional here
        mean = X.mean(0)
        _, _, Vt = np.linalg.svd(X - mean, full_matrices=False)
        ref_train, ref_new = (X - mean) @ Vt[:3].T, (X_new - mean) @ Vt[:3].T
    np.testing.assert_allclose(np.abs(kpca.embedding_), np.abs(ref_train), atol=1e-9)
    np.testing.assert_allclose(np.abs(kpca.extend(X_new)), np.abs(ref_new), atol=1e-9)
    assert procrustes_residual(ref_new, kpca.extend(X_new), scale=False) < 1e-10


def test_rbf_width_underflow_message():
    X, _ = swiss_roll(100)
    with pytest.raises(DataError, match="gamma.*underflows"):
        ms.get_algorithm("kernel_pca", kernel="rbf", gamma=1e5).fit(X)


def test_summary_reports_explained_fraction():
    X, _ = swiss_roll(200)
    s = ms.get_algorithm("kernel_pca", kernel="linear", n_components=3).fit(X).result_summary()
    assert s["explained_fraction"] == pytest.approx(1.0)


def test_non_finite_kernel_message():
    X, _ = swiss_roll(100)
    with pytest.raises(DataError, match="non-finite"):
        ms.get_algorithm("kernel_pca", kernel="poly", degree=2.5, gamma=1.0, coef0=-100.0).fit(X)


# -- kernel='precomputed' and n_components=None (scikit-learn's meaning) ----------------------

def _rbf(A, B, gamma=0.3):
    d2 = np.sum(A * A, 1)[:, None] - 2 * A @ B.T + np.sum(B * B, 1)[None, :]
    return np.exp(-gamma * np.maximum(d2, 0.0))


def test_precomputed_kernel_matches_sklearn():
    rng = np.random.default_rng(3)
    X, new = rng.normal(size=(70, 4)), rng.normal(size=(9, 4))
    K, Kn = _rbf(X, X), _rbf(new, X)
    ours = ms.get_algorithm("kernel_pca", kernel="precomputed", n_components=3).fit(K)
    ref = KernelPCA(n_components=3, kernel="precomputed").fit(K)
    np.testing.assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    signs = np.sign(np.sum(ours.embedding_ * ref.transform(K), axis=0))
    np.testing.assert_allclose(ours.embedding_ * signs, ref.transform(K), atol=1e-10)
    np.testing.assert_allclose(ours.transform(Kn) * signs, ref.transform(Kn), atol=1e-10)
    # the same as the rbf kernel computed inside, for training and new points
    inner = ms.get_algorithm("kernel_pca", kernel="rbf", gamma=0.3, n_components=3).fit(X)
    np.testing.assert_allclose(np.abs(inner.transform(new)), np.abs(ours.transform(Kn)), atol=1e-10)
    # extension is sample-wise and leaves the caller's kernel untouched
    Kn_copy = Kn.copy()
    np.testing.assert_allclose(ours.transform(Kn[2:3])[0], ours.transform(Kn)[2], atol=1e-12)
    np.testing.assert_array_equal(Kn, Kn_copy)


def test_precomputed_kernel_bad_shapes_are_named():
    K = _rbf(np.random.default_rng(0).normal(size=(20, 3)), np.random.default_rng(0).normal(size=(20, 3)))
    with pytest.raises(DataError, match="square n × n kernel matrix"):
        ms.get_algorithm("kernel_pca", kernel="precomputed").fit(K[:, :15])
    bent = K.copy()
    bent[0, 5] += 0.5
    with pytest.raises(DataError, match="must be symmetric"):
        ms.get_algorithm("kernel_pca", kernel="precomputed").fit(bent)
    est = ms.get_algorithm("kernel_pca", kernel="precomputed").fit(K)
    with pytest.raises(DataError, match="X has 12 features.*kernel values to the 20 training points"):
        est.transform(K[:3, :12])


def test_n_components_none_drops_zero_eigenvalues_like_sklearn():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 4))
    X = np.c_[X, X[:, 0] - X[:, 2]]          # rank 4 in 5 columns
    ours = ms.get_algorithm("kernel_pca", kernel="linear", n_components=None).fit(X)
    ref = KernelPCA(n_components=None, kernel="linear").fit(X)
    assert ours.n_components_ == ref.eigenvalues_.shape[0] == 4
    assert ours.embedding_.shape == (50, 4) and not ours.warning_
    np.testing.assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(np.abs(ours.embedding_), np.abs(ref.transform(X)), atol=1e-9)
    # rbf on n points: every positive eigenvalue of the centred kernel (at most n - 1)
    rbf = ms.get_algorithm("kernel_pca", kernel="rbf", gamma=0.2, n_components=None).fit(X[:25])
    ref = KernelPCA(n_components=None, kernel="rbf", gamma=0.2).fit(X[:25])
    assert rbf.n_components_ == ref.eigenvalues_.shape[0]
    np.testing.assert_allclose(np.abs(rbf.transform(X[25:])), np.abs(ref.transform(X[25:])), atol=1e-8)


@pytest.mark.parametrize("n_components", [None, 19])
def test_kernel_that_is_not_psd_is_refused_as_scikit_learn_does(n_components):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(20, 20))
    K = (A + A.T) / 2  # symmetric, with large negative eigenvalues
    with pytest.raises(ValueError, match="significant negative eigenvalues"):
        KernelPCA(n_components=n_components, kernel="precomputed").fit(K)
    with pytest.raises(DataError, match="significant negative eigenvalues"):
        ms.get_algorithm("kernel_pca", n_components=n_components, kernel="precomputed").fit(K)
    # the leading components alone are positive: kept, like scikit-learn
    emb = ms.get_algorithm("kernel_pca", n_components=2, kernel="precomputed").fit(K).embedding_
    ref = KernelPCA(n_components=2, kernel="precomputed").fit_transform(K)
    np.testing.assert_allclose(np.abs(emb), np.abs(ref), atol=1e-8)
